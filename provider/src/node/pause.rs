//! pause/resume (FTWRL, RSU) and desync/resync (contract §10).

use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::saved_state::Position;
use super::types::Status;
use super::Shared;
use crate::group::Transition;
use crate::gtid::{Seqno, SEQNO_UNDEFINED};
use crate::log;

/// Holds back every ordered seqno above the pause point: appliers, local
/// commits and views wait here while the server holds a global lock.
#[derive(Default)]
pub(super) struct Gate {
    paused_at: Mutex<Option<Seqno>>,
    cv: Condvar,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, Option<Seqno>> {
        self.paused_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits while `seqno` lies beyond the pause point.
    pub fn pass(&self, seqno: Seqno) {
        let mut g = self.lock();
        while g.is_some_and(|p| seqno > p) {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// An operator's pause holds.
    pub fn is_paused(&self) -> bool {
        self.lock().is_some()
    }

    /// Pauses at `at`, after any pause in progress ends (pauses queue, as
    /// in Galera).
    fn close(&self, at: impl Fn() -> Seqno) -> Seqno {
        let mut g = self.lock();
        while g.is_some() {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        let p = at();
        *g = Some(p);
        p
    }

    fn open(&self) -> bool {
        let was = self.lock().take().is_some();
        self.cv.notify_all();
        was
    }
}

/// How long desync/resync wait for their transition to be ordered.
const TRANSITION_WAIT: Duration = Duration::from_secs(30);

impl Shared {
    /// Stops applying after the last ordered seqno, waits until it has
    /// committed and returns it; -1 on failure (any other negative number
    /// would read as a seqno to wsrep-lib).
    pub fn pause(&self) -> Seqno {
        if self.group().is_none() {
            return SEQNO_UNDEFINED;
        }
        let at = self.gate.close(|| self.last_ordered.load(Ordering::SeqCst));
        self.apply.wait_left(at, None);
        let history = self.history();
        self.save_position(at);
        log::info!("Provider paused at {}:{}", history, at);
        at
    }

    pub fn resume(&self) -> Status {
        if !self.gate.open() {
            log::warning!("resume: the provider was not paused");
            return Status::Ok;
        }
        self.save_position(SEQNO_UNDEFINED);
        log::info!("resuming provider at {}", self.apply.last_left());
        Status::Ok
    }

    /// Records the position in grastate.dat (a backup taken while paused
    /// reads it there); -1 while the node runs.
    pub(super) fn save_position(&self, seqno: Seqno) {
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        let safe = saved.get().safe_to_bootstrap;
        saved.set(Position { uuid: self.history(), seqno, safe_to_bootstrap: safe });
    }

    pub fn desync(&self) -> Status {
        match self.member_transition(Transition::Desync) {
            true => Status::Ok,
            false => Status::TrxFail,
        }
    }

    pub fn resync(&self) -> Status {
        if self.status().desync_count == 0 {
            // A node that left the primary component and joined it again
            // lost its desync with its old membership (Galera likewise
            // ignores that JOIN): nothing to undo, nothing wrong.
            log::info!("resync: the node is not desynced (it rejoined the cluster since it was)");
            return Status::Ok;
        }
        match self.member_transition(Transition::Join) {
            true => Status::Ok,
            false => Status::NodeFail,
        }
    }

    /// Orders a transition of this member and waits until it is applied.
    fn member_transition(&self, t: Transition) -> bool {
        let Some(group) = self.group() else { return false };
        let epoch = self.status().member_epoch;
        // Never negative: a donor's negative Join is a failed transfer.
        if group.member_state(t, self.apply.last_left().max(0)).is_err() {
            return false;
        }
        let deadline = Instant::now() + TRANSITION_WAIT;
        let mut st = self.status();
        while st.member_epoch == epoch {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                log::warning!("{:?} was not ordered within {:?}", t, TRANSITION_WAIT);
                return false;
            }
            st = self.status_cv.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        true
    }
}
