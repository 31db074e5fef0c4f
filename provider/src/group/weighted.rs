//! Weighted quorum on the driver's thread (the rules are in `weights`):
//! committed entries pass the gate once the weighted commit index reaches
//! them, the leader computes that index and tells the others with its
//! verdict on the weight it hears, and a leaderless side that weighs more
//! than half forms the primary component again.

use std::time::Instant;

use bytes::Bytes;
use raft::prelude::Entry as RaftEntry;
use raft::{GetEntriesContext, StateRole};

use super::driver::{Driver, KIND_COMMIT, KIND_PROBE};
use super::entry::Entry;
use super::quorum::Quorum;
use super::state::{GroupEvent, Member};
use super::weights::{self, Standing};
use crate::log;

/// What the leader tells the members every tick while weights differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CommitNotice {
    pub term: u64,
    /// The weighted commit index.
    pub index: u64,
    /// Whether the leader hears members weighing more than half.
    pub primary: bool,
}

impl CommitNotice {
    pub fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(17);
        out.extend_from_slice(&self.term.to_le_bytes());
        out.extend_from_slice(&self.index.to_le_bytes());
        out.push(self.primary as u8);
        Bytes::from(out)
    }

    pub fn decode(buf: &[u8]) -> Option<CommitNotice> {
        if buf.len() != 17 {
            return None;
        }
        let term = u64::from_le_bytes(buf[..8].try_into().ok()?);
        let index = u64::from_le_bytes(buf[8..16].try_into().ok()?);
        Some(CommitNotice { term, index, primary: buf[16] != 0 })
    }
}

/// A probe carries how far the prober's log goes (last term, last index).
pub(super) fn encode_log_position(term: u64, index: u64) -> Bytes {
    let mut out = term.to_le_bytes().to_vec();
    out.extend_from_slice(&index.to_le_bytes());
    Bytes::from(out)
}

pub(super) fn decode_log_position(buf: &[u8]) -> Option<(u64, u64)> {
    if buf.len() != 16 {
        return None; // an older member's empty probe
    }
    Some((u64::from_le_bytes(buf[..8].try_into().ok()?), u64::from_le_bytes(buf[8..].try_into().ok()?)))
}

impl Driver {
    /// Committed entries in: every one the gate lets through is applied.
    pub(super) fn apply_gated(&mut self, entries: Vec<RaftEntry>) {
        self.gate.push(entries);
        self.deliver_gated();
    }

    /// Applies what the gate lets through, one entry at a time: an entry
    /// that changes a weight may switch the gate for the very next one.
    fn deliver_gated(&mut self) {
        while self.removed_at.is_none() {
            let Some(e) = self.gate.next() else { break };
            self.apply_entry(e);
            let weighted = self.state.weighted();
            if weighted != self.gate.is_active() {
                log::info!("member weights are {} now: delivery {} the weighted commit index", if weighted { "unequal" } else { "equal" }, if weighted { "waits for" } else { "no longer waits for" });
                self.gate.set_active(weighted.then_some(self.applying));
            }
        }
    }

    /// What raft-rs must count as applied after a `Ready` while entries
    /// wait at the gate (None: everything it handed out).
    pub(super) fn applied_for_raft(&self) -> Option<u64> {
        (self.gate.held() > 0).then(|| self.applying.max(self.raw.raft.raft_log.applied))
    }

    /// The weighted commit index reached `index`: deliver up to it.
    fn open_gate(&mut self, index: u64) {
        if self.gate.held() == 0 {
            return self.gate.open(index);
        }
        self.gate.open(index);
        self.deliver_gated();
        let applied = self.applying.max(self.raw.raft.raft_log.applied);
        self.raw.advance_apply_to(applied);
        self.answer_reads();
        self.flush_events();
    }

    /// The leader's part, after every `Ready` and tick: the highest index
    /// voters weighing more than half hold (and Raft committed).
    pub(super) fn advance_weighted_commit(&mut self) {
        if !self.gate.is_active() || self.raw.raft.state != StateRole::Leader {
            return;
        }
        let prs = self.raw.raft.prs();
        let acks: Vec<(u64, u32)> = self
            .state
            .members()
            .iter()
            .filter(|m| m.voter)
            .map(|m| (prs.get(m.info.id.raft_id()).map_or(0, |p| p.matched), m.weight))
            .collect();
        let index = weights::committed(&acks).min(self.raw.raft.raft_log.committed);
        self.open_gate(index);
    }

    /// Once a tick while weights differ, the leader tells every member the
    /// weighted commit index and whether it hears a weighted majority.
    pub(super) fn send_commit_notice(&mut self, now: Instant) {
        if !self.gate.is_active() || self.raw.raft.state != StateRole::Leader {
            return;
        }
        let notice = CommitNotice { term: self.raw.raft.term, index: self.gate.open_to().unwrap_or(0), primary: self.side_is_primary(now) };
        let payload = notice.encode();
        for id in &self.peers {
            self.net.send(*id, KIND_COMMIT, payload.clone());
        }
    }

    /// A member's notice: the index is a fact about committed entries
    /// (the same on every member), whoever sends it; the verdict counts
    /// only from the current leader.
    pub(super) fn on_commit_notice(&mut self, from: u64, payload: &[u8]) {
        let Some(n) = CommitNotice::decode(payload) else {
            return log::warning!("ignoring a malformed commit notice from {:x}", from);
        };
        if !self.peers.contains(&from) {
            return;
        }
        if from == self.raw.raft.leader_id && n.term == self.raw.raft.term {
            self.leader_says = Some((from, n.primary, Instant::now()));
        }
        self.open_gate(n.index);
    }

    /// Whether this member's side weighs enough to be primary, as heard by
    /// this member (the leader hears every member).
    pub(super) fn side_is_primary(&self, now: Instant) -> bool {
        let standing = self.side_standing(now);
        standing == Standing::Majority || self.policy.forces_primary(standing)
    }

    /// This member and the members it heard from lately, weighed against
    /// the last primary view.
    pub(super) fn side_standing(&self, now: Instant) -> Standing {
        let side = self.state.weight_of(|m| self.hears(m, now));
        weights::standing(side, self.state.weight_of(|_| true))
    }

    fn hears(&self, m: &Member, now: Instant) -> bool {
        m.info.id == self.me.id || self.liveness.is_recent(m.info.id.raft_id(), now)
    }

    /// While weights differ a leader counts only if it says it hears a
    /// weighted majority: a light majority orders nothing it could deliver
    /// and must turn non-primary like any minority.
    pub(super) fn weight_allows_leader(&self, now: Instant) -> bool {
        if !self.gate.is_active() {
            return true;
        }
        if self.raw.raft.state == StateRole::Leader {
            return self.side_is_primary(now);
        }
        self.leader_says.is_some_and(|(from, primary, at)| {
            primary && from == self.raw.raft.leader_id && now.saturating_duration_since(at) < self.liveness.timeouts.suspect
        })
    }

    /// Calls every member while no leader is known, saying how far this
    /// member's log goes.
    pub(super) fn probe_peers(&mut self, now: Instant) {
        if !self.quorum.probe_due(now) {
            return;
        }
        let last = self.raw.raft.raft_log.last_index();
        let payload = encode_log_position(self.raw.raft.raft_log.term(last).unwrap_or(0), last);
        for id in &self.peers {
            self.net.send(*id, KIND_PROBE, payload.clone());
        }
    }

    pub(super) fn on_probe(&mut self, from: u64, payload: &[u8]) {
        if let Some(position) = decode_log_position(payload) {
            if self.peer_logs.len() < super::driver::REMEMBER_REMOVED || self.peer_logs.contains_key(&from) {
                self.peer_logs.insert(from, position);
            }
        }
        self.tell_if_removed(from);
    }

    /// This side weighs more than half but has no leader: the voter of the
    /// side with the most up-to-date log forms the component again; the
    /// others wait for it (non-primary) and then join it. Returns whether
    /// this member is the one.
    pub(super) fn reforms_by_weight(&self, now: Instant) -> bool {
        let me = self.me.id.raft_id();
        let last = self.raw.raft.raft_log.last_index();
        let mine = (self.raw.raft.raft_log.term(last).unwrap_or(0), last);
        let side: Vec<(u64, (u64, u64))> = self
            .state
            .members()
            .iter()
            .filter(|m| m.voter && self.hears(m, now))
            .map(|m| m.info.id.raft_id())
            .map(|id| (id, if id == me { mine } else { self.peer_logs.get(&id).copied().unwrap_or((0, 0)) }))
            .collect();
        let chosen = weights::reformer(&side);
        if chosen != Some(me) {
            log::info!("this side of the partition weighs more than half; member {:x} has the most advanced log and forms the primary component", chosen.unwrap_or(0));
        }
        chosen == Some(me)
    }

    /// Before forming a component again on its own side, a member delivers
    /// every entry of its log: the old component may have committed them
    /// (they were held by a weighted majority, which this side meets), and
    /// a component that went on without them would lose acknowledged
    /// writesets.
    pub(super) fn deliver_own_log(&mut self) {
        let from = self.applying.max(self.raw.raft.raft_log.applied) + 1;
        let entries = match self.raw.raft.raft_log.entries(from, None, GetEntriesContext::empty(false)) {
            Ok(es) => es,
            Err(e) => return log::error!("cannot read this node's log from index {}: {}", from, e),
        };
        if entries.is_empty() {
            return;
        }
        log::info!("delivering {} entries of this node's log (indexes {}-{}) the old component may have committed", entries.len(), from, from + entries.len() as u64 - 1);
        self.gate.restart(None);
        for e in entries {
            if self.removed_at.is_some() {
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
        if m.weight == self.policy.weight || !self.quorum.is_primary() {
            return;
        }
        if self.weight_asked.is_some_and(|at| now.saturating_duration_since(at) < Quorum::PROBE_EVERY) {
            return;
        }
        self.weight_asked = Some(now);
        log::info!("pc.weight of this node is {}: telling the group", self.policy.weight);
        let _ = self.raw.propose(vec![], Entry::Weight { member: self.me.id, weight: self.policy.weight }.encode());
    }

    /// The sum of the weights of the primary component (0 outside one),
    /// for `wsrep_cluster_weight`.
    pub(super) fn cluster_weight(&self) -> u64 {
        if !self.quorum.is_primary() || !self.state.is_primary() {
            return 0;
        }
        self.state.weight_of(|_| true)
    }

    /// A writeset proposal is refused while too much waits at the gate.
    pub(super) fn gate_full(&mut self, token: u64) -> bool {
        if !self.gate.full() {
            return false;
        }
        log::warning!("{} committed entries wait for the weighted commit index: refusing a writeset", self.gate.held());
        self.events.push(GroupEvent::ProposalFailed { token });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_and_log_positions_round_trip_and_refuse_other_lengths() {
        let n = CommitNotice { term: 7, index: 1234, primary: true };
        assert_eq!(CommitNotice::decode(&n.encode()), Some(n));
        assert_eq!(CommitNotice::decode(&n.encode()[..16]), None);
        assert_eq!(decode_log_position(&encode_log_position(3, 99)), Some((3, 99)));
        assert_eq!(decode_log_position(&[]), None);
    }
}
