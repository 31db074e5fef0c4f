//! The writeset cache (Galera's gcache): the most recent ordered seqnos,
//! in order and without gaps, so that a member can serve a joiner an
//! incremental state transfer (IST) instead of a full copy of the data.
//!
//! Every seqno is here as what the server saw for it: a writeset (its
//! bytes as ordered, and whether it passed certification, a deterministic
//! verdict every member shares) or a configuration change (a primary view,
//! which carries no data).
//!
//! The records live in a ring buffer file of `gcache.size` bytes,
//! `gcache.dir`/`gcache.name` (`galera.cache` in the data directory, as
//! with Galera); only the index (seqno -> place in the file) is in memory.
//! The file is mapped, as Galera's ring buffer is, once its blocks are
//! allocated (`ring::Medium::mapped`); else it is written with pwrite.
//! The newest seqnos are always kept, the oldest overwritten first. The
//! file survives a restart (`gcache.recover`, `open.rs`): a restarted node
//! can still serve IST for what it had cached. A record larger than the
//! whole ring goes to an overflow page instead, as with Galera
//! (`gcache.page_size`, `gcache.keep_pages_size`; `page.rs`), and is
//! recovered with the ring.
//!
//! Within one history a seqno that committed anywhere always stands for
//! the same thing (total order): a restarted node keeps what it cached up
//! to its data's position (beyond it, after a whole-cluster crash, the
//! seqnos may be ordered anew), and the group sending a cached seqno again
//! only rewrites it.

mod open;
mod page;
pub(crate) mod record;
mod ring;
mod run;

use std::sync::Arc;

use bytes::Bytes;

use crate::gtid::{Seqno, Uuid};
use crate::log;
use page::Pages;
use record::{record_size, Kind};
pub use ring::Medium;
use ring::{Placed, Ring};
use run::{Run, Slot};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cached {
    Writeset { payload: Bytes, certified: bool },
    /// A primary configuration change: its view, encoded (`View::encode`;
    /// empty in a record of an older file), so that an IST delivers it to
    /// the joiner's server as Galera's does.
    View { conf: Bytes },
}

impl Cached {
    /// The bytes it holds (what bounds a queue of them).
    pub fn bytes(&self) -> usize {
        match self {
            Cached::Writeset { payload, .. } => payload.len(),
            Cached::View { conf } => conf.len(),
        }
    }
}

pub struct Gcache {
    ring: Ring,
    /// Where records larger than the ring go.
    pages: Pages,
    /// The file, or "memory", for log lines.
    place: String,
    /// What `range` serves.
    run: Run,
    /// Seqnos kept below a hole that this node's own state transfer fills
    /// ([`Gcache::continue_after`]); `run` then starts right after it.
    below: Option<Below>,
    /// A record that could not be cached was logged, and nothing was
    /// cached since (one line for a series of them).
    uncached_noted: bool,
}

#[derive(Debug)]
struct Below {
    run: Run,
    /// The last seqno of the hole.
    upto: Seqno,
}

/// Seqnos looked up under the cache's lock, to be read from the ring
/// and the pages without it (a large range takes a while to read).
pub struct Plan {
    /// The ring's medium and nonce, then each page's by its id.
    ring: (Arc<Medium>, u64),
    pages: Vec<(u64, Arc<Medium>, u64)>,
    slots: Vec<(Seqno, Slot)>,
}

impl Gcache {
    /// A cache in memory only (tests; and a node whose file cannot be
    /// used).
    pub fn in_memory(size: usize) -> Gcache {
        Gcache::with_ring(Ring::in_memory(size as u64, Uuid::NIL), Pages::new(None), "memory".into(), Run::default())
    }

    fn with_ring(ring: Ring, pages: Pages, place: String, run: Run) -> Gcache {
        Gcache { ring, pages, place, run, below: None, uncached_noted: false }
    }

    /// `gcache.page_size` and `gcache.keep_pages_size`.
    pub fn set_pages(&mut self, page_size: u64, keep_size: u64) {
        self.pages.configure(page_size, keep_size);
    }

    /// The history the cached seqnos belong to.
    pub fn history(&self) -> Uuid {
        self.ring.history()
    }

    /// Seqnos of another history are of no use: a change empties the
    /// cache.
    pub fn set_history(&mut self, history: Uuid) {
        if history != self.ring.history() {
            self.reset(history);
        }
    }

    /// Caches `seqno`, the next in the group's order. A seqno the cache
    /// holds already (the group's log replayed to a restarted or rejoining
    /// node from before its position) replaces it and everything after it;
    /// one that leaves a gap (after a state transfer) starts the cache
    /// afresh: it only ever serves a gap-free run.
    pub fn push(&mut self, seqno: Seqno, item: Cached) {
        match (self.run.first(), self.run.last()) {
            (Some(_), Some(last)) if seqno == last + 1 => {}
            (Some(first), Some(last)) if first <= seqno && seqno <= last => self.run.truncate_from(seqno),
            (Some(_), _) => self.clear(),
            (None, _) => {
                if self.below.as_ref().is_some_and(|b| seqno != b.upto + 1) {
                    self.below = None;
                }
            }
        }
        match self.write(seqno, &item) {
            Some(slot) => self.run.push(seqno, slot),
            None => self.clear(),
        }
        self.merge();
    }

    /// The group's order goes on after `upto` (a snapshot of the group
    /// state brought this node there): seqnos up to `upto` come, if at
    /// all, from this node's own state transfer ([`Gcache::fill`]). What
    /// the cache holds before the hole is kept until then.
    pub fn continue_after(&mut self, upto: Seqno) {
        self.below = None;
        if self.run.last().is_some_and(|last| last >= upto) {
            return; // no hole: the next push continues or overlaps the run
        }
        let run = std::mem::take(&mut self.run);
        self.below = Some(Below { run, upto });
    }

    /// A seqno this node receives by IST: it closes the hole left by
    /// [`Gcache::continue_after`] when it follows what is kept below it.
    pub fn fill(&mut self, seqno: Seqno, item: Cached) {
        let Some(below) = &mut self.below else { return };
        if seqno > below.upto {
            return; // the group's order brought it
        }
        match below.run.last() {
            Some(last) if seqno <= last => return, // held already: the same
            Some(last) if seqno != last + 1 => below.run = Run::default(),
            _ => {}
        }
        match self.write(seqno, &item) {
            Some(slot) => {
                if let Some(below) = &mut self.below {
                    below.run.push(seqno, slot);
                }
            }
            None => self.below = None,
        }
        self.merge();
    }

    /// Forgets the seqnos after `seqno`, in the file too. At startup,
    /// what the cache holds beyond the data's position was ordered but
    /// may never have committed anywhere: a cluster that went down at
    /// once starts again from its most advanced data, and may order other
    /// writesets at those seqnos.
    pub fn truncate_after(&mut self, seqno: Seqno) {
        let (Some(first), Some(last)) = (self.run.first(), self.run.last()) else { return };
        if last <= seqno {
            return;
        }
        log::info!("gcache: discarding seqnos {}-{}, past this node's position {}", first.max(seqno + 1), last, seqno);
        if seqno < first {
            return self.clear(); // one write instead of one per record
        }
        let dropped = self.run.slots(seqno + 1, last).unwrap_or_default();
        self.run.truncate_from(seqno + 1);
        // Pages are not recovered: only the ring's records need erasing.
        for (_, slot) in dropped.into_iter().filter(|(_, slot)| slot.page.is_none()) {
            if let Err(e) = self.ring.erase(slot.offset) {
                return self.lose_file(e);
            }
        }
    }

    pub fn clear(&mut self) {
        self.reset(self.ring.history());
    }

    fn reset(&mut self, history: Uuid) {
        self.run = Run::default();
        self.below = None;
        self.pages.reset(&mut Vec::new());
        if let Err(e) = self.ring.reset(history) {
            self.lose_file(e);
        }
    }

    /// Writes one record, to the ring or, when it is larger than the
    /// whole ring, to an overflow page; None when it is not cached (the
    /// file failed, or a payload beyond a record's u32 length).
    fn write(&mut self, seqno: Seqno, item: &Cached) -> Option<Slot> {
        let (kind, certified, payload): (Kind, bool, &[u8]) = match item {
            Cached::Writeset { payload, certified } => (Kind::Writeset, *certified, payload),
            Cached::View { conf } => (Kind::View, false, conf),
        };
        let len = u32::try_from(payload.len()).ok();
        let slot = match len {
            None => Err(std::io::Error::other("larger than a gcache record can be")),
            Some(_) if record_size(payload.len()) > self.ring.capacity() => self.write_page(seqno, kind, certified, payload),
            Some(_) => self.write_ring(seqno, kind, certified, payload),
        };
        match slot {
            Ok(slot) => {
                self.uncached_noted = false;
                Some(slot)
            }
            Err(e) => {
                if !std::mem::replace(&mut self.uncached_noted, true) {
                    log::error!("gcache: seqno {} ({} bytes) not cached: {}; the cache starts afresh after it", seqno, payload.len(), e);
                }
                None
            }
        }
    }

    fn write_ring(&mut self, seqno: Seqno, kind: Kind, certified: bool, payload: &[u8]) -> std::io::Result<Slot> {
        let mut evicted = Vec::new();
        match self.ring.write(seqno, kind, certified, payload, &mut evicted) {
            Ok(offset) => {
                evicted.into_iter().for_each(|p| self.evict(p));
                Ok(Slot { page: None, offset, len: payload.len() as u32, kind, certified })
            }
            Err(e) => {
                let note = format!("the ring buffer {} failed: {}", self.place, e);
                self.lose_file(e);
                Err(std::io::Error::other(note))
            }
        }
    }

    fn write_page(&mut self, seqno: Seqno, kind: Kind, certified: bool, payload: &[u8]) -> std::io::Result<Slot> {
        let mut dropped = Vec::new();
        // A record that opens a new page leaves the old one behind: a sync
        // of what was written covers the page being written only.
        if let Some(old) = self.pages.current().filter(|p| p.full_after(payload.len())) {
            if let Err(e) = old.medium.sync() {
                log::warning!("gcache: syncing overflow page {} failed: {}", old.id, e);
            }
        }
        let serial = self.ring.take_serial();
        let written = self.pages.write((seqno, serial, kind, certified), payload, self.ring.history(), &mut dropped);
        dropped.into_iter().for_each(|page| self.evict_page(page));
        let (page, offset) = written?;
        Ok(Slot { page: Some(page), offset, len: payload.len() as u32, kind, certified })
    }

    /// The ring overwrote `p`: the seqnos up to it leave the cache (older
    /// ones too, so that what remains has no gap).
    fn evict(&mut self, p: Placed) {
        if self.run.holds(p.seqno, p.offset) {
            self.run.drop_through(p.seqno);
            self.below = None;
        } else if let Some(below) = self.below.as_mut().filter(|b| b.run.holds(p.seqno, p.offset)) {
            below.run.drop_through(p.seqno);
        }
    }

    /// Overflow page `page` was deleted: the seqnos up to the newest it
    /// held leave the cache (older ones too, so that what remains has no
    /// gap).
    fn evict_page(&mut self, page: u64) {
        if let Some(seqno) = self.run.last_in_page(page) {
            self.run.drop_through(seqno);
            self.below = None;
        }
        if let Some(below) = self.below.as_mut() {
            if let Some(seqno) = below.run.last_in_page(page) {
                below.run.drop_through(seqno);
            }
        }
    }

    /// Joins what is kept below the hole to the run once the hole is
    /// filled.
    fn merge(&mut self) {
        if self.below.as_ref().is_none_or(|b| b.run.last() != Some(b.upto)) {
            return;
        }
        let Some(Below { mut run, upto }) = self.below.take() else { return };
        assert!(self.run.first().is_none_or(|first| first == upto + 1), "the run starts right after the hole");
        run.extend(std::mem::take(&mut self.run));
        self.run = run;
    }

    /// The file failed: what it held is lost, and the cache goes on in
    /// memory rather than stop the node.
    fn lose_file(&mut self, e: std::io::Error) {
        log::error!("gcache ring buffer {}: {}; the cache goes on in memory (a restart of this node will not find it)", self.place, e);
        self.run = Run::default();
        self.below = None;
        self.ring = Ring::in_memory(self.ring.size(), self.ring.history());
        self.place = "memory".into();
    }

    pub fn first(&self) -> Option<Seqno> {
        self.run.first()
    }

    pub fn last(&self) -> Option<Seqno> {
        self.run.last()
    }

    /// The newest configuration change cached at or before `seqno`.
    pub fn last_view(&self, seqno: Seqno) -> Option<(Seqno, Bytes)> {
        let at = self.run.last_of_kind(Kind::View, seqno)?;
        match self.range(at, at)?.pop()? {
            (s, Cached::View { conf }) => Some((s, conf)),
            _ => None,
        }
    }

    /// Bytes of the cached records (ring and pages).
    pub fn bytes(&self) -> usize {
        self.run.bytes() as usize
    }

    /// What a sync must cover for everything written so far to be on
    /// disk: the ring's file and the page being written (an older page
    /// was synced when the next one began, see `write_page`).
    pub fn sync_targets(&self) -> Vec<Arc<Medium>> {
        let mut media = vec![self.ring.medium()];
        media.extend(self.pages.current().map(|p| p.medium.clone()));
        media
    }

    /// Where seqnos `from..=to` are, if the cache holds all of them.
    pub fn plan(&self, from: Seqno, to: Seqno) -> Option<Plan> {
        let slots = self.run.slots(from, to)?;
        let mut pages: Vec<(u64, Arc<Medium>, u64)> = Vec::new();
        for id in slots.iter().filter_map(|(_, slot)| slot.page) {
            if pages.last().is_none_or(|p| p.0 != id) {
                // Deleting a page evicts what it held from the run.
                let page = self.pages.page(id);
                debug_assert!(page.is_some(), "page {} is gone but the run holds its records", id);
                let page = page?;
                pages.push((id, page.medium.clone(), page.nonce));
            }
        }
        Some(Plan { ring: (self.ring.medium(), self.ring.nonce()), pages, slots })
    }

    /// Seqnos `from..=to`, if the cache holds all of them.
    pub fn range(&self, from: Seqno, to: Seqno) -> Option<Vec<(Seqno, Cached)>> {
        self.plan(from, to)?.read()
    }
}

impl Plan {
    /// The records, as long as the ring has not overwritten any of them
    /// since they were looked up.
    pub fn read(&self) -> Option<Vec<(Seqno, Cached)>> {
        self.try_read().map_err(|e| log::info!("gcache: {}", e)).ok()
    }

    fn try_read(&self) -> Result<Vec<(Seqno, Cached)>, String> {
        let read_one = |&(seqno, slot): &(Seqno, Slot)| {
            let (medium, nonce) = match slot.page {
                None => (&self.ring.0, self.ring.1),
                Some(id) => self.pages.iter().find(|p| p.0 == id).map(|p| (&p.1, p.2)).expect("planned"),
            };
            let (header, payload) = ring::read(medium, nonce, slot.offset, seqno, slot.len)?;
            let item = match header.kind {
                Kind::View => Cached::View { conf: payload },
                Kind::Writeset => Cached::Writeset { payload, certified: header.certified },
            };
            Ok((seqno, item))
        };
        self.slots.iter().map(read_one).collect()
    }
}

#[cfg(test)]
mod tests;
