//! The Raft log in memory, and the snapshots a lagging or new member
//! receives instead of entries the log no longer holds.
//!
//! raft-rs asks the storage for a snapshot in the middle of its own step
//! functions; the group state and certification index it must contain live
//! in the driver. So a request only raises a flag and answers "temporarily
//! unavailable"; the driver builds the snapshot at the applied index after
//! the current turn and raft-rs retries.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use raft::prelude::{ConfState, Entry, HardState, Snapshot};
use raft::storage::MemStorage;
use raft::{GetEntriesContext, RaftState, Storage, StorageError};

pub struct GroupLog {
    pub mem: MemStorage,
    snapshot: RefCell<Option<Snapshot>>,
    wanted: Cell<bool>,
    /// The log index at which each member (raft id) was last added. A
    /// member removed and added again keeps its id: a snapshot from
    /// before its new Add shows its previous incarnation as a member, and
    /// it would take that for its own join.
    added_at: RefCell<BTreeMap<u64, u64>>,
    /// An arbitrator's log: its snapshots hold no node state, so it never
    /// sends one, even while it leads to hand over (see
    /// `driver::campaigns_last`).
    no_snapshots: Cell<bool>,
}

impl GroupLog {
    /// A log whose voters are `voters` (a bootstrapping member: itself) or
    /// nobody (a joiner, which learns the configuration from the leader).
    pub fn new(voters: Vec<u64>) -> GroupLog {
        let mem = if voters.is_empty() { MemStorage::new() } else { MemStorage::new_with_conf_state(ConfState::from((voters, vec![]))) };
        GroupLog { mem, snapshot: RefCell::new(None), wanted: Cell::new(false), added_at: RefCell::new(BTreeMap::new()), no_snapshots: Cell::new(false) }
    }

    /// A log of `voter` alone that continues another's numbering after
    /// `index` (`pc.bootstrap`: a new group on the same history). Log
    /// indices never go back within a history, so an index a member heard
    /// about the old group (its removal) cannot be taken for one of the
    /// new group. A joiner gets a snapshot for what lies before.
    pub fn continuing(voter: u64, index: u64, term: u64) -> raft::Result<GroupLog> {
        let log = GroupLog::new(vec![]);
        if index > 0 {
            let mut snap = Snapshot::default();
            let md = snap.mut_metadata();
            md.index = index;
            md.term = term;
            md.set_conf_state(ConfState::from((vec![voter], vec![])));
            // Metadata only: the driver makes the first real snapshot.
            log.mem.wl().apply_snapshot(snap)?;
        } else {
            log.mem.wl().set_conf_state(ConfState::from((vec![voter], vec![])));
        }
        Ok(log)
    }

    /// Whether raft-rs asked for a snapshot since the last one was made.
    pub fn snapshot_wanted(&self) -> bool {
        self.wanted.get()
    }

    pub fn snapshot_index(&self) -> u64 {
        self.snapshot.borrow().as_ref().map_or(0, |s| s.get_metadata().index)
    }

    /// Installs a snapshot built by the driver and drops the log before
    /// `compact_to` (never past the snapshot: a follower resuming after
    /// the snapshot needs the entries that follow it).
    pub fn set_snapshot(&self, snap: Snapshot, compact_to: u64) {
        let index = snap.get_metadata().index;
        *self.snapshot.borrow_mut() = Some(snap);
        self.wanted.set(false);
        let first = self.mem.first_index().unwrap_or(1);
        let to = compact_to.min(index);
        if to > first {
            // Cannot fail for an index at most the applied one.
            let _ = self.mem.wl().compact(to);
        }
    }

    /// The first index to keep behind a snapshot at `applied`: at most
    /// `entries` entries and about `bytes` bytes of them (at least one).
    pub fn keep_from(&self, applied: u64, entries: u64, bytes: u64) -> u64 {
        let first = self.mem.first_index().unwrap_or(1);
        let low = applied.saturating_sub(entries).max(first);
        if low > applied {
            // Nothing applied since the last compaction: MemStorage
            // panics on an empty range of an empty log.
            return low;
        }
        let Ok(kept) = self.mem.entries(low, applied + 1, None, GetEntriesContext::empty(false)) else { return low };
        let mut held = 0u64;
        for e in kept.iter().rev() {
            held += (e.context.len() + e.data.len()) as u64;
            if held > bytes {
                return e.index + 1;
            }
        }
        low
    }

    pub fn append(&self, entries: &[Entry]) -> raft::Result<()> {
        self.mem.wl().append(entries)
    }

    pub fn set_hardstate(&self, hs: HardState) {
        self.mem.wl().set_hardstate(hs);
    }

    /// Never hand raft-rs a snapshot to send (an arbitrator's log).
    pub fn refuse_snapshots(&self) {
        self.no_snapshots.set(true);
    }

    /// Member `id` was added by the entry at `index`.
    pub fn note_added(&self, id: u64, index: u64) {
        self.added_at.borrow_mut().insert(id, index);
    }

    pub fn set_commit(&self, commit: u64) {
        self.mem.wl().mut_hard_state().set_commit(commit);
    }

    pub fn set_conf_state(&self, cs: ConfState) {
        self.mem.wl().set_conf_state(cs);
    }

    /// Replaces the log with a snapshot received from the leader.
    pub fn apply_snapshot(&self, snap: Snapshot) -> raft::Result<()> {
        self.mem.wl().apply_snapshot(snap.clone())?;
        *self.snapshot.borrow_mut() = Some(snap);
        Ok(())
    }
}

impl Storage for GroupLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        self.mem.initial_state()
    }

    fn entries(&self, low: u64, high: u64, max_size: impl Into<Option<u64>>, ctx: GetEntriesContext) -> raft::Result<Vec<Entry>> {
        self.mem.entries(low, high, max_size, ctx)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        if let Some(s) = self.snapshot.borrow().as_ref() {
            if s.get_metadata().index == idx {
                return Ok(s.get_metadata().term);
            }
        }
        self.mem.term(idx)
    }

    fn first_index(&self) -> raft::Result<u64> {
        self.mem.first_index()
    }

    fn last_index(&self) -> raft::Result<u64> {
        self.mem.last_index()
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        if self.no_snapshots.get() {
            return Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable));
        }
        let first = self.mem.first_index()?;
        if let Some(s) = self.snapshot.borrow().as_ref() {
            let md = s.get_metadata();
            let cs = md.get_conf_state();
            // Usable when the log continues right after it, and when it
            // knows the recipient: raft-rs refuses a snapshot whose
            // configuration does not include itself (a joiner added after
            // the snapshot was made).
            let knows = cs.get_voters().contains(&to) || cs.get_learners().contains(&to);
            let after_add = self.added_at.borrow().get(&to).is_none_or(|&at| md.index >= at);
            if md.index + 1 >= first && md.index >= request_index && knows && after_add {
                return Ok(s.clone());
            }
        }
        self.wanted.set(true);
        Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_with_snapshot_at(index: u64) -> GroupLog {
        let log = GroupLog::new(vec![1, 2]);
        let entries: Vec<Entry> = (1..=index + 1)
            .map(|i| Entry { index: i, term: 1, ..Default::default() })
            .collect();
        log.append(&entries).unwrap();
        let mut snap = Snapshot::default();
        snap.mut_metadata().index = index;
        snap.mut_metadata().term = 1;
        snap.mut_metadata().set_conf_state(ConfState::from((vec![1, 2], vec![])));
        log.set_snapshot(snap, index);
        log
    }

    #[test]
    fn a_member_added_again_gets_no_snapshot_from_before_its_new_add() {
        let log = log_with_snapshot_at(10);
        log.note_added(2, 15);
        assert!(log.snapshot(0, 2).is_err(), "a snapshot showing member 2's previous incarnation");
        assert!(log.snapshot_wanted(), "a newer snapshot must be made");
        log.note_added(2, 8);
        assert_eq!(log.snapshot(0, 2).unwrap().get_metadata().index, 10);
    }

    #[test]
    fn a_new_group_continues_the_old_numbering() {
        let log = GroupLog::continuing(7, 21, 3).unwrap();
        assert_eq!(log.first_index().unwrap(), 22);
        assert_eq!(log.last_index().unwrap(), 21);
        let state = log.initial_state().unwrap();
        assert_eq!(state.hard_state.term, 3);
        assert_eq!(state.conf_state.get_voters(), &[7]);
        // No snapshot to serve yet: the driver must make one first.
        assert!(log.snapshot(0, 8).is_err());
        assert!(log.snapshot_wanted());
        let mut raw = raft::RawNode::new(&super::super::config::raft_config(7), log, &super::super::raft_log::logger()).unwrap();
        raw.campaign().unwrap();
        assert_eq!(raw.raft.state, raft::StateRole::Leader);
        assert!(raw.raft.term > 3, "the new group's terms follow the old one's");
        assert_eq!(raw.raft.raft_log.last_index(), 22, "the leader's first entry comes after the old log");
    }
}
