//! Where a member is in its life in the group, and the moves it may make.
//!
//! The phase used to be three fields (`joining`, `leaving`, `halted`) that
//! any handler could set, so nothing said which combinations made sense: a
//! leave that had finished could still be followed by a rejoin, a halted
//! member could rejoin and apply again. Every change now goes through
//! `Driver::enter`, which checks it against `allowed`.

use crate::group::shell::driver::Driver;
use super::joining::{Joining, Leaving};
use crate::log;

pub(crate) enum Phase {
    /// Asking the members at the known addresses to take it in, until the
    /// group's member list holds it.
    Joining(Joining),
    /// In the group's member list, or bootstrapping it; primary or not is
    /// the incarnation's quorum.
    Member,
    /// Asked to leave: steps until the group removed it, it is alone, or
    /// the wait ran out.
    Leaving(Leaving),
    /// The leave's caller was answered; the driver waits to be stopped.
    Left,
    /// A committed entry could not be applied, or seqnos broke their
    /// sequence: nothing more is applied, the node is told to leave.
    Halted,
}

impl Phase {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Phase::Joining(_) => "joining",
            Phase::Member => "member",
            Phase::Leaving(_) => "leaving",
            Phase::Left => "left",
            Phase::Halted => "halted",
        }
    }
}

/// The moves a member may make. A rejoin may restart a join (the group
/// removed the joiner's old self while it replayed the log); a halted
/// member may only leave; a member that left goes nowhere.
pub(crate) fn allowed(from: &Phase, to: &Phase) -> bool {
    use Phase::*;
    matches!(
        (from, to),
        (Joining(_), Joining(_) | Member | Leaving(_) | Halted)
            | (Member, Joining(_) | Leaving(_) | Halted)
            | (Leaving(_), Left | Halted)
            | (Halted, Leaving(_))
            | (Left, Halted)
    )
}

impl Driver {
    /// Moves to `next`. A move `allowed` does not list is a bug: it fails
    /// a debug build's test at once; elsewhere the member logs it and
    /// halts, so that its node leaves the cluster cleanly rather than go on
    /// in a state nobody designed (and the simulator, built for release,
    /// fails the run of a member that halted).
    pub(in crate::group) fn enter(&mut self, next: Phase) {
        if allowed(&self.members.phase, &next) {
            self.members.phase = next;
            return;
        }
        let what = format!("group member {}: no move from {} to {}", self.me.id, self.members.phase.name(), next.name());
        debug_assert!(false, "{}", what);
        log::error!("{}; this node leaves the cluster", what);
        self.stop_applying(self.applying);
    }

    /// Whether committed entries are still applied: not after the log
    /// removed this member (evicted: it rejoins; left: it is done), nor
    /// once it halted. The group numbers what follows a removal for the
    /// members only, so a member that went on would see its seqnos jump.
    pub(in crate::group) fn applies(&self) -> bool {
        self.members.removed_at.is_none() && !matches!(self.members.phase, Phase::Halted | Phase::Left)
    }

    pub(in crate::group) fn is_halted(&self) -> bool {
        matches!(self.members.phase, Phase::Halted)
    }

    pub(in crate::group) fn is_leaving_or_left(&self) -> bool {
        matches!(self.members.phase, Phase::Leaving(_) | Phase::Left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn all() -> Vec<Phase> {
        let now = Instant::now();
        let (reply, _) = std::sync::mpsc::channel();
        vec![Phase::Joining(Joining::new(vec![], now)), Phase::Member, Phase::Leaving(Leaving::new(reply, now)), Phase::Left, Phase::Halted]
    }

    #[test]
    fn a_member_that_left_or_halted_never_applies_again() {
        for to in all() {
            assert!(!allowed(&Phase::Left, &to) || matches!(to, Phase::Halted), "left -> {}", to.name());
            assert!(!allowed(&Phase::Halted, &to) || matches!(to, Phase::Leaving(_)), "halted -> {}", to.name());
        }
    }

    #[test]
    fn every_phase_can_halt_once_and_every_live_one_can_leave() {
        for from in all() {
            assert!(allowed(&from, &Phase::Halted) || matches!(from, Phase::Halted), "{} -> halted", from.name());
        }
        let (reply, _) = std::sync::mpsc::channel();
        let leaving = Phase::Leaving(Leaving::new(reply, Instant::now()));
        for from in all() {
            let live = matches!(from, Phase::Joining(_) | Phase::Member | Phase::Halted);
            assert_eq!(allowed(&from, &leaving), live, "{} -> leaving", from.name());
        }
    }
}
