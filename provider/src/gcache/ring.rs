//! The ring buffer: a file of fixed size whose header names the history,
//! followed by records written one after the other; when the next record
//! does not fit before the end, writing goes on from the start. A record
//! is written as it is cached, header then payload (no user-space
//! buffering, no fsync: a killed server loses nothing it wrote, as with
//! Galera's gcache, which syncs no more).
//!
//! The ring knows where its records are, in the order the write position
//! will reach them, and reports those it overwrites; what they mean (seqno
//! runs) is the cache's business (`mod.rs`). When no file can be used the
//! same ring lives in memory.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use bytes::Bytes;

use super::record::{record_size, FileHeader, Kind, RecordHeader, ALIGN, FILE_HEADER, RECORD_HEADER};
use crate::gtid::{Seqno, Uuid};

/// Where the ring's bytes are.
pub enum Medium {
    File(File),
    /// The file mapped into memory (see `Medium::mapped`).
    Mapped { map: Mutex<memmap2::MmapMut>, file: File },
    /// Grows up to the ring's size as it is written.
    Memory(Mutex<Vec<u8>>),
}

impl Medium {
    /// The file, mapped when that is safe. Every ordered seqno is written
    /// here on the group thread, where every commit of the cluster waits:
    /// through the file system it was two system calls and a fifth of
    /// that thread's time under a sysbench load. Only a file whose
    /// `size` bytes are allocated on disk is mapped: writing to a hole of
    /// a mapping on a full disk is a SIGBUS, which would kill mariadbd.
    pub fn mapped(file: File, size: u64) -> Medium {
        // SAFETY: a valid descriptor; posix_fallocate only allocates the
        // file's blocks (it keeps what they hold).
        if unsafe { libc::posix_fallocate(std::os::fd::AsRawFd::as_raw_fd(&file), 0, size as libc::off_t) } != 0 {
            return Medium::File(file);
        }
        // SAFETY: the file is this node's own gcache, opened read-write
        // and sized above; nothing else of this process maps or resizes
        // it, and every access goes through the mutex.
        match unsafe { memmap2::MmapMut::map_mut(&file) } {
            Ok(map) if map.len() as u64 == size => Medium::Mapped { map: Mutex::new(map), file },
            _ => Medium::File(file),
        }
    }

    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Medium::File(f) => f.read_exact_at(buf, offset),
            Medium::Mapped { map, .. } => {
                let map = map.lock().unwrap_or_else(|e| e.into_inner());
                buf.copy_from_slice(&map[within(offset, buf.len(), map.len())?]);
                Ok(())
            }
            Medium::Memory(m) => {
                let m = m.lock().unwrap_or_else(|e| e.into_inner());
                buf.fill(0);
                let start = (offset as usize).min(m.len());
                let end = (offset as usize + buf.len()).min(m.len());
                buf[..end - start].copy_from_slice(&m[start..end]);
                Ok(())
            }
        }
    }

    /// Puts what was written on disk (`lockstep.log_sync`). For the
    /// mapping too: Linux's fdatasync writes back the file's pages dirtied
    /// through a shared mapping (msync's MS_SYNC is the same call), and
    /// needs no lock the writers take.
    pub fn sync(&self) -> io::Result<()> {
        match self {
            Medium::File(f) | Medium::Mapped { file: f, .. } => f.sync_data(),
            Medium::Memory(_) => Ok(()),
        }
    }

    pub(super) fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        match self {
            Medium::File(f) => f.write_all_at(buf, offset),
            Medium::Mapped { map, .. } => {
                let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
                let range = within(offset, buf.len(), map.len())?;
                map[range].copy_from_slice(buf);
                Ok(())
            }
            Medium::Memory(m) => {
                let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
                let end = offset as usize + buf.len();
                if m.len() < end {
                    m.resize(end, 0);
                }
                m[offset as usize..end].copy_from_slice(buf);
                Ok(())
            }
        }
    }
}

/// The bytes at `offset` of a mapping of `len`, if it holds them all.
fn within(offset: u64, n: usize, len: usize) -> io::Result<std::ops::Range<usize>> {
    let start = usize::try_from(offset).ok().filter(|s| s.checked_add(n).is_some_and(|end| end <= len));
    start.map(|s| s..s + n).ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "beyond the end of the gcache file"))
}

/// A record in the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub offset: u64,
    pub seqno: Seqno,
}

/// A record recovery found intact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub offset: u64,
    pub header: RecordHeader,
}

pub struct Ring {
    medium: std::sync::Arc<Medium>,
    header: FileHeader,
    /// Where the next record goes.
    head: u64,
    next_serial: u64,
    /// Records the cache still uses, in the order `head` reaches them
    /// (oldest first).
    placed: VecDeque<Placed>,
}

impl Ring {
    /// An empty ring of `size` bytes (header included) for `history`.
    pub fn create(medium: Medium, size: u64, history: Uuid) -> io::Result<Ring> {
        let mut ring = Ring::resume(medium, FileHeader { history, nonce: 0, size }, None, &[], 0);
        ring.reset(history)?;
        Ok(ring)
    }

    /// An empty ring kept in memory.
    pub fn in_memory(size: u64, history: Uuid) -> Ring {
        let header = FileHeader { history, nonce: random_nonce(), size: size.max(FILE_HEADER) };
        Ring::resume(Medium::Memory(Mutex::new(Vec::new())), header, None, &[], 0)
    }

    /// The ring as a previous run left it: writing resumes after `newest`
    /// (the record written last), and `kept` (the records the cache goes
    /// on using) are overwritten in the order the write position meets
    /// them.
    /// `serials_from`: above every serial recovered (pages' too).
    pub fn resume(medium: Medium, header: FileHeader, newest: Option<&Found>, kept: &[Found], serials_from: u64) -> Ring {
        debug_assert!(header.size >= FILE_HEADER);
        let mut ring = Ring {
            medium: std::sync::Arc::new(medium),
            header,
            head: FILE_HEADER,
            next_serial: 0,
            placed: VecDeque::new(),
        };
        ring.next_serial = serials_from;
        if let Some(last) = newest {
            ring.next_serial = ring.next_serial.max(last.header.serial + 1);
            ring.head = last.offset + record_size(last.header.len as usize);
            if ring.head >= header.size {
                ring.head = FILE_HEADER;
            }
        }
        let mut placed: Vec<Placed> = kept.iter().map(|f| Placed { offset: f.offset, seqno: f.header.seqno }).collect();
        placed.sort_by_key(|p| ring.distance(p.offset));
        ring.placed = placed.into();
        ring
    }

    pub fn history(&self) -> Uuid {
        self.header.history
    }

    /// The serial of a record written elsewhere (an overflow page): one
    /// sequence over ring and pages tells recovery which of two records of
    /// a seqno was written last.
    pub fn take_serial(&mut self) -> u64 {
        self.next_serial += 1;
        self.next_serial - 1
    }

    pub fn nonce(&self) -> u64 {
        self.header.nonce
    }

    pub fn medium(&self) -> std::sync::Arc<Medium> {
        self.medium.clone()
    }

    /// The whole file's size.
    pub fn size(&self) -> u64 {
        self.header.size
    }

    /// Bytes available to records.
    pub fn capacity(&self) -> u64 {
        self.header.size - FILE_HEADER
    }

    /// Forgets every record (they no longer verify under the new nonce)
    /// and records `history` in the file header.
    pub fn reset(&mut self, history: Uuid) -> io::Result<()> {
        self.header = FileHeader { history, nonce: random_nonce(), ..self.header };
        self.placed.clear();
        self.medium.write_at(&self.header.encode(), 0)
    }

    /// Writes a record at the write position; `evicted` gets the records
    /// it overwrites (or skips at the end of the file), oldest first. The
    /// caller checks that the record fits the ring.
    pub fn write(&mut self, seqno: Seqno, kind: Kind, certified: bool, payload: &[u8], evicted: &mut Vec<Placed>) -> io::Result<u64> {
        let size = record_size(payload.len());
        assert!(size <= self.capacity(), "a record larger than the ring");
        let wraps = self.head + size > self.header.size;
        // The bytes skipped at the end count as overwritten: the records
        // there are older than any that follow the start.
        let reach = if wraps { self.header.size - self.head + size } else { size };
        while let Some(p) = self.placed.front().copied() {
            if self.distance(p.offset) >= reach {
                break;
            }
            evicted.push(p);
            self.placed.pop_front();
        }
        let offset = if wraps { FILE_HEADER } else { self.head };
        let header = RecordHeader { seqno, serial: self.next_serial, kind, certified, len: payload.len() as u32 };
        write_record(&self.medium, self.header.nonce, offset, &header, payload)?;
        self.next_serial += 1;
        self.head = offset + size;
        if self.head >= self.header.size {
            self.head = FILE_HEADER;
        }
        self.placed.push_back(Placed { offset, seqno });
        Ok(offset)
    }

    /// Makes the record at `offset` unrecognisable, so that recovery
    /// never finds it again.
    pub fn erase(&mut self, offset: u64) -> io::Result<()> {
        self.medium.write_at(&[0; 4], offset)
    }

    /// How far the write position has to go to reach `offset`.
    fn distance(&self, offset: u64) -> u64 {
        if offset >= self.head {
            offset - self.head
        } else {
            self.header.size - self.head + offset - FILE_HEADER
        }
    }
}

/// A record, header then payload, at `offset` of `medium`.
pub(super) fn write_record(medium: &Medium, nonce: u64, offset: u64, header: &RecordHeader, payload: &[u8]) -> io::Result<()> {
    medium.write_at(&header.encode(nonce, payload), offset)?;
    medium.write_at(payload, offset + RECORD_HEADER as u64)
}

pub(super) fn random_nonce() -> u64 {
    let bytes = Uuid::random().0;
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

/// Reads back the record of `seqno` at `offset`, checking that it is still
/// the one written there under `nonce` (the ring may have moved on since
/// the caller looked it up).
pub fn read(medium: &Medium, nonce: u64, offset: u64, seqno: Seqno, len: u32) -> Result<(RecordHeader, Bytes), String> {
    let mut buf = vec![0u8; RECORD_HEADER + len as usize];
    medium.read_at(&mut buf, offset).map_err(|e| format!("reading seqno {} at offset {}: {}", seqno, offset, e))?;
    match RecordHeader::decode(&buf) {
        Some(h) if h.seqno == seqno && h.len == len && RecordHeader::verify(&buf, nonce) => {
            Ok((h, Bytes::from(buf).slice(RECORD_HEADER..)))
        }
        _ => Err(format!("the record of seqno {} at offset {} was overwritten or is damaged", seqno, offset)),
    }
}

/// Every intact record of the file whose header is `header`: records are
/// looked for at every aligned offset that is not inside one already found,
/// so that a torn or overwritten record costs only itself.
pub fn scan(medium: &Medium, header: &FileHeader) -> io::Result<Vec<Found>> {
    let mut found = Vec::new();
    let mut window = Window::default();
    let end = header.size;
    let mut pos = FILE_HEADER;
    // Bytes read for candidates that turn out damaged: what is left of a
    // torn record may hold many look-alike headers (it is user data), and
    // reading each one's claimed length must not make startup quadratic.
    let mut wasted_budget = 4 * end;
    while pos + RECORD_HEADER as u64 <= end {
        let head = window.get(medium, pos, RECORD_HEADER, end)?;
        if let Some(h) = RecordHeader::decode(head) {
            let size = record_size(h.len as usize);
            if pos + size <= end {
                let record = window.get(medium, pos, RECORD_HEADER + h.len as usize, end)?;
                if RecordHeader::verify(record, header.nonce) {
                    found.push(Found { offset: pos, header: h });
                    pos += size;
                    continue;
                }
                wasted_budget = wasted_budget.checked_sub(size).ok_or_else(|| io::Error::other("too many damaged records"))?;
            }
        }
        pos += ALIGN;
    }
    Ok(found)
}

/// A scan's read-ahead: whole megabytes at a time, not a read per offset.
#[derive(Default)]
struct Window {
    start: u64,
    buf: Vec<u8>,
}

const WINDOW: usize = 1 << 20;

impl Window {
    fn get(&mut self, medium: &Medium, pos: u64, len: usize, end: u64) -> io::Result<&[u8]> {
        let covered = pos >= self.start && pos + len as u64 <= self.start + self.buf.len() as u64;
        if !covered {
            let want = (len.max(WINDOW) as u64).min(end - pos) as usize;
            self.buf.resize(want, 0);
            medium.read_at(&mut self.buf, pos)?;
            self.start = pos;
        }
        let from = (pos - self.start) as usize;
        Ok(&self.buf[from..from + len])
    }
}
