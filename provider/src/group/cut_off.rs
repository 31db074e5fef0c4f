//! A member cut off from the rest by the network serves reads from where
//! it is while the majority goes on committing without it. Galera's
//! majority commits nothing until it has evicted the member (every member
//! takes part in its total order), so its cut-off node has nothing to
//! miss; a Raft majority commits at once, and the cut-off member's reads
//! with `wsrep_sync_wait=0` grew up to the grace before non-primary stale
//! (`quorum::Quorum::grace`, just under `evs.suspect_timeout`): three such
//! reads, 1 to 3 s stale, in 600 s of list-append under partitions.
//!
//! A member hears every other member several times a second while the
//! network carries their messages: the leader's heartbeats (every two
//! ticks), the followers' answers to them, and every member's apply-lag
//! report (`cluster_lag::REPORT_EVERY`, 250 ms). One that has heard from no
//! weighted majority for `CUT_OFF` (itself counted) is cut off, or the
//! others are down: either way no component it belongs to can commit, and
//! any component that does commits without it. It leaves the primary
//! component at once, as the standstill rule does, and asks for a primary
//! view again once a leader speaks (`quorum`); that view comes in log
//! order after everything committed meanwhile.
//!
//! A dead leader alone does not cut anyone off: the followers still hear
//! each other's lag reports, and wait out the election as before.
//!
//! Time is an argument, so the simulator drives this.

use std::time::Duration;

use super::state::{GroupState, Member};
use super::weights::{self, Standing};

/// Three lag reports, or seven heartbeats, missed in a row. Reads on a
/// member cut off stay less stale than this plus a tick (under the
/// standstill bound's second, which the list-append check's stale-read
/// rule counts from), and a member that is merely slow to be heard (a
/// loaded machine) gets a margin over the lag reports' period.
pub const CUT_OFF: Duration = Duration::from_millis(750);

/// The silence that cuts a member off with this tick: `CUT_OFF`, or four
/// ticks for a test's slower tick (heartbeats and reports follow ticks).
pub fn window(tick: Duration) -> Duration {
    CUT_OFF.max(tick * 4)
}

/// Whether the members `heard` lately (this member among them) weigh less
/// than half of the last primary view. An even split is no cut: neither
/// half commits without the other.
pub fn hears_a_minority(state: &GroupState, heard: impl Fn(&Member) -> bool) -> bool {
    weights::side_standing(state, heard) == Standing::Minority
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_tick_widens_the_window() {
        assert_eq!(window(Duration::from_millis(50)), CUT_OFF);
        assert_eq!(window(Duration::from_secs(1)), Duration::from_secs(4));
    }

    #[test]
    fn the_window_leaves_reads_less_than_a_second_stale() {
        // The last word before a cut is at most a heartbeat (two ticks of
        // 50 ms) old; the verdict comes at the first tick past the window.
        let worst = window(Duration::from_millis(50)) + Duration::from_millis(50);
        assert!(worst < super::super::standstill::STOOD_STILL, "{:?}", worst);
        assert!(CUT_OFF >= 3 * super::super::cluster_lag::REPORT_EVERY);
    }
}
