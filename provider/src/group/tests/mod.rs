//! Groups of real members in one process, over the real transport on
//! loopback.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};
use bytes::Bytes;

use super::*;

struct Forward(Sender<GroupEvent>);

impl Delivery for Forward {
    fn deliver(&mut self, events: &mut Vec<GroupEvent>) {
        for e in events.drain(..) {
            let _ = self.0.send(e);
        }
    }
    fn snapshot(&mut self) -> Vec<u8> {
        Vec::new()
    }
}

struct Member {
    group: Group,
    rx: Receiver<GroupEvent>,
}

fn config(name: &str, mode: Mode) -> GroupConfig {
    GroupConfig {
        me: MemberInfo { id: Uuid::random(), name: name.into(), incoming: "127.0.0.1:3306".into(), address: String::new(), arbitrator: false, stateless: false },
        mode,
        listen: "127.0.0.1:0".into(),
        segment: 0,
        compress_segments: true,
        cluster_name: "test".into(),
        allow: std::sync::Arc::new(|_: &str| true),
        isolation: None,
        tick: Duration::from_millis(20),
        // Short, so that eviction tests finish quickly.
        timeouts: liveness::Timeouts { suspect: Duration::from_millis(1500), inactive: Duration::from_secs(15) },
        previous: None,
        tls: None,
    }
}

fn start(name: &str, mode: Mode) -> Member {
    start_with(config(name, mode))
}

fn start_with(cfg: GroupConfig) -> Member {
    let (tx, rx) = channel();
    let group = Group::start(cfg, Box::new(Forward(tx))).unwrap();
    Member { group, rx }
}

fn bootstrap(position: Seqno) -> (Member, Uuid) {
    let history = Uuid::random();
    (start("node1", Mode::Bootstrap { history, position }), history)
}

impl Member {
    fn next(&self) -> GroupEvent {
        self.rx.recv_timeout(Duration::from_secs(10)).expect("a group event within 10 s")
    }

    /// Events until `f` matches one (which is returned).
    fn until(&self, what: &str, mut f: impl FnMut(&GroupEvent) -> bool) -> GroupEvent {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(e) = self.rx.recv_timeout(Duration::from_millis(100)) {
                if f(&e) {
                    return e;
                }
            }
        }
        panic!("{} never came", what)
    }

    fn addr(&self) -> String {
        self.group.me().address.clone()
    }
}

/// Watches `members` for `span`: none may deliver an event `bad` matches.
fn none_for(members: &[&Member], span: Duration, what: &str, bad: impl Fn(&GroupEvent) -> bool) {
    let deadline = Instant::now() + span;
    while Instant::now() < deadline {
        for m in members {
            if let Ok(e) = m.rx.recv_timeout(Duration::from_millis(50)) {
                assert!(!bad(&e), "{}: {:?}", what, e);
            }
        }
    }
}

fn view_with(n: usize) -> impl Fn(&GroupEvent) -> bool {
    move |e| matches!(e, GroupEvent::View(v) if v.primary && v.members.len() == n)
}

/// A bootstrapped member and a second one that joined it (in a view, or
/// restored from a snapshot).
fn joined_pair() -> (Member, Member) {
    let (a, _) = bootstrap(0);
    a.until("bootstrap view", view_with(1));
    let b = start("node2", Mode::Join { peers: vec![a.addr()] });
    a.until("view of 2 on a", view_with(2));
    b.until("b sees itself", |e| matches!(e, GroupEvent::View(v) if v.my_idx == 1) || matches!(e, GroupEvent::Restored { .. }));
    (a, b)
}

/// Collects the ordered (seqno, origin, token) a member saw.
fn ordered_of(m: &Member, want: usize) -> Vec<(Seqno, Uuid, u64)> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < want && Instant::now() < deadline {
        if let Ok(GroupEvent::Ordered { seqno, origin, token, .. }) = m.rx.recv_timeout(Duration::from_millis(100)) {
            got.push((seqno, origin, token));
        }
    }
    got
}

/// Three voters: `a` bootstraps and leads, `b` and `c` join and are
/// promoted once they report Joined.
fn three_voters() -> (Member, Member, Member) {
    three_voters_with(config)
}

fn three_voters_with(config: impl Fn(&str, Mode) -> GroupConfig) -> (Member, Member, Member) {
    let history = Uuid::random();
    let a = start_with(config("node1", Mode::Bootstrap { history, position: 0 }));
    a.until("bootstrap view", view_with(1));
    let b = start_with(config("node2", Mode::Join { peers: vec![a.addr()] }));
    b.until("b is in", |e| matches!(e, GroupEvent::View(v) if v.my_idx == 1) || matches!(e, GroupEvent::Restored { .. }));
    b.group.member_state(Transition::Join, 0).unwrap();
    let c = start_with(config("node3", Mode::Join { peers: vec![a.addr()] }));
    c.until("c is in", |e| matches!(e, GroupEvent::View(v) if v.my_idx == 2) || matches!(e, GroupEvent::Restored { .. }));
    c.group.member_state(Transition::Join, 0).unwrap();
    for m in [&a, &b, &c] {
        m.until("c joined", |e| matches!(e, GroupEvent::MemberState { member, state: MemberState::Joined, .. } if *member == c.group.me().id));
    }
    (a, b, c)
}

/// Cuts `m` off until the other two have removed it, orders a few big
/// writesets without it (so that the log past its removal takes several
/// appends to send), then lets it rejoin until all three count it again
/// and it is a synced voter. Whether it caught up from the log (not a
/// snapshot) is returned.
fn cut_off_and_back(m: &Member, all: [&Member; 3]) -> bool {
    let others: Vec<&&Member> = all.iter().filter(|o| o.group.me().id != m.group.me().id).collect();
    m.group.isolate(true);
    for o in &others {
        o.until("a view without the cut-off member", view_with(2));
    }
    for token in 1..=3u64 {
        others[0].group.propose(token, Bytes::from(vec![token as u8; 700 << 10])).unwrap();
    }
    assert_eq!(ordered_of(others[0], 3).len(), 3);
    m.group.isolate(false);
    let mut restored = false;
    m.until("the cut-off member back in", |e| {
        restored |= matches!(e, GroupEvent::Restored { .. });
        matches!(e, GroupEvent::View(v) if v.primary && v.my_idx >= 0 && v.members.len() == 3)
    });
    for o in &others {
        o.until("a view with it again", view_with(3));
    }
    // As its server would, once it has the state: a voter again.
    m.group.member_state(Transition::Join, 0).unwrap();
    sync(others[0], m);
    !restored
}

/// The leader all three name, once they agree on one of them.
fn agreed_leader(all: [&Member; 3]) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let leader = all[0].group.leader();
        let known = all.iter().any(|m| m.group.me().id.raft_id() == leader);
        if known && all.iter().all(|m| m.group.leader() == leader) {
            return leader;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the three never agreed on a leader among them")
}

/// `members` sync (and become voters), as `watcher` sees.
fn sync_all(watcher: &Member, members: [&Member; 2]) {
    for m in members {
        sync(watcher, m);
    }
}

/// `m` syncs (and becomes a voter), as `watcher` sees.
fn sync(watcher: &Member, m: &Member) {
    m.group.member_state(Transition::Sync, 0).unwrap();
    let me = m.group.me().id;
    watcher.until("synced", |e| matches!(e, GroupEvent::MemberState { member, state: MemberState::Synced, .. } if *member == me));
}

/// Two voters: `a` bootstraps and leads, `b` joins and is promoted; the
/// last primary view (of both) is returned.
fn two_voters() -> (Member, Member, View) {
    let (a, _) = bootstrap(0);
    a.until("bootstrap view", view_with(1));
    let b = start("node2", Mode::Join { peers: vec![a.addr()] });
    b.until("b is in", |e| matches!(e, GroupEvent::View(v) if v.my_idx == 1) || matches!(e, GroupEvent::Restored { .. }));
    b.group.member_state(Transition::Join, 0).unwrap();
    let GroupEvent::View(two) = a.until("a sees b", view_with(2)) else { unreachable!() };
    // Let the leader promote b: then a alone is no majority.
    std::thread::sleep(Duration::from_millis(500));
    (a, b, two)
}

/// Sets `m`'s pc.weight and waits until every member weighs the group at
/// `total`.
fn weigh(m: &Member, weight: u32, all: &[&Member], total: u64) {
    m.group.set_policy(quorum::Policy { weight, ..Default::default() });
    let deadline = Instant::now() + Duration::from_secs(10);
    while all.iter().any(|o| o.group.cluster_weight() != total) {
        assert!(Instant::now() < deadline, "cluster weight never reached {}", total);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two data members (`a` leads) and an arbitrator, all voters; the
/// arbitrator runs on its own thread until `stop` is set.
fn two_members_and_an_arbitrator() -> (Member, Member, ArbitratorThread, Uuid) {
    let (a, b, two) = two_voters();
    let cfg = crate::arbitrator::ArbitratorConfig {
        name: "garb".into(),
        address: format!("gcomm://{}", a.addr()),
        group: "test".into(),
        options: "gmcast.listen_addr=tcp://127.0.0.1:0; evs.keepalive_period=PT0.5S; evs.suspect_timeout=PT1.5S".into(),
    };
    let garb = ArbitratorThread::start(&cfg);
    for m in [&a, &b] {
        m.until("the arbitrator synced", |e| matches!(e, GroupEvent::MemberState { member, state: MemberState::Synced, .. } if *member == garb.id));
    }
    // Let the leader promote it.
    std::thread::sleep(Duration::from_millis(500));
    (a, b, garb, two.history)
}

struct ArbitratorThread {
    id: Uuid,
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ArbitratorThread {
    fn start(cfg: &crate::arbitrator::ArbitratorConfig) -> ArbitratorThread {
        let garb = crate::arbitrator::Arbitrator::start(cfg).unwrap();
        let id = garb.me().id;
        let port = garb.me().address.rsplit(':').next().and_then(|p| p.parse().ok()).expect("the arbitrator's port");
        assert!(garb.me().arbitrator);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            garb.run(|| flag.load(std::sync::atomic::Ordering::SeqCst));
            garb.leave();
        });
        ArbitratorThread { id, port, stop, thread: Some(thread) }
    }
}

impl Drop for ArbitratorThread {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The survivor of a killed data member orders writes with the
/// arbitrator's vote, and never makes the arbitrator its donor.
fn survivor_goes_on(survivor: &Member, dead: Uuid, garb: &ArbitratorThread) {
    let GroupEvent::View(v) = survivor.until("the survivor's view without the dead member", view_with(2)) else { unreachable!() };
    assert!(v.members.iter().all(|m| m.id != dead), "{:?}", v);
    assert!(v.members.iter().any(|m| m.id == garb.id && m.arbitrator), "{:?}", v);
    survivor.group.propose(7, Bytes::from_static(&[7])).unwrap();
    survivor.until("a write ordered with two of three voters", |e| matches!(e, GroupEvent::Ordered { token: 7, .. }));
    assert!(survivor.group.read_index(Instant::now() + Duration::from_secs(5)).is_some(), "reads confirmed with a quorum");
}

/// Four voters, a and b in segment 0 (a leads), c and d in segment 1.
fn two_segments() -> [Member; 4] {
    let in_segment = |name: &str, segment: u8, mode: Mode| start_with(GroupConfig { segment, ..config(name, mode) });
    let a = in_segment("node1", 0, Mode::Bootstrap { history: Uuid::random(), position: 0 });
    a.until("bootstrap view", view_with(1));
    let mut members = vec![a];
    for (name, segment) in [("node2", 0), ("node3", 1), ("node4", 1)] {
        let m = in_segment(name, segment, Mode::Join { peers: vec![members[0].addr()] });
        let idx = members.len() as i32;
        m.until("joined", |e| matches!(e, GroupEvent::View(v) if v.my_idx == idx) || matches!(e, GroupEvent::Restored { .. }));
        m.group.member_state(Transition::Join, 0).unwrap();
        let id = m.group.me().id;
        members[0].until("synced", |e| matches!(e, GroupEvent::MemberState { member, state: MemberState::Joined, .. } if *member == id));
        members.push(m);
    }
    // Let the leader promote the last joiner.
    std::thread::sleep(Duration::from_millis(500));
    members.try_into().unwrap_or_else(|_| unreachable!())
}

/// The value of the metric line `name{member="<member>"}` in `text`.
fn metric(text: &str, name: &str, member: &str) -> Option<f64> {
    let head = format!("{name}{{member=\"{member}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&head)).and_then(|v| v.trim().parse().ok())
}

mod arbitrator;
mod membership;
mod ordering;
mod segments;
mod weights;
