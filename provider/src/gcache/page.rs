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
//! server's resident memory. Like Galera's, pages do not survive a
//! restart: the ones a previous run left are deleted when the cache opens.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::record::{record_size, Kind, RecordHeader};
use super::ring::{random_nonce, write_record, Medium};
use crate::gtid::Seqno;
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

impl Pages {
    pub fn new(dir: Option<PathBuf>) -> Pages {
        Pages { dir, page_size: PAGE_SIZE, keep_size: 0, count: 0, pages: VecDeque::new(), total: 0 }
    }

    /// Deletes the pages a previous run left in `dir` (they are never
    /// read again).
    pub fn in_dir(dir: &Path) -> Pages {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if is_page_name(&entry.file_name().to_string_lossy()) {
                remove(&entry.path());
            }
        }
        Pages::new(Some(dir.to_path_buf()))
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

    pub fn page(&self, id: u64) -> Option<&Page> {
        self.pages.iter().find(|p| p.id == id)
    }

    /// Writes a record to the current page, or to a new one when it does
    /// not fit; returns its page and offset. `dropped` gets the pages
    /// deleted to stay within the keep size (oldest first).
    pub fn write(&mut self, seqno: Seqno, kind: Kind, certified: bool, payload: &[u8], dropped: &mut Vec<u64>) -> io::Result<(u64, u64)> {
        let size = record_size(payload.len());
        if self.pages.back().is_none_or(|p| p.head + size > p.size) {
            self.open_page(size)?;
            self.cleanup(dropped);
        }
        let page = self.pages.back_mut().expect("a page was just opened");
        let header = RecordHeader { seqno, serial: 0, kind, certified, len: payload.len() as u32 };
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

    fn open_page(&mut self, record: u64) -> io::Result<()> {
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
        let page = Page { id: self.count, path, medium: Arc::new(medium), nonce: random_nonce(), size, head: 0 };
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
