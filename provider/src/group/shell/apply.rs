//! Committed entries and snapshots applied to the group state, and the
//! events they make handed to the node in order; the log compacted
//! behind snapshots.


use bytes::Bytes;
use protobuf::Message as _;
use raft::prelude::{ConfChange, Entry as RaftEntry, EntryType, Message, Snapshot};
use raft::{RawNode, StateRole};

use super::driver::Driver;
use super::log::GroupLog;
use crate::group::membership::phase::Phase;
use crate::group::state::{GroupEvent, GroupState};
use crate::group::wire::entry::{Entry, Membership, Transition};
use crate::group::wire::frame::Frame;
use crate::log;

impl Driver {
    pub(super) fn apply(&mut self, entries: Vec<RaftEntry>) {
        self.apply_gated(entries);
        self.answer_reads();
    }

    /// One committed entry, through the gate (see `weighted`).
    pub(super) fn apply_entry(&mut self, e: RaftEntry) {
        self.applying = e.index;
        self.applied_bytes += (e.context.len() + e.data.len()) as u64;
        match e.get_entry_type() {
            EntryType::EntryNormal if e.data.is_empty() && e.context.is_empty() => {} // leader no-op
            EntryType::EntryNormal => self.apply_normal(e.index, &e.context, &e.data),
            EntryType::EntryConfChange => self.apply_conf_change(e.index, e.get_data()),
            // Never proposed by lockstep: a peer that speaks another protocol.
            EntryType::EntryConfChangeV2 => self.halt(e.index, "a joint configuration change"),
        }
    }

    pub(super) fn apply_normal(&mut self, index: u64, head: &Bytes, body: &Bytes) {
        match Entry::decode_split(head, body) {
            Ok(entry) => {
                if matches!(entry, Entry::MemberState { member, transition: Transition::Rejoin, .. } if member == self.me.id) {
                    self.incarnation.quorum.rejoined();
                }
                self.incarnation.unconfirmed.committed(self.me.id, &entry);
                self.members.members_moved |= matches!(entry, Entry::MemberState { .. });
                let before = self.events.len();
                self.state.apply(entry, &mut self.events);
                self.order.join_assembled(&mut self.events[before..], self.me.id);
                self.drop_stale(index, before);
                let leader = self.incarnation.raw.raft.state == StateRole::Leader;
                self.members.placement.count(leader, &self.events[before..]);
                self.note_own_deliveries(before);
            }
            Err(err) => self.halt(index, &err.to_string()),
        }
    }

    /// Every seqno handed to the node follows the last (see `sequence`).
    /// At a break this member's order is not the group's: it hands
    /// nothing more to the node, which leaves the cluster.
    pub(super) fn check_sequence(&mut self) {
        for i in 0..self.events.len() {
            let Err(e) = self.order.sequence.check(&self.events[i]) else { continue };
            log::error!("the order this node was given is broken ({}, log index {}): it stops applying and leaves the cluster", e, self.applying);
            self.events.truncate(i);
            return self.stop_applying(self.applying);
        }
    }

    /// A committed entry this member cannot decode stops it: skipping it
    /// could change what it decides from then on (a membership, a
    /// writeset's seqno) while the others, which decoded it, go on. The
    /// node leaves the cluster (see `GroupEvent::Halted`).
    pub(super) fn halt(&mut self, index: u64, what: &str) {
        log::error!(
            "the group entry committed at index {} cannot be read ({}): a member of another lockstep version or corrupt data; this node stops applying and leaves the cluster",
            index,
            what
        );
        self.stop_applying(index);
    }

    /// Nothing after log index `index` is applied, and the node is told
    /// to leave the cluster.
    pub(super) fn stop_applying(&mut self, index: u64) {
        if self.members.halt() {
            self.events.push(GroupEvent::Halted { index });
        }
    }

    pub(super) fn apply_conf_change(&mut self, index: u64, data: &[u8]) {
        let cc = match ConfChange::parse_from_bytes(data) {
            Ok(cc) => cc,
            Err(e) => return self.halt(index, &format!("configuration change: {}", e)),
        };
        self.members.members_moved = true;
        let membership = Membership::decode(cc.get_context());
        // A join asked again before the first Add was applied is ordered
        // twice. The group state ignores the second; raft-rs would make
        // the member, a voter by then, a learner again: Raft's quorum
        // would then leave out a member the group counts (simulator,
        // seed 1913: voters node 1 and 2, node 3 a learner; node 2's
        // crash then left no leader for good). Every member skips it alike.
        let repeated = matches!(&membership, Ok(Membership::Add { member }) if self.state.member(member.id).is_some());
        if repeated {
            log::debug!("a repeated join at index {}: not applied to raft", index);
        } else {
            match self.incarnation.raw.apply_conf_change(&cc) {
                Ok(cs) => self.incarnation.raw.store().set_conf_state(cs),
                // Refused alike on every member (e.g. removing the last voter).
                Err(e) => log::info!("configuration change at index {} refused by raft: {}", index, e),
            }
        }
        match membership {
            Ok(m) => {
                log::debug!("applying membership {:?} at index {} (stale until {}, member now: {})", m, index, self.members.stale_until, self.state.member(self.me.id).is_some());
                if let Membership::Add { member } = &m {
                    if !repeated {
                        self.incarnation.raw.store().note_added(member.id.raft_id(), index);
                    }
                }
                if let Membership::Remove { member } = &m {
                    if *member != self.me.id {
                        self.send_frame([member.raft_id()], &Frame::Left { member: *member, index });
                        self.members.remember_removed(*member, index);
                    }
                }
                let me_out = matches!(&m, Membership::Remove { member } if *member == self.me.id);
                if me_out && index > self.members.stale_until && !self.members.is_leaving_or_left() {
                    // As if told by the notice (see `removed_at`).
                    self.members.removed_at = Some(index);
                    return;
                }
                let before = self.events.len();
                self.state.apply_membership(m, &mut self.events);
                self.drop_stale(index, before);
                self.refresh_peers();
                let ids: Vec<u64> = self.state.members().iter().map(|m| m.info.id.raft_id()).collect();
                self.flow.retain_members(&ids);
                self.primary.retain_members(&ids);
                self.order.own_payloads.retain_members(&ids);
                self.forget_answers_of_the_gone();
                self.publish_flow();
                if me_out && matches!(self.members.phase, Phase::Leaving(_)) {
                    // The leave is done: what the group orders after it
                    // is not numbered for this member (see `applies`).
                    self.leaving_tick();
                }
            }
            Err(e) => self.halt(index, &format!("membership change: {}", e)),
        }
    }

    /// Replaces our state with the leader's snapshot (a joiner, or a member
    /// that fell too far behind).
    pub(super) fn restore(&mut self, snap: Snapshot) {
        let index = snap.get_metadata().index;
        let (group, node) = match super::config::split_snapshot(snap.get_data()) {
            Some(parts) => parts,
            None => return log::error!("ignoring a malformed snapshot at index {}", index),
        };
        let state = match GroupState::decode(self.me.id, group) {
            Ok(s) => s,
            Err(e) => return log::error!("ignoring a snapshot at index {}: {}", index, e),
        };
        if let Err(e) = self.incarnation.raw.store().apply_snapshot(snap.clone()) {
            return log::error!("cannot install the snapshot at index {}: {}", index, e);
        }
        self.state = state;
        self.order.defrag.clear();
        self.applying = index;
        self.incarnation.gate.restart(self.state.weighted().then_some(index));
        log::info!("restored the group state at seqno {} from a snapshot (index {})", self.state.seqno(), index);
        self.forget_own_proposals();
        let mut view = self.state.view();
        if index <= self.members.stale_until {
            // Taken before our removal: we are not in it as who we are now.
            view.members.retain(|m| m.id != self.me.id);
            view.my_idx = -1;
        }
        self.events.push(GroupEvent::Restored { node: Bytes::copy_from_slice(node), view });
        self.refresh_peers();
    }

    /// Snapshots when raft-rs asked for one or the log grew long.
    pub(super) fn maybe_snapshot(&mut self) {
        let applied = self.incarnation.raw.raft.raft_log.applied;
        let store = self.incarnation.raw.store();
        let due = applied >= store.snapshot_index() + self.limits.snapshot_every || self.applied_bytes >= self.limits.snapshot_bytes;
        if !(store.snapshot_wanted() || due) || !self.state.is_primary() || !self.state.may_snapshot() {
            return;
        }
        self.applied_bytes = 0;
        let mut snap = Snapshot::default();
        let node = self.delivery.snapshot();
        snap.set_data(Bytes::from(super::config::join_snapshot(&self.state.encode(), &node)));
        let md = snap.mut_metadata();
        md.index = applied;
        md.term = self.incarnation.raw.raft.raft_log.term(applied).unwrap_or(0);
        md.set_conf_state(self.incarnation.raw.raft.prs().conf().to_conf_state());
        let keep_from = self.keep_from(applied);
        self.incarnation.raw.store().set_snapshot(snap, keep_from);
    }

    /// The first entry to keep behind a snapshot at `applied`: a few, and
    /// also those a member still lacks (see `lowest_needed`), within
    /// `log_hold`.
    pub(super) fn keep_from(&self, applied: u64) -> u64 {
        let store = self.incarnation.raw.store();
        let keep = store.keep_from(applied, self.limits.log_keep.entries, self.limits.log_keep.bytes);
        let Some(has) = self.lowest_needed() else { return keep };
        if has >= keep {
            // Everyone has what goes (the usual case): no need to walk
            // the log for the hold's bound.
            return keep;
        }
        let hold = store.keep_from(applied, self.limits.log_hold.entries, self.limits.log_hold.bytes);
        keep.min(has.max(hold))
    }

    /// The last entry the member furthest behind has, whose log this
    /// member must keep for it: on a leader, every other member's; on an
    /// arbitrator, the data voters' as its leader told it (see
    /// `arbitrator_hold`); a data follower keeps none (the leader sends a
    /// snapshot). From the last entry a member has, not the first it
    /// lacks: the next append to it carries that entry's term, which a
    /// compacted log cannot give, and raft-rs would send a snapshot
    /// instead.
    pub(super) fn lowest_needed(&self) -> Option<u64> {
        let raft = &self.incarnation.raw.raft;
        if raft.state == StateRole::Leader {
            let me = self.me.id.raft_id();
            return raft.prs().iter().filter(|(id, _)| **id != me).map(|(_, pr)| pr.matched).min();
        }
        self.me.arbitrator.then(|| self.members.arbitrator_hold.lowest())
    }

    /// Events of an entry at `index` from `from` on: up to our removal
    /// (`stale_until`), they are our previous incarnation's, and the node
    /// must not take them for its new join (nor donate again what it
    /// donated then). Our states and the state transfers go. The views
    /// stay, as views of the others (`my_idx` -1; our own removal, which
    /// the state shows us as non-primary, as the view they saw then):
    /// every seqno reaches the node in order, its certification and
    /// gcache see the same sequence as everyone's, and a seqno the
    /// appliers never see is not a gap in what the server is given.
    pub(super) fn drop_stale(&mut self, index: u64, from: usize) {
        if index > self.members.stale_until {
            return;
        }
        let me = self.me.id;
        let mut i = from;
        while i < self.events.len() {
            match &mut self.events[i] {
                GroupEvent::View(v) if v.primary => v.my_idx = -1,
                GroupEvent::View(_) => self.events[i] = GroupEvent::View(self.state.view()),
                GroupEvent::StateTransfer { .. } | GroupEvent::StateTransferFailed { .. } => {
                    self.events.remove(i);
                    continue;
                }
                GroupEvent::MemberState { member, .. } if *member == me => {
                    self.events.remove(i);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    pub(super) fn flush_events(&mut self) {
        self.check_sequence();
        for ev in &self.events {
            if let GroupEvent::ProposalFailed { .. } = ev {
                self.counters.sent_one_less();
            }
        }
        if !self.events.is_empty() {
            self.delivery.deliver(&mut self.events);
            self.events.clear();
        }
    }
}

impl super::ready::ReadyHandler for Driver {
    fn raw(&mut self) -> &mut RawNode<GroupLog> {
        &mut self.incarnation.raw
    }

    fn send(&mut self, msgs: Vec<Message>) {
        Driver::send(self, msgs)
    }

    fn restore(&mut self, snap: Snapshot) {
        Driver::restore(self, snap)
    }

    fn apply(&mut self, entries: Vec<RaftEntry>) {
        Driver::apply(self, entries)
    }

    fn applied(&self) -> Option<u64> {
        self.incarnation.gate.applied_for_raft(self.applying, self.incarnation.raw.raft.raft_log.applied)
    }

    fn read_states(&mut self, states: Vec<raft::ReadState>) {
        self.take_read_states(states)
    }

    fn conf_stored(&mut self) -> &mut u64 {
        &mut self.incarnation.conf_stored
    }

    fn to_store(&mut self, entries: &mut [RaftEntry]) {
        let me = self.me.id;
        for e in entries.iter_mut().filter(|e| !e.context.is_empty()) {
            let len = e.data.len();
            let stored = match Entry::decode(&e.context) {
                Ok(Entry::Ordered { origin, token, .. }) if origin == me => self.own_payload(token, 0, len),
                Ok(Entry::Piece { origin, token, offset, .. }) if origin == me => self.own_payload(token, offset, len),
                Ok(Entry::Piece { origin, token, total, offset, .. }) => self.order.defrag.stage(origin, token, total, offset, &e.data),
                _ => None,
            };
            if let Some(data) = stored {
                e.data = data;
            }
        }
    }
}
