//! The accepting side: the listener thread (which also enforces isolation
//! on a short tick, since a signal handler can only set a flag) and the
//! handshake of each accepted connection on a thread of its own, so a slow
//! or silent stranger delays nobody.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::frame::{self, REFUSE, WELCOME};
use super::handshake::{self, Failure, Hello, Welcome, FEATURES};
use super::link::{self, PeerInfo};
use super::tls::{self, Session};
use super::{net, Shared};
use crate::log::{debug, info, warning, Level};

/// How often the listener looks at the stop and isolation flags.
const TICK: Duration = Duration::from_millis(100);
/// Connections accepted per tick before the flags are looked at again.
const ACCEPTS_PER_TICK: usize = 64;
/// Handshakes in progress at once: beyond this, new connections are
/// dropped. Peers are a handful; only a flood reaches it, and it must not
/// turn into a thread per connection.
pub const MAX_PENDING_HANDSHAKES: usize = 16;
/// After a Refuse, how long the peer has to hang up first (see `refuse`).
const LINGER: Duration = Duration::from_millis(500);
/// The same complaint about the same address is logged once per window.
const LOG_WINDOW: Duration = Duration::from_secs(60);

/// Releases a handshake slot when its thread ends, however it ends.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Repeated refusals (a misconfigured node retries every second) are
/// logged once a minute per address and reason. Bounded: forgets all when
/// it holds too many.
#[derive(Default)]
pub struct Quiet(Mutex<HashMap<String, Instant>>);

impl Quiet {
    pub fn first_in_a_while(&self, key: String) -> bool {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if seen.len() >= 256 {
            seen.clear();
        }
        match seen.get(&key) {
            Some(t) if now.duration_since(*t) < LOG_WINDOW => false,
            _ => {
                seen.insert(key, now);
                true
            }
        }
    }
}

impl Shared {
    pub(super) fn run_listener(self: Arc<Self>, listener: TcpListener) {
        let mut was_isolated = false;
        while !self.stopping.load(Ordering::Acquire) {
            let isolated = self.is_isolated();
            if isolated != was_isolated {
                info!("isolation {}: {}", if isolated { "on" } else { "off" }, if isolated { "every link cut" } else { "reconnecting" });
                was_isolated = isolated;
                self.changed.notify_all();
            }
            if isolated {
                self.enforce_isolation();
            }
            if net::wait_readable(&listener, TICK) {
                self.accept_pending(&listener);
            }
        }
    }

    /// Cuts links and handshakes in progress; repeated every tick while
    /// isolated, which also catches a connection that raced the flag.
    pub(super) fn enforce_isolation(&self) {
        self.cut_links(Level::Info, "isolated");
        self.sockets.shutdown_all(false);
    }

    fn accept_pending(self: &Arc<Self>, listener: &TcpListener) {
        for _ in 0..ACCEPTS_PER_TICK {
            match listener.accept() {
                Ok((s, from)) => self.admit(s, from),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    // Out of descriptors, say: wait for the next tick
                    // rather than spin.
                    warning!("cannot accept a group connection: {}", e);
                    return;
                }
            }
        }
    }

    fn admit(self: &Arc<Self>, s: TcpStream, from: SocketAddr) {
        if self.is_isolated() {
            debug!("dropping connection from {}: isolated", from);
            return;
        }
        if self.pending_accepts.fetch_add(1, Ordering::AcqRel) >= MAX_PENDING_HANDSHAKES {
            self.pending_accepts.fetch_sub(1, Ordering::AcqRel);
            if self.quiet.first_in_a_while(format!("busy {}", from.ip())) {
                warning!("dropping connection from {}: {} handshakes already in progress", from, MAX_PENDING_HANDSHAKES);
            }
            return;
        }
        let me = self.clone();
        if !self.spawn("lockstep-accept", move || {
            let _slot = Slot(&me.pending_accepts);
            me.greet(s, from);
        }) {
            // The closure, and its slot release, never ran.
            self.pending_accepts.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The accepting side of the handshake.
    fn greet(self: &Arc<Self>, s: TcpStream, from: SocketAddr) {
        let Ok(reg) = self.sockets.register(&s) else { return };
        if let Err(e) = net::prepare_handshake(&s) {
            info!("dropping connection from {}: {}", from, e);
            return;
        }
        let Some(session) = self.secure(&s, from) else { return };
        match &session {
            Some(tls) => self.greet_on(&mut tls.stream(&s), &s, session.clone(), reg, from),
            None => self.greet_on(&mut &s, &s, None, reg, from),
        }
    }

    /// TLS or not, by the connection's first byte and this node's
    /// settings: Some(session) to go on (None inside: plain), None when
    /// the connection was refused or dropped (and said so).
    fn secure(&self, s: &TcpStream, from: SocketAddr) -> Option<Option<Arc<Session>>> {
        let mut first = [0u8; 1];
        match s.peek(&mut first) {
            Ok(1) => {}
            Ok(_) => {
                info!("dropping connection from {}: closed before the handshake", from);
                return None;
            }
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => "no handshake in time".to_string(),
                    _ => e.to_string(),
                };
                info!("dropping connection from {}: {}", from, why);
                return None;
            }
        }
        let speaks_tls = first[0] == tls::RECORD_HANDSHAKE;
        match self.tls() {
            None if speaks_tls => {
                // A note: a peer with socket.dynamic goes on in plain TCP
                // at once (Galera's plain node logs nothing then), and one
                // without says on its side that it cannot reach this node.
                self.counters.refused_in.fetch_add(1, Ordering::Relaxed);
                if self.quiet.first_in_a_while(format!("{} speaks TLS", from.ip())) {
                    info!("closing connection from {}: the peer speaks TLS and this node has socket.ssl off", from);
                }
                None
            }
            None => Some(None),
            Some(t) if speaks_tls => match t.accept(s) {
                Ok(session) => Some(Some(Arc::new(session))),
                Err(tls::Failed::Refused(why)) => {
                    self.counters.refused_in.fetch_add(1, Ordering::Relaxed);
                    self.complain(from, &format!("TLS handshake failed: {}", why));
                    None
                }
                Err(tls::Failed::Broken(why)) => {
                    info!("dropping connection from {}: TLS handshake: {}", from, why);
                    None
                }
            },
            Some(t) if t.settings.dynamic => Some(None),
            Some(_) => {
                let why = "this node accepts TLS connections only (socket.ssl) and the peer speaks plain TCP";
                self.refuse(&mut &*s, s, from, why);
                None
            }
        }
    }

    fn complain(&self, from: SocketAddr, why: &str) {
        if !self.quiet.first_in_a_while(format!("{} {}", from.ip(), why)) {
            return;
        }
        if why.starts_with(handshake::NOT_ALLOWED) {
            warning!("{}", why);
        } else {
            warning!("refusing connection from {}: {}", from, why);
        }
    }

    /// The Hello and Welcome, on a plain or TLS stream.
    fn greet_on(
        self: &Arc<Self>,
        io: &mut (impl Read + Write),
        s: &TcpStream,
        session: Option<Arc<Session>>,
        reg: net::Registered,
        from: SocketAddr,
    ) {
        let hello = match handshake::read_hello(io) {
            Ok(h) => h,
            Err(Failure::Refused(reason)) => return self.refuse(io, s, from, &reason),
            Err(Failure::Broken(reason)) => {
                self.counters.bad_frame();
                warning!("dropping connection from {}: {}", from, reason);
                return;
            }
            // mtr fails a test on this warning when a peer stops while it
            // dials (galera.mdev-22063 once in CI).
            Err(f @ Failure::Gone) => return info!("dropping connection from {}: {}", from, f),
        };
        let welcome = Welcome { uuid: self.me.uuid, id: self.me.id, listen: self.me.listen.clone(), segment: Some(self.me.segment), features: FEATURES };
        if hello.uuid == self.me.uuid {
            // Our own first contact reached us (gcomm:// lists every node,
            // this one too): say who we are, the dialer then lets go.
            let _ = frame::write_frame(io, WELCOME, &welcome.encode());
            return;
        }
        if let Some(reason) = self.check(&hello, from) {
            return self.refuse(io, s, from, &reason);
        }
        if let Err(e) = frame::write_frame(io, WELCOME, &welcome.encode()) {
            info!("dropping connection from {}: cannot send welcome: {}", from, e);
            return;
        }
        if self.is_isolated() {
            return;
        }
        let addr = if hello.listen.is_empty() { from.to_string() } else { hello.listen.clone() };
        let rank = link::rank(self.me.id, hello.id, hello.id, hello.nonce);
        let peer = PeerInfo::new(hello.id, hello.uuid, addr, hello.segment, hello.features);
        if let Err(e) = self.establish(s, session, reg, peer, rank) {
            info!("dropping connection from {}: {}", from, e);
        }
    }

    /// Why this Hello is not welcome, if it is not.
    fn check(&self, hello: &Hello, from: SocketAddr) -> Option<String> {
        let ip = from.ip().to_string();
        if !(self.allow)(&ip) {
            return Some(format!("{}, IP {} not found in allowlist (wsrep_allowlist)", handshake::NOT_ALLOWED, ip));
        }
        if hello.cluster != self.cluster {
            return Some(format!("cluster name '{}' differs from '{}'", hello.cluster, self.cluster));
        }
        if hello.id == 0 || hello.id == self.me.id {
            return Some(format!("raft id {} is not usable (this node's is {})", hello.id, self.me.id));
        }
        None
    }

    /// Says why to the peer on `io` (plain or TLS), and in the log.
    fn refuse(&self, io: &mut impl Write, s: &TcpStream, from: SocketAddr, reason: &str) {
        self.counters.refused_in.fetch_add(1, Ordering::Relaxed);
        self.complain(from, reason);
        let _ = frame::write_frame(io, REFUSE, &handshake::encode_refuse(reason));
        let _ = s.shutdown(Shutdown::Write);
        // Closing with the peer's bytes unread would reset the connection,
        // and a reset can destroy the Refuse before the peer reads it: let
        // the peer hang up first (bounded by LINGER and a few reads).
        let _ = s.set_read_timeout(Some(LINGER));
        let mut sink = [0u8; 4096];
        for _ in 0..16 {
            if !matches!((&mut &*s).read(&mut sink), Ok(n) if n > 0) {
                break;
            }
        }
    }
}
