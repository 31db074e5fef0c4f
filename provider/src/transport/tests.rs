//! Transports on loopback, ephemeral ports; fake peers are plain
//! TcpStreams speaking the wire format by hand.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicU8;
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::frame::{self, FrameError, HELLO, REFUSE, WELCOME};
use super::handshake::{self, Hello, Welcome};
use super::*;

const SOON: Duration = Duration::from_secs(3);

struct Node {
    t: Transport,
    rx: Receiver<Inbound>,
    id: PeerId,
    uuid: Uuid,
}

impl Node {
    fn addr(&self) -> String {
        self.t.local_addr().to_string()
    }

    /// The next inbound event matching `pred`, skipping others.
    fn wait(&self, what: &str, pred: impl Fn(&Inbound) -> bool) -> Inbound {
        let deadline = Instant::now() + SOON;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(ev) if pred(&ev) => return ev,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        panic!("no {} within {:?}", what, SOON);
    }

    fn wait_up(&self, id: PeerId) {
        self.wait("PeerUp", |e| matches!(e, Inbound::PeerUp { id: i, .. } if *i == id));
    }

    fn wait_down(&self, id: PeerId) {
        self.wait("PeerDown", |e| matches!(e, Inbound::PeerDown { id: i, .. } if *i == id));
    }

    /// `n` frames from `from`, in arrival order (other events skipped).
    fn frames_from(&self, from: PeerId, n: usize) -> Vec<Bytes> {
        (0..n)
            .map(|_| match self.wait("frame", |e| matches!(e, Inbound::Frame { from: f, .. } if *f == from)) {
                Inbound::Frame { payload, .. } => payload,
                _ => unreachable!(),
            })
            .collect()
    }

    /// `n` frames from anyone, by sender, each in arrival order.
    fn frames_by_sender(&self, n: usize) -> HashMap<PeerId, Vec<Bytes>> {
        let mut by = HashMap::<PeerId, Vec<Bytes>>::new();
        for _ in 0..n {
            if let Inbound::Frame { from, payload, .. } = self.wait("frame", |e| matches!(e, Inbound::Frame { .. })) {
                by.entry(from).or_default().push(payload);
            }
        }
        by
    }

    fn drain(&self) {
        while self.rx.try_recv().is_ok() {}
    }

    fn quiet_for(&self, d: Duration) -> Vec<Inbound> {
        let deadline = Instant::now() + d;
        let mut got = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if let Ok(ev) = self.rx.recv_timeout(left) {
                got.push(ev);
            }
        }
        got
    }
}

fn start(cluster: &str, tweak: impl FnOnce(&mut TransportConfig)) -> Node {
    let uuid = Uuid::random();
    let id = uuid.raft_id();
    let mut cfg = TransportConfig::new("tcp://127.0.0.1:0", cluster, Identity { id, uuid, listen: String::new(), segment: 0 });
    tweak(&mut cfg);
    let (tx, rx) = channel();
    let t = Transport::start(cfg, tx).expect("start");
    Node { t, rx, id, uuid }
}

fn node() -> Node {
    start("test", |_| {})
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + SOON;
    while !cond() {
        assert!(Instant::now() < deadline, "not {} within {:?}", what, SOON);
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn numbered(i: u32) -> Bytes {
    Bytes::from(i.to_le_bytes().to_vec())
}

fn assert_numbered(frames: &[Bytes]) {
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(&f[..], &(i as u32).to_le_bytes(), "frame {} out of order", i);
    }
}

/// Sends `n` numbered frames; every one must be queued.
fn send_numbered(from: &Node, to: PeerId, n: u32) {
    for i in 0..n {
        assert!(from.t.send(to, 1, numbered(i)), "send {} dropped", i);
    }
}

/// Both want each other (so both may connect at once).
fn link(a: &Node, b: &Node) {
    a.t.set_peer(b.id, &b.addr());
    b.t.set_peer(a.id, &a.addr());
    a.wait_up(b.id);
    b.wait_up(a.id);
}

/// Every pair on one connection, the same on both ends, and no other
/// socket open (duplicates and handshakes gone): from here a link is FIFO.
fn settle(nodes: &[&Node]) {
    let rank = |x: &Node, y: &Node| x.t.shared.live_link(y.id).map(|l| l.rank);
    wait_until("links settled", || {
        nodes.iter().all(|x| {
            let others: Vec<&&Node> = nodes.iter().filter(|y| y.id != x.id).collect();
            let agreed = others.iter().all(|y| rank(x, y).is_some() && rank(x, y) == rank(y, x));
            agreed && x.t.shared.sockets.count() == others.len()
        })
    });
}

/// A hand-driven peer that completed the handshake with `to`.
fn fake_peer(to: SocketAddr) -> (TcpStream, PeerId) {
    let mut s = TcpStream::connect(to).expect("connect");
    s.set_read_timeout(Some(SOON)).expect("timeout");
    let uuid = Uuid::random();
    let hello = Hello { cluster: "test".into(), uuid, id: uuid.raft_id(), listen: String::new(), nonce: 1, segment: Some(0), features: 0 };
    handshake::dial(&mut s, &hello).expect("welcome");
    (s, uuid.raft_id())
}

/// True once the other end closed `s` (EOF or reset).
fn closed_by_peer(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        }
    }
}

#[test]
fn two_nodes_exchange_frames_both_ways_in_order() {
    let (a, b) = (node(), node());
    // Only a wants b: b talks back over the link a opened.
    a.t.set_peer(b.id, &b.addr());
    match b.wait("PeerUp", |e| matches!(e, Inbound::PeerUp { .. })) {
        Inbound::PeerUp { id, uuid, addr } => assert_eq!((id, uuid, addr), (a.id, a.uuid, a.addr())),
        _ => unreachable!(),
    }
    a.wait_up(b.id);
    send_numbered(&a, b.id, 500);
    send_numbered(&b, a.id, 500);
    assert_numbered(&b.frames_from(a.id, 500));
    assert_numbered(&a.frames_from(b.id, 500));
    let (sa, sb) = (a.t.stats(), b.t.stats());
    assert_eq!((sa.frames_sent, sa.frames_received, sa.links), (500, 500, 1));
    assert_eq!(sa.bytes_sent, 500 * (4 + frame::HEADER_LEN as u64));
    assert_eq!((sb.bytes_received, sb.frames_dropped), (sa.bytes_sent, 0));
}

#[test]
fn a_peer_fills_its_own_payloads_only_if_its_handshake_said_so() {
    let (a, b) = (node(), node());
    a.t.set_peer(b.id, &b.addr());
    b.wait_up(a.id);
    a.wait_up(b.id);
    let own = super::handshake::FEATURE_OWN_PAYLOADS;
    assert!(a.t.has_feature(b.id, own) && b.t.has_feature(a.id, own));
    assert!(a.t.has_feature(b.id, super::handshake::FEATURE_LEADER_WORDS));
    // An older build's handshake has no such feature.
    let (_older, id) = fake_peer(a.t.local_addr());
    a.wait_up(id);
    assert!(!a.t.has_feature(id, own));
    assert!(!a.t.has_feature(12345, own), "not linked");
}

/// A writeset's row images: the same row twice, as a frame of Raft
/// appends carries them.
fn row_images(i: u32) -> Bytes {
    let row: Vec<u8> = (0..2000u32).map(|j| b'0' + ((i + j) * 7919 % 10) as u8).collect();
    Bytes::from([&i.to_le_bytes()[..], &row, &row].concat())
}

#[test]
fn frames_to_another_segment_go_compressed_and_arrive_as_sent() {
    let in_segment = |segment: u8, compress: bool| {
        start("test", |c| {
            c.me.segment = segment;
            c.compress_segments = compress;
        })
    };
    // Across segments both ways; within one segment and with the option
    // off, as they are.
    for (segment, compress, packed) in [(1, true, true), (0, true, false), (1, false, false)] {
        let (a, b) = (in_segment(0, compress), in_segment(segment, compress));
        link(&a, &b);
        settle(&[&a, &b]);
        let frames: Vec<Bytes> = (0..50).map(|i| if i % 2 == 0 { numbered(i) } else { row_images(i) }).collect();
        for f in &frames {
            assert!(a.t.send(b.id, 1, f.clone()));
            assert!(b.t.send(a.id, 1, f.clone()));
        }
        assert_eq!(b.frames_from(a.id, frames.len()), frames);
        assert_eq!(a.frames_from(b.id, frames.len()), frames);
        let raw: u64 = frames.iter().map(|f| (f.len() + frame::HEADER_LEN) as u64).sum();
        // A writer counts a batch once its write returns, which may be
        // after the peer has read it.
        wait_until("received counts what crossed the wire", || b.t.stats().bytes_received == a.t.stats().bytes_sent);
        let sa = a.t.stats();
        assert_eq!(sa.bytes_to_other_segments, if segment != 0 { sa.bytes_sent } else { 0 });
        if packed {
            assert!(sa.bytes_sent < raw * 2 / 3, "{} bytes sent of {}", sa.bytes_sent, raw);
        } else {
            assert_eq!(sa.bytes_sent, raw);
        }
    }
}

#[test]
fn three_nodes_in_a_full_mesh() {
    let n = [node(), node(), node()];
    for (i, x) in n.iter().enumerate() {
        for y in n.iter().skip(i + 1) {
            link(x, y);
        }
    }
    settle(&[&n[0], &n[1], &n[2]]);
    for x in &n {
        for y in n.iter().filter(|y| y.id != x.id) {
            send_numbered(x, y.id, 200);
        }
    }
    for x in &n {
        let by = x.frames_by_sender(400);
        for y in n.iter().filter(|y| y.id != x.id) {
            assert_eq!(by.get(&y.id).map(|f| f.len()), Some(200));
            assert_numbered(&by[&y.id]);
        }
        assert_eq!(x.t.stats().links, 2);
    }
}

#[test]
fn simultaneous_connects_keep_one_link_on_both_ends() {
    for _ in 0..5 {
        let (a, b) = (node(), node());
        let go = Arc::new(Barrier::new(2));
        let (ta, b_id, b_addr) = (&a.t, b.id, b.addr());
        std::thread::scope(|sc| {
            let g = go.clone();
            sc.spawn(move || {
                g.wait();
                ta.set_peer(b_id, &b_addr);
            });
            go.wait();
            b.t.set_peer(a.id, &a.addr());
        });
        // Both ends settle on the same connection (same rank: same nonce)
        // and close the other.
        settle(&[&a, &b]);
        send_numbered(&a, b.id, 10);
        send_numbered(&b, a.id, 10);
        assert_numbered(&b.frames_from(a.id, 10));
        assert_numbered(&a.frames_from(b.id, 10));
    }
}

/// A hand-driven member `id` that `a` connects to: (its address, a thread
/// answering a's Hello with a Welcome and returning the connection).
fn fake_listener(id: PeerId, uuid: Uuid) -> (SocketAddr, std::thread::JoinHandle<TcpStream>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let answer = std::thread::spawn(move || {
        let (mut s, _) = l.accept().expect("accept");
        s.set_read_timeout(Some(SOON)).expect("timeout");
        handshake::read_hello(&mut s).expect("hello");
        let welcome = Welcome { uuid, id, listen: addr.to_string(), segment: Some(0), features: 0 };
        frame::write_frame(&mut s, WELCOME, &welcome.encode()).expect("welcome");
        s
    });
    (addr, answer)
}

#[test]
fn of_two_connections_the_one_the_lower_id_opened_wins() {
    for (fake_is_lower, inbound_first) in [(true, true), (true, false), (false, true), (false, false)] {
        let a = node();
        let fake = if fake_is_lower { a.id - 1 } else { a.id + 1 };
        let fake_uuid = Uuid::random();
        let (fake_addr, answer) = fake_listener(fake, fake_uuid);
        let dial_in = || {
            let mut s = TcpStream::connect(a.t.local_addr()).expect("connect");
            s.set_read_timeout(Some(SOON)).expect("timeout");
            let hello = Hello { cluster: "test".into(), uuid: fake_uuid, id: fake, listen: fake_addr.to_string(), nonce: 7, segment: Some(0), features: 0 };
            handshake::dial(&mut s, &hello).expect("welcome");
            s
        };
        let (inbound, outbound) = if inbound_first {
            let inbound = dial_in();
            a.wait_up(fake);
            a.t.connect_addr(&fake_addr.to_string());
            (inbound, answer.join().expect("fake listener"))
        } else {
            a.t.connect_addr(&fake_addr.to_string());
            let outbound = answer.join().expect("fake listener");
            a.wait_up(fake);
            (dial_in(), outbound)
        };
        let (mut winner, mut loser) = if fake_is_lower { (inbound, outbound) } else { (outbound, inbound) };
        let case = format!("fake is lower: {}, inbound first: {}", fake_is_lower, inbound_first);
        assert!(closed_by_peer(&mut loser), "{}: the loser was kept", case);
        assert!(a.t.send(fake, 1, Bytes::from_static(b"x")), "{}", case);
        let got = frame::read_frame(&mut winner, 100).expect("a frame on the winner");
        assert_eq!((got.0, &got.1[..]), (1, &b"x"[..]), "{}", case);
        assert_eq!(a.t.shared.live_link(fake).map(|l| l.rank.0), Some(false), "{}", case);
    }
}

#[test]
fn a_replaced_link_hands_its_unsent_frames_to_the_winner() {
    let a = start("test", |c| c.limits = Limits { max_frame: 1 << 20, queue_frames: 8, queue_bytes: 1 << 30 });
    let fake = a.id + 1; // the connection a opens will win
    let fake_uuid = Uuid::random();
    let (fake_addr, answer) = fake_listener(fake, fake_uuid);
    // The fake connects first and never reads: a's writer gets stuck and
    // its queue fills up.
    let mut loser = TcpStream::connect(a.t.local_addr()).expect("connect");
    loser.set_read_timeout(Some(SOON)).expect("timeout");
    let hello = Hello { cluster: "test".into(), uuid: fake_uuid, id: fake, listen: fake_addr.to_string(), nonce: 7, segment: Some(0), features: 0 };
    handshake::dial(&mut loser, &hello).expect("welcome");
    a.wait_up(fake);
    let mut accepted = Vec::new();
    let stuck = fill_until_stuck(|i| {
        let mut p = vec![0u8; 64 << 10];
        p[..4].copy_from_slice(&i.to_le_bytes());
        let ok = a.t.send(fake, 1, Bytes::from(p));
        if ok {
            accepted.push(i);
        }
        ok
    });
    assert!(stuck, "the writer never got stuck");
    assert_eq!(a.t.stats().queued_frames, 8);
    a.t.connect_addr(&fake_addr.to_string());
    let mut winner = answer.join().expect("fake listener");
    let got: Vec<u32> = (0..8)
        .map(|_| {
            let (_, p) = frame::read_frame(&mut winner, 1 << 20).expect("a moved frame");
            u32::from_le_bytes([p[0], p[1], p[2], p[3]])
        })
        .collect();
    assert_eq!(got, accepted[accepted.len() - 8..], "the unsent frames, in order");
}

#[test]
fn another_cluster_is_refused_and_both_stay_healthy() {
    let (a, b) = (start("alpha", |_| {}), start("beta", |_| {}));
    b.t.connect_addr(&a.addr());
    match b.wait("ContactFailed", |e| matches!(e, Inbound::ContactFailed { .. })) {
        Inbound::ContactFailed { addr, reason } => {
            assert_eq!(addr, a.addr());
            assert!(reason.contains("cluster name 'beta' differs from 'alpha'"), "{}", reason);
        }
        _ => unreachable!(),
    }
    assert_eq!((a.t.stats().refused_in, b.t.stats().refused_out), (1, 1));
    // a dialer keeps being refused without harm
    b.t.set_peer(a.id, &a.addr());
    let c = start("alpha", |_| {});
    c.t.connect_addr(&a.addr());
    c.wait_up(a.id);
    a.wait_up(c.id);
    send_numbered(&a, c.id, 3);
    assert_numbered(&c.frames_from(a.id, 3));
    let d = start("beta", |_| {});
    d.t.connect_addr(&b.addr());
    b.wait_up(d.id);
    assert_eq!((a.t.stats().links, b.t.stats().links), (1, 1));
}

#[test]
fn another_protocol_version_is_refused_cleanly_both_ways() {
    let a = node();
    // A future peer's Hello.
    let mut s = TcpStream::connect(a.t.local_addr()).expect("connect");
    s.set_read_timeout(Some(SOON)).expect("timeout");
    let hello = Hello { cluster: "test".into(), uuid: Uuid::random(), id: 9, listen: String::new(), nonce: 1, segment: Some(0), features: 0 };
    let mut wire = Vec::new();
    frame::write_frame(&mut wire, HELLO, &hello.encode()).expect("encode");
    wire[0] = frame::VERSION + 1;
    s.write_all(&wire).expect("write");
    let (kind, payload) = frame::read_frame(&mut s, 1 << 16).expect("an answer");
    assert_eq!(kind, REFUSE);
    assert!(String::from_utf8_lossy(&payload).contains(&format!("speaks protocol {}, this node {}", frame::VERSION + 1, frame::VERSION)));
    assert!(closed_by_peer(&mut s));
    assert_eq!(a.t.stats().refused_in, 1);

    // A listener of a newer version answering: refused, not a crash.
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let future = l.local_addr().expect("addr");
    let server = std::thread::spawn(move || {
        let (mut c, _) = l.accept().expect("accept");
        let _ = handshake::read_hello(&mut c);
        let mut reply = Vec::new();
        frame::write_frame(&mut reply, REFUSE, &handshake::encode_refuse("v3")).expect("encode");
        reply[0] = frame::VERSION + 1;
        let _ = c.write_all(&reply);
    });
    a.t.connect_addr(&future.to_string());
    match a.wait("ContactFailed", |e| matches!(e, Inbound::ContactFailed { .. })) {
        Inbound::ContactFailed { reason, .. } => assert!(reason.contains(&format!("speaks protocol {}, this node {}", frame::VERSION + 1, frame::VERSION)), "{}", reason),
        _ => unreachable!(),
    }
    server.join().expect("server");
    let b = node();
    b.t.connect_addr(&a.addr());
    b.wait_up(a.id);
}

#[test]
fn the_allowlist_hook_refuses_by_ip() {
    let a = start("test", |c| c.allow = Arc::new(|ip: &str| ip != "127.0.0.1"));
    let b = node();
    b.t.connect_addr(&a.addr());
    match b.wait("ContactFailed", |e| matches!(e, Inbound::ContactFailed { .. })) {
        Inbound::ContactFailed { reason, .. } => assert!(reason.contains("Connection not allowed, IP 127.0.0.1 not found in allowlist"), "{}", reason),
        _ => unreachable!(),
    }
    assert_eq!(a.t.stats().links, 0);
}

#[test]
fn contacting_oneself_or_nobody_fails_quietly() {
    let a = node();
    a.t.connect_addr(&a.addr());
    match a.wait("ContactFailed", |e| matches!(e, Inbound::ContactFailed { .. })) {
        Inbound::ContactFailed { reason, .. } => assert!(reason.contains("own address"), "{}", reason),
        _ => unreachable!(),
    }
    let unused = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port");
    a.t.connect_addr(&unused.to_string());
    a.wait("ContactFailed", |e| matches!(e, Inbound::ContactFailed { addr, .. } if *addr == unused.to_string()));
    let s = a.t.stats();
    assert_eq!((s.refused_in, s.refused_out, s.links), (0, 0, 0));
}

#[test]
fn corrupt_frames_close_only_their_connection() {
    let (a, b) = (node(), node());
    link(&a, &b);
    let header = |version: u8, kind: u8, len: u32, crc: u32| {
        let mut h = vec![version, kind];
        h.extend_from_slice(&len.to_le_bytes());
        h.extend_from_slice(&crc.to_le_bytes());
        h
    };
    let good = {
        let mut v = Vec::new();
        frame::write_frame(&mut v, 1, b"hello").expect("encode");
        v
    };
    let mut bad_crc = good.clone();
    bad_crc[frame::HEADER_LEN] ^= 0x20;
    let mut bad_version = good.clone();
    bad_version[0] = frame::VERSION + 1;
    let mut reserved = Vec::new();
    frame::write_frame(&mut reserved, HELLO, b"again").expect("encode");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("bad checksum", bad_crc),
        ("absurd length", header(frame::VERSION, 1, u32::MAX, 0)),
        ("bad version", bad_version),
        ("reserved kind", reserved),
        ("truncated", [&header(frame::VERSION, 1, 100, 0)[..], &[0u8; 10]].concat()),
        ("compressed garbage", {
            let mut v = Vec::new();
            frame::write_frame(&mut v, frame::COMPRESSED, &[1, 200, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef]).expect("encode");
            v
        }),
    ];
    for (name, garbage) in &cases {
        let (mut s, id) = fake_peer(a.t.local_addr());
        a.wait_up(id);
        s.write_all(&good).expect("a good frame first");
        assert_eq!(a.frames_from(id, 1)[0], Bytes::from_static(b"hello"));
        s.write_all(garbage).expect("write");
        if *name == "truncated" {
            s.shutdown(std::net::Shutdown::Write).expect("shutdown");
        }
        assert!(closed_by_peer(&mut s), "{}: connection left open", name);
        a.wait_down(id);
    }
    // Garbage before any handshake.
    let mut s = TcpStream::connect(a.t.local_addr()).expect("connect");
    s.set_read_timeout(Some(SOON)).expect("timeout");
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("write");
    assert!(closed_by_peer(&mut s), "http: connection left open");
    wait_until("all counted", || a.t.stats().connections_broken == cases.len() as u64 + 1);
    // The real link never noticed.
    send_numbered(&b, a.id, 5);
    assert_numbered(&a.frames_from(b.id, 5));
    assert_eq!(a.t.stats().links, 1);
}

#[test]
fn a_restarted_peer_is_reconnected() {
    let a = node();
    let b = node();
    let (b_id, b_uuid, b_addr) = (b.id, b.uuid, b.addr());
    a.t.set_peer(b_id, &b_addr);
    a.wait_up(b_id);
    b.t.stop();
    drop(b);
    a.wait_down(b_id);
    assert!(!a.t.send(b_id, 1, numbered(0)), "sent to a stopped peer");
    std::thread::sleep(Duration::from_millis(300)); // a few failed dials
    let (tx, rx) = channel();
    let cfg = TransportConfig::new(&b_addr, "test", Identity { id: b_id, uuid: b_uuid, listen: String::new(), segment: 0 });
    let b = Node { t: Transport::start(cfg, tx).expect("restart on the same port"), rx, id: b_id, uuid: b_uuid };
    a.wait_up(b_id);
    send_numbered(&a, b.id, 3);
    assert_numbered(&b.frames_from(a.id, 3));
}

/// Sends (`send(i)` for i = 0, 1, ...) to a peer that never reads, until
/// the writer is stuck on full socket buffers: the queue then stays full
/// for 100 ms of attempts. False if that never happens.
fn fill_until_stuck(mut send: impl FnMut(u32) -> bool) -> bool {
    let mut refused_in_a_row = 0;
    for i in 0..1_000_000 {
        if send(i) {
            refused_in_a_row = 0;
        } else {
            refused_in_a_row += 1;
            if refused_in_a_row == 100 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    false
}

#[test]
fn full_queues_drop_and_count() {
    // By count: small frames to a peer that never reads.
    let a = start("test", |c| c.limits = Limits { max_frame: 1 << 20, queue_frames: 4, queue_bytes: 1 << 30 });
    let (_silent, id) = fake_peer(a.t.local_addr());
    a.wait_up(id);
    let mut dropped = 0;
    let stuck = fill_until_stuck(|_| {
        let ok = a.t.send(id, 1, Bytes::from(vec![0u8; 1024]));
        dropped += u64::from(!ok);
        ok
    });
    assert!(stuck, "the writer never got stuck");
    let s = a.t.stats();
    assert_eq!((s.frames_dropped, s.queued_frames), (dropped, 4));
    // By bytes: big frames.
    let b = start("test", |c| c.limits = Limits { max_frame: 1 << 20, queue_frames: 1000, queue_bytes: 1 << 20 });
    let (_silent, id) = fake_peer(b.t.local_addr());
    b.wait_up(id);
    let refused = (0..400).filter(|_| !b.t.send(id, 1, Bytes::from(vec![0u8; 256 << 10]))).count();
    let s = b.t.stats();
    assert!(refused > 0 && s.frames_dropped == refused as u64, "{} refused, {:?}", refused, s);
    assert!(s.queued_bytes <= 1 << 20, "{:?}", s);
    assert!(!b.t.send(id, 1, Bytes::from(vec![0u8; (1 << 20) + 1])), "over the frame limit");
}

#[test]
fn frames_a_full_socket_takes_only_in_part_arrive_whole_and_in_order() {
    // A peer that does not read yet: the first frames go out from the
    // sender's own thread until the socket's buffers fill, one of them in
    // part, and the writer finishes it and sends the rest in order.
    let a = node();
    let (mut slow, id) = fake_peer(a.t.local_addr());
    a.wait_up(id);
    const FRAMES: u32 = 300;
    const LEN: usize = 100_000 + 7; // not a divisor of any buffer size
    let payload = |i: u32| {
        let mut p = vec![(i % 251) as u8; LEN];
        p[..4].copy_from_slice(&i.to_le_bytes());
        Bytes::from(p)
    };
    for i in 0..FRAMES {
        assert!(a.t.send(id, 1, payload(i)), "send {} dropped", i);
    }
    assert!(a.t.stats().queued_frames > 0, "the socket took every frame: nothing was left for the writer");
    let mut r = std::io::BufReader::new(&mut slow);
    let mut next = 0;
    while next < FRAMES {
        let (kind, p) = frame::read_frame(&mut r, 1 << 20).expect("a whole frame");
        if kind == 1 {
            assert!(p == payload(next), "frame {} damaged or out of order", next);
            next += 1;
        }
    }
    // The writer counts a batch sent once its write returns, after the
    // peer may have read it.
    wait_until("the queue drained", || {
        let s = a.t.stats();
        s.queued_frames == 0 && s.queued_bytes == 0 && s.frames_sent == FRAMES as u64
    });
    let s = a.t.stats();
    assert_eq!((s.frames_sent, s.frames_dropped), (FRAMES as u64, 0));
    assert_eq!(s.bytes_sent, FRAMES as u64 * (LEN + frame::HEADER_LEN) as u64);
}

#[test]
fn isolation_stops_traffic_and_resumes() {
    let (a, b) = (node(), node());
    link(&a, &b);
    settle(&[&a, &b]);
    a.drain();
    b.drain();
    a.t.set_isolated(true);
    assert!(!a.t.send(b.id, 1, numbered(0)));
    b.wait_down(a.id);
    assert!(!b.t.send(a.id, 1, numbered(0)));
    // b keeps dialing; a keeps dropping it.
    let seen = a.quiet_for(Duration::from_millis(400));
    assert!(seen.iter().all(|e| !matches!(e, Inbound::Frame { .. } | Inbound::PeerUp { .. })), "{:?}", seen);
    assert_eq!((a.t.stats().links, b.t.stats().links), (0, 0));
    a.t.set_isolated(false);
    a.wait_up(b.id);
    b.wait_up(a.id);
    settle(&[&a, &b]);
    send_numbered(&a, b.id, 3);
    send_numbered(&b, a.id, 3);
    assert_numbered(&b.frames_from(a.id, 3));
    assert_numbered(&a.frames_from(b.id, 3));
}

#[test]
fn the_servers_isolation_flag_is_obeyed() {
    static FLAG: AtomicU8 = AtomicU8::new(0);
    let a = start("test", |c| c.isolation = Some(&FLAG));
    let b = node();
    link(&a, &b);
    settle(&[&a, &b]);
    a.drain();
    b.drain();
    FLAG.store(1, Ordering::SeqCst); // what the signal handler does
    b.wait_down(a.id);
    a.wait_down(b.id);
    assert!(!a.t.send(b.id, 1, numbered(0)));
    FLAG.store(0, Ordering::SeqCst);
    a.wait_up(b.id);
    b.wait_up(a.id);
    settle(&[&a, &b]);
    send_numbered(&b, a.id, 2);
    assert_numbered(&a.frames_from(b.id, 2));
}

#[test]
fn stop_joins_every_thread_quickly() {
    let n = [node(), node(), node()];
    for (i, x) in n.iter().enumerate() {
        for y in n.iter().skip(i + 1) {
            link(x, y);
        }
    }
    let a = &n[0];
    // Things that would block a careless stop: a stranger silent in its
    // handshake, a peer that never reads (writer stuck), a wanted peer
    // that is not there (dialer in backoff), a contact in progress.
    let _silent = TcpStream::connect(a.t.local_addr()).expect("connect");
    let (_deaf, deaf) = fake_peer(a.t.local_addr());
    a.wait_up(deaf);
    for _ in 0..64 {
        a.t.send(deaf, 1, Bytes::from(vec![0u8; 1 << 20]));
    }
    let gone = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port");
    a.t.set_peer(12345, &gone.to_string());
    a.t.connect_addr(&gone.to_string());
    std::thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    a.t.stop();
    let took = t0.elapsed();
    assert!(took < Duration::from_millis(1500), "stop took {:?}", took);
    assert!(a.t.shared.threads.lock().expect("lock").is_empty());
    // No thread holds the shared state any more: none is running.
    assert_eq!(Arc::strong_count(&a.t.shared), 1);
    assert_eq!(a.t.shared.sockets.count(), 0);
    assert!(TcpStream::connect(a.t.local_addr()).is_err(), "still listening");
    n[1].wait_down(a.id);
    assert!(!a.t.send(n[1].id, 1, numbered(0)));
    a.t.stop(); // idempotent
}

#[test]
fn the_frame_limit_is_enforced_on_receive() {
    let a = start("test", |c| c.limits.max_frame = 1000);
    let (mut s, id) = fake_peer(a.t.local_addr());
    a.wait_up(id);
    let mut big = Vec::new();
    frame::write_frame(&mut big, 1, &[0u8; 1001]).expect("encode");
    s.write_all(&big).expect("write");
    assert!(closed_by_peer(&mut s));
    a.wait_down(id);
    assert!(matches!(frame::read_frame(&mut &big[..], 1000), Err(FrameError::TooLarge { .. })));
}

/// TLS between transports: certificates made here (rcgen), in a
/// directory removed with the test.
mod tls {
    use super::*;
    use crate::transport::tls::testing::{ca, node_files};
    use crate::transport::tls::{Tls, TlsSettings};
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;

    fn tls_node(s: &TlsSettings) -> Node {
        let t = Arc::new(Tls::load(s).expect("load"));
        start("test", move |c| c.tls = Some(t))
    }

    /// Neither gets a new link to the other.
    fn never_up(a: &Node, b: &Node) {
        let up = |n: &Node, other: PeerId| {
            n.quiet_for(Duration::from_millis(1500)).iter().any(|e| matches!(e, Inbound::PeerUp { id, .. } if *id == other))
        };
        assert!(!up(a, b.id) && !up(b, a.id), "a link came up");
        assert!(a.t.shared.live_link(b.id).is_none() && b.t.shared.live_link(a.id).is_none());
    }

    #[test]
    fn nodes_of_one_ca_link_and_frames_of_every_size_arrive_in_order() {
        let dir = tempfile::tempdir().expect("dir");
        let ca = ca("cluster");
        let (a, b) = (tls_node(&node_files(dir.path(), "a", &ca, "")), tls_node(&node_files(dir.path(), "b", &ca, "")));
        link(&a, &b);
        send_numbered(&a, b.id, 500);
        send_numbered(&b, a.id, 500);
        assert_numbered(&b.frames_from(a.id, 500));
        assert_numbered(&a.frames_from(b.id, 500));
        // Bigger than rustls's buffers and records: taken in parts.
        let big = Bytes::from((0..3_000_000u32).map(|i| i as u8).collect::<Vec<u8>>());
        assert!(a.t.send(b.id, 2, big.clone()));
        assert_eq!(b.frames_from(a.id, 1)[0], big);
    }

    #[test]
    fn a_node_with_a_certificate_of_another_ca_never_links() {
        let dir = tempfile::tempdir().expect("dir");
        let (ours, theirs) = (ca("cluster"), ca("stranger"));
        let a = tls_node(&node_files(dir.path(), "a", &ours, ""));
        // The stranger trusts our CA, so only our side can refuse it.
        let mut s = node_files(dir.path(), "x", &theirs, "");
        s.ca = node_files(dir.path(), "y", &ours, "").ca;
        let x = tls_node(&s);
        x.t.set_peer(a.id, &a.addr());
        a.t.set_peer(x.id, &x.addr());
        never_up(&a, &x);
        assert!(a.t.stats().refused_in > 0 && x.t.stats().refused_out > 0);
    }

    #[test]
    fn plain_and_tls_nodes_refuse_each_other_unless_dynamic() {
        let dir = tempfile::tempdir().expect("dir");
        let ca = ca("cluster");
        let secure = tls_node(&node_files(dir.path(), "a", &ca, ""));
        let plain = node();
        plain.t.set_peer(secure.id, &secure.addr());
        secure.t.set_peer(plain.id, &plain.addr());
        never_up(&secure, &plain);
        // A plain peer is told why.
        let mut s = TcpStream::connect(secure.t.local_addr()).expect("connect");
        s.set_read_timeout(Some(SOON)).expect("timeout");
        let hello = Hello { cluster: "test".into(), uuid: Uuid::random(), id: 77, listen: String::new(), nonce: 1, segment: Some(0), features: 0 };
        match handshake::dial(&mut s, &hello) {
            Err(handshake::Failure::Refused(why)) => assert!(why.contains("TLS"), "{}", why),
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
        let dynamic = tls_node(&TlsSettings { dynamic: true, ..node_files(dir.path(), "d", &ca, "") });
        plain.t.set_peer(dynamic.id, &dynamic.addr());
        dynamic.wait_up(plain.id);
        // And a dynamic node that dials a plain one speaks plain TCP to it
        // once its TLS hello is closed on (galera_3nodes.galera_dynamic_protocol).
        let other = node();
        dynamic.t.set_peer(other.id, &other.addr());
        other.wait_up(dynamic.id);
    }

    #[test]
    fn a_ca_certificate_serves_as_every_nodes_own() {
        // Galera's galera_ssl test: socket.ssl_cert and ssl_key are the
        // CA's, socket.ssl_ca is unset (it defaults to the certificate).
        let dir = tempfile::tempdir().expect("dir");
        let ca = ca("cluster");
        let cert = dir.path().join("ca.pem").to_string_lossy().into_owned();
        let key = dir.path().join("ca-key.pem").to_string_lossy().into_owned();
        std::fs::write(&cert, ca.cert.pem()).expect("write");
        std::fs::write(&key, ca.key.serialize_pem()).expect("write");
        let s = TlsSettings { cert, key, ..TlsSettings::default() };
        let (a, b) = (tls_node(&s), tls_node(&s));
        link(&a, &b);
        send_numbered(&a, b.id, 10);
        assert_numbered(&b.frames_from(a.id, 10));
    }

    #[test]
    fn tls_1_2_suites_named_in_openssl_words_restrict_tls_1_2_only() {
        let dir = tempfile::tempdir().expect("dir");
        let ca = ca("cluster");
        // AES256-SHA is CBC (rustls has none): ignored, TLS 1.3 joins, as
        // OpenSSL would.
        let a = tls_node(&node_files(dir.path(), "a", &ca, "AES256-SHA"));
        let b = tls_node(&node_files(dir.path(), "b", &ca, "ECDHE-ECDSA-AES128-GCM-SHA256:TLS_AES_128_GCM_SHA256"));
        link(&a, &b);
        let broken = TlsSettings { key: String::new(), ..node_files(dir.path(), "c", &ca, "") };
        assert!(Tls::load(&broken).unwrap_err().contains("socket.ssl_key is not set"));
        let missing = TlsSettings { cert: "/nonexistent/cert.pem".into(), ..node_files(dir.path(), "e", &ca, "") };
        assert!(Tls::load(&missing).unwrap_err().contains("socket.ssl_cert '/nonexistent/cert.pem'"));
    }

    #[test]
    fn a_reload_reads_the_files_again_for_new_connections() {
        let dir = tempfile::tempdir().expect("dir");
        let (ours, other) = (ca("cluster"), ca("next"));
        let a_files = node_files(dir.path(), "a", &ours, "");
        let a = tls_node(&a_files);
        let b = tls_node(&node_files(dir.path(), "b", &ours, ""));
        link(&a, &b);
        // a's certificate is now from a CA b does not trust: after the
        // reload, b refuses a's new connections; the link it has stays.
        let next = node_files(dir.path(), "n", &other, "");
        std::fs::copy(&next.cert, &a_files.cert).expect("copy");
        std::fs::copy(&next.key, &a_files.key).expect("copy");
        a.t.reload_tls().expect("reload");
        let c = tls_node(&node_files(dir.path(), "c", &ours, ""));
        a.t.set_peer(c.id, &c.addr());
        never_up(&a, &c);
        assert_eq!(a.t.stats().links, 1);
        assert!(node().t.reload_tls().is_err(), "a plain transport has nothing to reload");
    }

    /// The README's commands (Galera's documentation makes certificates
    /// the same way): `openssl x509 -req` without extensions writes X.509
    /// version 1, which webpki alone would refuse.
    fn openssl_files(dir: &std::path::Path, ca: &str, nodes: &[&str]) -> Vec<TlsSettings> {
        let script = format!(
            "set -e; cd '{dir}'; [ -f {ca}.pem ] || openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj '/CN={ca}' -keyout {ca}-key.pem -out {ca}.pem; \
             for n in {nodes}; do openssl req -newkey rsa:2048 -nodes -subj \"/CN=$n\" -keyout $n-key.pem -out $n.csr; \
             openssl x509 -req -in $n.csr -CA {ca}.pem -CAkey {ca}-key.pem -CAcreateserial -days 30 -out $n-cert.pem; done",
            dir = dir.display(),
            ca = ca,
            nodes = nodes.join(" ")
        );
        let out = std::process::Command::new("sh").arg("-c").arg(&script).output().expect("sh runs");
        assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stderr));
        let path = |f: String| dir.join(f).to_string_lossy().into_owned();
        nodes
            .iter()
            .map(|n| TlsSettings {
                cert: path(format!("{}-cert.pem", n)),
                key: path(format!("{}-key.pem", n)),
                ca: path(format!("{}.pem", ca)),
                ..TlsSettings::default()
            })
            .collect()
    }

    #[test]
    fn version_1_certificates_from_openssl_link_and_one_of_another_ca_does_not() {
        let dir = tempfile::tempdir().expect("dir");
        let ours = openssl_files(dir.path(), "ca", &["node1", "node2"]);
        let text = std::fs::read(&ours[0].cert).expect("cert");
        let der = CertificateDer::from_pem_slice(&text).expect("pem");
        let (_, parsed) = x509_parser::parse_x509_certificate(&der).expect("x509");
        assert_eq!(parsed.version(), x509_parser::x509::X509Version::V1, "the case this test is about");
        let (a, b) = (tls_node(&ours[0]), tls_node(&ours[1]));
        link(&a, &b);
        let mut stranger = openssl_files(dir.path(), "other", &["node3"]).remove(0);
        stranger.ca = ours[0].ca.clone();
        let c = tls_node(&stranger);
        c.t.set_peer(a.id, &a.addr());
        never_up(&a, &c);
    }

    #[test]
    fn an_encrypted_key_is_read_with_socket_ssl_password_file() {
        let dir = tempfile::tempdir().expect("dir");
        let plain = openssl_files(dir.path(), "ca", &["node1", "node2"]);
        let encrypted = dir.path().join("node1-key.enc.pem").to_string_lossy().into_owned();
        let password = dir.path().join("password").to_string_lossy().into_owned();
        std::fs::write(&password, "secret words\n").expect("write");
        let out = std::process::Command::new("openssl")
            .args(["pkcs8", "-topk8", "-in", &plain[0].key, "-out", &encrypted, "-passout", "pass:secret words"])
            .output()
            .expect("openssl runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let locked = TlsSettings { key: encrypted, ..plain[0].clone() };
        assert!(Tls::load(&locked).unwrap_err().contains("socket.ssl_password_file is not set"));
        let wrong = dir.path().join("wrong").to_string_lossy().into_owned();
        std::fs::write(&wrong, "guess").expect("write");
        assert!(Tls::load(&TlsSettings { password_file: wrong, ..locked.clone() }).unwrap_err().contains("cannot decrypt"));
        let a = tls_node(&TlsSettings { password_file: password, ..locked });
        let b = tls_node(&plain[1]);
        link(&a, &b);
    }

    #[test]
    fn garbage_on_a_tls_port_closes_only_its_connection() {
        let dir = tempfile::tempdir().expect("dir");
        let ca = ca("cluster");
        let a = tls_node(&node_files(dir.path(), "a", &ca, ""));
        let junk: [&[u8]; 4] = [
            b"GET / HTTP/1.0\r\n\r\n",
            // A TLS record header announcing 512 bytes, then 5 and a hang-up.
            &[0x16, 0x03, 0x01, 0x02, 0x00, 1, 2, 3, 4, 5],
            // A handshake record of nonsense.
            &[0x16, 0x03, 0x03, 0x00, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            &[0x16],
        ];
        for bytes in junk {
            let mut s = TcpStream::connect(a.t.local_addr()).expect("connect");
            s.set_read_timeout(Some(SOON)).expect("timeout");
            s.write_all(bytes).expect("write");
            let _ = s.shutdown(std::net::Shutdown::Write);
            assert!(closed_by_peer(&mut s), "{:?} left the connection open", bytes);
        }
        wait_until("junk connections gone", || a.t.shared.sockets.count() == 0);
        let b = tls_node(&node_files(dir.path(), "b", &ca, ""));
        link(&a, &b);
        send_numbered(&b, a.id, 10);
        assert_numbered(&a.frames_from(b.id, 10));
    }
}
