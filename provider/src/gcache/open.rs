//! Opening the ring buffer file when the node starts: recovering what the
//! previous run left in it (`gcache.recover`), or starting it afresh. The
//! file is input like any other: a damaged or foreign one is recreated,
//! never trusted; and a node whose file cannot be created at all keeps
//! its cache in memory rather than fail to start.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use super::record::{FileHeader, FILE_HEADER};
use super::ring::{self, Found, Medium, Ring};
use super::run::{Run, Slot};
use super::page::Pages;
use super::Gcache;
use crate::gtid::{Seqno, Uuid};
use crate::log;

impl Gcache {
    /// The cache in the ring buffer file at `path`, `size` bytes; with
    /// `recover`, holding what a previous run cached there (and in its
    /// overflow pages).
    /// `anchor`: the data's position, when known (see `gap_free_tail`).
    pub fn open(path: &Path, size: usize, recover: bool, anchor: Option<Seqno>) -> Gcache {
        let size = (size as u64).max(FILE_HEADER);
        let place = path.display().to_string();
        let dir = path.parent().unwrap_or(Path::new("."));
        let file = match OpenOptions::new().read(true).write(true).create(true).mode(0o600).open(path) {
            Ok(f) => f,
            Err(e) => return Gcache::without_file(&place, size, e),
        };
        let why = match recover {
            true => match recover_file(&file, size) {
                Ok((header, found)) => {
                    let (pages, in_pages) = Pages::recover(dir, header.history);
                    return Gcache::recovered(Medium::mapped(file, size), (pages, in_pages), place, header, (found, anchor));
                }
                Err(why) => why,
            },
            false => "gcache.recover is off".to_string(),
        };
        // A note, as with Galera: a new node has no file to recover.
        log::info!("Skipped GCache ring buffer recovery: {}", why);
        let pages = Pages::in_dir(dir);
        match fresh(file, size) {
            Ok(ring) => Gcache::with_ring(ring, pages, place, Run::default()),
            Err(e) => Gcache::without_file(&place, size, e),
        }
    }

    fn without_file(place: &str, size: u64, e: io::Error) -> Gcache {
        log::error!("Cannot use the gcache ring buffer file {}: {}; the gcache is kept in memory (after a restart this node cannot serve IST)", place, e);
        Gcache::in_memory(size as usize)
    }

    /// A gap-free run of what the ring and the pages hold (see
    /// `gap_free_tail`); the pages it does not use go.
    fn recovered(medium: Medium, (mut pages, in_pages): (Pages, Vec<(u64, Found)>), place: String, header: FileHeader, (found, anchor): (Vec<Found>, Option<Seqno>)) -> Gcache {
        let serials_from = found.iter().chain(in_pages.iter().map(|(_, f)| f)).map(|f| f.header.serial + 1).max().unwrap_or(0);
        let newest = found.iter().max_by_key(|f| f.header.serial).copied();
        let all: Vec<(Option<u64>, Found)> = found.iter().map(|f| (None, *f)).chain(in_pages.iter().map(|(id, f)| (Some(*id), *f))).collect();
        let kept = gap_free_tail(&all, anchor);
        let mut run = Run::default();
        for (page, f) in &kept {
            let slot = Slot { page: *page, offset: f.offset, len: f.header.len, kind: f.header.kind, certified: f.header.certified };
            run.push(f.header.seqno, slot);
        }
        pages.retain(&kept.iter().filter_map(|(page, _)| *page).collect());
        match (run.first(), run.last()) {
            (Some(first), Some(last)) => log::info!(
                "Recovering GCache ring buffer: found {} seqnos {}-{} of history {} ({} records in the file, {} in overflow pages)",
                run.len(),
                first,
                last,
                header.history,
                found.len(),
                in_pages.len()
            ),
            _ => log::info!("Recovering GCache ring buffer: no seqnos of history {}", header.history),
        }
        let in_ring: Vec<Found> = kept.iter().filter(|(page, _)| page.is_none()).map(|(_, f)| *f).collect();
        let ring = Ring::resume(medium, header, newest.as_ref(), &in_ring, serials_from);
        Gcache::with_ring(ring, pages, place, run)
    }
}

/// The file's header and intact records, or why it cannot be recovered.
fn recover_file(file: &File, size: u64) -> Result<(FileHeader, Vec<Found>), String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len == 0 {
        return Err("no ring buffer file yet".into());
    }
    let mut head = [0u8; 64];
    file.read_exact_at(&mut head, 0).map_err(|e| format!("reading the file header: {}", e))?;
    let header = FileHeader::decode(&head)?;
    if header.size != size || len != size {
        return Err(format!("the file holds {} bytes, gcache.size is {}", len, size));
    }
    if header.history == Uuid::NIL {
        return Err("could not determine history UUID".into());
    }
    let medium = Medium::File(file.try_clone().map_err(|e| e.to_string())?);
    let found = ring::scan(&medium, &header).map_err(|e| format!("scanning the file: {}", e))?;
    Ok((header, found))
}

/// The records of a gap-free run of seqnos, in seqno order, each with
/// the page that holds it (None: the ring): the run that holds `anchor`
/// (the data's position, or the seqno after it), else the one that ends
/// at the highest seqno found. A seqno found twice (written again after a
/// restart) is taken from its latest record. The anchor matters after a
/// power cut: records written after the last sync may survive with gaps
/// between them, and the run they form above a gap is not the history's.
fn gap_free_tail(found: &[(Option<u64>, Found)], anchor: Option<Seqno>) -> Vec<(Option<u64>, Found)> {
    let mut latest: BTreeMap<Seqno, (Option<u64>, Found)> = BTreeMap::new();
    for (page, f) in found.iter().filter(|(_, f)| f.header.seqno >= 0) {
        let e = latest.entry(f.header.seqno).or_insert((*page, *f));
        if f.header.serial > e.1.header.serial {
            *e = (*page, *f);
        }
    }
    let start = anchor.and_then(|a| [a + 1, a].into_iter().find(|s| latest.contains_key(s)));
    let Some(top) = start.or_else(|| latest.keys().next_back().copied()) else { return Vec::new() };
    let mut top = top;
    while latest.contains_key(&(top + 1)) {
        top += 1;
    }
    let mut bottom = top;
    while latest.contains_key(&(bottom - 1)) {
        bottom -= 1;
    }
    latest.range(bottom..=top).map(|(_, f)| *f).collect()
}

/// Empties the file and gives it its size on disk now, so that a full
/// disk shows here and not at some later write.
fn fresh(file: File, size: u64) -> io::Result<Ring> {
    file.set_len(0)?;
    // SAFETY: a valid descriptor; posix_fallocate only sizes the file.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, size as libc::off_t) } {
        0 => {}
        libc::EOPNOTSUPP | libc::EINVAL => file.set_len(size)?,
        e => return Err(io::Error::from_raw_os_error(e)),
    }
    Ring::create(Medium::mapped(file, size), size, Uuid::NIL)
}
