//! `wsrep_apply_capacity`: how many writesets per second this node's
//! appliers could apply now, estimated while they work under the current
//! load. Galera offers no such number: operators learn it by desyncing a
//! node, locking it with FTWRL and timing the drain.
//!
//! Each applied writeset reports two times: its work (the CPU time its
//! applier thread spent in the server's apply_cb) and its turn (from
//! entering commit order to leaving it, when one writeset commits at a
//! time). Over the last `WINDOW`, the appliers could go as fast as
//! whichever binds first: all of them working in parallel, as many at
//! once as there are appliers and CPUs, or the turns one after another:
//!
//!   capacity = applied / max(work / min(appliers, cpus), turns)
//!
//! CPU time, not wall time: under load, an applier's wall time is mostly
//! waiting for a CPU the clients use (measured here: an estimate from
//! wall time came to 0.53-0.69 of the drain rate once writes stopped), and
//! what the operator asks is how fast this node applies when it has to.
//!
//! This assumes the writesets' dependencies let every applier work, as
//! they do for row-based OLTP traffic (`wsrep_cert_deps_distance` in the
//! thousands); the estimate is too high for a stream that certification
//! serialises.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How far back the estimate looks: long enough to smooth a burst, short
/// enough to follow a change of load.
const WINDOW: Duration = Duration::from_secs(10);
const SLOT: Duration = Duration::from_secs(1);
/// Fewer writesets than this in the window say little: the estimate is 0
/// (unknown).
const MIN_SAMPLES: u64 = 20;

#[derive(Clone, Copy, Debug)]
struct Slot {
    start: Instant,
    applied: u64,
    work: Duration,
    turns: Duration,
}

#[derive(Default)]
pub(super) struct Capacity {
    /// Newest last; at most WINDOW / SLOT + 1 of them.
    slots: Mutex<VecDeque<Slot>>,
}

/// What the status variables show.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Writesets per second the appliers could apply (0: unknown).
    pub capacity: f64,
    /// The share of it in use now, 0.0 to 1.0.
    pub used: f64,
}

impl Capacity {
    /// One writeset was applied at `now`.
    pub fn applied(&self, now: Instant, work: Duration, turn: Duration) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if slots.back().is_none_or(|s| now.saturating_duration_since(s.start) >= SLOT) {
            slots.push_back(Slot { start: now, applied: 0, work: Duration::ZERO, turns: Duration::ZERO });
        }
        while slots.front().is_some_and(|s| now.saturating_duration_since(s.start) > WINDOW) {
            slots.pop_front();
        }
        let s = slots.back_mut().expect("pushed above");
        s.applied += 1;
        s.work += work;
        s.turns += turn;
    }

    /// The estimate over the window ending `now`, for `parallel` appliers
    /// working at once (appliers, at most one per CPU).
    pub fn estimate(&self, now: Instant, parallel: usize) -> Estimate {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let recent = slots.iter().filter(|s| now.saturating_duration_since(s.start) <= WINDOW);
        let (mut applied, mut work, mut turns, mut first) = (0, Duration::ZERO, Duration::ZERO, None);
        for s in recent {
            applied += s.applied;
            work += s.work;
            turns += s.turns;
            first = first.or(Some(s.start));
        }
        let Some(first) = first.filter(|_| applied >= MIN_SAMPLES) else { return Estimate::default() };
        let busy = (work.as_secs_f64() / parallel.max(1) as f64).max(turns.as_secs_f64());
        if busy <= 0.0 {
            return Estimate::default();
        }
        let capacity = applied as f64 / busy;
        let span = now.saturating_duration_since(first).max(SLOT).as_secs_f64();
        Estimate { capacity, used: (applied as f64 / span / capacity).min(1.0) }
    }
}

/// The CPU time this thread has used (None if the clock is missing).
pub(super) fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Appliers that can work at once: one per CPU at most.
pub(super) fn parallel(appliers: usize) -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    appliers.min(*CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// An applier's turn in commit order, measured on its own thread (the
/// server enters and leaves commit order inside apply_cb).
#[derive(Clone, Copy, Default)]
struct Turn {
    waited: Duration,
    entered: Option<Instant>,
    held: Duration,
}

thread_local! {
    static TURN: std::cell::Cell<Turn> = std::cell::Cell::new(Turn::default());
}

/// This thread waited from `asked` for its turn, which began `now`.
pub(super) fn turn_began(asked: Instant, now: Instant) {
    TURN.with(|t| t.set(Turn { waited: t.get().waited + now.saturating_duration_since(asked), entered: Some(now), ..t.get() }));
}

pub(super) fn turn_ended(now: Instant) {
    TURN.with(|t| {
        let turn = t.get();
        let held = turn.entered.map_or(Duration::ZERO, |e| now.saturating_duration_since(e));
        t.set(Turn { entered: None, held: turn.held + held, ..turn });
    });
}

/// What this thread's writeset spent waiting for its turn and in it since
/// the last call (a turn not ended yet ends `now`).
pub(super) fn take_turn(now: Instant) -> (Duration, Duration) {
    turn_ended(now);
    let t = TURN.with(|t| t.replace(Turn::default()));
    (t.waited, t.held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn parallel_work_or_serial_turns_bound_the_capacity() {
        let t0 = Instant::now();
        let c = Capacity::default();
        // 100 writesets over 2 s, 10 ms of work and 1 ms of turn each.
        for i in 0..100 {
            c.applied(t0 + ms(20 * i), ms(10), ms(1));
        }
        let now = t0 + ms(2000);
        // 4 appliers: 1 s of work each over 100 writesets, 100/s.
        let e = c.estimate(now, 4);
        assert!((e.capacity - 400.0).abs() < 1e-6, "{:?}", e);
        assert!((e.used - 0.125).abs() < 1e-6, "50/s of 400/s: {:?}", e);
        // 40 appliers: the turns (0.1 s in all) bind first.
        assert!((c.estimate(now, 40).capacity - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn a_thread_counts_its_own_cpu_time_only() {
        let before = thread_cpu().expect("a thread CPU clock");
        std::thread::sleep(ms(30));
        let slept = thread_cpu().unwrap() - before;
        let spin = Instant::now();
        while spin.elapsed() < ms(30) {
            std::hint::black_box(0u64);
        }
        let worked = thread_cpu().unwrap() - before - slept;
        assert!(slept < ms(10), "sleeping uses no CPU: {slept:?}");
        assert!(worked >= ms(15), "spinning does: {worked:?}");
        assert!(parallel(64) >= 1 && parallel(64) <= 64 && parallel(1) == 1);
    }

    #[test]
    fn few_or_old_samples_say_nothing() {
        let t0 = Instant::now();
        let c = Capacity::default();
        for i in 0..MIN_SAMPLES - 1 {
            c.applied(t0 + ms(i), ms(1), ms(1));
        }
        assert_eq!(c.estimate(t0 + ms(100), 4), Estimate::default());
        c.applied(t0 + ms(100), ms(1), ms(1));
        assert!(c.estimate(t0 + ms(100), 4).capacity > 0.0);
        assert_eq!(c.estimate(t0 + WINDOW + SLOT * 2, 4), Estimate::default(), "the window moved past them");
    }

    #[test]
    fn the_window_keeps_a_bounded_number_of_slots() {
        let t0 = Instant::now();
        let c = Capacity::default();
        for i in 0..100_000 {
            c.applied(t0 + ms(i), ms(1), ms(0));
        }
        assert!(c.slots.lock().unwrap().len() <= (WINDOW.as_secs() / SLOT.as_secs() + 1) as usize);
    }
}
