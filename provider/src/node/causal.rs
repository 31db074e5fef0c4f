//! Causal reads: `sync_wait` and `last_committed_id` (contract §8).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::state::NodeState;
use super::types::Status;
use super::Shared;
use crate::gtid::Gtid;

impl Shared {
    /// Waits until this node has committed everything ordered before the
    /// call (`upto` None: a Raft ReadIndex gives that seqno) or up to
    /// `upto`. `tout` is in seconds; -1 means `repl.causal_read_timeout`.
    pub fn sync_wait(&self, upto: Option<Gtid>, tout: i32, out: Option<&mut Gtid>) -> Status {
        if matches!(self.node_state(), NodeState::Closed | NodeState::Connected) {
            // Not in a primary component: nothing ordered can be read
            // here now. Galera's caused() fails at once when non-primary
            // (a waiting read would answer from a position the group may
            // have left behind, or lapse into the node's rejoin).
            return Status::TrxFail;
        }
        if self.node_state() == NodeState::Joining && !self.holds_group_history() {
            // No state of this history to read yet. Waiting would last
            // until a full transfer ends or the timeout, and the reader
            // may be the transfer itself (mysqldump's script queries the
            // joiner with the server's wsrep_sync_wait): fail at once, as
            // Galera's joiner does (its apply monitor is of another
            // history). A member catching up by IST waits, as in Galera.
            return Status::TrxMissing;
        }
        let deadline = self.causal_deadline(tout);
        let target = match upto {
            Some(g) if !g.uuid.is_nil() && g.uuid != self.history() => return Status::TrxMissing,
            Some(g) => g.seqno,
            None => match self.group().and_then(|g| g.read_index(deadline.unwrap_or_else(far_future))) {
                Some(seqno) => seqno,
                None => return Status::TrxFail,
            },
        };
        if !self.apply.wait_left(target, deadline) {
            return Status::TrxFail;
        }
        self.counters.causal_reads.fetch_add(1, Ordering::Relaxed);
        if let Some(out) = out {
            *out = self.last_committed();
        }
        Status::Ok
    }

    /// Whether the data this joiner started from is of the group's
    /// history: a member rejoining after an eviction or a restart that
    /// IST can bring up to date, not a fresh or inconsistent node.
    fn holds_group_history(&self) -> bool {
        let from = self.joined_from.lock().unwrap_or_else(|e| e.into_inner()).uuid;
        !from.is_nil() && from == self.history()
    }

    fn causal_deadline(&self, tout: i32) -> Option<Instant> {
        let wait = if tout < 0 { self.setting(|s| s.causal_read_timeout) } else { Duration::from_secs(tout as u64) };
        Instant::now().checked_add(wait)
    }

    pub fn last_committed_id(&self) -> Gtid {
        self.last_committed()
    }
}

/// A deadline for "no deadline" where an Instant is required.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(365 * 24 * 3600)
}
