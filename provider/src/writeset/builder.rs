//! Collects a local transaction's keys and data between `append_key` /
//! `append_data` and `certify`.

use std::collections::HashMap;

use bytes::Bytes;

use super::{Key, KeyKind, WriteSet, MAX_KEY_PARTS, MAX_KEY_PART_LEN};
use crate::gtid::{Seqno, Uuid};

#[derive(Debug, PartialEq, Eq)]
pub enum AppendError {
    /// The writeset would exceed `repl.max_ws_size`.
    SizeExceeded { size: usize, limit: usize },
    /// A key the encoding cannot carry (too many or too long parts).
    BadKey(&'static str),
}

/// Bytes a key costs in the encoding: kind, part count, lengths, parts.
fn key_cost(parts: &[Bytes]) -> usize {
    2 + parts.iter().map(|p| 2 + p.len()).sum::<usize>()
}

/// Header and checksum bytes every writeset carries.
const FIXED_COST: usize = 4 + 4 + 16 + 8 + 8 + 8 + 4 + 4 + 4;

#[derive(Default, Debug)]
pub struct Builder {
    keys: Vec<Key>,
    /// Index in `keys` by a hash of the parts: MariaDB appends the same
    /// row key again for every statement that touches it. A hash, not a
    /// copy of the parts: a 500,000-row UPDATE appends 500,000 keys. On a
    /// collision the newer key is kept apart (expanded keys are merged by
    /// certification anyway).
    seen: HashMap<u64, usize, fxhash::FxBuildHasher>,
    data: Vec<u8>,
    size: usize,
}

impl Builder {
    pub fn new() -> Builder {
        Builder { size: FIXED_COST, ..Default::default() }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.data.is_empty()
    }

    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    pub fn key_bytes(&self) -> usize {
        self.keys.iter().map(|k| key_cost(&k.parts)).sum()
    }

    pub fn data_len(&self) -> usize {
        self.data.len()
    }

    /// Adds a key; a key already present keeps the stronger kind.
    pub fn append_key(&mut self, parts: Vec<Bytes>, kind: KeyKind, limit: usize) -> Result<(), AppendError> {
        if parts.len() > MAX_KEY_PARTS {
            return Err(AppendError::BadKey("too many key parts"));
        }
        if parts.iter().any(|p| p.len() > MAX_KEY_PART_LEN) {
            return Err(AppendError::BadKey("key part longer than 65535 bytes"));
        }
        let hash = fxhash::hash64(&parts);
        match self.seen.get(&hash) {
            Some(&i) if self.keys[i].parts == parts => {
                self.keys[i].kind = self.keys[i].kind.max(kind);
                return Ok(());
            }
            Some(_) => {}
            None => {
                self.seen.insert(hash, self.keys.len());
            }
        }
        self.grow(key_cost(&parts), limit)?;
        self.keys.push(Key { kind, parts });
        Ok(())
    }

    /// Appends data; several calls concatenate (the API allows it, and the
    /// server then sees one buffer in `apply_cb`).
    pub fn append_data(&mut self, bytes: &[u8], limit: usize) -> Result<(), AppendError> {
        self.grow(bytes.len(), limit)?;
        self.data.extend_from_slice(bytes);
        Ok(())
    }

    fn grow(&mut self, by: usize, limit: usize) -> Result<(), AppendError> {
        let size = self.size.saturating_add(by);
        if size > limit {
            return Err(AppendError::SizeExceeded { size, limit });
        }
        self.size = size;
        Ok(())
    }

    /// Finishes the writeset and leaves the builder empty for the next
    /// streaming fragment.
    pub fn take(&mut self, flags: u32, source: Uuid, trx_id: u64, conn_id: u64, last_seen: Seqno) -> WriteSet {
        let keys = std::mem::take(&mut self.keys);
        let data = Bytes::from(std::mem::take(&mut self.data));
        self.seen.clear();
        let ws = WriteSet::new(flags, source, trx_id, conn_id, last_seen, keys, data);
        debug_assert_eq!(ws.encoded_len(), self.size);
        self.size = FIXED_COST;
        ws
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIG: usize = usize::MAX;

    fn parts(v: &[&str]) -> Vec<Bytes> {
        v.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    #[test]
    fn duplicate_keys_keep_the_stronger_kind() {
        let mut b = Builder::new();
        b.append_key(parts(&["d", "t", "1"]), KeyKind::Reference, BIG).unwrap();
        b.append_key(parts(&["d", "t", "1"]), KeyKind::Update, BIG).unwrap();
        b.append_key(parts(&["d", "t", "1"]), KeyKind::Shared, BIG).unwrap();
        assert_eq!(b.key_count(), 1);
        let ws = b.take(0, Uuid::NIL, 1, 1, 0);
        assert_eq!(ws.keys[0].kind, KeyKind::Update);
    }

    #[test]
    fn size_limit_counts_the_whole_encoding() {
        let mut b = Builder::new();
        let limit = FIXED_COST + 10;
        b.append_data(b"0123456789", limit).unwrap();
        assert!(matches!(b.append_data(b"x", limit), Err(AppendError::SizeExceeded { .. })));
        let ws = b.take(0, Uuid::NIL, 1, 1, 0);
        assert_eq!(ws.encoded_len(), limit);
        assert!(b.is_empty());
    }

    #[test]
    fn data_calls_concatenate_and_take_resets() {
        let mut b = Builder::new();
        b.append_data(b"ab", BIG).unwrap();
        b.append_data(b"cd", BIG).unwrap();
        b.append_key(parts(&["d"]), KeyKind::Exclusive, BIG).unwrap();
        let ws = b.take(0, Uuid::NIL, 1, 1, 0);
        assert_eq!(ws.data(), b"abcd");
        assert!(b.is_empty());
        b.append_key(parts(&["d"]), KeyKind::Shared, BIG).unwrap();
        assert_eq!(b.key_count(), 1);
    }
}
