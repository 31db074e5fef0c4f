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

use liveness::Liveness;
use quorum::Policy;

/// What the primary room holds for the driver.
pub(crate) struct Primary {
    /// Failure detection; the leader acts on it.
    pub(in crate::group) liveness: Liveness,
    pub(in crate::group) was_leader: bool,
    /// The last member heard speaking as a leader (an append, heartbeat
    /// or snapshot), and when: a member that never campaigns (a learner,
    /// an arbitrator) keeps naming a leader that stepped down, and still
    /// hears from it (its vote requests), so plain liveness would not do.
    pub(in crate::group) leader_contact: Option<(u64, Instant)>,
    /// The other members' latest words on their leader (see `cut_off`).
    pub(in crate::group) leader_words: cut_off::LeaderWords,
    pub(in crate::group) policy: Policy,
    /// When this member last proposed its weight.
    pub(in crate::group) weight_asked: Option<Instant>,
    pub(in crate::group) standstill: standstill::Standstill,
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
