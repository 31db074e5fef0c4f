//! The group's messages between members outside the Raft log: one enum,
//! one encoder, one decoder. Each travels as one transport frame whose
//! kind byte says which message it is; a frame that does not decode is
//! refused here, with the reason, before any handler sees it.
//!
//! The formats are those the members spoke before this enum existed, so
//! members of either build understand each other: a join request and a
//! removal notice may end early (older members sent less).

use bytes::Bytes;
use protobuf::Message as _;
use raft::prelude::Message;

use super::entry::{decode_member, encode_member, MemberInfo};
use super::notices::{CommitNotice, Component, LeaderWord, Signal};
use crate::gtid::{Seqno, Uuid};
use crate::wire::{Reader, WireError};

const KIND_RAFT: u8 = 1;
const KIND_JOIN: u8 = 2;
const KIND_FLOW: u8 = 3;
const KIND_LEFT: u8 = 4;
// Kind 5 carried IST chunks until IST got its own connection
// (`transfer::channel`, protocol 2).
const KIND_PROBE: u8 = 6;
const KIND_COMMIT: u8 = 7;
const KIND_LAG: u8 = 8;
/// A join request from an arbitrator: the payload of `KIND_JOIN`, whose
/// form older members parse to its end, so the flag gets its own kind.
const KIND_JOIN_ARBITRATOR: u8 = 9;
/// Appends for several members of one segment, sent to one of them (see
/// `relay`): a count u8, then each message's length u32 and protobuf.
const KIND_RELAY: u8 = 10;
/// A join request from a `gcs.stateless` member (as `KIND_JOIN_ARBITRATOR`).
const KIND_JOIN_STATELESS: u8 = 11;
const KIND_HOLD: u8 = 12;
/// A Raft message to the origin of some of its entries, without their
/// payloads (see `own_payloads`): a count u16, then each left-out entry's
/// position u32 and payload length u64, then the protobuf. Sent only to
/// a member whose handshake had `FEATURE_OWN_PAYLOADS`.
const KIND_OWN: u8 = 13;
/// A follower's word on its leader (see `cut_off`): leader u64, term
/// u64, silence in ms u32. Sent only to a member whose handshake had
/// `FEATURE_LEADER_WORDS`.
const KIND_LEADER: u8 = 14;
/// A causal read's question to the leader (see `shell::reads`): id u64,
/// the asker's term u64. Sent only to a member whose handshake had
/// `FEATURE_READ_ASK`.
const KIND_READ_ASK: u8 = 15;
/// The leader's answer: id u64, its term u64, its last index u64 (0: it
/// cannot answer, ask Raft), the index of the last configuration change
/// it stored u64.
const KIND_READ_ANSWER: u8 = 16;

#[derive(Debug, PartialEq)]
pub(crate) enum Frame {
    Raft(Message),
    /// A joiner asks to be taken in. `previous`: the member this node was
    /// before it was killed, and what it held then (see `recovery`).
    Join { member: MemberInfo, previous: Option<(Uuid, Option<(Uuid, Seqno)>)> },
    /// This member's backlog crossed a flow-control limit.
    Flow(Signal),
    /// "You are out": sent to a member the group has just removed, at log
    /// index `index` (0: not known); the leader stops replicating to it,
    /// so it would never see its removal commit.
    Left { member: Uuid, index: u64 },
    /// "Am I still one of you?": a non-primary member's call; a member
    /// that removed it answers with `Left` (see `Quorum::probe_due`).
    Probe,
    /// The leader's weighted commit index and quorum verdict, while
    /// weights differ (see `weighted`).
    Commit(CommitNotice),
    /// This member's apply lag in ms (see `cluster_lag`).
    Lag(u32),
    /// Appends for the receiver (the first) and for members of its
    /// segment, which it forwards (see `relay`).
    Relay(Vec<Message>),
    /// The leader to an arbitrator: the lowest log index a data voter has
    /// matched, which its log keeps (see `arbitrator_hold`).
    Hold(u64),
    /// A Raft message whose entries at these positions are the
    /// receiver's own writesets, sent without their payloads of these
    /// lengths (see `own_payloads`).
    Own(Message, Vec<LeftOut>),
    /// The leader this follower hears, and how lately (see `cut_off`).
    Leader(LeaderWord),
    /// "How far does your log reach?": a causal read's question to the
    /// leader of `term` (see `shell::reads`).
    ReadAsk { id: u64, term: u64 },
    /// The leader's answer to `ReadAsk` `id`: its last index (0: it
    /// cannot answer now) and the last configuration change it stored.
    ReadAnswer(ReadAnswer),
}

/// What a leader answers a causal read's question with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadAnswer {
    pub id: u64,
    pub term: u64,
    /// Its last index (see `shell::reads`); 0: it does not lead `term`.
    pub index: u64,
    pub conf_stored: u64,
}

/// An entry of a `Frame::Own` sent without its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeftOut {
    /// Its place in the message's entries.
    pub position: u32,
    /// The payload's length.
    pub len: u64,
}

#[derive(Debug, PartialEq)]
pub(crate) enum FrameError {
    /// A kind this build does not know (a newer member's message).
    Kind(u8),
    Malformed(&'static str, WireError),
    /// A Raft message protobuf refused.
    Raft(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Kind(k) => write!(f, "unknown group frame kind {}", k),
            FrameError::Malformed(what, e) => write!(f, "malformed {}: {}", what, e),
            FrameError::Raft(e) => write!(f, "malformed raft message: {}", e),
        }
    }
}

impl Frame {
    /// The kind and payload to send. Only a Raft message can fail (protobuf
    /// refuses one over 2 GiB): the caller logs it, the group thread goes on.
    pub(crate) fn encode(&self) -> Result<(u8, Bytes), String> {
        let mut out = Vec::new();
        let kind = match self {
            Frame::Raft(m) => return m.write_to_bytes().map(|b| (KIND_RAFT, Bytes::from(b))).map_err(|e| e.to_string()),
            Frame::Join { member, previous } => {
                encode_member(member, &mut out);
                if let Some((uuid, held)) = previous {
                    out.extend_from_slice(&uuid.0);
                    if let Some((history, seqno)) = held {
                        out.extend_from_slice(&history.0);
                        out.extend_from_slice(&seqno.to_le_bytes());
                    }
                }
                match (member.arbitrator, member.stateless) {
                    (true, _) => KIND_JOIN_ARBITRATOR,
                    (false, true) => KIND_JOIN_STATELESS,
                    (false, false) => KIND_JOIN,
                }
            }
            Frame::Flow(signal) => {
                out.push((*signal == Signal::Stop) as u8);
                KIND_FLOW
            }
            Frame::Left { member, index } => {
                out.extend_from_slice(&member.0);
                out.extend_from_slice(&index.to_le_bytes());
                KIND_LEFT
            }
            Frame::Probe => KIND_PROBE,
            Frame::Lag(ms) => {
                out.extend_from_slice(&ms.to_le_bytes());
                KIND_LAG
            }
            Frame::Relay(msgs) => {
                encode_relay(msgs, &mut out)?;
                KIND_RELAY
            }
            Frame::Hold(index) => {
                out.extend_from_slice(&index.to_le_bytes());
                KIND_HOLD
            }
            Frame::Own(m, left_out) => {
                encode_own(m, left_out, &mut out)?;
                KIND_OWN
            }
            Frame::Leader(w) => {
                out.extend_from_slice(&w.leader.to_le_bytes());
                out.extend_from_slice(&w.term.to_le_bytes());
                out.extend_from_slice(&w.silent_ms.to_le_bytes());
                KIND_LEADER
            }
            Frame::ReadAsk { id, term } => {
                out.extend_from_slice(&id.to_le_bytes());
                out.extend_from_slice(&term.to_le_bytes());
                KIND_READ_ASK
            }
            Frame::ReadAnswer(a) => {
                for v in [a.id, a.term, a.index, a.conf_stored] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                KIND_READ_ANSWER
            }
            Frame::Commit(n) => {
                out.extend_from_slice(&n.term.to_le_bytes());
                out.extend_from_slice(&n.index.to_le_bytes());
                out.push(n.primary as u8);
                if let Some(c) = n.component {
                    c.encode(&mut out);
                }
                KIND_COMMIT
            }
        };
        Ok((kind, Bytes::from(out)))
    }

    pub(crate) fn decode(kind: u8, payload: &[u8]) -> Result<Frame, FrameError> {
        let mut r = Reader::new(payload);
        let frame = match kind {
            KIND_RAFT => return Message::parse_from_bytes(payload).map(Frame::Raft).map_err(|e| FrameError::Raft(e.to_string())),
            KIND_JOIN => decode_join(&mut r, false, false).map_err(|e| FrameError::Malformed("join request", e))?,
            KIND_JOIN_ARBITRATOR => decode_join(&mut r, true, false).map_err(|e| FrameError::Malformed("arbitrator's join request", e))?,
            KIND_JOIN_STATELESS => decode_join(&mut r, false, true).map_err(|e| FrameError::Malformed("stateless member's join request", e))?,
            KIND_FLOW => match r.u8() {
                Ok(0) => Frame::Flow(Signal::Cont),
                Ok(1) => Frame::Flow(Signal::Stop),
                Ok(t) => return Err(FrameError::Malformed("flow control", WireError::Tag(t))),
                Err(e) => return Err(FrameError::Malformed("flow control", e)),
            },
            KIND_LEFT => decode_left(&mut r).map_err(|e| FrameError::Malformed("removal notice", e))?,
            KIND_PROBE => Frame::Probe,
            KIND_COMMIT => decode_commit(&mut r).map_err(|e| FrameError::Malformed("commit notice", e))?,
            KIND_LAG => Frame::Lag(r.u32().map_err(|e| FrameError::Malformed("lag report", e))?),
            KIND_RELAY => decode_relay(&mut r)?,
            KIND_HOLD => Frame::Hold(r.u64().map_err(|e| FrameError::Malformed("arbitrator's log hold", e))?),
            KIND_OWN => return decode_own(&mut r),
            KIND_LEADER => decode_leader(&mut r).map_err(|e| FrameError::Malformed("word on the leader", e))?,
            KIND_READ_ASK => decode_read_ask(&mut r).map_err(|e| FrameError::Malformed("read question", e))?,
            KIND_READ_ANSWER => decode_read_answer(&mut r).map_err(|e| FrameError::Malformed("read answer", e))?,
            k => return Err(FrameError::Kind(k)),
        };
        r.end().map_err(|e| FrameError::Malformed("group frame", e))?;
        Ok(frame)
    }
}

/// Whether a frame of `kind` is a `Frame::Relay` (the simulator counts
/// them).
pub(crate) fn is_relay(kind: u8) -> bool {
    kind == KIND_RELAY
}

/// Whether a frame of `kind` is a `Frame::Own` (the simulator counts
/// them).
pub(crate) fn is_own(kind: u8) -> bool {
    kind == KIND_OWN
}

fn decode_join(r: &mut Reader<'_>, arbitrator: bool, stateless: bool) -> Result<Frame, WireError> {
    let member = MemberInfo { arbitrator, stateless, ..decode_member(r)? };
    let previous = match r.remaining() {
        0 => None,
        _ => {
            let uuid = r.uuid()?;
            let held = match r.remaining() {
                0 => None,
                _ => Some((r.uuid()?, r.u64()? as Seqno)),
            };
            Some((uuid, held))
        }
    };
    Ok(Frame::Join { member, previous })
}

fn encode_relay(msgs: &[Message], out: &mut Vec<u8>) -> Result<(), String> {
    assert!(!msgs.is_empty() && msgs.len() <= super::relay::MAX_FORWARDS, "{} appends to relay", msgs.len());
    out.push(msgs.len() as u8);
    for m in msgs {
        let b = m.write_to_bytes().map_err(|e| e.to_string())?;
        let len = u32::try_from(b.len()).map_err(|_| format!("a relayed append of {} bytes", b.len()))?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&b);
    }
    Ok(())
}

fn decode_relay(r: &mut Reader<'_>) -> Result<Frame, FrameError> {
    let bad = |e| FrameError::Malformed("relay frame", e);
    let n = r.u8().map_err(bad)? as usize;
    if n == 0 || n > super::relay::MAX_FORWARDS {
        return Err(bad(WireError::Tag(n as u8)));
    }
    let mut msgs = Vec::with_capacity(n);
    for _ in 0..n {
        let len = r.u32().map_err(bad)? as usize;
        let b = r.take(len).map_err(bad)?;
        msgs.push(Message::parse_from_bytes(b).map_err(|e| FrameError::Raft(e.to_string()))?);
    }
    Ok(Frame::Relay(msgs))
}

fn encode_own(m: &Message, left_out: &[LeftOut], out: &mut Vec<u8>) -> Result<(), String> {
    let count = u16::try_from(left_out.len()).map_err(|_| format!("{} payloads left out of one append", left_out.len()))?;
    out.extend_from_slice(&count.to_le_bytes());
    for l in left_out {
        out.extend_from_slice(&l.position.to_le_bytes());
        out.extend_from_slice(&l.len.to_le_bytes());
    }
    m.write_to_writer(out).map_err(|e| e.to_string())
}

/// The positions must name entries of the message, in order, each with
/// a head and no payload: anything else is not what a leader sends.
fn decode_own(r: &mut Reader<'_>) -> Result<Frame, FrameError> {
    let bad = |e| FrameError::Malformed("append without own payloads", e);
    let count = r.u16().map_err(bad)? as usize;
    let mut left_out = Vec::with_capacity(count.min(r.remaining() / 12));
    for _ in 0..count {
        left_out.push(LeftOut { position: r.u32().map_err(bad)?, len: r.u64().map_err(bad)? });
    }
    let m = Message::parse_from_bytes(r.take(r.remaining()).map_err(bad)?).map_err(|e| FrameError::Raft(e.to_string()))?;
    if left_out.is_empty() {
        return Err(bad(WireError::Empty));
    }
    let mut previous = None;
    for l in &left_out {
        let fits = m.entries.get(l.position as usize).is_some_and(|e| e.data.is_empty() && !e.context.is_empty());
        if !fits || previous.is_some_and(|p| p >= l.position) || l.len == 0 {
            let why = format!("payload of entry {} of {} left out ({} bytes)", l.position, m.entries.len(), l.len);
            return Err(FrameError::Raft(why));
        }
        previous = Some(l.position);
    }
    Ok(Frame::Own(m, left_out))
}

fn decode_left(r: &mut Reader<'_>) -> Result<Frame, WireError> {
    let member = r.uuid()?;
    let index = if r.remaining() == 0 { 0 } else { r.u64()? };
    Ok(Frame::Left { member, index })
}

fn decode_commit(r: &mut Reader<'_>) -> Result<Frame, WireError> {
    let (term, index) = (r.u64()?, r.u64()?);
    let primary = match r.u8()? {
        0 => false,
        1 => true,
        t => return Err(WireError::Tag(t)),
    };
    // Older members send no component.
    let component = match r.remaining() {
        0 => None,
        _ => Some(Component::decode(r)?),
    };
    Ok(Frame::Commit(CommitNotice { term, index, primary, component }))
}

fn decode_leader(r: &mut Reader) -> Result<Frame, WireError> {
    Ok(Frame::Leader(LeaderWord { leader: r.u64()?, term: r.u64()?, silent_ms: r.u32()? }))
}

fn decode_read_ask(r: &mut Reader) -> Result<Frame, WireError> {
    Ok(Frame::ReadAsk { id: r.u64()?, term: r.u64()? })
}

fn decode_read_answer(r: &mut Reader) -> Result<Frame, WireError> {
    Ok(Frame::ReadAnswer(ReadAnswer { id: r.u64()?, term: r.u64()?, index: r.u64()?, conf_stored: r.u64()? }))
}

/// One of each frame, for the tests and the decoders' fuzzing.
#[cfg(test)]
pub(crate) fn every_frame() -> Vec<Frame> {
    let member = MemberInfo { id: Uuid([1; 16]), name: "node1".into(), incoming: "127.0.0.1:3306".into(), address: "127.0.0.1:4567".into(), arbitrator: false, stateless: false };
    let mut m = Message::default();
    m.to = 2;
    m.term = 7;
    vec![
        Frame::Raft(m.clone()),
        Frame::Join { member: member.clone(), previous: None },
        Frame::Join { member: member.clone(), previous: Some((Uuid([2; 16]), None)) },
        Frame::Join { member: member.clone(), previous: Some((Uuid([2; 16]), Some((Uuid([3; 16]), 41)))) },
        Frame::Join { member: MemberInfo { arbitrator: true, ..member.clone() }, previous: None },
        Frame::Join { member: MemberInfo { stateless: true, ..member }, previous: None },
        Frame::Flow(Signal::Stop),
        Frame::Flow(Signal::Cont),
        Frame::Left { member: Uuid([4; 16]), index: 4242 },
        Frame::Probe,
        Frame::Commit(CommitNotice { term: 3, index: 99, primary: true, component: None }),
        Frame::Commit(CommitNotice { term: 3, index: 99, primary: false, component: Some(Component { former: Uuid([5; 16]), from: 943 }) }),
        Frame::Lag(1234),
        Frame::Relay(vec![m.clone(), Message { to: 3, term: 7, ..Default::default() }]),
        Frame::Hold(81267),
        Frame::Own(own_append(), vec![LeftOut { position: 0, len: 300 }, LeftOut { position: 2, len: 1 << 20 }]),
        Frame::Leader(LeaderWord { leader: 0x51, term: 9, silent_ms: 120 }),
        Frame::ReadAsk { id: 77, term: 9 },
        Frame::ReadAnswer(ReadAnswer { id: 77, term: 9, index: 123_456, conf_stored: 12 }),
    ]
}

/// An append of three entries, the first and the last without payloads.
#[cfg(test)]
fn own_append() -> Message {
    let entry = |index: u64, data: &[u8]| raft::prelude::Entry { index, term: 7, context: Bytes::from_static(b"head"), data: Bytes::copy_from_slice(data), ..Default::default() };
    Message { to: 2, term: 7, entries: vec![entry(10, b""), entry(11, b"kept"), entry(12, b"")].into(), ..Default::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_round_trips() {
        for f in every_frame() {
            let (kind, payload) = f.encode().expect("encodes");
            assert_eq!(Frame::decode(kind, &payload).unwrap(), f);
        }
    }

    #[test]
    fn a_cut_or_lengthened_frame_is_refused_unless_an_older_member_sent_it() {
        // A protobuf cut at a field's end still parses.
        for f in every_frame().into_iter().filter(|f| !matches!(f, Frame::Raft(_) | Frame::Probe | Frame::Own(..))) {
            let (kind, payload) = f.encode().expect("encodes");
            let mut longer = payload.to_vec();
            longer.push(0);
            assert!(Frame::decode(kind, &longer).is_err(), "{:?} with a byte more", f);
            for len in 0..payload.len() {
                if let Ok(cut) = Frame::decode(kind, &payload[..len]) {
                    // A join without its tail, a notice without its index,
                    // a commit notice without its component: what older
                    // members send.
                    let older = matches!(cut, Frame::Commit(CommitNotice { component: None, .. })) && len == 17;
                    assert!(older || matches!(cut, Frame::Join { .. } | Frame::Left { index: 0, .. }), "{:?} cut to {}", cut, len);
                }
            }
        }
        assert_eq!(Frame::decode(17, &[]), Err(FrameError::Kind(17)));
    }
}
