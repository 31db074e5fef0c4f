//! Where a member is in its life in the group, and the moves it may make.
//!
//! The phase used to be three fields (`joining`, `leaving`, `halted`) that
//! any handler could set, so nothing said which combinations made sense: a
//! leave that had finished could still be followed by a rejoin, a halted
//! member could rejoin and apply again. Every change now goes through
//! `Members::enter`, which checks it against `allowed`.

use super::joining::{Joining, Leaving};

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
