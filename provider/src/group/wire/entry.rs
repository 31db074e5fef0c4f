//! What the Raft log carries: the group's ordered actions, encoded with a
//! version so that a node refuses what a newer peer writes instead of
//! misreading it.
//!
//! ```text
//! version u8 (1) | tag u8 | body
//! Ordered      origin uuid 16 | token u64 | payload...
//! MemberState  member uuid 16 | transition u8 | seqno i64
//! StateRequest joiner uuid 16 | donors str | ist uuid 16 | ist seqno i64 | ist addr str | request...
//! Fence        origin uuid 16 | token u64
//! Weight       member uuid 16 | weight u32
//! Piece        origin uuid 16 | token u64 | total u64 | offset u64 | bytes...
//! Vote         member uuid 16 | seqno i64 | code u64 | policy u8 | message str
//! member := uuid 16 | name str | incoming str | address str ; str := len u16 | utf-8
//! ```
//!
//! A writeset's entries (`Ordered`, `Piece`) are proposed split at the
//! payload (see [`Entry::split`]): the bytes before it in the Raft entry's
//! context, the payload in its data. The log then holds a view of the
//! buffer the origin's client encoded, not a copy of it; a big writeset
//! is held once on its origin.
//!
//! Membership changes travel as Raft conf-change entries whose context is a
//! [`Membership`] (same header, its own tags), so that a member replaying
//! the log learns the voter set from the log itself.

use bytes::Bytes;

use crate::gtid::{Seqno, Uuid};
use crate::wire::{put_str, Reader, WireError};

pub const VERSION: u8 = 1;

/// One member as views show it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MemberInfo {
    pub id: Uuid,
    /// `wsrep_node_name`.
    pub name: String,
    /// Where clients connect (`wsrep_node_incoming_address`).
    pub incoming: String,
    /// Where the group transport listens (`host:port`).
    pub address: String,
    /// A voting member that keeps no data (`garbd`): it leads only to hand
    /// over (see `driver::campaigns_last`), and never donates or takes
    /// part in consistency votes. Not part of
    /// `encode_member` (views in the gcache keep that form): the join
    /// request, the `Add` entry and snapshots carry it (see there).
    pub arbitrator: bool,
    /// `gcs.stateless`: a data member never chosen as a donor. Carried
    /// like `arbitrator`, by tags of its own.
    pub stateless: bool,
}

/// A member's own state-transfer transitions, ordered with the writesets
/// so every node agrees on who is a donor, joined or synced.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Transition {
    /// The member desyncs (`wsrep_desync`, FTWRL, being a donor).
    Desync = 1,
    /// The member has its state (after a transfer) or ends one desync.
    Join = 2,
    /// The member has drained its backlog.
    Sync = 3,
    /// The member has a leader again after a non-primary spell: every
    /// member sees a new primary view (Galera's configuration change when a
    /// partition heals).
    Rejoin = 4,
}

/// What a joiner offers for an incremental transfer: the position its
/// data holds and where its IST receiver listens (`tcp://host:port`;
/// empty: no receiver, so a full SST and nothing after it).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct IstRequest {
    pub position: (Uuid, Seqno),
    pub addr: String,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Entry {
    /// A writeset (or TOI, fragment, rollback): consumes a seqno. `token`
    /// lets the origin match the delivery with the waiting client; 0 means
    /// nobody waits for it.
    Ordered { origin: Uuid, token: u64, payload: Bytes },
    MemberState { member: Uuid, transition: Transition, seqno: Seqno },
    /// A joiner asks for its state: the group picks a donor.
    StateRequest { joiner: Uuid, donors: String, ist: IstRequest, request: Bytes },
    /// The origin's proposals with tokens up to this one that are not
    /// ordered yet never will be (they were lost with a leader): every
    /// member drops them if they arrive later.
    Fence { origin: Uuid, token: u64 },
    /// A member's `pc.weight` (see `weights`): ordered, so that every
    /// member weighs the others alike.
    Weight { member: Uuid, weight: u32 },
    /// Bytes `offset..offset+data.len()` of a payload of `total` bytes too
    /// large for one entry (see `pieces`); the last piece orders it.
    Piece { origin: Uuid, token: u64, total: u64, offset: u64, data: Bytes },
    /// A member's consistency vote on `seqno` (see `vote`): `code` is
    /// `vote::SUCCESS` or the digest of its error, `policy` its
    /// `gcs.vote_policy`, `message` the error for the others' logs.
    Vote { member: Uuid, seqno: Seqno, code: u64, policy: u8, message: String },
}

/// The context of a Raft conf-change entry.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Membership {
    /// A new primary component started by one member (its voter entry).
    Bootstrap { history: Uuid, position: Seqno, member: MemberInfo },
    /// A joiner enters as a learner.
    Add { member: MemberInfo },
    /// A member that holds the state becomes a voter.
    Promote { member: Uuid },
    /// A member leaves (gracefully, or evicted).
    Remove { member: Uuid },
}

const ORDERED: u8 = 1;
const MEMBER_STATE: u8 = 3;
const STATE_REQUEST: u8 = 4;
const FENCE: u8 = 5;
const WEIGHT: u8 = 6;
const PIECE: u8 = 7;
const VOTE: u8 = 8;
const BOOTSTRAP: u8 = 10;
const ADD: u8 = 11;
/// `Add` of an arbitrator: its own tag, so that `encode_member` stays
/// the form views keep.
const ADD_ARBITRATOR: u8 = 14;
/// `Bootstrap` and `Add` of a stateless member, likewise.
const ADD_STATELESS: u8 = 15;
const BOOTSTRAP_STATELESS: u8 = 16;
const PROMOTE: u8 = 12;
const REMOVE: u8 = 13;

impl Entry {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        match self {
            Entry::Ordered { origin, token, payload } => {
                out = ordered_header(*origin, *token, payload.len());
                out.extend_from_slice(payload);
            }
            Entry::StateRequest { joiner, donors, ist, request } => {
                out.push(STATE_REQUEST);
                out.extend_from_slice(&joiner.0);
                put_str(&mut out, donors);
                out.extend_from_slice(&ist.position.0 .0);
                out.extend_from_slice(&ist.position.1.to_le_bytes());
                put_str(&mut out, &ist.addr);
                out.extend_from_slice(request);
            }
            Entry::Fence { origin, token } => {
                out.push(FENCE);
                out.extend_from_slice(&origin.0);
                out.extend_from_slice(&token.to_le_bytes());
            }
            Entry::Weight { member, weight } => {
                out.push(WEIGHT);
                out.extend_from_slice(&member.0);
                out.extend_from_slice(&weight.to_le_bytes());
            }
            Entry::Piece { origin, token, total, offset, data } => {
                out.reserve(16 + 3 * 8 + data.len());
                out.push(PIECE);
                out.extend_from_slice(&origin.0);
                for n in [token, total, offset] {
                    out.extend_from_slice(&n.to_le_bytes());
                }
                out.extend_from_slice(data);
            }
            Entry::Vote { member, seqno, code, policy, message } => {
                out.push(VOTE);
                out.extend_from_slice(&member.0);
                out.extend_from_slice(&seqno.to_le_bytes());
                out.extend_from_slice(&code.to_le_bytes());
                out.push(*policy);
                put_str(&mut out, message);
            }
            Entry::MemberState { member, transition, seqno } => {
                out.push(MEMBER_STATE);
                out.extend_from_slice(&member.0);
                out.push(*transition as u8);
                out.extend_from_slice(&seqno.to_le_bytes());
            }
        }
        out
    }

    /// The entry's encoding in two parts, head and payload, whose
    /// concatenation is `encode()`: for a writeset's entries the payload
    /// is the writeset's own buffer (no copy); other entries are all head.
    pub fn split(self) -> (Vec<u8>, Bytes) {
        match self {
            Entry::Ordered { origin, token, payload } => (ordered_header(origin, token, 0), payload),
            Entry::Piece { origin, token, total, offset, data } => {
                (Entry::Piece { origin, token, total, offset, data: Bytes::new() }.encode(), data)
            }
            other => (other.encode(), Bytes::new()),
        }
    }

    /// `e` as the log gives it back, proposed as `split` cuts it (tests).
    #[cfg(test)]
    pub fn committed(e: Entry) -> Entry {
        let (head, body) = e.split();
        Entry::decode_split(&Bytes::from(head), &body).expect("a split entry decodes")
    }

    /// Decodes a committed entry proposed as `split` gave it (an entry
    /// proposed whole has its encoding in `head` or in `body`, the other
    /// empty). The payload is `body` itself, not a copy.
    pub fn decode_split(head: &Bytes, body: &Bytes) -> Result<Entry, WireError> {
        if head.is_empty() || body.is_empty() {
            return Entry::decode(if head.is_empty() { body } else { head });
        }
        match Entry::decode(head)? {
            Entry::Ordered { origin, token, payload } if payload.is_empty() => {
                Ok(Entry::Ordered { origin, token, payload: body.clone() })
            }
            Entry::Piece { origin, token, total, offset, data } if data.is_empty() => {
                Ok(Entry::Piece { origin, token, total, offset, data: body.clone() })
            }
            // Only a writeset's entries carry a payload apart.
            _ => Err(WireError::Trailing),
        }
    }

    /// Decodes a committed entry; the payload of `Ordered` is a slice of
    /// `buf`, not a copy.
    pub fn decode(buf: &Bytes) -> Result<Entry, WireError> {
        let mut r = Reader::new(buf);
        match r.u8().map_err(|_| WireError::Empty)? {
            VERSION => {}
            v => return Err(WireError::Version(v)),
        }
        match r.u8()? {
            ORDERED => {
                let origin = r.uuid()?;
                let token = r.u64()?;
                Ok(Entry::Ordered { origin, token, payload: buf.slice(r.pos..) })
            }
            STATE_REQUEST => {
                let joiner = r.uuid()?;
                let donors = r.string()?;
                let position = (r.uuid()?, r.u64()? as i64);
                let ist = IstRequest { position, addr: r.string()? };
                Ok(Entry::StateRequest { joiner, donors, ist, request: buf.slice(r.pos..) })
            }
            FENCE => {
                let (origin, token) = (r.uuid()?, r.u64()?);
                r.end()?;
                Ok(Entry::Fence { origin, token })
            }
            PIECE => {
                let origin = r.uuid()?;
                let (token, total, offset) = (r.u64()?, r.u64()?, r.u64()?);
                Ok(Entry::Piece { origin, token, total, offset, data: buf.slice(r.pos..) })
            }
            VOTE => {
                let member = r.uuid()?;
                let (seqno, code, policy) = (r.u64()? as Seqno, r.u64()?, r.u8()?);
                let message = r.string()?;
                r.end()?;
                Ok(Entry::Vote { member, seqno, code, policy, message })
            }
            WEIGHT => {
                let member = r.uuid()?;
                let weight = r.u32()?;
                r.end()?;
                Ok(Entry::Weight { member, weight })
            }
            MEMBER_STATE => {
                let member = r.uuid()?;
                let transition = match r.u8()? {
                    1 => Transition::Desync,
                    2 => Transition::Join,
                    3 => Transition::Sync,
                    4 => Transition::Rejoin,
                    t => return Err(WireError::Tag(t)),
                };
                let seqno = r.u64()? as i64;
                r.end()?;
                Ok(Entry::MemberState { member, transition, seqno })
            }
            t => Err(WireError::Tag(t)),
        }
    }
}

/// The start of an `Ordered` entry: the proposer appends its payload right
/// after it, so the payload is written once into the buffer Raft sends.
pub fn ordered_header(origin: Uuid, token: u64, payload_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + 16 + 8 + payload_len);
    out.push(VERSION);
    out.push(ORDERED);
    out.extend_from_slice(&origin.0);
    out.extend_from_slice(&token.to_le_bytes());
    out
}

impl Membership {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        match self {
            Membership::Bootstrap { history, position, member } => {
                out.push(if member.stateless { BOOTSTRAP_STATELESS } else { BOOTSTRAP });
                out.extend_from_slice(&history.0);
                out.extend_from_slice(&position.to_le_bytes());
                encode_member(member, &mut out);
            }
            Membership::Add { member } => {
                out.push(match (member.arbitrator, member.stateless) {
                    (true, _) => ADD_ARBITRATOR,
                    (false, true) => ADD_STATELESS,
                    (false, false) => ADD,
                });
                encode_member(member, &mut out);
            }
            Membership::Promote { member } => {
                out.push(PROMOTE);
                out.extend_from_slice(&member.0);
            }
            Membership::Remove { member } => {
                out.push(REMOVE);
                out.extend_from_slice(&member.0);
            }
        }
        out
    }

    pub fn decode(buf: &[u8]) -> Result<Membership, WireError> {
        let mut r = Reader::new(buf);
        match r.u8().map_err(|_| WireError::Empty)? {
            VERSION => {}
            v => return Err(WireError::Version(v)),
        }
        let m = match r.u8()? {
            tag @ (BOOTSTRAP | BOOTSTRAP_STATELESS) => {
                let history = r.uuid()?;
                let position = r.u64()? as i64;
                let member = MemberInfo { stateless: tag == BOOTSTRAP_STATELESS, ..decode_member(&mut r)? };
                Membership::Bootstrap { history, position, member }
            }
            ADD => Membership::Add { member: decode_member(&mut r)? },
            ADD_ARBITRATOR => Membership::Add { member: MemberInfo { arbitrator: true, ..decode_member(&mut r)? } },
            ADD_STATELESS => Membership::Add { member: MemberInfo { stateless: true, ..decode_member(&mut r)? } },
            PROMOTE => Membership::Promote { member: r.uuid()? },
            REMOVE => Membership::Remove { member: r.uuid()? },
            t => return Err(WireError::Tag(t)),
        };
        r.end()?;
        Ok(m)
    }

    /// The member the change is about.
    pub fn member(&self) -> Uuid {
        match self {
            Membership::Bootstrap { member, .. } | Membership::Add { member } => member.id,
            Membership::Promote { member } | Membership::Remove { member } => *member,
        }
    }
}

pub fn encode_member(m: &MemberInfo, out: &mut Vec<u8>) {
    out.extend_from_slice(&m.id.0);
    for s in [&m.name, &m.incoming, &m.address] {
        put_str(out, s);
    }
}

pub fn decode_member(r: &mut Reader<'_>) -> Result<MemberInfo, WireError> {
    let id = r.uuid()?;
    let name = r.string()?;
    let incoming = r.string()?;
    let address = r.string()?;
    Ok(MemberInfo { id, name, incoming, address, arbitrator: false, stateless: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member() -> MemberInfo {
        MemberInfo { id: Uuid::random(), name: "node1".into(), incoming: "127.0.0.1:3306".into(), address: "127.0.0.1:4567".into(), arbitrator: false, stateless: false }
    }

    fn round_trip(e: Entry) {
        let enc = Bytes::from(e.encode());
        assert_eq!(Entry::decode(&enc).unwrap(), e);
        let (head, body) = e.clone().split();
        assert_eq!([&head[..], &body[..]].concat(), &enc[..]);
        assert_eq!(Entry::decode_split(&Bytes::from(head), &body).unwrap(), e);
        for len in 0..enc.len() {
            if let Ok(d) = Entry::decode(&enc.slice(..len)) {
                // Only entries ending in a payload can be cut and still
                // decode (the payload is the rest of the buffer).
                assert!(matches!(d, Entry::Ordered { .. } | Entry::StateRequest { .. } | Entry::Piece { .. }));
            }
        }
    }

    #[test]
    fn a_writesets_entry_is_proposed_as_a_view_of_its_buffer() {
        let payload = Bytes::from(vec![7u8; 4096]);
        let (head, body) = Entry::Ordered { origin: Uuid::random(), token: 3, payload: payload.clone() }.split();
        assert_eq!(body.as_ptr(), payload.as_ptr());
        let decoded = Entry::decode_split(&Bytes::from(head), &body).unwrap();
        assert!(matches!(decoded, Entry::Ordered { payload: p, .. } if p.as_ptr() == payload.as_ptr()));
        // A payload apart from an entry that has none is malformed.
        let fence = Bytes::from(Entry::Fence { origin: Uuid::random(), token: 1 }.encode());
        assert_eq!(Entry::decode_split(&fence, &payload), Err(WireError::Trailing));
    }

    #[test]
    fn entries_round_trip_and_truncation_is_an_error() {
        round_trip(Entry::Ordered { origin: Uuid::random(), token: 42, payload: Bytes::from_static(b"ws") });
        round_trip(Entry::MemberState { member: Uuid::random(), transition: Transition::Join, seqno: 7 });
        round_trip(Entry::MemberState { member: Uuid::random(), transition: Transition::Rejoin, seqno: -1 });
        round_trip(Entry::Weight { member: Uuid::random(), weight: 255 });
        round_trip(Entry::Fence { origin: Uuid::random(), token: 9 });
        round_trip(Entry::Vote { member: Uuid::random(), seqno: 12, code: 1 << 63 | 7, policy: 0, message: "Duplicate entry '1'".into() });
        round_trip(Entry::Piece { origin: Uuid::random(), token: 5, total: 3 << 20, offset: 1 << 20, data: Bytes::from_static(b"rows") });
        let req = Entry::StateRequest {
            joiner: Uuid::random(),
            donors: "node1,".into(),
            ist: IstRequest { position: (Uuid::random(), 12), addr: "tcp://[::1]:4568".into() },
            request: Bytes::from_static(b"mariabackup\0127.0.0.1:4444/xtrabackup_sst//1\0"),
        };
        round_trip(req);
    }

    #[test]
    fn membership_round_trips_and_refuses_truncation() {
        let all = [
            Membership::Bootstrap { history: Uuid::random(), position: 234, member: member() },
            Membership::Bootstrap { history: Uuid::random(), position: 234, member: MemberInfo { stateless: true, ..member() } },
            Membership::Add { member: member() },
            Membership::Add { member: MemberInfo { arbitrator: true, ..member() } },
            Membership::Add { member: MemberInfo { stateless: true, ..member() } },
            Membership::Promote { member: Uuid::random() },
            Membership::Remove { member: Uuid::random() },
        ];
        for m in all {
            let enc = m.encode();
            assert_eq!(Membership::decode(&enc).unwrap(), m);
            for len in 0..enc.len() {
                assert!(Membership::decode(&enc[..len]).is_err());
            }
        }
    }

    #[test]
    fn other_versions_and_tags_are_refused() {
        assert_eq!(Entry::decode(&Bytes::from_static(&[2, 1])), Err(WireError::Version(2)));
        assert_eq!(Entry::decode(&Bytes::from_static(&[1, 9])), Err(WireError::Tag(9)));
        assert_eq!(Entry::decode(&Bytes::new()), Err(WireError::Empty));
    }
}
