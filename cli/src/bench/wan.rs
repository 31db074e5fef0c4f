//! `--wan-delay-ms D`: one far node on a loopback-only machine.
//!
//! The kernel here has no netem, so the delay is a user-space TCP proxy in
//! front of every node's group (gcomm) port; it holds each chunk D ms
//! before passing it on, in both directions, on every link that touches
//! the last node (the "far" one). Round trips to it grow by 2·D; links
//! between near nodes pass through undelayed. This reproduces Galera's
//! known weakness: EVS delivers a message only when every member has it,
//! so one far node slows every commit, while a Raft majority need not wait.
//!
//! Wiring (checked against Galera 4's gmcast):
//! - node N listens on its own address `gmcast.listen_addr=tcp://127.10.0.N:P`
//!   (P = its usual gcomm port), and its outgoing connections leave from
//!   that address (gmcast binds them to the listen host);
//! - the proxy for node N listens on 127.0.0.1:P, where the launcher's
//!   `gcomm://127.0.0.1:P,...` lists already point, and forwards to
//!   127.10.0.N:P;
//! - gmcast names a peer by the connection's remote IP plus the port the
//!   peer announces in its handshake. The dialler sees the proxy's
//!   127.0.0.1; the acceptor sees the proxy's outgoing connection, whose
//!   source is 127.0.0.1 too: both record 127.0.0.1:P, the proxy, and
//!   gossip only that. No node ever learns a real address, so every link
//!   stays on a proxy;
//! - the proxy knows the caller by its source address 127.10.0.M, hence
//!   which links to delay.
//!
//! With `--segments N` the nodes are in N sides (their gmcast.segment)
//! and every link between two sides is delayed, links within one are not;
//! the proxy counts the bytes that cross, so the report can say how many
//! bytes a transaction costs the WAN.
//!
//! `--wan-delay-ms 0` measures what the proxy itself costs (on this
//! 2-core machine: a lot, every group message crosses two more sockets).
//! A provider must honour gmcast.listen_addr for this wiring to hold.

use crate::cluster::{provider_setting, ClusterSpec, Error, Result};
use lockstep_config::keys;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const ACCEPT_POLL: Duration = Duration::from_millis(20);
const CHUNK: usize = 64 * 1024;
/// Chunks in flight per direction of one link.
const QUEUE_CHUNKS: usize = 4096;

/// Node N's real listen address: 127.10.0.N.
fn node_ip(node: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 10, 0, node as u8)
}

/// Which node a connection comes from, by its source address.
fn caller(addr: &SocketAddr) -> Option<usize> {
    match addr.ip() {
        IpAddr::V4(ip) if ip.octets()[..3] == [127, 10, 0] => Some(ip.octets()[3] as usize),
        _ => None,
    }
}

/// Moves every node's group listener to 127.10.0.N and returns the
/// (not yet listening) proxy; call [`DelayProxy::listen`] for each node as
/// it is launched. `side(node)`: links between nodes of different sides
/// are delayed (node 0: a caller the proxy does not know).
pub fn wire(spec: &mut ClusterSpec, delay_ms: u32, side: impl Fn(usize) -> usize) -> Result<DelayProxy> {
    if spec.nodes > 250 {
        return Err(Error::msg("--wan-delay-ms supports up to 250 nodes"));
    }
    let mut ports = BTreeMap::new();
    for node in 1..=spec.nodes {
        let port = spec.ports(node).gcomm;
        ports.insert(node, port);
        let option = provider_setting(keys::GMCAST_LISTEN_ADDR, format!("tcp://{}:{port}", node_ip(node)));
        *spec = std::mem::take(spec).node_provider_option(node, option);
    }
    let sides = Arc::new((0..=spec.nodes).map(side).collect());
    Ok(DelayProxy {
        sides,
        delay: Duration::from_millis(delay_ms as u64),
        ports,
        shared: Arc::new(Shared::default()),
        listeners: Mutex::new(Vec::new()),
    })
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Every socket the proxy holds, to shut them down on drop.
    sockets: Mutex<Vec<TcpStream>>,
    /// Connections carried, by (caller, target) node.
    links: Mutex<BTreeMap<(usize, usize), u32>>,
    /// Bytes carried on delayed links, both directions.
    crossed: AtomicU64,
}

/// The running proxy; dropping it closes every proxied connection.
pub struct DelayProxy {
    /// Each node's side (index: node; 0 for unknown callers).
    sides: Arc<Vec<usize>>,
    delay: Duration,
    ports: BTreeMap<usize, u16>,
    shared: Arc<Shared>,
    listeners: Mutex<Vec<JoinHandle<()>>>,
}

impl DelayProxy {
    /// Starts accepting for `node` on 127.0.0.1:<its gcomm port>. Called
    /// when the node is launched, not before: the launcher checks that the
    /// node's ports are free on 127.0.0.1 just before it starts the node.
    pub fn listen(&self, node: usize) -> Result<()> {
        let port = self.ports[&node];
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| Error::io(format!("WAN proxy: listening on 127.0.0.1:{port}"), e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("WAN proxy: non-blocking listener", e))?;
        let link = Link {
            target: node,
            upstream: SocketAddr::from((node_ip(node), port)),
            sides: self.sides.clone(),
            delay: self.delay,
            shared: self.shared.clone(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("wan-proxy-node{node}"))
            .spawn(move || link.accept_loop(listener))
            .map_err(|e| Error::io("WAN proxy: starting a thread", e))?;
        self.listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(handle);
        Ok(())
    }

    pub fn describe(&self) -> String {
        let far: Vec<String> = (1..self.sides.len()).filter(|n| self.sides[*n] != self.sides[1]).map(|n| format!("node{n}")).collect();
        let sides = self.sides[1..].iter().max().map_or(1, |m| m + 1);
        match sides {
            2 if far.len() == 1 => format!(
                "WAN proxy: {} is {} ms away one way (+{} ms per round trip) on every group link",
                far[0],
                self.delay.as_millis(),
                2 * self.delay.as_millis()
            ),
            _ => format!(
                "WAN proxy: {} segments, {} ms apart one way (+{} ms per round trip) on every group link between them",
                sides,
                self.delay.as_millis(),
                2 * self.delay.as_millis()
            ),
        }
    }

    /// Bytes carried so far on delayed links, both directions.
    pub fn crossed(&self) -> u64 {
        self.shared.crossed.load(Ordering::Relaxed)
    }

    /// The links the proxy carried, e.g. `1->3 x1, 2->3 x1 (delayed)`:
    /// proof that the wiring held.
    pub fn links(&self) -> String {
        let links = self.shared.links.lock().unwrap_or_else(|p| p.into_inner());
        let parts: Vec<String> = links
            .iter()
            .map(|((from, to), n)| {
                let delayed = self.is_far(*from, *to) && !self.delay.is_zero();
                let mark = if delayed { " delayed" } else { "" };
                format!("node{from}->node{to} x{n}{mark}")
            })
            .collect();
        parts.join(", ")
    }

    fn is_far(&self, from: usize, to: usize) -> bool {
        is_far(&self.sides, from, to)
    }
}

fn is_far(sides: &[usize], from: usize, to: usize) -> bool {
    let side = |n: usize| sides.get(n).copied().unwrap_or(0);
    side(from) != side(to)
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for socket in self
            .shared
            .sockets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = socket.shutdown(Shutdown::Both);
        }
        for handle in self
            .listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = handle.join();
        }
    }
}

/// One node's listener and what to do with its connections.
struct Link {
    target: usize,
    upstream: SocketAddr,
    sides: Arc<Vec<usize>>,
    delay: Duration,
    shared: Arc<Shared>,
}

impl Link {
    fn accept_loop(self, listener: TcpListener) {
        while !self.shared.stop.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((client, from)) => self.forward(client, from),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(ACCEPT_POLL)
                }
                Err(_) => std::thread::sleep(ACCEPT_POLL),
            }
        }
    }

    /// Connects upstream and starts the two delayed directions. A failed
    /// upstream connect just drops the client: gmcast retries.
    fn forward(&self, client: TcpStream, from: SocketAddr) {
        let Ok(server) = TcpStream::connect(self.upstream) else {
            return;
        };
        let caller = caller(&from).unwrap_or(0);
        let far = is_far(&self.sides, caller, self.target);
        let delay = if far { self.delay } else { Duration::ZERO };
        *self
            .shared
            .links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((caller, self.target))
            .or_default() += 1;
        for stream in [&client, &server] {
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_nodelay(true);
        }
        let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
            return;
        };
        if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
            self.shared
                .sockets
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend([c, s]);
        }
        let counter = far.then(|| self.shared.clone());
        spawn_direction(client, server2, delay, counter.clone());
        spawn_direction(server, client2, delay, counter);
    }
}

/// Copies `from` to `to`, each chunk held until `delay` after it was read.
/// A reader thread stamps chunks and a writer thread releases them, so the
/// delay adds latency without limiting throughput.
fn spawn_direction(from: TcpStream, to: TcpStream, delay: Duration, counter: Option<Arc<Shared>>) {
    if delay.is_zero() && counter.is_none() {
        // Near links: one thread copying in place, no hand-off to wake.
        let _ = std::thread::Builder::new()
            .name("wan-proxy-copy".into())
            .spawn(move || copy(from, to));
        return;
    }
    // Bounded like a socket buffer: a writer that cannot keep up stops
    // the reader, which pushes back on the sender as TCP would.
    let (tx, rx) = mpsc::sync_channel::<(Instant, Vec<u8>)>(QUEUE_CHUNKS);
    let reader = from;
    let _ = std::thread::Builder::new()
        .name("wan-proxy-read".into())
        .spawn(move || read_chunks(reader, tx, delay, counter));
    let _ = std::thread::Builder::new()
        .name("wan-proxy-write".into())
        .spawn(move || write_chunks(to, rx));
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

fn read_chunks(mut from: TcpStream, tx: mpsc::SyncSender<(Instant, Vec<u8>)>, delay: Duration, counter: Option<Arc<Shared>>) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(shared) = &counter {
                    shared.crossed.fetch_add(n as u64, Ordering::Relaxed);
                }
                if tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    // Dropping tx ends the writer after it flushed what is queued.
}

fn write_chunks(mut to: TcpStream, rx: mpsc::Receiver<(Instant, Vec<u8>)>) {
    for (due, chunk) in rx {
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        if to.write_all(&chunk).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Provider;

    #[test]
    fn wiring_moves_listeners_and_keeps_gcomm_lists() {
        let mut spec = ClusterSpec::new(3, Provider::Galera, "/tmp/x").base_port(28000);
        let proxy = wire(&mut spec, 7, |n| usize::from(n == 3)).unwrap();
        assert_eq!(
            spec.node_extra[&3].provider,
            ["gmcast.listen_addr=tcp://127.10.0.3:28021"]
        );
        assert!(spec.validate().is_ok());
        assert_eq!(*proxy.sides, vec![0, 0, 0, 1]);
        assert!(proxy.describe().contains("node3 is 7 ms away"), "{}", proxy.describe());
        let mut four = ClusterSpec::new(4, Provider::Galera, "/tmp/x").base_port(28000);
        let segments = wire(&mut four, 50, |n| usize::from(n > 2)).unwrap();
        assert!(segments.describe().contains("2 segments, 50 ms apart"), "{}", segments.describe());
        assert!(is_far(&segments.sides, 2, 3) && !is_far(&segments.sides, 3, 4) && !is_far(&segments.sides, 1, 2));
        assert_eq!(caller(&"127.10.0.2:5000".parse().unwrap()), Some(2));
        assert_eq!(caller(&"127.0.0.1:5000".parse().unwrap()), None);
    }

    /// A fake "node 3" behind the proxy: an echo server on 127.10.0.3.
    #[test]
    fn delays_both_directions_of_far_links() {
        let echo = TcpListener::bind("127.10.0.3:0").unwrap();
        let port = echo.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
        });
        let proxy = DelayProxy {
            sides: Arc::new(vec![0, 0, 0, 1]),
            delay: Duration::from_millis(30),
            ports: BTreeMap::from([(3, port)]),
            shared: Arc::new(Shared::default()),
            listeners: Mutex::new(Vec::new()),
        };
        // The echo server holds 127.10.0.3:port; the proxy takes
        // 127.0.0.1:port, as it does in front of a real node.
        proxy.listen(3).unwrap();
        let started = Instant::now();
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        client.write_all(b"ping").unwrap();
        let mut reply = [0u8; 4];
        client.read_exact(&mut reply).unwrap();
        let rtt = started.elapsed();
        assert_eq!(&reply, b"ping");
        assert!(rtt >= Duration::from_millis(60), "{rtt:?}");
        assert!(rtt < Duration::from_millis(1000), "{rtt:?}");
        assert_eq!(proxy.links(), "node0->node3 x1 delayed");
        assert_eq!(proxy.crossed(), 8, "ping there and back");
    }
}
