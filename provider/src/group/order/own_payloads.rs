//! A follower's writesets come back to it: it proposes them, the leader
//! orders them and sends the entries to every follower, their origin
//! too. The origin still holds each payload then (`proposals` keeps it
//! until it is ordered here), so the leader leaves the payload out of an
//! entry it sends to that entry's origin, and the origin puts its own
//! copy back before Raft sees the message. Where every member takes
//! writes, that is a third of the writeset bytes a 3-member group's
//! leader sends; for a big writeset from a follower, its whole size.
//!
//! Only on the first send of an index to a member. An origin that does
//! not hold the payload any more (its proposal failed, or it already
//! applied the entry from an earlier send) drops the message, as if the
//! network had lost it; Raft then sends the entries again (after the
//! next append's rejection or the next heartbeat's answer), and a second
//! send of an index always carries its payloads. A payload is only ever
//! taken back by origin, token, offset and length from the proposal that
//! made the entry, so the worst case is a round of Raft's own repair,
//! never a wrong payload.
//!
//! Only to a member whose handshake said it can (an older build would
//! refuse the frame), and only for appends sent to it directly: a relay
//! forwards plain Raft messages (see `relay`).

use std::collections::BTreeMap;

use bytes::Bytes;
use raft::prelude::{Entry as RaftEntry, EntryType, Message, MessageType};

use crate::group::wire::entry::Entry;
use crate::group::wire::frame::LeftOut;
use crate::gtid::Uuid;

/// The leader's side: what it has sent to each follower.
#[derive(Debug, Default)]
pub(in crate::group) struct Sent {
    /// The highest log index sent to each follower: an entry at or below
    /// it is a resend. One per member (see `retain_members`).
    highest: BTreeMap<u64, u64>,
}

impl Sent {
    /// Notes the append `m` and, if `m.to` takes it (`fills`, asked only
    /// when there is something to leave out: it looks up the link), leaves
    /// out the payloads of the entries it originated that it is sent for
    /// the first time; what was left out, by position.
    pub fn leave_out(&mut self, m: &mut Message, fills: impl FnOnce() -> bool) -> Vec<LeftOut> {
        let Some(first_unsent) = self.note(m) else { return Vec::new() };
        let to = m.to;
        let mine = |e: &RaftEntry| e.index >= first_unsent && !e.data.is_empty() && origin(e) == Some(to);
        // At most what a frame can list; the rest keep theirs.
        let positions: Vec<usize> = m.entries.iter().enumerate().filter(|(_, e)| mine(e)).map(|(i, _)| i).take(usize::from(u16::MAX)).collect();
        if positions.is_empty() || !fills() {
            return Vec::new();
        }
        let left_out_at = |i: usize| {
            let e = &mut m.entries[i];
            let len = std::mem::take(&mut e.data).len() as u64;
            LeftOut { position: i as u32, len }
        };
        positions.into_iter().map(left_out_at).collect()
    }

    /// Records an append's entries as sent; the lowest index not sent to
    /// `m.to` before, None for other messages.
    pub fn note(&mut self, m: &Message) -> Option<u64> {
        if m.get_msg_type() != MessageType::MsgAppend {
            return None;
        }
        let last = m.entries.last()?.index;
        let highest = self.highest.entry(m.to).or_insert(0);
        let first_unsent = *highest + 1;
        *highest = (*highest).max(last);
        Some(first_unsent)
    }

    pub fn retain_members(&mut self, members: &[u64]) {
        self.highest.retain(|id, _| members.contains(id));
    }
}

/// The raft id of a writeset entry's origin (by its head).
fn origin(e: &RaftEntry) -> Option<u64> {
    if e.get_entry_type() != EntryType::EntryNormal {
        return None; // a membership change: its head has tags of its own
    }
    match Entry::decode(&e.context).ok()? {
        Entry::Ordered { origin, .. } | Entry::Piece { origin, .. } => Some(origin.raft_id()),
        _ => None,
    }
}

/// The origin's side: puts back the payloads `left_out` of `m`, from
/// `body` (this member's proposals by wire token); Err: one it does not
/// hold, and the message is to be dropped.
pub(in crate::group) fn fill(m: &mut Message, left_out: &[LeftOut], me: Uuid, body: impl Fn(u64) -> Option<Bytes>) -> Result<(), String> {
    for l in left_out {
        let Some(e) = m.entries.get_mut(l.position as usize) else { return Err(format!("no entry {} to fill", l.position)) };
        let len = l.len as usize;
        let head = if e.get_entry_type() == EntryType::EntryNormal { Entry::decode(&e.context).ok() } else { None };
        let data = match head {
            Some(Entry::Ordered { origin, token, .. }) if origin == me => body(token).filter(|b| b.len() == len),
            Some(Entry::Piece { origin, token, total, offset, .. }) if origin == me => {
                body(token).filter(|b| b.len() as u64 == total).and_then(|b| part(&b, offset, len))
            }
            _ => return Err(format!("entry {} is not a writeset of this member's", e.index)),
        };
        e.data = data.ok_or_else(|| format!("the payload of entry {} is no longer held here", e.index))?;
    }
    Ok(())
}

/// Bytes `offset..offset + len` of `body`, as a view of it; None when
/// they are not all in it.
pub(in crate::group) fn part(body: &Bytes, offset: u64, len: usize) -> Option<Bytes> {
    let offset = usize::try_from(offset).ok()?;
    let end = offset.checked_add(len).filter(|end| *end <= body.len())?;
    Some(body.slice(offset..end))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Uuid = Uuid([1; 16]);
    const OTHER: Uuid = Uuid([2; 16]);

    fn entry(index: u64, e: Entry) -> RaftEntry {
        let (head, body) = e.split();
        RaftEntry { index, term: 3, context: head.into(), data: body, ..Default::default() }
    }

    fn ordered(origin: Uuid, token: u64, payload: &'static [u8]) -> Entry {
        Entry::Ordered { origin, token, payload: Bytes::from_static(payload) }
    }

    fn append(to: u64, entries: Vec<RaftEntry>) -> Message {
        Message { msg_type: MessageType::MsgAppend, to, term: 3, entries: entries.into(), ..Default::default() }
    }

    #[test]
    fn the_origin_gets_its_entries_without_payloads_once_and_puts_them_back() {
        let mut sent = Sent::default();
        let body = Bytes::from_static(b"0123456789");
        let piece = Entry::Piece { origin: ME, token: 8, total: 10, offset: 4, data: body.slice(4..7) };
        let entries = vec![entry(5, ordered(ME, 7, b"mine")), entry(6, ordered(OTHER, 1, b"theirs")), entry(7, piece)];
        let full = append(ME.raft_id(), entries);
        let mut m = full.clone();
        let left_out = sent.leave_out(&mut m, || true);
        assert_eq!(left_out, vec![LeftOut { position: 0, len: 4 }, LeftOut { position: 2, len: 3 }]);
        assert!(m.entries[0].data.is_empty() && m.entries[2].data.is_empty());
        assert_eq!(&m.entries[1].data[..], b"theirs");

        let held = |token| match token {
            7 => Some(Bytes::from_static(b"mine")),
            8 => Some(body.clone()),
            _ => None,
        };
        fill(&mut m, &left_out, ME, held).unwrap();
        assert_eq!(m, full);

        // Sent again (Raft's repair): whole.
        let mut again = full.clone();
        assert!(sent.leave_out(&mut again, || true).is_empty());
        assert_eq!(again, full);
    }

    #[test]
    fn nothing_is_left_out_for_another_member_a_build_without_it_or_other_messages() {
        let mut sent = Sent::default();
        let mut to_other = append(OTHER.raft_id(), vec![entry(5, ordered(ME, 7, b"mine"))]);
        assert!(sent.leave_out(&mut to_other, || true).is_empty());
        let mut older = append(ME.raft_id(), vec![entry(5, ordered(ME, 7, b"mine"))]);
        assert!(sent.leave_out(&mut older, || false).is_empty());
        assert_eq!(&older.entries[0].data[..], b"mine");
        // Index 5 went to ME whole; 6 is new.
        let mut next = append(ME.raft_id(), vec![entry(5, ordered(ME, 7, b"mine")), entry(6, ordered(ME, 8, b"more"))]);
        assert_eq!(sent.leave_out(&mut next, || true), vec![LeftOut { position: 1, len: 4 }]);
        let mut heartbeat = Message { msg_type: MessageType::MsgHeartbeat, to: ME.raft_id(), ..Default::default() };
        assert!(sent.leave_out(&mut heartbeat, || true).is_empty());
    }

    #[test]
    fn a_payload_not_held_or_not_the_same_size_refuses_the_message() {
        let full = append(ME.raft_id(), vec![entry(5, ordered(ME, 7, b"mine"))]);
        let mut m = full.clone();
        let left_out = Sent::default().leave_out(&mut m, || true);
        assert!(fill(&mut m.clone(), &left_out, ME, |_| None).unwrap_err().contains("no longer held"));
        assert!(fill(&mut m.clone(), &left_out, ME, |_| Some(Bytes::from_static(b"mine!"))).is_err());
        assert!(fill(&mut m.clone(), &left_out, OTHER, |_| Some(Bytes::from_static(b"mine"))).unwrap_err().contains("not a writeset"));
        let piece = Entry::Piece { origin: ME, token: 8, total: 10, offset: 8, data: Bytes::from_static(b"89") };
        let mut p = append(ME.raft_id(), vec![entry(5, piece)]);
        let left_out = Sent::default().leave_out(&mut p, || true);
        assert!(fill(&mut p.clone(), &left_out, ME, |_| Some(Bytes::from_static(b"0123456789"))).is_ok());
        assert!(fill(&mut p.clone(), &left_out, ME, |_| Some(Bytes::from_static(b"012345678"))).is_err(), "another total");
        assert!(fill(&mut p.clone(), &left_out, ME, |_| Some(Bytes::from_static(b"0123456789X"))).is_err(), "a longer writeset");
    }
}
