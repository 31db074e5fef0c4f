//! Whether this member's side may order: a leader within the grace
//! (`quorum`), weighted quorum's rules (`weights`), a member that hears
//! no majority or not its leader (`cut_off`), a process that stood still
//! (`standstill`) and who spoke lately (`liveness`).

pub mod cut_off;
pub mod liveness;
pub mod quorum;
pub mod standstill;
pub mod weights;

use std::time::{Duration, Instant};

use crate::group::state::{GroupState, Member};
use crate::gtid::Uuid;
use crate::log;
use liveness::Liveness;
use quorum::{Policy, Quorum, Seen};
use weights::Standing;

/// What the primary room holds for the driver.
pub(crate) struct Primary {
    /// Failure detection; the leader acts on it.
    liveness: Liveness,
    was_leader: bool,
    /// The last member heard speaking as a leader (an append, heartbeat
    /// or snapshot), and when: a member that never campaigns (a learner,
    /// an arbitrator) keeps naming a leader that stepped down, and still
    /// hears from it (its vote requests), so plain liveness would not do.
    leader_contact: Option<(u64, Instant)>,
    /// The other members' latest words on their leader (see `cut_off`).
    leader_words: cut_off::LeaderWords,
    policy: Policy,
    /// When this member last proposed its weight.
    weight_asked: Option<Instant>,
    standstill: standstill::Standstill,
}

impl Primary {
    pub(in crate::group) fn new(timeouts: liveness::Timeouts, now: Instant, tick: Duration) -> Primary {
        Primary {
            liveness: Liveness::new(timeouts),
            was_leader: false,
            leader_contact: None,
            leader_words: Default::default(),
            policy: Policy::default(),
            weight_asked: None,
            standstill: standstill::Standstill::new(now, tick),
        }
    }
}

impl Primary {
    pub(in crate::group) fn timeouts(&self) -> &liveness::Timeouts {
        &self.liveness.timeouts
    }

    /// `evs.suspect_timeout` / `evs.inactive_timeout` changed.
    pub(in crate::group) fn set_timeouts(&mut self, t: liveness::Timeouts) {
        self.liveness.timeouts = t;
    }

    pub(in crate::group) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// `pc.ignore_sb` / `pc.ignore_quorum` / `pc.weight` changed.
    pub(in crate::group) fn set_policy(&mut self, p: Policy) {
        self.policy = p;
    }

    /// Member `id` spoke (any frame).
    pub(in crate::group) fn heard(&mut self, id: u64, now: Instant) {
        self.liveness.heard(id, now);
    }

    pub(in crate::group) fn heard_within(&self, id: u64, now: Instant, window: Duration) -> bool {
        self.liveness.heard_within(id, now, window)
    }

    /// The group's members now (raft ids), for `spoke_within`.
    pub(in crate::group) fn list(&mut self, ids: &[u64], now: Instant) {
        self.liveness.list(ids, now);
    }

    /// Member `leader` spoke as a leader (an append, heartbeat or snapshot).
    pub(in crate::group) fn led_by(&mut self, leader: u64, now: Instant) {
        self.leader_contact = Some((leader, now));
    }

    /// The last member heard speaking as a leader, and when.
    pub(in crate::group) fn leader_contact(&self) -> Option<(u64, Instant)> {
        self.leader_contact
    }

    /// Member `from`'s word on its leader (see `cut_off`).
    pub(in crate::group) fn on_leader_word(&mut self, from: u64, word: cut_off::LeaderWord, now: Instant) {
        self.leader_words.on_word(from, word, now);
    }

    /// A driver turn begins: how long the process stood still before it,
    /// if it did (see `Standstill::turn_begins`).
    pub(in crate::group) fn turn_begins(&mut self, now: Instant) -> Option<Duration> {
        self.standstill.turn_begins(now)
    }

    pub(in crate::group) fn turn_ended(&mut self, now: Instant) {
        self.standstill.turn_ended(now);
    }

    /// Whether the driver ran throughout the last `window` (see `standstill`).
    pub(in crate::group) fn ran_throughout(&self, now: Instant, window: Duration) -> bool {
        self.standstill.ran_throughout(now, window)
    }

    /// Whether a standstill just seen is a new one (see `Standstill::is_new`).
    pub(in crate::group) fn stood_still_anew(&mut self, now: Instant) -> bool {
        self.standstill.is_new(now)
    }

    pub(in crate::group) fn retain_members(&mut self, ids: &[u64]) {
        self.liveness.retain_members(ids);
        self.leader_words.retain_members(ids);
    }

    /// Whether `m` spoke within `window` (`me` always did).
    pub(in crate::group) fn spoke_within(&self, m: &Member, me: Uuid, now: Instant, window: Duration) -> bool {
        m.info.id == me || self.liveness.spoke_lately(m.info.id.raft_id(), now, window)
    }

    /// A leader another member hears now and this follower (raft id `me`,
    /// in `term`) has not heard for `window`: (that member, the leader).
    /// See `cut_off`.
    pub(in crate::group) fn leader_heard_elsewhere(&self, state: &GroupState, me: u64, term: u64, now: Instant, window: Duration) -> Option<(u64, u64)> {
        // Appends relayed by a member of this segment (see `relay`) are the
        // leader heard too, though its own frames are not.
        let led_lately = |id: u64| self.leader_contact.is_some_and(|(l, at)| l == id && now.saturating_duration_since(at) < window);
        let silent = |id: u64| id != me && state.member_by_raft_id(id).is_some() && !self.liveness.spoke_lately(id, now, window) && !led_lately(id);
        self.leader_words.heard_elsewhere(now, term, window, silent)
    }

    /// Whether Raft's leader (`leader_id`) spoke as one lately, or is this
    /// member (raft id `me`).
    pub(in crate::group) fn leader_spoke(&self, leader_id: u64, me: u64, now: Instant) -> bool {
        let spoke_as_leader = |id| self.leader_contact.is_some_and(|(l, at)| l == id && now.saturating_duration_since(at) <= quorum::LEADER_SILENT);
        quorum::has_leader(leader_id, me, spoke_as_leader)
    }

    /// The leader as `quorum` needs it: none (not `known`), this member,
    /// or another with when it last spoke as leader.
    pub(in crate::group) fn leader_seen(&self, known: bool, leader_id: u64, me: u64) -> Seen {
        if !known {
            return Seen::None;
        }
        match self.leader_contact {
            Some((leader, at)) if leader == leader_id && leader != me => Seen::Other(at),
            _ => Seen::Me,
        }
    }

    /// For a leader (`leader`) free to remove a member (`free`: no
    /// configuration change pending, not leaving): the member of `others`
    /// silent the longest past the eviction timeout, and for how long. A
    /// new leader starts counting afresh (see `Liveness::restart`).
    pub(in crate::group) fn overdue(&mut self, leader: bool, free: bool, others: &[u64], now: Instant) -> Option<(u64, Duration)> {
        if leader && !self.was_leader {
            self.liveness.restart(now);
        }
        self.was_leader = leader;
        if !leader || !free {
            return None;
        }
        self.liveness.overdue(others, now)
    }

    /// Whether `m` stands on this member's side as it turns non-primary.
    pub(in crate::group) fn hears(&self, m: &Member, me: Uuid, now: Instant) -> bool {
        let window = Quorum::side_window(self.liveness.timeouts.suspect);
        m.info.id == me || self.liveness.heard_within(m.info.id.raft_id(), now, window)
    }

    /// This member and the members it heard from lately, weighed against
    /// the last primary view.
    pub(in crate::group) fn side_standing(&self, state: &GroupState, me: Uuid, now: Instant) -> Standing {
        weights::side_standing(state, |m| self.hears(m, me, now))
    }

    /// The leader's verdict: whether the members it heard within Raft's
    /// check_quorum window weigh enough to be primary.
    pub(in crate::group) fn side_is_primary(&self, state: &GroupState, me: Uuid, now: Instant) -> bool {
        let heard = |id| self.liveness.heard_within(id, now, weights::VERDICT_WINDOW);
        let standing = weights::leader_standing(state, me, heard);
        standing == Standing::Majority || self.policy.forces_primary(standing)
    }

    /// Whether to propose this member's `pc.weight` now: the group's
    /// record (`ordered`) differs and this side is primary, at most once
    /// every `Quorum::PROBE_EVERY`.
    pub(in crate::group) fn weight_due(&mut self, ordered: u32, primary: bool, now: Instant) -> bool {
        if ordered == self.policy.weight || !primary {
            self.weight_asked = None;
            return false;
        }
        if self.weight_asked.is_some_and(|at| now.saturating_duration_since(at) < Quorum::PROBE_EVERY) {
            return false;
        }
        if self.weight_asked.is_none() {
            log::info!("pc.weight of this node is {}: telling the group", self.policy.weight);
        }
        self.weight_asked = Some(now);
        true
    }
}
