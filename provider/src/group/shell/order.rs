//! What the order room decides, done on the driver's thread: this
//! member's writesets handed to Raft in pieces, fenced when lost, their
//! clients told; others' big writesets joined; the followers' answers
//! timed (see `order`).

use std::time::Duration;

use bytes::Bytes;
use raft::RawNode;
use raft::prelude::{Entry as RaftEntry, Message, MessageType};

use super::driver::Driver;
use super::incarnation::MAX_DROPPED;
use super::log::GroupLog;
use crate::group::order::proposals::Failed;
use crate::group::state::GroupEvent;
use crate::group::wire::entry::{Entry, Transition};
use crate::group::wire::pieces;
use crate::log;

/// A local proposal still waiting this long is presumed lost with a
/// leader: fence it so the client learns its fate.
const FENCE_AFTER: Duration = Duration::from_secs(2);

impl Driver {

    pub(super) fn propose(&mut self, token: u64, body: Bytes) {
        if token == 0 {
            // Rollback fragments: small, and nobody waits for them.
            return self.propose_or_keep(Entry::Ordered { origin: self.me.id, token, payload: body }.encode());
        }
        if self.gate_full(token) {
            return;
        }
        self.order.proposals.add(token, body, self.clock.now());
        self.pump();
    }

    /// Hands Raft what our writesets have ready (see `Proposals::pump`).
    pub(super) fn pump(&mut self) {
        let raw = &mut self.incarnation.raw;
        self.order.proposals.pump(self.me.id, self.clock.now(), |entry| propose_split(raw, entry));
    }

    /// The payload of a writeset's entry that this member proposed (bytes
    /// `offset..offset + len` of writeset `token`), as a view of the buffer
    /// it still holds: a member that is not the leader gets its entries
    /// back from the leader, and would keep a second copy of a big
    /// writeset in its log. None: no longer held.
    pub(super) fn own_payload(&self, token: u64, offset: u64, len: usize) -> Option<Bytes> {
        crate::group::order::own_payloads::part(self.order.proposals.body(token)?, offset, len)
    }

    /// A writeset of ours failed: its client hears it, and what of it may
    /// be in the log is fenced so that no member keeps its pieces.
    pub(super) fn fail(&mut self, failed: Failed) {
        self.events.push(GroupEvent::ProposalFailed { token: failed.client });
        if let Some(wire) = failed.fence {
            self.owe_fence(wire);
        }
    }

    /// Our writesets up to `token` must be fenced: now, and every tick
    /// until the fence is ordered (see `owed_fence`).
    pub(super) fn owe_fence(&mut self, token: u64) {
        self.order.owed_fence = self.order.owed_fence.max(Some(token));
        let _ = self.incarnation.raw.propose(vec![], Entry::Fence { origin: self.me.id, token }.encode());
    }

    /// A fire-and-forget proposal (member state, state request, rollback
    /// fragment) Raft drops is kept and retried once a leader is known.
    pub(super) fn propose_or_keep(&mut self, data: Vec<u8>) {
        let entry = Entry::decode(&Bytes::copy_from_slice(&data)).ok();
        if self.hold_sync(entry.as_ref(), &data) {
            return; // kept as unconfirmed once proposed, not while held
        }
        if let Some(e) = &entry {
            self.incarnation.unconfirmed.sent(self.me.id, e, &data, &self.state, self.clock.now());
        }
        if let Err(raft::Error::ProposalDropped) = self.incarnation.raw.propose(vec![], data.clone()) {
            if self.incarnation.dropped.len() >= MAX_DROPPED {
                log::warning!("dropping a group message: {} already wait for a leader", MAX_DROPPED);
                self.incarnation.dropped.pop_front();
            }
            self.incarnation.dropped.push_back(data);
        }
    }

    /// A member reports Synced (and its server takes writes) only once it
    /// votes: the leader promotes a learner when it is Joined, and a
    /// synced learner is no quorum. Reported before, a synced node whose
    /// leader died before promoting it was non-Primary with a peer that
    /// should have kept it Primary (two data nodes and garbd: the one just
    /// rejoined, and garbd). Galera counts every member of a view alike.
    /// Bounded: one held entry, proposed in the turn that applies the
    /// promotion (see `release_sync`).
    pub(super) fn hold_sync(&mut self, entry: Option<&Entry>, data: &[u8]) -> bool {
        let voter = self.state.member(self.me.id).is_some_and(|m| m.voter);
        if voter {
            return false;
        }
        match entry {
            Some(Entry::MemberState { member, transition: Transition::Sync, .. }) if *member == self.me.id => {
                self.incarnation.held_sync = Some(data.to_vec());
                true
            }
            _ => false,
        }
    }

    pub(super) fn release_sync(&mut self) {
        if self.state.member(self.me.id).is_some_and(|m| m.voter) {
            if let Some(data) = self.incarnation.held_sync.take() {
                self.propose_or_keep(data);
            }
        }
    }

    /// Retries what Raft dropped while no leader was known; fails
    /// writesets that made no progress for too long. Once a tick, so that
    /// a writeset is not copied in a busy loop while no leader is known.
    pub(super) fn resend(&mut self) {
        if self.members.bootstrap.is_some() {
            return; // a component being formed orders nothing before it
        }
        let give_up = self.give_up_after();
        for failed in self.order.proposals.stalled(self.clock.now(), give_up) {
            self.fail(failed);
        }
        self.pump();
        if let Some(token) = self.order.owed_fence.filter(|_| self.incarnation.quorum.is_primary()) {
            let _ = self.incarnation.raw.propose(vec![], Entry::Fence { origin: self.me.id, token }.encode());
        }
        for data in std::mem::take(&mut self.incarnation.dropped) {
            self.propose_or_keep(data);
        }
        for data in self.incarnation.unconfirmed.due(self.me.id, &self.state, self.clock.now()) {
            self.propose_or_keep(data);
        }
    }

    /// How long a writeset may wait for a leader before its client gets an
    /// error: through an election and an eviction, as Galera's clients
    /// wait through a configuration change.
    pub(super) fn give_up_after(&self) -> Duration {
        self.primary.liveness.timeouts.inactive.max(2 * FENCE_AFTER)
    }

    /// A follower's acceptance, for `round_trips`: how long it took, and
    /// whether it moved the commit index from `committed`.
    pub(super) fn note_answer(&mut self, from: u64, term: u64, index: u64, committed: u64) {
        let took = self.order.round_trips.answered(from, term, index, self.clock.now());
        let moved = self.incarnation.raw.raft.raft_log.committed > committed;
        if took.is_none() && !moved {
            return;
        }
        if !self.order.answer_series.contains_key(&from) {
            let Some(m) = self.state.member_by_raft_id(from) else { return };
            let name = m.info.name.clone();
            let series = self.counters.round_trips.series(&name);
            self.order.answer_series.insert(from, (name, series));
        }
        self.order.answer_series[&from].1.record(took, moved);
    }

    /// Members that left take their answer series off the metrics page.
    pub(super) fn forget_answers_of_the_gone(&mut self) {
        let gone: Vec<u64> = self.order.answer_series.keys().copied().filter(|id| self.state.member_by_raft_id(*id).is_none()).collect();
        for id in gone {
            if let Some((name, _)) = self.order.answer_series.remove(&id) {
                self.counters.round_trips.forget(&name);
            }
        }
    }

    /// A writeset ordered from pieces reaches the node as one payload. Our
    /// own is the buffer we sent, which its client holds anyway: joining
    /// the pieces would make a big writeset's second copy on its origin.
    /// Another's is the buffer its pieces were written into as they were
    /// stored, when they all were (see `defrag`); a fence lets go of the
    /// buffers of the writesets it drops.
    pub(super) fn join_assembled(&mut self, from: usize) {
        for ev in &mut self.events[from..] {
            if let GroupEvent::Fenced { origin, token } = ev {
                self.order.defrag.fence(*origin, *token);
            }
            let GroupEvent::Assembled { seqno, origin, token, pieces } = ev else { continue };
            let len: usize = pieces.iter().map(Bytes::len).sum();
            let ours = if *origin == self.me.id { self.order.proposals.body(*token).filter(|b| b.len() == len) } else { None };
            let payload = match ours {
                Some(body) => {
                    debug_assert!(pieces::join(pieces.clone()) == *body, "our writeset came back changed");
                    body.clone()
                }
                None => match self.order.defrag.take(*origin, *token, pieces) {
                    Some(whole) => whole,
                    None => pieces::join(std::mem::take(pieces)),
                },
            };
            *ev = GroupEvent::Ordered { seqno: *seqno, origin: *origin, token: *token, payload };
        }
    }

    /// Our writesets ordered now get their client's token back, their
    /// pieces send more; our fences resend what they cover (the node never
    /// sees either).
    pub(super) fn note_own_deliveries(&mut self, from: usize) {
        let me = self.me.id;
        let mut fenced = None;
        let mut progressed = false;
        for ev in &mut self.events[from..] {
            match ev {
                GroupEvent::Assembling { origin, token, bytes } if *origin == me => {
                    self.order.proposals.progressed(*token, *bytes, self.clock.now());
                    progressed = true;
                }
                GroupEvent::Ordered { origin, token, .. } if *origin == me && *token != 0 => {
                    // None: a copy from before a fence cannot be ordered
                    // (the group drops it), so this is not expected.
                    *token = self.order.proposals.ordered(*token).unwrap_or(0);
                    self.counters.sent_one_less();
                }
                GroupEvent::Fenced { origin, token } if *origin == me => {
                    fenced = Some(*token);
                    if self.order.owed_fence.is_some_and(|owed| *token >= owed) {
                        self.order.owed_fence = None;
                    }
                }
                _ => {}
            }
        }
        self.events.retain(|ev| !matches!(ev, GroupEvent::Fenced { origin, .. } if *origin == me) && !matches!(ev, GroupEvent::Assembling { .. }));
        if let Some(upto) = fenced {
            let give_up = self.give_up_after();
            for client in self.order.proposals.fenced(upto, self.clock.now(), give_up) {
                self.events.push(GroupEvent::ProposalFailed { token: client });
            }
        }
        // Not now: this runs inside a Ready hand-off (see `turn`).
        self.order.pump_due |= progressed || fenced.is_some();
    }

    /// Our writesets handed to Raft may have been ordered inside the
    /// snapshot just restored, where we never see them: sent again after a
    /// fence, they would be ordered twice (every node would commit them
    /// twice; the simulator found it: a proposal forwarded just before a
    /// partition, committed while this member was cut off, which then
    /// caught up by snapshot). Their clients fail, as on a non-primary
    /// view; one that was ordered reaches this node's data by its state
    /// transfer, as Galera's do. What is still in flight is fenced.
    pub(super) fn forget_own_proposals(&mut self) {
        let fence = self.order.proposals.highest_sent();
        let failed = self.order.proposals.abandon();
        if !failed.is_empty() {
            log::info!("{} writesets of this node's clients may be in the snapshot it caught up with: they fail", failed.len());
        }
        for client in failed {
            self.events.push(GroupEvent::ProposalFailed { token: client });
        }
        self.order.owed_fence = self.order.owed_fence.max(fence);
    }

    /// A proposal of ours handed to Raft that has made no progress for
    /// long (nothing of it committed) was probably lost with a leader:
    /// fence everything up to the highest token so that it can never be
    /// ordered later; it is sent again (or its client learns it failed).
    pub(super) fn maybe_fence(&mut self) {
        let Some(upto) = self.order.proposals.highest_sent() else { return };
        let now = self.clock.now();
        let stalled = self.order.proposals.oldest_progress().is_some_and(|at| now.saturating_duration_since(at) >= FENCE_AFTER);
        if !stalled || self.clock.now().saturating_duration_since(self.order.last_fence) < FENCE_AFTER {
            return;
        }
        if self.state.member(self.me.id).is_none() {
            return;
        }
        self.order.last_fence = self.clock.now();
        log::info!("fencing proposals up to token {} (no progress for {:?}); they will be sent again", upto, FENCE_AFTER);
        let data = Entry::Fence { origin: self.me.id, token: upto }.encode();
        let _ = self.incarnation.raw.propose(vec![], data);
    }
}

/// Proposes a writeset's entry with its payload apart (`Entry::split`),
/// so that the log holds a view of the client's buffer: raft-rs's
/// `propose` takes owned vectors, a copy of every payload. A MsgPropose
/// stepped in is what `propose` makes; true if Raft took it.
fn propose_split(raw: &mut RawNode<GroupLog>, entry: Entry) -> bool {
    let (head, body) = entry.split();
    let mut e = RaftEntry::default();
    e.context = Bytes::from(head);
    e.data = body;
    let mut m = Message::default();
    m.set_msg_type(MessageType::MsgPropose);
    m.from = raw.raft.id;
    m.set_entries(vec![e].into());
    raw.step(m).is_ok()
}
