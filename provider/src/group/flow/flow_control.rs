//! Flow control (Galera's FC_STOP / FC_CONT, contract §9): a member whose
//! applier backlog grows past the upper limit asks every member to stop
//! replicating new writesets until its backlog is back under the lower
//! limit. The whole cluster then goes at the pace of its slowest applier,
//! which keeps backlogs (and causal-read latency, and memory) bounded.
//!
//! Unlike Galera's messages, which travel in total order, ours go straight
//! over the transport, which may drop them. So a STOP is a lease: its
//! sender repeats it while it holds, and a receiver forgets a STOP it has
//! not heard again within `LEASE`. A lost CONT, or a member that dies while
//! it asks for a stop, costs the cluster at most one lease. Time is an
//! argument here, so the simulator can drive it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
pub use crate::group::wire::notices::Signal;

/// How long a STOP holds without being repeated.
pub const LEASE: Duration = Duration::from_millis(1000);
/// How often a member repeats its STOP while it holds.
pub const REPEAT: Duration = Duration::from_millis(200);

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Counters {
    /// STOPs this member sent (repeats not counted).
    pub sent: u64,
    /// STOPs received from any member, this one included (repeats not
    /// counted).
    pub recv: u64,
}

#[derive(Debug, Default)]
pub struct FlowControl {
    /// Members (raft ids) whose STOP holds, with when it lapses.
    stops: BTreeMap<u64, Instant>,
    /// This member's STOP holds.
    requested: bool,
    /// This member's backlog asks for a STOP while another member's holds:
    /// sent once none holds (see `local`).
    deferred: bool,
    last_repeat: Option<Instant>,
    counters: Counters,
}

impl FlowControl {
    /// Whether replication must wait now.
    pub fn paused(&self, now: Instant) -> bool {
        self.stops.values().any(|&until| until > now)
    }

    pub fn requested(&self) -> bool {
        self.requested
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    pub fn reset_counters(&mut self) {
        self.counters = Counters::default();
    }

    /// The local member's backlog crossed a limit: the signal to broadcast
    /// (its own STOP counts for itself at once).
    ///
    /// As in Galera, a member does not ask for a stop while another
    /// member's holds: the group is paused already, and every member
    /// drains meanwhile. It asks once that one goes on, if its backlog
    /// still wants it ([`FlowControl::resume_deferred`]). Without this,
    /// each member's STOPs overlapped the others' at their own rhythm and
    /// the writers were held for the union of them (issue 52).
    pub fn local(&mut self, me: u64, signal: Signal, now: Instant) -> Option<Signal> {
        match (signal, self.requested) {
            (Signal::Stop, false) if self.others_hold(me, now) => {
                self.deferred = true;
                None
            }
            (Signal::Stop, false) => self.stop(me, now),
            (Signal::Cont, true) => {
                self.requested = false;
                self.on_message(me, Signal::Cont, now);
                Some(Signal::Cont)
            }
            (Signal::Cont, false) => {
                self.deferred = false;
                None
            }
            _ => None,
        }
    }

    /// The STOP a member deferred, once no other member's holds.
    pub fn resume_deferred(&mut self, me: u64, now: Instant) -> Option<Signal> {
        if !self.deferred || self.others_hold(me, now) {
            return None;
        }
        self.stop(me, now)
    }

    fn stop(&mut self, me: u64, now: Instant) -> Option<Signal> {
        self.deferred = false;
        self.requested = true;
        self.counters.sent += 1;
        self.last_repeat = Some(now);
        self.on_message(me, Signal::Stop, now);
        Some(Signal::Stop)
    }

    fn others_hold(&self, me: u64, now: Instant) -> bool {
        self.stops.iter().any(|(&id, &until)| id != me && until > now)
    }

    /// A member's STOP or CONT arrived (or a repeat of it).
    pub fn on_message(&mut self, from: u64, signal: Signal, now: Instant) {
        match signal {
            Signal::Stop => {
                if self.stops.insert(from, now + LEASE).is_none_or(|until| until <= now) {
                    self.counters.recv += 1;
                }
            }
            Signal::Cont => {
                self.stops.remove(&from);
            }
        }
    }

    /// Periodic work: the STOP to repeat, if ours holds and is due, or the
    /// one deferred once the others' leases lapsed; lapsed leases are
    /// dropped.
    pub fn tick(&mut self, me: u64, now: Instant) -> Option<Signal> {
        self.stops.retain(|_, until| *until > now);
        if let Some(stop) = self.resume_deferred(me, now) {
            return Some(stop);
        }
        if !self.requested || self.last_repeat.is_some_and(|t| now < t + REPEAT) {
            return None;
        }
        self.last_repeat = Some(now);
        self.stops.insert(me, now + LEASE);
        Some(Signal::Stop)
    }

    /// A configuration change: STOPs of members that left no longer hold
    /// (Galera resets flow control on every configuration change).
    pub fn retain_members(&mut self, members: &[u64]) {
        self.stops.retain(|id, _| members.contains(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_pauses_until_cont_and_counts_once() {
        let now = Instant::now();
        let mut fc = FlowControl::default();
        assert!(!fc.paused(now));
        assert_eq!(fc.local(1, Signal::Stop, now), Some(Signal::Stop));
        assert_eq!(fc.local(1, Signal::Stop, now), None, "already requested");
        assert!(fc.paused(now) && fc.requested());
        fc.on_message(2, Signal::Stop, now);
        fc.on_message(2, Signal::Stop, now);
        assert_eq!(fc.counters(), Counters { sent: 1, recv: 2 });
        assert_eq!(fc.local(1, Signal::Cont, now), Some(Signal::Cont));
        assert!(fc.paused(now), "member 2 still asks");
        fc.on_message(2, Signal::Cont, now);
        assert!(!fc.paused(now));
    }

    #[test]
    fn a_stop_not_repeated_lapses() {
        let t0 = Instant::now();
        let mut fc = FlowControl::default();
        fc.on_message(7, Signal::Stop, t0);
        assert!(fc.paused(t0 + LEASE / 2));
        assert!(!fc.paused(t0 + LEASE), "the lease ran out: a lost CONT or a dead member");
    }

    #[test]
    fn the_requester_repeats_its_stop_while_it_holds() {
        let t0 = Instant::now();
        let mut fc = FlowControl::default();
        fc.local(1, Signal::Stop, t0);
        assert_eq!(fc.tick(1, t0 + REPEAT / 2), None);
        assert_eq!(fc.tick(1, t0 + REPEAT), Some(Signal::Stop));
        assert!(fc.paused(t0 + REPEAT + LEASE / 2), "its own lease is renewed too");
        fc.local(1, Signal::Cont, t0 + REPEAT * 2);
        assert_eq!(fc.tick(1, t0 + REPEAT * 3), None);
    }

    #[test]
    fn a_stop_wanted_while_another_members_holds_is_sent_when_that_one_goes_on() {
        let now = Instant::now();
        let mut fc = FlowControl::default();
        fc.on_message(2, Signal::Stop, now);
        assert_eq!(fc.local(1, Signal::Stop, now), None, "the group is paused already");
        assert!(!fc.requested());
        assert_eq!(fc.resume_deferred(1, now), None, "member 2's still holds");
        fc.on_message(2, Signal::Cont, now);
        assert_eq!(fc.resume_deferred(1, now), Some(Signal::Stop));
        assert!(fc.requested() && fc.paused(now));
        assert_eq!(fc.counters().sent, 1);
        // Deferred, then no longer wanted: nothing is sent.
        let mut fc = FlowControl::default();
        fc.on_message(2, Signal::Stop, now);
        fc.local(1, Signal::Stop, now);
        assert_eq!(fc.local(1, Signal::Cont, now), None);
        fc.on_message(2, Signal::Cont, now);
        assert_eq!(fc.resume_deferred(1, now), None);
        // A lease that lapses frees it too, at the next tick.
        let mut fc = FlowControl::default();
        fc.on_message(2, Signal::Stop, now);
        fc.local(1, Signal::Stop, now);
        assert_eq!(fc.tick(1, now + LEASE), Some(Signal::Stop));
    }

    #[test]
    fn members_that_left_stop_nobody() {
        let now = Instant::now();
        let mut fc = FlowControl::default();
        fc.on_message(7, Signal::Stop, now);
        fc.retain_members(&[1, 2]);
        assert!(!fc.paused(now));
    }
}
