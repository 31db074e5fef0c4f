//! Overflow pages (Galera's page store): the records the ring buffer
//! cannot hold, because it is smaller than they are, go to page files of
//! `gcache.page_size` bytes (or of one record, when that is larger),
//! `gcache.page.NNNNNN` next to the ring file. The page being written is
//! always kept, so a node whose ring is tiny (`gcache.size=1`, as some of
//! Galera's tests set) or a writeset larger than the ring can still be
//! served by IST; older pages are kept while all pages together stay
//! within `gcache.keep_pages_size`, and deleted oldest first beyond it.
//!
//! Pages are written with pwrite and never mapped: a page can hold one
//! writeset of hundreds of megabytes, and a mapping would count it in the
//! server's resident memory. Unlike Galera's, pages survive a restart
//! (`gcache.recover`): a page starts with the ring's kind of file header
//! (history, nonce), so that recovery finds its records as the ring's,
//! and a writeset ordered before a crash that only a page held is still
//! there to apply (see `node::replay`). Pages the recovered run does not
//! use, or of another history, are deleted.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::record::{record_size, FileHeader, Kind, RecordHeader, FILE_HEADER};
use super::ring::{random_nonce, scan, write_record, Found, Medium};
use crate::gtid::{Seqno, Uuid};
use crate::log;

const PREFIX: &str = "gcache.page.";

/// Galera's defaults: 128 MiB pages, none kept beyond the current one.
pub const PAGE_SIZE: u64 = 128 << 20;

pub struct Pages {
    /// Where page files go; None keeps pages in memory (a cache without
    /// a file).
    dir: Option<PathBuf>,
    page_size: u64,
    keep_size: u64,
    /// The next page's number (its file name).
    count: u64,
    /// Oldest first; the last one is being written.
    pages: VecDeque<Page>,
    /// Bytes of all pages, the current one included (what
    /// `gcache.keep_pages_size` bounds, as with Galera).
    total: u64,
}

pub struct Page {
    pub id: u64,
    path: Option<PathBuf>,
    pub medium: Arc<Medium>,
    /// Records of an earlier page with the same offsets never verify here.
    pub nonce: u64,
    size: u64,
    /// Where the next record goes.
    head: u64,
}

impl Page {
    /// Whether a record of `len` payload bytes goes to the next page.
    pub fn full_after(&self, len: usize) -> bool {
        self.head + record_size(len) > FILE_HEADER + self.size
    }
}

impl Pages {
    pub fn new(dir: Option<PathBuf>) -> Pages {
        Pages { dir, page_size: PAGE_SIZE, keep_size: 0, count: 0, pages: VecDeque::new(), total: 0 }
    }

    /// Deletes the pages a previous run left in `dir` (the cache starts
    /// afresh).
    pub fn in_dir(dir: &Path) -> Pages {
        for (_, path) in page_files(dir) {
            remove(&path);
        }
        Pages::new(Some(dir.to_path_buf()))
    }

    /// The pages a previous run left in `dir` for `history`, and the
    /// intact records each holds; the others are deleted.
    pub fn recover(dir: &Path, history: Uuid) -> (Pages, Vec<(u64, Found)>) {
        let mut pages = Pages::new(Some(dir.to_path_buf()));
        let mut found = Vec::new();
        for (id, path) in page_files(dir) {
            match recover_page(id, &path, history) {
                Ok((page, records)) => {
                    found.extend(records.into_iter().map(|r| (id, r)));
                    pages.count = pages.count.max(id + 1);
                    pages.total += page.size;
                    pages.pages.push_back(page);
                }
                Err(why) => {
                    log::info!("gcache overflow page {} not recovered: {}", path.display(), why);
                    remove(&path);
                }
            }
        }
        (pages, found)
    }

    /// Keeps only the recovered pages `used` names (the recovered run's).
    pub fn retain(&mut self, used: &std::collections::BTreeSet<u64>) {
        let (keep, drop): (VecDeque<Page>, VecDeque<Page>) = std::mem::take(&mut self.pages).into_iter().partition(|p| used.contains(&p.id));
        self.pages = keep;
        for p in drop {
            self.drop_page(p, &mut Vec::new());
        }
    }

    /// `gcache.page_size` and `gcache.keep_pages_size` (both dynamic):
    /// the next page is of the new size; pages beyond the new keep size
    /// go when the next page is made.
    pub fn configure(&mut self, page_size: u64, keep_size: u64) {
        self.page_size = page_size;
        self.keep_size = keep_size;
    }

    /// Bytes of all pages.
    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.total
    }

    /// The page being written, if any.
    pub fn current(&self) -> Option<&Page> {
        self.pages.back()
    }

    pub fn page(&self, id: u64) -> Option<&Page> {
        self.pages.iter().find(|p| p.id == id)
    }

    /// Writes a record to the current page, or to a new one when it does
    /// not fit; returns its page and offset. `dropped` gets the pages
    /// deleted to stay within the keep size (oldest first).
    /// `serial` orders it among the ring's records for recovery; `history`
    /// goes in a new page's header.
    pub fn write(&mut self, record: (Seqno, u64, Kind, bool), payload: &[u8], history: Uuid, dropped: &mut Vec<u64>) -> io::Result<(u64, u64)> {
        let (seqno, serial, kind, certified) = record;
        let size = record_size(payload.len());
        if self.pages.back().is_none_or(|p| p.full_after(payload.len())) {
            self.open_page(size, history)?;
            self.cleanup(dropped);
        }
        let page = self.pages.back_mut().expect("a page was just opened");
        let header = RecordHeader { seqno, serial, kind, certified, len: payload.len() as u32 };
        write_record(&page.medium, page.nonce, page.head, &header, payload)?;
        let offset = page.head;
        page.head += size;
        Ok((page.id, offset))
    }

    /// Deletes every page (the cache starts afresh).
    pub fn reset(&mut self, dropped: &mut Vec<u64>) {
        while let Some(p) = self.pages.pop_front() {
            self.drop_page(p, dropped);
        }
    }

    fn open_page(&mut self, record: u64, history: Uuid) -> io::Result<()> {
        // The records' room; the file header comes on top.
        let size = self.page_size.max(record);
        let (path, medium) = match &self.dir {
            Some(dir) => {
                let path = dir.join(format!("{}{:06}", PREFIX, self.count));
                (Some(path.clone()), Medium::File(create(&path)?))
            }
            None => (None, Medium::Memory(Mutex::new(Vec::new()))),
        };
        if let Some(path) = &path {
            log::info!("Created gcache overflow page {} of {} bytes", path.display(), size);
        }
        let header = FileHeader { history, nonce: random_nonce(), size: FILE_HEADER + size };
        medium.write_at(&header.encode(), 0)?;
        let page = Page { id: self.count, path, medium: Arc::new(medium), nonce: header.nonce, size, head: FILE_HEADER };
        self.count += 1;
        self.total += size;
        self.pages.push_back(page);
        Ok(())
    }

    /// Galera's rule: the oldest pages go while all of them together
    /// exceed the keep size; the one being written stays.
    fn cleanup(&mut self, dropped: &mut Vec<u64>) {
        while self.total > self.keep_size && self.pages.len() > 1 {
            let oldest = self.pages.pop_front().expect("more than one page");
            self.drop_page(oldest, dropped);
        }
    }

    /// A reader may still hold the page's medium (an IST in progress):
    /// the file goes from the directory now and from the disk when that
    /// reader lets go of it.
    fn drop_page(&mut self, page: Page, dropped: &mut Vec<u64>) {
        self.total -= page.size;
        dropped.push(page.id);
        if let Some(path) = &page.path {
            remove(path);
        }
    }
}

/// A page file of the previous run: its header must be of `history` and
/// its length what the header says (a page is written front to back, so
/// a crash leaves it whole but for its last record, which the scan
/// skips).
fn recover_page(id: u64, path: &Path, history: Uuid) -> Result<(Page, Vec<Found>), String> {
    let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let medium = Medium::File(file);
    let mut head = [0u8; 64];
    medium.read_at(&mut head, 0).map_err(|e| format!("reading its header: {}", e))?;
    let header = FileHeader::decode(&head)?;
    if header.history != history {
        return Err(format!("it holds seqnos of history {}", header.history));
    }
    if header.size < len {
        return Err(format!("it holds {} bytes, its header says {}", len, header.size));
    }
    // Written front to back: what a crash cut short reads as zeros.
    let header = FileHeader { size: len, ..header };
    let records = scan(&medium, &header).map_err(|e| format!("scanning it: {}", e))?;
    let end = records.iter().map(|r| r.offset + record_size(r.header.len as usize)).max().unwrap_or(FILE_HEADER);
    // Full: what follows goes to a new page.
    let size = len.max(end).saturating_sub(FILE_HEADER);
    let page = Page { id, path: Some(path.to_path_buf()), medium: Arc::new(medium), nonce: header.nonce, size, head: FILE_HEADER + size };
    Ok((page, records))
}

/// The page files in `dir`, by id.
fn page_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            is_page_name(&name).then(|| name[PREFIX.len()..].parse().ok().map(|id| (id, e.path())))?
        })
        .collect();
    files.sort();
    files
}

fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).create(true).truncate(true).mode(0o600).open(path)
}

fn remove(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => log::info!("Deleted gcache overflow page {}", path.display()),
        Err(e) => log::error!("Failed to remove gcache overflow page {}: {}", path.display(), e),
    }
}

/// `gcache.page.` and six or more digits: nothing else in the directory
/// (the data directory, by default) is ever deleted.
fn is_page_name(name: &str) -> bool {
    name.strip_prefix(PREFIX).is_some_and(|n| n.len() >= 6 && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_page_files_are_page_files() {
        assert!(is_page_name("gcache.page.000000") && is_page_name("gcache.page.1234567"));
        for other in ["galera.cache", "gcache.page.", "gcache.page.12", "gcache.page.00000x", "xgcache.page.000000", "ibdata1"] {
            assert!(!is_page_name(other), "{}", other);
        }
    }
}
