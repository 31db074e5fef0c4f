//! The two encodings of the gcache file, little-endian:
//!
//! ```text
//! file header, at offset 0 (FILE_HEADER bytes are reserved for it):
//!   magic "LSGCACHE" | version u32 | 0 u32 | history 16 | nonce u64 | size u64 | crc32c u32
//! record, 8-byte aligned, anywhere after the file header:
//!   magic "LSgc" | kind u8 | flags u8 | 0 u16 | seqno i64 | serial u64 | len u32 | crc32c u32 | payload
//! ```
//!
//! A record's crc covers the file's nonce, its header and its payload. The
//! nonce is new whenever the file header is written (a new history, or the
//! cache cleared), so that records written before no longer verify and
//! recovery never mistakes them for the current history's; and a writeset
//! whose bytes happen to look like a record cannot pass for one without it.
//! `serial` counts the records written to the file: the highest one was
//! written last, which is where writing resumes after a restart.

use crate::gtid::{Seqno, Uuid};

/// Bytes at the start of the file that belong to its header.
pub const FILE_HEADER: u64 = 512;
pub const RECORD_HEADER: usize = 32;
/// Records start at multiples of this (recovery looks for them there).
pub const ALIGN: u64 = 8;

const FILE_MAGIC: &[u8; 8] = b"LSGCACHE";
pub const VERSION: u32 = 1;
const FILE_HEADER_LEN: usize = 52;
const RECORD_MAGIC: &[u8; 4] = b"LSgc";
const CERTIFIED: u8 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The history the records' seqnos belong to.
    pub history: Uuid,
    pub nonce: u64,
    /// The size of the whole file.
    pub size: u64,
}

impl FileHeader {
    pub fn encode(&self) -> [u8; FILE_HEADER_LEN] {
        let mut b = [0u8; FILE_HEADER_LEN];
        b[..8].copy_from_slice(FILE_MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[16..32].copy_from_slice(&self.history.0);
        b[32..40].copy_from_slice(&self.nonce.to_le_bytes());
        b[40..48].copy_from_slice(&self.size.to_le_bytes());
        let crc = crc32c::crc32c(&b[..48]);
        b[48..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The header at the start of `buf`, or why it is not one of ours.
    pub fn decode(buf: &[u8]) -> Result<FileHeader, String> {
        if buf.len() < FILE_HEADER_LEN || &buf[..8] != FILE_MAGIC {
            return Err("not a lockstep gcache file".into());
        }
        let version = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(format!("format version {} (this provider writes {})", version, VERSION));
        }
        if crc32c::crc32c(&buf[..48]).to_le_bytes() != buf[48..52] {
            return Err("the file header's checksum does not match".into());
        }
        Ok(FileHeader {
            history: Uuid(buf[16..32].try_into().expect("16 bytes")),
            nonce: u64::from_le_bytes(buf[32..40].try_into().expect("8 bytes")),
            size: u64::from_le_bytes(buf[40..48].try_into().expect("8 bytes")),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Writeset,
    /// A primary configuration change (no payload).
    View,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub seqno: Seqno,
    pub serial: u64,
    pub kind: Kind,
    pub certified: bool,
    pub len: u32,
}

impl RecordHeader {
    pub fn encode(&self, nonce: u64, payload: &[u8]) -> [u8; RECORD_HEADER] {
        debug_assert_eq!(payload.len(), self.len as usize);
        let mut b = [0u8; RECORD_HEADER];
        b[..4].copy_from_slice(RECORD_MAGIC);
        b[4] = match self.kind {
            Kind::Writeset => 1,
            Kind::View => 2,
        };
        b[5] = if self.certified { CERTIFIED } else { 0 };
        b[8..16].copy_from_slice(&self.seqno.to_le_bytes());
        b[16..24].copy_from_slice(&self.serial.to_le_bytes());
        b[24..28].copy_from_slice(&self.len.to_le_bytes());
        let crc = checksum(nonce, &b[..28], payload);
        b[28..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// A header that looks like one (magic, kind); its checksum needs the
    /// payload: see [`RecordHeader::verify`].
    pub fn decode(b: &[u8]) -> Option<RecordHeader> {
        if b.len() < RECORD_HEADER || &b[..4] != RECORD_MAGIC || b[5] & !CERTIFIED != 0 {
            return None;
        }
        let kind = match b[4] {
            1 => Kind::Writeset,
            2 => Kind::View,
            _ => return None,
        };
        Some(RecordHeader {
            seqno: i64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
            serial: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
            kind,
            certified: b[5] & CERTIFIED != 0,
            len: u32::from_le_bytes(b[24..28].try_into().expect("4 bytes")),
        })
    }

    /// Whether `record` (header and payload, as read) was written whole
    /// under `nonce`.
    pub fn verify(record: &[u8], nonce: u64) -> bool {
        if record.len() < RECORD_HEADER {
            return false;
        }
        let (head, payload) = record.split_at(RECORD_HEADER);
        checksum(nonce, &head[..28], payload).to_le_bytes() == head[28..32]
    }
}

fn checksum(nonce: u64, head: &[u8], payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&nonce.to_le_bytes()), head);
    crc32c::crc32c_append(crc, payload)
}

/// The bytes a record with `len` bytes of payload takes in the ring.
pub fn record_size(len: usize) -> u64 {
    (RECORD_HEADER as u64 + len as u64).next_multiple_of(ALIGN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_verifies_under_its_nonce_only() {
        let h = RecordHeader { seqno: 42, serial: 7, kind: Kind::Writeset, certified: true, len: 3 };
        let mut rec = h.encode(99, b"abc").to_vec();
        rec.extend_from_slice(b"abc");
        assert_eq!(RecordHeader::decode(&rec), Some(h));
        assert!(RecordHeader::verify(&rec, 99));
        assert!(!RecordHeader::verify(&rec, 98), "written before the file header changed");
        rec[RECORD_HEADER + 1] ^= 1;
        assert!(!RecordHeader::verify(&rec, 99), "a torn payload");
    }

    #[test]
    fn a_file_header_round_trips_and_rejects_strangers() {
        let h = FileHeader { history: Uuid::random(), nonce: 5, size: 1 << 20 };
        assert_eq!(FileHeader::decode(&h.encode()), Ok(h));
        let mut bad = h.encode();
        bad[20] ^= 1;
        assert!(FileHeader::decode(&bad).is_err());
        assert!(FileHeader::decode(b"GALERA gcache preamble, not ours at all....................").is_err());
        assert_eq!(record_size(0), 32);
        assert_eq!(record_size(1), 40);
    }
}
