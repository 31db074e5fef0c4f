//! The monitor's rules and bookkeeping, without threads or clocks.

use std::collections::BTreeSet;

use crate::gtid::Seqno;

/// How far ahead of `last_left` a seqno may enter. Galera uses the same
/// window: it bounds the bookkeeping, and a gap this wide means something
/// upstream is broken, not that more parallelism would help.
pub const WINDOW: Seqno = 1 << 16;

/// When a seqno may enter.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rule {
    /// At once (a local transaction entering the apply monitor: it already
    /// holds its row locks).
    Now,
    /// Once everything up to this seqno has left (`depends_on`).
    After(Seqno),
    /// Once the previous seqno has left: strict order.
    InOrder,
}

#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Stats {
    pub entered: u64,
    /// Entered while an earlier seqno had not left yet.
    pub entered_out_of_order: u64,
    /// Left while an earlier seqno had not left yet.
    pub left_out_of_order: u64,
    pub left: u64,
    /// Sum over entries of (last_entered - last_left), this seqno counted
    /// in last_entered: the parallel window as Galera's monitor counts it
    /// (at enter, over enters). Counted at leave, it also took in every
    /// seqno that entered while this one was inside, and read about one
    /// more than Galera's with two appliers.
    pub window_sum: u64,
    pub waits: u64,
}

impl Stats {
    pub fn oooe(&self) -> f64 {
        ratio(self.entered_out_of_order, self.entered)
    }
    pub fn oool(&self) -> f64 {
        ratio(self.left_out_of_order, self.left)
    }
    pub fn window(&self) -> f64 {
        ratio(self.window_sum, self.entered)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

#[derive(Debug)]
pub struct Ordering {
    last_left: Seqno,
    last_entered: Seqno,
    /// Entered and not yet left.
    inside: BTreeSet<Seqno>,
    /// Left (or cancelled) above `last_left + 1`, waiting for the gap to
    /// close.
    done_early: BTreeSet<Seqno>,
    stats: Stats,
}

impl Ordering {
    pub fn new(position: Seqno) -> Ordering {
        Ordering {
            last_left: position,
            last_entered: position,
            inside: BTreeSet::new(),
            done_early: BTreeSet::new(),
            stats: Stats::default(),
        }
    }

    pub fn last_left(&self) -> Seqno {
        self.last_left
    }

    pub fn last_entered(&self) -> Seqno {
        self.last_entered
    }

    pub fn is_entered(&self, seqno: Seqno) -> bool {
        self.inside.contains(&seqno)
    }

    pub fn is_done(&self, seqno: Seqno) -> bool {
        seqno <= self.last_left || self.done_early.contains(&seqno)
    }

    pub fn may_enter(&self, seqno: Seqno, rule: Rule) -> bool {
        self.last_left >= self.threshold(seqno, rule)
    }

    /// The `last_left` value from which `seqno` may enter under `rule`.
    pub fn threshold(&self, seqno: Seqno, rule: Rule) -> Seqno {
        let window = seqno - WINDOW;
        match rule {
            Rule::Now => window,
            Rule::After(dep) => dep.max(window),
            Rule::InOrder => seqno - 1,
        }
    }

    pub fn enter(&mut self, seqno: Seqno, waited: bool) {
        assert!(seqno > self.last_left, "seqno {} entered after it left (last_left {})", seqno, self.last_left);
        assert!(!self.done_early.contains(&seqno), "seqno {} entered after it was done", seqno);
        assert!(self.inside.insert(seqno), "seqno {} entered twice", seqno);
        self.stats.entered += 1;
        self.stats.entered_out_of_order += (self.last_left + 1 < seqno) as u64;
        self.stats.waits += waited as u64;
        self.last_entered = self.last_entered.max(seqno);
        self.stats.window_sum += (self.last_entered - self.last_left).max(0) as u64;
    }

    pub fn leave(&mut self, seqno: Seqno) {
        assert!(self.inside.remove(&seqno), "seqno {} left without entering", seqno);
        self.stats.left += 1;
        self.stats.left_out_of_order += (self.last_left + 1 < seqno) as u64;
        self.done(seqno);
    }

    /// Marks a seqno done without entering it. Cancelling a seqno already
    /// done is a no-op (a view may be cancelled by both its delivery and a
    /// shutdown).
    pub fn cancel(&mut self, seqno: Seqno) {
        if seqno <= self.last_left || self.done_early.contains(&seqno) {
            return;
        }
        assert!(!self.inside.contains(&seqno), "seqno {} cancelled while inside", seqno);
        self.last_entered = self.last_entered.max(seqno);
        self.done(seqno);
    }

    fn done(&mut self, seqno: Seqno) {
        if seqno != self.last_left + 1 {
            self.done_early.insert(seqno);
            return;
        }
        self.last_left = seqno;
        while self.done_early.remove(&(self.last_left + 1)) {
            self.last_left += 1;
        }
    }

    /// Moves to a new position; only valid when nobody is inside.
    pub fn reset(&mut self, position: Seqno) {
        assert!(self.inside.is_empty(), "monitor reset with {} seqnos inside", self.inside.len());
        self.last_left = position;
        self.last_entered = position;
        self.done_early.clear();
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    pub fn flush_stats(&mut self) {
        self.stats = Stats::default();
    }
}
