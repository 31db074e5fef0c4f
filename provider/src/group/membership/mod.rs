//! Who is in the group: joining and leaving (`joining`), where a member
//! is in its life (`phase`), the restarted members of the last primary
//! component (`recovery`), where the leader should be (`placement`) and
//! the log an arbitrator keeps for the data members (`arbitrator_hold`).

pub mod arbitrator_hold;
pub mod joining;
pub mod phase;
pub mod placement;
pub mod recovery;

use std::collections::VecDeque;
use std::time::Instant;

use crate::gtid::{Seqno, Uuid};
use phase::Phase;
use recovery::{Previous, Recovery};

/// How many removed members are remembered, to tell one that comes back
/// (a resumed SIGSTOP) that it is out.
const REMEMBER_REMOVED: usize = 64;

/// What the membership room holds for the driver.
pub(crate) struct Members {
    pub(in crate::group) bootstrap: Option<(Uuid, Seqno)>,
    /// Joining, member, leaving ... (see `phase`).
    pub(in crate::group) phase: Phase,
    /// A member's state or the configuration changed in this turn's
    /// entries: a learner may be ready for promotion, or this member's
    /// held SYNC for release, now rather than at the next tick.
    pub(in crate::group) members_moved: bool,
    /// A member told us the group removed us.
    pub(in crate::group) removed: bool,
    /// The member this node was before it was killed (told when joining).
    pub(in crate::group) previous: Option<Previous>,
    /// Restarted members of our last primary component, while joining.
    pub(in crate::group) recovery: Option<Recovery>,
    /// Where this node first joined (`wsrep_cluster_address`): where it
    /// looks for the group again when it knows no member's address.
    pub(in crate::group) last_peers: Vec<String>,
    /// Members this node saw removed (raft id, uuid, log index of the
    /// removal, 0 when a reform left them out), newest last.
    pub(in crate::group) removed_members: VecDeque<(u64, Uuid, u64)>,
    /// A member removed and joining again replays the log of its previous
    /// incarnation up to its removal at this index: what those entries say
    /// of it is history, not its new join (see `drop_stale`).
    pub(in crate::group) stale_until: u64,
    /// What this member's previous incarnation knew committed, or its
    /// removal if later (0: never removed): the raft node answers vote
    /// requests only once its log reaches it (see `step::admit`).
    pub(in crate::group) vote_floor: u64,
    /// The log removed this member (evicted) at this index while it
    /// was still receiving entries: it applies nothing after (it is not
    /// numbered past its removal like the members are) and rejoins once
    /// the current `Ready` is done.
    pub(in crate::group) removed_at: Option<u64>,
    /// Where the leader should be (see `placement`).
    pub(in crate::group) placement: placement::Placement,
    pub(in crate::group) arbitrator_hold: arbitrator_hold::ArbitratorHold,
}

impl Members {
    pub(in crate::group) fn new(bootstrap: Option<(Uuid, Seqno)>, joining: Option<joining::Joining>, last_peers: Vec<String>, previous: Option<Previous>, now: Instant) -> Members {
        Members {
            bootstrap,
            phase: joining.map_or(Phase::Member, Phase::Joining),
            members_moved: false,
            removed: false,
            recovery: previous.clone().filter(|_| bootstrap.is_none()).map(Recovery::new),
            previous,
            last_peers,
            removed_members: Default::default(),
            stale_until: 0,
            vote_floor: 0,
            removed_at: None,
            placement: placement::Placement::new(now),
            arbitrator_hold: Default::default(),
        }
    }
}

impl Members {
    /// Moves to phase `next` if `phase::allowed`; otherwise says why (the
    /// driver then stops applying).
    pub(in crate::group) fn enter(&mut self, next: Phase, me: Uuid) -> Result<(), String> {
        if phase::allowed(&self.phase, &next) {
            self.phase = next;
            return Ok(());
        }
        Err(format!("group member {}: no move from {} to {}", me, self.phase.name(), next.name()))
    }

    /// Halted from any other phase (see `phase::allowed`); false if it was.
    pub(in crate::group) fn halt(&mut self) -> bool {
        if self.is_halted() {
            return false;
        }
        self.phase = Phase::Halted;
        true
    }

    /// Whether committed entries are still applied: not after the log
    /// removed this member (evicted: it rejoins; left: it is done), nor
    /// once it halted. The group numbers what follows a removal for the
    /// members only, so a member that went on would see its seqnos jump.
    pub(in crate::group) fn applies(&self) -> bool {
        self.removed_at.is_none() && !matches!(self.phase, Phase::Halted | Phase::Left)
    }

    pub(in crate::group) fn is_joining(&self) -> bool {
        matches!(self.phase, Phase::Joining(_))
    }

    pub(in crate::group) fn is_halted(&self) -> bool {
        matches!(self.phase, Phase::Halted)
    }

    pub(in crate::group) fn is_leaving_or_left(&self) -> bool {
        matches!(self.phase, Phase::Leaving(_) | Phase::Left)
    }

    pub(in crate::group) fn remember_removed(&mut self, member: Uuid, index: u64) {
        if self.removed_members.len() >= REMEMBER_REMOVED {
            self.removed_members.pop_front();
        }
        self.removed_members.push_back((member.raft_id(), member, index));
    }

    /// The member raft id `id` was when this node saw it removed, and the
    /// removal's log index.
    pub(in crate::group) fn removed_as(&self, id: u64) -> Option<(Uuid, u64)> {
        self.removed_members.iter().rev().find(|(r, ..)| *r == id).map(|(_, uuid, index)| (*uuid, *index))
    }
}
