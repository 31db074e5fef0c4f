//! Whether this member is in the primary component (Galera's quorum), as
//! the server must be told it.
//!
//! Under Raft a member is in the primary component while it has a leader:
//! a leader that stops hearing from a majority steps down (check_quorum),
//! and a follower cut off from the leader becomes a pre-candidate that no
//! majority elects; both then know no leader. A member without a leader for
//! longer than an election normally takes is non-primary: the server hears
//! a non-primary view and refuses queries, and nothing is ordered there
//! anyway (no majority). Once a leader is known again the member asks the
//! group for a new primary view (an ordered `Rejoin`), as Galera's members
//! see a new primary configuration when a partition heals; it is primary
//! again when that view is applied.
//!
//! Time is an argument, so the simulator can drive this.

use std::time::{Duration, Instant};

use super::weights::Standing;

/// This member's quorum settings: its weight (`pc.weight`, see
/// `weights`) and Galera's escape hatches from quorum (both dangerous,
/// both documented as such): `pc.ignore_sb` keeps a member primary on an
/// even split, `pc.ignore_quorum` always.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub ignore_sb: bool,
    pub ignore_quorum: bool,
    pub weight: u32,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy { ignore_sb: false, ignore_quorum: false, weight: super::weights::DEFAULT }
    }
}

impl Policy {
    /// Whether the configuration keeps a side that stands so against the
    /// last primary view primary even without a weighted majority.
    pub fn forces_primary(&self, standing: Standing) -> bool {
        self.ignore_quorum || (self.ignore_sb && standing == Standing::Split)
    }
}

/// How long a leader may be silent before a member counts itself
/// leaderless: Raft's election timeout (10 to 20 ticks of 50 ms). A voter
/// campaigns then and forgets its leader anyway; a learner never does, and
/// with the suspect timeout here (5 s) it stayed primary for 10 s in a
/// partition of its own, while the other side had a primary component of
/// its own from 6 s on (simulator, seed 7072).
pub const LEADER_SILENT: Duration = Duration::from_secs(1);

/// Whether this member has a leader: raft-rs knows one (`leader`, 0 for
/// none) and it is this member or was heard from as a leader within
/// `LEADER_SILENT`. A learner or an arbitrator never campaigns, so
/// raft-rs keeps naming a leader that went silent, that removed it while
/// it was stopped, or that stepped down (and now asks for votes); only
/// hearing from it as a leader tells.
pub fn has_leader(leader: u64, me: u64, heard_lately: impl Fn(u64) -> bool) -> bool {
    leader != raft::INVALID_ID && (leader == me || heard_lately(leader))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Primary,
    /// No leader since then; still primary until the grace ends.
    Leaderless(Instant),
    /// The server was told non-primary; `asked`: when a rejoin was
    /// proposed to the leader now known.
    NonPrimary { asked: Option<Instant> },
}

#[derive(Debug)]
pub struct Quorum {
    phase: Phase,
    last_probe: Option<Instant>,
    /// When the leader last known, another member, last spoke as one;
    /// None while this member led, or before any leader.
    contact: Option<Instant>,
    /// The Raft leader last noted (`note_leader`).
    leader: u64,
}

/// The leader as a tick sees it (see `has_leader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// No leader known.
    None,
    /// This member leads.
    Me,
    /// Another member leads, and spoke as leader at that instant.
    Other(Instant),
}

/// What the driver must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Deliver a non-primary view.
    Lost,
    /// A leader is back: propose this member's rejoin.
    AskRejoin,
}

impl Default for Quorum {
    fn default() -> Quorum {
        Quorum { phase: Phase::Primary, last_probe: None, contact: None, leader: raft::INVALID_ID }
    }
}

impl Quorum {
    /// The shortest grace before non-primary: elections take 10-20 ticks
    /// of 50 ms, and a member must not flap through non-primary while the
    /// majority elects a new leader.
    pub const MIN_GRACE: Duration = Duration::from_secs(2);
    /// How often a non-primary member calls its peers (see `probe_due`).
    pub const PROBE_EVERY: Duration = Duration::from_secs(1);
    /// A rejoin not applied this long after it was proposed is proposed
    /// again. A follower forwards it to the leader in a message that the
    /// network may lose without a word, and the member then stayed
    /// non-primary for good while its leader was known and heard
    /// (simulator, seed 3455: a member back from a partition). A rejoin
    /// applied twice only repeats the primary view.
    pub const ASK_AGAIN: Duration = Duration::from_secs(5);
    /// How much sooner than the others may evict it a member cut off
    /// counts itself non-primary: the majority evicts a member silent for
    /// the suspect timeout and goes on at once, and a client of the
    /// evicted member must not find it primary after that
    /// (galera.galera_as_slave_nonprim: an async replica's event reached
    /// the isolated node while it still waited for a leader, and the
    /// replica failed in a way Galera's never does). Four ticks cover the
    /// two sides' tick phases and the majority's commit of the eviction.
    pub const BEFORE_EVICTION: Duration = Duration::from_millis(200);

    pub fn is_primary(&self) -> bool {
        !matches!(self.phase, Phase::NonPrimary { .. })
    }

    /// Called every tick, for a member of a primary component: the
    /// leader known now. `suspect` is the suspect timeout, after which
    /// the others evict a silent member.
    ///
    /// A follower's grace counts from its leader's last word, as the
    /// others' eviction clock counts from this member's: a leader is still
    /// known `LEADER_SILENT` after its last word, and a grace counted from
    /// the tick that noticed the silence kept a cut-off member primary a
    /// second longer than the others kept it. A leader's counts from its
    /// stepping down, which raft-rs does within an election timeout of
    /// losing its majority.
    pub fn observe(&mut self, seen: Seen, now: Instant, suspect: Duration) -> Option<Change> {
        match seen {
            Seen::Me => self.contact = None,
            Seen::Other(at) => self.contact = Some(at.min(now)),
            Seen::None => {}
        }
        let leader = seen != Seen::None;
        match (self.phase, leader) {
            (Phase::Primary, false) => self.phase = Phase::Leaderless(self.contact.unwrap_or(now)),
            (Phase::Leaderless(_), true) => self.phase = Phase::Primary,
            (Phase::Leaderless(since), false) if now.saturating_duration_since(since) >= Self::grace(suspect) => {
                self.phase = Phase::NonPrimary { asked: None };
                return Some(Change::Lost);
            }
            (Phase::NonPrimary { asked }, true) if asked.is_none_or(|at| now.saturating_duration_since(at) >= Self::ASK_AGAIN) => {
                self.phase = Phase::NonPrimary { asked: Some(now) };
                return Some(Change::AskRejoin);
            }
            // A proposal made while the new leader was lost again may be
            // dropped: ask again once there is one.
            (Phase::NonPrimary { asked: Some(_) }, false) => self.phase = Phase::NonPrimary { asked: None },
            _ => {}
        }
        None
    }

    /// How long a member stays primary without a leader.
    pub fn grace(suspect: Duration) -> Duration {
        suspect.saturating_sub(Self::BEFORE_EVICTION).max(Self::MIN_GRACE)
    }

    /// Which members stand on this member's side when it turns
    /// non-primary: those heard within this window. Members cut off with
    /// the leader were last heard about when it was, a whole grace ago;
    /// members on this side campaign, or answer campaigns, every election
    /// timeout (at most `LEADER_SILENT`).
    pub fn side_window(suspect: Duration) -> Duration {
        Self::grace(suspect) - LEADER_SILENT / 2
    }

    /// Whether a non-primary member should call its peers now. A member
    /// the group removed while it was stopped may send nothing a member
    /// answers (a learner never campaigns): the call makes them tell it
    /// it was removed, and it joins again.
    pub fn probe_due(&mut self, now: Instant) -> bool {
        let due = !self.is_primary() && self.last_probe.is_none_or(|t| now.saturating_duration_since(t) >= Self::PROBE_EVERY);
        if due {
            self.last_probe = Some(now);
        }
        due
    }

    /// This member's rejoin was applied: the primary view is delivered.
    pub fn rejoined(&mut self) {
        self.phase = Phase::Primary;
    }

    /// The member stood still (see `standstill`) or is cut off (see
    /// `cut_off`): non-primary now, and it asks for a primary view once a
    /// leader speaks.
    pub fn fell_behind(&mut self) {
        self.phase = Phase::NonPrimary { asked: None };
    }

    /// The Raft leader as this member knows it now. A rejoin asked of
    /// another is asked again of a new one at once, not after
    /// `ASK_AGAIN`: a member paused while it led asks itself first, and
    /// that entry goes with its term when the new leader's word deposes
    /// it, with never a turn without a leader between them.
    pub fn note_leader(&mut self, leader: u64) {
        if std::mem::replace(&mut self.leader, leader) != leader && matches!(self.phase, Phase::NonPrimary { asked: Some(_) }) {
            self.phase = Phase::NonPrimary { asked: None };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(5);

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn only_a_non_primary_member_probes_and_once_a_second() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        assert!(!q.probe_due(t0));
        q.observe(Seen::None, t0, GRACE);
        q.observe(Seen::None, at(t0, 5000), GRACE);
        assert!(q.probe_due(at(t0, 5000)));
        assert!(!q.probe_due(at(t0, 5500)));
        assert!(q.probe_due(at(t0, 6000)));
        q.rejoined();
        assert!(!q.probe_due(at(t0, 9000)));
    }

    #[test]
    fn an_election_shorter_than_the_grace_is_not_a_loss() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        assert_eq!(q.observe(Seen::None, t0, GRACE), None);
        assert_eq!(q.observe(Seen::None, at(t0, 4700), GRACE), None);
        assert_eq!(q.observe(Seen::Me, at(t0, 4750), GRACE), None);
        assert_eq!(q.observe(Seen::None, at(t0, 4800), GRACE), None);
        assert_eq!(q.observe(Seen::None, at(t0, 8500), GRACE), None);
        assert!(q.is_primary());
    }

    #[test]
    fn a_followers_grace_counts_from_its_leaders_last_word_and_ends_before_the_eviction() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        assert_eq!(q.observe(Seen::Other(t0), at(t0, 1000), GRACE), None);
        assert_eq!(q.observe(Seen::None, at(t0, 1050), GRACE), None);
        assert_eq!(q.observe(Seen::None, at(t0, 4750), GRACE), None);
        let lost = GRACE - Quorum::BEFORE_EVICTION;
        assert_eq!(q.observe(Seen::None, t0 + lost, GRACE), Some(Change::Lost), "the others evict it at {:?}", GRACE);
    }

    #[test]
    fn a_leaders_grace_counts_from_its_stepping_down() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        q.observe(Seen::Other(t0), t0, GRACE);
        q.observe(Seen::Me, at(t0, 60_000), GRACE);
        assert_eq!(q.observe(Seen::None, at(t0, 61_000), GRACE), None, "not from a former leader's word");
        assert_eq!(q.observe(Seen::None, at(t0, 61_000) + Quorum::grace(GRACE), GRACE), Some(Change::Lost));
    }

    #[test]
    fn the_side_window_leaves_out_what_went_silent_with_the_leader() {
        for suspect in [Duration::from_millis(100), Duration::from_secs(5), Duration::from_secs(10)] {
            let (grace, window) = (Quorum::grace(suspect), Quorum::side_window(suspect));
            assert!(window < grace && window >= LEADER_SILENT, "{:?}: {:?} {:?}", suspect, window, grace);
        }
    }

    #[test]
    fn no_leader_past_the_grace_is_non_primary_until_the_rejoin_is_applied() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        q.observe(Seen::None, t0, GRACE);
        assert_eq!(q.observe(Seen::None, at(t0, 5000), GRACE), Some(Change::Lost));
        assert!(!q.is_primary());
        assert_eq!(q.observe(Seen::None, at(t0, 9000), GRACE), None);
        assert_eq!(q.observe(Seen::Me, at(t0, 9050), GRACE), Some(Change::AskRejoin));
        assert_eq!(q.observe(Seen::Me, at(t0, 9100), GRACE), None, "asked once per leader");
        assert!(!q.is_primary());
        q.rejoined();
        assert!(q.is_primary());
    }

    #[test]
    fn a_rejoin_is_asked_again_of_a_new_leader_at_once() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        q.note_leader(1);
        q.fell_behind();
        assert_eq!(q.observe(Seen::Me, at(t0, 10), GRACE), Some(Change::AskRejoin));
        q.note_leader(1);
        assert_eq!(q.observe(Seen::Me, at(t0, 20), GRACE), None);
        q.note_leader(2);
        assert_eq!(q.observe(Seen::Other(at(t0, 30)), at(t0, 30), GRACE), Some(Change::AskRejoin));
        assert_eq!(q.observe(Seen::Other(at(t0, 40)), at(t0, 40), GRACE), None);
    }

    #[test]
    fn a_rejoin_not_applied_in_time_is_asked_again() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        q.observe(Seen::None, t0, GRACE);
        assert_eq!(q.observe(Seen::None, at(t0, 5000), GRACE), Some(Change::Lost));
        assert_eq!(q.observe(Seen::Me, at(t0, 6000), GRACE), Some(Change::AskRejoin));
        assert_eq!(q.observe(Seen::Me, at(t0, 10_950), GRACE), None);
        assert_eq!(q.observe(Seen::Me, at(t0, 11_000), GRACE), Some(Change::AskRejoin), "the first was lost");
        assert_eq!(q.observe(Seen::Me, at(t0, 11_050), GRACE), None);
    }

    #[test]
    fn a_leader_lost_before_the_rejoin_applied_means_asking_again() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        q.observe(Seen::None, t0, GRACE);
        q.observe(Seen::None, at(t0, 6000), GRACE);
        assert_eq!(q.observe(Seen::Me, at(t0, 7000), GRACE), Some(Change::AskRejoin));
        assert_eq!(q.observe(Seen::None, at(t0, 7050), GRACE), None);
        assert_eq!(q.observe(Seen::Me, at(t0, 8000), GRACE), Some(Change::AskRejoin));
    }

    #[test]
    fn ignore_sb_covers_a_split_and_ignore_quorum_any() {
        let sb = Policy { ignore_sb: true, ..Policy::default() };
        assert!(sb.forces_primary(Standing::Split));
        assert!(!sb.forces_primary(Standing::Minority) && !Policy::default().forces_primary(Standing::Split));
        assert!(Policy { ignore_quorum: true, ..Policy::default() }.forces_primary(Standing::Minority));
    }

    #[test]
    fn the_grace_never_drops_below_an_election() {
        let (mut q, t0) = (Quorum::default(), Instant::now());
        q.observe(Seen::None, t0, Duration::from_millis(100));
        assert_eq!(q.observe(Seen::None, at(t0, 1000), Duration::from_millis(100)), None);
        assert_eq!(q.observe(Seen::None, at(t0, 2000), Duration::from_millis(100)), Some(Change::Lost));
    }
}
