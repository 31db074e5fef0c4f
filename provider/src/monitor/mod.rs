//! Ordered sections, after Galera's monitor: every ordered seqno passes
//! through a monitor exactly once (enter then leave, or cancel), and the
//! monitor's `last_left` only advances over a contiguous prefix of seqnos.
//!
//! Two monitors order what the server does (contract §4.1):
//! * the **apply monitor**: a writeset may start applying once everything it
//!   depends on has left (`last_left >= depends_on`); `last_left` is what
//!   `last_committed_id` and `sync_wait` report;
//! * the **commit monitor**: commits enter strictly in seqno order
//!   (`repl.commit_order=3`).
//!
//! [`Ordering`] holds the rules and the bookkeeping and never blocks (the
//! simulator drives it directly); [`Monitor`] puts threads to sleep until
//! the rules let them in.

mod ordering;

pub use ordering::{Ordering, Rule, Stats, WINDOW};

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use crate::gtid::Seqno;

/// Why a wait ended without entering.
#[derive(Debug, PartialEq, Eq)]
pub enum Interrupted {
    /// `interrupt(seqno)` was called (a brute-force abort).
    Aborted,
    /// The monitor was closed (the provider is shutting down).
    Closed,
}

struct Inner {
    ord: Ordering,
    /// Sleeping threads by the `last_left` value that lets them in.
    waiters: BTreeMap<(Seqno, u64), Arc<Condvar>>,
    next_waiter: u64,
    /// Seqnos whose waiting owner was brute-force aborted.
    interrupted: HashSet<Seqno>,
    closed: bool,
}

pub struct Monitor {
    inner: Mutex<Inner>,
}

impl Monitor {
    pub fn new(position: Seqno) -> Monitor {
        Monitor {
            inner: Mutex::new(Inner {
                ord: Ordering::new(position),
                waiters: BTreeMap::new(),
                next_waiter: 0,
                interrupted: HashSet::new(),
                closed: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock must not wedge every
        // applier: the ordering state is updated atomically per call.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `rule` lets `seqno` in, then enters.
    pub fn enter(&self, seqno: Seqno, rule: Rule) -> Result<(), Interrupted> {
        let mut g = self.lock();
        let mut waited = false;
        loop {
            if g.closed {
                return Err(Interrupted::Closed);
            }
            if g.interrupted.remove(&seqno) {
                return Err(Interrupted::Aborted);
            }
            if g.ord.may_enter(seqno, rule) {
                g.ord.enter(seqno, waited);
                return Ok(());
            }
            waited = true;
            let threshold = g.ord.threshold(seqno, rule);
            g = Self::sleep(g, threshold, None).0;
        }
    }

    /// Registers a condvar keyed by `threshold` and sleeps on it.
    fn sleep<'a>(mut g: MutexGuard<'a, Inner>, threshold: Seqno, deadline: Option<Instant>) -> (MutexGuard<'a, Inner>, bool) {
        let id = g.next_waiter;
        g.next_waiter += 1;
        let cv = Arc::new(Condvar::new());
        g.waiters.insert((threshold, id), cv.clone());
        let (mut g, timed_out) = match deadline {
            None => (cv.wait(g).unwrap_or_else(|e| e.into_inner()), false),
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                let (g, r) = cv.wait_timeout(g, left).unwrap_or_else(|e| e.into_inner());
                (g, r.timed_out())
            }
        };
        g.waiters.remove(&(threshold, id));
        (g, timed_out)
    }

    pub fn leave(&self, seqno: Seqno) {
        let mut g = self.lock();
        g.ord.leave(seqno);
        Self::wake(&mut g);
    }

    /// Marks `seqno` done without anyone entering it (a configuration change
    /// delivered through `view_cb`, a seqno nobody will apply).
    pub fn cancel(&self, seqno: Seqno) {
        let mut g = self.lock();
        g.ord.cancel(seqno);
        g.interrupted.remove(&seqno);
        Self::wake(&mut g);
    }

    fn wake(g: &mut Inner) {
        let last_left = g.ord.last_left();
        for (_, cv) in g.waiters.range(..=(last_left, u64::MAX)) {
            cv.notify_one();
        }
    }

    /// Makes sure `seqno` is done: leaves it if inside, cancels it if it
    /// never entered, nothing if it already left. For paths where the
    /// server may or may not have passed through (apply_cb error paths).
    pub fn finish(&self, seqno: Seqno) {
        let mut g = self.lock();
        if g.ord.is_entered(seqno) {
            g.ord.leave(seqno);
        } else {
            g.ord.cancel(seqno);
        }
        g.interrupted.remove(&seqno);
        Self::wake(&mut g);
    }

    /// Wakes the owner of `seqno` if it waits to enter; if it is not waiting
    /// yet, its next `enter` fails. Returns false when `seqno` already
    /// entered or left (too late to interrupt).
    pub fn interrupt(&self, seqno: Seqno) -> bool {
        let mut g = self.lock();
        if seqno <= g.ord.last_left() || g.ord.is_entered(seqno) {
            return false;
        }
        g.interrupted.insert(seqno);
        for cv in g.waiters.values() {
            cv.notify_one();
        }
        true
    }

    /// Waits until `last_left >= upto` or the deadline passes; returns
    /// whether it got there. This is drain (no deadline) and sync_wait.
    pub fn wait_left(&self, upto: Seqno, deadline: Option<Instant>) -> bool {
        let mut g = self.lock();
        loop {
            if g.ord.last_left() >= upto {
                return true;
            }
            if g.closed || deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            g = Self::sleep(g, upto, deadline).0;
        }
    }

    pub fn last_left(&self) -> Seqno {
        self.lock().ord.last_left()
    }

    /// Whether `seqno` has left (or was cancelled).
    pub fn is_done(&self, seqno: Seqno) -> bool {
        self.lock().ord.is_done(seqno)
    }

    /// Whether `seqno` is inside (entered, not left).
    pub fn is_entered(&self, seqno: Seqno) -> bool {
        self.lock().ord.is_entered(seqno)
    }

    pub fn last_entered(&self) -> Seqno {
        self.lock().ord.last_entered()
    }

    /// Moves an idle monitor to a new position (state transfer, bootstrap).
    pub fn reset(&self, position: Seqno) {
        let mut g = self.lock();
        g.ord.reset(position);
        g.interrupted.clear();
        Self::wake_all(&mut g);
    }

    /// Fails every present and future wait (shutdown).
    pub fn close(&self) {
        let mut g = self.lock();
        g.closed = true;
        Self::wake_all(&mut g);
    }

    /// Undoes `close` (the provider reconnects after a disconnect).
    pub fn reopen(&self) {
        self.lock().closed = false;
    }

    fn wake_all(g: &mut Inner) {
        for cv in g.waiters.values() {
            cv.notify_one();
        }
    }

    pub fn stats(&self) -> Stats {
        self.lock().ord.stats()
    }

    pub fn flush_stats(&self) {
        self.lock().ord.flush_stats();
    }
}

#[cfg(test)]
mod tests;
