//! This member's own requests that one lost message would leave unanswered
//! for ever: a joiner's state request, its Join, its Sync, and its
//! consistency votes.
//!
//! A follower hands a proposal to the leader once; Raft never sends it
//! again, and a link that closes meanwhile loses it (a joiner's links to
//! a peer are often replaced as it arrives: both ends dial). Writesets have
//! their own resend (fences). For these, a loss meant a joiner that
//! waited for its donor, a node that stayed Joined (not ready), or an
//! applier that waited for a vote's result, until someone restarted the
//! node. Each is kept until it is seen committed and proposed again every
//! `RESEND_AFTER` until then, while the group state shows it has not taken
//! effect.
//!
//! Each takes effect once whatever its copies: the group serves a joiner
//! once (`Member::donor_chosen`), a Join moves a joiner (whose desync count
//! is 0) to Joined and does nothing after, a Sync moves Joined to Synced,
//! a member's vote on a seqno is recorded once (a late copy only brings
//! its voter the result again). A donor's Join and a desync are not kept:
//! a copy would count twice.

use std::time::{Duration, Instant};

use crate::log;

use crate::group::wire::entry::{Entry, Transition};
use crate::group::state::{GroupState, MemberState};
use crate::gtid::{Seqno, Uuid};

/// Longer than an answer takes when nothing is lost (milliseconds), short
/// beside what a lost one cost (a test's minute, a user's restart).
pub(in crate::group) const RESEND_AFTER: Duration = Duration::from_secs(3);
/// A node has a vote under way per seqno its appliers wait on (a handful):
/// this bounds a pathology, dropping the oldest.
const MAX_KEPT: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    StateRequest,
    Join,
    Sync,
    Vote(Seqno),
}

/// At most one entry per kind: a newer request replaces the older.
#[derive(Default)]
pub(crate) struct Unconfirmed {
    kept: Vec<(Kind, Vec<u8>, Instant)>,
}

impl Unconfirmed {
    /// A proposal of this member's: kept if it is of a kind above.
    pub(in crate::group) fn sent(&mut self, me: Uuid, entry: &Entry, data: &[u8], state: &GroupState, now: Instant) {
        let joiner = state.member(me).is_some_and(|m| m.state == MemberState::Joiner);
        if let Some(kind) = kind_of(me, entry).filter(|k| *k != Kind::Join || joiner) {
            self.kept.retain(|(k, ..)| *k != kind);
            if self.kept.len() >= MAX_KEPT {
                self.kept.remove(0);
            }
            self.kept.push((kind, data.to_vec(), now));
        }
    }

    /// A committed entry: its kind needs no resend any more.
    pub(in crate::group) fn committed(&mut self, me: Uuid, entry: &Entry) {
        if let Some(kind) = kind_of(me, entry) {
            self.kept.retain(|(k, ..)| *k != kind);
        }
    }

    /// The entries to propose again now: unseen for `RESEND_AFTER`, and
    /// still without effect in `state` (a member restored from a snapshot
    /// never sees the entries before it). Others are forgotten.
    pub(in crate::group) fn due(&mut self, me: Uuid, state: &GroupState, now: Instant) -> Vec<Vec<u8>> {
        let own = state.member(me);
        let pending = |kind: Kind| match (kind, own) {
            (Kind::StateRequest, Some(m)) => m.state == MemberState::Joiner && !m.donor_chosen,
            (Kind::Join, Some(m)) => m.state == MemberState::Joiner,
            (Kind::Sync, Some(m)) => m.state == MemberState::Joined,
            (Kind::Vote(_), Some(_)) => true,
            (_, None) => false,
        };
        self.kept.retain(|(kind, ..)| pending(*kind));
        let mut due = Vec::new();
        for (kind, data, at) in &mut self.kept {
            if now.duration_since(*at) >= RESEND_AFTER {
                log::info!("no sign of this node's {:?} in the group's order after {:?}: proposing it again", kind, RESEND_AFTER);
                *at = now;
                due.push(data.clone());
            }
        }
        due
    }
}

/// The kind of this member's entry, if it is one of those kept (a Join is
/// kept only while the member is a joiner: see `sent`).
fn kind_of(me: Uuid, entry: &Entry) -> Option<Kind> {
    match entry {
        Entry::StateRequest { joiner, .. } if *joiner == me => Some(Kind::StateRequest),
        Entry::MemberState { member, transition: Transition::Join, .. } if *member == me => Some(Kind::Join),
        Entry::MemberState { member, transition: Transition::Sync, .. } if *member == me => Some(Kind::Sync),
        Entry::Vote { member, seqno, .. } if *member == me => Some(Kind::Vote(*seqno)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::wire::entry::{MemberInfo, Membership};
    use crate::group::state::GroupEvent;

    fn info(id: Uuid, name: &str) -> MemberInfo {
        MemberInfo { id, name: name.into(), incoming: "i".into(), address: "a".into(), arbitrator: false, stateless: false }
    }

    fn join(me: Uuid) -> Entry {
        Entry::MemberState { member: me, transition: Transition::Join, seqno: 3 }
    }

    /// A group of `a` with joiner `me`.
    fn group(me: Uuid) -> GroupState {
        let a = Uuid::random();
        let mut g = GroupState::new(me);
        let mut out: Vec<GroupEvent> = Vec::new();
        g.apply_membership(Membership::Bootstrap { history: Uuid::random(), position: 0, member: info(a, "node1") }, &mut out);
        g.apply_membership(Membership::Add { member: info(me, "node2") }, &mut out);
        g
    }

    #[test]
    fn a_joiners_lost_join_is_proposed_again_until_seen() {
        let me = Uuid::random();
        let g = group(me);
        let (mut u, t0) = (Unconfirmed::default(), Instant::now());
        let data = join(me).encode();
        u.sent(me, &join(me), &data, &g, t0);
        assert!(u.due(me, &g, t0 + Duration::from_secs(1)).is_empty(), "not before RESEND_AFTER");
        assert_eq!(u.due(me, &g, t0 + RESEND_AFTER), vec![data.clone()]);
        assert!(u.due(me, &g, t0 + RESEND_AFTER + Duration::from_secs(1)).is_empty(), "paced");
        u.committed(me, &join(me));
        assert!(u.due(me, &g, t0 + 3 * RESEND_AFTER).is_empty(), "seen: never again");
    }

    #[test]
    fn an_entry_that_took_effect_unseen_is_forgotten_and_others_are_not_kept() {
        let me = Uuid::random();
        let mut g = group(me);
        let (mut u, t0) = (Unconfirmed::default(), Instant::now());
        u.sent(me, &join(me), &join(me).encode(), &g, t0);
        let mut out = Vec::new();
        g.apply(join(me), &mut out); // restored from a snapshot: not seen
        assert!(u.due(me, &g, t0 + RESEND_AFTER).is_empty());
        // A Join that is not a joiner's (a donor's, a resync) counts down
        // a desync: a copy would count twice.
        g.apply(Entry::MemberState { member: me, transition: Transition::Desync, seqno: 4 }, &mut out);
        let resync = Entry::MemberState { member: me, transition: Transition::Join, seqno: 4 };
        u.sent(me, &resync, &resync.encode(), &g, t0);
        assert!(u.due(me, &g, t0 + RESEND_AFTER).is_empty());
    }

    #[test]
    fn votes_are_kept_one_per_seqno_until_seen() {
        let me = Uuid::random();
        let g = group(me);
        let (mut u, t0) = (Unconfirmed::default(), Instant::now());
        let vote = |seqno| Entry::Vote { member: me, seqno, code: 7, policy: 0, message: String::new() };
        u.sent(me, &vote(4), &vote(4).encode(), &g, t0);
        u.sent(me, &vote(5), &vote(5).encode(), &g, t0);
        u.committed(me, &vote(4));
        assert_eq!(u.due(me, &g, t0 + RESEND_AFTER), vec![vote(5).encode()]);
    }
}
