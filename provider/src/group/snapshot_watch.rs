//! A snapshot raft-rs sent that never arrived.
//!
//! While a member's progress is in the Snapshot state, raft-rs sends it
//! nothing else and waits for the application to report how the send went.
//! Our transport cannot tell: a snapshot sent into a link that breaks (a
//! partition, a member stopped) is lost without a word, and the member
//! stays behind until the next leader change. So a snapshot not answered
//! within `LOST_AFTER` is reported failed: raft-rs probes the member again
//! and sends a fresh snapshot if it still needs one. Time is an argument,
//! so the simulator drives this too.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use raft::{ProgressState, RawNode};

use super::GroupLog;

/// Longer than a snapshot takes to cross a healthy link (the group state
/// and certification index, megabytes at most); a slow one that still
/// arrives after this only costs a second send.
pub const LOST_AFTER: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub struct SnapshotWatch {
    /// Member (raft id) -> the snapshot index in flight, since when.
    pending: BTreeMap<u64, (u64, Instant)>,
}

impl SnapshotWatch {
    /// On the leader, every tick: the members whose snapshot is overdue
    /// (reported failed to raft-rs here).
    pub fn check(&mut self, raw: &mut RawNode<GroupLog>, now: Instant) -> Vec<u64> {
        let in_flight: BTreeMap<u64, u64> = raw
            .raft
            .prs()
            .iter()
            .filter(|(_, pr)| pr.state == ProgressState::Snapshot)
            .map(|(id, pr)| (*id, pr.pending_snapshot))
            .collect();
        self.pending.retain(|id, (index, _)| in_flight.get(id) == Some(index));
        let mut lost = Vec::new();
        for (id, index) in in_flight {
            let (_, since) = *self.pending.entry(id).or_insert((index, now));
            if now.saturating_duration_since(since) >= LOST_AFTER {
                lost.push(id);
            }
        }
        for id in &lost {
            self.pending.remove(id);
            raw.report_snapshot(*id, raft::SnapshotStatus::Failure);
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leader_with_snapshot_in_flight() -> RawNode<GroupLog> {
        let mut raw = super::super::raft_node_with(&super::super::raft_config(1), vec![1, 2]).unwrap();
        raw.raft.become_candidate();
        raw.raft.become_leader();
        raw.raft.mut_prs().get_mut(2).unwrap().become_snapshot(10);
        raw
    }

    #[test]
    fn a_snapshot_unanswered_past_the_limit_is_reported_lost() {
        let (mut raw, mut watch, t0) = (leader_with_snapshot_in_flight(), SnapshotWatch::default(), Instant::now());
        assert!(watch.check(&mut raw, t0).is_empty());
        assert!(watch.check(&mut raw, t0 + LOST_AFTER / 2).is_empty());
        assert_eq!(watch.check(&mut raw, t0 + LOST_AFTER), vec![2]);
        assert_eq!(raw.raft.prs().get(2).unwrap().state, ProgressState::Probe, "raft-rs probes the member again");
    }

    #[test]
    fn a_new_snapshot_restarts_the_clock() {
        let (mut raw, mut watch, t0) = (leader_with_snapshot_in_flight(), SnapshotWatch::default(), Instant::now());
        watch.check(&mut raw, t0);
        raw.raft.mut_prs().get_mut(2).unwrap().become_snapshot(20);
        assert!(watch.check(&mut raw, t0 + LOST_AFTER).is_empty(), "index 20 was first seen now");
        assert_eq!(watch.check(&mut raw, t0 + LOST_AFTER * 2), vec![2]);
    }
}
