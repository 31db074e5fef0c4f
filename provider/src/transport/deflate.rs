//! Frames to a member of another segment (`gmcast.segment`) travel
//! compressed: that link is the WAN between data centres, where bandwidth
//! costs and a millisecond of CPU does not. A writeset's row images
//! (before and after, one row's columns twice) and the Raft fields around
//! them shrink to about a third with deflate's fastest level; a 1 MiB
//! piece of a big writeset takes about 8 ms on the link's writer thread,
//! never the group thread's.
//!
//! A compressed frame has the reserved kind `COMPRESSED` and the payload
//! | inner kind u8 | inner length u32 LE | deflate stream |. A peer reads
//! it only if its handshake said so (`FEATURE_DEFLATE`), so a peer of an
//! older build never gets one. Links with TLS are never compressed: what
//! a client writes and what another client's rows hold would share one
//! record, and the record's length would tell an eavesdropper about both
//! (the CRIME attack; OpenSSL leaves TLS compression off by default for
//! the same reason).

use std::io::{Read, Write};

use bytes::Bytes;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;

use super::frame::{PREALLOC, RESERVED_KINDS};

/// The handshake's feature bit: this node reads compressed frames.
pub const FEATURE_DEFLATE: u8 = 1;

/// Smaller frames (answers, heartbeats, commit indexes) are sent as they
/// are: their bytes are mostly numbers deflate cannot shrink.
pub const MIN_BYTES: usize = 256;

const HEADER: usize = 5;

/// `payload` of `kind` compressed, or None when that would not be smaller.
pub fn pack(kind: u8, payload: &[u8]) -> Option<Bytes> {
    debug_assert!(kind < RESERVED_KINDS, "only the owner's frames are compressed");
    let len = u32::try_from(payload.len()).ok()?;
    let mut out = Vec::with_capacity(HEADER + payload.len() / 2);
    out.push(kind);
    out.extend_from_slice(&len.to_le_bytes());
    let mut e = DeflateEncoder::new(out, Compression::fast());
    e.write_all(payload).ok()?;
    let out = e.finish().ok()?;
    (out.len() < payload.len()).then(|| Bytes::from(out))
}

/// The frame inside a compressed one; `limit` bounds the inflated payload
/// as it bounds any frame's.
pub fn unpack(payload: &[u8], limit: usize) -> Result<(u8, Bytes), String> {
    let [kind, a, b, c, d] = *payload.get(..HEADER).ok_or("a compressed frame shorter than its header")? else {
        unreachable!("five bytes")
    };
    if kind >= RESERVED_KINDS {
        return Err(format!("a compressed frame of the reserved kind {:#x}", kind));
    }
    let len = u32::from_le_bytes([a, b, c, d]) as usize;
    if len > limit {
        return Err(format!("a compressed frame of {} bytes inflated exceeds the limit of {} bytes", len, limit));
    }
    // As for any frame, a lying length field costs no more than this.
    let mut out = Vec::with_capacity(len.min(PREALLOC));
    // One byte past the length tells a stream that inflates to more.
    DeflateDecoder::new(&payload[HEADER..]).take(len as u64 + 1).read_to_end(&mut out).map_err(|e| format!("a compressed frame does not inflate: {}", e))?;
    if out.len() != len {
        return Err(format!("a compressed frame inflates to {} bytes, its header says {}", out.len(), len));
    }
    Ok((kind, Bytes::from(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row_images() -> Vec<u8> {
        let row: Vec<u8> = (0..180u32).map(|i| b'0' + (i * 7919 % 10) as u8).collect();
        [b"header and keys".as_slice(), &row, &row].concat()
    }

    #[test]
    fn a_frame_comes_back_as_it_was_and_smaller() {
        let raw = row_images();
        let packed = pack(1, &raw).expect("two copies of one row compress");
        assert!(packed.len() < raw.len() * 2 / 3, "{} of {}", packed.len(), raw.len());
        assert_eq!(unpack(&packed, 1 << 20).unwrap(), (1, Bytes::from(raw)));
    }

    #[test]
    fn what_would_not_shrink_is_not_packed() {
        let noise: Vec<u8> = (0..300u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8).collect();
        assert_eq!(pack(1, &noise), None);
    }

    #[test]
    fn a_bad_compressed_frame_is_an_error_not_a_panic_nor_a_bomb() {
        let packed = pack(1, &row_images()).unwrap();
        assert!(unpack(&packed[..3], 1 << 20).is_err(), "truncated header");
        assert!(unpack(&packed[..packed.len() - 4], 1 << 20).is_err(), "truncated stream");
        assert!(unpack(&packed, 100).is_err(), "over the limit");
        let mut lie = packed.to_vec();
        lie[1] = lie[1].wrapping_sub(1);
        assert!(unpack(&lie, 1 << 20).is_err(), "inflates to more than it says");
        let mut reserved = packed.to_vec();
        reserved[0] = RESERVED_KINDS;
        assert!(unpack(&reserved, 1 << 20).is_err());
        let zeros = pack(1, &vec![0u8; 1 << 20]).unwrap();
        assert!(zeros.len() < 8 << 10, "a megabyte of zeros packs small");
        assert!(unpack(&zeros, 64 << 10).is_err(), "and inflates only up to the limit");
        let mut garbage = packed.to_vec();
        for b in &mut garbage[HEADER..] {
            *b = b.wrapping_mul(31).wrapping_add(7);
        }
        assert!(unpack(&garbage, 1 << 20).is_err());
    }
}
