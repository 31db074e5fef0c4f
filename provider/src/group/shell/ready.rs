//! raft-rs's `Ready` hand-off, in the order raft-rs requires: one
//! implementation for the driver and the simulator, so that the simulator
//! tests the sequence the driver runs.

use raft::prelude::{Entry, EntryType, Message, Snapshot};
use raft::{RawNode, ReadState};

use super::log::GroupLog;

/// What a member does with each part of a `Ready`.
pub trait ReadyHandler {
    fn raw(&mut self) -> &mut RawNode<GroupLog>;
    fn send(&mut self, msgs: Vec<Message>);
    /// A leader's snapshot replaces the member's state.
    fn restore(&mut self, snap: Snapshot);
    /// Committed entries, in order.
    fn apply(&mut self, entries: Vec<Entry>);
    fn read_states(&mut self, _states: Vec<ReadState>) {}
    /// Entries about to be stored: a member may swap the payload of an
    /// entry for its own buffer of the same bytes (its own writeset's, or
    /// the one another's big writeset is written into).
    fn to_store(&mut self, _entries: &mut [Entry]) {}
    /// How far the member applied, when it holds committed entries back
    /// (see `weighted`); None: everything handed to `apply`.
    fn applied(&self) -> Option<u64> {
        None
    }
    /// The highest index of a configuration change stored in this Raft
    /// node's log (see `commit_ahead`).
    fn conf_stored(&mut self) -> &mut u64;
}

/// Processes one `Ready`, if raft-rs has one.
pub fn hand_off(h: &mut impl ReadyHandler) {
    if !h.raw().has_ready() {
        return;
    }
    let mut ready = h.raw().ready();
    h.send(ready.take_messages());
    if !ready.snapshot().is_empty() {
        h.restore(ready.snapshot().clone());
    }
    h.apply(ready.take_committed_entries());
    h.read_states(ready.take_read_states());
    if !ready.entries().is_empty() {
        let mut entries = ready.entries().clone(); // payloads are shared, not copied
        h.to_store(&mut entries);
        if let Some(e) = entries.iter().rev().find(|e| e.get_entry_type() != EntryType::EntryNormal) {
            *h.conf_stored() = e.index;
        }
        h.raw().store().append(&entries).expect("append to the in-memory log");
    }
    if let Some(hs) = ready.hs() {
        h.raw().store().set_hardstate(hs.clone());
    }
    h.send(ready.take_persisted_messages());
    // Not `advance`, which counts everything handed out before as applied:
    // entries held at the weighted-quorum gate are not.
    let mut light = h.raw().advance_append(ready);
    if let Some(commit) = light.commit_index() {
        h.raw().store().set_commit(commit);
    }
    h.send(light.take_messages());
    h.apply(light.take_committed_entries());
    match h.applied() {
        Some(index) => h.raw().advance_apply_to(index),
        None => h.raw().advance_apply(),
    }
    // What this follower just stored may be committed already: then
    // hand it off now, not at the leader's next message.
    let conf_stored = *h.conf_stored();
    if super::commit_ahead::commit_ahead(&mut h.raw().raft, conf_stored) {
        hand_off(h);
    }
    // For the steps until the next Ready, under the configuration as now.
    let skip = super::commit_ahead::followers_commit_ahead(&h.raw().raft);
    h.raw().raft.skip_bcast_commit(skip);
}
