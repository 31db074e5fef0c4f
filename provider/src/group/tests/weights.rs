//! Weighted quorum (`pc.weight`), and the driver run by a link reader.

use super::*;

#[test]
fn the_heavier_of_two_members_stays_primary_alone_and_the_other_joins_it_again() {
    let (a, b, two) = two_voters();
    weigh(&a, 2, &[&a, &b], 3);
    b.group.isolate(true);
    let GroupEvent::View(v) = a.until("a primary alone", view_with(1)) else { unreachable!() };
    assert!(v.seqno > two.seqno, "the history goes on: {:?}", v);
    b.until("b's non-primary view", |e| matches!(e, GroupEvent::View(v) if !v.primary));
    a.group.propose(1, Bytes::from_static(&[1])).unwrap();
    assert_eq!(ordered_of(&a, 1).len(), 1, "a orders alone");
    weigh(&a, 2, &[&a], 2);
    b.group.isolate(false);
    b.until("b rejoining", |e| matches!(e, GroupEvent::Rejoining));
    a.until("a sees b again", view_with(2));
    a.group.stop();
    b.group.stop();
}

#[test]
fn a_light_majority_delivers_nothing_without_the_heavy_member_which_goes_on_alone() {
    let (a, b, c) = three_voters();
    std::thread::sleep(Duration::from_millis(500));
    weigh(&a, 4, &[&a, &b, &c], 6);
    c.group.propose(3, Bytes::from_static(&[3])).unwrap();
    let at = |m: &Member| ordered_of(m, 1).into_iter().map(|(seqno, origin, _)| (seqno, origin)).collect::<Vec<_>>();
    let seen = at(&a);
    assert_eq!((at(&b), at(&c)), (seen.clone(), seen), "all deliver while weights differ");
    a.group.isolate(true);
    // b and c are two of three voters: Raft commits their proposals, but
    // they weigh 2 of 6 and must deliver none of them.
    b.group.propose(7, Bytes::from_static(&[7])).unwrap();
    let GroupEvent::View(v) = a.until("a primary alone", view_with(1)) else { unreachable!() };
    for m in [&b, &c] {
        m.until("a non-primary view", |e| matches!(e, GroupEvent::View(v) if !v.primary));
    }
    none_for(&[&b, &c], Duration::from_secs(2), "a light side delivered", |e| matches!(e, GroupEvent::Ordered { .. } | GroupEvent::View(View { primary: true, .. })));
    a.group.propose(1, Bytes::from_static(&[1])).unwrap();
    let got = ordered_of(&a, 1);
    assert_eq!(got.len(), 1);
    assert!(got[0].0 > v.seqno);
    a.group.isolate(false);
    b.until("b rejoining", |e| matches!(e, GroupEvent::Rejoining));
    a.until("a sees all again", view_with(3));
    for m in [&a, &b, &c] {
        m.group.stop();
    }
}

#[test]
fn with_equal_weights_a_minority_never_reforms() {
    let (a, b, c) = three_voters();
    std::thread::sleep(Duration::from_millis(500));
    a.group.isolate(true);
    a.until("a non-primary", |e| matches!(e, GroupEvent::View(v) if !v.primary));
    none_for(&[&a], Duration::from_secs(2), "an isolated minority became primary", |e| matches!(e, GroupEvent::View(v) if v.primary));
    for m in [&a, &b, &c] {
        m.group.stop();
    }
}

/// A frame that finds the driver idle is handled on the link reader that
/// read it (see `runner`), not handed to the group thread: a follower
/// delivers what its leader commits from its reader thread.
#[test]
fn an_idle_driver_is_run_by_the_link_reader_that_brings_a_frame() {
    struct Tagged(Sender<(String, GroupEvent)>);
    impl Delivery for Tagged {
        fn deliver(&mut self, events: &mut Vec<GroupEvent>) {
            let thread = std::thread::current().name().unwrap_or("?").to_string();
            for e in events.drain(..) {
                let _ = self.0.send((thread.clone(), e));
            }
        }
        fn snapshot(&mut self) -> Vec<u8> {
            Vec::new()
        }
    }
    let (a, _) = bootstrap(0);
    a.until("bootstrap view", view_with(1));
    let (tx, rx) = channel();
    let b = Group::start(config("node2", Mode::Join { peers: vec![a.addr()] }), Box::new(Tagged(tx))).unwrap();
    a.until("a sees b", view_with(2));
    let mut threads = Vec::new();
    for token in 1..=20u64 {
        a.group.propose(token, Bytes::from_static(b"x")).unwrap();
        a.until("ordered on a", |e| matches!(e, GroupEvent::Ordered { token: t, .. } if *t == token));
        // Idle between commits: the driver is free when frames come.
        std::thread::sleep(Duration::from_millis(5));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while threads.len() < 20 && Instant::now() < deadline {
        if let Ok((thread, GroupEvent::Ordered { origin, .. })) = rx.recv_timeout(Duration::from_millis(100)) {
            if origin == a.group.me().id {
                threads.push(thread);
            }
        }
    }
    assert_eq!(threads.len(), 20, "b delivered every commit");
    let by_reader = threads.iter().filter(|t| t.as_str() == "lockstep-recv").count();
    assert!(by_reader >= 10, "most delivered on a link reader, not the group thread: {:?}", threads);
    b.stop();
    a.group.stop();
}

#[test]
fn a_leader_leaving_right_after_its_learner_joined_leaves_that_learner_primary() {
    // galera.galera_ssl_upgrade: node 2 is shut down the moment node 1 is
    // synced again, before the leader promoted it. The leaver was the
    // only voter: its removal would leave none (raft refuses it), and
    // the learner holding the state was left without a leader.
    let (a, _) = bootstrap(0);
    a.until("bootstrap view", view_with(1));
    let b = start("node2", Mode::Join { peers: vec![a.addr()] });
    b.until("b is in", |e| matches!(e, GroupEvent::View(v) if v.my_idx == 1) || matches!(e, GroupEvent::Restored { .. }));
    b.group.member_state(Transition::Join, 0).unwrap();
    let joined = |e: &GroupEvent| matches!(e, GroupEvent::MemberState { member, state: MemberState::Joined, .. } if *member == b.group.me().id);
    a.until("a sees b joined", joined);
    a.group.leave();
    b.until("b alone and primary", view_with(1));
    b.group.propose(1, Bytes::from_static(&[1])).unwrap();
    assert_eq!(ordered_of(&b, 1).len(), 1);
    a.group.stop();
    b.group.stop();
}
