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
//! A member cut off from the leader alone still hears a majority when
//! the links fail unevenly (Jepsen's majorities ring: of five nodes, two
//! cannot hear the leader, yet each hears three), and the leader goes on
//! committing with the others: ten reads a second stale in 22 such
//! faults of list-append. So every follower that hears its leader says
//! so with its lag report (`LeaderWord`), and a member that has heard
//! nothing from a leader for the window while another member heard it
//! just now is cut off from it: it leaves the primary component as above.
//! A dead leader is heard by nobody, so it cuts nobody off; a word of an
//! older term than this member's does not count (a deposed leader some
//! member still follows).
//!
//! Time is an argument, so the simulator drives this.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::group::state::{GroupState, Member};
use super::weights::{self, Standing};
pub use crate::group::wire::notices::LeaderWord;

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

/// How lately another member must have heard the leader, counted from
/// now (its silence when it spoke, plus the word's time here), for this
/// member's silence of a `window` to mean a cut link and not a dead
/// leader: two thirds of the window, a heartbeat (two ticks) and a lag
/// report's period (250 ms) with a margin for a loaded machine.
pub fn heard_elsewhere_within(window: Duration) -> Duration {
    window * 2 / 3
}

/// The latest word from each member; bounded by the group's size
/// (`retain_members` at every configuration change).
#[derive(Debug, Default)]
pub struct LeaderWords {
    words: BTreeMap<u64, (LeaderWord, Instant)>,
}

impl LeaderWords {
    pub fn on_word(&mut self, from: u64, word: LeaderWord, now: Instant) {
        self.words.insert(from, (word, now));
    }

    pub fn retain_members(&mut self, members: &[u64]) {
        self.words.retain(|id, _| members.contains(id));
    }

    /// A leader of term `term` or later that some member (the first of
    /// the pair) heard within `heard_elsewhere_within(window)` and that
    /// this member has not heard from (`silent`) for the window.
    pub fn heard_elsewhere(&self, now: Instant, term: u64, window: Duration, silent: impl Fn(u64) -> bool) -> Option<(u64, u64)> {
        let lately = heard_elsewhere_within(window);
        let heard_lately = |w: &LeaderWord, at: &Instant| now.saturating_duration_since(*at) + Duration::from_millis(w.silent_ms as u64) <= lately;
        self.words.iter().find(|(_, (w, at))| w.term >= term && heard_lately(w, at) && silent(w.leader)).map(|(from, (w, _))| (*from, w.leader))
    }
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
        assert!(CUT_OFF >= 3 * crate::group::flow::cluster_lag::REPORT_EVERY);
    }

    #[test]
    fn a_leader_another_member_hears_now_cuts_off_one_that_does_not() {
        let t0 = Instant::now();
        let window = CUT_OFF;
        let mut words = LeaderWords::default();
        let word = LeaderWord { leader: 1, term: 4, silent_ms: 80 };
        words.on_word(2, word, t0);
        let silent_from_1 = |id| id == 1;
        assert_eq!(words.heard_elsewhere(t0, 4, window, silent_from_1), Some((2, 1)));
        assert_eq!(words.heard_elsewhere(t0, 4, window, |_| false), None, "this member hears the leader too");
        assert_eq!(words.heard_elsewhere(t0, 5, window, silent_from_1), None, "a leader of an older term");
        let later = t0 + heard_elsewhere_within(window);
        assert_eq!(words.heard_elsewhere(later, 4, window, silent_from_1), None, "nobody has heard the leader lately: dead, not cut off");
        words.retain_members(&[1, 3]);
        assert_eq!(words.heard_elsewhere(t0, 4, window, silent_from_1), None, "the member that heard it left");
    }

    #[test]
    fn a_word_is_fresh_for_a_heartbeat_and_a_report_period() {
        let heartbeat = Duration::from_millis(100);
        assert!(heard_elsewhere_within(CUT_OFF) >= heartbeat + crate::group::flow::cluster_lag::REPORT_EVERY + Duration::from_millis(100));
        assert!(heard_elsewhere_within(CUT_OFF) < CUT_OFF);
    }
}
