//! The consistency vote (Galera 4's, contract §4.6): a member that fails to
//! apply a writeset or a TOI votes with a digest of its error; the other
//! members that hold the state answer once they have applied that seqno,
//! with success (0) or their own digest. Votes travel in the Raft log, so
//! every member tallies the same votes in the same order and reaches the
//! same result. A member whose vote differs from the result is
//! inconsistent and leaves; the others go on. Deterministic: no clocks,
//! threads or I/O.

use std::collections::{BTreeMap, VecDeque};

use crate::gtid::{Seqno, Uuid};

/// The vote of a member that applied the seqno.
pub const SUCCESS: u64 = 0;

/// Results kept for this member's own late votes (see `Votes::unanswered`).
/// A member votes once on each seqno it fails or is asked about, in order,
/// so only the few latest can still be waiting for it.
const UNANSWERED: usize = 64;

/// What a vote entry or a membership change leads to on this member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tally {
    /// Another member failed `seqno`: this one must vote on it, once it
    /// has applied it.
    Request(Seqno),
    /// The group's result for `seqno`: the winning vote.
    Decided { seqno: Seqno, result: u64 },
    /// This member's own vote on `seqno` came when the group had moved
    /// on (it is behind, or does not hold the state): its answer.
    Answer { seqno: Seqno, result: u64 },
}

/// The votes of the current primary component.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Votes {
    /// The last seqno decided and its result.
    decided: (Seqno, u64),
    /// The highest seqno members were asked to vote on.
    requested: Seqno,
    /// `gcs.vote_policy` of the vote in progress: the initiator's, so that
    /// every member decides by the same rule whatever its own setting.
    policy: u8,
    /// Each member's latest vote: (seqno, digest or SUCCESS).
    cast: BTreeMap<Uuid, (Seqno, u64)>,
    /// Results decided before this member voted on them: it is behind
    /// the others, and its own vote, when it comes, gets this answer.
    unanswered: VecDeque<(Seqno, u64)>,
}

impl Votes {
    /// A vote is under way: some member voted on a seqno not decided yet.
    pub fn open(&self) -> bool {
        self.cast.values().any(|&(s, _)| s > self.decided.0)
    }

    /// A snapshot holds no vote under way (see `GroupState::may_snapshot`),
    /// only what tells a later vote from an outdated one:
    /// `decided seqno i64 | result u64 | requested i64`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        assert!(!self.open(), "a snapshot during a vote");
        out.extend_from_slice(&self.decided.0.to_le_bytes());
        out.extend_from_slice(&self.decided.1.to_le_bytes());
        out.extend_from_slice(&self.requested.to_le_bytes());
    }

    pub fn decode(r: &mut crate::wire::Reader<'_>) -> Result<Votes, crate::wire::WireError> {
        let decided = (r.u64()? as Seqno, r.u64()?);
        Ok(Votes { decided, requested: r.u64()? as Seqno, ..Votes::default() })
    }

    /// `member` votes `code` on `seqno`. `counted`: the members whose
    /// votes count (they hold the state); `me`: this member.
    pub fn cast(&mut self, (member, seqno, code, policy): (Uuid, Seqno, u64, u8), counted: &[Uuid], me: Uuid) -> Vec<Tally> {
        if !counted.contains(&member) {
            // It does not hold the state (a joiner): its vote does not
            // count, and it is alone in failing.
            return if member == me { vec![Tally::Answer { seqno, result: SUCCESS }] } else { vec![] };
        }
        if seqno <= self.decided.0 {
            // Only this member's own late vote needs an answer: the result
            // it missed, or success if the group never voted on it (then
            // this member alone failed it, and its vote says so).
            if member != me {
                return vec![];
            }
            let at = self.unanswered.iter().position(|&(s, _)| s == seqno);
            let result = at.and_then(|i| self.unanswered.remove(i)).map_or(SUCCESS, |(_, r)| r);
            return vec![Tally::Answer { seqno, result }];
        }
        if !self.open() {
            self.policy = policy;
        }
        self.cast.insert(member, (seqno, code));
        let mut out = self.recount(counted, me);
        if out.is_empty() && seqno > self.requested {
            self.requested = seqno;
            // A member without the state (a joiner replaying the log)
            // has nothing to vote with.
            if member != me && counted.contains(&me) {
                out.push(Tally::Request(seqno));
            }
        }
        out
    }

    /// The members that count changed (one left, or stopped holding the
    /// state): the votes still missing may no longer be needed.
    ///
    /// A member that came to hold the state during a vote counts from
    /// now on: it is asked too, or the vote would wait for it forever.
    pub fn members_changed(&mut self, counted: &[Uuid], me: Uuid) -> Vec<Tally> {
        self.cast.retain(|m, _| counted.contains(m));
        let mut out = self.recount(counted, me);
        let voting = self.cast.values().map(|&(s, _)| s).filter(|&s| s > self.decided.0).min();
        if let Some(s) = voting.filter(|&s| counted.contains(&me) && self.cast.get(&me).is_none_or(|&(v, _)| v < s)) {
            out.push(Tally::Request(s));
        }
        out
    }

    /// Decides every seqno whose result the missing votes can no longer
    /// change, lowest first.
    fn recount(&mut self, counted: &[Uuid], me: Uuid) -> Vec<Tally> {
        let mut out = vec![];
        loop {
            let votes: Vec<(Seqno, u64)> = counted.iter().filter_map(|m| self.cast.get(m).copied()).collect();
            let Some(voting) = votes.iter().map(|&(s, _)| s).filter(|&s| s > self.decided.0).min() else { break };
            let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
            for &(s, code) in votes.iter().filter(|&&(s, _)| s >= voting) {
                // A vote on a later seqno means this one applied.
                *counts.entry(if s == voting { code } else { SUCCESS }).or_default() += 1;
            }
            let missing = counted.len() - counts.values().sum::<usize>();
            let Some(result) = decide(&counts, missing, self.policy) else { break };
            self.decided = (voting, result);
            if self.cast.get(&me).is_none_or(|&(s, _)| s < voting) {
                if self.unanswered.len() == UNANSWERED {
                    self.unanswered.pop_front();
                }
                self.unanswered.push_back((voting, result));
            }
            out.push(Tally::Decided { seqno: voting, result });
        }
        out
    }
}

/// Whether `a`, with `na` votes, wins over `b` with `nb`: more votes win;
/// on a tie success wins, then the larger digest (any fixed order would
/// do: every member must pick the same).
fn beats((a, na): (u64, usize), (b, nb): (u64, usize)) -> bool {
    na > nb || (na == nb && a != b && (a == SUCCESS || (b != SUCCESS && a > b)))
}

/// The result, once the `missing` votes cannot change it. With
/// `policy` N > 0, N successes win outright (Galera's `gcs.vote_policy`);
/// otherwise, or once N can no longer be reached, the vote with the most
/// votes wins.
fn decide(counts: &BTreeMap<u64, usize>, missing: usize, policy: u8) -> Option<u64> {
    let successes = counts.get(&SUCCESS).copied().unwrap_or(0);
    if policy > 0 {
        if successes >= usize::from(policy) {
            return Some(SUCCESS);
        }
        if successes + missing >= usize::from(policy) {
            return None;
        }
    }
    let leader = counts.iter().map(|(&v, &n)| (v, n)).fold((SUCCESS, successes), |best, c| if beats(c, best) { c } else { best });
    // A challenger gets every missing vote: success, a digest already
    // cast, or a digest nobody cast yet (which may sort above the leader).
    let mut challengers: Vec<(u64, usize)> = counts.iter().map(|(&v, &n)| (v, n + missing)).collect();
    challengers.push((SUCCESS, successes + missing));
    challengers.push((u64::MAX, missing));
    let contested = challengers.into_iter().any(|c| c.0 != leader.0 && beats(c, leader));
    (!contested).then_some(leader.0)
}

/// The digest a member votes with when it fails `seqno` with `error`: the
/// same failure gives the same digest on every member. Never SUCCESS.
pub fn digest(history: Uuid, seqno: Seqno, error: &[u8]) -> u64 {
    let head = crc32c::crc32c_append(crc32c::crc32c(&history.0), &seqno.to_le_bytes());
    let lo = crc32c::crc32c_append(head, error);
    let hi = crc32c::crc32c_append(!head, error);
    (u64::from(hi) << 32 | u64::from(lo)) | 1 << 63
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: u8) -> Vec<Uuid> {
        (1..=n).map(|i| Uuid([i; 16])).collect()
    }

    #[test]
    fn the_member_that_failed_alone_loses_and_is_told_so() {
        let m = ids(3);
        let mut v = Votes::default();
        let bad = digest(Uuid([9; 16]), 5, b"Can't find record");
        assert_eq!(v.cast((m[2], 5, bad, 0), &m, m[0]), vec![Tally::Request(5)], "the others are asked");
        assert!(v.open());
        assert_eq!(v.cast((m[0], 5, SUCCESS, 0), &m, m[0]), vec![], "1 against 1, one missing");
        assert_eq!(v.cast((m[1], 5, SUCCESS, 0), &m, m[0]), vec![Tally::Decided { seqno: 5, result: SUCCESS }]);
        assert!(!v.open());
    }

    #[test]
    fn the_same_failure_everywhere_is_consistent() {
        let m = ids(3);
        let mut v = Votes::default();
        let bad = digest(Uuid([9; 16]), 5, b"Table 't1' already exists");
        // Seen from the third member, which is behind the other two.
        assert_eq!(v.cast((m[0], 5, bad, 0), &m, m[2]), vec![Tally::Request(5)]);
        assert_eq!(v.cast((m[1], 5, bad, 0), &m, m[2]), vec![Tally::Decided { seqno: 5, result: bad }], "2 of 3: the third cannot change it");
        // Its success vote comes after the result: it hears the result.
        assert_eq!(v.cast((m[2], 5, SUCCESS, 0), &m, m[2]), vec![Tally::Answer { seqno: 5, result: bad }]);
    }

    #[test]
    fn a_member_without_the_state_does_not_count() {
        let m = ids(3);
        let mut v = Votes::default();
        assert_eq!(v.cast((m[2], 5, 1 << 63 | 1, 0), &m[..2], m[0]), vec![]);
        assert!(!v.open(), "nothing to wait for");
        assert_eq!(v.cast((m[2], 5, 1 << 63 | 1, 0), &m[..2], m[2]), vec![Tally::Answer { seqno: 5, result: SUCCESS }], "it hears that it is alone");
        assert_eq!(v.cast((m[0], 6, 1 << 63 | 1, 0), &m[..2], m[2]), vec![], "nor is it asked to vote");
    }

    #[test]
    fn two_members_split_goes_to_success() {
        let m = ids(2);
        let mut v = Votes::default();
        v.cast((m[1], 7, 1 << 63 | 3, 0), &m, m[0]);
        assert_eq!(v.cast((m[0], 7, SUCCESS, 0), &m, m[0]), vec![Tally::Decided { seqno: 7, result: SUCCESS }]);
    }

    #[test]
    fn a_member_that_leaves_no_longer_holds_the_vote() {
        let m = ids(3);
        let mut v = Votes::default();
        v.cast((m[2], 5, 1 << 63 | 1, 0), &m, m[0]);
        v.cast((m[0], 5, SUCCESS, 0), &m, m[0]);
        assert_eq!(v.members_changed(&m[..2], m[0]), vec![Tally::Decided { seqno: 5, result: SUCCESS }], "m3 failed and left, success has m1");
    }

    #[test]
    fn a_member_that_comes_to_hold_the_state_during_a_vote_is_asked() {
        let m = ids(3);
        let mut v = Votes::default();
        v.cast((m[0], 5, 1 << 63 | 1, 0), &m[..2], m[2]);
        assert_eq!(v.members_changed(&m, m[2]), vec![Tally::Request(5)], "m3 joined: it counts, so it votes");
        assert_eq!(v.members_changed(&m, m[1]), vec![Tally::Request(5)]);
        v.cast((m[1], 5, SUCCESS, 0), &m, m[1]);
        assert_eq!(v.members_changed(&m, m[1]), vec![], "voted already");
    }

    #[test]
    fn a_policy_lets_a_minority_of_successes_win() {
        let m = ids(5);
        let mut v = Votes::default();
        let bad = 1 << 63 | 8;
        for i in 0..3 {
            v.cast((m[i], 4, bad, 1), &m, m[0]);
        }
        assert_eq!(v.cast((m[3], 4, SUCCESS, 1), &m, m[0]), vec![Tally::Decided { seqno: 4, result: SUCCESS }], "policy 1: one success is enough");
    }

    #[test]
    fn a_late_vote_on_a_seqno_nobody_else_voted_on_hears_success() {
        let m = ids(3);
        let mut v = Votes::default();
        v.cast((m[1], 9, 1 << 63 | 2, 0), &m, m[0]);
        v.cast((m[0], 9, SUCCESS, 0), &m, m[0]);
        v.cast((m[2], 9, SUCCESS, 0), &m, m[0]);
        assert_eq!(v.cast((m[0], 3, 1 << 63 | 5, 0), &m, m[0]), vec![Tally::Answer { seqno: 3, result: SUCCESS }]);
        assert_eq!(v.cast((m[1], 3, 1 << 63 | 5, 0), &m, m[0]), vec![], "another member's outdated vote");
    }

    #[test]
    fn the_result_waits_while_missing_votes_could_change_it() {
        let counts = BTreeMap::from([(1 << 63 | 1, 2)]);
        assert_eq!(decide(&counts, 2, 0), None, "two successes would tie, and success wins ties");
        assert_eq!(decide(&counts, 1, 0), Some(1 << 63 | 1));
        let split = BTreeMap::from([(1 << 63 | 1, 1), (1 << 63 | 2, 1)]);
        assert_eq!(decide(&split, 0, 0), Some(1 << 63 | 2), "the larger digest wins a tie, on every member");
    }

    #[test]
    fn digests_depend_on_the_error_and_are_never_success() {
        let h = Uuid([1; 16]);
        assert_eq!(digest(h, 5, b"e"), digest(h, 5, b"e"));
        assert_ne!(digest(h, 5, b"e"), digest(h, 5, b"f"));
        assert_ne!(digest(h, 5, b""), SUCCESS);
    }
}
