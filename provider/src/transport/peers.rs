//! The peer table: which members the owner wants (and where), the one link
//! kept per member, and the outgoing side: dialers that keep wanted peers
//! connected, and first contacts by address.
//!
//! Both ends of a pair may connect at once. Each end then ranks the two
//! connections the same way (`link::rank`), keeps the better, closes the
//! other; there is never more than one live link per peer in the table.

use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::handshake::{self, Failure, Hello, FEATURES};
use super::link::{self, Link, PeerInfo, Rank};
use super::net::{self, Registered};
use super::tls::{self, Session};
use super::{Inbound, PeerId, Shared};
use crate::gtid::Uuid;
use crate::log::{info, warning, Level};

/// Reconnect backoff: fast enough that a restarted peer is back within a
/// second, slow enough that a dead one costs a connect attempt a second.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// A dialer with nothing to do re-checks this often, for an isolation flag
/// set from a signal handler (which cannot wake it).
const DIALER_POLL: Duration = Duration::from_millis(250);
/// When two members want each other, the higher raft id waits this long
/// before dialing (at start, and whenever their link ends), so the lower
/// one's connection usually arrives first and no duplicate is made. The
/// ranking of duplicates still decides when both dial.
const HEAD_START: Duration = Duration::from_millis(100);

#[derive(Default)]
pub struct Peer {
    /// Where to reach it, while the owner wants it connected.
    pub wanted: Option<String>,
    pub link: Option<Arc<Link>>,
    /// A dialer thread runs for it.
    pub dialing: bool,
}

impl Peer {
    fn live_link(&self) -> Option<&Arc<Link>> {
        self.link.as_ref().filter(|l| !l.is_closed())
    }
}

/// What became of a handshaken connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Installed {
    /// The peer had no link: it is up now (PeerUp sent).
    Up,
    /// It replaced a worse or dying link: the peer stays up.
    Replaced,
    /// The peer's current link is better: this one was retired.
    Lost,
}

impl Shared {
    pub(super) fn live_link(&self, id: PeerId) -> Option<Arc<Link>> {
        self.peers().get(&id).and_then(|p| p.live_link().cloned())
    }

    pub(super) fn set_peer(self: &Arc<Self>, id: PeerId, addr: &str) {
        if id == self.me.id || id == 0 {
            return;
        }
        let start_dialer = {
            let mut peers = self.peers();
            let p = peers.entry(id).or_default();
            p.wanted = Some(addr.to_string());
            !std::mem::replace(&mut p.dialing, true)
        };
        self.changed.notify_all();
        if start_dialer {
            let me = self.clone();
            if !self.spawn("lockstep-dial", move || me.run_dialer(id)) {
                self.peers().entry(id).or_default().dialing = false;
            }
        }
    }

    pub(super) fn stop_dialing(&self, id: PeerId) {
        if let Some(p) = self.peers().get_mut(&id) {
            p.wanted = None;
        }
        self.changed.notify_all();
    }

    pub(super) fn forget(&self, id: PeerId) {
        let link = {
            let mut peers = self.peers();
            let Some(p) = peers.get_mut(&id) else { return };
            p.wanted = None;
            p.link.clone()
        };
        self.changed.notify_all();
        if let Some(l) = link {
            l.close(Level::Info, "forgotten", self);
        }
    }

    /// Makes a handshaken connection a link, unless the peer has a better
    /// one, and starts its threads.
    pub(super) fn establish(
        self: &Arc<Self>,
        stream: &TcpStream,
        session: Option<Arc<Session>>,
        reg: Registered,
        peer: PeerInfo,
        rank: Rank,
    ) -> Result<Installed, String> {
        stream.set_read_timeout(None).map_err(|e| e.to_string())?;
        stream.set_write_timeout(Some(net::WRITE_STALL)).map_err(|e| e.to_string())?;
        let reader_stream = stream.try_clone().map_err(|e| e.to_string())?;
        let writer_stream = stream.try_clone().map_err(|e| e.to_string())?;
        // Compressed: a plain link to another segment whose peer reads it
        // (see `deflate`).
        let deflate = self.compress_segments && session.is_none() && peer.announced(super::deflate::FEATURE_DEFLATE) && peer.in_other_segment(self.me.segment);
        let link = Arc::new(Link::new(peer, rank, writer_stream, session, reg).deflating(deflate));
        let installed = self.install(&link);
        if installed != Installed::Lost {
            info!("link to {} up", link.describe());
        }
        // A losing link runs too, retired: it delivers what the peer sent
        // on it before the peer saw the better one.
        let (s1, l1) = (self.clone(), link.clone());
        let (s2, l2) = (self.clone(), link.clone());
        let writer = self.spawn("lockstep-send", move || link::run_writer(s1, l1));
        if !writer || !self.spawn("lockstep-recv", move || link::run_reader(s2, l2, reader_stream)) {
            link.close(Level::Debug, "the transport is stopping", self);
            self.unlink(&link, "the transport is stopping");
        }
        Ok(installed)
    }

    /// Under the table lock, so that frames sent meanwhile cannot slip
    /// between a retired link's unsent frames and the winner.
    fn install(&self, link: &Arc<Link>) -> Installed {
        let mut peers = self.peers();
        let p = peers.entry(link.peer.id).or_default();
        let installed = match p.link.take() {
            Some(cur) if !cur.is_closed() && cur.rank <= link.rank => {
                link.retire(None, "a better connection to the same member exists", self);
                p.link = Some(cur);
                Installed::Lost
            }
            Some(cur) => {
                cur.retire(Some(link), "replaced by a better connection to the same member", self);
                p.link = Some(link.clone());
                Installed::Replaced
            }
            None => {
                p.link = Some(link.clone());
                // Sent under the table lock: PeerUp always precedes the
                // link's frames and its PeerDown.
                let p = &link.peer;
                self.inbox.event(Inbound::PeerUp { id: p.id, uuid: p.uuid, addr: p.addr.clone() });
                Installed::Up
            }
        };
        drop(peers);
        self.changed.notify_all();
        installed
    }

    /// Called by a link's reader when it is done: the peer is down if this
    /// was its link.
    pub(super) fn unlink(&self, link: &Arc<Link>, reason: &str) {
        let id = link.peer.id;
        let mut peers = self.peers();
        if let Some(p) = peers.get_mut(&id) {
            if p.link.as_ref().is_some_and(|l| Arc::ptr_eq(l, link)) {
                p.link = None;
                self.inbox.event(Inbound::PeerDown { id, reason: reason.to_string() });
            }
            if p.wanted.is_none() && p.link.is_none() && !p.dialing {
                peers.remove(&id);
            }
        }
        drop(peers);
        self.changed.notify_all();
    }

    /// Keeps a wanted peer connected, with backoff, until it is forgotten
    /// or the transport stops.
    fn run_dialer(self: Arc<Self>, id: PeerId) {
        let mut backoff = MIN_BACKOFF;
        let mut not_before = Instant::now() + self.head_start(id);
        let mut last_failure = String::new();
        while let Some(addr) = self.next_dial(id, not_before) {
            match self.dial(&addr, Some(id)) {
                Ok(_) => {
                    backoff = MIN_BACKOFF;
                    last_failure.clear();
                }
                Err(f) => {
                    let msg = f.to_string();
                    // Once per change: a peer down for an hour is one line.
                    if msg != last_failure && !self.stopping.load(Ordering::Acquire) {
                        match f {
                            Failure::Refused(why) if why.starts_with(handshake::NOT_ALLOWED) => info!("connection to {} {}; retrying", addr, msg),
                            Failure::Refused(_) => warning!("connection to {} {}; retrying", addr, msg),
                            Failure::Broken(_) | Failure::Gone => info!("cannot reach {}: {}; retrying", addr, msg),
                        }
                        last_failure = msg;
                    }
                    not_before = Instant::now() + backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// Waits until the peer needs dialing and it is time; None when the
    /// dialer should end (then it is marked gone under the same lock, so a
    /// set_peer racing with the exit starts a new one).
    fn next_dial(&self, id: PeerId, mut not_before: Instant) -> Option<String> {
        let mut peers = self.peers();
        loop {
            let stopping = self.stopping.load(Ordering::Acquire);
            let p = peers.get_mut(&id)?;
            let Some(addr) = p.wanted.clone().filter(|_| !stopping) else {
                p.dialing = false;
                if p.link.is_none() {
                    peers.remove(&id);
                }
                return None;
            };
            let now = Instant::now();
            let idle = p.live_link().is_some() || self.is_isolated();
            if idle {
                not_before = now + self.head_start(id);
            } else if now >= not_before {
                return Some(addr);
            }
            let wait = if idle { DIALER_POLL } else { (not_before - now).min(DIALER_POLL) };
            peers = self.changed.wait_timeout(peers, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    fn head_start(&self, peer: PeerId) -> Duration {
        if self.me.id > peer { HEAD_START } else { Duration::ZERO }
    }

    /// Connects to `addr`, handshakes and establishes the link. `expect`:
    /// the member the owner believes is there.
    ///
    /// With `socket.dynamic` a node speaks TLS first and plain TCP to a
    /// peer that closes on TLS (a node with `socket.ssl` off), as Galera's
    /// dynamic sockets fall back during a rolling upgrade; without it a
    /// node with TLS speaks nothing else.
    pub(super) fn dial(self: &Arc<Self>, addr: &str, expect: Option<PeerId>) -> Result<(Installed, PeerInfo), Failure> {
        let tls = self.tls();
        match self.dial_once(addr, expect, tls.as_deref()) {
            Err(Failure::Broken(why)) if tls.as_ref().is_some_and(|t| t.settings.dynamic) && why.contains(tls::PEER_CLOSED) => {
                if self.quiet.first_in_a_while(format!("to {} plain", addr)) {
                    info!("{} closed on TLS: speaking plain TCP to it (socket.dynamic)", addr);
                }
                self.dial_once(addr, expect, None)
            }
            dialed => dialed,
        }
    }

    fn dial_once(self: &Arc<Self>, addr: &str, expect: Option<PeerId>, tls: Option<&tls::Tls>) -> Result<(Installed, PeerInfo), Failure> {
        let broken = |e: std::io::Error| Failure::Broken(e.to_string());
        if self.is_isolated() {
            return Err(Failure::Broken("isolated".into()));
        }
        let to = net::resolve(addr).map_err(broken)?;
        let stream = net::connect_from(self.bind_ip, &to, net::CONNECT_TIMEOUT).map_err(broken)?;
        let reg = self.sockets.register(&stream).map_err(broken)?;
        net::prepare_handshake(&stream).map_err(broken)?;
        let nonce = Uuid::random().raft_id();
        let hello = Hello {
            cluster: self.cluster.clone(),
            uuid: self.me.uuid,
            id: self.me.id,
            listen: self.me.listen.clone(),
            nonce,
            segment: Some(self.me.segment),
            features: FEATURES,
        };
        let session = match tls {
            None => None,
            Some(t) => match t.connect(&stream, to.ip()) {
                Ok(s) => Some(Arc::new(s)),
                Err(tls::Failed::Refused(why)) => {
                    self.counters.refused_out.fetch_add(1, Ordering::Relaxed);
                    return Err(Failure::Refused(format!("failed the TLS handshake: {}", why)));
                }
                Err(tls::Failed::Broken(why)) => return Err(Failure::Broken(format!("TLS handshake: {}", why))),
            },
        };
        let welcome = match &session {
            Some(s) => handshake::dial(&mut s.stream(&stream), &hello).map_err(|f| match f {
                Failure::Broken(why) if why.contains(tls::PEER_REFUSED) => Failure::Refused(why),
                f => f,
            }),
            None => handshake::dial(&mut &stream, &hello),
        };
        let welcome = welcome.inspect_err(|f| {
            if matches!(f, Failure::Refused(_)) {
                self.counters.refused_out.fetch_add(1, Ordering::Relaxed);
            }
        })?;
        if welcome.uuid == self.me.uuid {
            return Err(Failure::Broken("this is the node's own address".into()));
        }
        if welcome.id == 0 || welcome.id == self.me.id {
            return Err(Failure::Broken(format!("the peer claims raft id {}", welcome.id)));
        }
        if let Some(want) = expect.filter(|w| *w != welcome.id) {
            return Err(Failure::Broken(format!("member {} is there, not the expected raft id {}", welcome.uuid, want)));
        }
        if self.is_isolated() {
            return Err(Failure::Broken("isolated".into()));
        }
        let listen = if welcome.listen.is_empty() { addr.to_string() } else { welcome.listen };
        let peer = PeerInfo::new(welcome.id, welcome.uuid, listen, welcome.segment, welcome.features);
        let rank = link::rank(self.me.id, peer.id, self.me.id, nonce);
        let installed = self.establish(&stream, session, reg, peer.clone(), rank).map_err(Failure::Broken)?;
        Ok((installed, peer))
    }

    /// A first contact by address: reports PeerUp (even if the member was
    /// already linked: it answers the question) or ContactFailed.
    pub(super) fn contact(self: &Arc<Self>, addr: String) {
        let event = match self.dial(&addr, None) {
            Ok((Installed::Up, _)) => return, // establish reported PeerUp
            Ok((_, p)) => Inbound::PeerUp { id: p.id, uuid: p.uuid, addr: p.addr },
            Err(f) => {
                match &f {
                    // A joiner retries its contacts twice a second: a
                    // refusal (another cluster, a certificate) is said
                    // once a minute per address, as the accepting side does.
                    Failure::Refused(_) if !self.quiet.first_in_a_while(format!("to {} {}", addr, f)) => {}
                    Failure::Refused(why) if why.starts_with(handshake::NOT_ALLOWED) => info!("connection to {} {}", addr, f),
                    Failure::Refused(_) => warning!("connection to {} {}", addr, f),
                    Failure::Broken(_) | Failure::Gone => info!("cannot contact {}: {}", addr, f),
                }
                Inbound::ContactFailed { addr, reason: f.to_string() }
            }
        };
        self.inbox.event(event);
    }

    /// Closes every link (isolation, stop).
    pub(super) fn cut_links(&self, level: Level, why: &str) {
        let links: Vec<Arc<Link>> = self.peers().values().filter_map(|p| p.live_link().cloned()).collect();
        for l in links {
            l.close(level, why, self);
        }
        self.changed.notify_all();
    }

    pub(super) fn link_count(&self) -> usize {
        self.peers().values().filter(|p| p.live_link().is_some()).count()
    }
}
