//! What a driver starts from: its configuration, the sizes of its log and
//! snapshots, and the Raft settings and nodes every member is built from.

use std::time::Duration;

use raft::RawNode;

use super::log::GroupLog;
use crate::group::membership::recovery::Previous;
use crate::group::primary::liveness::Timeouts;
use crate::group::wire::entry::MemberInfo;
use crate::gtid::{Seqno, Uuid};

/// Snapshot every this many applied entries, keeping this many behind it
/// for followers that lag a little.
#[cfg(not(test))]
const SNAPSHOT_EVERY: u64 = 16384;
#[cfg(not(test))]
const LOG_KEEP: u64 = 4096;
// Small in tests, so that joiners meet compacted logs.
#[cfg(test)]
const SNAPSHOT_EVERY: u64 = 64;
#[cfg(test)]
const LOG_KEEP: u64 = 16;
/// The same in bytes: pieces of big writesets are entries of 1 MiB, and the
/// log lives in memory. Every member's log stays this small while the
/// members keep up: a streamed UPDATE of 200 MB in 1 MB fragments held
/// all of it (RSS +140 MB against Galera's +45) when the first snapshot
/// came at 256 MiB. The gcache, a file, is what serves a member that
/// needs older writesets (IST), as with Galera. Not smaller: a snapshot
/// encodes the certification index (a few MB, milliseconds, under its
/// lock); at 32 MiB that UPDATE took about 3% longer.
const SNAPSHOT_BYTES: u64 = 64 << 20;
const LOG_KEEP_BYTES: u64 = 8 << 20;
/// A leader keeps what a member still lacks, up to this many entries and
/// bytes behind the snapshot: a member that is slow to receive (a far
/// one, a big writeset) goes on with Raft's appends instead of a state
/// transfer, and one gone for good costs a bounded amount of memory
/// until it is removed.
const LOG_HOLD: u64 = 65536;
const LOG_HOLD_BYTES: u64 = 256 << 20;

pub(crate) enum Start {
    Bootstrap { history: Uuid, position: Seqno },
    Join { peers: Vec<String> },
}

pub(crate) struct DriverConfig {
    pub me: MemberInfo,
    pub start: Start,
    pub tick: Duration,
    pub timeouts: Timeouts,
    pub previous: Option<Previous>,
    /// The Raft settings every Raft node of this member starts from
    /// (`raft_config`; a simulation pins the election timeout).
    pub raft: raft::Config,
    pub limits: Limits,
}

/// Sizes a simulation makes small, so that its short runs meet
/// snapshots, compacted logs and writesets in pieces; mariadbd runs with
/// `Limits::default()`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Bytes per piece of a big writeset (`pieces::PIECE_BYTES`).
    pub piece: usize,
    /// Snapshot every this many applied entries or bytes, keeping this
    /// many behind (more on a leader, for members that lack them).
    pub snapshot_every: u64,
    pub snapshot_bytes: u64,
    pub log_keep: Retention,
    pub log_hold: Retention,
}

/// A bound on the entries a log keeps behind its snapshot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retention {
    pub entries: u64,
    pub bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            piece: crate::group::wire::pieces::PIECE_BYTES,
            snapshot_every: SNAPSHOT_EVERY,
            snapshot_bytes: SNAPSHOT_BYTES,
            log_keep: Retention { entries: LOG_KEEP, bytes: LOG_KEEP_BYTES },
            log_hold: Retention { entries: LOG_HOLD, bytes: LOG_HOLD_BYTES },
        }
    }
}

/// Raft's window of appends in flight to one follower for Galera's
/// `evs.send_window` (messages in flight), within
/// [`SEND_WINDOW_FLOOR`]..=[`SEND_WINDOW_CEILING`]. An EVS message
/// carries one fragment of at most 64 KB (`gcs.max_packet_size`); a Raft
/// append carries every entry pending for that follower, up to
/// `max_size_per_msg` (1 MiB). So Galera's default of 4 taken as such
/// would hold a far follower to 4 round trips' worth of batches and add a
/// round trip to commits under load: the window never goes below the
/// floor, and `evs.send_window` above it (Galera's WAN advice is 512)
/// widens it. `evs.user_send_window` has no effect of its own: Raft does
/// not count its heartbeats and votes in the window, so every message in
/// it is a data message.
pub fn send_window(evs_send_window: usize) -> usize {
    evs_send_window.clamp(SEND_WINDOW_FLOOR, SEND_WINDOW_CEILING)
}

/// See [`send_window`]: 256 appends of up to 1 MiB exceed what Galera's
/// 512 messages of 64 KB allow in bytes.
pub const SEND_WINDOW_FLOOR: usize = 256;
/// The leader keeps a slot per append in flight per follower, and up to
/// `max_size_per_msg` in each: 4096 bound that to 4 GiB of resends and a
/// 32 KB ring per follower, whatever the option says.
pub const SEND_WINDOW_CEILING: usize = 4096;

/// The Raft settings of every member (the simulator starts from them).
pub fn raft_config(id: u64) -> raft::Config {
    raft::Config {
        id,
        election_tick: 10,
        heartbeat_tick: 2,
        check_quorum: true,
        pre_vote: true,
        max_inflight_msgs: SEND_WINDOW_FLOOR,
        max_size_per_msg: 1 << 20,
        ..Default::default()
    }
}

/// An arbitrator's Raft settings: it campaigns only after three to four
/// election timeouts without a leader, when no data member could win,
/// while the lease it grants a leader (`election_tick`) stays the usual
/// one. A data member cannot win when the arbitrator's log holds entries
/// it lacks (a leader died right after the arbitrator acknowledged them,
/// which may have committed them): the arbitrator refuses it its vote, as
/// Raft must. The arbitrator then leads only to pass those entries on and
/// hand leadership to that member (`Driver::hand_over`); it keeps no data,
/// so it never sends a snapshot nor takes a joiner meanwhile.
pub fn campaigns_last(config: raft::Config) -> raft::Config {
    let election = config.election_tick;
    raft::Config { min_election_tick: 3 * election, max_election_tick: 4 * election, ..config }
}

/// Makes `raw` an arbitrator's when `arbitrator` (see `campaigns_last`).
pub(super) fn arbitrator_log(raw: RawNode<GroupLog>, arbitrator: bool) -> RawNode<GroupLog> {
    if arbitrator {
        raw.store().refuse_snapshots();
    }
    raw
}

pub fn raft_node_with(config: &raft::Config, voters: Vec<u64>) -> raft::Result<RawNode<GroupLog>> {
    config.validate()?;
    RawNode::new(config, GroupLog::new(voters), &super::raft_log::logger())
}

/// A Raft node of this member alone whose log numbers on after `index`
/// (a component formed again: see `GroupLog::continuing`).
pub fn raft_node_continuing(config: &raft::Config, index: u64, term: u64) -> raft::Result<RawNode<GroupLog>> {
    config.validate()?;
    RawNode::new(config, GroupLog::continuing(config.id, index, term)?, &super::raft_log::logger())
}

/// A snapshot's data: the group state, then the node layer's part.
pub fn join_snapshot(group: &[u8], node: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + group.len() + node.len());
    out.extend_from_slice(&(group.len() as u32).to_le_bytes());
    out.extend_from_slice(group);
    out.extend_from_slice(node);
    out
}

pub fn split_snapshot(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
    let group = data.get(4..4 + len)?;
    Some((group, &data[4 + len..]))
}
