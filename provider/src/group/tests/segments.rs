//! Segments (`gmcast.segment`): relays, the leader's placement, and the
//! leader's answer metrics.

use super::*;

#[test]
fn an_entry_crosses_to_another_segment_once_and_a_lost_relay_costs_nothing_but_a_resend() {
    let [a, b, c, d] = two_segments();
    const N: u64 = 200;
    const SIZE: usize = 10_000;
    let propose = |from: u64| {
        for token in from..from + N {
            a.group.propose(token, Bytes::from(vec![token as u8; SIZE])).unwrap();
        }
    };
    let crossed = || a.group.transport_stats().bytes_to_other_segments;
    let before = crossed();
    propose(1);
    let (oc, od) = (ordered_of(&c, N as usize), ordered_of(&d, N as usize));
    assert_eq!((oc.len(), od.len()), (N as usize, N as usize));
    assert_eq!(oc, od);
    let per_writeset = (crossed() - before) as f64 / N as f64;
    eprintln!("{:.0} bytes crossed to the other segment per {}-byte writeset", per_writeset, SIZE);
    // Straight appends to both would be 2 x SIZE and more.
    assert!(per_writeset < 1.3 * SIZE as f64, "{} bytes crossed per {}-byte writeset", per_writeset, SIZE);
    assert_eq!(ordered_of(&b, N as usize).len(), N as usize);

    // The relay (the lower raft id of segment 1) dies: the other member
    // of its segment still gets every entry, straight from the leader.
    let (relay, other) = if c.group.me().id.raft_id() < d.group.me().id.raft_id() { (c, d) } else { (d, c) };
    relay.group.stop();
    propose(N + 1);
    let got = ordered_of(&other, N as usize);
    assert_eq!(got.len(), N as usize, "the relay's segment peer got what the leader ordered");
    assert_eq!(got.last().map(|o| o.2), Some(2 * N));
    for m in [&a, &b, &other] {
        m.group.stop();
    }
}

#[test]
fn leadership_moves_to_the_segment_that_writes() {
    let [a, b, c, d] = two_segments();
    let (a_id, c_id) = (a.group.me().id.raft_id(), c.group.me().id.raft_id());
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.group.leader() != a_id {
        assert!(Instant::now() < deadline, "a leads after bootstrapping");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Only c writes: past a window, c leads (it wrote most in the busiest
    // segment), and its later writesets are ordered as before.
    for token in 1..=2 * placement::MIN_WRITESETS {
        c.group.propose(token, Bytes::from(vec![token as u8])).unwrap();
    }
    assert_eq!(ordered_of(&c, 2 * placement::MIN_WRITESETS as usize).len(), 2 * placement::MIN_WRITESETS as usize);
    let deadline = Instant::now() + placement::WINDOW + Duration::from_secs(5);
    while [&a, &b, &c, &d].iter().any(|m| m.group.leader() != c_id) {
        assert!(Instant::now() < deadline, "leaders {:?}, c is {:x}", [&a, &b, &c, &d].map(|m| m.group.leader()), c_id);
        std::thread::sleep(Duration::from_millis(100));
    }
    c.group.propose(1000, Bytes::from_static(&[0])).unwrap();
    assert_eq!(ordered_of(&c, 1).first().map(|o| o.2), Some(1000), "c orders its writesets as the leader");
    for m in [&a, &b, &c, &d] {
        m.group.stop();
    }
}

#[test]
fn a_joiner_that_syncs_is_promoted_and_synced_without_waiting_for_a_tick() {
    // galera_vote_rejoin_mysqldump: a member whose state just arrived is
    // not ready for clients until it is Synced, and the leader promoted
    // it, then it released its SYNC, each on a tick (up to 100 ms; the
    // test's next statements came first). Ticks here are far apart, and
    // the join itself is paced by them (the JOIN goes right after one),
    // so only the turns that apply the JOIN and the promotion can do it.
    let slow = |name: &str, mode| GroupConfig { tick: Duration::from_secs(2), ..config(name, mode) };
    let a = start_with(slow("node1", Mode::Bootstrap { history: Uuid::random(), position: 0 }));
    a.until("bootstrap view", view_with(1));
    let b = start_with(slow("node2", Mode::Join { peers: vec![a.addr()] }));
    b.until("b is in", |e| matches!(e, GroupEvent::View(v) if v.my_idx == 1) || matches!(e, GroupEvent::Restored { .. }));
    let me = b.group.me().id;
    let started = Instant::now();
    b.group.member_state(Transition::Join, 0).unwrap();
    b.until("b joined", |e| matches!(e, GroupEvent::MemberState { member, state: MemberState::Joined, .. } if *member == me));
    b.group.member_state(Transition::Sync, 0).unwrap();
    b.until("b synced", |e| matches!(e, GroupEvent::MemberState { member, state: MemberState::Synced, .. } if *member == me));
    assert!(started.elapsed() < Duration::from_secs(1), "synced after {:?}: a tick did it", started.elapsed());
    a.group.stop();
    b.group.stop();
}

#[test]
fn the_leader_times_each_followers_answers_counts_those_that_committed_and_forgets_who_left() {
    let (a, b, c) = three_voters();
    for i in 1..=20u64 {
        a.group.propose(i, Bytes::copy_from_slice(&i.to_le_bytes())).unwrap();
    }
    assert_eq!(ordered_of(&a, 20).len(), 20);
    let members = [&a, &b, &c];
    let leader = members.iter().find(|m| m.group.leader() == m.group.me().id.raft_id()).expect("a member leads");
    let shown = leader.group.round_trip_metrics();
    let mut reg = prometheus_client::registry::Registry::default();
    reg.register("rt", "", shown.round_trip);
    reg.register("answers", "", shown.commit_answers);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
    let mut committing = 0.0;
    for m in members.iter().filter(|m| m.group.me().id != leader.group.me().id) {
        let name = &m.group.me().name;
        assert!(metric(&text, "rt_count", name).is_some_and(|n| n > 0.0), "{name} answered: {text}");
        committing += metric(&text, "answers_total", name).unwrap_or(0.0);
    }
    assert!(committing >= 1.0, "some answer committed: {text}");
    assert!(metric(&text, "rt_count", &leader.group.me().name).is_none(), "the leader does not time itself: {text}");

    // A member that leaves takes its series off the page.
    let gone = members.iter().find(|m| m.group.me().id != leader.group.me().id).unwrap();
    gone.group.leave();
    leader.until("view of 2 after the leave", view_with(2));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
    let name = &gone.group.me().name;
    assert!(metric(&text, "rt_count", name).is_none(), "{name} left: {text}");
    assert!(metric(&text, "answers_total", name).is_none(), "{name} left: {text}");
    for m in members {
        m.group.stop();
    }
}
