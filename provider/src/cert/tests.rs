use bytes::Bytes;

use super::*;
use crate::writeset::Key;

const A: Uuid = Uuid([1; 16]);
const B: Uuid = Uuid([2; 16]);

fn ws(source: Uuid, last_seen: Seqno, flags: u32, keys: &[(KeyKind, &[&str])]) -> WriteSet {
    let keys = keys
        .iter()
        .map(|(kind, parts)| Key { kind: *kind, parts: parts.iter().map(|p| Bytes::copy_from_slice(p.as_bytes())).collect() })
        .collect();
    WriteSet::new(flags | flags::TRX_START | flags::TRX_END, source, 1, 1, last_seen, keys, Bytes::new())
}

fn row(kind: KeyKind) -> [(KeyKind, &'static [&'static str]); 1] {
    [(kind, &["d", "t", "1"])]
}

/// Certifies `first` at seqno 1 (from A) then `second` at 2 from `source`
/// with last_seen 0 (so the two are concurrent).
fn pair(first: KeyKind, second: KeyKind, source: Uuid) -> Verdict {
    let mut c = Certification::new(0);
    assert!(matches!(c.certify(&ws(A, 0, 0, &row(first)), 1), Verdict::Pass { .. }));
    c.certify(&ws(source, 0, 0, &row(second)), 2)
}

#[test]
fn conflict_matrix_matches_galera_for_concurrent_writesets_from_two_nodes() {
    use KeyKind::*;
    // (existing, new, conflict?)
    let table = [
        (Shared, Shared, false), (Shared, Reference, false), (Shared, Update, false), (Shared, Exclusive, false),
        (Reference, Shared, false), (Reference, Reference, false), (Reference, Update, false), (Reference, Exclusive, true),
        (Update, Shared, false), (Update, Reference, false), (Update, Update, true), (Update, Exclusive, true),
        (Exclusive, Shared, true), (Exclusive, Reference, true), (Exclusive, Update, true), (Exclusive, Exclusive, true),
    ];
    for (existing, new, conflict) in table {
        let v = pair(existing, new, B);
        assert_eq!(matches!(v, Verdict::Fail(_)), conflict, "{:?} then {:?}: {:?}", existing, new, v);
    }
}

#[test]
fn dependencies_follow_the_matrix() {
    use KeyKind::*;
    // Not conflicting but dependent: depends_on is the first writeset.
    assert_eq!(pair(Update, Shared, B), Verdict::Pass { depends_on: 1 });
    assert_eq!(pair(Reference, Update, B), Verdict::Pass { depends_on: 1 });
    // Nothing: only the index floor (lowest - 1 = 0).
    assert_eq!(pair(Shared, Shared, B), Verdict::Pass { depends_on: 0 });
}

#[test]
fn same_source_never_conflicts_but_depends() {
    assert_eq!(pair(KeyKind::Exclusive, KeyKind::Exclusive, A), Verdict::Pass { depends_on: 1 });
}

#[test]
fn a_writeset_that_saw_the_other_does_not_conflict() {
    let mut c = Certification::new(0);
    c.certify(&ws(A, 0, 0, &row(KeyKind::Update)), 1);
    assert_eq!(c.certify(&ws(B, 1, 0, &row(KeyKind::Update)), 2), Verdict::Pass { depends_on: 1 });
}

#[test]
fn toi_passes_and_conflicts_with_racing_dml_even_from_its_own_node() {
    let mut c = Certification::new(0);
    let toi = ws(A, 0, flags::ISOLATION, &[(KeyKind::Exclusive, &["d", "t"])]);
    assert_eq!(c.certify(&toi, 1), Verdict::Pass { depends_on: 0 });
    let dml = ws(A, 0, 0, &row(KeyKind::Update));
    assert_eq!(c.certify(&dml, 2), Verdict::Fail(FailReason::Conflict { with: 1 }));
    // A DML that saw the TOI passes and waits for it.
    let later = ws(A, 1, 0, &row(KeyKind::Update));
    assert_eq!(c.certify(&later, 3), Verdict::Pass { depends_on: 1 });
}

#[test]
fn toi_ignores_conflicts_itself() {
    let mut c = Certification::new(0);
    c.certify(&ws(B, 0, 0, &row(KeyKind::Exclusive)), 1);
    let toi = ws(A, 0, flags::ISOLATION, &[(KeyKind::Exclusive, &["d", "t"])]);
    assert_eq!(c.certify(&toi, 2), Verdict::Pass { depends_on: 1 });
}

#[test]
fn a_failed_writeset_leaves_the_index_unchanged() {
    let mut c = Certification::new(0);
    c.certify(&ws(A, 0, 0, &row(KeyKind::Exclusive)), 1);
    let size = c.index_size();
    let failed = ws(B, 0, 0, &[(KeyKind::Exclusive, &["d", "t", "2"]), (KeyKind::Exclusive, &["d", "t", "1"])]);
    assert!(matches!(c.certify(&failed, 2), Verdict::Fail(_)));
    assert_eq!(c.index_size(), size);
    // Row 2 was never indexed: a concurrent writer of row 2 passes.
    assert!(matches!(c.certify(&ws(A, 0, 0, &[(KeyKind::Exclusive, &["d", "t", "2"])]), 3), Verdict::Pass { .. }));
}

#[test]
fn pa_unsafe_serialises_what_follows() {
    let mut c = Certification::new(0);
    c.certify(&ws(A, 0, 0, &row(KeyKind::Exclusive)), 1);
    assert_eq!(c.certify(&ws(A, 1, flags::PA_UNSAFE, &[]), 2), Verdict::Pass { depends_on: 1 });
    let other = ws(B, 2, 0, &[(KeyKind::Exclusive, &["x", "y", "z"])]);
    assert_eq!(c.certify(&other, 3), Verdict::Pass { depends_on: 2 });
}

#[test]
fn first_writeset_after_empty_index_is_serial() {
    let mut c = Certification::new(10);
    assert_eq!(c.certify(&ws(A, 10, 0, &row(KeyKind::Exclusive)), 11), Verdict::Pass { depends_on: 10 });
}

#[test]
fn purge_forgets_conflicts_and_raises_the_floor() {
    let mut c = Certification::new(0);
    c.certify(&ws(A, 0, 0, &row(KeyKind::Exclusive)), 1);
    c.certify(&ws(A, 1, 0, &[(KeyKind::Exclusive, &["d", "t", "2"])]), 2);
    c.purge_upto(1);
    assert_eq!(c.lowest(), 2);
    // A writeset whose interval reaches below the purge point cannot be
    // checked: it fails rather than risk a missed conflict.
    assert_eq!(c.certify(&ws(B, 0, 0, &[]), 3), Verdict::Fail(FailReason::BelowIndex));
    assert_eq!(c.certify(&ws(B, 1, 0, &row(KeyKind::Exclusive)), 4), Verdict::Pass { depends_on: 1 });
    c.purge_upto(4);
    assert_eq!(c.index_size(), 0);
}

#[test]
fn interval_longer_than_max_length_fails() {
    let mut c = Certification::new(0);
    c.set_max_length(3);
    for s in 1..=4 {
        c.certify(&ws(A, s - 1, 0, &[]), s);
    }
    assert_eq!(c.certify(&ws(B, 3, 0, &[]), 5), Verdict::Pass { depends_on: 1 });
    // The safety valve kept at most max_length writesets.
    assert!(c.lowest() >= 2);
    assert_eq!(c.certify(&ws(B, 1, 0, &[]), 9), Verdict::Fail(FailReason::BelowIndex));
}

#[test]
fn rollback_fragments_bypass_certification() {
    let mut c = Certification::new(0);
    c.certify(&ws(A, 0, 0, &row(KeyKind::Exclusive)), 1);
    let rb = WriteSet::new(flags::ROLLBACK | flags::PA_UNSAFE, B, 9, 1, 0, vec![], Bytes::new());
    assert_eq!(c.certify(&rb, 2), Verdict::Pass { depends_on: 1 });
}

#[test]
#[should_panic(expected = "out of order")]
fn seqnos_must_arrive_in_order() {
    let mut c = Certification::new(5);
    c.certify(&ws(A, 5, 0, &[]), 5);
}

#[test]
fn identical_streams_give_identical_decisions() {
    // Two indexes fed the same stream agree on every verdict.
    let stream: Vec<WriteSet> = (0..200)
        .map(|i| {
            let src = if i % 3 == 0 { A } else { B };
            let r = format!("{}", i % 7);
            let kind = KeyKind::ALL[i % 4];
            let mut w = ws(src, (i as Seqno) - (i as Seqno % 5), 0, &[]);
            w.keys.push(Key { kind, parts: vec![Bytes::from_static(b"d"), Bytes::from_static(b"t"), r.into_bytes().into()] });
            w
        })
        .collect();
    let mut x = Certification::new(0);
    let mut y = Certification::new(0);
    for (i, w) in stream.iter().enumerate() {
        let s = i as Seqno + 1;
        assert_eq!(x.certify(w, s), y.certify(w, s));
    }
}

#[test]
fn a_restored_snapshot_certifies_exactly_like_the_original() {
    let stream: Vec<WriteSet> = (0..300)
        .map(|i| {
            let src = if i % 2 == 0 { A } else { B };
            let kind = KeyKind::ALL[i % 4];
            let mut w = ws(src, i as Seqno - (i as Seqno % 7), if i % 50 == 0 { flags::ISOLATION } else { 0 }, &[]);
            w.keys.push(Key { kind, parts: vec![Bytes::from_static(b"d"), Bytes::from_static(b"t"), format!("{}", i % 11).into_bytes().into()] });
            w
        })
        .collect();
    let mut original = Certification::new(0);
    for (i, w) in stream[..150].iter().enumerate() {
        original.certify(w, i as Seqno + 1);
    }
    original.purge_upto(40);
    let mut copy = Certification::new(-1);
    copy.restore(&original.encode()).unwrap();
    assert_eq!(copy.index_size(), original.index_size());
    for (i, w) in stream[150..].iter().enumerate() {
        let s = 151 + i as Seqno;
        assert_eq!(copy.certify(w, s), original.certify(w, s), "seqno {}", s);
    }
}

#[test]
fn a_corrupt_snapshot_is_refused_and_changes_nothing() {
    let mut c = Certification::new(0);
    c.certify(&ws(A, 0, 0, &row(KeyKind::Exclusive)), 1);
    let enc = c.encode();
    for len in 0..enc.len() {
        let mut fresh = Certification::new(7);
        assert!(fresh.restore(&enc[..len]).is_err());
        assert_eq!(fresh.position(), 7);
    }
}

/// A fragment of streaming trx `trx` from A touching row `row`.
fn fragment(fl: u32, trx: u64, last_seen: Seqno, row: &str) -> WriteSet {
    let k = Key { kind: KeyKind::Exclusive, parts: vec![Bytes::from_static(b"d"), Bytes::from_static(b"big"), Bytes::copy_from_slice(row.as_bytes())] };
    WriteSet::new(fl, A, trx, 1, last_seen, vec![k], Bytes::new())
}

fn depends_on(v: Verdict) -> Seqno {
    match v {
        Verdict::Pass { depends_on } => depends_on,
        other => panic!("{other:?}"),
    }
}

/// Fragments of one streaming transaction touch different rows, yet share
/// the server's applier context: each must wait for the one before
/// (the crash of issue 12: two fragments applied at once).
#[test]
fn a_fragment_waits_for_the_previous_fragment_of_its_transaction() {
    let mut c = Certification::new(0);
    let other = |c: &mut Certification, seqno: Seqno, row: &str| {
        assert!(matches!(c.certify(&ws(B, seqno - 1, 0, &[(KeyKind::Exclusive, &["d", "sb", row])]), seqno), Verdict::Pass { .. }));
    };
    other(&mut c, 1, "1");
    depends_on(c.certify(&fragment(flags::TRX_START, 7, 1, "1"), 2));
    other(&mut c, 3, "2");
    assert!(depends_on(c.certify(&fragment(0, 7, 1, "2"), 4)) >= 2, "fragment 2 beside fragment 1");
    assert!(depends_on(c.certify(&fragment(0, 7, 1, "3"), 5)) >= 4);
    // Another transaction of the same node is not held behind it.
    assert!(depends_on(c.certify(&fragment(flags::TRX_START | flags::TRX_END, 8, 1, "9"), 6)) < 5);
    // The commit fragment, PA-unsafe as wsrep-lib sends it, waits for all.
    assert_eq!(depends_on(c.certify(&fragment(flags::TRX_END | flags::PA_UNSAFE, 7, 1, "4"), 7)), 6);
    // A fragment of a transaction this node never saw begin waits for
    // everything before it.
    assert_eq!(depends_on(c.certify(&fragment(0, 9, 1, "5"), 8)), 7);
}

#[test]
fn a_restored_index_ties_fragments_alike() {
    let mut c = Certification::new(0);
    depends_on(c.certify(&fragment(flags::TRX_START, 7, 0, "1"), 1));
    c.certify(&ws(B, 0, 0, &[(KeyKind::Exclusive, &["d", "sb", "1"])]), 2);
    let mut copy = Certification::new(-1);
    copy.restore(&c.encode()).unwrap();
    let next = fragment(0, 7, 0, "2");
    assert_eq!(copy.certify(&next, 3), c.certify(&next, 3));
    assert_eq!(depends_on(c.certify(&fragment(flags::ROLLBACK, 7, 0, "3"), 4)), 3);
    // Rolled back: the transaction is forgotten.
    assert_eq!(c.encode()[..], {
        let mut fresh = Certification::new(-1);
        fresh.restore(&c.encode()).unwrap();
        fresh.encode()
    }[..]);
}
