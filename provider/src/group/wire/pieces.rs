//! Large writesets travel in bounded pieces, as Galera's GCS cuts an
//! action into fragments: each piece is a Raft entry of its own
//! ([`Entry::Piece`]), so no message, frame or log entry grows with the
//! writeset, other writesets are ordered between the pieces (one big
//! transaction does not stop its neighbours), and a piece lost with a
//! leader costs a resend of the writeset, not a wedge.
//!
//! A writeset is ordered when its last piece is committed: every member
//! assembles the pieces in log order and assigns the seqno there, so the
//! seqno is the same everywhere. A piece that does not continue its
//! writeset's bytes (one before it was lost with a leader, or a resend
//! started over) drops what was assembled: the origin fences and resends
//! the writeset whole under a new token, never a piece alone.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::entry::Entry;
use crate::gtid::Uuid;

/// The largest piece: Raft's `max_size_per_msg`, so a message carries one
/// piece or several small entries. A payload up to this size travels as
/// one `Entry::Ordered`.
pub const PIECE_BYTES: usize = 1 << 20;

/// Pieces of one writeset handed to Raft and not yet committed. Bounds
/// what a big writeset queues in the proposer's and the leader's send
/// queues (8 MiB, an eighth of a peer's queue), while keeping a loopback
/// or LAN link busy.
pub const WINDOW_PIECES: usize = 8;

/// The largest writeset a member assembles: the largest encoding a
/// builder makes. A bigger total can only be a corrupt piece.
pub const MAX_TOTAL: u64 = crate::writeset::MAX_ENCODED as u64;

/// The log entry of piece `i` of `body`, proposed by `origin` under wire
/// token `token`: a view of `body`. A body of one piece is an ordinary
/// `Ordered` entry.
pub fn entry(origin: Uuid, token: u64, body: &Bytes, i: usize) -> Entry {
    entry_of(origin, token, body, i, PIECE_BYTES)
}

/// How many pieces of `piece` bytes a payload of `len` bytes takes (one
/// for an empty one).
pub fn count_of(len: usize, piece: usize) -> usize {
    len.div_ceil(piece).max(1)
}

/// `entry` for pieces of `piece` bytes.
pub fn entry_of(origin: Uuid, token: u64, body: &Bytes, i: usize, piece: usize) -> Entry {
    if body.len() <= piece {
        debug_assert_eq!(i, 0);
        return Entry::Ordered { origin, token, payload: body.clone() };
    }
    let start = i * piece;
    assert!(start < body.len(), "piece {} of a {}-byte body", i, body.len());
    let data = body.slice(start..(start + piece).min(body.len()));
    Entry::Piece { origin, token, total: body.len() as u64, offset: start as u64, data }
}

/// What a committed piece did.
#[derive(Debug, PartialEq, Eq)]
pub enum Assembled {
    /// The writeset holds this many bytes so far.
    Progress(u64),
    /// The last piece: the payload's pieces, in order (see `join`).
    Complete(Vec<Bytes>),
    /// The piece does not continue what was assembled (or is malformed):
    /// the writeset is dropped; its origin resends it.
    Dropped,
}

/// The pieces of one writeset so far: views of the committed entries,
/// which the log holds anyway until the writeset is complete (no snapshot
/// cuts it before), so assembling copies nothing.
#[derive(Clone, Debug, Default, PartialEq)]
struct Assembly {
    len: u64,
    pieces: Vec<Bytes>,
}

/// Writesets being assembled, by (origin, wire token): part of the
/// deterministic group state. Bounded by the writesets in flight, each at
/// most `MAX_TOTAL`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assemblies {
    open: BTreeMap<(Uuid, u64), Assembly>,
}

/// A complete writeset's pieces as one payload. Its origin has no need
/// of this copy: it still holds the buffer it sent (see the driver).
pub fn join(pieces: Vec<Bytes>) -> Bytes {
    if let [one] = &pieces[..] {
        return one.clone();
    }
    let mut out = Vec::with_capacity(pieces.iter().map(Bytes::len).sum());
    for p in &pieces {
        out.extend_from_slice(p);
    }
    Bytes::from(out)
}

impl Assemblies {
    pub fn add(&mut self, origin: Uuid, token: u64, total: u64, offset: u64, data: Bytes) -> Assembled {
        let key = (origin, token);
        let end = offset.checked_add(data.len() as u64);
        if total > MAX_TOTAL || data.is_empty() || end.is_none_or(|e| e > total) {
            self.open.remove(&key);
            return Assembled::Dropped;
        }
        if offset == 0 {
            // A first piece starts the writeset (again, for a resend that
            // kept its token because Raft dropped its first try).
            self.open.insert(key, Assembly::default());
        }
        let Some(a) = self.open.get_mut(&key).filter(|a| a.len == offset) else {
            self.open.remove(&key);
            return Assembled::Dropped;
        };
        a.len += data.len() as u64;
        a.pieces.push(data);
        if a.len < total {
            return Assembled::Progress(a.len);
        }
        Assembled::Complete(self.open.remove(&key).expect("just extended").pieces)
    }

    /// The origin's writesets up to `token` will never be completed.
    pub fn fence(&mut self, origin: Uuid, token: u64) {
        self.open.retain(|(o, t), _| *o != origin || *t > token);
    }

    /// A member left: its writesets will never be completed.
    pub fn forget(&mut self, origin: Uuid) {
        self.open.retain(|(o, _), _| *o != origin);
    }

    pub fn clear(&mut self) {
        self.open.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The writesets held: (origin, token, bytes so far).
    pub fn open(&self) -> Vec<(Uuid, u64, usize)> {
        self.open.iter().map(|((o, t), a)| (*o, *t, a.len as usize)).collect()
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.open.values().map(|a| a.len as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(len: usize) -> Bytes {
        Bytes::from((0..len).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
    }

    /// Feeds the entries of `body` to `a`; the last result, a complete
    /// writeset joined.
    fn feed(a: &mut Assemblies, origin: Uuid, token: u64, body: &Bytes, pieces: impl Iterator<Item = usize>) -> Assembled {
        let mut last = Assembled::Dropped;
        for i in pieces {
            let e = Entry::committed(entry(origin, token, body, i));
            let Entry::Piece { origin, token, total, offset, data } = e else { panic!("{e:?}") };
            last = a.add(origin, token, total, offset, data);
        }
        match last {
            Assembled::Complete(pieces) => Assembled::Complete(vec![join(pieces)]),
            other => other,
        }
    }

    #[test]
    fn a_small_body_is_one_ordered_entry() {
        let b = body(PIECE_BYTES);
        assert_eq!(count_of(b.len(), PIECE_BYTES), 1);
        assert_eq!(count_of(0, PIECE_BYTES), 1);
        let e = Entry::committed(entry(Uuid::NIL, 3, &b, 0));
        assert_eq!(e, Entry::Ordered { origin: Uuid::NIL, token: 3, payload: b });
    }

    #[test]
    fn pieces_in_order_give_back_the_body_once() {
        let (origin, b) = (Uuid::random(), body(3 * PIECE_BYTES + 17));
        assert_eq!(count_of(b.len(), PIECE_BYTES), 4);
        let mut a = Assemblies::default();
        assert_eq!(feed(&mut a, origin, 1, &b, 0..3), Assembled::Progress(3 * PIECE_BYTES as u64));
        assert_eq!(a.bytes(), 3 * PIECE_BYTES);
        assert_eq!(feed(&mut a, origin, 1, &b, 3..4), Assembled::Complete(vec![b.clone()]));
        assert!(a.is_empty());
    }

    #[test]
    fn interleaved_writesets_assemble_apart() {
        let (o1, o2) = (Uuid::random(), Uuid::random());
        let (b1, b2) = (body(2 * PIECE_BYTES + 1), body(PIECE_BYTES + 5));
        let mut a = Assemblies::default();
        feed(&mut a, o1, 7, &b1, 0..1);
        feed(&mut a, o2, 7, &b2, 0..1);
        feed(&mut a, o1, 8, &b2, 0..1);
        assert_eq!(feed(&mut a, o2, 7, &b2, 1..2), Assembled::Complete(vec![b2.clone()]));
        assert_eq!(feed(&mut a, o1, 7, &b1, 1..3), Assembled::Complete(vec![b1]));
        assert_eq!(feed(&mut a, o1, 8, &b2, 1..2), Assembled::Complete(vec![b2]));
    }

    #[test]
    fn a_gap_drops_the_writeset_and_a_first_piece_starts_over() {
        let (origin, b) = (Uuid::random(), body(3 * PIECE_BYTES));
        let mut a = Assemblies::default();
        feed(&mut a, origin, 1, &b, 0..1);
        assert_eq!(feed(&mut a, origin, 1, &b, 2..3), Assembled::Dropped, "piece 1 was lost");
        assert!(a.is_empty());
        assert_eq!(feed(&mut a, origin, 1, &b, 1..3), Assembled::Dropped, "nothing to continue");
        assert_eq!(feed(&mut a, origin, 1, &b, 0..3), Assembled::Complete(vec![b]));
    }

    #[test]
    fn fences_and_departures_forget_open_writesets() {
        let (o1, o2, b) = (Uuid::random(), Uuid::random(), body(2 * PIECE_BYTES));
        let mut a = Assemblies::default();
        for t in 1..=3 {
            feed(&mut a, o1, t, &b, 0..1);
        }
        feed(&mut a, o2, 1, &b, 0..1);
        a.fence(o1, 2);
        assert_eq!(feed(&mut a, o1, 2, &b, 1..2), Assembled::Dropped);
        assert_eq!(feed(&mut a, o1, 3, &b, 1..2), Assembled::Complete(vec![b.clone()]));
        a.forget(o2);
        assert!(a.is_empty());
    }

    #[test]
    fn malformed_pieces_are_dropped_not_trusted() {
        let o = Uuid::random();
        let mut a = Assemblies::default();
        assert_eq!(a.add(o, 1, MAX_TOTAL + 1, 0, Bytes::from_static(b"x")), Assembled::Dropped, "a total no writeset has");
        assert_eq!(a.add(o, 1, 4, 2, Bytes::from_static(b"xyz")), Assembled::Dropped, "past its total");
        assert_eq!(a.add(o, 1, 4, u64::MAX, Bytes::from_static(b"x")), Assembled::Dropped, "an offset that overflows");
        assert_eq!(a.add(o, 1, 4, 0, Bytes::from_static(b"")), Assembled::Dropped, "an empty piece");
        assert!(a.is_empty());
    }
}
