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
//! Each send carries its own wire token (in the payload's header); the
//! node's token (what its waiting client knows) stays the same across
//! resends. Time is an argument, so the simulator can drive this.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Where the token sits in an `Ordered` entry (after version, kind and
/// origin uuid; see `entry::ordered_header`).
const TOKEN_AT: std::ops::Range<usize> = 18..26;

#[derive(Debug)]
struct Proposal {
    client: u64,
    data: Vec<u8>,
    first: Instant,
    /// Handed to Raft (it may still be lost with a leader).
    sent: bool,
}

#[derive(Debug, Default)]
pub struct Proposals {
    /// By wire token. Bounded by the clients: each has at most one
    /// writeset in flight and waits for it.
    waiting: BTreeMap<u64, Proposal>,
    next_wire: u64,
}

/// What to do with a proposal Raft did not take in time.
#[derive(Debug, PartialEq, Eq)]
pub enum Retry {
    /// Propose this (wire token inside) again.
    Send { wire: u64, data: Vec<u8> },
    /// Give up: the client's `token` fails.
    Fail { client: u64 },
}

impl Proposals {
    /// Registers a payload built with the client's token in its header;
    /// returns its wire token and the bytes to propose.
    pub fn add(&mut self, client: u64, mut data: Vec<u8>, now: Instant) -> (u64, Vec<u8>) {
        assert!(data.len() >= TOKEN_AT.end, "an ordered entry has a header");
        self.next_wire += 1;
        let wire = self.next_wire;
        data[TOKEN_AT].copy_from_slice(&wire.to_le_bytes());
        self.waiting.insert(wire, Proposal { client, data: data.clone(), first: now, sent: false });
        (wire, data)
    }

    pub fn sent(&mut self, wire: u64) {
        if let Some(p) = self.waiting.get_mut(&wire) {
            p.sent = true;
        }
    }

    /// A payload of ours was ordered: the client token to report.
    pub fn ordered(&mut self, wire: u64) -> Option<u64> {
        self.waiting.remove(&wire).map(|p| p.client)
    }

    /// The highest wire token handed to Raft and not yet ordered: what a
    /// fence must cover.
    pub fn highest_sent(&self) -> Option<u64> {
        self.waiting.iter().rev().find(|(_, p)| p.sent).map(|(w, _)| *w)
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
    /// waiting writeset is proposed again there, its clock restarted (its
    /// client waited through a configuration change, as with Galera).
    pub fn unsend_all(&mut self, now: Instant) {
        for p in self.waiting.values_mut() {
            p.sent = false;
            p.first = now;
        }
    }

    /// Proposals Raft dropped (no leader), to try again now.
    pub fn unsent(&mut self, now: Instant, give_up: Duration) -> Vec<Retry> {
        let wires: Vec<u64> = self.waiting.iter().filter(|(_, p)| !p.sent).map(|(w, _)| *w).collect();
        wires.into_iter().map(|w| self.retry(w, now, give_up, false)).collect()
    }

    /// A fence of ours up to `upto` was ordered: everything sent up to
    /// there and not ordered is dead, and is resent under a new wire token
    /// (or failed, once older than `give_up`).
    pub fn fenced(&mut self, upto: u64, now: Instant, give_up: Duration) -> Vec<Retry> {
        let wires: Vec<u64> = self.waiting.range(..=upto).filter(|(_, p)| p.sent).map(|(w, _)| *w).collect();
        wires.into_iter().map(|w| self.retry(w, now, give_up, true)).collect()
    }

    fn retry(&mut self, wire: u64, now: Instant, give_up: Duration, renumber: bool) -> Retry {
        let p = self.waiting.remove(&wire).expect("listed above");
        if now.saturating_duration_since(p.first) >= give_up {
            return Retry::Fail { client: p.client };
        }
        if !renumber {
            let data = p.data.clone();
            self.waiting.insert(wire, p);
            return Retry::Send { wire, data };
        }
        let (wire, data) = self.add(p.client, p.data, now);
        self.waiting.get_mut(&wire).expect("just added").first = p.first;
        Retry::Send { wire, data }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(client: u64) -> Vec<u8> {
        let mut d = vec![0u8; 18];
        d.extend_from_slice(&client.to_le_bytes());
        d.extend_from_slice(b"ws");
        d
    }

    #[test]
    fn abandoned_proposals_fail_their_clients_and_are_nobodys_when_ordered_later() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let (w1, _) = p.add(7, payload(7), t0);
        p.sent(w1);
        p.add(8, payload(8), t0);
        let mut clients = p.abandon();
        clients.sort();
        assert_eq!(clients, vec![7, 8]);
        assert_eq!(p.ordered(w1), None);
        assert!(p.is_empty());
    }

    fn wire_of(data: &[u8]) -> u64 {
        u64::from_le_bytes(data[TOKEN_AT].try_into().unwrap())
    }

    const GIVE_UP: Duration = Duration::from_secs(15);

    #[test]
    fn an_ordered_proposal_reports_its_client_token_once() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let (wire, data) = p.add(77, payload(77), t0);
        assert_eq!(wire_of(&data), wire);
        assert_eq!(&data[26..], b"ws");
        p.sent(wire);
        assert_eq!(p.ordered(wire), Some(77));
        assert_eq!(p.ordered(wire), None);
        assert!(p.is_empty());
    }

    #[test]
    fn a_dropped_proposal_is_retried_under_the_same_wire_token() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let (wire, data) = p.add(5, payload(5), t0);
        assert_eq!(p.highest_sent(), None, "never handed to raft: nothing to fence");
        assert_eq!(p.unsent(t0, GIVE_UP), vec![Retry::Send { wire, data }]);
        p.sent(wire);
        assert_eq!(p.unsent(t0, GIVE_UP), vec![]);
        assert_eq!(p.highest_sent(), Some(wire));
    }

    #[test]
    fn a_fence_resends_what_it_covers_under_new_wire_tokens() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let (w1, _) = p.add(1, payload(1), t0);
        let (w2, _) = p.add(2, payload(2), t0);
        p.sent(w1);
        p.sent(w2);
        let (w3, _) = p.add(3, payload(3), t0);
        p.sent(w3);
        let resent = p.fenced(w2, t0, GIVE_UP);
        let wires: Vec<u64> = resent
            .iter()
            .map(|r| match r {
                Retry::Send { wire, data } => {
                    assert_eq!(wire_of(data), *wire);
                    *wire
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(wires.len(), 2);
        assert!(wires.iter().all(|w| *w > w3), "fresh tokens, above any fenced one");
        // A late delivery of a fenced copy is not ours any more.
        assert_eq!(p.ordered(w1), None);
        assert_eq!(p.ordered(wires[0]), Some(1));
        assert_eq!(p.ordered(wires[1]), Some(2));
        assert_eq!(p.ordered(w3), Some(3));
    }

    #[test]
    fn proposals_older_than_the_limit_fail() {
        let (mut p, t0) = (Proposals::default(), Instant::now());
        let (w, _) = p.add(9, payload(9), t0);
        assert_eq!(p.unsent(t0 + GIVE_UP, GIVE_UP), vec![Retry::Fail { client: 9 }]);
        let (w2, _) = p.add(10, payload(10), t0);
        p.sent(w2);
        let resent = p.fenced(w2, t0 + Duration::from_secs(1), GIVE_UP);
        let Retry::Send { wire, .. } = resent[0] else { panic!() };
        p.sent(wire);
        // The resend keeps its first time: it still fails on time.
        assert_eq!(p.fenced(wire, t0 + GIVE_UP, GIVE_UP), vec![Retry::Fail { client: 10 }]);
        assert!(p.is_empty());
        let _ = w;
    }
}
