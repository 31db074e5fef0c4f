use super::*;

fn member(id: Uuid, name: &str) -> MemberInfo {
    MemberInfo { id, name: name.into(), incoming: "i".into(), address: format!("{name}:4567"), arbitrator: false, stateless: false }
}

fn arbitrator(id: Uuid) -> MemberInfo {
    MemberInfo { arbitrator: true, ..member(id, "garb") }
}

fn apply(g: &mut GroupState, e: Entry) -> Vec<GroupEvent> {
    let mut out = Vec::new();
    g.apply(e, &mut out);
    out
}

fn membership(g: &mut GroupState, m: Membership) -> Vec<GroupEvent> {
    let mut out = Vec::new();
    g.apply_membership(m, &mut out);
    out
}

fn boot(me: Uuid, position: Seqno) -> GroupState {
    let mut g = GroupState::new(me);
    membership(&mut g, Membership::Bootstrap { history: Uuid::random(), position, member: member(me, "node1") });
    g
}

fn ordered(origin: Uuid, token: u64) -> Entry {
    Entry::Ordered { origin, token, payload: Bytes::new() }
}

#[test]
fn bootstrap_view_consumes_the_seqno_after_the_position() {
    let me = Uuid::random();
    let h = Uuid::random();
    let mut g = GroupState::new(me);
    let out = membership(&mut g, Membership::Bootstrap { history: h, position: 234, member: member(me, "n1") });
    match &out[0] {
        GroupEvent::View(v) => assert_eq!((v.history, v.seqno, v.conf_id, v.primary, v.my_idx), (h, 235, 1, true, 0)),
        e => panic!("{:?}", e),
    }
    let out = apply(&mut g, ordered(me, 1));
    assert!(matches!(out[0], GroupEvent::Ordered { seqno: 236, token: 1, .. }));
}

#[test]
fn a_fresh_history_starts_its_first_view_at_one() {
    let me = Uuid::random();
    assert_eq!(boot(me, -1).seqno(), 1);
}

#[test]
fn nothing_is_ordered_before_bootstrap_nor_from_strangers_and_bootstrap_happens_once() {
    let me = Uuid::random();
    let mut g = GroupState::new(me);
    assert!(apply(&mut g, ordered(me, 1)).is_empty());
    membership(&mut g, Membership::Bootstrap { history: Uuid::random(), position: 0, member: member(me, "n1") });
    let again = Membership::Bootstrap { history: Uuid::random(), position: 9, member: member(me, "n1") };
    assert!(membership(&mut g, again).is_empty());
    assert!(apply(&mut g, ordered(Uuid::random(), 1)).is_empty(), "not a member");
    assert_eq!(g.seqno(), 1);
}

#[test]
fn desyncs_stack_and_join_sync_return_to_synced() {
    let me = Uuid::random();
    let mut g = boot(me, 0);
    let t = |g: &mut GroupState, t| apply(g, Entry::MemberState { member: me, transition: t, seqno: 0 });
    t(&mut g, Transition::Desync);
    t(&mut g, Transition::Desync);
    assert_eq!(g.member(me).unwrap().state, MemberState::Donor);
    t(&mut g, Transition::Join);
    assert_eq!(g.member(me).unwrap().state, MemberState::Donor);
    t(&mut g, Transition::Join);
    assert_eq!(g.member(me).unwrap().state, MemberState::Joined);
    assert_eq!(g.seqno(), 1, "member-state actions never consume seqnos");
    let out = t(&mut g, Transition::Sync);
    assert_eq!(out, vec![GroupEvent::MemberState { member: me, state: MemberState::Synced, desync_count: 0 }]);
    assert!(t(&mut g, Transition::Sync).is_empty());
}

#[test]
fn a_joiner_enters_as_learner_with_a_view_and_leaves_with_one() {
    let (a, b) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 10);
    let out = membership(&mut g, Membership::Add { member: member(b, "node2") });
    match &out[0] {
        GroupEvent::View(v) => assert_eq!((v.seqno, v.conf_id, v.members.len(), v.my_idx), (12, 2, 2, 0)),
        e => panic!("{:?}", e),
    }
    assert!(!g.member(b).unwrap().voter);
    assert_eq!(g.member(b).unwrap().state, MemberState::Joiner);
    assert!(membership(&mut g, Membership::Add { member: member(b, "node2") }).is_empty(), "retried join");
    membership(&mut g, Membership::Promote { member: b });
    assert!(g.member(b).unwrap().voter);
    let out = membership(&mut g, Membership::Remove { member: b });
    assert!(matches!(&out[0], GroupEvent::View(v) if v.seqno == 13 && v.members.len() == 1 && v.primary));
}

#[test]
fn the_removed_member_sees_itself_alone_and_non_primary() {
    let (a, b) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 0);
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    let mut gb = g.clone();
    gb.me = b;
    let out = membership(&mut gb, Membership::Remove { member: b });
    assert!(matches!(&out[0], GroupEvent::View(v) if !v.primary && v.my_idx == 0 && v.members.len() == 1 && v.conf_id == -1));
}

#[test]
fn donor_selection_follows_wsrep_sst_donor() {
    let (a, b, c) = (Uuid::random(), Uuid::random(), Uuid::random());
    let mut g = boot(a, 0);
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    membership(&mut g, Membership::Add { member: member(c, "node3") });
    assert_eq!(g.select_donor(c, ""), Ok(a));
    assert_eq!(g.select_donor(c, "node1"), Ok(a));
    assert_eq!(g.select_donor(c, "node2"), Err(DonorError::Again), "named but still joining");
    assert_eq!(g.select_donor(c, "node2,"), Ok(a), "trailing comma falls back to any");
    assert_eq!(g.select_donor(c, "node9"), Err(DonorError::Unreachable));
    let req = Entry::StateRequest { joiner: c, donors: "".into(), ist: crate::group::wire::entry::IstRequest { position: (Uuid::NIL, -1), addr: String::new() }, request: Bytes::from_static(b"x") };
    let out = apply(&mut g, req.clone());
    assert!(out.contains(&GroupEvent::MemberState { member: a, state: MemberState::Donor, desync_count: 1 }));
    assert!(matches!(out.last(), Some(GroupEvent::StateTransfer { donor: Ok(d), seqno: 3, .. }) if *d == a));
    // The only synced member is busy donating: the next joiner must wait.
    assert_eq!(g.select_donor(b, ""), Err(DonorError::Again));
}

/// node2 was killed and restarted before the others evicted it: its
/// former self is still a synced member, at the joiner's address, and
/// must not be its donor (it would wait for a dead donor forever).
#[test]
fn a_joiners_former_self_is_never_its_donor() {
    let (a, old, new) = (Uuid::random(), Uuid::random(), Uuid::random());
    let mut g = boot(a, 0);
    membership(&mut g, Membership::Add { member: member(old, "node2") });
    for t in [Transition::Join, Transition::Sync] {
        apply(&mut g, Entry::MemberState { member: old, transition: t, seqno: -1 });
    }
    membership(&mut g, Membership::Add { member: member(new, "node2") });
    assert_eq!(g.select_donor(new, "node2,"), Ok(a));
    assert_eq!(g.select_donor(new, ""), Ok(a));
}

/// galera_3nodes.galera_sst_stateless: node3 names node2 first, node2 is
/// `gcs.stateless`, so node1 donates.
#[test]
fn a_stateless_member_is_never_a_donor_even_when_named() {
    let (a, b, c) = (Uuid::random(), Uuid::random(), Uuid::random());
    let mut g = boot(a, 0);
    membership(&mut g, Membership::Add { member: MemberInfo { stateless: true, ..member(b, "node2") } });
    for t in [Transition::Join, Transition::Sync] {
        apply(&mut g, Entry::MemberState { member: b, transition: t, seqno: -1 });
    }
    membership(&mut g, Membership::Add { member: member(c, "node3") });
    assert_eq!(g.select_donor(c, "node2,"), Ok(a));
    assert_eq!(g.select_donor(c, "node2"), Err(DonorError::Again), "named alone: the joiner waits");
}

#[test]
fn fenced_proposals_are_never_ordered() {
    let me = Uuid::random();
    let mut g = boot(me, 0);
    apply(&mut g, Entry::Fence { origin: me, token: 5 });
    assert!(apply(&mut g, ordered(me, 4)).is_empty());
    assert!(apply(&mut g, ordered(me, 5)).is_empty());
    assert_eq!(apply(&mut g, ordered(me, 6)).len(), 1);
    assert_eq!(apply(&mut g, ordered(me, 0)).len(), 1, "token 0 is never fenced");
}

#[test]
fn snapshot_round_trips_and_refuses_truncation() {
    let (a, b) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 41);
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    membership(&mut g, Membership::Add { member: arbitrator(Uuid::random()) });
    membership(&mut g, Membership::Add { member: MemberInfo { stateless: true, ..member(Uuid::random(), "node4") } });
    apply(&mut g, Entry::Fence { origin: a, token: 3 });
    assert_eq!(boot(a, 41).encode()[0], 4, "without arbitrators, a snapshot the previous build reads");
    let enc = g.encode();
    assert_eq!(enc[0], 5);
    let back = GroupState::decode(a, &enc).unwrap();
    assert_eq!(back, g);
    for len in 0..enc.len() {
        assert!(GroupState::decode(a, &enc[..len]).is_err());
    }
}

#[test]
fn a_reform_is_a_new_component_and_snapshots_carry_it() {
    let (a, b) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 41);
    let first = g.component().expect("a bootstrap names its component");
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    g.reform(true);
    let (history, position) = (g.history(), g.seqno());
    membership(&mut g, Membership::Bootstrap { history, position, member: member(a, "node1") });
    let second = g.component().unwrap();
    assert_ne!(first, second, "the group a reform left must be told apart from the new one");
    assert_eq!(GroupState::decode(a, &g.encode()).unwrap().component(), Some(second));
    // A version 2 snapshot (before components and votes) restores,
    // without them.
    let mut old = boot(a, 41).encode();
    old.truncate(old.len() - 25 - 24);
    old[0] = 2;
    assert_eq!(GroupState::decode(a, &old).unwrap().component(), None);
}

/// galera.galera_sequences_recovery: a member whose weight keeps it
/// primary alone reforms after its log delivered the others' removal. A
/// second primary view of the same members would make the server roll
/// back its own clients' streaming transactions.
#[test]
fn a_reform_of_a_member_alone_in_its_view_names_a_new_component_without_a_second_view() {
    let (a, b) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 41);
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    membership(&mut g, Membership::Remove { member: b });
    let (before, seqno) = (g.component(), g.seqno());
    g.reform(true);
    assert!(g.is_primary() && g.awaits_bootstrap());
    let (history, position) = (g.history(), g.seqno());
    let out = membership(&mut g, Membership::Bootstrap { history, position, member: member(a, "node1") });
    assert!(out.is_empty(), "no view: {:?}", out);
    assert_eq!(g.seqno(), seqno, "no seqno consumed");
    assert!(!g.awaits_bootstrap());
    assert_ne!(g.component(), before, "the group the reform left is told apart from the new one");
    assert!(matches!(apply(&mut g, ordered(a, 1)).as_slice(), [GroupEvent::Ordered { .. }]));
    // After a non-primary view (pc.bootstrap), the server needs a primary
    // view again, even of the same member.
    g.reform(false);
    let (history, position) = (g.history(), g.seqno());
    let out = membership(&mut g, Membership::Bootstrap { history, position, member: member(a, "node1") });
    assert!(matches!(out.first(), Some(GroupEvent::View(v)) if v.primary && v.members.len() == 1));
    // Not alone: the members are forgotten and the bootstrap is a view.
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    g.reform(true);
    assert!(!g.is_primary());
}

#[test]
fn a_rejoin_after_a_non_primary_spell_is_a_new_primary_view_and_restates_the_member() {
    let me = Uuid::random();
    let mut g = boot(me, 10);
    let rejoin = |m| Entry::MemberState { member: m, transition: Transition::Rejoin, seqno: -1 };
    let out = apply(&mut g, rejoin(me));
    match &out[..] {
        [GroupEvent::View(v), GroupEvent::MemberState { member, state: MemberState::Synced, desync_count: 0 }] => {
            assert_eq!((v.seqno, v.conf_id, v.primary, *member), (12, 2, true, me))
        }
        e => panic!("{:?}", e),
    }
    assert!(apply(&mut g, rejoin(Uuid::random())).is_empty(), "a removed member must join anew");
    assert_eq!(g.seqno(), 12);
}

#[test]
fn a_view_round_trips_seen_from_whoever_reads_it() {
    let (a, b) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 10);
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    let v = g.view();
    let enc = v.encode();
    assert_eq!(View::decode(&enc, a).unwrap(), v);
    assert_eq!(View::decode(&enc, b).unwrap().my_idx, 1);
    assert_eq!(View::decode(&enc, Uuid::random()).unwrap().my_idx, -1, "not a member of it");
    for len in 0..enc.len() {
        assert!(View::decode(&enc[..len], a).is_err(), "cut at {len}");
    }
}

/// Pieces of a big writeset assemble into one ordered writeset at the
/// last piece's seqno; pieces of a departed origin are forgotten.
#[test]
fn a_writeset_in_pieces_is_ordered_at_its_last_piece() {
    let (a, b) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 0);
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    let body = bytes::Bytes::from(vec![7u8; 3 * crate::group::wire::pieces::PIECE_BYTES]);
    let piece = |i| Entry::committed(crate::group::wire::pieces::entry(b, 9, &body, i));
    let before = g.seqno();
    assert!(matches!(apply(&mut g, piece(0))[..], [GroupEvent::Assembling { bytes, .. }] if bytes == crate::group::wire::pieces::PIECE_BYTES as u64));
    assert!(!g.may_snapshot(), "no snapshot with a writeset half assembled");
    apply(&mut g, ordered(a, 1));
    apply(&mut g, piece(1));
    let events = apply(&mut g, piece(2));
    assert!(matches!(&events[..], [GroupEvent::Assembled { seqno, origin, token: 9, pieces }] if *seqno == before + 2 && *origin == b && crate::group::wire::pieces::join(pieces.clone()) == body));
    assert!(g.may_snapshot());
    apply(&mut g, piece(0));
    membership(&mut g, Membership::Remove { member: b });
    assert!(g.may_snapshot(), "a departed member's pieces are dropped");
}

#[test]
fn a_vote_is_decided_alike_on_every_member_and_snapshots_wait_for_it() {
    use super::vote::SUCCESS;
    let (a, b, c) = (Uuid::random(), Uuid::random(), Uuid::random());
    let mut g = boot(a, 10);
    for (id, name) in [(b, "node2"), (c, "node3")] {
        membership(&mut g, Membership::Add { member: member(id, name) });
        for t in [Transition::Join, Transition::Sync] {
            g.apply(Entry::MemberState { member: id, transition: t, seqno: -1 }, &mut Vec::new());
        }
    }
    let vote = |m, code| Entry::Vote { member: m, seqno: 20, code, policy: 0, message: String::new() };
    let mut out = vec![];
    g.apply(vote(c, 1 << 63 | 5), &mut out);
    assert!(out.contains(&GroupEvent::VoteRequest { seqno: 20 }), "{out:?}");
    assert!(!g.may_snapshot(), "the votes cast are not in a snapshot");
    g.apply(vote(a, SUCCESS), &mut out);
    // c, which failed, leaves: a's success wins over b's missing vote
    // (success wins ties).
    let out = membership(&mut g, Membership::Remove { member: c });
    assert!(out.contains(&GroupEvent::VoteResult { seqno: 20, result: SUCCESS }), "{out:?}");
    assert!(g.may_snapshot());
    let restored = GroupState::decode(b, &g.encode()).unwrap();
    let mut late = vec![];
    let mut h = restored.clone();
    h.apply(vote(a, 1 << 63 | 9), &mut late);
    assert!(!late.iter().any(|e| matches!(e, GroupEvent::VoteRequest { .. } | GroupEvent::VoteResult { .. })), "an outdated vote, after a restore too: {late:?}");
}

#[test]
fn an_arbitrator_never_donates_and_never_votes() {
    let (a, garb, c) = (Uuid::random(), Uuid::random(), Uuid::random());
    let mut g = boot(a, 5);
    membership(&mut g, Membership::Add { member: arbitrator(garb) });
    for t in [Transition::Join, Transition::Sync] {
        apply(&mut g, Entry::MemberState { member: garb, transition: t, seqno: -1 });
    }
    assert_eq!(g.member(garb).unwrap().state, MemberState::Synced, "it joins without a state transfer");
    membership(&mut g, Membership::Add { member: member(c, "node3") });
    apply(&mut g, Entry::MemberState { member: a, transition: Transition::Desync, seqno: -1 });
    assert_eq!(g.select_donor(c, ""), Err(DonorError::Again), "the only synced member left is the arbitrator");
    assert_eq!(g.select_donor(c, "garb"), Err(DonorError::Again), "not even when named");
    apply(&mut g, Entry::MemberState { member: a, transition: Transition::Join, seqno: -1 });
    apply(&mut g, Entry::MemberState { member: a, transition: Transition::Sync, seqno: -1 });
    assert_eq!(g.select_donor(c, ""), Ok(a));
    assert_eq!(g.counted(), vec![a], "votes are counted among the members that apply");
}

#[test]
fn a_donor_that_joins_with_an_error_code_fails_its_transfer_on_every_member() {
    let (a, c) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 5);
    membership(&mut g, Membership::Add { member: member(c, "node2") });
    let ist = crate::group::wire::entry::IstRequest { position: (Uuid::NIL, -1), addr: String::new() };
    apply(&mut g, Entry::StateRequest { joiner: c, donors: "".into(), ist, request: Bytes::from_static(b"x") });
    assert_eq!(g.member(a).unwrap().state, MemberState::Donor);
    let out = apply(&mut g, Entry::MemberState { member: a, transition: Transition::Join, seqno: -125 });
    assert_eq!(out.first(), Some(&GroupEvent::StateTransferFailed { donor: a, code: -125 }), "{out:?}");
    assert_eq!(g.member(a).unwrap().state, MemberState::Joined, "the donor goes on, as Galera's");
    // A joiner's own Join, and a donor's at a position, fail nothing.
    let out = apply(&mut g, Entry::MemberState { member: c, transition: Transition::Join, seqno: -1 });
    assert!(!out.iter().any(|e| matches!(e, GroupEvent::StateTransferFailed { .. })), "{out:?}");
    apply(&mut g, Entry::MemberState { member: a, transition: Transition::Desync, seqno: 9 });
    let out = apply(&mut g, Entry::MemberState { member: a, transition: Transition::Join, seqno: 9 });
    assert!(!out.iter().any(|e| matches!(e, GroupEvent::StateTransferFailed { .. })), "{out:?}");
}

#[test]
fn a_repeated_state_request_is_served_once_and_the_mark_survives_a_snapshot() {
    let (a, b, c) = (Uuid::random(), Uuid::random(), Uuid::random());
    let mut g = boot(a, 5);
    membership(&mut g, Membership::Add { member: member(b, "node2") });
    apply(&mut g, Entry::MemberState { member: b, transition: Transition::Join, seqno: 6 });
    apply(&mut g, Entry::MemberState { member: b, transition: Transition::Sync, seqno: 6 });
    membership(&mut g, Membership::Add { member: member(c, "node3") });
    let ist = crate::group::wire::entry::IstRequest { position: (Uuid::NIL, -1), addr: String::new() };
    let req = Entry::StateRequest { joiner: c, donors: "".into(), ist, request: Bytes::from_static(b"x") };
    let out = apply(&mut g, req.clone());
    assert!(matches!(out.last(), Some(GroupEvent::StateTransfer { donor: Ok(d), .. }) if *d == a), "{out:?}");
    // The joiner heard nothing (its proposal seemed lost) and asked again:
    // b, synced too, must not start a second transfer.
    assert!(apply(&mut g, req.clone()).is_empty());
    let mut restored = GroupState::decode(b, &g.encode()).unwrap();
    assert_eq!(g.encode()[0], 5, "the mark needs version 5's roles bits");
    assert!(apply(&mut restored, req.clone()).is_empty(), "a member restored from a snapshot decides alike");
    // Joined, the mark goes, and with it the need for version 5.
    apply(&mut g, Entry::MemberState { member: c, transition: Transition::Join, seqno: 8 });
    assert_eq!(g.member(c).unwrap().state, MemberState::Joined);
    assert!(!g.member(c).unwrap().donor_chosen);
    apply(&mut g, Entry::MemberState { member: a, transition: Transition::Join, seqno: 8 });
    assert_eq!(g.encode()[0], 4);
}

#[test]
fn a_state_request_refused_for_want_of_a_donor_is_served_when_repeated() {
    let (a, c) = (Uuid::random(), Uuid::random());
    let mut g = boot(a, 5);
    membership(&mut g, Membership::Add { member: member(c, "node2") });
    apply(&mut g, Entry::MemberState { member: a, transition: Transition::Desync, seqno: 6 });
    let ist = crate::group::wire::entry::IstRequest { position: (Uuid::NIL, -1), addr: String::new() };
    let req = Entry::StateRequest { joiner: c, donors: "".into(), ist, request: Bytes::from_static(b"x") };
    assert!(matches!(apply(&mut g, req.clone()).last(), Some(GroupEvent::StateTransfer { donor: Err(DonorError::Again), .. })));
    apply(&mut g, Entry::MemberState { member: a, transition: Transition::Join, seqno: 6 });
    apply(&mut g, Entry::MemberState { member: a, transition: Transition::Sync, seqno: 6 });
    assert!(matches!(apply(&mut g, req).last(), Some(GroupEvent::StateTransfer { donor: Ok(d), .. }) if *d == a));
}
