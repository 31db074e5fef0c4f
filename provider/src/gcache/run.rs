//! A gap-free run of seqnos and where each one's record is in the ring:
//! the index the cache keeps in memory (payloads stay in the file).

use std::collections::VecDeque;

use super::record::{record_size, Kind};
use crate::gtid::Seqno;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The overflow page that holds the record (`page.rs`); None: the
    /// ring.
    pub page: Option<u64>,
    pub offset: u64,
    pub len: u32,
    pub kind: Kind,
    pub certified: bool,
}

impl Slot {
    fn size(&self) -> u64 {
        record_size(self.len as usize)
    }
}

#[derive(Debug, Default)]
pub struct Run {
    first: Seqno,
    slots: VecDeque<Slot>,
    /// Bytes of the records in the run (ring and pages).
    bytes: u64,
}

impl Run {
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn first(&self) -> Option<Seqno> {
        (!self.slots.is_empty()).then_some(self.first)
    }

    pub fn last(&self) -> Option<Seqno> {
        (!self.slots.is_empty()).then(|| self.first + self.slots.len() as Seqno - 1)
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn index(&self, seqno: Seqno) -> Option<usize> {
        let i = usize::try_from(seqno.checked_sub(self.first)?).ok()?;
        (i < self.slots.len()).then_some(i)
    }

    /// Whether the run's record of `seqno` is the ring's at `offset`.
    pub fn holds(&self, seqno: Seqno, offset: u64) -> bool {
        self.index(seqno).is_some_and(|i| self.slots[i].page.is_none() && self.slots[i].offset == offset)
    }

    /// The newest seqno whose record is in overflow page `page`.
    pub fn last_in_page(&self, page: u64) -> Option<Seqno> {
        let i = self.slots.iter().rposition(|s| s.page == Some(page))?;
        Some(self.first + i as Seqno)
    }

    /// The newest seqno at or before `seqno` whose record is of `kind`.
    pub fn last_of_kind(&self, kind: Kind, seqno: Seqno) -> Option<Seqno> {
        let end = self.index(seqno.min(self.last()?))?;
        let i = self.slots.range(..=end).rposition(|s| s.kind == kind)?;
        Some(self.first + i as Seqno)
    }

    /// Appends the seqno that follows the last one (any, when empty).
    pub fn push(&mut self, seqno: Seqno, slot: Slot) {
        match self.last() {
            Some(last) => assert_eq!(seqno, last + 1, "a run has no gaps"),
            None => self.first = seqno,
        }
        self.bytes += slot.size();
        self.slots.push_back(slot);
    }

    /// Drops `seqno` and everything after it.
    pub fn truncate_from(&mut self, seqno: Seqno) {
        let keep = usize::try_from(seqno - self.first).unwrap_or(0).min(self.slots.len());
        for s in self.slots.drain(keep..) {
            self.bytes -= s.size();
        }
    }

    /// Drops everything up to and including `seqno`.
    pub fn drop_through(&mut self, seqno: Seqno) {
        let Some(i) = self.index(seqno) else { return };
        for s in self.slots.drain(..=i) {
            self.bytes -= s.size();
        }
        self.first = seqno + 1;
    }

    /// Appends `after`, which starts right after this run's last seqno.
    pub fn extend(&mut self, after: Run) {
        if let (Some(last), Some(first)) = (self.last(), after.first()) {
            assert_eq!(first, last + 1, "runs joined across a gap");
        } else if self.is_empty() {
            *self = after;
            return;
        }
        self.bytes += after.bytes;
        self.slots.extend(after.slots);
    }

    /// The slots of `from..=to`, if the run holds all of them.
    pub fn slots(&self, from: Seqno, to: Seqno) -> Option<Vec<(Seqno, Slot)>> {
        if from > to {
            return None;
        }
        let (start, end) = (self.index(from)?, self.index(to)?);
        Some((from..).zip(self.slots.range(start..=end).copied()).collect())
    }
}
