//! A link: one handshaken connection to a peer, its bounded send queue,
//! and its two threads. The writer drains the queue in batches, one
//! vectored write per batch; the reader turns frames into `Inbound::Frame`.
//!
//! A frame pushed while the queue is empty and nobody is writing is sent
//! at once by the pusher (the group thread), without waiting, when the
//! transport is eager (`Transport::set_eager`): waking the writer costs a
//! thread switch on every Raft message, twice per commit's round trip,
//! and on a loaded machine a woken thread can wait long for a core. What
//! the socket does not take at once goes to the writer.
//! Whichever side fails first closes the link, which shuts the socket down
//! and so stops the other; the reader, last out, unlinks it from the peer
//! table and reports `PeerDown`.
//!
//! A link that loses to a better connection to the same member is retired,
//! not cut: its unsent frames move to the winner, its writer sends FIN
//! after the last batch, and its reader delivers what the peer had already
//! sent until the peer's FIN. Nothing is lost when both ends connect at
//! once; frames may only be reordered around the switch.

use std::collections::VecDeque;
use std::io::{BufReader, IoSlice, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use bytes::Bytes;

use super::frame::{self, FrameError, HEADER_LEN, RESERVED_KINDS};
use super::deflate;
use super::net::{self, Registered};
use super::tls::Session;
use super::{Inbound, Limits, PeerId, Shared};
use crate::gtid::Uuid;
use crate::log::{self, Level};

/// Reads are buffered: many small Raft messages arrive per system call.
const READ_BUFFER: usize = 64 << 10;
/// The writer re-checks its link this often even when nobody wakes it.
const IDLE_CHECK: Duration = Duration::from_secs(1);
/// A retired link whose peer neither sends nor hangs up this long is cut.
const RETIRE_GRACE: Duration = Duration::from_secs(2);

const OPEN: u8 = 0;
const RETIRING: u8 = 1;
const CLOSED: u8 = 2;

/// Who is at the other end.
#[derive(Clone, Debug)]
pub struct PeerInfo {
    pub id: PeerId,
    pub uuid: Uuid,
    /// Its listen address (what it advertised), else where we reached it.
    pub addr: String,
    /// Its `gmcast.segment`; None: a build that does not say (nor relay).
    pub segment: Option<u8>,
    /// The feature bits its handshake announced (see `handshake`).
    pub features: u8,
}

impl PeerInfo {
    /// Who announced `features` in its handshake.
    pub fn new(id: PeerId, uuid: Uuid, addr: String, segment: Option<u8>, features: u8) -> PeerInfo {
        PeerInfo { id, uuid, addr, segment, features }
    }

    /// It announced `feature` (a bit of `handshake::FEATURES`).
    pub fn announced(&self, feature: u8) -> bool {
        self.features & feature != 0
    }

    /// It said it is in another segment than `mine` (a build that says
    /// nothing is taken for one without segments).
    pub fn in_other_segment(&self, mine: u8) -> bool {
        self.segment.is_some_and(|s| s != mine)
    }
}

/// Orders two connections between the same two members the same way on
/// both ends: the one initiated by the lower raft id wins, then the lower
/// nonce (both ends know both). Smaller is better.
pub type Rank = (bool, u64);

pub fn rank(me: PeerId, peer: PeerId, initiator: PeerId, nonce: u64) -> Rank {
    (initiator != me.min(peer), nonce)
}

pub enum Pushed {
    Queued,
    Full,
    Closed,
}

#[derive(Default)]
struct Queue {
    /// The end of a frame a pusher began to send (header included): it
    /// goes out before anything else.
    tail: Option<Bytes>,
    frames: VecDeque<(u8, Bytes)>,
    /// Payload plus header bytes queued (the tail's too).
    bytes: usize,
    /// A pusher is writing to the socket now: the writer waits, and other
    /// frames queue behind its frame.
    sending: bool,
}

/// What the writer takes in one go.
struct Batch {
    tail: Option<Bytes>,
    frames: Vec<(u8, Bytes)>,
}

pub struct Link {
    pub peer: PeerInfo,
    pub rank: Rank,
    stream: TcpStream,
    /// TLS state, when the link is encrypted: then only the writer writes
    /// to the socket (records must reach it in the order they were made),
    /// so pushers never send themselves.
    session: Option<Arc<Session>>,
    /// The writer's buffer for records, reused batch after batch.
    records: Mutex<Vec<u8>>,
    /// Frames of `deflate::MIN_BYTES` and more go compressed, by the
    /// writer (never by a pusher: that is the group thread).
    deflate: bool,
    queue: Mutex<Queue>,
    ready: Condvar,
    /// OPEN, RETIRING or CLOSED; only OPEN takes frames.
    state: AtomicU8,
    /// Why it was closed, and how loudly to say so.
    reason: Mutex<Option<(Level, String)>>,
    _registered: Registered,
}

impl Link {
    fn count_sent(&self, shared: &Shared, frames: usize, bytes: usize) {
        shared.counters.sent(frames, bytes);
        if self.peer.in_other_segment(shared.me.segment) {
            shared.counters.bytes_to_other_segments.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    }

    pub fn new(peer: PeerInfo, rank: Rank, stream: TcpStream, session: Option<Arc<Session>>, registered: Registered) -> Link {
        Link {
            peer,
            rank,
            stream,
            session,
            records: Mutex::default(),
            deflate: false,
            queue: Mutex::default(),
            ready: Condvar::new(),
            state: AtomicU8::new(OPEN),
            reason: Mutex::new(None),
            _registered: registered,
        }
    }

    pub fn deflating(self, deflate: bool) -> Link {
        Link { deflate, ..self }
    }

    /// Takes no more frames (closed or retiring).
    pub fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) != OPEN
    }

    /// Queues a frame unless the queue is at its bound (frames or bytes; a
    /// frame always fits an empty queue, so no frame under the size limit
    /// is unsendable).
    pub fn push(&self, kind: u8, payload: Bytes, limits: &Limits, shared: &Shared) -> Pushed {
        let size = payload.len() + HEADER_LEN;
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_closed() {
            return Pushed::Closed;
        }
        let full = q.frames.len() >= limits.queue_frames || (!q.frames.is_empty() && q.bytes + size > limits.queue_bytes);
        if full {
            return Pushed::Full;
        }
        let deflated = self.deflate && payload.len() >= deflate::MIN_BYTES;
        let eager = shared.eager.load(Ordering::Relaxed) && self.session.is_none() && !deflated;
        if eager && q.frames.is_empty() && q.tail.is_none() && !q.sending && !shared.is_isolated() {
            q.sending = true;
            drop(q);
            return self.send_now(kind, payload, shared);
        }
        q.frames.push_back((kind, payload));
        q.bytes += size;
        shared.counters.queued(1, size as i64);
        drop(q);
        self.ready.notify_one();
        Pushed::Queued
    }

    /// Sends one frame without blocking, the caller holding `sending`;
    /// what the socket does not take now (it is full: the peer is slow)
    /// goes before the queue for the writer.
    fn send_now(&self, kind: u8, payload: Bytes, shared: &Shared) -> Pushed {
        let header = frame::header(kind, &payload);
        let total = header.len() + payload.len();
        let slices = [std::io::IoSlice::new(&header), std::io::IoSlice::new(&payload)];
        let sent = match net::send_vectored_now(&self.stream, &slices) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            other => other,
        };
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.sending = false;
        let n = match sent {
            Ok(n) => n,
            Err(e) => {
                drop(q);
                self.close(write_error_level(&e), format!("write failed: {}", e), shared);
                return Pushed::Closed;
            }
        };
        if n == total {
            self.count_sent(shared, 1, total);
        } else if self.state.load(Ordering::Acquire) != CLOSED {
            self.count_sent(shared, 0, n); // the frame counts once, when whole
            let mut whole = Vec::with_capacity(total);
            whole.extend_from_slice(&header);
            whole.extend_from_slice(&payload);
            let tail = Bytes::from(whole).slice(n..);
            shared.counters.queued(1, tail.len() as i64);
            q.bytes += tail.len();
            q.tail = Some(tail);
        }
        let wake = q.tail.is_some() || !q.frames.is_empty() || self.is_closed();
        drop(q);
        if wake {
            self.ready.notify_one();
        }
        Pushed::Queued
    }

    /// Everything queued, once there is something and no pusher is
    /// sending; None once closed. A retiring link's writer still gets the
    /// tail of a frame a pusher began (the peer would read half a frame).
    fn take_batch(&self, shared: &Shared) -> Option<Batch> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let state = self.state.load(Ordering::Acquire);
            if state == CLOSED {
                return None;
            }
            if !q.sending {
                if q.tail.is_some() || (state == OPEN && !q.frames.is_empty()) {
                    break;
                }
                if state == RETIRING {
                    return None;
                }
            }
            q = self.ready.wait_timeout(q, IDLE_CHECK).unwrap_or_else(|e| e.into_inner()).0;
        }
        let count = q.frames.len() + usize::from(q.tail.is_some());
        shared.counters.queued(-(count as i64), -(q.bytes as i64));
        q.bytes = 0;
        q.sending = true;
        Some(Batch { tail: q.tail.take(), frames: q.frames.drain(..).collect() })
    }

    /// The writer is done with its batch: pushers may send again.
    fn batch_done(&self) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).sending = false;
    }

    /// Closes the link (the first reason given is kept): drops the queue,
    /// shuts the socket down, which wakes the reader, and wakes the writer.
    pub fn close(&self, level: Level, reason: impl Into<String>, shared: &Shared) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if self.state.swap(CLOSED, Ordering::AcqRel) == CLOSED {
            return;
        }
        self.reason.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| (level, reason.into()));
        let count = q.frames.len() + usize::from(q.tail.is_some());
        shared.counters.queued(-(count as i64), -(q.bytes as i64));
        (q.frames, q.tail, q.bytes) = (VecDeque::new(), None, 0);
        drop(q);
        let _ = self.stream.shutdown(Shutdown::Both);
        self.ready.notify_all();
    }

    /// Stops sending on this link without losing what is on its way (see
    /// the module comment); unsent frames go to `successor`, else away.
    pub fn retire(&self, successor: Option<&Link>, why: &str, shared: &Shared) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if self.state.compare_exchange(OPEN, RETIRING, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return;
        }
        *self.reason.lock().unwrap_or_else(|e| e.into_inner()) = Some((Level::Debug, why.to_string()));
        // A frame's tail stays: only this link's writer may finish it.
        let unsent_bytes = q.frames.iter().map(|(_, p)| p.len() + HEADER_LEN).sum::<usize>();
        q.bytes -= unsent_bytes;
        let unsent = Queue { frames: std::mem::take(&mut q.frames), bytes: unsent_bytes, ..Queue::default() };
        drop(q);
        match successor {
            Some(s) => s.prepend(unsent, shared),
            None => shared.counters.queued(-(unsent.frames.len() as i64), -(unsent.bytes as i64)),
        }
        let _ = self.stream.set_read_timeout(Some(RETIRE_GRACE));
        self.ready.notify_all();
    }

    /// Puts frames from a retired link before this link's own.
    fn prepend(&self, mut older: Queue, shared: &Shared) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_closed() {
            shared.counters.queued(-(older.frames.len() as i64), -(older.bytes as i64));
            return;
        }
        older.frames.append(&mut q.frames);
        q.frames = older.frames;
        q.bytes += older.bytes;
        drop(q);
        self.ready.notify_one();
    }

    fn closing_reason(&self) -> (Level, String) {
        let r = self.reason.lock().unwrap_or_else(|e| e.into_inner());
        r.clone().unwrap_or((Level::Info, "closed".into()))
    }

    /// One write of the writer's: vectored on a plain link, records on an
    /// encrypted one.
    fn send(&self, slices: &[IoSlice<'_>]) -> std::io::Result<usize> {
        match &self.session {
            None => net::send_vectored(&self.stream, slices),
            Some(s) => s.send(&self.stream, slices, &mut self.records.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }

    pub fn describe(&self) -> String {
        format!("member {} at {}", self.peer.uuid, self.peer.addr)
    }
}

pub fn run_writer(shared: Arc<Shared>, link: Arc<Link>) {
    write_until_closed(&shared, &link);
    if link.state.load(Ordering::Acquire) == RETIRING {
        // FIN after the last batch: the peer's reader ends cleanly.
        let _ = link.stream.shutdown(Shutdown::Write);
    }
}

fn write_until_closed(shared: &Shared, link: &Link) {
    while let Some(batch) = link.take_batch(shared) {
        if shared.is_isolated() {
            link.close(Level::Info, "isolated", shared);
            return;
        }
        let tail = batch.tail.as_deref().unwrap_or_default();
        let frames = if link.deflate { deflate_all(batch.frames) } else { batch.frames };
        let written = frame::write_batch(tail, &frames, |s| link.send(s));
        link.batch_done();
        match written {
            Ok(bytes) => link.count_sent(shared, frames.len() + usize::from(batch.tail.is_some()), bytes),
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                        format!("the peer has not read for {} s", net::WRITE_STALL.as_secs())
                    }
                    _ => format!("write failed: {}", e),
                };
                link.close(write_error_level(&e), why, shared);
                return;
            }
        }
        // Pushers that found the writer busy queued behind it.
        link.ready.notify_one();
    }
}

/// The frames worth compressing, compressed (see `deflate`).
fn deflate_all(frames: Vec<(u8, Bytes)>) -> Vec<(u8, Bytes)> {
    frames
        .into_iter()
        .map(|(kind, payload)| match (payload.len() >= deflate::MIN_BYTES).then(|| deflate::pack(kind, &payload)).flatten() {
            Some(packed) => (frame::COMPRESSED, packed),
            None => (kind, payload),
        })
        .collect()
}

/// As on the reading side: a peer that went away (a stop, a kill) is the
/// group's news, not a fault of this link; mtr fails a test on a warning
/// at a peer's shutdown.
fn write_error_level(e: &std::io::Error) -> Level {
    if is_peer_gone(e) { Level::Info } else { Level::Warn }
}

pub fn run_reader(shared: Arc<Shared>, link: Arc<Link>, stream: TcpStream) {
    let source: Box<dyn Read + Send> = match &link.session {
        Some(s) => Box::new(s.clone().reader(stream)),
        None => Box::new(stream),
    };
    let mut r = BufReader::with_capacity(READ_BUFFER, source);
    let (level, why) = loop {
        let read = frame::read_frame(&mut r, shared.limits.max_frame).and_then(|(kind, payload)| {
            let wire = HEADER_LEN + payload.len();
            match kind {
                frame::COMPRESSED => deflate::unpack(&payload, shared.limits.max_frame).map(|(k, p)| (k, p, wire)).map_err(FrameError::Malformed),
                _ => Ok((kind, payload, wire)),
            }
        });
        match read {
            Ok((kind, _, _)) if kind >= RESERVED_KINDS => {
                shared.counters.bad_frame();
                break (Level::Warn, format!("unexpected frame kind {:#x} after the handshake", kind));
            }
            Ok((kind, payload, wire)) => {
                if shared.is_isolated() {
                    break (Level::Info, "isolated".into());
                }
                shared.counters.received(wire);
                if !shared.inbox.frame(Inbound::Frame { from: link.peer.id, kind, payload }) {
                    break (Level::Debug, "the inbox is gone".into());
                }
            }
            Err(FrameError::Closed) => break (Level::Info, "closed by the peer".into()),
            // A peer that died (kill -9, a crash) resets its links: the
            // group's eviction is the operator's news, not this.
            Err(FrameError::Io(e)) if is_peer_gone(&e) => break (Level::Info, e.to_string()),
            Err(e @ FrameError::Io(_)) => break (Level::Warn, e.to_string()),
            Err(e) => {
                shared.counters.bad_frame();
                break (Level::Warn, e.to_string());
            }
        }
    };
    // If someone closed the link first, its reason is the real one (our
    // read error is only the consequence).
    link.close(level, why, &shared);
    let (level, why) = link.closing_reason();
    log::write(level, &format!("link to {} closed: {}", link.describe(), why));
    shared.unlink(&link, &why);
}

fn is_peer_gone(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof)
}
