//! The writeset: what one transaction (or TOI statement, or streaming
//! fragment) replicates, in a versioned, checksummed encoding.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! magic "LSW1" | flags u32 | source uuid 16 | trx_id u64 | conn_id u64
//! | last_seen i64 | key count u32 | keys | data len u32 | data | crc32c u32
//! key := kind u8 | part count u8 | (part len u16 | part bytes)*
//! ```
//!
//! The checksum covers everything before it. A decoded writeset keeps the
//! encoded buffer and hands out its data by reference: the bytes MariaDB
//! gave to `append_data` reach `apply_cb` on every node without a copy after
//! the network.

mod builder;

pub use builder::{AppendError, Builder, MAX_ENCODED};

use bytes::Bytes;

use crate::gtid::{Seqno, Uuid};
use crate::wire::{Reader, WireError};

/// Writeset flags: the wsrep API's bit values, because they travel from the
/// originator's `certify` to every node's `apply_cb` unchanged.
pub mod flags {
    pub const TRX_END: u32 = 1 << 0;
    pub const ROLLBACK: u32 = 1 << 1;
    pub const ISOLATION: u32 = 1 << 2;
    pub const PA_UNSAFE: u32 = 1 << 3;
    pub const COMMUTATIVE: u32 = 1 << 4;
    pub const NATIVE: u32 = 1 << 5;
    pub const TRX_START: u32 = 1 << 6;
    pub const TRX_PREPARE: u32 = 1 << 7;
    pub const SNAPSHOT: u32 = 1 << 8;
    pub const IMPLICIT_DEPS: u32 = 1 << 9;
    /// Every flag the API defines; anything else is refused on input.
    pub const MASK: u32 = (IMPLICIT_DEPS << 1) - 1;
}

/// How a key is used, weakest first: the order matters, a key appended
/// twice keeps the stronger kind.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub enum KeyKind {
    Shared = 0,
    Reference = 1,
    Update = 2,
    Exclusive = 3,
}

impl KeyKind {
    pub const ALL: [KeyKind; 4] = [KeyKind::Shared, KeyKind::Reference, KeyKind::Update, KeyKind::Exclusive];

    pub fn from_wire(v: u8) -> Option<KeyKind> {
        KeyKind::ALL.get(v as usize).copied()
    }
}

/// A certification key: up to a few parts (MariaDB sends `[db]`,
/// `[db][table]` or `[db][table][row]`), opaque bytes.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Key {
    pub kind: KeyKind,
    /// Slices of one buffer per key (appended) or of the writeset's
    /// payload (decoded): a 500,000-row writeset has 1.5 million parts,
    /// and an allocation each cost its decode on the group thread (while
    /// every commit waited) and on its drop.
    pub parts: Vec<Bytes>,
}

/// Limits that keep a decoder from being driven into huge allocations by a
/// corrupt or hostile buffer.
pub const MAX_KEY_PARTS: usize = 255;
pub const MAX_KEY_PART_LEN: usize = u16::MAX as usize;

const MAGIC: &[u8; 4] = b"LSW1";

/// A decoded (or freshly built) writeset.
#[derive(Clone, Debug)]
pub struct WriteSet {
    pub flags: u32,
    pub source: Uuid,
    pub trx_id: u64,
    pub conn_id: u64,
    /// The originator's last committed seqno when it sent the writeset:
    /// the start of the certification interval.
    pub last_seen: Seqno,
    pub keys: Vec<Key>,
    data: Bytes,
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    Truncated,
    BadMagic,
    BadChecksum,
    BadKeyKind(u8),
    BadFlags(u32),
    TrailingBytes,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Truncated => write!(f, "writeset truncated"),
            DecodeError::BadMagic => write!(f, "not a lockstep writeset (bad magic or version)"),
            DecodeError::BadChecksum => write!(f, "writeset checksum mismatch"),
            DecodeError::BadKeyKind(k) => write!(f, "unknown key type {}", k),
            DecodeError::BadFlags(fl) => write!(f, "unknown writeset flags {:#x}", fl),
            DecodeError::TrailingBytes => write!(f, "bytes after writeset checksum"),
        }
    }
}

/// A writeset's fields are read by `wire::Reader`: running short is the
/// one error it can meet here, and the checksum has already passed.
impl From<WireError> for DecodeError {
    fn from(_: WireError) -> DecodeError {
        DecodeError::Truncated
    }
}

impl WriteSet {
    pub fn new(flags: u32, source: Uuid, trx_id: u64, conn_id: u64, last_seen: Seqno, keys: Vec<Key>, data: Bytes) -> WriteSet {
        WriteSet { flags, source, trx_id, conn_id, last_seen, keys, data }
    }

    pub fn data(&self) -> &[u8] {
        &self.data
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    pub fn is_toi(&self) -> bool {
        self.has(flags::ISOLATION)
    }

    /// Size of the encoding, computed without encoding (for max_ws_size
    /// checks and statistics).
    pub fn encoded_len(&self) -> usize {
        let keys: usize = self.keys.iter().map(|k| 2 + k.parts.iter().map(|p| 2 + p.len()).sum::<usize>()).sum();
        4 + 4 + 16 + 8 + 8 + 8 + 4 + keys + 4 + self.data.len() + 4
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.source.0);
        out.extend_from_slice(&self.trx_id.to_le_bytes());
        out.extend_from_slice(&self.conn_id.to_le_bytes());
        out.extend_from_slice(&self.last_seen.to_le_bytes());
        out.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for key in &self.keys {
            encode_key(key, &mut out);
        }
        out.extend_from_slice(&(self.data.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.data);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(out.len(), self.encoded_len());
        out
    }

    /// The encoding, which from now on also holds this writeset's data:
    /// a big writeset is then one buffer on its way through the group,
    /// not the builder's plus the one the network sends.
    pub fn encode_shared(&mut self) -> Bytes {
        let out = Bytes::from(self.encode());
        let start = out.len() - 4 - self.data.len();
        debug_assert_eq!(&out[start..out.len() - 4], &self.data[..]);
        self.data = out.slice(start..out.len() - 4);
        out
    }

    /// Decodes a buffer received from the group or read from the gcache.
    /// Never panics: every length is checked against what is left.
    pub fn decode(buf: Bytes) -> Result<WriteSet, DecodeError> {
        if buf.len() < 4 + 4 {
            return Err(DecodeError::Truncated);
        }
        let (body, crc) = buf.split_at(buf.len() - 4);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(if &buf[..4] == MAGIC { DecodeError::BadChecksum } else { DecodeError::BadMagic });
        }
        let mut r = Reader::new(body);
        if r.take(4)? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let flags = r.u32()?;
        if flags & !flags::MASK != 0 {
            return Err(DecodeError::BadFlags(flags));
        }
        let source = r.uuid()?;
        let trx_id = r.u64()?;
        let conn_id = r.u64()?;
        let last_seen = r.u64()? as i64;
        let key_count = r.u32()? as usize;
        let mut keys = Vec::with_capacity(key_count.min(body.len() / 2));
        for _ in 0..key_count {
            keys.push(decode_key(&mut r, &buf)?);
        }
        let data_len = r.u32()? as usize;
        let start = r.pos;
        r.take(data_len)?;
        if r.pos != body.len() {
            return Err(DecodeError::TrailingBytes);
        }
        let data = buf.slice(start..start + data_len);
        Ok(WriteSet { flags, source, trx_id, conn_id, last_seen, keys, data })
    }
}

fn encode_key(key: &Key, out: &mut Vec<u8>) {
    assert!(key.parts.len() <= MAX_KEY_PARTS, "builder bounds key parts");
    out.push(key.kind as u8);
    out.push(key.parts.len() as u8);
    for part in &key.parts {
        assert!(part.len() <= MAX_KEY_PART_LEN, "builder bounds key part length");
        out.extend_from_slice(&(part.len() as u16).to_le_bytes());
        out.extend_from_slice(part);
    }
}

/// A key of `r`, which reads `buf`: its parts are slices of `buf`.
fn decode_key(r: &mut Reader<'_>, buf: &Bytes) -> Result<Key, DecodeError> {
    let kind_byte = r.u8()?;
    let kind = KeyKind::from_wire(kind_byte).ok_or(DecodeError::BadKeyKind(kind_byte))?;
    let count = r.u8()? as usize;
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        let len = r.u16()? as usize;
        let start = r.pos;
        r.take(len)?;
        parts.push(buf.slice(start..start + len));
    }
    Ok(Key { kind, parts })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> WriteSet {
        let keys = vec![
            Key { kind: KeyKind::Exclusive, parts: vec![Bytes::from_static(b"d"), Bytes::from_static(b"t"), Bytes::from_static(&[0, 4, 0, 0, 0])] },
            Key { kind: KeyKind::Shared, parts: vec![Bytes::from_static(b"d"), Bytes::from_static(b"c")] },
            Key { kind: KeyKind::Shared, parts: vec![] },
        ];
        WriteSet::new(flags::TRX_START | flags::TRX_END, Uuid::random(), 16, 10, 8, keys, Bytes::from_static(b"binlog events"))
    }

    #[test]
    fn round_trip_keeps_every_field() {
        let ws = sample();
        let enc = ws.encode();
        assert_eq!(enc.len(), ws.encoded_len());
        let back = WriteSet::decode(Bytes::from(enc)).unwrap();
        assert_eq!(back.flags, ws.flags);
        assert_eq!(back.source, ws.source);
        assert_eq!((back.trx_id, back.conn_id, back.last_seen), (16, 10, 8));
        assert_eq!(back.keys, ws.keys);
        assert_eq!(back.data(), b"binlog events");
    }

    #[test]
    fn a_shared_encoding_holds_the_data_once() {
        let mut ws = sample();
        let enc = ws.encode_shared();
        assert_eq!(enc[..], ws.encode()[..]);
        let at = ws.data().as_ptr() as usize - enc.as_ptr() as usize;
        assert_eq!(&enc[at..at + ws.data().len()], b"binlog events", "the data is a view of the encoding");
        assert_eq!(WriteSet::decode(enc).unwrap().data(), b"binlog events");
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_refused() {
        let enc = sample().encode();
        for len in 0..enc.len() {
            assert!(WriteSet::decode(Bytes::copy_from_slice(&enc[..len])).is_err(), "len {}", len);
        }
        for i in 0..enc.len() {
            let mut bad = enc.clone();
            bad[i] ^= 0x5a;
            assert!(WriteSet::decode(Bytes::from(bad)).is_err(), "byte {}", i);
        }
    }

    #[test]
    fn unknown_flags_are_refused_even_with_a_valid_checksum() {
        let mut ws = sample();
        ws.flags = 1 << 20;
        assert_eq!(WriteSet::decode(Bytes::from(ws.encode())).unwrap_err(), DecodeError::BadFlags(1 << 20));
    }

    #[test]
    fn empty_data_and_no_keys_round_trip() {
        let ws = WriteSet::new(flags::ROLLBACK | flags::PA_UNSAFE, Uuid::NIL, 7, u64::MAX, -1, vec![], Bytes::new());
        let back = WriteSet::decode(Bytes::from(ws.encode())).unwrap();
        assert!(back.data().is_empty() && back.keys.is_empty());
        assert_eq!(back.conn_id, u64::MAX);
        assert_eq!(back.last_seen, -1);
    }
}
