//! Joining and leaving the group, on the driver's thread.
//!
//! A joiner is not a Raft member yet, so it cannot propose its own entry:
//! it reaches any member by address, sends a join request, and that member
//! proposes adding it as a learner (raft-rs forwards the proposal to the
//! leader). The leader promotes a learner to voter once the group records
//! that it holds the state. Leaving is a conf change removing oneself; a
//! leader hands leadership over first so the group never waits for an
//! election.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use crate::group::state::{Member, MemberState};
use crate::log;

/// Join requests are repeated this often until the group takes us.
const JOIN_RETRY: Duration = Duration::from_millis(500);
/// Leave steps (leadership transfer, removal) are retried this often, and
/// a leave gives up (the node goes anyway) after LEAVE_WAIT.
const LEAVE_RETRY: Duration = Duration::from_millis(300);
const LEAVE_WAIT: Duration = Duration::from_secs(5);

pub(in crate::group) struct Joining {
    peers: Vec<String>,
    next_try: Instant,
    /// Whether we ever reached a member, and warned that we did not.
    reached: bool,
    warned: bool,
    started: Instant,
    /// Members that answered: the request is repeated to them, since one
    /// may come while the member cannot take it (no leader, a
    /// configuration change pending).
    linked: Vec<u64>,
}

impl Joining {
    pub fn new(peers: Vec<String>, now: Instant) -> Joining {
        Joining { peers, next_try: now, reached: false, warned: false, started: now, linked: Vec::new() }
    }

    /// Once every `JOIN_RETRY`: the addresses of `wsrep_cluster_address`
    /// to call, and the members that answered, to ask again.
    pub fn due(&mut self, now: Instant) -> Option<(Vec<String>, Vec<u64>)> {
        if now < self.next_try {
            return None;
        }
        self.next_try = now + JOIN_RETRY;
        if !self.reached && !self.warned && now.saturating_duration_since(self.started) > Duration::from_secs(10) {
            self.warned = true;
            log::warning!("no member of the cluster answers at {} yet; still trying", self.peers.join(","));
        }
        Some((self.peers.clone(), self.linked.clone()))
    }

    /// Member `id` answered: it is asked to take this joiner in.
    pub fn reached(&mut self, id: u64) {
        self.reached = true;
        if !self.linked.contains(&id) {
            self.linked.push(id);
        }
    }
}

pub(in crate::group) struct Leaving {
    /// Everyone who asked to leave (a halted node's own leave, then the
    /// server's disconnect) hears when it is done.
    replies: Vec<Sender<()>>,
    deadline: Instant,
    next_step: Instant,
}

/// What a leave does next (see `Leaving::step`).
pub(crate) enum LeaveStep {
    /// Nothing before the next retry.
    Wait,
    /// Take the next step (hand leadership over, or propose the removal).
    Act,
    /// Done: tell everyone who asked.
    Done(Vec<Sender<()>>),
}

impl Leaving {
    pub fn new(reply: Sender<()>, now: Instant) -> Leaving {
        Leaving { replies: vec![reply], deadline: now + LEAVE_WAIT, next_step: now }
    }

    /// Another asks to leave while this leave goes on.
    pub fn add(&mut self, reply: Sender<()>) {
        self.replies.push(reply);
    }

    /// `done`: the group no longer lists this member, or it is alone.
    /// Out of time, it goes anyway.
    pub fn step(&mut self, now: Instant, done: bool) -> LeaveStep {
        if done || now >= self.deadline {
            if now >= self.deadline {
                log::info!("leaving without the group's acknowledgement after {:?}", LEAVE_WAIT);
            }
            return LeaveStep::Done(self.replies.clone());
        }
        if now < self.next_step {
            return LeaveStep::Wait;
        }
        self.next_step = now + LEAVE_RETRY;
        LeaveStep::Act
    }
}


/// Joined, synced or donor: the member has the data, so it may vote.
pub(crate) fn holds_state(m: &Member) -> bool {
    matches!(m.state, MemberState::Joined | MemberState::Synced | MemberState::Donor)
}
