//! This member's writesets on their way into the total order, kept until
//! they are ordered, so that a leader change does not fail them.
//!
//! Raft drops a proposal made while no leader is known, and a proposal a
//! follower forwarded to a leader that died before appending it is lost
//! without a word. Galera's clients never see either: a writeset waits
//! through a configuration change and is ordered in the new primary
//! component. So we keep each payload until it is ordered, retry dropped
//! ones once a leader is known, and resend lost ones after a fence: the
//! fence entry, once ordered, guarantees the first copy can never be
//! ordered later, so the resend cannot be ordered twice.
//!
//! Each send carries its own wire token (in the entry's header); the
//! node's token (what its waiting client knows) stays the same across
//! resends. A payload larger than a piece goes out in pieces (see
//! `pieces`), a window of them at a time. Time is an argument, so the
//! simulator can drive this.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::group::wire::entry::Entry;
use crate::group::wire::pieces;
use crate::gtid::Uuid;

#[derive(Debug)]
struct Proposal {
    client: u64,
    /// The payload; entries are cut from it at each send, so a resend
    /// copies nothing twice and a big writeset is never one buffer per
    /// piece in flight.
    body: Bytes,
    /// When it last made progress (proposed, a piece committed): one that
    /// makes none for the give-up time fails.
    progress: Instant,
    /// Pieces handed to Raft (any may still be lost with a leader), and
    /// committed, in order.
    handed: usize,
    committed: usize,
    /// How many pieces it goes in.
    pieces: usize,
}

#[derive(Debug)]
pub struct Proposals {
    /// By wire token. Bounded by the clients: each has at most one
    /// writeset in flight and waits for it.
    waiting: BTreeMap<u64, Proposal>,
    next_wire: u64,
    /// Bytes per piece: `pieces::PIECE_BYTES`, a few in the simulator
    /// (so that pieces of its small writesets interleave).
    piece: usize,
}

impl Default for Proposals {
    fn default() -> Proposals {
        Proposals::with_piece(pieces::PIECE_BYTES)
    }
}

/// A client whose writeset failed, and the wire token to fence when
/// some of its pieces may be in the log (so every member drops them).
#[derive(Debug, PartialEq, Eq)]
pub struct Failed {
    pub client: u64,
    pub fence: Option<u64>,
}

impl Proposals {
    pub fn with_piece(piece: usize) -> Proposals {
        assert!(piece > 0, "pieces have bytes");
        Proposals { waiting: BTreeMap::new(), next_wire: 0, piece }
    }

    /// Registers the client's payload; `pump` sends it.
    pub fn add(&mut self, client: u64, body: Bytes, now: Instant) -> u64 {
        self.next_wire += 1;
        let wire = self.next_wire;
        let pieces = pieces::count_of(body.len(), self.piece);
        self.waiting.insert(wire, Proposal { client, body, progress: now, handed: 0, committed: 0, pieces });
        wire
    }

    /// Hands Raft the next entries of every waiting payload, in token
    /// order, at most `WINDOW_PIECES` uncommitted pieces per payload;
    /// `propose` says whether Raft took one. Stops at the first refusal
    /// (no leader): the next pump retries from there.
    pub fn pump(&mut self, origin: Uuid, now: Instant, mut propose: impl FnMut(Entry) -> bool) {
        let piece = self.piece;
        for (wire, p) in self.waiting.iter_mut() {
            while p.handed < p.pieces && p.handed - p.committed < pieces::WINDOW_PIECES {
                if !propose(pieces::entry_of(origin, *wire, &p.body, p.handed, piece)) {
                    return;
                }
                if p.handed == 0 {
                    p.progress = now; // its wait for the group starts now
                }
                p.handed += 1;
            }
        }
    }

    /// When the proposal handed to Raft that waits longest last made
    /// progress: one that made none for long was probably lost.
    pub fn oldest_progress(&self) -> Option<Instant> {
        self.waiting.values().filter(|p| p.handed > 0).map(|p| p.progress).min()
    }

    /// A piece of ours was committed: `bytes` of the payload are in.
    pub fn progressed(&mut self, wire: u64, bytes: u64, now: Instant) {
        if let Some(p) = self.waiting.get_mut(&wire) {
            p.committed = (bytes as usize).div_ceil(self.piece).min(p.handed);
            p.progress = now;
        }
    }

    /// A payload of ours was ordered: the client token to report.
    pub fn ordered(&mut self, wire: u64) -> Option<u64> {
        self.waiting.remove(&wire).map(|p| p.client)
    }

    /// The payload sent under `wire`, while it waits.
    pub fn body(&self, wire: u64) -> Option<&Bytes> {
        self.waiting.get(&wire).map(|p| &p.body)
    }

    /// The highest wire token with entries handed to Raft and not yet
    /// ordered: what a fence must cover.
    pub fn highest_sent(&self) -> Option<u64> {
        self.waiting.iter().rev().find(|(_, p)| p.handed > 0).map(|(w, _)| *w)
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// This member left the primary component: every waiting client fails
    /// now, as Galera fails them on a non-primary view. A copy already in
    /// some leader's log may still be ordered when the partition heals; it
    /// then reaches this node as nobody's writeset and is applied like a
    /// remote one, so every node still commits the same.
    pub fn abandon(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.waiting).into_values().map(|p| p.client).collect()
    }

    /// This member goes on as a component of its own (`pc.ignore_sb`,
    /// `pc.ignore_quorum`): the old group's log is left behind, so every
    /// waiting writeset is proposed again there, from its first piece, its
    /// clock restarted (its client waited through a configuration change,
    /// as with Galera).
    pub fn unsend_all(&mut self, now: Instant) {
        for p in self.waiting.values_mut() {
            (p.handed, p.committed, p.progress) = (0, 0, now);
        }
    }

    /// Payloads not yet wholly handed to Raft that made no progress for
    /// `give_up` (no leader would take them): they fail.
    pub fn stalled(&mut self, now: Instant, give_up: Duration) -> Vec<Failed> {
        let wires: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, p)| p.handed < p.pieces && now.saturating_duration_since(p.progress) >= give_up)
            .map(|(w, _)| *w)
            .collect();
        wires.into_iter().map(|w| self.fail(w)).collect()
    }

    /// The client gave up (KILL). Possible only while its payload is not
    /// wholly handed to Raft: its last entry cannot be ordered then, so
    /// the client's error cannot contradict what the group commits.
    pub fn cancel(&mut self, client: u64) -> Option<Failed> {
        let (wire, _) = self.waiting.iter().find(|(_, p)| p.client == client && p.handed < p.pieces)?;
        Some(self.fail(*wire))
    }

    fn fail(&mut self, wire: u64) -> Failed {
        let p = self.waiting.remove(&wire).expect("listed");
        Failed { client: p.client, fence: (p.handed > 0).then_some(wire) }
    }

    /// A fence of ours up to `upto` was ordered: everything handed to Raft
    /// up to there and not ordered is dead. It is sent again whole under a
    /// new wire token by the next `pump`, or fails once it has made no
    /// progress for `give_up` (then nothing of it can be ordered any more).
    pub fn fenced(&mut self, upto: u64, now: Instant, give_up: Duration) -> Vec<u64> {
        let wires: Vec<u64> = self.waiting.range(..=upto).filter(|(_, p)| p.handed > 0).map(|(w, _)| *w).collect();
        let mut failed = Vec::new();
        for wire in wires {
            let mut p = self.waiting.remove(&wire).expect("listed above");
            if now.saturating_duration_since(p.progress) >= give_up {
                failed.push(p.client);
                continue;
            }
            (p.handed, p.committed) = (0, 0);
            self.next_wire += 1;
            self.waiting.insert(self.next_wire, p);
        }
        failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::wire::entry::Entry;

    const GIVE_UP: Duration = Duration::from_secs(15);

    /// Pumps everything Raft takes; the entries, decoded.
    fn pump_all(p: &mut Proposals) -> Vec<Entry> {
        let mut out = Vec::new();
        p.pump(Uuid::NIL, Instant::now(), |e| {
            out.push(Entry::committed(e));
            true
        });
        out
    }

    fn token_of(e: &Entry) -> u64 {
        match e {
            Entry::Ordered { token, .. } | Entry::Piece { token, .. } => *token,
            other => panic!("{other:?}"),
        }
    }

    fn small(n: u8) -> Bytes {
        Bytes::from(vec![n; 10])
    }

    #[test]
    fn abandoned_proposals_fail_their_clients_and_are_nobodys_when_ordered_later() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let w1 = p.add(7, small(7), t0);
        pump_all(&mut p);
        p.add(8, small(8), t0);
        let mut clients = p.abandon();
        clients.sort();
        assert_eq!(clients, vec![7, 8]);
        assert_eq!(p.ordered(w1), None);
        assert!(p.is_empty());
    }

    #[test]
    fn an_ordered_proposal_reports_its_client_token_once() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let wire = p.add(77, small(1), t0);
        let sent = pump_all(&mut p);
        assert_eq!(sent, vec![Entry::Ordered { origin: Uuid::NIL, token: wire, payload: small(1) }]);
        assert!(pump_all(&mut p).is_empty(), "sent once");
        assert_eq!(p.body(wire), Some(&small(1)));
        assert_eq!(p.ordered(wire), Some(77));
        assert_eq!(p.ordered(wire), None);
        assert!(p.is_empty());
    }

    #[test]
    fn a_dropped_proposal_is_retried_under_the_same_wire_token() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let wire = p.add(5, small(5), t0);
        p.pump(Uuid::NIL, Instant::now(), |_| false);
        assert_eq!(p.highest_sent(), None, "never handed to raft: nothing to fence");
        let sent = pump_all(&mut p);
        assert_eq!(sent.len(), 1);
        assert_eq!(token_of(&sent[0]), wire);
        assert_eq!(p.highest_sent(), Some(wire));
    }

    #[test]
    fn a_big_payload_goes_out_a_window_at_a_time() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let n = pieces::WINDOW_PIECES + 3;
        let body = Bytes::from(vec![9u8; (n - 1) * pieces::PIECE_BYTES + 1]);
        let wire = p.add(1, body.clone(), t0);
        let small_wire = p.add(2, small(2), t0);
        let first = pump_all(&mut p);
        assert_eq!(first.len(), pieces::WINDOW_PIECES + 1, "a window of pieces, and the small one beside it");
        assert_eq!(token_of(first.last().unwrap()), small_wire);
        p.progressed(wire, 2 * pieces::PIECE_BYTES as u64, t0);
        let more = pump_all(&mut p);
        assert_eq!(more.len(), 2);
        p.progressed(wire, (pieces::WINDOW_PIECES + 2) as u64 * pieces::PIECE_BYTES as u64, t0);
        let last = pump_all(&mut p);
        assert_eq!(last.len(), 1);
        let mut a = pieces::Assemblies::default();
        let mut done = None;
        for e in first.into_iter().chain(more).chain(last) {
            if let Entry::Piece { origin, token, total, offset, data } = e {
                if let pieces::Assembled::Complete(b) = a.add(origin, token, total, offset, data) {
                    done = Some(pieces::join(b));
                }
            }
        }
        assert_eq!(done, Some(body));
    }

    #[test]
    fn a_fence_resends_what_it_covers_whole_under_new_wire_tokens() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let big = Bytes::from(vec![1u8; 2 * pieces::PIECE_BYTES]);
        let w1 = p.add(1, big, t0);
        let w2 = p.add(2, small(2), t0);
        pump_all(&mut p);
        p.progressed(w1, pieces::PIECE_BYTES as u64, t0);
        let w3 = p.add(3, small(3), t0);
        pump_all(&mut p);
        assert_eq!(p.fenced(w2, t0, GIVE_UP), Vec::<u64>::new());
        let resent = pump_all(&mut p);
        let tokens: Vec<u64> = resent.iter().map(token_of).collect();
        assert_eq!(tokens.len(), 3, "both pieces of the big one and the small one: {tokens:?}");
        assert!(tokens.iter().all(|w| *w > w3), "fresh tokens, above any fenced one");
        assert!(matches!(&resent[0], Entry::Piece { offset: 0, .. }), "from its first piece");
        // A late delivery of a fenced copy is not ours any more.
        assert_eq!(p.ordered(w1), None);
        assert_eq!(p.ordered(tokens[0]), Some(1));
        assert_eq!(p.ordered(tokens[2]), Some(2));
        assert_eq!(p.ordered(w3), Some(3));
    }

    #[test]
    fn proposals_without_progress_fail_and_partial_ones_are_fenced() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        p.add(9, small(9), t0);
        assert_eq!(p.stalled(t0 + GIVE_UP, GIVE_UP), vec![Failed { client: 9, fence: None }]);
        let big = Bytes::from(vec![1u8; (pieces::WINDOW_PIECES + 1) * pieces::PIECE_BYTES]);
        let w = p.add(10, big, t0);
        pump_all(&mut p);
        p.progressed(w, pieces::PIECE_BYTES as u64, t0 + GIVE_UP);
        assert!(p.stalled(t0 + GIVE_UP, GIVE_UP).is_empty(), "a committed piece is progress");
        p.pump(Uuid::NIL, Instant::now(), |_| false);
        assert_eq!(p.stalled(t0 + 2 * GIVE_UP, GIVE_UP), vec![Failed { client: 10, fence: Some(w) }]);
        let w2 = p.add(11, small(1), t0);
        p.pump(Uuid::NIL, t0, |_| true);
        assert_eq!(p.oldest_progress(), Some(t0), "sent at t0");
        assert_eq!(p.fenced(w2, t0 + GIVE_UP, GIVE_UP), vec![11], "fenced once too old: it fails");
        assert!(p.is_empty());
    }

    #[test]
    fn a_client_may_cancel_only_what_cannot_be_ordered_any_more() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let w = p.add(1, small(1), t0);
        assert_eq!(p.cancel(1), Some(Failed { client: 1, fence: None }), "never sent");
        let w2 = p.add(2, small(2), t0);
        pump_all(&mut p);
        assert_eq!(p.cancel(2), None, "wholly handed to raft: it may still be ordered");
        let big = Bytes::from(vec![1u8; (pieces::WINDOW_PIECES + 1) * pieces::PIECE_BYTES]);
        let w3 = p.add(3, big, t0);
        pump_all(&mut p);
        assert_eq!(p.cancel(3), Some(Failed { client: 3, fence: Some(w3) }), "its last piece is not sent");
        assert_eq!(p.ordered(w2), Some(2));
        let _ = w;
    }
}
