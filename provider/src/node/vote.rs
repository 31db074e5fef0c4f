//! This node's side of the consistency vote (the tally is in
//! `group::vote`). A seqno this node fails to apply is voted on with the
//! digest of its error; a seqno another member failed is voted on with
//! success once this node has applied it. Either way the voter waits for
//! the group's result, as Galera's does: the failing applier holds its
//! commit-order slot meanwhile, so nothing after it commits on a node that
//! may be about to leave.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::applier::Item;
use super::Shared;
use crate::group::vote::{digest, SUCCESS};
use crate::group::MemberState;
use crate::gtid::{Gtid, Seqno, SEQNO_UNDEFINED};
use crate::log;

/// How this node's vote compares with the group's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Consensus {
    /// The group decided as this node did: it goes on.
    Agree,
    /// It decided otherwise: this node is inconsistent and leaves.
    Disagree,
    /// No result (the node left or lost the group meanwhile, or it does
    /// not take part in votes): assume the worst, as Galera does.
    Unknown,
    /// This node voted on the seqno already.
    Already,
}

#[derive(Default)]
pub(super) struct Ballots {
    state: Mutex<BallotState>,
    cv: Condvar,
}

#[derive(Default)]
struct BallotState {
    /// The highest seqno this node voted on: it votes once per seqno, and
    /// in order.
    last: Seqno,
    /// Its votes waiting for a result: seqno -> (its vote, the result).
    waiting: BTreeMap<Seqno, (u64, Option<u64>)>,
}

impl Ballots {
    fn lock(&self) -> MutexGuard<'_, BallotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether this node voted on `seqno` (or a later one) already.
    pub fn voted_on(&self, seqno: Seqno) -> bool {
        self.lock().last >= seqno
    }

    /// Records this node's vote; false if it voted on `seqno` already.
    fn begin(&self, seqno: Seqno, code: u64) -> bool {
        let mut s = self.lock();
        if s.last >= seqno {
            return false;
        }
        s.last = seqno;
        s.waiting.insert(seqno, (code, None));
        true
    }

    pub fn decided(&self, seqno: Seqno, result: u64) {
        if let Some(w) = self.lock().waiting.get_mut(&seqno) {
            w.1 = Some(result);
        }
        self.cv.notify_all();
    }

    /// Waits for the result of this node's vote on `seqno`: (its vote, the
    /// result), or None once `gone` says the group is gone.
    fn wait(&self, seqno: Seqno, gone: impl Fn() -> bool) -> Option<(u64, u64)> {
        /// How often the wait looks at `gone`.
        const LOOK: Duration = Duration::from_millis(100);
        let mut s = self.lock();
        loop {
            match s.waiting.get(&seqno).copied() {
                Some((mine, Some(result))) => {
                    s.waiting.remove(&seqno);
                    return Some((mine, result));
                }
                None => return None,
                Some((_, None)) if gone() => {
                    s.waiting.remove(&seqno);
                    return None;
                }
                Some((_, None)) => s = self.cv.wait_timeout(s, LOOK).unwrap_or_else(|e| e.into_inner()).0,
            }
        }
    }

    /// A new connection votes from scratch.
    pub fn reset(&self) {
        *self.lock() = BallotState::default();
        self.cv.notify_all();
    }
}

impl Shared {
    /// Votes on `seqno`, `error` for a failure (the server's message) or
    /// None for success, and waits for the group's result.
    pub(super) fn vote(&self, seqno: Seqno, error: Option<&[u8]>) -> Consensus {
        let gtid = Gtid::new(self.history(), seqno);
        let holds_state = matches!(self.status().member, Some(MemberState::Synced | MemberState::Joined | MemberState::Donor));
        let Some(group) = self.group().filter(|_| holds_state) else {
            log::error!("Failed on {} outside of a primary component with the state: no vote, assuming inconsistency", gtid);
            return Consensus::Unknown;
        };
        let code = error.map_or(SUCCESS, |e| digest(gtid.uuid, seqno, e));
        if !self.ballots.begin(seqno, code) {
            return Consensus::Already;
        }
        let message = error.map_or(String::new(), |e| String::from_utf8_lossy(e).into_owned());
        let policy = self.setting(|s| s.vote_policy);
        if let Err(e) = group.vote(seqno, code, policy, &message) {
            log::error!("Could not vote on {}: {}", gtid, e);
        }
        // A non-primary view ends the wait too: the vote may never be
        // ordered (Galera ends it on any configuration change that is not
        // the vote's group).
        let gone = || {
            let (closed, primary) = {
                let st = self.status();
                (st.closed, st.member.is_some())
            };
            closed || !primary || self.group().is_none()
        };
        let Some((mine, result)) = self.ballots.wait(seqno, gone) else {
            log::error!("Could not reach consensus on {}: this node left the primary component meanwhile; assuming inconsistency", gtid);
            return Consensus::Unknown;
        };
        if mine == result {
            log::info!("Vote {:x} on {} is consistent with the group. Continue.", mine, gtid);
            Consensus::Agree
        } else {
            Consensus::Disagree
        }
    }

    /// This node failed `seqno` with `error`: unless the group's vote
    /// says the others failed it alike, this node is inconsistent (see
    /// `applier::inconsistent`).
    pub(super) fn apply_error(&self, seqno: Seqno, error: &[u8]) {
        if matches!(self.vote(seqno, Some(error)), Consensus::Disagree | Consensus::Unknown) {
            self.note_apply_failure(seqno);
        }
    }

    /// The group's result on `seqno`.
    pub(super) fn on_vote_result(&self, seqno: Seqno, result: u64) {
        log::info!("Votes over {}: winner {:x}", Gtid::new(self.history(), seqno), result);
        self.ballots.decided(seqno, result);
    }

    /// A member's vote, as Galera logs it.
    pub(super) fn on_vote(&self, member: crate::gtid::Uuid, seqno: Seqno, code: u64, message: &str) {
        let gtid = Gtid::new(self.history(), seqno);
        match code {
            SUCCESS => log::info!("Member {} responds to vote on {},0: Success", member, gtid),
            _ => log::info!("Member {} initiates vote on {},{:x}: {}", member, gtid, code, message),
        }
    }

    /// Another member failed `seqno`: an applier votes once this node has
    /// applied it (behind it in delivery order: see `answer_vote`).
    pub(super) fn on_vote_request(&self, seqno: Seqno) {
        if !self.in_view.load(Ordering::SeqCst) {
            return; // a joiner's replay: its state comes by transfer
        }
        if !self.queue.push(Item::Vote(seqno)) {
            log::warning!("vote request on seqno {} while closing", seqno);
        }
    }

    /// An applier's turn to answer a vote request: once `seqno` has
    /// committed here, vote success on it, unless this node voted on it
    /// already (it failed it too) or is leaving anyway.
    pub(super) fn answer_vote(&self, seqno: Seqno) {
        if self.ballots.voted_on(seqno) {
            return; // before waiting: its own vote holds the seqno's slot
        }
        self.apply.wait_left(seqno, None);
        if self.apply_failed.load(Ordering::SeqCst) != SEQNO_UNDEFINED || self.ballots.voted_on(seqno) {
            return;
        }
        let gtid = Gtid::new(self.history(), seqno);
        match self.vote(seqno, None) {
            Consensus::Agree | Consensus::Already => {}
            Consensus::Disagree | Consensus::Unknown => {
                log::error!("Vote 0 (success) on {} is inconsistent with group. Leaving cluster.", gtid);
                self.note_apply_failure(seqno);
                self.leave_inconsistent();
            }
        }
    }
}
