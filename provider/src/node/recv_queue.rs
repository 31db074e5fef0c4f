//! The receive queue: what the group delivered and applier threads have not
//! taken yet (`wsrep_local_recv_queue`). Its length is what flow control
//! watches, so it is bounded by flow control, not by refusing pushes: the
//! group thread must never block on a full queue.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueStats {
    pub len: usize,
    pub max: usize,
    pub min: usize,
    /// Mean length each push found, itself not counted (Galera's
    /// `gu_fifo` samples before it adds), since the last reset.
    pub avg: f64,
}

struct Inner<T> {
    /// Items with their local order: the position in delivery order, from
    /// 1 for each connection.
    items: VecDeque<(i64, T)>,
    next: i64,
    closed: bool,
    max: usize,
    min: usize,
    samples: u64,
    sum: u64,
}

pub struct RecvQueue<T> {
    inner: Mutex<Inner<T>>,
    cv: Condvar,
}

impl<T> RecvQueue<T> {
    pub fn new() -> RecvQueue<T> {
        RecvQueue {
            inner: Mutex::new(Inner { items: VecDeque::new(), next: 1, closed: true, max: 0, min: 0, samples: 0, sum: 0 }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an item; false (item dropped) when the queue is closed.
    pub fn push(&self, item: T) -> bool {
        let mut q = self.lock();
        if q.closed {
            return false;
        }
        let n = q.next;
        q.next += 1;
        q.samples += 1;
        q.sum += q.items.len() as u64;
        q.items.push_back((n, item));
        let len = q.items.len();
        q.max = q.max.max(len);
        drop(q);
        self.cv.notify_one();
        true
    }

    /// Takes the next item and its local order, waiting for one; None once
    /// closed.
    pub fn pop(&self) -> Option<(i64, T)> {
        let mut q = self.lock();
        loop {
            if q.closed {
                return None;
            }
            if let Some(item) = q.items.pop_front() {
                q.min = q.min.min(q.items.len());
                return Some(item);
            }
            q = self.cv.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Opens for a new connection, empty.
    pub fn open(&self) {
        let mut q = self.lock();
        q.items.clear();
        q.next = 1;
        q.closed = false;
    }

    /// Wakes every waiting applier with None; queued items are dropped
    /// (the node has drained what it must before closing).
    pub fn close(&self) {
        let mut q = self.lock();
        q.closed = true;
        q.items.clear();
        drop(q);
        self.cv.notify_all();
    }

    pub fn stats(&self) -> QueueStats {
        let q = self.lock();
        let avg = if q.samples == 0 { 0.0 } else { q.sum as f64 / q.samples as f64 };
        QueueStats { len: q.items.len(), max: q.max, min: q.min, avg }
    }

    pub fn reset_stats(&self) {
        let mut q = self.lock();
        let len = q.items.len();
        (q.max, q.min, q.samples, q.sum) = (len, len, 0, 0);
    }
}

impl<T> Default for RecvQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_stats_and_close() {
        let q = Arc::new(RecvQueue::new());
        assert!(!q.push(0), "closed until opened");
        q.open();
        for i in 1..=3 {
            assert!(q.push(i));
        }
        assert_eq!(q.pop(), Some((1, 1)));
        let s = q.stats();
        assert_eq!((s.len, s.max), (2, 3));
        assert!((s.avg - 1.0).abs() < 1e-9, "pushes found 0, 1 and 2 waiting: {}", s.avg);
        let waiter = {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut got = vec![];
                while let Some((_, i)) = q.pop() {
                    got.push(i);
                }
                got
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        q.close();
        let got = waiter.join().unwrap();
        assert!(got == vec![2, 3] || got.len() < 2);
    }
}
