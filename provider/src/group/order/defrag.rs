//! A big writeset from another member is written, piece by piece as its
//! pieces are stored in the log, into one buffer of its full size, as
//! Galera's `gcs_defrag` writes an action's fragments into one gcache
//! buffer of the action's size. The log keeps views of that buffer, and
//! when the last piece commits the writeset handed to the node is the
//! buffer itself: a receiver holds one copy of a big writeset, not its
//! pieces in the log and the joined payload beside them.
//!
//! This is an optimisation at the log's edge, not group state: a piece
//! that does not continue its buffer (a resend, a leader's log that
//! overwrote ours) is stored as it came, and the deterministic assembly
//! (`pieces::Assemblies`) joins such pieces by copying, as before.

use std::sync::Arc;

use bytes::Bytes;

use crate::group::wire::pieces::MAX_TOTAL;
use crate::gtid::Uuid;

/// Writesets being written at once. More are big writesets of several
/// members in flight together, or abandoned ones not yet fenced: the
/// oldest is let go (its views stay valid; its join copies).
const MAX_OPEN: usize = 8;

/// One writeset's bytes. Bytes below the owning `Open::filled` never
/// change again and are read through views; bytes at and above it are
/// written only by that `Open`, which no view covers yet.
struct Buffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the allocation is owned by the Buffer alone (freed in Drop);
// the split between read-only and not-yet-written bytes above keeps reads
// and the one writer apart, whichever threads hold the views.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Zeroed (calloc'd) memory: pages are not resident until written, so
    /// an announced size costs nothing before its bytes arrive.
    fn new(len: usize) -> Buffer {
        let boxed = vec![0u8; len].into_boxed_slice();
        Buffer { ptr: Box::into_raw(boxed).cast::<u8>(), len }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: `ptr`, `len` came from a boxed slice in `new`, freed once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

/// Bytes `start..start + len` of a buffer, all below its `filled`.
struct View {
    buf: Arc<Buffer>,
    start: usize,
    len: usize,
}

impl AsRef<[u8]> for View {
    fn as_ref(&self) -> &[u8] {
        debug_assert!(self.start + self.len <= self.buf.len);
        // SAFETY: in bounds, and written before the view was made (see
        // `Buffer`); the Arc keeps the allocation alive.
        unsafe { std::slice::from_raw_parts(self.buf.ptr.add(self.start), self.len) }
    }
}

/// A writeset whose buffer is being written.
struct Open {
    origin: Uuid,
    token: u64,
    buf: Arc<Buffer>,
    filled: usize,
}

impl Open {
    fn view(&self, start: usize, len: usize) -> Bytes {
        Bytes::from_owner(View { buf: self.buf.clone(), start, len })
    }

    /// Whether `pieces` are this buffer's views, in order, from its first
    /// byte to its last: then they are its bytes (only `stage` makes views
    /// of it, of bytes written once).
    fn holds(&self, pieces: &[Bytes]) -> bool {
        let base = self.buf.ptr as usize;
        let mut at = 0;
        for p in pieces {
            if p.as_ptr() as usize != base + at {
                return false;
            }
            at += p.len();
        }
        at == self.buf.len && at == self.filled
    }
}

/// The writesets of other members being written into their buffers.
#[derive(Default)]
pub struct Defrag {
    open: Vec<Open>,
}

impl Defrag {
    /// What to store for piece `data` at `offset` of writeset (`origin`,
    /// `token`) of `total` bytes: a view of the writeset's buffer, with
    /// `data` written into it; None when the piece does not continue a
    /// buffer (it is stored as it came).
    pub fn stage(&mut self, origin: Uuid, token: u64, total: u64, offset: u64, data: &[u8]) -> Option<Bytes> {
        if offset == 0 && total <= MAX_TOTAL {
            self.start(origin, token, total as usize);
        }
        let i = self.find(origin, token)?;
        let o = &mut self.open[i];
        if o.buf.len as u64 != total || offset as usize != o.filled || o.filled + data.len() > o.buf.len || data.is_empty() {
            self.open.remove(i);
            return None;
        }
        // SAFETY: `filled..filled + len` is in bounds and no view covers
        // it (see `Buffer`); `data` is another allocation.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), o.buf.ptr.add(o.filled), data.len()) };
        o.filled += data.len();
        Some(o.view(offset as usize, data.len()))
    }

    /// The writeset whole, without a copy, when the committed `pieces` are
    /// the views its buffer gave out; None: join them (see `pieces::join`).
    pub fn take(&mut self, origin: Uuid, token: u64, pieces: &[Bytes]) -> Option<Bytes> {
        let i = self.find(origin, token)?;
        let o = self.open.remove(i);
        o.holds(pieces).then(|| o.view(0, o.filled))
    }

    /// A first piece starts the writeset's buffer (again, for a resend),
    /// letting the oldest go when `MAX_OPEN` are open.
    fn start(&mut self, origin: Uuid, token: u64, total: usize) {
        if let Some(i) = self.find(origin, token) {
            self.open.remove(i);
        }
        if self.open.len() == MAX_OPEN {
            self.open.remove(0);
        }
        self.open.push(Open { origin, token, buf: Arc::new(Buffer::new(total)), filled: 0 });
    }

    fn find(&self, origin: Uuid, token: u64) -> Option<usize> {
        self.open.iter().position(|o| o.origin == origin && o.token == token)
    }

    /// `origin`'s writesets up to `token` are fenced: never completed.
    pub fn fence(&mut self, origin: Uuid, token: u64) {
        self.open.retain(|o| o.origin != origin || o.token > token);
    }

    /// A snapshot replaced the log: nothing being written will commit.
    pub fn clear(&mut self) {
        self.open.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    /// Stages `b` in pieces of `piece` bytes; the views.
    fn stage_all(d: &mut Defrag, origin: Uuid, token: u64, b: &[u8], piece: usize) -> Vec<Bytes> {
        b.chunks(piece).enumerate().map(|(i, c)| d.stage(origin, token, b.len() as u64, (i * piece) as u64, c).expect("continues")).collect()
    }

    #[test]
    fn the_pieces_are_views_of_one_buffer_and_the_whole_is_that_buffer() {
        let (mut d, origin, b) = (Defrag::default(), Uuid::random(), body(10_000));
        let views = stage_all(&mut d, origin, 4, &b, 3000);
        assert_eq!(views.concat(), b);
        assert_eq!(views[1].as_ptr() as usize, views[0].as_ptr() as usize + 3000, "one buffer");
        let whole = d.take(origin, 4, &views).expect("the buffer");
        assert_eq!((whole.as_ptr(), &whole[..]), (views[0].as_ptr(), &b[..]));
        assert!(d.open.is_empty());
        drop(views);
        assert_eq!(&whole[..], &b[..], "the whole keeps the buffer");
    }

    #[test]
    fn pieces_that_are_not_its_views_are_joined_by_copying() {
        let (mut d, origin, b) = (Defrag::default(), Uuid::random(), body(9000));
        let views = stage_all(&mut d, origin, 4, &b, 3000);
        let mut other = views.clone();
        other[1] = Bytes::copy_from_slice(&views[1]);
        assert_eq!(d.take(origin, 4, &other), None, "a piece stored as it came");
        let views = stage_all(&mut d, origin, 4, &b, 3000);
        assert_eq!(d.take(origin, 4, &views[..2]), None, "not all of it");
        assert_eq!(d.take(origin, 5, &views), None, "another writeset");
    }

    #[test]
    fn a_piece_out_of_order_lets_the_buffer_go_and_a_first_piece_starts_again() {
        let (mut d, origin, b) = (Defrag::default(), Uuid::random(), body(9000));
        let first = d.stage(origin, 1, 9000, 0, &b[..3000]).unwrap();
        assert_eq!(d.stage(origin, 1, 9000, 6000, &b[6000..]), None, "a gap");
        assert_eq!(d.stage(origin, 1, 9000, 3000, &b[3000..6000]), None, "let go");
        assert_eq!(&first[..], &b[..3000], "an earlier view stays valid");
        let views = stage_all(&mut d, origin, 1, &b, 3000);
        assert!(d.take(origin, 1, &views).is_some(), "a resend from its first piece");
        assert_eq!(d.stage(origin, 2, 100, 0, &b[..101]), None, "beyond its total");
        assert_eq!(d.stage(origin, 3, MAX_TOTAL + 1, 0, &b[..1]), None, "a total no writeset has");
    }

    #[test]
    fn open_buffers_are_bounded_and_fences_let_them_go() {
        let (mut d, origin, b) = (Defrag::default(), Uuid::random(), body(100));
        for token in 1..=(MAX_OPEN as u64 + 2) {
            d.stage(origin, token, 200, 0, &b).unwrap();
        }
        assert_eq!(d.open.len(), MAX_OPEN);
        assert_eq!(d.stage(origin, 1, 200, 100, &b), None, "the oldest was let go");
        d.fence(origin, 5);
        assert!(d.open.iter().all(|o| o.token > 5));
        d.clear();
        assert!(d.open.is_empty());
    }
}
