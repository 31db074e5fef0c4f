//! Failure detection (Galera's `evs.suspect_timeout` and
//! `evs.inactive_timeout`): which members have gone silent long enough to
//! be removed from the group.
//!
//! In Galera every member watches every other and a member is evicted once
//! all agree they suspect it (or one has not heard from it for the inactive
//! timeout). Under Raft the leader is the only member that hears from all
//! the others (every follower answers its heartbeats), so the leader's
//! suspicion stands for the group's: it proposes the removal, and the
//! removal commits like any entry, with a majority. A dead leader is
//! replaced by an election first, and the new leader then times the old
//! one out from the moment it took over.
//!
//! Time is an argument, so the simulator can drive this.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Galera's defaults.
pub const SUSPECT_TIMEOUT: Duration = Duration::from_secs(5);
pub const INACTIVE_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub suspect: Duration,
    pub inactive: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts { suspect: SUSPECT_TIMEOUT, inactive: INACTIVE_TIMEOUT }
    }
}

impl Timeouts {
    /// Silence after which the leader removes a member: suspicion is
    /// already the group's verdict (see the module comment), and the
    /// inactive timeout is the bound Galera never exceeds.
    pub fn evict_after(&self) -> Duration {
        self.suspect.min(self.inactive)
    }
}

#[derive(Debug, Default)]
pub struct Liveness {
    /// When each member (raft id) was last heard from: only what it sent.
    /// The verdicts on who stands on this node's side read it, so nothing
    /// else may write it (a new leader that counted every member heard at
    /// its election stayed primary by weight for a second after each one,
    /// on a light side that re-elected every few seconds: simulator, seed
    /// 16320).
    heard: BTreeMap<u64, Instant>,
    /// When the eviction clock of each member started: its first sight
    /// here (heard or listed), or this node's last election as leader, if
    /// later.
    clocked_from: BTreeMap<u64, Instant>,
    /// When each member of the group (raft id) was first listed here (see
    /// `spoke_lately`): one added a moment ago has not had the time to be
    /// heard.
    listed: BTreeMap<u64, Instant>,
    pub timeouts: Timeouts,
}

impl Liveness {
    pub fn new(timeouts: Timeouts) -> Liveness {
        Liveness { heard: BTreeMap::new(), clocked_from: BTreeMap::new(), listed: BTreeMap::new(), timeouts }
    }

    pub fn heard(&mut self, id: u64, now: Instant) {
        self.heard.insert(id, now);
        self.clocked_from.entry(id).or_insert(now);
    }

    /// A new leader knows nothing of how long a member has been silent: it
    /// starts every eviction clock now, so a member is never removed
    /// before it had a whole timeout to answer this leader.
    pub fn restart(&mut self, now: Instant) {
        for at in self.clocked_from.values_mut() {
            *at = now;
        }
    }

    /// The member among `members` silent the longest, if that is past the
    /// eviction timeout, with how long. Members first seen here start
    /// their clock now; members no longer listed are forgotten.
    pub fn overdue(&mut self, members: &[u64], now: Instant) -> Option<(u64, Duration)> {
        self.retain_members(members);
        for id in members {
            self.clocked_from.entry(*id).or_insert(now);
        }
        let limit = self.timeouts.evict_after();
        let silent_since = |id: &u64, from: &Instant| self.heard.get(id).map_or(*from, |at| (*at).max(*from));
        self.clocked_from
            .iter()
            .map(|(id, from)| (*id, now.saturating_duration_since(silent_since(id, from))))
            .filter(|(_, silent)| *silent >= limit)
            .max_by_key(|(id, silent)| (*silent, std::cmp::Reverse(*id)))
    }

    /// Forgets the members not in `members`, as soon as the group removes
    /// them: one that joins again (same raft id) then starts a new clock.
    /// Left to `overdue`, a member removed and added back before the
    /// leader looked again kept its old silence and was removed again at
    /// once (a ring partition: the leader removed node 3 after 5.0 s, and
    /// 0.1 s after it rejoined through node 2 removed it for "5.1 s").
    pub fn retain_members(&mut self, members: &[u64]) {
        self.heard.retain(|id, _| members.contains(id));
        self.clocked_from.retain(|id, _| members.contains(id));
    }

    /// Notes the group's members now (raft ids), for `spoke_lately`.
    pub fn list(&mut self, members: &[u64], now: Instant) {
        self.listed.retain(|id, _| members.contains(id));
        for id in members {
            self.listed.entry(*id).or_insert(now);
        }
    }

    /// Whether member `id` was heard within `window`, or listed here (see
    /// `list`) so lately that it had no `window` to be heard in.
    pub fn spoke_lately(&self, id: u64, now: Instant, window: Duration) -> bool {
        let new = self.listed.get(&id).is_none_or(|at| now.saturating_duration_since(*at) < window);
        new || self.heard_within(id, now, window)
    }

    pub fn heard_within(&self, id: u64, now: Instant, window: Duration) -> bool {
        self.heard.get(&id).is_some_and(|at| now.saturating_duration_since(*at) < window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn liveness() -> Liveness {
        Liveness::new(Timeouts { suspect: ms(5000), inactive: ms(15000) })
    }

    #[test]
    fn a_member_listed_lately_counts_as_heard_until_it_had_the_time_to_speak() {
        let (mut l, t0) = (liveness(), Instant::now());
        l.list(&[2, 3], t0);
        assert!(l.spoke_lately(2, t0 + ms(700), ms(750)));
        l.heard(3, t0 + ms(500));
        assert!(!l.spoke_lately(2, t0 + ms(750), ms(750)), "listed 750 ms ago, never heard");
        assert!(l.spoke_lately(3, t0 + ms(1200), ms(750)));
        assert!(!l.spoke_lately(3, t0 + ms(1250), ms(750)));
        l.list(&[3], t0 + ms(2000));
        l.list(&[2, 3], t0 + ms(2100));
        assert!(l.spoke_lately(2, t0 + ms(2500), ms(750)), "listed again: a new clock");
    }

    #[test]
    fn a_member_that_keeps_answering_is_never_overdue() {
        let (mut l, t0) = (liveness(), Instant::now());
        for step in 0..100 {
            let now = t0 + ms(step * 1000);
            l.heard(2, now);
            assert_eq!(l.overdue(&[2], now), None);
        }
    }

    #[test]
    fn a_silent_member_is_overdue_after_the_suspect_timeout() {
        let (mut l, t0) = (liveness(), Instant::now());
        l.heard(2, t0);
        l.heard(3, t0);
        l.heard(3, t0 + ms(4000));
        assert_eq!(l.overdue(&[2, 3], t0 + ms(4999)), None);
        assert_eq!(l.overdue(&[2, 3], t0 + ms(5000)), Some((2, ms(5000))));
        // The longest silence first.
        assert_eq!(l.overdue(&[2, 3], t0 + ms(9500)), Some((2, ms(9500))));
    }

    #[test]
    fn the_inactive_timeout_bounds_a_longer_suspect_timeout() {
        let (mut l, t0) = (liveness(), Instant::now());
        l.timeouts = Timeouts { suspect: ms(60_000), inactive: ms(15_000) };
        l.heard(2, t0);
        assert_eq!(l.overdue(&[2], t0 + ms(14_999)), None);
        assert!(l.overdue(&[2], t0 + ms(15_000)).is_some());
    }

    #[test]
    fn a_member_removed_and_added_again_has_a_whole_timeout() {
        let (mut l, t0) = (liveness(), Instant::now());
        l.heard(3, t0);
        assert_eq!(l.overdue(&[3], t0 + ms(4900)), None);
        l.retain_members(&[]);
        // Back 100 ms later, and silent since (the link is still down).
        assert_eq!(l.overdue(&[3], t0 + ms(5000)), None);
        assert_eq!(l.overdue(&[3], t0 + ms(9999)), None);
        assert_eq!(l.overdue(&[3], t0 + ms(10_000)), Some((3, ms(5000))));
    }

    #[test]
    fn a_new_leader_gives_every_member_a_whole_timeout() {
        let (mut l, t0) = (liveness(), Instant::now());
        l.heard(2, t0);
        l.restart(t0 + ms(10_000));
        assert_eq!(l.overdue(&[2], t0 + ms(14_000)), None);
        assert!(l.overdue(&[2], t0 + ms(15_000)).is_some());
    }

    #[test]
    fn a_new_leader_does_not_hear_a_member_it_restarted_the_clock_of() {
        let (mut l, t0) = (liveness(), Instant::now());
        l.heard(2, t0);
        assert_eq!(l.overdue(&[2], t0), None);
        l.restart(t0 + ms(10_000));
        assert!(!l.heard_within(2, t0 + ms(10_000), ms(1000)), "the weighted verdict must not count it");
    }

    #[test]
    fn members_are_clocked_from_first_sight_and_forgotten_when_gone() {
        let (mut l, t0) = (liveness(), Instant::now());
        assert_eq!(l.overdue(&[4], t0), None);
        assert_eq!(l.overdue(&[4], t0 + ms(4000)), None);
        assert!(l.overdue(&[4], t0 + ms(5000)).is_some());
        assert_eq!(l.overdue(&[], t0 + ms(6000)), None);
        assert_eq!(l.overdue(&[4], t0 + ms(7000)), None, "a member seen again starts afresh");
    }

    #[test]
    fn heard_within_means_strictly_inside_the_window() {
        let (mut l, t0) = (liveness(), Instant::now());
        assert!(!l.heard_within(2, t0, ms(5000)));
        l.heard(2, t0);
        assert!(l.heard_within(2, t0 + ms(4999), ms(5000)));
        assert!(!l.heard_within(2, t0 + ms(5000), ms(5000)));
    }
}
