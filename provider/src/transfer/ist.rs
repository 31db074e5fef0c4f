//! Incremental state transfer over its own connection, as Galera 4 does
//! it (`ist.recv_addr`): the joiner listens, the donor connects and sends
//! the seqnos the joiner misses from its gcache, so a large transfer never
//! queues behind (or ahead of) the group's Raft traffic. One transport
//! frame per chunk (`version u8 | kind u8 | length u32 | crc32c u32 |
//! payload`, see `transport::frame`), payloads:
//!
//! ```text
//! kind 1, header:   ist version u8 (1) | history 16 | joiner 16 | first i64 | last i64
//! kind 2, writeset: seqno i64 | certified u8 | payload
//! kind 3, view:     seqno i64
//! ```
//!
//! The header comes first, then every seqno from `first` to `last` in
//! order, then the donor closes. `last = first - 1` is an empty range (the
//! transfer that follows an SST usually is). The joiner checks that the
//! header names its history and itself before it takes anything.

use bytes::Bytes;

use crate::gcache::Cached;
use crate::wire::Reader;
use crate::gtid::{Seqno, Uuid};

/// The IST chunk format; the frame's own version byte is the transport's.
pub const VERSION: u8 = 1;
pub const HEADER: u8 = 1;
const WRITESET: u8 = 2;
const VIEW: u8 = 3;

/// What the donor announces before the first seqno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub history: Uuid,
    pub joiner: Uuid,
    pub first: Seqno,
    pub last: Seqno,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chunk {
    Header(Header),
    Item { seqno: Seqno, item: Cached },
}

impl Header {
    /// How many seqnos the transfer carries.
    pub fn len(&self) -> i64 {
        (self.last - self.first + 1).max(0)
    }

    /// The joiner's check: a transfer meant for another node or another
    /// history must not touch its data.
    pub fn check(&self, history: Uuid, joiner: Uuid) -> Result<(), String> {
        if self.history != history {
            return Err(format!("the donor sends history {} but this node joins history {}", self.history, history));
        }
        if self.joiner != joiner {
            return Err(format!("the donor's transfer is for member {}, this node is {}", self.joiner, joiner));
        }
        if self.first < 0 || self.last < self.first - 1 {
            return Err(format!("the donor announces an impossible range {}-{}", self.first, self.last));
        }
        Ok(())
    }

    /// Whether the transfer brings a state that holds everything up to
    /// `position` to `needed` (the seqno the joiner's live stream follows).
    pub fn covers(&self, position: Seqno, needed: Seqno) -> Result<(), String> {
        if needed <= position {
            return Ok(());
        }
        if self.first > position + 1 {
            return Err(format!("IST starts at {} but the state holds only up to {}", self.first, position));
        }
        if self.last < needed {
            return Err(format!("IST ends at {} but this node needs up to {}", self.last, needed));
        }
        Ok(())
    }
}

/// A chunk as (frame kind, payload).
pub fn encode(chunk: &Chunk) -> (u8, Bytes) {
    let mut out = Vec::new();
    let kind = match chunk {
        Chunk::Header(h) => {
            out.push(VERSION);
            out.extend_from_slice(&h.history.0);
            out.extend_from_slice(&h.joiner.0);
            out.extend_from_slice(&h.first.to_le_bytes());
            out.extend_from_slice(&h.last.to_le_bytes());
            HEADER
        }
        Chunk::Item { seqno, item: Cached::Writeset { payload, certified } } => {
            out.reserve(9 + payload.len());
            out.extend_from_slice(&seqno.to_le_bytes());
            out.push(*certified as u8);
            out.extend_from_slice(payload);
            WRITESET
        }
        Chunk::Item { seqno, item: Cached::View { conf } } => {
            out.extend_from_slice(&seqno.to_le_bytes());
            out.extend_from_slice(conf);
            VIEW
        }
    };
    (kind, Bytes::from(out))
}

/// Decodes a frame's chunk; every malformation is an error, never a panic.
pub fn decode(kind: u8, buf: &Bytes) -> Result<Chunk, String> {
    let mut r = Reader::new(buf);
    let bad = |e| format!("malformed IST chunk: {}", e);
    let chunk = match kind {
        HEADER => {
            let version = r.u8().map_err(bad)?;
            if version != VERSION {
                return Err(format!("the donor speaks IST version {}, this node {}", version, VERSION));
            }
            let (history, joiner) = (r.uuid().map_err(bad)?, r.uuid().map_err(bad)?);
            let (first, last) = (r.u64().map_err(bad)? as Seqno, r.u64().map_err(bad)? as Seqno);
            r.end().map_err(bad)?;
            Chunk::Header(Header { history, joiner, first, last })
        }
        WRITESET => {
            let seqno = r.u64().map_err(bad)? as Seqno;
            let certified = r.u8().map_err(bad)? != 0;
            Chunk::Item { seqno, item: Cached::Writeset { payload: buf.slice(r.pos..), certified } }
        }
        VIEW => {
            let seqno = r.u64().map_err(bad)? as Seqno;
            Chunk::Item { seqno, item: Cached::View { conf: buf.slice(r.pos..) } }
        }
        k => return Err(format!("unknown IST chunk kind {}", k)),
    };
    Ok(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(first: Seqno, last: Seqno) -> Header {
        Header { history: Uuid::random(), joiner: Uuid::random(), first, last }
    }

    fn round_trip(c: Chunk) {
        let (kind, payload) = encode(&c);
        assert_eq!(decode(kind, &payload).unwrap(), c);
    }

    #[test]
    fn chunks_round_trip() {
        round_trip(Chunk::Header(header(5, 9)));
        round_trip(Chunk::Header(header(10, 9)));
        round_trip(Chunk::Item { seqno: 5, item: Cached::Writeset { payload: Bytes::from_static(b"abc"), certified: true } });
        round_trip(Chunk::Item { seqno: 7, item: Cached::Writeset { payload: Bytes::new(), certified: false } });
        round_trip(Chunk::Item { seqno: 6, item: Cached::View { conf: Bytes::from_static(b"members") } });
        round_trip(Chunk::Item { seqno: 7, item: Cached::View { conf: Bytes::new() } });
    }

    #[test]
    fn truncated_padded_or_unknown_chunks_are_errors() {
        let (kind, h) = encode(&Chunk::Header(header(1, 2)));
        for len in 0..h.len() {
            assert!(decode(kind, &h.slice(..len)).is_err(), "header cut at {}", len);
        }
        let padded = Bytes::from([&h[..], &[0]].concat());
        assert!(decode(kind, &padded).is_err());
        let (kind, v) = encode(&Chunk::Item { seqno: 3, item: Cached::View { conf: Bytes::new() } });
        assert!(decode(kind, &v.slice(..7)).is_err());
        assert!(decode(WRITESET, &Bytes::from_static(&[1, 0, 0, 0, 0, 0, 0, 0])).is_err(), "no certified flag");
        assert!(decode(9, &v).unwrap_err().contains("unknown IST chunk kind 9"));
    }

    #[test]
    fn another_ist_version_is_named() {
        let (kind, h) = encode(&Chunk::Header(header(1, 2)));
        let mut other = h.to_vec();
        other[0] = VERSION + 1;
        let e = decode(kind, &Bytes::from(other)).unwrap_err();
        assert!(e.contains(&format!("IST version {}, this node {}", VERSION + 1, VERSION)), "{}", e);
    }

    #[test]
    fn the_joiner_checks_history_joiner_and_range() {
        let h = header(11, 20);
        assert_eq!(h.check(h.history, h.joiner), Ok(()));
        assert!(h.check(Uuid::random(), h.joiner).unwrap_err().contains("history"));
        assert!(h.check(h.history, Uuid::random()).unwrap_err().contains("for member"));
        let backwards = Header { last: 8, ..h };
        assert!(backwards.check(h.history, h.joiner).unwrap_err().contains("impossible range"));
        let empty = Header { last: 10, ..h };
        assert_eq!((empty.check(h.history, h.joiner), empty.len(), h.len()), (Ok(()), 0, 10));
    }

    #[test]
    fn a_transfer_must_reach_from_the_state_to_the_join_point() {
        let h = header(11, 20);
        assert_eq!(h.covers(10, 20), Ok(()));
        assert_eq!(h.covers(14, 18), Ok(()), "starts inside the range: the rest is skipped");
        assert_eq!(h.covers(25, 20), Ok(()), "the state already holds it all");
        assert!(h.covers(9, 20).unwrap_err().contains("starts at 11"));
        assert!(h.covers(10, 21).unwrap_err().contains("ends at 20"));
        assert_eq!(header(8, 7).covers(7, 7), Ok(()), "nothing needed, nothing sent");
    }
}
