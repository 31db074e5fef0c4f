//! Two data members and an arbitrator (garbd).

use super::*;

#[test]
fn with_an_arbitrator_the_follower_survives_its_leader_killed() {
    let (a, b, garb, _) = two_members_and_an_arbitrator();
    a.group.stop();
    survivor_goes_on(&b, a.group.me().id, &garb);
    b.group.stop();
}

#[test]
fn with_an_arbitrator_the_leader_survives_its_follower_killed() {
    let (a, b, garb, _) = two_members_and_an_arbitrator();
    b.group.stop();
    survivor_goes_on(&a, b.group.me().id, &garb);
    // A joiner now: its donor can only be `a`, never the arbitrator.
    let c = start("node3", Mode::Join { peers: vec![a.addr()] });
    c.until("c is in", |e| matches!(e, GroupEvent::View(v) if v.primary && v.my_idx >= 0) || matches!(e, GroupEvent::Restored { .. }));
    c.group.state_request("", IstRequest { position: (Uuid::NIL, -1), addr: String::new() }, b"sst").unwrap();
    let GroupEvent::StateTransfer { donor, .. } = c.until("the donor chosen", |e| matches!(e, GroupEvent::StateTransfer { .. })) else { unreachable!() };
    assert_eq!(donor, Ok(a.group.me().id));
    a.group.stop();
    c.group.stop();
}

/// The trap of an arbitrator that compacts its log like a data member: the
/// leader commits with the arbitrator alone while the other data member
/// lags, then dies. The arbitrator leads (it holds entries the lagging
/// member lacks, so it must), but gives no snapshots: only its log can
/// bring that member up to date.
#[test]
fn an_arbitrator_keeps_what_a_lagging_data_member_lacks_and_passes_it_on_when_the_leader_dies() {
    let (a, b, garb, _) = two_members_and_an_arbitrator();
    // The leader's word on what b has reaches the arbitrator first.
    std::thread::sleep(Duration::from_millis(600));
    b.group.isolate(true);
    // Several snapshots' worth (64 entries each in tests, 16 kept), well
    // within the suspect timeout.
    for i in 1..=300u64 {
        a.group.propose(i, Bytes::copy_from_slice(&i.to_le_bytes())).unwrap();
    }
    assert_eq!(ordered_of(&a, 300).len(), 300, "committed by a and the arbitrator");
    a.group.stop();
    b.group.isolate(false);
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while got < 300 && Instant::now() < deadline {
        if let Ok(GroupEvent::Ordered { .. }) = b.rx.recv_timeout(Duration::from_millis(100)) {
            got += 1;
        }
    }
    assert_eq!(got, 300, "b received what only the arbitrator still held");
    survivor_goes_on(&b, a.group.me().id, &garb);
    b.group.stop();
}

#[test]
fn an_arbitrator_that_stops_leaves_the_group_at_once() {
    let (a, b, garb, _) = two_members_and_an_arbitrator();
    let left = Instant::now();
    drop(garb);
    a.until("a's view without the arbitrator", view_with(2));
    assert!(left.elapsed() < Duration::from_millis(1500), "a graceful leave, not an eviction");
    a.group.propose(3, Bytes::from_static(&[3])).unwrap();
    b.until("b still orders", |e| matches!(e, GroupEvent::Ordered { payload, .. } if payload[..] == [3]));
    a.group.stop();
    b.group.stop();
}

#[test]
fn restarted_data_members_recover_the_component_with_a_surviving_arbitrator_which_never_forms_it() {
    let (a, b, garb, history) = two_members_and_an_arbitrator();
    crate::log::set_debug(true);
    let (ida, idb) = (a.group.me().id, b.group.me().id);
    a.group.stop();
    b.group.stop();
    // Past the arbitrator's leaderless grace: it is non-primary.
    std::thread::sleep(Duration::from_secs(3));
    let view = vec![ida, idb, garb.id];
    let was = |member, seqno| Some(recovery::Previous { member, view: view.clone(), position: (history, seqno) });
    let at_garb = format!("127.0.0.1:{}", garb.port);
    let b2 = start_with(GroupConfig { previous: was(idb, 7), ..config("node2", Mode::Join { peers: vec![at_garb.clone()] }) });
    let a2 = start_with(GroupConfig { previous: was(ida, 5), ..config("node1", Mode::Join { peers: vec![at_garb, b2.addr()] }) });
    // The arbitrator neither forms the component (nobody would hold its
    // writes) nor keeps the data members from forming it.
    b2.until("b2, the most advanced, bootstraps", |e| matches!(e, GroupEvent::Bootstrapping));
    let GroupEvent::View(v) = b2.until("the arbitrator back in", view_with(3)) else { unreachable!() };
    assert!(v.members.iter().any(|m| m.id == garb.id && m.arbitrator), "{:?}", v);
    assert!(a2.rx.try_iter().all(|e| !matches!(e, GroupEvent::Bootstrapping)), "only one member bootstraps");
    a2.group.stop();
    b2.group.stop();
}
