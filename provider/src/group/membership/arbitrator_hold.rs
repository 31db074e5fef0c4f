//! What an arbitrator's log keeps for the data members.
//!
//! An arbitrator stores no data, so it can never send a Raft snapshot:
//! its log is the only thing it can give a data member that lags. And it
//! must sometimes give it: when the leader commits with the arbitrator
//! while the other data member lags (a slow link, a lost answer), then
//! dies, the arbitrator holds committed entries that no live data member
//! has, refuses that member its vote (as Raft must), leads, and has to
//! pass those entries on before it hands leadership over. If it compacted
//! them like a data member does, nothing could move again: Galera never
//! meets this, as every member of its primary component receives every
//! writeset before any delivers it.
//!
//! So the leader tells each arbitrator the lowest index a data voter has
//! matched, and the arbitrator keeps its log from there, within the same
//! bound a leader holds for a lagging member (`LOG_HOLD`). The word goes
//! straight over the transport and may be lost or late; that is safe, as
//! what a voter has matched only grows: an old word holds more, never
//! less. Time is an argument here, so the simulator can drive it.

use std::time::{Duration, Instant};

/// How often the leader repeats an unchanged word (a lost one, an
/// arbitrator that joined since).
pub const REPEAT: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub struct ArbitratorHold {
    /// On the leader: the index last told, and when.
    told: Option<(u64, Instant)>,
    /// On an arbitrator: the index last heard (0 before any: hold all
    /// the bound allows).
    heard: u64,
}

impl ArbitratorHold {
    /// Leader: whether to tell the arbitrators `lowest` now (it changed,
    /// or the last word is due again); if so, it counts as told.
    pub fn due(&mut self, lowest: u64, now: Instant) -> bool {
        if self.told.is_some_and(|(index, at)| index == lowest && now < at + REPEAT) {
            return false;
        }
        self.told = Some((lowest, now));
        true
    }

    /// Arbitrator: a member's word.
    pub fn on_word(&mut self, lowest: u64) {
        self.heard = lowest;
    }

    /// Arbitrator: the last entry the data voter furthest behind has,
    /// for its log to keep (within the bound `Driver::keep_from` sets).
    pub fn lowest(&self) -> u64 {
        self.heard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leader_tells_a_change_at_once_and_repeats_an_unchanged_word() {
        let t0 = Instant::now();
        let mut hold = ArbitratorHold::default();
        assert!(hold.due(10, t0));
        assert!(!hold.due(10, t0 + REPEAT / 2));
        assert!(hold.due(11, t0 + REPEAT / 2), "changed");
        assert!(!hold.due(11, t0 + REPEAT / 2 + REPEAT / 4));
        assert!(hold.due(11, t0 + REPEAT * 2), "repeated");
    }

    #[test]
    fn an_arbitrator_keeps_from_the_latest_word_and_all_it_may_before_one() {
        let mut hold = ArbitratorHold::default();
        assert_eq!(hold.lowest(), 0, "nothing heard: all the bound allows");
        hold.on_word(500);
        assert_eq!(hold.lowest(), 500);
        hold.on_word(50);
        assert_eq!(hold.lowest(), 50, "a later word from another leader, lower: it holds more");
    }
}
