//! The writeset cache (Galera's gcache): the most recent ordered seqnos,
//! in order and without gaps, bounded by `gcache.size`, so that a member
//! can serve a joiner an incremental state transfer (IST) instead of a
//! full copy of the data.
//!
//! Every seqno is here as what the server saw for it: a writeset (its
//! bytes as ordered, and whether it passed certification, a deterministic
//! verdict every member shares) or a configuration change (a primary view,
//! which carries no data). Payloads are shared with the rest of the node
//! (`Bytes`), so caching costs no copy.
//!
//! Kept in memory: a restarted member starts with an empty cache
//! (`gcache.recover` is not implemented), and the newest seqnos are always
//! kept, oldest dropped first, as with Galera's ring buffer.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::gtid::Seqno;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cached {
    Writeset { payload: Bytes, certified: bool },
    /// A primary configuration change.
    View,
}

impl Cached {
    fn size(&self) -> usize {
        // A fixed overhead per seqno, so that even views count.
        64 + match self {
            Cached::Writeset { payload, .. } => payload.len(),
            Cached::View => 0,
        }
    }
}

#[derive(Debug)]
pub struct Gcache {
    items: VecDeque<(Seqno, Cached)>,
    bytes: usize,
    limit: usize,
}

impl Gcache {
    pub fn new(limit: usize) -> Gcache {
        Gcache { items: VecDeque::new(), bytes: 0, limit }
    }

    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        self.trim();
    }

    /// Caches `seqno`. A seqno that does not follow the last one (after a
    /// state transfer or a new history) starts the cache afresh: it only
    /// ever holds a gap-free run.
    pub fn push(&mut self, seqno: Seqno, item: Cached) {
        if self.last().is_some_and(|last| seqno != last + 1) {
            self.clear();
        }
        self.bytes += item.size();
        self.items.push_back((seqno, item));
        self.trim();
    }

    pub fn clear(&mut self) {
        self.items.clear();
        self.bytes = 0;
    }

    fn trim(&mut self) {
        while self.bytes > self.limit {
            let Some((_, old)) = self.items.pop_front() else { break };
            self.bytes -= old.size();
        }
    }

    pub fn first(&self) -> Option<Seqno> {
        self.items.front().map(|(s, _)| *s)
    }

    pub fn last(&self) -> Option<Seqno> {
        self.items.back().map(|(s, _)| *s)
    }

    /// Seqnos `from..=to`, if the cache holds all of them.
    pub fn range(&self, from: Seqno, to: Seqno) -> Option<Vec<(Seqno, Cached)>> {
        let first = self.first()?;
        if from < first || to > self.last()? || from > to {
            return None;
        }
        let start = (from - first) as usize;
        let items: Vec<_> = self.items.range(start..=start + (to - from) as usize).cloned().collect();
        debug_assert!(items.iter().zip(from..).all(|((s, _), want)| *s == want), "the cache is gap-free");
        Some(items)
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(n: usize) -> Cached {
        Cached::Writeset { payload: Bytes::from(vec![7u8; n]), certified: true }
    }

    #[test]
    fn a_covered_range_comes_back_in_order() {
        let mut g = Gcache::new(1 << 20);
        for s in 10..20 {
            g.push(s, if s == 15 { Cached::View } else { ws(10) });
        }
        let r = g.range(12, 16).unwrap();
        assert_eq!(r.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![12, 13, 14, 15, 16]);
        assert_eq!(r[3].1, Cached::View);
        assert_eq!(g.range(9, 12), None, "before the first");
        assert_eq!(g.range(18, 20), None, "after the last");
        assert_eq!(g.range(19, 19).unwrap().len(), 1);
    }

    #[test]
    fn the_oldest_seqnos_go_first_past_the_size_limit() {
        let mut g = Gcache::new(3 * (64 + 100));
        for s in 1..=5 {
            g.push(s, ws(100));
        }
        assert_eq!((g.first(), g.last()), (Some(3), Some(5)));
        assert!(g.bytes() <= 3 * 164);
        g.set_limit(164);
        assert_eq!(g.first(), Some(5));
    }

    #[test]
    fn a_gap_starts_the_cache_afresh() {
        let mut g = Gcache::new(1 << 20);
        g.push(1, ws(1));
        g.push(2, ws(1));
        g.push(9, ws(1));
        assert_eq!((g.first(), g.last()), (Some(9), Some(9)));
        assert_eq!(g.range(1, 2), None);
    }
}
