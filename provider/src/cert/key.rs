//! Keys as the index sees them: a 64-bit hash per prefix.
//!
//! `[db][table][row]` EXCLUSIVE certifies as SHARED `[]` (the server-wide
//! zero-level key), SHARED `[db]`, SHARED `[db][table]` and EXCLUSIVE
//! `[db][table][row]`: that is how a TOI on a table conflicts with a row
//! change in it. The hash is FNV-1a over the parent's hash, the part length
//! and the part bytes: fixed by this file, so every node and every build
//! agrees. A collision can only add a false dependency or conflict (safe).

use std::collections::HashMap;

use crate::writeset::{Key, KeyKind};

pub type KeyHash = u64;

/// A map by key hash. The hashes are FNV already, so the map only mixes
/// them (Fx: one multiply) instead of hashing them again with SipHash:
/// certifying and purging a 500,000-row writeset spent a third of its time
/// there, on the group thread, while every other commit waited. Iteration
/// order never decides anything (module comment of `cert`).
pub type KeyMap<V> = HashMap<KeyHash, V, fxhash::FxBuildHasher>;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The zero-level key every writeset references.
pub const ZERO_LEVEL: KeyHash = FNV_OFFSET;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// Hash of a child part under its parent prefix.
pub fn child(parent: KeyHash, part: &[u8]) -> KeyHash {
    let h = fnv(parent, &parent.to_le_bytes());
    let h = fnv(h, &(part.len() as u32).to_le_bytes());
    fnv(h, part)
}

/// Expands appended keys into the hashed keys to certify, each once with its
/// strongest kind, in first-seen order (deterministic).
pub fn expand(keys: &[Key]) -> Vec<(KeyHash, KeyKind)> {
    // Branch keys repeat across rows (one db, a few tables): a big
    // writeset expands to about one key per row, plus a few.
    let mut out: Vec<(KeyHash, KeyKind)> = Vec::with_capacity(keys.len() + 8);
    let mut at: KeyMap<usize> = KeyMap::with_capacity_and_hasher(keys.len() + 8, Default::default());
    let mut add = |hash: KeyHash, kind: KeyKind| match at.get(&hash) {
        Some(&i) => out[i].1 = out[i].1.max(kind),
        None => {
            at.insert(hash, out.len());
            out.push((hash, kind));
        }
    };
    add(ZERO_LEVEL, KeyKind::Shared);
    // Consecutive keys mostly share their branches (`[db][table]`):
    // `prefix[i]` is the hash of the previous key's first i parts, reused
    // while the parts are equal. Those prefixes are in `out` already, so
    // only the leaf (whose kind may be stronger) is added again.
    let mut prefix: Vec<KeyHash> = vec![ZERO_LEVEL];
    let mut previous: &[bytes::Bytes] = &[];
    for key in keys {
        let common = key.parts.iter().zip(previous).take_while(|(a, b)| a == b).count();
        prefix.truncate(common + 1);
        for (i, part) in key.parts.iter().enumerate().skip(common) {
            if i > common {
                add(prefix[i], KeyKind::Shared);
            }
            prefix.push(child(prefix[i], part));
        }
        add(prefix[key.parts.len()], key.kind);
        previous = &key.parts;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: KeyKind, parts: &[&str]) -> Key {
        Key { kind, parts: parts.iter().map(|p| bytes::Bytes::copy_from_slice(p.as_bytes())).collect() }
    }

    #[test]
    fn a_row_key_implies_shared_branches_and_the_zero_level_key() {
        let ks = expand(&[key(KeyKind::Exclusive, &["d", "t", "1"])]);
        assert_eq!(ks.len(), 4);
        assert_eq!(ks[0], (ZERO_LEVEL, KeyKind::Shared));
        assert!(ks[1..3].iter().all(|(_, k)| *k == KeyKind::Shared));
        assert_eq!(ks[3].1, KeyKind::Exclusive);
    }

    #[test]
    fn shared_prefixes_are_listed_once_with_the_strongest_kind() {
        let ks = expand(&[
            key(KeyKind::Update, &["d", "t", "1"]),
            key(KeyKind::Update, &["d", "t", "2"]),
            key(KeyKind::Exclusive, &["d", "t"]),
        ]);
        // zero, [d], [d][t], row 1, row 2
        assert_eq!(ks.len(), 5);
        let table = child(child(ZERO_LEVEL, b"d"), b"t");
        assert!(ks.contains(&(table, KeyKind::Exclusive)));
    }

    #[test]
    fn part_boundaries_matter() {
        let ab = child(ZERO_LEVEL, b"ab");
        let a_b = child(child(ZERO_LEVEL, b"a"), b"b");
        assert_ne!(ab, a_b);
    }

    #[test]
    fn an_empty_key_is_the_zero_level_key_with_its_kind() {
        let ks = expand(&[key(KeyKind::Exclusive, &[])]);
        assert_eq!(ks, vec![(ZERO_LEVEL, KeyKind::Exclusive)]);
    }

    /// The definition `expand` must keep while reusing branch hashes:
    /// every prefix as SHARED, then the key with its kind, first seen
    /// first, strongest kind kept.
    fn expand_plainly(keys: &[Key]) -> Vec<(KeyHash, KeyKind)> {
        let mut out: Vec<(KeyHash, KeyKind)> = Vec::new();
        let mut add = |hash, kind| match out.iter_mut().find(|(h, _)| *h == hash) {
            Some(e) => e.1 = e.1.max(kind),
            None => out.push((hash, kind)),
        };
        add(ZERO_LEVEL, KeyKind::Shared);
        for key in keys {
            let mut h = ZERO_LEVEL;
            for part in &key.parts {
                add(h, KeyKind::Shared);
                h = child(h, part);
            }
            add(h, key.kind);
        }
        out
    }

    #[test]
    fn reused_branch_hashes_expand_as_the_plain_definition() {
        let parts = ["d", "e", "t", "u", "1", "2"];
        let mut x: u64 = 7;
        for _ in 0..300 {
            let keys: Vec<Key> = (0..6)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let n = (x >> 60) as usize % 4;
                    let p: Vec<&str> = (0..n).map(|i| parts[(x >> (8 * i + 8)) as usize % parts.len()]).collect();
                    key(KeyKind::ALL[(x >> 40) as usize % 4], &p)
                })
                .collect();
            assert_eq!(expand(&keys), expand_plainly(&keys), "{:?}", keys);
        }
    }
}
