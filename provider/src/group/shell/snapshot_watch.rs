//! A snapshot raft-rs sent whose answer never came.
//!
//! While a member's progress is in the Snapshot state, raft-rs sends it
//! nothing else and waits for the application to report how the send went.
//! Our transport cannot tell: a snapshot sent into a link that breaks (a
//! partition, a member stopped) is lost without a word, and so is the
//! member's answer to a snapshot it did restore. Either way the member
//! stays behind, and that is worse than slow: meanwhile the leader may
//! commit entries with an arbitrator's vote, and if the leader then fails,
//! no data node holds them (simulator seed 4212).
//! Two ways out, both decided here on the leader's tick:
//! - the member's heartbeat answers carry its commit index; once that has
//!   reached the snapshot (and moved since the snapshot went out), the
//!   snapshot arrived: it is reported finished and appends resume at once;
//! - a snapshot with no such sign within `LOST_AFTER` is reported failed:
//!   raft-rs probes the member again and sends a fresh one if needed.
//! Time is an argument, so the simulator drives this too.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use raft::{ProgressState, RawNode};

use super::log::GroupLog;

/// Longer than a snapshot takes to cross a healthy link (the group state
/// and certification index, megabytes at most); a slow one that still
/// arrives after this only costs a second send.
pub const LOST_AFTER: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub struct SnapshotWatch {
    /// Member (raft id) -> the snapshot in flight.
    pending: BTreeMap<u64, InFlight>,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    index: u64,
    since: Instant,
    /// The member's commit index as the leader knew it when the snapshot
    /// was first seen in flight. Only a commit index past this one is news
    /// from the member (raft-rs never lowers what it knows).
    committed_before: u64,
}

/// The members `check` reported to raft-rs, for the log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// Their commit index shows the snapshot: reported finished.
    pub arrived: Vec<u64>,
    /// No sign within `LOST_AFTER`: reported failed.
    pub lost: Vec<u64>,
}

impl SnapshotWatch {
    /// On the leader, every tick: reports each snapshot in flight that has
    /// arrived or is overdue to raft-rs.
    pub fn check(&mut self, raw: &mut RawNode<GroupLog>, now: Instant) -> Reported {
        let in_flight: BTreeMap<u64, (u64, u64)> = raw
            .raft
            .prs()
            .iter()
            .filter(|(_, pr)| pr.state == ProgressState::Snapshot)
            .map(|(id, pr)| (*id, (pr.pending_snapshot, pr.committed_index)))
            .collect();
        self.pending.retain(|id, sent| in_flight.get(id).map(|(index, _)| *index) == Some(sent.index));
        let mut reported = Reported::default();
        for (id, (index, committed)) in in_flight {
            let sent = *self.pending.entry(id).or_insert(InFlight { index, since: now, committed_before: committed });
            if committed >= index && committed > sent.committed_before {
                reported.arrived.push(id);
            } else if now.saturating_duration_since(sent.since) >= LOST_AFTER {
                reported.lost.push(id);
            }
        }
        for id in &reported.arrived {
            self.pending.remove(id);
            raw.report_snapshot(*id, raft::SnapshotStatus::Finish);
        }
        for id in &reported.lost {
            self.pending.remove(id);
            raw.report_snapshot(*id, raft::SnapshotStatus::Failure);
        }
        reported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leader_with_snapshot_in_flight() -> RawNode<GroupLog> {
        let mut raw = super::super::config::raft_node_with(&super::super::config::raft_config(1), vec![1, 2]).unwrap();
        raw.raft.become_candidate();
        raw.raft.become_leader();
        raw.raft.mut_prs().get_mut(2).unwrap().become_snapshot(10);
        raw
    }

    fn lost(ids: &[u64]) -> Reported {
        Reported { arrived: vec![], lost: ids.to_vec() }
    }

    #[test]
    fn a_snapshot_unanswered_past_the_limit_is_reported_lost() {
        let (mut raw, mut watch, t0) = (leader_with_snapshot_in_flight(), SnapshotWatch::default(), Instant::now());
        assert_eq!(watch.check(&mut raw, t0), Reported::default());
        assert_eq!(watch.check(&mut raw, t0 + LOST_AFTER / 2), Reported::default());
        assert_eq!(watch.check(&mut raw, t0 + LOST_AFTER), lost(&[2]));
        assert_eq!(raw.raft.prs().get(2).unwrap().state, ProgressState::Probe, "raft-rs probes the member again");
    }

    #[test]
    fn a_new_snapshot_restarts_the_clock() {
        let (mut raw, mut watch, t0) = (leader_with_snapshot_in_flight(), SnapshotWatch::default(), Instant::now());
        watch.check(&mut raw, t0);
        raw.raft.mut_prs().get_mut(2).unwrap().become_snapshot(20);
        assert_eq!(watch.check(&mut raw, t0 + LOST_AFTER), Reported::default(), "index 20 was first seen now");
        assert_eq!(watch.check(&mut raw, t0 + LOST_AFTER * 2), lost(&[2]));
    }

    #[test]
    fn a_commit_index_that_reaches_the_snapshot_resumes_appends_after_it() {
        let (mut raw, mut watch, t0) = (leader_with_snapshot_in_flight(), SnapshotWatch::default(), Instant::now());
        raw.raft.mut_prs().get_mut(2).unwrap().update_committed(4);
        assert_eq!(watch.check(&mut raw, t0), Reported::default(), "a commit index short of the snapshot says nothing");
        raw.raft.mut_prs().get_mut(2).unwrap().update_committed(10);
        assert_eq!(watch.check(&mut raw, t0 + LOST_AFTER / 10), Reported { arrived: vec![2], lost: vec![] });
        let pr = raw.raft.prs().get(2).unwrap();
        assert_eq!((pr.state, pr.next_idx), (ProgressState::Probe, 11), "the next append follows the snapshot");
    }

    #[test]
    fn a_commit_index_known_before_the_snapshot_is_no_sign_of_it() {
        // A member the leader once knew further along (a stale reading):
        // only a commit index that moves after the send counts.
        let (mut raw, mut watch, t0) = (leader_with_snapshot_in_flight(), SnapshotWatch::default(), Instant::now());
        raw.raft.mut_prs().get_mut(2).unwrap().update_committed(12);
        assert_eq!(watch.check(&mut raw, t0), Reported::default());
        assert_eq!(watch.check(&mut raw, t0 + LOST_AFTER), lost(&[2]));
    }
}
