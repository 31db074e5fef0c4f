//! Flow control's grace around a big writeset's apply. The writesets
//! ordered after a big one wait for its commit, however fast they apply:
//! counting them would stop every writer of the cluster for as long as
//! the big one takes to apply (Galera does, 5 s for a 200 MB UPDATE). So
//! the receive queue may grow to `BIG_APPLY_QUEUE` then. After it, the
//! limits ride on the lowest the queue has been since: the backlog it
//! left drains at its own pace, the writers stop if it grows again by the
//! usual limit (this node does not keep up), and the grace ends once the
//! queue is under the usual limit. A grace that lasted until the queue
//! was back under the usual limit lasted for ever under a load that kept
//! it above: no flow control, and a node falling behind without bound.

/// About 13 s of a busy cluster's small writesets (5,000/s here), longer
/// than a 500,000-row UPDATE takes to apply (5 s): at 16384 the writers
/// stopped for the last second of it. A few hundred bytes each, so some
/// 20 MB of queue at most.
pub const BIG_APPLY_QUEUE: usize = 65536;

/// The grace's low-water mark after this check (0: no grace), and the
/// (lower, upper) limits to apply now. `low` is the mark before it,
/// `len` the queue's length, `limits` the usual ones.
pub fn limits(low: usize, big_applying: bool, len: usize, (lower, upper): (usize, usize)) -> (usize, (usize, usize)) {
    if big_applying {
        return (BIG_APPLY_QUEUE, (BIG_APPLY_QUEUE, BIG_APPLY_QUEUE));
    }
    let low = low.min(len);
    if low <= upper {
        return (0, (lower, upper));
    }
    (low, ((low + lower).min(BIG_APPLY_QUEUE), (low + upper).min(BIG_APPLY_QUEUE)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const USUAL: (usize, usize) = (16, 16);

    #[test]
    fn no_big_apply_no_grace() {
        assert_eq!(limits(0, false, 500, USUAL), (0, USUAL));
    }

    #[test]
    fn the_queue_may_grow_while_a_big_writeset_applies() {
        assert_eq!(limits(0, true, 30_000, USUAL), (BIG_APPLY_QUEUE, (BIG_APPLY_QUEUE, BIG_APPLY_QUEUE)));
    }

    #[test]
    fn after_it_the_limits_follow_the_backlog_down_and_the_grace_ends_under_the_usual_limit() {
        let (low, l) = limits(BIG_APPLY_QUEUE, false, 20_000, USUAL);
        assert_eq!((low, l), (20_000, (20_016, 20_016)), "the backlog it left may stay");
        let (low, l) = limits(low, false, 12_000, USUAL);
        assert_eq!((low, l), (12_000, (12_016, 12_016)), "and drain at its own pace");
        let (low, l) = limits(low, false, 12_010, USUAL);
        assert_eq!((low, l), (12_000, (12_016, 12_016)), "a little growth is no stop");
        assert!(12_017 > l.1, "growing by the usual limit stops the writers");
        assert_eq!(limits(low, false, 16, USUAL), (0, USUAL), "back under the usual limit: the grace is over");
    }

    /// What the old rule got wrong: a load that keeps the queue at 40,
    /// above the usual limit, kept the grace (65536) for ever.
    #[test]
    fn a_queue_that_never_gets_back_under_the_usual_limit_is_still_bounded() {
        let mut low = limits(0, true, 1_000, USUAL).0;
        for len in [900, 500, 100, 40, 41, 40] {
            low = limits(low, false, len, USUAL).0;
        }
        let (_, (_, upper)) = limits(low, false, 40, USUAL);
        assert_eq!(upper, 56, "the writers stop once the queue grows 16 past its low");
    }
}
