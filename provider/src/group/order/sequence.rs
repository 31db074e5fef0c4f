//! The seqnos a member hands to its node follow each other: every ordered
//! writeset and every primary view takes the next one, with no gap and no
//! repeat. The server commits in that order and Galera's IST and gcache
//! assume it; a break means the member's order differs from the others'.
//!
//! The sequence starts over where the member's log does: at a leader's
//! snapshot (it continues after the snapshot's seqno), and when the
//! member joins again or bootstraps (it continues from whatever comes
//! first). The driver checks every event it hands to the node against
//! this, and the simulator checks every member's deliveries with it.

use crate::group::state::GroupEvent;
use crate::gtid::Seqno;

#[derive(Debug, Default)]
pub struct Sequence {
    /// The last seqno handed out; None: starting over.
    last: Option<Seqno>,
}

impl Sequence {
    /// `seqno` is handed out next: Err says how it breaks the sequence.
    pub fn next(&mut self, seqno: Seqno) -> Result<(), String> {
        if let Some(prev) = self.last {
            if seqno != prev + 1 {
                return Err(format!("seqno {} follows {}", seqno, prev));
            }
        }
        self.last = Some(seqno);
        Ok(())
    }

    /// The log starts over: after `seqno` (a snapshot's), or from what
    /// comes first (None).
    pub fn restart(&mut self, seqno: Option<Seqno>) {
        self.last = seqno;
    }

    /// Checks an event on its way to the node.
    pub fn check(&mut self, ev: &GroupEvent) -> Result<(), String> {
        match ev {
            GroupEvent::Ordered { seqno, .. } => self.next(*seqno),
            // A non-primary view takes no seqno.
            GroupEvent::View(v) if v.primary => self.next(v.seqno),
            GroupEvent::Restored { view, .. } => {
                self.restart(Some(view.seqno));
                Ok(())
            }
            GroupEvent::Rejoining | GroupEvent::Bootstrapping => {
                self.restart(None);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn ordered(seqno: Seqno) -> GroupEvent {
        GroupEvent::Ordered { seqno, origin: crate::gtid::Uuid::NIL, token: 0, payload: Bytes::new() }
    }

    #[test]
    fn each_seqno_follows_the_last() {
        let mut s = Sequence::default();
        assert!(s.check(&ordered(7)).is_ok(), "the first one starts it");
        assert!(s.check(&ordered(8)).is_ok());
        assert_eq!(s.check(&ordered(10)), Err("seqno 10 follows 8".into()), "a gap");
        let mut s = Sequence::default();
        s.check(&ordered(3)).unwrap();
        assert!(s.check(&ordered(3)).is_err(), "a repeat");
    }

    #[test]
    fn a_rejoin_starts_over_and_a_snapshot_continues_after_its_seqno() {
        let mut s = Sequence::default();
        s.check(&ordered(100)).unwrap();
        s.check(&GroupEvent::Rejoining).unwrap();
        assert!(s.check(&ordered(1)).is_ok(), "the log replayed from its start");
        s.restart(Some(50));
        assert!(s.check(&ordered(52)).is_err());
        assert!(s.check(&ordered(51)).is_ok());
    }
}
