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
use crate::group::wire::entry::{Entry, Transition};
use crate::log;

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
        if let Some(token) = self.order.fail(failed, &mut self.events) {
            self.propose_fence(token);
        }
    }

    /// Proposes a fence of our writesets up to `token` (see `Order`).
    pub(super) fn propose_fence(&mut self, token: u64) {
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
            self.propose_fence(token);
        }
        for data in std::mem::take(&mut self.incarnation.dropped) {
            self.propose_or_keep(data);
        }
        for data in self.incarnation.unconfirmed.due(self.me.id, &self.state, self.clock.now()) {
            self.propose_or_keep(data);
        }
    }

    /// See `Order::note_own_deliveries`; each of ours ordered leaves the
    /// send queue.
    pub(super) fn note_own_deliveries(&mut self, from: usize) {
        let give_up = self.give_up_after();
        let ordered = self.order.note_own_deliveries(&mut self.events, from, self.me.id, self.clock.now(), give_up);
        for _ in 0..ordered {
            self.counters.sent_one_less();
        }
    }

    pub(super) fn forget_answers_of_the_gone(&mut self) {
        let state = &self.state;
        self.order.forget_answers_of_the_gone(|id| state.member_by_raft_id(id).is_some(), &self.counters.round_trips);
    }

    /// See `order::give_up_after`.
    pub(super) fn give_up_after(&self) -> Duration {
        crate::group::order::give_up_after(self.primary.timeouts().inactive)
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
        let failed = self.order.abandon(&mut self.events);
        if failed > 0 {
            log::info!("{} writesets of this node's clients may be in the snapshot it caught up with: they fail", failed);
        }
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
