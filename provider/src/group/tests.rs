use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

use super::*;

struct Forward(Sender<GroupEvent>);

impl Delivery for Forward {
    fn deliver(&mut self, events: &mut Vec<GroupEvent>) {
        for e in events.drain(..) {
            let _ = self.0.send(e);
        }
    }
}

fn lone_member(position: Seqno) -> (Group, Receiver<GroupEvent>, Uuid) {
    let me = MemberInfo { id: Uuid::random(), name: "n1".into(), incoming: "127.0.0.1:3306".into(), address: "127.0.0.1:4567".into() };
    let history = Uuid::random();
    let (tx, rx) = channel();
    let cfg = GroupConfig { me, bootstrap: Some((history, position)), tick: Duration::from_millis(10) };
    (Group::start(cfg, Box::new(Forward(tx))).unwrap(), rx, history)
}

fn next(rx: &Receiver<GroupEvent>) -> GroupEvent {
    rx.recv_timeout(Duration::from_secs(5)).expect("group event")
}

#[test]
fn a_lone_member_bootstraps_and_orders_proposals() {
    let (g, rx, history) = lone_member(10);
    match next(&rx) {
        GroupEvent::View(v) => assert_eq!((v.history, v.seqno, v.primary, v.members.len(), v.my_idx), (history, 11, true, 1, 0)),
        e => panic!("{:?}", e),
    }
    assert!(matches!(next(&rx), GroupEvent::MemberState { state: MemberState::Synced, .. }));
    for token in 1..=3u64 {
        g.propose(token, |b| b.extend_from_slice(b"payload"), 7).unwrap();
    }
    for (token, seqno) in [(1, 12), (2, 13), (3, 14)] {
        match next(&rx) {
            GroupEvent::Ordered { seqno: s, token: t, payload, origin } => {
                assert_eq!((s, t, &payload[..], origin), (seqno, token, &b"payload"[..], g.me()));
            }
            e => panic!("{:?}", e),
        }
    }
    assert_eq!(g.send_queue(), 0);
    assert_eq!(g.read_index(Instant::now() + Duration::from_secs(5)), Some(14));
    g.stop();
    assert_eq!(g.propose(9, |_| {}, 0), Err(GroupError::Closed));
}

#[test]
fn member_state_transitions_are_ordered() {
    let (g, rx, _) = lone_member(0);
    next(&rx);
    next(&rx);
    g.member_state(Transition::Desync, 0).unwrap();
    assert!(matches!(next(&rx), GroupEvent::MemberState { state: MemberState::Donor, desync_count: 1, .. }));
    g.member_state(Transition::Join, 0).unwrap();
    assert!(matches!(next(&rx), GroupEvent::MemberState { state: MemberState::Joined, .. }));
    g.member_state(Transition::Sync, 0).unwrap();
    assert!(matches!(next(&rx), GroupEvent::MemberState { state: MemberState::Synced, .. }));
}
