//! Weighted quorum on the driver's thread (the rules are in `weights`):
//! committed entries pass the gate once the weighted commit index reaches
//! them, the leader computes that index and tells the others with its
//! verdict on the weight it hears, and a leaderless member that alone
//! weighs more than half forms the primary component again.

use std::time::Instant;

use raft::prelude::Entry as RaftEntry;
use raft::{GetEntriesContext, StateRole};

use super::driver::Driver;
use crate::group::primary::weights::{self, CommitNotice};
use crate::group::state::GroupEvent;
use crate::group::wire::entry::Entry;
use crate::group::wire::frame::Frame;
use crate::log;

impl Driver {
    /// Committed entries in: every one the gate lets through is applied.
    pub(super) fn apply_gated(&mut self, entries: Vec<RaftEntry>) {
        self.incarnation.gate.push(entries);
        self.deliver_gated();
    }

    /// Applies what the gate lets through, one entry at a time: an entry
    /// that changes a weight may switch the gate for the very next one.
    fn deliver_gated(&mut self) {
        if !self.members.applies() {
            return;
        }
        // Out of `self` while entries apply (they never touch it).
        let mut gate = std::mem::take(&mut self.incarnation.gate);
        let was = gate.is_active();
        gate.deliver(|e| {
            self.apply_entry(e);
            self.members.applies().then(|| (self.state.weighted(), self.applying))
        });
        if gate.is_active() != was {
            log::info!("member weights are {} now", if was { "equal" } else { "unequal: delivery waits for the weighted commit index" });
        }
        self.incarnation.gate = gate;
    }

    /// The weighted commit index reached `index`: deliver up to it.
    fn open_gate(&mut self, index: u64) {
        self.incarnation.gate.open(index);
        if self.incarnation.gate.held() == 0 {
            return;
        }
        self.deliver_gated();
        let applied = self.applying.max(self.incarnation.raw.raft.raft_log.applied);
        self.incarnation.raw.advance_apply_to(applied);
        self.answer_reads();
        self.flush_events();
    }

    /// After every `Ready` and tick. The leader's part: the highest index
    /// voters weighing more than half hold (and Raft committed). A
    /// follower that weighs more than half with its leader needs no
    /// notice (see `weights::decides_with_leader`): a leader that died
    /// before its notice arrived left the follower's gate holding a
    /// committed configuration change, raft-rs refuses to campaign while
    /// one is unapplied, and the one member that could still vote would
    /// not vote for a shorter log, so no leader was ever elected again
    /// (simulator, seed 5557 with lag reports).
    pub(super) fn advance_weighted_commit(&mut self) {
        if !self.incarnation.gate.is_active() {
            return;
        }
        let raft = &self.incarnation.raw.raft;
        let index = match raft.state {
            StateRole::Leader => {
                let prs = raft.prs();
                weights::commit_index(&self.state, |id| prs.get(id).map_or(0, |p| p.matched), raft.raft_log.committed)
            }
            StateRole::Follower if raft.leader_id != raft::INVALID_ID && weights::decides_with_leader(&self.state, self.me.id, raft.leader_id) => raft.raft_log.committed,
            _ => return,
        };
        self.open_gate(index);
    }

    /// Once a tick, the leader tells every member the weighted commit index
    /// and whether it hears a weighted majority. Also after weights became
    /// equal again on the leader: a member behind it may still hold entries
    /// from before (with equal weights Raft's commit index is the weighted
    /// one).
    pub(super) fn send_commit_notice(&mut self, now: Instant) {
        if !self.incarnation.gate.ever_active() || self.incarnation.raw.raft.state != StateRole::Leader {
            return;
        }
        self.broadcast_commit_notice(self.incarnation.raw.raft.term, self.side_is_primary(now));
    }

    /// A non-primary member tells the others, with its probes, the weighted
    /// commit index it knows. The leader that computed it may be gone
    /// before the others heard it, and a member whose gate holds a
    /// committed configuration change cannot campaign (raft-rs refuses
    /// while one is unapplied): when every member but the old leader is in
    /// that state, no leader is ever elected again (simulator seed 3600:
    /// the old leader back from a partition, a pre-candidate the others
    /// ignored, since they still took it for their leader). Term 0: not a
    /// leader's notice, no verdict in it.
    pub(super) fn relay_commit_index(&self) {
        if !self.incarnation.gate.ever_active() || self.incarnation.raw.raft.state == StateRole::Leader {
            return;
        }
        self.broadcast_commit_notice(0, false);
    }

    /// Tells every member the weighted commit index this one knows (with
    /// equal weights now, Raft's commit index is the weighted one).
    fn broadcast_commit_notice(&self, term: u64, primary: bool) {
        let index = self.incarnation.gate.open_to().unwrap_or(self.incarnation.raw.raft.raft_log.committed);
        let component = self.state.component();
        self.send_frame(self.peers.iter().copied(), &Frame::Commit(CommitNotice { term, index, primary, component }));
    }

    /// A member's notice: the index is a fact about committed entries
    /// (the same on every member of one component), whoever sends it; the
    /// verdict counts only from the current leader.
    ///
    /// Not across components: after a heavy member reformed alone, the
    /// light members it left may still list it, and a light member that
    /// rejoins may take in the old group's log from one of them while the
    /// heavy one lists it too. The heavy one's index then opened the gate
    /// on the old group's entries, delivered at seqnos the new component
    /// had given to others (simulator, seed 4587 with lag reports).
    pub(super) fn on_commit_notice(&mut self, from: u64, n: CommitNotice) {
        if !n.about(self.state.component()) {
            return log::debug!("ignoring a commit notice from {:x}: it is about another component's log", from);
        }
        // The current leader counts even if this member's applied state
        // does not list it yet: a joiner whose gate holds the entry that
        // added the leader would otherwise wait for it forever (the
        // simulator with the production driver found it).
        if !self.peers.contains(&from) && from != self.incarnation.raw.raft.leader_id {
            return;
        }
        if from == self.incarnation.raw.raft.leader_id && n.term == self.incarnation.raw.raft.term {
            self.incarnation.leader_says = Some((from, n.primary, self.clock.now()));
        }
        self.open_gate(n.index);
    }

    /// See `Primary::side_is_primary`.
    pub(super) fn side_is_primary(&self, now: Instant) -> bool {
        self.primary.side_is_primary(&self.state, self.me.id, now)
    }

    /// While weights differ a leader counts only if it says it hears a
    /// weighted majority: a light majority orders nothing it could deliver
    /// and must turn non-primary like any minority.
    pub(super) fn weight_allows_leader(&self, now: Instant) -> bool {
        if !self.incarnation.gate.is_active() {
            return true;
        }
        if self.incarnation.raw.raft.state == StateRole::Leader {
            return self.side_is_primary(now);
        }
        self.incarnation.leader_says.is_some_and(|(from, primary, at)| {
            primary && from == self.incarnation.raw.raft.leader_id && now.saturating_duration_since(at) < self.primary.timeouts().suspect
        })
    }

    /// This member alone weighs more than half but has no leader: it forms
    /// the component again (see `weights::decides_alone`).
    pub(super) fn reforms_by_weight(&self) -> bool {
        weights::decides_alone(&self.state, self.me.id)
    }

    /// Before forming a component again on its own, a member delivers every
    /// entry of its log: the old component may have delivered them (a
    /// weighted majority held them, and this member is in every one), and
    /// a component that went on without them would lose acknowledged
    /// writesets.
    pub(super) fn deliver_own_log(&mut self) {
        let from = self.applying.max(self.incarnation.raw.raft.raft_log.applied) + 1;
        let entries = match self.incarnation.raw.raft.raft_log.entries(from, None, GetEntriesContext::empty(false)) {
            Ok(es) => es,
            Err(e) => return log::error!("cannot read this node's log from index {}: {}", from, e),
        };
        if entries.is_empty() {
            return;
        }
        log::info!("delivering {} entries of this node's log (indexes {}-{}) the old component may have committed", entries.len(), from, from + entries.len() as u64 - 1);
        self.incarnation.gate.restart(None);
        for e in entries {
            if self.members.removed_at.is_some() {
                break;
            }
            self.apply_entry(e);
        }
        self.flush_events();
    }

    /// Keeps the group's record of this member's weight equal to its
    /// `pc.weight`: an ordered entry, asked again at most once a second.
    pub(super) fn propose_weight(&mut self, now: Instant) {
        let Some(m) = self.state.member(self.me.id) else { return };
        if !self.primary.weight_due(m.weight, self.incarnation.quorum.is_primary(), now) {
            return;
        }
        let _ = self.incarnation.raw.propose(vec![], Entry::Weight { member: self.me.id, weight: self.primary.policy().weight }.encode());
    }

    /// `wsrep_cluster_weight` (the primary component's weight, 0 outside
    /// one) and this member's weight as ordered, for the node.
    pub(super) fn publish_weights(&self) {
        let primary = self.incarnation.quorum.is_primary() && self.state.is_primary();
        let cluster = if primary { self.state.weight_of(|_| true) } else { 0 };
        let own = self.state.member(self.me.id).map_or(0, |m| m.weight);
        self.counters.cluster_weight.store(cluster, std::sync::atomic::Ordering::Relaxed);
        self.counters.own_weight.store(u64::from(own), std::sync::atomic::Ordering::Relaxed);
    }

    /// A writeset proposal is refused while too much waits at the gate.
    pub(super) fn gate_full(&mut self, token: u64) -> bool {
        if !self.incarnation.gate.full() {
            return false;
        }
        log::warning!("{} committed entries wait for the weighted commit index: refusing a writeset", self.incarnation.gate.held());
        self.events.push(GroupEvent::ProposalFailed { token });
        true
    }
}
