//! How busy the group thread is, from how long it waits for work: the
//! transport may then write frames on this thread (when it has time to
//! spare, a frame goes out without waking the link's writer, which
//! shortens every round trip) or leave them to the writers (when it is
//! the bottleneck, they take the system calls off it and batch frames).

use std::time::{Duration, Instant};

/// Long enough to span many turns, short enough to follow a load change.
const WINDOW: Duration = Duration::from_millis(20);
/// Busier than this, the group thread leaves writing to the writers.
const SPARE_BELOW: f64 = 0.5;

#[derive(Debug)]
pub struct Load {
    window_start: Instant,
    busy: Duration,
    /// The busy fraction of the last whole window.
    last: f64,
}

impl Load {
    pub fn new(now: Instant) -> Load {
        Load { window_start: now, busy: Duration::ZERO, last: 0.0 }
    }

    /// One turn worked from `woke` to `done`.
    pub fn worked(&mut self, woke: Instant, done: Instant) {
        self.busy += done.saturating_duration_since(woke);
        let span = done.saturating_duration_since(self.window_start);
        if span >= WINDOW {
            self.last = (self.busy.as_secs_f64() / span.as_secs_f64()).min(1.0);
            (self.window_start, self.busy) = (done, Duration::ZERO);
        }
    }

    pub fn has_spare_time(&self) -> bool {
        self.last < SPARE_BELOW
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_windows_leave_no_spare_time_and_idle_ones_do() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut load = Load::new(t0);
        assert!(load.has_spare_time(), "nothing measured yet");
        // 15 ms of work in 21: busy.
        load.worked(t0 + ms(1), t0 + ms(16));
        assert!(load.has_spare_time(), "the window is not over");
        load.worked(t0 + ms(21), t0 + ms(21));
        assert!(!load.has_spare_time());
        // 2 ms of work in the next 20.
        load.worked(t0 + ms(30), t0 + ms(32));
        load.worked(t0 + ms(41), t0 + ms(41));
        assert!(load.has_spare_time());
    }
}
