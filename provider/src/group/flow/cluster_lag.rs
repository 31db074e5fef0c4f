//! The cluster's worst apply lag (`wsrep_cluster_apply_lag_ms`): every
//! member sends its own `wsrep_apply_lag_ms` to the others every
//! `REPORT_EVERY`, so that an operator reading any node sees how stale
//! the stalest replica is, and whether `lockstep.max_lag_ms` holds. Like
//! flow control's messages, reports go straight over the transport and
//! may be lost: one not renewed within `STALE_AFTER` no longer counts (a
//! member that left or fell silent). Time is an argument here.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub const REPORT_EVERY: Duration = Duration::from_millis(250);
pub const STALE_AFTER: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
pub struct ClusterLag {
    /// Members (raft ids) with their last report and when it came.
    reports: BTreeMap<u64, (u32, Instant)>,
    last_sent: Option<Instant>,
}

impl ClusterLag {
    pub fn on_report(&mut self, from: u64, lag_ms: u32, now: Instant) {
        self.reports.insert(from, (lag_ms, now));
    }

    /// Whether this member's own report is due; if so, it counts as sent.
    pub fn due(&mut self, now: Instant) -> bool {
        if self.last_sent.is_some_and(|t| now < t + REPORT_EVERY) {
            return false;
        }
        self.last_sent = Some(now);
        true
    }

    /// The largest lag among fresh reports, this member's included.
    pub fn worst(&self, now: Instant) -> u32 {
        self.reports.values().filter(|(_, at)| now.saturating_duration_since(*at) < STALE_AFTER).map(|(ms, _)| *ms).max().unwrap_or(0)
    }

    /// A configuration change: members that left report no more.
    pub fn retain_members(&mut self, members: &[u64]) {
        self.reports.retain(|id, _| members.contains(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_fresh_report_counts() {
        let t0 = Instant::now();
        let mut lag = ClusterLag::default();
        assert_eq!(lag.worst(t0), 0, "nobody reported");
        lag.on_report(1, 5, t0);
        lag.on_report(2, 900, t0);
        lag.on_report(3, 40, t0 + STALE_AFTER / 2);
        assert_eq!(lag.worst(t0), 900);
        assert_eq!(lag.worst(t0 + STALE_AFTER), 40, "1 and 2 went silent");
        lag.on_report(2, 7, t0 + STALE_AFTER);
        assert_eq!(lag.worst(t0 + STALE_AFTER), 40, "a newer, smaller report replaces the old one");
        lag.retain_members(&[1, 2]);
        assert_eq!(lag.worst(t0 + STALE_AFTER), 7, "3 left");
    }

    #[test]
    fn a_member_reports_every_period() {
        let t0 = Instant::now();
        let mut lag = ClusterLag::default();
        assert!(lag.due(t0));
        assert!(!lag.due(t0 + REPORT_EVERY / 2));
        assert!(lag.due(t0 + REPORT_EVERY));
    }
}
