//! Weighted quorum (Galera's `pc.weight`): a side of a partition is the
//! primary component when its members weigh more than half of the last
//! primary view; exactly half is a split brain.
//!
//! Raft counts heads: it commits an entry once a majority of voters hold
//! it and elects a leader with a majority of votes. With unequal weights
//! the two majorities differ, and a side may hold one without the other:
//! - a heavy minority (one member of weight 3 against two of weight 1) is
//!   primary by weight but can neither elect nor commit: it forms a new
//!   component of its own (a reform), which is safe only if no entry was
//!   delivered anywhere without it;
//! - so a light majority must deliver nothing the heavy side lacks: an
//!   entry Raft committed is held back until voters weighing more than
//!   half hold it too (the weighted commit index, which the leader
//!   computes and tells the others), and the light side turns
//!   non-primary once its leader has not heard the heavy one for Raft's
//!   check_quorum window (`VERDICT_WINDOW`) and the quorum grace passed.
//!
//! Every delivered entry is thus held by a weighted majority. A member that
//! alone weighs more than half is in every weighted majority, so its log
//! holds every delivered entry: it delivers its whole log and goes on
//! alone. A side of several members that weighs more than half without a
//! Raft majority is not reformed (it turns non-primary, as a minority
//! does): its members could still acknowledge the old component's entries
//! after the reform, unless they left it together, which would take a
//! protocol of its own. Galera keeps such a side primary; this is the one
//! case where lockstep is stricter.
//!
//! With equal weights (the default) both majorities are the same and none
//! of this is active. Pure and deterministic: no clocks, no I/O.

use std::collections::VecDeque;
use std::time::Duration;

use raft::prelude::Entry as RaftEntry;

use crate::group::state::{GroupState, Member};
pub use crate::group::wire::notices::CommitNotice;
pub use crate::group::state::{unequal, DEFAULT};

/// Where a side stands against the weight of the last primary view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// More than half: primary.
    Majority,
    /// Exactly half (Galera's split brain; `pc.ignore_sb` keeps it primary).
    Split,
    Minority,
}

pub fn standing(side: u64, total: u64) -> Standing {
    match (2 * side).cmp(&total) {
        std::cmp::Ordering::Greater => Standing::Majority,
        std::cmp::Ordering::Equal => Standing::Split,
        std::cmp::Ordering::Less => Standing::Minority,
    }
}

/// The highest log index held by voters weighing more than half of all
/// voters, given each voter's (matched index, weight); 0 if none. A
/// member of weight 0 never counts (Galera's use: a node that must never
/// decide the quorum).
pub fn committed(acks: &[(u64, u32)]) -> u64 {
    let total: u64 = acks.iter().map(|(_, w)| u64::from(*w)).sum();
    let mut by_index: Vec<(u64, u32)> = acks.to_vec();
    by_index.sort_unstable_by(|a, b| b.0.cmp(&a.0));
    let mut held = 0u64;
    for (index, weight) in by_index {
        held += u64::from(weight);
        if standing(held, total) == Standing::Majority {
            return index;
        }
    }
    0
}

/// How recently a leader must have heard a member to weigh it: Raft's
/// check_quorum window (a leader steps down when it has not heard a
/// majority for an election timeout, 10 ticks of 50 ms), so that a light
/// majority stops counting its leader about as soon as the heavy side
/// loses its own.
pub const VERDICT_WINDOW: Duration = Duration::from_secs(1);

/// The highest index voters weighing more than half hold, as the leader
/// sees their progress (`matched`), and Raft committed.
pub fn commit_index(state: &GroupState, matched: impl Fn(u64) -> u64, raft_committed: u64) -> u64 {
    let acks: Vec<(u64, u32)> = state.members().iter().filter(|m| m.voter).map(|m| (matched(m.info.id.raft_id()), m.weight)).collect();
    committed(&acks).min(raft_committed)
}

/// The members a member `hears`, weighed against the last primary view.
pub fn side_standing(state: &GroupState, hears: impl Fn(&Member) -> bool) -> Standing {
    standing(state.weight_of(hears), state.weight_of(|_| true))
}

/// The leader's verdict on its side: itself and the voters it heard
/// within `VERDICT_WINDOW` (`heard`, by raft id), weighed against all
/// voters, as the weighted commit index weighs them. Weighing joiners
/// (learners) too, a leader whose voters split their weight evenly once a
/// heavy voter died stayed primary on a joiner's weight while it could
/// deliver nothing, not even the removal of the dead voter: its clients
/// waited forever (simulator, seed 4765 before this rule: voters of
/// weight 1, 1, 1 and 3, a joiner of 1, the 3 crashed). Now that side is
/// non-primary and its clients get an error, as Galera's would in a
/// component without a weighted majority.
pub fn leader_standing(state: &GroupState, leader: crate::gtid::Uuid, heard: impl Fn(u64) -> bool) -> Standing {
    voters_standing(state, |m| m.info.id == leader || heard(m.info.id.raft_id()))
}

/// The voters `counts` keeps, weighed against all voters.
pub fn voters_standing(state: &GroupState, counts: impl Fn(&Member) -> bool) -> Standing {
    standing(state.weight_of(|m| m.voter && counts(m)), state.weight_of(|m| m.voter))
}

/// Whether the leader may remove silent `member`: the view without it
/// must still weigh more than half (Galera's rule; otherwise the side
/// turns non-primary instead). Always, while weights are equal.
pub fn may_remove(state: &GroupState, member: crate::gtid::Uuid) -> bool {
    !state.weighted() || side_standing(state, |m| m.info.id != member) == Standing::Majority
}

/// Whether `member` alone weighs more than half of the last primary
/// view's voters: then every weighted majority includes it (the weighted
/// commit index weighs voters), so every entry delivered anywhere is in
/// its log, and it can form the component again on its own when it loses
/// its leader (a side of several members cannot: the others could still
/// acknowledge the old component's entries). A joiner weighs nothing
/// here, as in the commit index: counted, a voter of weight 2 beside a
/// voter of 1 and a joiner of 1 stayed non-primary for good once the other
/// voter died, since Raft could not elect it alone either (simulator seed
/// 8199).
pub fn decides_alone(state: &GroupState, member: crate::gtid::Uuid) -> bool {
    state.weighted() && voters_standing(state, |m| m.info.id == member) == Standing::Majority
}

/// Whether voter `member` and the voter its raft node follows (`leader`,
/// a raft id) weigh more than half together. Then what it knows committed
/// is weighted-committed: a committed entry is in its log and in its
/// leader's (a leader holds every entry committed before its term, and
/// the follower commits only entries it matched with that leader), and
/// any member that alone weighs more than half is one of the two.
pub fn decides_with_leader(state: &GroupState, member: crate::gtid::Uuid, leader: u64) -> bool {
    state.weighted() && voters_standing(state, |m| m.info.id == member || m.info.id.raft_id() == leader) == Standing::Majority
}

/// Committed entries on their way to delivery, waiting for the weighted
/// commit index while weights differ. Bounded: a side that commits
/// without its heavy members turns non-primary within the eviction
/// timeout and then orders nothing, so what waits here is a few seconds of
/// proposals at most; past the bound the member takes no local proposal
/// (see `Gate::full`).
#[derive(Debug, Default)]
pub struct Gate {
    queue: VecDeque<RaftEntry>,
    /// Entries up to here may be delivered; None while weights are equal
    /// (everything Raft commits is delivered at once).
    open_to: Option<u64>,
    /// Weights differed here at some point (see `ever_active`).
    ever_active: bool,
}

impl Gate {
    pub const MAX_HELD: usize = 65536;

    pub fn push(&mut self, entries: Vec<RaftEntry>) {
        for e in entries {
            assert!(self.queue.back().is_none_or(|b| b.index + 1 == e.index), "committed entries come in order, without gaps");
            self.queue.push_back(e);
        }
    }

    /// The next entry that may be delivered.
    pub fn next(&mut self) -> Option<RaftEntry> {
        let front = self.queue.front()?;
        if self.open_to.is_some_and(|to| front.index > to) {
            return None;
        }
        self.queue.pop_front()
    }

    /// Weights became unequal (`Some`: delivered up to there so far) or
    /// equal again (`None`). Takes effect from the next entry on.
    pub fn set_active(&mut self, open_to: Option<u64>) {
        self.ever_active |= open_to.is_some();
        self.open_to = match (self.open_to, open_to) {
            (Some(now), Some(_)) => Some(now),
            (_, next) => next,
        };
    }

    pub fn is_active(&self) -> bool {
        self.open_to.is_some()
    }

    pub fn open_to(&self) -> Option<u64> {
        self.open_to
    }

    /// Whether weights ever differed here: a leader whose weights are
    /// equal again still tells the others its commit index, since a
    /// member behind it may hold entries from before.
    pub fn ever_active(&self) -> bool {
        self.ever_active
    }

    /// Applies what the gate lets through, one entry at a time, until
    /// `apply` says stop (None: the member was removed); `apply` returns
    /// whether weights differ after the entry and the index applied, so
    /// that an entry changing a weight switches the gate for the very
    /// next one.
    pub fn deliver(&mut self, mut apply: impl FnMut(RaftEntry) -> Option<(bool, u64)>) {
        while let Some(e) = self.next() {
            let Some((weighted, applied)) = apply(e) else { return };
            if weighted != self.is_active() {
                self.set_active(weighted.then_some(applied));
            }
        }
    }

    /// What raft-rs must count as applied (`applied`, or what it counts
    /// already if more) while entries wait here; None: everything it
    /// handed out was applied.
    pub fn applied_for_raft(&self, applied: u64, raft_applied: u64) -> Option<u64> {
        (self.held() > 0).then_some(applied.max(raft_applied))
    }

    /// The weighted commit index reached `index` (it never goes back).
    pub fn open(&mut self, index: u64) {
        if let Some(to) = self.open_to.as_mut() {
            *to = (*to).max(index);
        }
    }

    pub fn full(&self) -> bool {
        self.queue.len() >= Self::MAX_HELD
    }

    /// Entries committed and not delivered yet.
    pub fn held(&self) -> usize {
        self.queue.len()
    }

    /// The member's log starts over (a snapshot, or its own log delivered
    /// whole before it forms a component alone), gated from `open_to` on
    /// or not at all: what was held belongs to a log it
    /// no longer follows, or is in the snapshot.
    pub fn restart(&mut self, open_to: Option<u64>) {
        self.queue.clear();
        self.open_to = open_to;
        self.ever_active |= open_to.is_some();
    }

    /// The gate of the member's next Raft node (a rejoin, a reform):
    /// nothing held, closed, but it remembers that weights once differed.
    pub fn for_next_log(&self) -> Gate {
        Gate { ever_active: self.ever_active, ..Gate::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(range: std::ops::RangeInclusive<u64>) -> Vec<RaftEntry> {
        range.map(|index| RaftEntry { index, ..Default::default() }).collect()
    }

    #[test]
    fn a_commit_notice_counts_only_in_its_own_component() {
        use crate::group::state::Component;
        use crate::gtid::Uuid;
        let (old, reformed) = (Component { former: Uuid([1; 16]), from: 0 }, Component { former: Uuid([1; 16]), from: 943 });
        let notice = |component| CommitNotice { term: 3, index: 1374, primary: true, component };
        assert!(notice(Some(old)).about(Some(old)));
        assert!(!notice(Some(reformed)).about(Some(old)), "the reformed group's index is not about the old log");
        assert!(!notice(Some(old)).about(Some(reformed)));
        assert!(notice(None).about(Some(old)), "an older member sends none: counted as before");
        assert!(notice(Some(old)).about(None));
    }

    #[test]
    fn more_than_half_is_primary_and_exactly_half_a_split() {
        assert_eq!(standing(2, 3), Standing::Majority);
        assert_eq!(standing(1, 2), Standing::Split);
        assert_eq!(standing(2, 4), Standing::Split);
        assert_eq!(standing(1, 3), Standing::Minority);
        assert_eq!(standing(4, 6), Standing::Majority, "GCF-354: weight 4 against two of 1");
    }

    #[test]
    fn the_weighted_commit_index_needs_the_heavy_member() {
        // Weights 4, 1, 1: the two light ones hold 9, the heavy one 5.
        assert_eq!(committed(&[(5, 4), (9, 1), (9, 1)]), 5);
        assert_eq!(committed(&[(9, 4), (5, 1), (0, 1)]), 9, "the heavy one alone is a majority");
        // Equal weights: the head count's index (the median).
        assert_eq!(committed(&[(3, 1), (7, 1), (5, 1)]), 5);
        // 2 and 1: the heavy one alone weighs 2 of 3.
        assert_eq!(committed(&[(4, 2), (8, 1)]), 4);
        assert_eq!(committed(&[(4, 0), (8, 1)]), 8, "weight 0 never counts");
        assert_eq!(committed(&[]), 0);
    }

    /// A group of `members` bootstrapped by the first, the next `voters`
    /// of them promoted, the rest joiners (learners); all of weight 1
    /// until `weigh`.
    fn group_of(members: usize, voters: usize) -> (Vec<crate::gtid::Uuid>, GroupState) {
        use crate::group::wire::entry::{MemberInfo, Membership};
        use crate::gtid::Uuid;
        let ids: Vec<Uuid> = (0..members).map(|_| Uuid::random()).collect();
        let info = |i: usize| MemberInfo { id: ids[i], name: format!("node{}", i + 1), incoming: String::new(), address: String::new(), arbitrator: false, stateless: false };
        let mut g = GroupState::new(ids[0]);
        let mut out = Vec::new();
        g.apply_membership(Membership::Bootstrap { history: Uuid::random(), position: 0, member: info(0) }, &mut out);
        for i in 1..members {
            g.apply_membership(Membership::Add { member: info(i) }, &mut out);
        }
        for id in &ids[1..=voters] {
            g.apply_membership(Membership::Promote { member: *id }, &mut out);
        }
        (ids, g)
    }

    fn weigh(g: &mut GroupState, member: crate::gtid::Uuid, weight: u32) {
        g.apply(crate::group::wire::entry::Entry::Weight { member, weight }, &mut Vec::new());
    }

    /// Seed 4765's view (see `leader_standing`): voters of weight 1, 1, 1
    /// and 3, a joiner (a learner) of weight 1; the heavy voter is gone.
    #[test]
    fn a_leader_weighs_the_voters_it_hears_as_the_commit_index_does() {
        let (ids, mut g) = group_of(5, 3);
        weigh(&mut g, ids[3], 3);
        let heavy = ids[3].raft_id();
        let alive = |id: u64| if id == heavy { 0 } else { 9 };
        assert_eq!(commit_index(&g, alive, 9), 0, "the voters left hold 3 of 6");
        assert_eq!(leader_standing(&g, ids[0], |id| id != heavy), Standing::Split, "so the leader is not primary");
        assert_eq!(leader_standing(&g, ids[0], |id| id == heavy), Standing::Majority, "the leader and the heavy voter: 4 of 6");
    }

    /// Seed 8199's view (see `decides_alone`).
    #[test]
    fn a_voter_heavier_than_the_other_voters_decides_alone_whatever_the_joiners_weigh() {
        let (ids, mut g) = group_of(3, 1);
        weigh(&mut g, ids[0], 2);
        assert!(decides_alone(&g, ids[0]), "2 of the voters' 3");
        assert!(!decides_alone(&g, ids[1]));
        g.apply_membership(crate::group::wire::entry::Membership::Promote { member: ids[2] }, &mut Vec::new());
        assert!(!decides_alone(&g, ids[0]), "2 of 4 once the joiner votes");
    }

    /// Seed 5557's view (see `decides_with_leader`): weights 2, 2, 1.
    #[test]
    fn a_follower_and_its_leader_weighing_more_than_half_decide_together() {
        let (ids, mut g) = group_of(3, 2);
        weigh(&mut g, ids[0], 2);
        weigh(&mut g, ids[1], 2);
        assert!(decides_with_leader(&g, ids[0], ids[1].raft_id()), "4 of 5");
        assert!(decides_with_leader(&g, ids[2], ids[0].raft_id()), "2 + 1 of 5");
        weigh(&mut g, ids[1], 1);
        assert!(!decides_with_leader(&g, ids[1], ids[2].raft_id()), "the two light voters of weights 2, 1, 1");
        assert!(decides_with_leader(&g, ids[1], ids[0].raft_id()), "3 of 4 with the heavy one");
    }

    #[test]
    fn unequal_means_any_two_differ() {
        assert!(!unequal([1, 1, 1]) && !unequal([]) && !unequal([3]));
        assert!(unequal([1, 2, 1]));
    }

    fn drain(g: &mut Gate) -> Vec<u64> {
        std::iter::from_fn(|| g.next()).map(|e| e.index).collect()
    }

    #[test]
    fn an_inactive_gate_passes_everything() {
        let mut g = Gate::default();
        g.push(entries(1..=3));
        assert_eq!(drain(&mut g), vec![1, 2, 3]);
    }

    #[test]
    fn an_active_gate_holds_what_the_weighted_index_has_not_reached() {
        let mut g = Gate::default();
        g.set_active(Some(3));
        g.push(entries(4..=6));
        assert_eq!(drain(&mut g), Vec::<u64>::new());
        assert_eq!(g.held(), 3);
        g.open(5);
        assert_eq!(drain(&mut g), vec![4, 5]);
        g.open(4);
        assert_eq!(drain(&mut g), Vec::<u64>::new(), "the index never goes back");
        g.push(entries(7..=7));
        g.set_active(None);
        assert_eq!(drain(&mut g), vec![6, 7], "equal weights again: all out");
    }

    #[test]
    fn activation_takes_effect_from_the_next_entry() {
        let mut g = Gate::default();
        g.push(entries(1..=4));
        assert_eq!(g.next().map(|e| e.index), Some(1));
        g.set_active(Some(1));
        assert_eq!(drain(&mut g), Vec::<u64>::new());
        g.set_active(Some(9));
        assert_eq!(drain(&mut g), Vec::<u64>::new(), "already active: the index stays");
    }

    #[test]
    fn a_restarted_gate_holds_nothing_and_opens_from_the_new_start() {
        let mut g = Gate::default();
        g.set_active(Some(3));
        g.push(entries(4..=5));
        g.restart(Some(20));
        assert_eq!(g.held(), 0);
        g.push(entries(21..=22));
        g.open(21);
        assert_eq!(drain(&mut g), vec![21]);
    }

    #[test]
    #[should_panic(expected = "without gaps")]
    fn a_gap_in_committed_entries_is_a_bug() {
        let mut g = Gate::default();
        g.push(entries(1..=1));
        g.push(entries(3..=3));
    }
}
