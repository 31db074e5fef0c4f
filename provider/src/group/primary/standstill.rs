//! A member whose whole process stood still (SIGSTOP, a paused VM, a
//! machine starved of CPU) served nothing meanwhile, but when it runs
//! again its server answers reads from where it stopped, while the
//! majority went on committing without it: Jepsen's stale reads after a
//! pause, which Galera does not show (its writers wait for every node).
//! A turn of the driver normally follows the last within a tick; a gap
//! between the end of one turn and the start of the next longer than
//! `STOOD_STILL` means nothing of this member ran. The driver then leaves
//! the primary component at once (the server stops taking queries) and
//! asks for a primary view again, which comes in order after everything
//! the group had ordered: its reads are fresh again once it is delivered.
//!
//! A long turn is no standstill (the gap is measured from its end): a
//! member busy with a big writeset ran, and was heard. A stop that lands
//! inside a turn makes that turn end after the process resumed: the
//! clock's watch (`io::SystemClock`), a thread that only naps, sees it
//! instead, and the driver asks it at the start and the end of a turn.
//!
//! Time is an argument, so the simulator drives this.

use std::time::{Duration, Instant};

/// Longer than any gap between turns of a running member (ticks come
/// every `group::TICK`, 50 ms; a test's slower tick raises the bound to
/// four of its ticks), and as long as a leader stays known without a word
/// (`quorum::LEADER_SILENT`): a pause shorter than that leaves reads at
/// most that stale; one longer costs the member a rejoin (one ordered
/// view) before it serves again.
pub const STOOD_STILL: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct Standstill {
    last_turn_end: Instant,
    bound: Duration,
    /// When the last standstill was seen: the clock's watch and the gap
    /// between turns often both see one stop, a moment apart.
    last_seen: Option<Instant>,
    /// Since when turns have followed one another without a gap of more than
    /// `PAUSED_TICKS` ticks, none lasting longer: what this member heard in
    /// that time is all it was sent (see `ran_throughout`).
    running_since: Instant,
    /// When the current (or last) turn began.
    turn_began: Instant,
    tick: Duration,
}

/// A gap between turns longer than four ticks (a turn waits at most one
/// for its commands) means the process did not run, if not for long
/// enough to be a standstill.
const PAUSED_TICKS: u32 = 4;

impl Standstill {
    pub fn new(now: Instant, tick: Duration) -> Standstill {
        Standstill { last_turn_end: now, bound: STOOD_STILL.max(tick * 4), last_seen: None, running_since: now, turn_began: now, tick }
    }

    /// A turn begins at `now`: how long the member stood still before it,
    /// if longer than `STOOD_STILL`.
    pub fn turn_begins(&mut self, now: Instant) -> Option<Duration> {
        self.turn_began = now;
        let gap = now.saturating_duration_since(self.last_turn_end);
        if self.beyond_a_pause(gap) {
            self.running_since = now;
        }
        (gap > self.bound).then_some(gap)
    }

    /// Whether the member has run throughout the last `window`: a silence
    /// it heard over a shorter run may be its own pause, shorter than a
    /// standstill, with what the others sent meanwhile still on its way to
    /// the driver (`cut_off` must not take that for a cut).
    ///
    /// A long turn (over `PAUSED_TICKS` ticks) heard nothing either: its
    /// thread read no frame meanwhile, and the leader's appends and
    /// heartbeats wait in the socket behind it. A big writeset's turn can
    /// be one: node 3 of `scripts/kill-big-update`, taking a 500,000-row
    /// INSERT (and opening a 128 MB gcache page for it), took the leader's
    /// silence for a cut and went non-Primary for 5 s while node 2 heard
    /// the leader, in 4 of 5 runs (0 of 3 since). So the current turn must
    /// be a short one, and the run starts again at the end of a long one.
    pub fn ran_throughout(&self, now: Instant, window: Duration) -> bool {
        let turn = now.saturating_duration_since(self.turn_began);
        !self.beyond_a_pause(turn) && now.saturating_duration_since(self.running_since) >= window
    }

    /// Whether a gap between turns, or a turn, lasted longer than
    /// `PAUSED_TICKS` ticks: this member heard nothing that long.
    fn beyond_a_pause(&self, d: Duration) -> bool {
        d > self.tick * PAUSED_TICKS
    }

    /// Whether a standstill seen at `now` (of either kind) is a new one,
    /// not the last seen again; a stop that follows another by less than
    /// `bound` is taken for it (the member is rejoining anyway).
    pub fn is_new(&mut self, now: Instant) -> bool {
        let new = self.last_seen.is_none_or(|at| now.saturating_duration_since(at) > self.bound);
        if new {
            self.last_seen = Some(now);
        }
        new
    }

    pub fn turn_ended(&mut self, now: Instant) {
        if self.beyond_a_pause(now.saturating_duration_since(self.turn_began)) {
            self.running_since = now;
        }
        self.last_turn_end = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_counts_from_the_end_of_the_last_turn() {
        let t0 = Instant::now();
        let mut s = Standstill::new(t0, Duration::from_millis(50));
        assert_eq!(s.turn_begins(t0 + Duration::from_millis(900)), None);
        // A turn that lasted 3 s ran the whole time.
        s.turn_ended(t0 + Duration::from_secs(3));
        assert_eq!(s.turn_begins(t0 + Duration::from_millis(3_500)), None);
        assert_eq!(s.turn_begins(t0 + Duration::from_secs(6)), Some(Duration::from_secs(3)));
    }

    #[test]
    fn a_pause_shorter_than_a_standstill_restarts_the_run() {
        let t0 = Instant::now();
        let mut s = Standstill::new(t0, Duration::from_millis(50));
        let window = Duration::from_millis(750);
        for ms in (50..=1000).step_by(50) {
            assert_eq!(s.turn_begins(t0 + Duration::from_millis(ms)), None);
            s.turn_ended(t0 + Duration::from_millis(ms));
        }
        assert!(s.ran_throughout(t0 + Duration::from_millis(1000), window));
        assert_eq!(s.turn_begins(t0 + Duration::from_millis(1800)), None, "0.8 s is no standstill");
        assert!(!s.ran_throughout(t0 + Duration::from_millis(1800), window));
        for ms in (1800..=2550).step_by(50) {
            s.turn_begins(t0 + Duration::from_millis(ms));
            s.turn_ended(t0 + Duration::from_millis(ms));
        }
        assert!(s.ran_throughout(t0 + Duration::from_millis(2550), window));
    }

    #[test]
    fn a_long_turn_heard_nothing_meanwhile() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut s = Standstill::new(t0, Duration::from_millis(50));
        let window = Duration::from_millis(750);
        for n in (50..=1000).step_by(50) {
            s.turn_begins(ms(n));
            s.turn_ended(ms(n));
        }
        assert!(s.ran_throughout(ms(1000), window));
        // A turn from 1,050 ms to 2,050 ms: inside it, and for a window
        // after it, this member has not been listening.
        assert_eq!(s.turn_begins(ms(1050)), None);
        assert!(s.ran_throughout(ms(1100), window), "a turn of 50 ms is a usual one");
        assert!(!s.ran_throughout(ms(2050), window), "a second into the turn");
        s.turn_ended(ms(2050));
        assert_eq!(s.turn_begins(ms(2100)), None, "a long turn is no standstill");
        assert!(!s.ran_throughout(ms(2100), window));
        for n in (2100..=2800).step_by(50) {
            s.turn_begins(ms(n));
            s.turn_ended(ms(n));
        }
        assert!(!s.ran_throughout(ms(2750), window), "700 ms after the long turn");
        assert!(s.ran_throughout(ms(2800), window), "750 ms after it");
    }

    #[test]
    fn one_stop_seen_twice_counts_once() {
        let t0 = Instant::now();
        let mut s = Standstill::new(t0, Duration::from_millis(50));
        assert!(s.is_new(t0));
        assert!(!s.is_new(t0 + Duration::from_millis(20)));
        assert!(s.is_new(t0 + Duration::from_secs(3)));
    }

    #[test]
    fn a_slow_tick_is_no_standstill() {
        let t0 = Instant::now();
        let mut s = Standstill::new(t0, Duration::from_secs(2));
        assert_eq!(s.turn_begins(t0 + Duration::from_secs(2)), None);
        assert!(s.turn_begins(t0 + Duration::from_secs(9)).is_some());
    }
}
