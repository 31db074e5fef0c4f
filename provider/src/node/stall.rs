//! Hung appliers: a member whose appliers commit nothing while writesets
//! wait (a stuck disk), though nothing paused them on purpose, must not
//! hold every writer of the cluster by flow control for as long as the
//! hang lasts. Galera does hold them (only PXC's `gcs.fc_auto_evict_*`
//! helps). Here, after `evs.suspect_timeout` without a commit such a
//! member stops counting for flow control; after `evs.inactive_timeout`
//! it leaves the cluster. What counts as "on purpose" is the caller's
//! business (an operator's pause, a desync, a DDL or a big writeset
//! applying): the watch only keeps the time, which is an argument so that
//! the thresholds are tested without sleeping.

use std::time::{Duration, Instant};

use crate::gtid::Seqno;

/// What the appliers did, sampled on every group tick.
#[derive(Clone, Copy, Debug)]
pub(super) struct Progress {
    /// The last seqno committed here.
    pub committed: Seqno,
    /// Some writeset is ordered but not committed here.
    pub waiting: bool,
    /// Something expected holds the appliers (see the module doc).
    pub excused: bool,
}

/// A change of the watch's verdict; each is reported once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// No commit for `suspect`: stop counting for flow control.
    Stalled(Duration),
    /// Committing again (or excused): count again.
    Recovered,
    /// No commit for `inactive`: leave the cluster.
    Leave(Duration),
}

#[derive(Debug, Default)]
pub(super) struct StallWatch {
    /// The committed seqno and since when it has not moved while work
    /// waited; None while nothing is owed.
    since: Option<(Seqno, Instant)>,
    stalled: bool,
    left: bool,
}

impl StallWatch {
    #[cfg(test)]
    pub fn stalled(&self) -> bool {
        self.stalled
    }

    pub fn observe(&mut self, p: Progress, now: Instant, suspect: Duration, inactive: Duration) -> Option<Change> {
        let owed = p.waiting && !p.excused;
        match self.since {
            Some((committed, since)) if owed && committed == p.committed => self.check(now.saturating_duration_since(since), suspect, inactive),
            _ => {
                self.since = owed.then_some((p.committed, now));
                self.left = false;
                std::mem::take(&mut self.stalled).then_some(Change::Recovered)
            }
        }
    }

    fn check(&mut self, idle: Duration, suspect: Duration, inactive: Duration) -> Option<Change> {
        if !self.left && idle >= inactive {
            self.left = true;
            self.stalled = true;
            return Some(Change::Leave(idle));
        }
        if !self.stalled && idle >= suspect {
            self.stalled = true;
            return Some(Change::Stalled(idle));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUSPECT: Duration = Duration::from_secs(5);
    const INACTIVE: Duration = Duration::from_secs(15);

    fn owed(committed: Seqno) -> Progress {
        Progress { committed, waiting: true, excused: false }
    }

    #[test]
    fn no_commit_while_work_waits_stalls_at_suspect_then_leaves_at_inactive() {
        let t0 = Instant::now();
        let mut w = StallWatch::default();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(w.observe(owed(7), at(0), SUSPECT, INACTIVE), None);
        assert_eq!(w.observe(owed(7), at(4), SUSPECT, INACTIVE), None);
        assert_eq!(w.observe(owed(7), at(5), SUSPECT, INACTIVE), Some(Change::Stalled(SUSPECT)));
        assert!(w.stalled());
        assert_eq!(w.observe(owed(7), at(10), SUSPECT, INACTIVE), None, "reported once");
        assert_eq!(w.observe(owed(7), at(15), SUSPECT, INACTIVE), Some(Change::Leave(INACTIVE)));
        assert_eq!(w.observe(owed(7), at(30), SUSPECT, INACTIVE), None, "leaves once");
    }

    #[test]
    fn a_commit_restarts_the_clock_and_recovers_a_stalled_member() {
        let t0 = Instant::now();
        let mut w = StallWatch::default();
        let at = |s: u64| t0 + Duration::from_secs(s);
        w.observe(owed(7), at(0), SUSPECT, INACTIVE);
        assert_eq!(w.observe(owed(8), at(4), SUSPECT, INACTIVE), None);
        assert_eq!(w.observe(owed(8), at(8), SUSPECT, INACTIVE), None, "4 s since the commit of 8");
        assert_eq!(w.observe(owed(8), at(9), SUSPECT, INACTIVE), Some(Change::Stalled(SUSPECT)));
        assert_eq!(w.observe(owed(9), at(10), SUSPECT, INACTIVE), Some(Change::Recovered));
        assert!(!w.stalled());
    }

    #[test]
    fn idle_or_excused_appliers_never_stall() {
        let t0 = Instant::now();
        let mut w = StallWatch::default();
        let idle = Progress { committed: 7, waiting: false, excused: false };
        let paused = Progress { committed: 7, waiting: true, excused: true };
        for s in 0..60 {
            let p = if s % 2 == 0 { idle } else { paused };
            assert_eq!(w.observe(p, t0 + Duration::from_secs(s), SUSPECT, INACTIVE), None);
        }
        // An excuse that ends starts the clock then, not before.
        assert_eq!(w.observe(owed(7), t0 + Duration::from_secs(60), SUSPECT, INACTIVE), None);
        assert_eq!(w.observe(owed(7), t0 + Duration::from_secs(64), SUSPECT, INACTIVE), None);
    }

    #[test]
    fn an_operator_pause_of_a_stalled_member_makes_it_count_again() {
        let t0 = Instant::now();
        let mut w = StallWatch::default();
        w.observe(owed(7), t0, SUSPECT, INACTIVE);
        w.observe(owed(7), t0 + SUSPECT, SUSPECT, INACTIVE);
        let paused = Progress { committed: 7, waiting: true, excused: true };
        assert_eq!(w.observe(paused, t0 + SUSPECT * 2, SUSPECT, INACTIVE), Some(Change::Recovered));
    }
}
