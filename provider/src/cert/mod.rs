//! Certification: the deterministic "first committer wins" test every node
//! runs on every ordered writeset, and the `depends_on` seqno that lets
//! appliers work in parallel.
//!
//! Given the same ordered input, every node holds the same index and makes
//! the same decisions; that is the consistency of the cluster. So nothing
//! here may depend on time, threads, hash-map iteration order or anything
//! local to a node.
//!
//! The rules are Galera's (contract §5): keys expand into SHARED branch keys
//! for every prefix plus the server-wide zero-level key; a new key is
//! checked against the latest earlier writeset that referenced it with each
//! kind; a conflict only fails certification if the earlier writeset was
//! invisible to the new one's originator (`seqno > last_seen`) and came from
//! another node or was TOI.

mod key;
mod snapshot;

use std::collections::BTreeMap;

pub use key::{expand, KeyHash, KeyMap};

use crate::gtid::{Seqno, Uuid, SEQNO_UNDEFINED};
use crate::writeset::{flags, KeyKind, WriteSet};

/// Galera's `cert.max_length` default: the longest certification interval
/// and the most writesets the index keeps before trimming itself.
pub const DEFAULT_MAX_LENGTH: usize = 16384;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    /// Certified: may commit once `depends_on` has been applied.
    Pass { depends_on: Seqno },
    /// Failed: delivered everywhere as a dummy, the origin's client gets a
    /// deadlock error.
    Fail(FailReason),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FailReason {
    /// A key conflict with the writeset at this seqno.
    Conflict { with: Seqno },
    /// The certification interval reaches below what the index still holds
    /// (right after a state transfer, or the index was trimmed).
    BelowIndex,
    /// `seqno - last_seen` exceeds `cert.max_length`.
    IntervalTooLong,
}

/// One entry of the index: per key kind, the seqno of the latest
/// writeset that referenced the key with it (SEQNO_UNDEFINED: none). Its
/// source and TOI flag, needed only to decide a conflict, are looked up
/// in `certified`: an entry is then 40 bytes instead of 136, which is
/// what a 500,000-row writeset's index costs in memory and cache misses.
#[derive(Clone, Copy, Debug)]
struct Entry {
    refs: [Seqno; 4],
}

impl Default for Entry {
    fn default() -> Entry {
        Entry { refs: [SEQNO_UNDEFINED; 4] }
    }
}

/// A certified writeset still in the index, remembered so it can be purged
/// (and so the index can be rebuilt from a snapshot: replaying the
/// certified writesets in seqno order reproduces it exactly).
#[derive(Debug, Clone, PartialEq)]
struct Certified {
    source: Uuid,
    toi: bool,
    keys: Vec<(KeyHash, KeyKind)>,
}

/// What the existing reference of kind `existing` means to a new key of
/// kind `new` (Galera's check table, contract §5.3).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Dependency,
    Conflict,
}

fn check(existing: KeyKind, new: KeyKind) -> Check {
    use Check::*;
    use KeyKind::*;
    match (existing, new) {
        (Exclusive, _) => Conflict,
        (Update, Update | Exclusive) => Conflict,
        (Update, Shared | Reference) => Dependency,
        (Reference, Exclusive) => Conflict,
        (Reference, Update) => Dependency,
        (Shared, Update | Exclusive) => Dependency,
        (Reference | Shared, Shared | Reference) => Nothing,
    }
}

#[derive(Default, Clone, Copy, Debug)]
pub struct Stats {
    pub certified: u64,
    pub failed: u64,
    /// Sum of (seqno - depends_on) over certified writesets.
    pub deps_distance_sum: u64,
    /// Sum of (seqno - last_seen - 1) over certified writesets.
    pub interval_sum: u64,
}

pub struct Certification {
    index: KeyMap<Entry>,
    /// Certified writesets by seqno, oldest first (the purge order).
    certified: BTreeMap<Seqno, Certified>,
    /// Writesets whose certification interval starts below this cannot be
    /// certified here (their conflicts may have been purged or predate
    /// this node's state).
    floor: Seqno,
    /// Last seqno certified (passed or failed): seqnos must arrive in order.
    position: Seqno,
    last_pa_unsafe: Seqno,
    /// The last fragment certified of each open streaming transaction (by
    /// origin and trx id): its next fragment depends on it. Fragments of
    /// one transaction share one applier context on the server, so they
    /// must never apply together, though their rows differ (Galera ties
    /// each fragment to the previous one alike). Bounded by the open
    /// streaming transactions; entries below the index floor are purged.
    streaming: BTreeMap<(Uuid, u64), Seqno>,
    optimistic_pa: bool,
    max_length: usize,
    stats: Stats,
}

impl Certification {
    /// A fresh index for a history positioned at `position` (the last seqno
    /// this node's state contains).
    pub fn new(position: Seqno) -> Certification {
        Certification {
            index: KeyMap::default(),
            certified: BTreeMap::new(),
            floor: position,
            position,
            last_pa_unsafe: SEQNO_UNDEFINED,
            streaming: BTreeMap::new(),
            optimistic_pa: true,
            max_length: DEFAULT_MAX_LENGTH,
            stats: Stats::default(),
        }
    }

    pub fn set_optimistic_pa(&mut self, on: bool) {
        self.optimistic_pa = on;
    }

    pub fn set_max_length(&mut self, n: usize) {
        self.max_length = n.max(1);
    }

    pub fn position(&self) -> Seqno {
        self.position
    }

    pub fn index_size(&self) -> usize {
        self.index.len()
    }

    /// Lowest seqno still in the index (Galera logs it as the "cert index
    /// boundary"), or the position when empty.
    pub fn lowest(&self) -> Seqno {
        self.certified.keys().next().copied().unwrap_or(self.position)
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Forget everything and restart at `position` (state transfer, new
    /// history).
    pub fn reset(&mut self, position: Seqno) {
        let (pa, max) = (self.optimistic_pa, self.max_length);
        *self = Certification::new(position);
        self.optimistic_pa = pa;
        self.max_length = max;
    }

    /// An ordered seqno that carries no writeset (a configuration change):
    /// everything after it must wait for it, as for a PA-unsafe writeset.
    pub fn skip(&mut self, seqno: Seqno) {
        self.advance(seqno);
        self.last_pa_unsafe = seqno;
    }

    fn advance(&mut self, seqno: Seqno) {
        assert!(seqno > self.position, "certification out of order: {} after {}", seqno, self.position);
        self.position = seqno;
    }

    /// Certifies the writeset ordered at `seqno`.
    pub fn certify(&mut self, ws: &WriteSet, seqno: Seqno) -> Verdict {
        self.advance(seqno);
        if ws.has(flags::ROLLBACK) && !ws.has(flags::TRX_START) {
            // A streaming rollback fragment only tells appliers to discard:
            // it bypasses the test and must wait for everything before it.
            self.last_pa_unsafe = seqno;
            self.streaming.remove(&(ws.source, ws.trx_id));
            return Verdict::Pass { depends_on: seqno - 1 };
        }
        if let Some(reason) = self.interval_check(ws, seqno) {
            return self.fail(ws, reason);
        }
        let keys = expand(&ws.keys);
        let mut depends_on = self.initial_depends_on(ws, seqno);
        if !ws.is_toi() {
            if let Some(with) = self.test_keys(ws, &keys, &mut depends_on) {
                return self.fail(ws, FailReason::Conflict { with });
            }
        }
        depends_on = depends_on.max(self.last_pa_unsafe).max(self.previous_fragment(ws, seqno));
        self.insert(ws, seqno, keys);
        if ws.has(flags::PA_UNSAFE) || ws.is_toi() {
            self.last_pa_unsafe = seqno;
        }
        self.record_pass(ws, seqno, depends_on);
        self.trim();
        Verdict::Pass { depends_on }
    }

    /// A failed fragment ends its streaming transaction (appliers discard
    /// it).
    fn fail(&mut self, ws: &WriteSet, reason: FailReason) -> Verdict {
        self.stats.failed += 1;
        self.streaming.remove(&(ws.source, ws.trx_id));
        Verdict::Fail(reason)
    }

    /// What a writeset must wait for as part of a streaming transaction:
    /// the transaction's previous fragment; everything before it when
    /// that fragment is unknown here (certified before this node's state,
    /// or purged). Records the fragment for the next one; the last one
    /// (commit) ends the transaction.
    fn previous_fragment(&mut self, ws: &WriteSet, seqno: Seqno) -> Seqno {
        if ws.is_toi() {
            return SEQNO_UNDEFINED;
        }
        let key = (ws.source, ws.trx_id);
        let previous = match ws.has(flags::TRX_START) {
            true => SEQNO_UNDEFINED,
            false => self.streaming.remove(&key).unwrap_or(seqno - 1),
        };
        if !ws.has(flags::TRX_END) {
            self.streaming.insert(key, seqno);
        }
        previous
    }

    fn interval_check(&self, ws: &WriteSet, seqno: Seqno) -> Option<FailReason> {
        if ws.is_toi() {
            return None;
        }
        if ws.last_seen < self.floor {
            return Some(FailReason::BelowIndex);
        }
        if seqno - ws.last_seen > self.max_length as Seqno {
            return Some(FailReason::IntervalTooLong);
        }
        None
    }

    fn initial_depends_on(&self, ws: &WriteSet, seqno: Seqno) -> Seqno {
        if ws.has(flags::PA_UNSAFE) || ws.is_toi() || self.certified.is_empty() {
            return seqno - 1;
        }
        let mut d = if ws.has(flags::IMPLICIT_DEPS) { ws.last_seen } else { SEQNO_UNDEFINED };
        if !self.optimistic_pa {
            d = d.max(ws.last_seen);
        }
        // Dependencies on purged writesets are unknown: wait for them all.
        d.max(self.lowest() - 1)
    }

    /// Checks every key against the index; returns the seqno of the first
    /// conflicting writeset, raising `depends_on` on the way.
    fn test_keys(&self, ws: &WriteSet, keys: &[(KeyHash, KeyKind)], depends_on: &mut Seqno) -> Option<Seqno> {
        for (hash, kind) in keys {
            let Some(entry) = self.index.get(hash) else { continue };
            for existing in [KeyKind::Exclusive, KeyKind::Update, KeyKind::Reference, KeyKind::Shared] {
                let r = entry.refs[existing as usize];
                if r == SEQNO_UNDEFINED {
                    continue;
                }
                match check(existing, *kind) {
                    Check::Nothing => {}
                    Check::Dependency => *depends_on = (*depends_on).max(r),
                    Check::Conflict => {
                        if r > ws.last_seen && self.foreign(r, ws.source) {
                            return Some(r);
                        }
                        *depends_on = (*depends_on).max(r);
                    }
                }
            }
        }
        None
    }

    /// Whether the certified writeset at `seqno` conflicts with a writeset
    /// from `source` (a TOI conflicts with everyone).
    fn foreign(&self, seqno: Seqno, source: Uuid) -> bool {
        let c = self.certified.get(&seqno).expect("every indexed seqno is a certified writeset");
        c.toi || c.source != source
    }

    fn insert(&mut self, ws: &WriteSet, seqno: Seqno, keys: Vec<(KeyHash, KeyKind)>) {
        self.index_keys(seqno, &keys);
        self.certified.insert(seqno, Certified { source: ws.source, toi: ws.is_toi(), keys });
    }

    fn index_keys(&mut self, seqno: Seqno, keys: &[(KeyHash, KeyKind)]) {
        self.index.reserve(keys.len());
        for (hash, kind) in keys {
            self.index.entry(*hash).or_default().refs[*kind as usize] = seqno;
        }
    }

    fn record_pass(&mut self, ws: &WriteSet, seqno: Seqno, depends_on: Seqno) {
        debug_assert!(depends_on < seqno);
        self.stats.certified += 1;
        self.stats.deps_distance_sum += (seqno - depends_on) as u64;
        self.stats.interval_sum += (seqno - ws.last_seen - 1).max(0) as u64;
    }

    /// The safety valve: never keep more than `max_length` writesets.
    fn trim(&mut self) {
        if self.certified.len() > self.max_length {
            let upto = self.position - self.max_length as Seqno;
            self.purge_upto(upto);
        }
    }

    /// Drops writesets up to `upto` from the index. Every node must purge at
    /// the same point of the ordered stream (a commit cut), or their
    /// decisions would differ.
    pub fn purge_upto(&mut self, upto: Seqno) {
        let upto = upto.min(self.position);
        while let Some(entry) = self.certified.first_entry() {
            if *entry.key() > upto {
                break;
            }
            let (seqno, trx) = entry.remove_entry();
            self.unref(seqno, &trx.keys);
        }
        // A big writeset grew the table; give the memory back once it is
        // purged (a rehash of what is left, rare).
        if self.index.capacity() > 4 * self.index.len().max(1 << 16) {
            self.index.shrink_to(2 * self.index.len());
        }
        self.floor = self.floor.max(upto);
        // A fragment below the floor is older than anything a later
        // fragment could depend on by the floor alone.
        let floor = self.floor;
        self.streaming.retain(|_, s| *s > floor);
    }

    fn unref(&mut self, seqno: Seqno, keys: &[(KeyHash, KeyKind)]) {
        for (hash, kind) in keys {
            let std::collections::hash_map::Entry::Occupied(mut entry) = self.index.entry(*hash) else { continue };
            let slot = &mut entry.get_mut().refs[*kind as usize];
            if *slot == seqno {
                *slot = SEQNO_UNDEFINED;
            }
            if entry.get().refs.iter().all(|r| *r == SEQNO_UNDEFINED) {
                entry.remove();
            }
        }
    }
}

#[cfg(test)]
mod tests;
