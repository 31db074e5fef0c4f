//! Collects a local transaction's keys and data between `append_key` /
//! `append_data` and `certify`.

use std::collections::HashMap;

use bytes::Bytes;

use super::{Key, KeyKind, WriteSet, MAX_KEY_PARTS, MAX_KEY_PART_LEN};
use crate::gtid::{Seqno, Uuid};

#[derive(Debug, PartialEq, Eq)]
pub enum AppendError {
    /// The writeset would exceed `repl.max_ws_size` (`size` as Galera
    /// counts it), or the largest encoding a member assembles.
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

/// `repl.max_ws_size` is a limit operators and MariaDB's tests set
/// against Galera's sizes, which differ from our encoding's: a 64-byte
/// header and three record sets of 40 bytes (key, data, unordered) before
/// anything is appended; then the data as it is, and 8 bytes (its hash,
/// `repl.key_format=FLAT8`) for each key part not in the writeset yet,
/// where ours carries the parts whole. So a writeset is refused where
/// Galera refuses it (galera.MDEV-26597 sits a few bytes from the limit).
const GALERA_FIXED: usize = 64 + 3 * (24 + 16);
const GALERA_KEY_PART: usize = 8;

/// The largest encoding: what a member assembles (`group::pieces`). Our
/// keys may cost more than Galera's count, so the limit alone does not
/// bound it.
pub const MAX_ENCODED: usize = 4 << 30;

#[derive(Default, Debug)]
pub struct Builder {
    keys: Vec<Key>,
    /// Index in `keys` by a hash of the parts: MariaDB appends the same
    /// row key again for every statement that touches it. A hash, not a
    /// copy of the parts: a 500,000-row UPDATE appends 500,000 keys. On a
    /// collision the newer key is kept apart (expanded keys are merged by
    /// certification anyway).
    seen: HashMap<u64, usize, fxhash::FxBuildHasher>,
    /// Hashes of the key prefixes above the rows (`[db]`, `[db][table]`)
    /// counted so far, for Galera's size: a few per writeset.
    prefixes: std::collections::HashSet<u64, fxhash::FxBuildHasher>,
    data: Vec<u8>,
    /// Our encoding's length.
    size: usize,
    /// The size as Galera counts it, against `repl.max_ws_size`.
    counted: usize,
}

impl Builder {
    pub fn new() -> Builder {
        Builder { size: FIXED_COST, counted: GALERA_FIXED, ..Default::default() }
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
    pub fn append_key(&mut self, parts: Vec<Bytes>, kind: KeyKind) -> Result<(), AppendError> {
        if parts.len() > MAX_KEY_PARTS {
            return Err(AppendError::BadKey("too many key parts"));
        }
        if parts.iter().any(|p| p.len() > MAX_KEY_PART_LEN) {
            return Err(AppendError::BadKey("key part longer than 65535 bytes"));
        }
        let hash = fxhash::hash64(&parts);
        match self.seen.get(&hash) {
            Some(&i) if self.keys[i].parts == parts => {
                // Galera adds a stronger copy of the key; we keep one.
                let stronger = kind > self.keys[i].kind;
                self.grow(0, if stronger { GALERA_KEY_PART } else { 0 })?;
                self.keys[i].kind = self.keys[i].kind.max(kind);
                return Ok(());
            }
            Some(_) => {}
            None => {
                self.seen.insert(hash, self.keys.len());
            }
        }
        // Each prefix hashed once (this runs for every row): recorded, as
        // `seen` is, before the size check, which only an encoding past
        // MAX_ENCODED fails, and that ends the transaction.
        let mut new_prefixes = 0;
        for n in 1..parts.len() {
            new_prefixes += usize::from(self.prefixes.insert(fxhash::hash64(&parts[..n])));
        }
        self.grow(key_cost(&parts), (new_prefixes + 1) * GALERA_KEY_PART)?;
        self.keys.push(Key { kind, parts });
        Ok(())
    }

    /// Appends data; several calls concatenate (the API allows it, and the
    /// server then sees one buffer in `apply_cb`).
    pub fn append_data(&mut self, bytes: &[u8]) -> Result<(), AppendError> {
        self.grow(bytes.len(), bytes.len())?;
        self.data.extend_from_slice(bytes);
        Ok(())
    }

    /// Our encoding grows by `by`, Galera's count by `counted`.
    fn grow(&mut self, by: usize, counted: usize) -> Result<(), AppendError> {
        let size = self.size.saturating_add(by);
        if size > MAX_ENCODED {
            return Err(AppendError::SizeExceeded { size, limit: MAX_ENCODED });
        }
        (self.size, self.counted) = (size, self.counted.saturating_add(counted));
        Ok(())
    }

    /// Whether the writeset fits `repl.max_ws_size`. Asked when it is
    /// sent, as Galera does: appends never fail on the limit (the server
    /// would log a failed append as its own warning and dump the events).
    pub fn check(&self, limit: usize) -> Result<(), AppendError> {
        match self.counted > limit {
            true => Err(AppendError::SizeExceeded { size: self.counted, limit }),
            false => Ok(()),
        }
    }

    /// Finishes the writeset and leaves the builder empty for the next
    /// streaming fragment.
    pub fn take(&mut self, flags: u32, source: Uuid, trx_id: u64, conn_id: u64, last_seen: Seqno) -> WriteSet {
        let keys = std::mem::take(&mut self.keys);
        let data = Bytes::from(std::mem::take(&mut self.data));
        self.seen.clear();
        self.prefixes.clear();
        let ws = WriteSet::new(flags, source, trx_id, conn_id, last_seen, keys, data);
        debug_assert_eq!(ws.encoded_len(), self.size);
        (self.size, self.counted) = (FIXED_COST, GALERA_FIXED);
        ws
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(v: &[&str]) -> Vec<Bytes> {
        v.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    #[test]
    fn duplicate_keys_keep_the_stronger_kind() {
        let mut b = Builder::new();
        b.append_key(parts(&["d", "t", "1"]), KeyKind::Reference).unwrap();
        b.append_key(parts(&["d", "t", "1"]), KeyKind::Update).unwrap();
        b.append_key(parts(&["d", "t", "1"]), KeyKind::Shared).unwrap();
        assert_eq!(b.key_count(), 1);
        let ws = b.take(0, Uuid::NIL, 1, 1, 0);
        assert_eq!(ws.keys[0].kind, KeyKind::Update);
    }

    #[test]
    fn the_limit_counts_sizes_as_galera_does() {
        let mut b = Builder::new();
        let limit = GALERA_FIXED + 10;
        b.append_data(b"0123456789").unwrap();
        assert_eq!(b.check(limit), Ok(()));
        b.append_data(b"x").unwrap();
        assert_eq!(b.check(limit), Err(AppendError::SizeExceeded { size: limit + 1, limit }));
        let ws = b.take(0, Uuid::NIL, 1, 1, 0);
        assert_eq!(ws.encoded_len(), FIXED_COST + 11, "our encoding, counted apart");
        assert!(b.is_empty());
    }

    #[test]
    fn a_key_part_costs_eight_bytes_once_in_galeras_count() {
        // galera.MDEV-26597: eight rows of one table take the db and table
        // parts once and a part per row.
        let mut b = Builder::new();
        for row in 0..8 {
            b.append_key(parts(&["test", "t3", &format!("{row:04}")]), KeyKind::Exclusive).unwrap();
        }
        assert_eq!(b.counted, GALERA_FIXED + (2 + 8) * GALERA_KEY_PART);
        b.append_key(parts(&["test", "t3", "0000"]), KeyKind::Shared).unwrap();
        b.append_key(parts(&["test", "t3"]), KeyKind::Shared).unwrap();
        assert_eq!(b.counted, GALERA_FIXED + 11 * GALERA_KEY_PART, "a repeated row costs nothing, the table key its own part");
        b.take(0, Uuid::NIL, 1, 1, 0);
        b.append_key(parts(&["test", "t3", "0000"]), KeyKind::Exclusive).unwrap();
        assert_eq!(b.counted, GALERA_FIXED + 3 * GALERA_KEY_PART, "each fragment counts afresh");
    }

    #[test]
    fn our_encoding_is_bounded_even_where_galeras_count_is_small() {
        let mut b = Builder::new();
        b.size = MAX_ENCODED - 10;
        let long = vec![Bytes::from(vec![7u8; 100])];
        assert_eq!(b.append_key(long, KeyKind::Exclusive), Err(AppendError::SizeExceeded { size: MAX_ENCODED + 94, limit: MAX_ENCODED }));
        assert_eq!(b.check(usize::MAX), Ok(()), "Galera's count is small");
    }

    #[test]
    fn data_calls_concatenate_and_take_resets() {
        let mut b = Builder::new();
        b.append_data(b"ab").unwrap();
        b.append_data(b"cd").unwrap();
        b.append_key(parts(&["d"]), KeyKind::Exclusive).unwrap();
        let ws = b.take(0, Uuid::NIL, 1, 1, 0);
        assert_eq!(ws.data(), b"abcd");
        assert!(b.is_empty());
        b.append_key(parts(&["d"]), KeyKind::Shared).unwrap();
        assert_eq!(b.key_count(), 1);
    }
}
