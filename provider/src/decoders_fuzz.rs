//! Every decoder of bytes that come from a peer or from disk, fed
//! arbitrary bytes and mutated valid encodings: it returns an error and
//! never panics (a panic would take mariadbd down, or stop replication on
//! the group thread), and what it accepts from a valid encoding is what
//! was encoded. CI runs `decoders_survive_a_timed_fuzz_pass` for a fixed
//! time (`LOCKSTEP_FUZZ_SECS`); `PROPTEST_CASES` raises the number of
//! cases of the others.

use bytes::Bytes;
use proptest::prelude::*;

use crate::cert::Certification;
use crate::gcache::Cached;
use crate::group::entry::{Entry, IstRequest, MemberInfo, Membership, Transition};
use crate::group::state::View;
use crate::group::frame::Frame;
use crate::group::GroupState;
use crate::gtid::Uuid;
use crate::transfer::ist;
use crate::transport::handshake::{Hello, Welcome};
use crate::writeset::{flags, Key, KeyKind, WriteSet};

const ME: Uuid = Uuid([3; 16]);

fn member(n: u8) -> MemberInfo {
    MemberInfo { id: Uuid([n; 16]), name: format!("node{}", n), incoming: "127.0.0.1:3306".into(), address: "127.0.0.1:4567".into(), arbitrator: false, stateless: false }
}

fn entries() -> Vec<Entry> {
    vec![
        Entry::Ordered { origin: Uuid([1; 16]), token: 7, payload: Bytes::from_static(b"payload") },
        Entry::MemberState { member: Uuid([2; 16]), transition: Transition::Sync, seqno: 42 },
        Entry::StateRequest {
            joiner: Uuid([4; 16]),
            donors: "node1,".into(),
            ist: IstRequest { position: (Uuid([5; 16]), 9), addr: "127.0.0.1:4568".into() },
            request: Bytes::from_static(b"sst request"),
        },
        Entry::Fence { origin: Uuid([1; 16]), token: 3 },
        Entry::Weight { member: Uuid([2; 16]), weight: 2 },
        Entry::Piece { origin: Uuid([1; 16]), token: 9, total: 3 << 20, offset: 1 << 20, data: Bytes::from_static(b"piece") },
        Entry::Vote { member: Uuid([3; 16]), seqno: 8, code: 1 << 63 | 4, policy: 0, message: "Error_code: 1062;".into() },
    ]
}

fn memberships() -> Vec<Membership> {
    vec![
        Membership::Bootstrap { history: Uuid([6; 16]), position: 5, member: member(1) },
        Membership::Add { member: member(2) },
        Membership::Promote { member: Uuid([2; 16]) },
        Membership::Remove { member: Uuid([2; 16]) },
    ]
}

fn writeset() -> WriteSet {
    let keys = vec![
        Key { kind: KeyKind::Exclusive, parts: vec![Bytes::from_static(b"db"), Bytes::from_static(b"t"), Bytes::from_static(&[1, 0, 0, 0])] },
        Key { kind: KeyKind::Shared, parts: vec![Bytes::from_static(b"db")] },
    ];
    WriteSet::new(flags::TRX_START | flags::TRX_END, Uuid([1; 16]), 11, 12, 40, keys, Bytes::from_static(b"row events"))
}

fn certification() -> Certification {
    let mut c = Certification::new(0);
    c.certify(&writeset(), 41);
    c
}

/// Valid encodings of every format: the mutations start from these.
fn seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = entries().iter().map(Entry::encode).collect();
    out.extend(memberships().iter().map(Membership::encode));
    out.push(writeset().encode());
    out.push(certification().encode());
    out.extend(crate::group::frame::every_frame().iter().map(|f| f.encode().expect("encodes").1.to_vec()));
    out.push(Hello { cluster: "c".into(), uuid: ME, id: 5, listen: "127.0.0.1:4567".into(), nonce: 1, segment: Some(1), features: 1 }.encode());
    out.push(Welcome { uuid: ME, id: 5, listen: "127.0.0.1:4567".into(), segment: Some(1), features: 1 }.encode());
    let header = ist::Header { history: Uuid([6; 16]), joiner: ME, first: 1, last: 2 };
    out.push(ist::encode(&ist::Chunk::Header(header)).1.to_vec());
    let item = Cached::Writeset { payload: Bytes::from(writeset().encode()), certified: true };
    out.push(ist::encode(&ist::Chunk::Item { seqno: 1, item }).1.to_vec());
    out.push(crate::transport::deflate::pack(1, &[writeset().encode(), writeset().encode()].concat()).expect("a writeset twice shrinks").to_vec());
    out
}

/// Feeds `buf` to every decoder; only a panic fails.
fn decode_everything(buf: &[u8]) {
    let bytes = Bytes::copy_from_slice(buf);
    let _ = Entry::decode(&bytes);
    let _ = Membership::decode(buf);
    let _ = View::decode(buf, ME);
    let _ = GroupState::decode(ME, buf);
    let _ = WriteSet::decode(bytes.clone());
    let _ = Certification::new(0).restore(buf);
    for kind in 0..=u8::MAX {
        let _ = Frame::decode(kind, buf);
    }
    let _ = Hello::decode(buf);
    let _ = Welcome::decode(buf);
    for kind in 0..=255u8 {
        let _ = ist::decode(kind, &bytes);
    }
    let _ = crate::group::split_snapshot(buf);
    let _ = crate::gcache::record::FileHeader::decode(buf);
    let _ = crate::gcache::record::RecordHeader::decode(buf);
    let _ = crate::transport::frame::read_frame(&mut &buf[..], 1 << 16);
    let _ = crate::transport::deflate::unpack(buf, 1 << 16);
}

/// A seed with some bytes changed, cut short or lengthened.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let n = seeds().len();
    (0..n, prop::collection::vec((any::<u16>(), any::<u8>()), 1..8), any::<u16>(), any::<bool>()).prop_map(|(i, flips, cut, cut_it)| {
        let mut b = seeds()[i].clone();
        for (at, byte) in flips {
            if !b.is_empty() {
                let at = at as usize % b.len();
                b[at] = byte;
            }
        }
        if cut_it && !b.is_empty() {
            b.truncate(cut as usize % b.len());
        }
        b
    })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_a_decoder(buf in prop::collection::vec(any::<u8>(), 0..512)) {
        decode_everything(&buf);
    }

    #[test]
    fn mutated_encodings_never_panic_a_decoder(buf in mutated()) {
        decode_everything(&buf);
    }

    #[test]
    fn a_writeset_round_trips(data in prop::collection::vec(any::<u8>(), 0..256), parts in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..16), 0..4), last_seen in -1i64..1000) {
        let keys = vec![Key { kind: KeyKind::Update, parts: parts.into_iter().map(Bytes::from).collect() }];
        let ws = WriteSet::new(flags::TRX_START, Uuid([9; 16]), 1, 2, last_seen, keys.clone(), Bytes::from(data.clone()));
        let back = WriteSet::decode(Bytes::from(ws.encode())).unwrap();
        prop_assert_eq!(&back.keys, &keys);
        prop_assert_eq!(back.data(), &data[..]);
        prop_assert_eq!(back.last_seen, last_seen);
    }

    #[test]
    fn an_entry_round_trips(token in any::<u64>(), payload in prop::collection::vec(any::<u8>(), 0..256), offset in any::<u64>()) {
        for e in [
            Entry::Ordered { origin: ME, token, payload: Bytes::from(payload.clone()) },
            Entry::Piece { origin: ME, token, total: offset.saturating_add(payload.len() as u64), offset, data: Bytes::from(payload.clone()) },
            Entry::Fence { origin: ME, token },
        ] {
            prop_assert_eq!(Entry::decode(&Bytes::from(e.encode())).unwrap(), e);
        }
    }
}

/// The fuzz pass CI runs for a fixed time: arbitrary and mutated bytes
/// through every decoder for `LOCKSTEP_FUZZ_SECS` seconds (default 1, for
/// the unit run); a panic fails with the smallest input proptest finds.
#[test]
fn decoders_survive_a_timed_fuzz_pass() {
    use proptest::test_runner::{Config, TestRunner};
    const ROUND: u32 = 2000;
    let secs: u64 = std::env::var("LOCKSTEP_FUZZ_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let inputs = prop_oneof![prop::collection::vec(any::<u8>(), 0..512), mutated()];
    let mut cases = 0u64;
    while std::time::Instant::now() < deadline {
        // A new runner each round draws a new seed.
        let mut runner = TestRunner::new(Config { cases: ROUND, failure_persistence: None, ..Config::default() });
        if let Err(e) = runner.run(&inputs, |buf| {
            decode_everything(&buf);
            Ok(())
        }) {
            panic!("a decoder failed after {} cases: {}", cases, e);
        }
        cases += u64::from(ROUND);
    }
    eprintln!("decoders: {} cases in {} s, no panic", cases, secs);
}

#[test]
fn every_seed_decodes_as_encoded() {
    for e in entries() {
        assert_eq!(Entry::decode(&Bytes::from(e.encode())).unwrap(), e);
    }
    for m in memberships() {
        assert_eq!(Membership::decode(&m.encode()).unwrap(), m);
    }
    let mut c = Certification::new(0);
    c.restore(&certification().encode()).unwrap();
    assert_eq!(c.encode(), certification().encode());
}
