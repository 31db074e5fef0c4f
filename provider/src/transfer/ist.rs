//! Incremental state transfer: the donor sends the seqnos a joiner misses
//! from its gcache, over the group's links (one ordered TCP stream per
//! pair of members, so chunks arrive in the order sent), and the joiner
//! applies them before anything ordered after it joined.
//!
//! ```text
//! version u8 (1) | history 16 | kind u8
//!   kind 1, writeset: seqno i64 | certified u8 | payload
//!   kind 2, view:     seqno i64
//!   kind 3, end:      last seqno i64
//! ```
//!
//! The donor decides IST is possible (its gcache covers the joiner's gap)
//! and tells the server to bypass the SST script's data copy; the joiner
//! learns it when the server reports a position older than the one it
//! joined at.

use bytes::Bytes;

use crate::gcache::Cached;
use crate::group::entry::Reader;
use crate::gtid::{Seqno, Uuid};

const VERSION: u8 = 1;
const WRITESET: u8 = 1;
const VIEW: u8 = 2;
const END: u8 = 3;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chunk {
    Item { seqno: Seqno, item: Cached },
    End { last: Seqno },
}

pub fn encode(history: Uuid, chunk: &Chunk) -> Bytes {
    let mut out = vec![VERSION];
    out.extend_from_slice(&history.0);
    match chunk {
        Chunk::Item { seqno, item: Cached::Writeset { payload, certified } } => {
            out.push(WRITESET);
            out.extend_from_slice(&seqno.to_le_bytes());
            out.push(*certified as u8);
            out.extend_from_slice(payload);
        }
        Chunk::Item { seqno, item: Cached::View } => {
            out.push(VIEW);
            out.extend_from_slice(&seqno.to_le_bytes());
        }
        Chunk::End { last } => {
            out.push(END);
            out.extend_from_slice(&last.to_le_bytes());
        }
    }
    Bytes::from(out)
}

pub fn decode(buf: &Bytes) -> Result<(Uuid, Chunk), String> {
    let mut r = Reader { buf, pos: 0 };
    let bad = |e| format!("malformed IST chunk: {}", e);
    let version = r.u8().map_err(bad)?;
    if version != VERSION {
        return Err(format!("IST chunk version {} (this node speaks {})", version, VERSION));
    }
    let history = r.uuid().map_err(bad)?;
    let kind = r.u8().map_err(bad)?;
    let seqno = r.u64().map_err(bad)? as Seqno;
    let chunk = match kind {
        WRITESET => {
            let certified = r.u8().map_err(bad)? != 0;
            Chunk::Item { seqno, item: Cached::Writeset { payload: buf.slice(r.pos..), certified } }
        }
        VIEW => Chunk::Item { seqno, item: Cached::View },
        END => Chunk::End { last: seqno },
        k => return Err(format!("unknown IST chunk kind {}", k)),
    };
    Ok((history, chunk))
}

/// What a joiner has received: the items in order, until the end marker.
#[derive(Debug, Default)]
pub struct Inbox {
    /// The position the joiner's data holds: items start right after it.
    after: Option<(Uuid, Seqno)>,
    items: Vec<(Seqno, Cached)>,
    bytes: usize,
    end: Option<Seqno>,
    error: Option<String>,
}

/// Bounds what a joiner buffers: the donor's gcache cannot hold more than
/// `gcache.size`, and this is far above its default (128M).
pub const MAX_BYTES: usize = 4 << 30;

impl Inbox {
    /// Starts expecting the seqnos after `position` (a new transfer).
    pub fn expect(&mut self, position: (Uuid, Seqno)) {
        *self = Inbox { after: Some(position), ..Inbox::default() };
    }

    pub fn take(&mut self, history: Uuid, chunk: Chunk) {
        let Some((uuid, after)) = self.after else { return }; // not expecting
        if self.error.is_some() || self.end.is_some() {
            return;
        }
        if history != uuid {
            self.error = Some(format!("IST of history {} for a joiner of history {}", history, uuid));
            return;
        }
        match chunk {
            Chunk::Item { seqno, item } => {
                let want = self.items.last().map_or(after + 1, |(s, _)| s + 1);
                if seqno != want {
                    self.error = Some(format!("IST gap: got seqno {} where {} was due", seqno, want));
                    return;
                }
                self.bytes += match &item {
                    Cached::Writeset { payload, .. } => payload.len(),
                    Cached::View => 0,
                };
                if self.bytes > MAX_BYTES {
                    self.error = Some(format!("IST larger than {} bytes", MAX_BYTES));
                    return;
                }
                self.items.push((seqno, item));
            }
            Chunk::End { last } => {
                let have = self.items.last().map_or(after, |(s, _)| *s);
                if have != last {
                    self.error = Some(format!("IST ended at {} but {} was announced", have, last));
                    return;
                }
                self.end = Some(last);
            }
        }
    }

    /// How many chunks came so far (progress, for the joiner's timeout).
    pub fn received(&self) -> usize {
        self.items.len() + self.end.is_some() as usize
    }

    /// Done: the items (or why the transfer failed).
    pub fn finished(&mut self) -> Option<Result<Vec<(Seqno, Cached)>, String>> {
        if let Some(e) = self.error.take() {
            self.after = None;
            return Some(Err(e));
        }
        self.end?;
        self.after = None;
        Some(Ok(std::mem::take(&mut self.items)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(b: &'static [u8]) -> Cached {
        Cached::Writeset { payload: Bytes::from_static(b), certified: true }
    }

    #[test]
    fn chunks_round_trip() {
        let h = Uuid::random();
        for c in [Chunk::Item { seqno: 5, item: ws(b"abc") }, Chunk::Item { seqno: 6, item: Cached::View }, Chunk::End { last: 6 }] {
            assert_eq!(decode(&encode(h, &c)).unwrap(), (h, c));
        }
        let uncertified = Chunk::Item { seqno: 7, item: Cached::Writeset { payload: Bytes::new(), certified: false } };
        assert_eq!(decode(&encode(h, &uncertified)).unwrap().1, uncertified);
        assert!(decode(&Bytes::from_static(&[2])).unwrap_err().contains("version 2"));
        assert!(decode(&Bytes::from_static(&[1, 0])).is_err());
    }

    #[test]
    fn an_inbox_takes_the_gap_in_order_until_the_end() {
        let h = Uuid::random();
        let mut inbox = Inbox::default();
        inbox.take(h, Chunk::Item { seqno: 11, item: ws(b"x") });
        assert!(inbox.finished().is_none(), "not expecting anything yet");
        inbox.expect((h, 10));
        inbox.take(h, Chunk::Item { seqno: 11, item: ws(b"x") });
        inbox.take(h, Chunk::Item { seqno: 12, item: Cached::View });
        assert!(inbox.finished().is_none());
        inbox.take(h, Chunk::End { last: 12 });
        let items = inbox.finished().unwrap().unwrap();
        assert_eq!(items.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![11, 12]);
    }

    #[test]
    fn a_gap_another_history_or_a_short_end_fails_the_transfer() {
        let h = Uuid::random();
        let mut inbox = Inbox::default();
        inbox.expect((h, 10));
        inbox.take(h, Chunk::Item { seqno: 12, item: ws(b"x") });
        assert!(inbox.finished().unwrap().unwrap_err().contains("gap"));
        inbox.expect((h, 10));
        inbox.take(Uuid::random(), Chunk::End { last: 10 });
        assert!(inbox.finished().unwrap().unwrap_err().contains("history"));
        inbox.expect((h, 10));
        inbox.take(h, Chunk::End { last: 11 });
        assert!(inbox.finished().unwrap().unwrap_err().contains("announced"));
    }
}
