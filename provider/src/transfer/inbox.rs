//! The joiner's end of an IST, between the thread that reads the donor's
//! connection and the applier that applies what it brings. A bounded
//! queue: a large transfer streams through (the donor waits on TCP while
//! the queue is full) instead of piling up in memory before the server is
//! ready to apply it.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::ist::Header;
use crate::gcache::Cached;
use crate::gtid::{Seqno, Uuid};

/// Bytes of writesets the joiner holds before the reading thread waits
/// for the applier. One writeset larger than this still passes, alone.
pub const MAX_BUFFERED: usize = 64 << 20;

/// How often waiting threads look again at a flag that has no condvar
/// signal (a receiver closed while its reader waits for room is signalled;
/// this only bounds a missed wakeup).
const RECHECK: Duration = Duration::from_secs(1);

#[derive(Default)]
pub struct Incoming {
    inner: Mutex<Inner>,
    cv: Condvar,
}

#[derive(Default)]
struct Inner {
    /// The transfer expected: (history, this member's id).
    expect: Option<(Uuid, Uuid)>,
    header: Option<Header>,
    items: VecDeque<(Seqno, Cached)>,
    bytes: usize,
    /// The next seqno due from the donor.
    next: Seqno,
    /// Chunks received: the consumer's progress clock.
    received: u64,
    error: Option<String>,
    /// The receiver is gone: nothing more comes.
    closed: bool,
}

impl Inner {
    /// The first error is the one reported.
    fn fail(&mut self, why: String) {
        self.error.get_or_insert(why);
    }

    fn ended(&self) -> bool {
        self.header.is_some_and(|h| self.next > h.last)
    }
}

impl Incoming {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new transfer to `joiner` in `history`; whatever was left of an
    /// earlier one is dropped.
    pub fn open(&self, history: Uuid, joiner: Uuid) {
        *self.lock() = Inner { expect: Some((history, joiner)), ..Inner::default() };
        self.cv.notify_all();
    }

    /// The receiver is gone: a reader waiting for room stops, and a
    /// consumer learns that nothing more comes.
    pub fn close(&self) {
        self.lock().closed = true;
        self.cv.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The donor's header (reading thread).
    pub fn header(&self, h: Header) -> Result<(), String> {
        let mut inner = self.lock();
        let result = match (inner.expect, inner.header) {
            (_, Some(_)) => Err("the donor sent a second header".to_string()),
            (None, None) => Err("no transfer expected".to_string()),
            (Some((history, joiner)), None) => h.check(history, joiner),
        };
        match &result {
            Ok(()) => {
                inner.header = Some(h);
                inner.next = h.first;
                inner.received += 1;
            }
            Err(e) => inner.fail(e.clone()),
        }
        self.cv.notify_all();
        result
    }

    /// One seqno from the donor (reading thread): waits while the queue is
    /// full. An error ends the transfer.
    pub fn push(&self, seqno: Seqno, item: Cached) -> Result<(), String> {
        let size = item.bytes();
        let mut inner = self.lock();
        while inner.bytes > 0 && inner.bytes + size > MAX_BUFFERED && !inner.closed && inner.error.is_none() {
            inner = self.cv.wait_timeout(inner, RECHECK).unwrap_or_else(|e| e.into_inner()).0;
        }
        let result = match inner.header {
            _ if inner.closed => Err("the IST receiver closed".to_string()),
            _ if inner.error.is_some() => Err(inner.error.clone().unwrap_or_default()),
            None => Err("the donor sent a seqno before its header".to_string()),
            Some(h) if seqno != inner.next || seqno > h.last => {
                Err(format!("IST gap: got seqno {} where {} was due (range {}-{})", seqno, inner.next, h.first, h.last))
            }
            Some(_) => Ok(()),
        };
        match &result {
            Ok(()) => {
                inner.items.push_back((seqno, item));
                inner.bytes += size;
                inner.next += 1;
                inner.received += 1;
            }
            Err(e) if !inner.closed => inner.fail(e.clone()),
            Err(_) => {}
        }
        self.cv.notify_all();
        result
    }

    /// The connection broke or spoke nonsense (reading thread).
    pub fn fail(&self, why: String) {
        self.lock().fail(why);
        self.cv.notify_all();
    }

    /// The donor's header, once it came (applier).
    pub fn wait_header(&self, stall: Duration) -> Result<Header, String> {
        self.wait(stall, |inner| inner.header.map(Ok))
    }

    /// The next seqno of the transfer, None once all of it was taken
    /// (applier). Fails when the transfer failed or made no progress for
    /// `stall`.
    pub fn next(&self, stall: Duration) -> Result<Option<(Seqno, Cached)>, String> {
        let taken = self.wait(stall, |inner| match inner.items.pop_front() {
            Some((seqno, item)) => {
                inner.bytes -= item.bytes();
                Some(Ok(Some((seqno, item))))
            }
            None if inner.ended() => Some(Ok(None)),
            None => None,
        });
        self.cv.notify_all(); // room for the reader
        taken
    }

    /// Waits until `ready` has an answer, an error came, the receiver
    /// closed, or nothing arrived for `stall`.
    fn wait<T>(&self, stall: Duration, mut ready: impl FnMut(&mut Inner) -> Option<Result<T, String>>) -> Result<T, String> {
        let mut inner = self.lock();
        let mut deadline = Instant::now() + stall;
        let mut seen = inner.received;
        loop {
            if let Some(e) = &inner.error {
                return Err(e.clone());
            }
            if let Some(answer) = ready(&mut inner) {
                return answer;
            }
            if inner.closed {
                return Err("the IST receiver closed before the transfer ended".into());
            }
            if inner.received != seen {
                (seen, deadline) = (inner.received, Instant::now() + stall);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no IST progress for {:?}", stall));
            }
            inner = self.cv.wait_timeout(inner, left.min(RECHECK)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::Arc;

    const SOON: Duration = Duration::from_millis(200);

    fn ws(len: usize) -> Cached {
        Cached::Writeset { payload: Bytes::from(vec![7u8; len]), certified: true }
    }

    fn opened() -> (Incoming, Header) {
        let inbox = Incoming::default();
        let h = Header { history: Uuid::random(), joiner: Uuid::random(), first: 11, last: 12 };
        inbox.open(h.history, h.joiner);
        (inbox, h)
    }

    #[test]
    fn a_transfer_passes_in_order_and_ends_at_its_last_seqno() {
        let (inbox, h) = opened();
        inbox.header(h).unwrap();
        assert_eq!(inbox.wait_header(SOON), Ok(h));
        inbox.push(11, ws(3)).unwrap();
        assert_eq!(inbox.next(SOON).unwrap().map(|(s, _)| s), Some(11));
        inbox.push(12, Cached::View { conf: Bytes::new() }).unwrap();
        assert_eq!(inbox.next(SOON), Ok(Some((12, Cached::View { conf: Bytes::new() }))));
        assert_eq!(inbox.next(SOON), Ok(None));
    }

    #[test]
    fn an_empty_range_ends_with_its_header() {
        let (inbox, h) = opened();
        inbox.header(Header { last: 10, ..h }).unwrap();
        assert_eq!(inbox.next(SOON), Ok(None));
        assert!(inbox.push(11, ws(1)).unwrap_err().contains("gap"));
    }

    #[test]
    fn wrong_history_joiner_gap_or_order_fail_the_transfer() {
        let (inbox, h) = opened();
        assert!(inbox.header(Header { history: Uuid::random(), ..h }).unwrap_err().contains("history"));
        assert!(inbox.next(SOON).unwrap_err().contains("history"));
        let (inbox, h) = opened();
        assert!(inbox.header(Header { joiner: Uuid::random(), ..h }).is_err());
        let (inbox, _) = opened();
        assert!(inbox.push(11, ws(1)).unwrap_err().contains("before its header"));
        let (inbox, h) = opened();
        inbox.header(h).unwrap();
        assert!(inbox.push(12, ws(1)).unwrap_err().contains("got seqno 12 where 11 was due"));
        assert!(inbox.next(SOON).unwrap_err().contains("gap"), "the error outlives the queue");
        let (inbox, h) = opened();
        inbox.header(h).unwrap();
        assert!(inbox.header(h).unwrap_err().contains("second header"));
        assert!(Incoming::default().header(h).unwrap_err().contains("no transfer expected"));
    }

    #[test]
    fn a_silent_donor_or_a_closed_receiver_ends_the_wait() {
        let (inbox, h) = opened();
        assert!(inbox.wait_header(SOON).unwrap_err().contains("no IST progress"));
        inbox.header(h).unwrap();
        inbox.close();
        assert!(inbox.next(SOON).unwrap_err().contains("closed"));
        assert!(inbox.push(11, ws(1)).unwrap_err().contains("closed"));
    }

    #[test]
    fn the_reader_waits_for_room_and_an_oversized_item_passes_alone() {
        let inbox = Arc::new(Incoming::default());
        let h = Header { history: Uuid::random(), joiner: Uuid::random(), first: 1, last: 3 };
        inbox.open(h.history, h.joiner);
        inbox.header(h).unwrap();
        inbox.push(1, ws(MAX_BUFFERED + 1)).unwrap();
        let reader = {
            let inbox = inbox.clone();
            std::thread::spawn(move || (inbox.push(2, ws(1)), inbox.push(3, ws(1))))
        };
        std::thread::sleep(SOON);
        assert!(!reader.is_finished(), "the queue is full: the reader waits");
        assert_eq!(inbox.next(SOON).unwrap().map(|(s, _)| s), Some(1));
        assert_eq!(reader.join().unwrap(), (Ok(()), Ok(())));
        let rest: Vec<_> = std::iter::from_fn(|| inbox.next(SOON).unwrap()).map(|(s, _)| s).collect();
        assert_eq!(rest, [2, 3]);
    }
}
