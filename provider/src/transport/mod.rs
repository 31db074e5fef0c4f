//! TCP between providers: Galera's gmcast layer, for Raft messages and the
//! group's other traffic, which are opaque `(kind, payload)` frames here.
//!
//! Threads (all joined by `stop`):
//! * the listener: accepts, and enforces isolation every 100 ms;
//! * one per inbound connection during its handshake (at most 16);
//! * a dialer per wanted peer (`set_peer`), reconnecting with backoff;
//!   one per first contact (`connect_addr`) for its connect and handshake;
//! * per link, a writer draining the peer's bounded queue and a reader
//!   pushing frames into the owner's inbox.
//!
//! `send` never blocks: it only queues. Formats are in `frame` and
//! `handshake`, the one-link-per-peer rule in `peers`.

pub(crate) mod deflate;
pub(crate) mod frame;
pub(crate) mod handshake;
mod link;
mod listener;
pub(crate) mod net;
mod peers;
pub(crate) mod tls;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;

use bytes::Bytes;

use crate::gtid::Uuid;
use crate::log::{error, info, Level};

pub use frame::{RESERVED_KINDS, VERSION as PROTOCOL_VERSION};
use link::Pushed;
use listener::Quiet;
use net::Sockets;
use peers::Peer;

/// A member's Raft id.
pub type PeerId = u64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub id: PeerId,
    pub uuid: Uuid,
    /// The address peers reach this node at (`host:port`), advertised in
    /// the handshake. Not necessarily the bind address (0.0.0.0); empty:
    /// the bound address, unless that is a wildcard.
    pub listen: String,
    /// `gmcast.segment`, told to peers in the handshake (see `group::relay`).
    pub segment: u8,
}

/// The hook that admits or refuses a peer's IP (the server's allowlist).
pub type Allow = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Memory bounds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest payload sent or accepted; a bigger frame from a peer closes
    /// its connection. Raft messages are cut at 1 MiB of entries and a big
    /// writeset travels in pieces of 1 MiB (`group::pieces`); 64 MiB
    /// leaves room for a snapshot's certification index.
    pub max_frame: usize,
    /// Per-peer send queue, in frames and in bytes (headers included).
    /// Raft keeps at most 256 appends in flight per follower; 4096 frames
    /// is that plus heartbeats many times over, and 64 MiB is about half a
    /// second of a 1 Gb/s link: a queue this full means the peer or the
    /// network cannot keep up, and more memory would not help.
    pub queue_frames: usize,
    pub queue_bytes: usize,
}

impl Limits {
    pub const DEFAULT_MAX_FRAME: usize = 64 << 20;
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_frame: Self::DEFAULT_MAX_FRAME, queue_frames: 4096, queue_bytes: 64 << 20 }
    }
}

pub struct TransportConfig {
    /// `tcp://host:port` or `host:port` (gmcast.listen_addr); port 0 picks one.
    pub listen: String,
    /// wsrep_cluster_name: peers of another cluster are refused.
    pub cluster_name: String,
    pub me: Identity,
    pub allow: Allow,
    /// MariaDB's node isolation flag (set from a signal handler; nonzero
    /// isolates), checked beside `set_isolated`.
    pub isolation: Option<&'static AtomicU8>,
    pub limits: Limits,
    /// TLS for every connection (socket.ssl); None: plain TCP.
    pub tls: Option<Arc<tls::Tls>>,
    /// Compress frames to members of other segments
    /// (`lockstep.segment_compression`, see `deflate`).
    pub compress_segments: bool,
}

impl TransportConfig {
    /// Everyone allowed, no external isolation flag, default limits.
    pub fn new(listen: &str, cluster_name: &str, me: Identity) -> TransportConfig {
        TransportConfig {
            listen: listen.to_string(),
            cluster_name: cluster_name.to_string(),
            me,
            allow: Arc::new(|_: &str| true),
            isolation: None,
            limits: Limits::default(),
            tls: None,
            compress_segments: true,
        }
    }
}

#[derive(Clone, Debug)]
pub enum Inbound {
    Frame { from: PeerId, kind: u8, payload: Bytes },
    /// A link to this member is up (and, for `connect_addr`, its identity:
    /// then it may repeat for a member already up). `addr` is the address
    /// it advertises.
    PeerUp { id: PeerId, uuid: Uuid, addr: String },
    PeerDown { id: PeerId, reason: String },
    /// `connect_addr` failed: try the next address.
    ContactFailed { addr: String, reason: String },
}

/// Where the transport puts what it receives: its owner's queue.
pub trait Inbox: Send + Sync {
    /// A frame, from a link's reader: may wait while the owner is behind,
    /// which stops the reader and so, through TCP, the peer. False once
    /// the owner is gone.
    fn frame(&self, inbound: Inbound) -> bool;
    /// A link event (up, down, a failed contact), sent under the peers
    /// table's lock, which the owner's sends take too: never waits.
    fn event(&self, inbound: Inbound);
}

/// An unbounded channel, for tests.
impl Inbox for Sender<Inbound> {
    fn frame(&self, inbound: Inbound) -> bool {
        self.send(inbound).is_ok()
    }

    fn event(&self, inbound: Inbound) {
        let _ = self.send(inbound);
    }
}

/// For status variables and `lockstep cluster status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Bytes count frame headers too.
    pub bytes_sent: u64,
    /// Of `bytes_sent`, those to members of other segments (see
    /// `group::relay`).
    pub bytes_to_other_segments: u64,
    pub frames_sent: u64,
    pub bytes_received: u64,
    pub frames_received: u64,
    /// Frames `send` dropped because the peer's queue was full.
    pub frames_dropped: u64,
    /// Frames and bytes waiting in every send queue now.
    pub queued_frames: u64,
    pub queued_bytes: u64,
    /// Handshakes this node refused, and those peers refused.
    pub refused_in: u64,
    pub refused_out: u64,
    /// Connections closed for a corrupt frame or a malformed handshake.
    pub connections_broken: u64,
    /// Peers with a link now.
    pub links: u64,
}

#[derive(Default)]
struct Counters {
    bytes_sent: AtomicU64,
    bytes_to_other_segments: AtomicU64,
    frames_sent: AtomicU64,
    bytes_received: AtomicU64,
    frames_received: AtomicU64,
    frames_dropped: AtomicU64,
    queued_frames: AtomicI64,
    queued_bytes: AtomicI64,
    refused_in: AtomicU64,
    refused_out: AtomicU64,
    broken: AtomicU64,
}

impl Counters {
    fn queued(&self, frames: i64, bytes: i64) {
        self.queued_frames.fetch_add(frames, Ordering::Relaxed);
        self.queued_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn sent(&self, frames: usize, bytes: usize) {
        self.frames_sent.fetch_add(frames as u64, Ordering::Relaxed);
        self.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn received(&self, bytes: usize) {
        self.frames_received.fetch_add(1, Ordering::Relaxed);
        self.bytes_received.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn bad_frame(&self) {
        self.broken.fetch_add(1, Ordering::Relaxed);
    }
}

/// What every transport thread shares.
struct Shared {
    me: Identity,
    cluster: String,
    allow: Allow,
    limits: Limits,
    inbox: Box<dyn Inbox>,
    peers: Mutex<HashMap<PeerId, Peer>>,
    /// Signalled when links, wanted peers, isolation or stopping change.
    changed: Condvar,
    sockets: Arc<Sockets>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stopping: AtomicBool,
    isolated: AtomicBool,
    /// See `Transport::set_eager`; on by default (the tests' senders).
    eager: AtomicBool,
    external_isolation: Option<&'static AtomicU8>,
    pending_accepts: AtomicUsize,
    pending_contacts: AtomicUsize,
    counters: Counters,
    quiet: Quiet,
    /// Where outgoing connections leave from: the listen address, unless
    /// that is a wildcard.
    bind_ip: Option<std::net::IpAddr>,
    compress_segments: bool,
    /// Replaced whole by `reload_tls`; a handshake uses the one it read.
    tls: RwLock<Option<Arc<tls::Tls>>>,
}

impl Shared {
    fn peers(&self) -> MutexGuard<'_, HashMap<PeerId, Peer>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn tls(&self) -> Option<Arc<tls::Tls>> {
        self.tls.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Two relaxed loads: cheap enough for every frame.
    fn is_isolated(&self) -> bool {
        self.isolated.load(Ordering::Relaxed) || self.external_isolation.is_some_and(|f| f.load(Ordering::Relaxed) != 0)
    }

    /// Starts a thread that stop() will join; false once stopping (checked
    /// under the same lock stop() takes, so none slips past its join).
    fn spawn(&self, name: &str, f: impl FnOnce() + Send + 'static) -> bool {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if self.stopping.load(Ordering::Acquire) {
            return false;
        }
        // Reap the finished ones: links come and go for the process's life.
        let (done, running): (Vec<_>, Vec<_>) = threads.drain(..).partition(|h| h.is_finished());
        *threads = running;
        for h in done {
            let _ = h.join();
        }
        match std::thread::Builder::new().name(name.into()).spawn(f) {
            Ok(h) => {
                threads.push(h);
                true
            }
            Err(e) => {
                error!("cannot start a transport thread: {}", e);
                false
            }
        }
    }
}

/// Contacts (`connect_addr`) in progress at once; the owner tries a
/// cluster address list, a handful.
const MAX_PENDING_CONTACTS: usize = 16;

pub struct Transport {
    shared: Arc<Shared>,
    local: SocketAddr,
}

impl Transport {
    /// Binds the listen address and starts the listener thread.
    pub fn start(cfg: TransportConfig, inbox: impl Inbox + 'static) -> std::io::Result<Transport> {
        let listener = TcpListener::bind(net::resolve(&cfg.listen)?)?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let mut me = cfg.me;
        if me.listen.is_empty() && !local.ip().is_unspecified() {
            me.listen = local.to_string();
        }
        let shared = Arc::new(Shared {
            me,
            cluster: cfg.cluster_name,
            allow: cfg.allow,
            limits: cfg.limits,
            inbox: Box::new(inbox),
            peers: Mutex::default(),
            changed: Condvar::new(),
            sockets: Arc::default(),
            threads: Mutex::default(),
            stopping: AtomicBool::new(false),
            isolated: AtomicBool::new(false),
            eager: AtomicBool::new(true),
            external_isolation: cfg.isolation,
            pending_accepts: AtomicUsize::new(0),
            pending_contacts: AtomicUsize::new(0),
            counters: Counters::default(),
            quiet: Quiet::default(),
            tls: RwLock::new(cfg.tls),
            compress_segments: cfg.compress_segments,
            bind_ip: Some(local.ip()).filter(|ip| !ip.is_unspecified()),
        });
        let s = shared.clone();
        if !shared.spawn("lockstep-listen", move || s.run_listener(listener)) {
            return Err(std::io::Error::other("cannot start the listener thread"));
        }
        let security = match shared.tls() {
            Some(t) if t.settings.dynamic => "TLS, plain peers accepted (socket.dynamic)",
            Some(_) => "TLS",
            None => "plain TCP",
        };
        info!("group transport listening on {} as member {} (protocol {}, {})", local, shared.me.uuid, PROTOCOL_VERSION, security);
        Ok(Transport { shared, local })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// A member to keep connected (from the member list); a new address
    /// replaces the old one.
    pub fn set_peer(&self, id: PeerId, addr: &str) {
        self.shared.set_peer(id, addr);
    }

    /// Stops dialing `id` and leaves its link, if up, as it is.
    pub fn stop_dialing(&self, id: PeerId) {
        self.shared.stop_dialing(id);
    }

    /// Stops keeping `id` connected and closes its link.
    pub fn forget(&self, id: PeerId) {
        self.shared.forget(id);
    }

    /// First contact with an address (a `gcomm://` entry): the answer is
    /// PeerUp or ContactFailed in the inbox.
    pub fn connect_addr(&self, addr: &str) {
        let s = self.shared.clone();
        let failed = |reason: &str| {
            s.inbox.event(Inbound::ContactFailed { addr: addr.to_string(), reason: reason.to_string() });
        };
        if s.pending_contacts.fetch_add(1, Ordering::AcqRel) >= MAX_PENDING_CONTACTS {
            s.pending_contacts.fetch_sub(1, Ordering::AcqRel);
            return failed("too many contacts in progress");
        }
        let (me, addr_owned) = (s.clone(), addr.to_string());
        let started = s.spawn("lockstep-contact", move || {
            me.contact(addr_owned);
            me.pending_contacts.fetch_sub(1, Ordering::AcqRel);
        });
        if !started {
            s.pending_contacts.fetch_sub(1, Ordering::AcqRel);
            failed("the transport is stopped");
        }
    }

    /// Queues a frame for `to`; never blocks. False when it was dropped:
    /// no link, isolated, stopped, or the peer's queue is full. Dropping is
    /// safe for Raft (it treats a lost message like a lost packet: the
    /// leader re-sends from its log on the next heartbeat round) and
    /// blocking is not: it would stall the group thread, and with it
    /// heartbeats to every healthy peer, behind one slow peer. Senders of
    /// other kinds must retry as Raft does.
    pub fn send(&self, to: PeerId, kind: u8, payload: Bytes) -> bool {
        let s = &self.shared;
        if kind >= RESERVED_KINDS || payload.len() > s.limits.max_frame {
            error!("not sending a frame of kind {:#x} and {} bytes: reserved kind or over the frame limit", kind, payload.len());
            return false;
        }
        if s.stopping.load(Ordering::Relaxed) || s.is_isolated() {
            return false;
        }
        let Some(link) = s.live_link(to) else { return false };
        match link.push(kind, payload, &s.limits, s) {
            Pushed::Queued => true,
            Pushed::Full => {
                s.counters.frames_dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
            Pushed::Closed => false,
        }
    }

    pub fn own_segment(&self) -> u8 {
        self.shared.me.segment
    }

    /// The segment `id` announced, while a link to it is up.
    pub fn segment(&self, id: PeerId) -> Option<u8> {
        self.shared.live_link(id).and_then(|l| l.peer.segment)
    }

    /// Whether `id`, linked now, announced `feature` (a bit of
    /// `handshake::FEATURES`).
    pub fn has_feature(&self, id: PeerId, feature: u8) -> bool {
        self.shared.live_link(id).is_some_and(|l| l.peer.announced(feature))
    }

    /// Whether `send` may write a frame itself when its link is idle
    /// (see `link`), rather than wake the link's writer: its owner says
    /// so while its own thread has time to spare for the system call.
    pub fn set_eager(&self, eager: bool) {
        self.shared.eager.store(eager, Ordering::Relaxed);
    }

    pub fn tls(&self) -> Option<Arc<tls::Tls>> {
        self.shared.tls()
    }

    /// socket.ssl_reload: reads the key and certificates again (same
    /// paths); new connections use them, established ones keep theirs, as
    /// Galera's do. On an error the loaded ones stay.
    pub fn reload_tls(&self) -> Result<(), String> {
        let Some(current) = self.shared.tls() else {
            return Err("socket.ssl_reload: TLS is not in use on this node (socket.ssl)".into());
        };
        let fresh = tls::Tls::load(&current.settings)?;
        *self.shared.tls.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(fresh));
        info!("TLS key and certificates reloaded from {} and {}", current.settings.key, current.settings.cert);
        Ok(())
    }

    /// gmcast.isolate: on cuts every link and refuses all traffic until off.
    pub fn set_isolated(&self, on: bool) {
        let s = &self.shared;
        if s.isolated.swap(on, Ordering::SeqCst) != on && on {
            s.enforce_isolation();
        }
        s.changed.notify_all();
    }

    pub fn stats(&self) -> TransportStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TransportStats {
            bytes_sent: get(&c.bytes_sent),
            bytes_to_other_segments: get(&c.bytes_to_other_segments),
            frames_sent: get(&c.frames_sent),
            bytes_received: get(&c.bytes_received),
            frames_received: get(&c.frames_received),
            frames_dropped: get(&c.frames_dropped),
            queued_frames: c.queued_frames.load(Ordering::Relaxed).max(0) as u64,
            queued_bytes: c.queued_bytes.load(Ordering::Relaxed).max(0) as u64,
            refused_in: get(&c.refused_in),
            refused_out: get(&c.refused_out),
            connections_broken: get(&c.broken),
            links: self.shared.link_count() as u64,
        }
    }

    /// Closes the listener and every connection and joins every thread.
    /// Bounded by the slowest uninterruptible step, a connect in progress
    /// (1 s). Idempotent.
    pub fn stop(&self) {
        let s = &self.shared;
        {
            let _threads = s.threads.lock().unwrap_or_else(|e| e.into_inner());
            if s.stopping.swap(true, Ordering::AcqRel) {
                drop(_threads);
                return self.join_all();
            }
        }
        s.sockets.shutdown_all(true);
        s.cut_links(Level::Debug, "the transport is stopping");
        self.join_all();
        info!("group transport on {} stopped", self.local);
    }

    fn join_all(&self) {
        loop {
            let batch = std::mem::take(&mut *self.shared.threads.lock().unwrap_or_else(|e| e.into_inner()));
            if batch.is_empty() {
                return;
            }
            for h in batch {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        self.stop();
    }
}
