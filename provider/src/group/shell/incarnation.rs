//! One Raft node of this member and what it learned: replaced whole when
//! the member starts a new Raft node (a rejoin after the group removed it,
//! a reform with `pc.bootstrap`).
//!
//! Each of these facts is about the Raft node that learned it: the old
//! node's leader verdict, its unanswered ReadIndex requests, the entries it
//! could not hand to a leader are not true of the next node. They used to
//! be reset field by field, and a rejoin and a reform reset different sets
//! (a rejoin kept the old node's dropped proposals, which would then have
//! been ordered as the new incarnation's). Keeping them in one struct that
//! is replaced whole makes forgetting one impossible.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::Sender;
use std::time::Instant;

use raft::RawNode;

use super::log::GroupLog;
use crate::group::primary::quorum::Quorum;
use crate::group::order::unconfirmed::Unconfirmed;
use crate::group::primary::weights::Gate;
use crate::gtid::{Seqno, Uuid};

/// Fire-and-forget proposals kept while no leader is known. A member
/// makes a handful per state change, so this only bounds a pathology.
pub(in crate::group) const MAX_DROPPED: usize = 1024;

pub(crate) struct Incarnation {
    pub(in crate::group) raw: RawNode<GroupLog>,
    /// Whether this Raft node still has a leader (the primary component).
    pub(in crate::group) quorum: Quorum,
    /// Committed entries waiting for the weighted commit index.
    pub(in crate::group) gate: Gate,
    /// The leader's last verdict on its weight (leader, primary, when).
    pub(in crate::group) leader_says: Option<(u64, bool, Instant)>,
    /// Members of our last primary view whose node has restarted since:
    /// gone for good, whatever partition they seemed to be in; with the
    /// address each new node calls from, and where its log reaches (in
    /// our history).
    pub(in crate::group) restarted: BTreeMap<Uuid, (String, Option<Seqno>)>,
    /// Fire-and-forget proposals Raft dropped (no leader), to retry; at
    /// most MAX_DROPPED.
    pub(in crate::group) dropped: VecDeque<Vec<u8>>,
    /// ReadIndex requests Raft has not answered yet, and answered ones
    /// waiting for the applied index to reach them. Dropped with the
    /// incarnation, their callers hear an error rather than wait for an
    /// answer the new Raft node will never give.
    pub(in crate::group) reads_asked: Vec<(u64, Sender<Seqno>)>,
    /// Reads whose question went to the leader (see `reads`).
    pub(in crate::group) reads_asked_leader: Vec<super::reads::Asked>,
    /// While it leads: each ReadIndex question's context and this
    /// member's last index when it came (see `reads`).
    pub(in crate::group) read_floors: Vec<(Vec<u8>, u64)>,
    pub(in crate::group) reads_ready: Vec<(u64, Sender<Seqno>)>,
    /// This member's Sync transition, held until the member votes (see
    /// `Driver::hold_sync`).
    pub(in crate::group) held_sync: Option<Vec<u8>>,
    /// This member's requests proposed again until seen committed.
    pub(in crate::group) unconfirmed: Unconfirmed,
    /// The highest index of a configuration change stored in this Raft
    /// node's log (see `commit_ahead`).
    pub(in crate::group) conf_stored: u64,
}

impl Incarnation {
    /// The member's first Raft node.
    pub(in crate::group) fn first(raw: RawNode<GroupLog>) -> Incarnation {
        Incarnation::with_gate(raw, Gate::default())
    }

    /// The next Raft node of the member: only what is about the member,
    /// not about the node it had, carries over.
    pub(in crate::group) fn next(&self, raw: RawNode<GroupLog>) -> Incarnation {
        Incarnation::with_gate(raw, self.gate.for_next_log())
    }

    fn with_gate(raw: RawNode<GroupLog>, gate: Gate) -> Incarnation {
        Incarnation {
            raw,
            quorum: Quorum::default(),
            gate,
            leader_says: None,
            restarted: BTreeMap::new(),
            dropped: VecDeque::new(),
            reads_asked: Vec::new(),
            reads_asked_leader: Vec::new(),
            read_floors: Vec::new(),
            reads_ready: Vec::new(),
            held_sync: None,
            unconfirmed: Unconfirmed::default(),
            conf_stored: 0,
        }
    }
}
