//! `wsrep_apply_lag_ms` and `lockstep.max_lag_ms`: how long the oldest
//! writeset ordered but not yet committed on this node has waited.
//!
//! Galera bounds a replica's backlog by its length (`gcs.fc_limit`),
//! which says nothing of how stale the replica is: the same 16 writesets
//! are 2 ms on a fast applier and seconds on a slow one. This is the
//! quantity itself. The group thread marks when seqnos are ordered, at
//! most one mark per `MARK_EVERY` (so memory does not grow with the
//! rate); the age of the oldest uncommitted seqno is read off the last
//! mark at or before it, which overstates it by less than `MARK_EVERY`
//! and never understates it.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::gtid::Seqno;

const MARK_EVERY: Duration = Duration::from_millis(1);
/// About a minute of marks at the highest rate; past it, newer marks are
/// not kept (the oldest, which the age is read from, stay).
const MAX_MARKS: usize = 65536;

#[derive(Default)]
pub(super) struct Lag {
    /// (first seqno ordered at or after this time, time), oldest first.
    marks: Mutex<VecDeque<(Seqno, Instant)>>,
}

impl Lag {
    /// `seqno` was ordered at `now`.
    pub fn ordered(&self, seqno: Seqno, now: Instant) {
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        let due = marks.back().is_none_or(|&(_, at)| now.saturating_duration_since(at) >= MARK_EVERY);
        if due && marks.len() < MAX_MARKS {
            marks.push_back((seqno, now));
        }
    }

    /// How long the oldest seqno after `committed` has waited, up to
    /// `ordered` (the last seqno ordered); zero when none waits.
    pub fn age(&self, committed: Seqno, ordered: Seqno, now: Instant) -> Duration {
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        // A mark is needed while it is the last one at or before the
        // oldest uncommitted seqno (committed + 1).
        while marks.len() >= 2 && marks[1].0 <= committed + 1 {
            marks.pop_front();
        }
        if ordered <= committed {
            return Duration::ZERO;
        }
        marks.front().map_or(Duration::ZERO, |&(_, at)| now.saturating_duration_since(at))
    }

    /// The history starts over (a state transfer, a rejoin).
    pub fn clear(&self) {
        self.marks.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// How long this node takes per writeset it commits, measured only over
/// intervals it had a backlog at both ends: an idle applier says nothing
/// of its speed. Times the backlog (ordered, not yet committed), it says
/// how long a `wsrep_sync_wait` read arriving now waits for its turn. The
/// age of the oldest writeset understates that wait while writesets
/// arrive faster than they are committed: at 128 writers on node 1 the
/// bound held the age near half of 100 ms while node 2's reads waited up
/// to 180 ms (issue 52, `lockstep bench --scenario bound`).
#[derive(Default)]
pub(super) struct ApplyPace {
    inner: Mutex<Pace>,
}

#[derive(Default)]
struct Pace {
    /// (committed, when) at the start of the interval being measured;
    /// None while there is no backlog.
    from: Option<(Seqno, Instant)>,
    /// Weighted mean time per commit, in ns.
    per_commit_ns: Option<f64>,
}

/// Intervals shorter than this are not measured yet: at a few thousand
/// commits a second each holds a dozen or more.
const PACE_INTERVAL: Duration = Duration::from_millis(5);
/// The newest interval's weight in the mean: the pace follows a change
/// (node 2's fsync turned on) within a few dozen milliseconds.
const PACE_WEIGHT: f64 = 0.2;

impl ApplyPace {
    /// The backlog as of `now`: `committed` and `ordered` seqnos.
    pub fn note(&self, committed: Seqno, ordered: Seqno, now: Instant) {
        let mut p = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if ordered <= committed {
            p.from = None;
            return;
        }
        let Some((c0, t0)) = p.from else {
            p.from = Some((committed, now));
            return;
        };
        let elapsed = now.saturating_duration_since(t0);
        let done = committed - c0;
        // Nothing committed yet (a big writeset applies): the interval
        // goes on, and its end counts that time.
        if elapsed < PACE_INTERVAL || done <= 0 {
            return;
        }
        let sample = elapsed.as_nanos() as f64 / done as f64;
        p.per_commit_ns = Some(p.per_commit_ns.map_or(sample, |mean| mean + (sample - mean) * PACE_WEIGHT));
        p.from = Some((committed, now));
    }

    /// How long `backlog` writesets take at the measured pace; zero before
    /// any interval was measured.
    pub fn drain(&self, backlog: u64) -> Duration {
        let p = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        p.per_commit_ns.map_or(Duration::ZERO, |ns| Duration::from_nanos((ns * backlog as f64) as u64))
    }

    /// The history starts over (a state transfer, a rejoin).
    pub fn clear(&self) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = Pace::default();
    }
}

/// A lag against the bound `max_lag_ms` (M), the longer of the oldest
/// writeset's `age` and the backlog's `drain` time (see `ApplyPace`):
/// whether the node is late (M/2 or more: stop the writers while the
/// writesets already ordered, which wait too, still have the other half
/// of the bound), and whether it is fresh again (under M/4, so that the
/// writers do not stop and go on every millisecond near one threshold).
/// Bound 0 (off): never late, always fresh.
pub(super) fn against(age: Duration, drain: Duration, max_lag_ms: u64) -> (bool, bool) {
    if max_lag_ms == 0 {
        return (false, true);
    }
    let lag = age.max(drain).as_millis() as u64;
    (lag * 2 >= max_lag_ms, lag * 4 < max_lag_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_oldest_uncommitted_seqno_sets_the_age() {
        let t0 = Instant::now();
        let lag = Lag::default();
        lag.ordered(1, t0);
        lag.ordered(2, t0 + ms(10));
        lag.ordered(3, t0 + ms(20));
        assert_eq!(lag.age(0, 3, t0 + ms(30)), ms(30));
        assert_eq!(lag.age(1, 3, t0 + ms(30)), ms(20));
        assert_eq!(lag.age(3, 3, t0 + ms(30)), Duration::ZERO, "all committed");
        lag.ordered(4, t0 + ms(40));
        assert_eq!(lag.age(3, 4, t0 + ms(45)), ms(5));
    }

    #[test]
    fn seqnos_between_marks_are_never_younger_than_said() {
        let t0 = Instant::now();
        let lag = Lag::default();
        lag.ordered(1, t0);
        // Within the same millisecond: no mark of their own.
        lag.ordered(2, t0 + Duration::from_micros(300));
        lag.ordered(3, t0 + Duration::from_micros(600));
        lag.ordered(4, t0 + ms(50));
        // Seqno 2 and 3 wait; they were ordered less than 1 ms after t0.
        let age = lag.age(1, 4, t0 + ms(100));
        assert!(age >= ms(99) && age <= ms(100), "{:?}", age);
    }

    #[test]
    fn late_at_half_the_bound_fresh_under_a_quarter() {
        let none = Duration::ZERO;
        assert_eq!(against(ms(10), none, 100), (false, true));
        assert_eq!(against(ms(25), none, 100), (false, false), "between: keep what was asked");
        assert_eq!(against(ms(49), none, 100), (false, false));
        assert_eq!(against(ms(50), none, 100), (true, false));
        assert_eq!(against(ms(10_000), none, 0), (false, true), "off");
        // A young backlog that takes long to commit is late too: a read
        // arriving now waits for all of it.
        assert_eq!(against(ms(5), ms(60), 100), (true, false));
        assert_eq!(against(ms(5), ms(30), 100), (false, false), "not fresh while it drains");
        assert_eq!(against(ms(5), ms(60), 0), (false, true), "off");
    }

    #[test]
    fn the_pace_is_measured_only_while_there_is_a_backlog() {
        let t0 = Instant::now();
        let pace = ApplyPace::default();
        assert_eq!(pace.drain(100), Duration::ZERO, "nothing measured yet");
        // Idle for a second: no backlog, so nothing about the pace.
        pace.note(10, 10, t0);
        pace.note(10, 10, t0 + ms(1000));
        assert_eq!(pace.drain(100), Duration::ZERO);
        // A backlog: 20 commits in 10 ms, 0.5 ms each.
        pace.note(10, 50, t0 + ms(1000));
        pace.note(20, 60, t0 + ms(1005));
        pace.note(30, 60, t0 + ms(1010));
        assert_eq!(pace.drain(100), ms(50), "two intervals of 10 commits in 5 ms");
        // Slower: 5 commits in 10 ms (2 ms each) moves the mean a fifth of
        // the way, to 0.8 ms.
        pace.note(35, 60, t0 + ms(1020));
        assert_eq!(pace.drain(10), ms(8));
        // The backlog gone: the next interval starts when one is back.
        pace.note(60, 60, t0 + ms(1030));
        pace.note(60, 70, t0 + ms(2000));
        pace.note(70, 70, t0 + ms(2001));
        assert_eq!(pace.drain(10), ms(8), "too short an interval, and the idle second is not in it");
    }

    #[test]
    fn marks_are_bounded() {
        let t0 = Instant::now();
        let lag = Lag::default();
        for i in 0..(MAX_MARKS as u64 + 100) {
            lag.ordered(i as Seqno + 1, t0 + ms(i));
        }
        assert_eq!(lag.marks.lock().unwrap().len(), MAX_MARKS);
        assert_eq!(lag.age(0, MAX_MARKS as Seqno + 100, t0 + ms(MAX_MARKS as u64 + 100)), ms(MAX_MARKS as u64 + 100), "the oldest is kept");
    }
}
