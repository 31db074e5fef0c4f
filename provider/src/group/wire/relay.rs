//! Segments (`gmcast.segment`): nodes of one data centre share a segment,
//! and an entry crosses to another segment once, as Galera's gmcast
//! relays a message through one node per segment.
//!
//! In Raft the leader sends every follower its own append. Appends that
//! carry the same entries to several followers of another segment leave
//! the leader as one `Frame::Relay` to one of them (the relay), which
//! steps its own and forwards each of the others on its local links. The
//! answers go straight back: they are small.
//!
//! Losing a relay loses its copies as a network would: the leader sends
//! straight to a follower whose relay is gone, and Raft resends what a
//! follower missed (a gap in its log is refused, and the leader backs up).
//! A peer of a build without segments says none in the handshake and is
//! always sent to directly, so that it never gets a frame it cannot read.

use std::collections::BTreeMap;

use raft::eraftpb::MessageType;
use raft::prelude::Message;

use crate::transport::PeerId;

/// The most appends one relay frame carries: more followers than a
/// segment ever has (the frame's count is checked against it).
pub const MAX_FORWARDS: usize = 64;

/// How one of Raft's messages leaves this member.
#[derive(Debug, PartialEq)]
pub enum Out {
    Direct(Message),
    /// Appends to `via` and to members of its segment, in one frame to
    /// `via`: the first carries the entries, the others have none (they
    /// are the first's).
    Relay { via: PeerId, msgs: Vec<Message> },
}

/// Routes `msgs` in their order. `relay_of(to)`: the member that relays
/// to `to` (itself when it is the relay), None when `to` is in this
/// member's segment or its segment has no relay.
///
/// Every append to a relayed segment goes through its relay, even one
/// without entries: a member's appends must arrive in the order they
/// were made, or it refuses the later one (a gap in its log) and the
/// leader backs up and sends the entries again. Heartbeats and the rest
/// go straight: their order does not matter.
pub fn route(msgs: Vec<Message>, relay_of: impl Fn(PeerId) -> Option<PeerId>) -> Vec<Out> {
    let mut out = Vec::with_capacity(msgs.len());
    // Each relay's frames: where they are in `out`.
    let mut frames: BTreeMap<PeerId, Vec<usize>> = BTreeMap::new();
    for m in msgs {
        let Some(via) = relay_of(m.to).filter(|_| m.get_msg_type() == MessageType::MsgAppend) else {
            out.push(Out::Direct(m));
            continue;
        };
        let mine = frames.entry(via).or_default();
        match place(&out, mine, &m) {
            Some(i) => {
                let Out::Relay { msgs: frame, .. } = &mut out[i] else { unreachable!("a relay frame") };
                join(frame, m, via);
            }
            None => {
                mine.push(out.len());
                out.push(Out::Relay { via, msgs: vec![m] });
            }
        }
    }
    // A frame of the relay's own append alone is a plain message.
    out.into_iter()
        .map(|o| match o {
            Out::Relay { via, mut msgs } if msgs.len() == 1 && msgs[0].to == via => Out::Direct(msgs.remove(0)),
            o => o,
        })
        .collect()
}

/// The frame of one relay (`frames`, positions in `out`) that `m` may
/// join: the latest with the same entries (Raft's log matching makes the
/// same first index, count and last term the same entries, in one
/// leader's batch) and not before one with an append to its member (a
/// second append must come after the first).
fn place(out: &[Out], frames: &[usize], m: &Message) -> Option<usize> {
    let key = |m: &Message| (m.entries.first().map(|e| e.index), m.entries.len(), m.entries.last().map(|e| e.term));
    for &i in frames.iter().rev() {
        let Out::Relay { msgs: frame, .. } = &out[i] else { unreachable!("a relay frame") };
        if frame.iter().any(|f| f.to == m.to) {
            return None;
        }
        if frame.len() < MAX_FORWARDS && key(&frame[0]) == key(m) {
            return Some(i);
        }
    }
    None
}

/// Adds `m` to `frame`, entries once: the relay's own append goes first.
fn join(frame: &mut Vec<Message>, mut m: Message, via: PeerId) {
    if m.to == via {
        frame[0].entries.clear();
        frame.insert(0, m);
    } else {
        m.entries.clear();
        frame.push(m);
    }
}

/// What a relay does with a `Frame::Relay` from `from`: its own append,
/// if the frame has one, and the appends to forward (each given the
/// entries), or why the frame is refused. A relay forwards only appends
/// of the member that sent the frame, to other members.
pub fn unpack(mut msgs: Vec<Message>, from: PeerId, me: PeerId) -> Result<(Option<Message>, Vec<Message>), &'static str> {
    if msgs.is_empty() || msgs.len() > MAX_FORWARDS {
        return Err("a relay frame must carry between 1 and 64 appends");
    }
    if msgs.iter().any(|m| m.from != from || m.get_msg_type() != MessageType::MsgAppend) {
        return Err("a relay frame may carry only appends of its sender");
    }
    if msgs[1..].iter().any(|m| m.to == me || m.to == from || !m.entries.is_empty()) || msgs[0].to == from {
        return Err("a relay frame's appends are not addressed as relayed");
    }
    let entries = msgs[0].entries.clone();
    let own = (msgs[0].to == me).then(|| msgs.remove(0));
    for m in msgs.iter_mut().filter(|m| m.entries.is_empty()) {
        m.entries = entries.clone();
    }
    Ok((own, msgs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use raft::prelude::Entry;

    fn append(to: u64, first: u64, n: u64) -> Message {
        let mut m = Message { to, from: 1, term: 2, ..Default::default() };
        m.set_msg_type(MessageType::MsgAppend);
        m.entries = (first..first + n).map(|index| Entry { index, term: 2, data: vec![index as u8; 100].into(), ..Default::default() }).collect();
        m
    }

    fn heartbeat(to: u64) -> Message {
        let mut m = Message { to, from: 1, term: 2, ..Default::default() };
        m.set_msg_type(MessageType::MsgHeartbeat);
        m
    }

    /// Relays: 3 for members 3, 4, 5 (one segment), 6 for itself (alone
    /// in another); 2 is in this member's segment, 7 of an older build.
    fn relay_of(id: u64) -> Option<u64> {
        match id {
            3..=5 => Some(3),
            6 => Some(6),
            _ => None,
        }
    }

    fn relayed(out: &[Out]) -> Vec<(u64, Vec<(u64, usize)>)> {
        out.iter()
            .filter_map(|o| match o {
                Out::Relay { via, msgs } => Some((*via, msgs.iter().map(|m| (m.to, m.entries.len())).collect())),
                Out::Direct(_) => None,
            })
            .collect()
    }

    fn direct(out: &[Out]) -> Vec<u64> {
        out.iter().filter_map(|o| if let Out::Direct(m) = o { Some(m.to) } else { None }).collect()
    }

    #[test]
    fn the_same_entries_cross_to_another_segment_once() {
        let msgs = vec![append(2, 5, 3), append(5, 5, 3), append(3, 5, 3), append(4, 5, 3), append(6, 5, 3), append(7, 5, 3), heartbeat(4)];
        let out = route(msgs, relay_of);
        assert_eq!(direct(&out), vec![2, 6, 7, 4], "own segment, a relay alone, an old build and a heartbeat go straight");
        assert_eq!(relayed(&out), vec![(3, vec![(3, 3), (5, 0), (4, 0)])], "the relay's own append carries the entries");
        let Out::Relay { msgs, .. } = &out[1] else { panic!("{:?}", out) };
        let (own, forwards) = unpack(msgs.clone(), 1, 3).unwrap();
        assert_eq!(own, Some(append(3, 5, 3)));
        assert_eq!(forwards, vec![append(5, 5, 3), append(4, 5, 3)]);
    }

    #[test]
    fn every_append_to_a_relayed_member_goes_through_the_relay_in_its_order() {
        // 4 lags (its own entries), then gets an empty append (a commit
        // index): both through 3, after the entries, in order.
        let msgs = vec![append(3, 5, 3), append(4, 2, 6), append(5, 5, 3), append(4, 8, 0), append(3, 8, 0)];
        let out = route(msgs, relay_of);
        assert_eq!(direct(&out), Vec::<u64>::new());
        assert_eq!(
            relayed(&out),
            vec![(3, vec![(3, 3), (5, 0)]), (3, vec![(4, 6)]), (3, vec![(3, 0), (4, 0)])],
            "the same entries share a frame; a member's second append comes after its first"
        );
        let Out::Relay { msgs, .. } = &out[1] else { panic!() };
        assert_eq!(unpack(msgs.clone(), 1, 3).unwrap(), (None, vec![append(4, 2, 6)]), "a forward alone carries its entries");
    }

    #[test]
    fn a_relay_frame_that_would_forward_elsewhere_is_refused() {
        let Out::Relay { msgs: good, .. } = route(vec![append(3, 5, 1), append(4, 5, 1)], relay_of).remove(0) else { panic!() };
        assert!(unpack(good.clone(), 1, 3).is_ok());
        assert!(unpack(good.clone(), 9, 3).is_err(), "appends of another member than the sender");
        assert!(unpack(good.clone(), 1, 4).is_err(), "its own append second");
        let mut back = good.clone();
        back[1].to = 1;
        assert!(unpack(back, 1, 3).is_err(), "back to the sender");
        let mut fat = good.clone();
        fat[1].entries = fat[0].entries.clone();
        assert!(unpack(fat, 1, 3).is_err(), "a forward with its own entries");
        let mut vote = good;
        vote[1].set_msg_type(MessageType::MsgRequestVote);
        assert!(unpack(vote, 1, 3).is_err());
        assert!(unpack(vec![], 1, 3).is_err());
    }
}
