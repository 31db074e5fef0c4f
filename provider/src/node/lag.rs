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

/// A lag `age` against the bound `max_lag_ms` (M): whether the node is
/// late (M/2 or more: stop the writers while the writesets already
/// ordered, which wait too, still have the other half of the bound), and
/// whether it is fresh again (under M/4, so that the writers do not stop
/// and go on every millisecond near one threshold). Bound 0 (off): never
/// late, always fresh.
pub(super) fn against(age: Duration, max_lag_ms: u64) -> (bool, bool) {
    if max_lag_ms == 0 {
        return (false, true);
    }
    let age = age.as_millis() as u64;
    (age * 2 >= max_lag_ms, age * 4 < max_lag_ms)
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
        assert_eq!(against(ms(10), 100), (false, true));
        assert_eq!(against(ms(25), 100), (false, false), "between: keep what was asked");
        assert_eq!(against(ms(49), 100), (false, false));
        assert_eq!(against(ms(50), 100), (true, false));
        assert_eq!(against(ms(10_000), 0), (false, true), "off");
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
