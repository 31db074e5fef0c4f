//! Local transactions on client threads: append, certify, commit order,
//! release, brute-force abort, replay, streaming rollback (contract §3).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::delivery::{Outcome, Pending};
use super::trx::{LocalTrx, Slot, TrxInner, TrxState};
use super::types::{Handle, KeyParts, Meta, Opaque, RecvCtx, Status, Stid, CONN_NONE};
use super::Shared;
use crate::cert::Verdict;
use crate::gtid::{Gtid, Seqno, SEQNO_UNDEFINED};
use crate::log;
use crate::monitor::{Interrupted, Rule};
use crate::writeset::{flags, AppendError, KeyKind, WriteSet};

impl Shared {
    /// The trx behind a mutable handle, created on first use (and written
    /// back into `opaque`, as Galera does).
    fn trx_for_append(&self, h: &mut Handle) -> Arc<LocalTrx> {
        if let Opaque::Local(id) = Opaque::decode(h.opaque) {
            match self.trxs.get(id) {
                Some(t) if t.trx_id == h.trx_id => return t,
                _ => log::warning!("stale transaction handle (trx {}): starting a new provider transaction", h.trx_id as i64),
            }
        }
        let t = self.trxs.create(h.trx_id);
        h.opaque = Opaque::Local(t.id).encode();
        t
    }

    fn local_trx(&self, h: &Handle) -> Option<Arc<LocalTrx>> {
        match Opaque::decode(h.opaque) {
            Opaque::Local(id) => self.trxs.get(id),
            _ => None,
        }
    }

    pub fn append_key(&self, h: &mut Handle, keys: Vec<KeyParts>, kind: KeyKind) -> Status {
        let trx = self.trx_for_append(h);
        let mut t = trx.lock();
        for parts in keys {
            if let Err(e) = t.builder.append_key(parts, kind) {
                return append_error(e);
            }
        }
        Status::Ok
    }

    pub fn append_data(&self, h: &mut Handle, bufs: &[&[u8]]) -> Status {
        let trx = self.trx_for_append(h);
        let mut t = trx.lock();
        for b in bufs {
            if let Err(e) = t.builder.append_data(b) {
                return append_error(e);
            }
        }
        Status::Ok
    }

    pub fn certify(&self, conn_id: u64, h: &mut Handle, fl: u32, meta: &mut Meta) -> Status {
        meta.gtid = Gtid::UNDEFINED;
        meta.depends_on = SEQNO_UNDEFINED;
        meta.stid.node = self.my_id();
        meta.stid.trx = h.trx_id;
        let Some(trx) = self.local_trx(h) else {
            return Status::Ok; // nothing appended: nothing to replicate (Galera)
        };
        self.wait_flow(&trx.aborted);
        let mut ws = {
            let mut t = trx.lock();
            if let Err(s) = self.may_replicate(&t) {
                return s;
            }
            if self.orphaned(&mut t, fl, trx.trx_id) {
                return Status::TrxFail;
            }
            if let Err(e) = t.builder.check(self.setting(|s| s.max_ws_size)) {
                return append_error(e);
            }
            let last_seen = self.apply.last_left().max(t.last_fragment);
            let ws = t.builder.take(fl & flags::MASK, self.my_id(), trx.trx_id, conn_id, last_seen);
            t.state = TrxState::Replicating;
            t.fragments += 1;
            ws
        };
        self.count_replicated(&ws);
        let outcome = self.replicate(&mut ws, Some(&trx.aborted));
        let (status, enter) = self.certified(&mut trx.lock(), ws, outcome, meta);
        log::debug!("certify trx {} -> {:?} at {}", trx.trx_id as i64, status, meta.gtid.seqno);
        if let Some(seqno) = enter {
            // Not under the trx lock: a pause may hold us here, and a
            // brute-force abort must still reach the trx meanwhile.
            self.gate.pass(seqno);
            if self.apply.enter(seqno, Rule::Now).is_err() {
                trx.lock().state = TrxState::CertFailed;
                return Status::ConnFail;
            }
            trx.lock().apply = Slot::Inside;
        } else if meta.gtid.seqno > 0 {
            // Ordered but failed: a pause holds the answer too, as
            // Galera's paused local monitor holds certification itself.
            // The client stays "Waiting for certification" with its locks
            // (galera_backup_stage watches for both) and hears of the
            // failure once the pause ends.
            self.gate.pass(meta.gtid.seqno);
        }
        status
    }

    /// A streaming transaction whose fragments were sent before the group
    /// went on without this node was rolled back by the others (the
    /// server's orphaned-SR cleanup on their view change): its next
    /// fragment or commit fails certification, so the client gets a
    /// deadlock error, as with Galera. Its rollback fragment still goes
    /// out (the others ignore one for a transaction they no longer have).
    fn orphaned(&self, t: &mut TrxInner, fl: u32, trx_id: u64) -> bool {
        let rejoins = self.rejoins.load(Ordering::SeqCst);
        if t.fragments == 0 {
            t.rejoins = rejoins;
            return false;
        }
        let orphaned = t.rejoins != rejoins && fl & flags::ROLLBACK == 0;
        if orphaned {
            log::info!("streaming transaction {} began before this node left the primary component: the cluster rolled it back", trx_id as i64);
        }
        orphaned
    }

    fn may_replicate(&self, t: &TrxInner) -> Result<(), Status> {
        match t.state {
            TrxState::Executing => {}
            // Brute-force aborted before it could be sent.
            TrxState::MustAbort => return Err(Status::ConnFail),
            s => {
                log::warning!("certify in state {:?}", s);
                return Err(Status::ConnFail);
            }
        }
        if !self.node_state().can_replicate() {
            return Err(Status::ConnFail);
        }
        Ok(())
    }

    /// Flow control: new writesets wait while a member asks the group to
    /// stop (before the trx is locked: a brute-force abort must reach it).
    pub(super) fn wait_flow(&self, interrupted: &std::sync::atomic::AtomicBool) {
        if let Some(g) = self.group() {
            g.wait_flow(interrupted);
        }
    }

    pub(super) fn count_replicated(&self, ws: &WriteSet) {
        let c = &self.counters;
        c.replicated.fetch_add(1, Ordering::Relaxed);
        c.replicated_bytes.fetch_add(ws.encoded_len() as u64, Ordering::Relaxed);
        c.repl_keys.fetch_add(ws.keys.len() as u64, Ordering::Relaxed);
        let key_bytes: usize = ws.keys.iter().flat_map(|k| k.parts.iter()).map(|p| p.len()).sum();
        c.repl_keys_bytes.fetch_add(key_bytes as u64, Ordering::Relaxed);
        c.repl_data_bytes.fetch_add(ws.data().len() as u64, Ordering::Relaxed);
    }

    /// Sends a writeset through the group and waits for its place in the
    /// total order. A client aborted meanwhile (`aborted`: KILL, or a
    /// brute-force abort) withdraws its writeset if the group can still
    /// keep it from being ordered (see `Group::cancel`), and keeps waiting
    /// for the answer otherwise.
    pub(super) fn replicate(&self, ws: &mut WriteSet, aborted: Option<&std::sync::atomic::AtomicBool>) -> Outcome {
        let Some(group) = self.group() else { return Outcome::Failed };
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let pending = Pending::new();
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(token, pending.clone());
        if group.propose(token, ws.encode_shared()).is_err() {
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&token);
            return Outcome::Failed;
        }
        let started = std::time::Instant::now();
        let outcome = match aborted {
            None => pending.wait(),
            Some(aborted) => pending.wait_or(|| aborted.load(Ordering::SeqCst), || group.cancel(token)),
        };
        if let Outcome::Ordered { .. } = outcome {
            let now = std::time::Instant::now();
            self.repl_latency.record(now.saturating_duration_since(started), now, self.setting(|s| s.stats_report_period));
        }
        if ws.encoded_len() >= super::BIG_WRITESET {
            // Rare and heavy: the operator sees where its time went.
            let at = match &outcome {
                Outcome::Ordered { seqno, .. } => format!("ordered at seqno {}", seqno),
                Outcome::Failed => "failed".into(),
            };
            log::info!("writeset of trx {} ({} MB) {} after {:.1}s", ws.trx_id as i64, ws.encoded_len() >> 20, at, started.elapsed().as_secs_f64());
        }
        outcome
    }

    /// Turns the ordering outcome into certify's answer, and the seqno whose
    /// apply slot the trx must take (certified).
    fn certified(&self, t: &mut TrxInner, ws: WriteSet, outcome: Outcome, meta: &mut Meta) -> (Status, Option<Seqno>) {
        let Outcome::Ordered { seqno, verdict } = outcome else {
            t.state = TrxState::MustAbort;
            return (Status::ConnFail, None);
        };
        let committing = ws.has(flags::TRX_END);
        meta.gtid = Gtid::new(self.history(), seqno);
        t.seqno = seqno;
        t.apply = Slot::Free;
        t.commit = Slot::Free;
        t.ws = Some(ws);
        match verdict {
            Verdict::Fail(reason) => {
                self.counters.local_cert_failures.fetch_add(1, Ordering::Relaxed);
                log::debug!("trx {} failed certification at {}: {:?}", t.ws.as_ref().map_or(0, |w| w.trx_id) as i64, seqno, reason);
                t.state = TrxState::CertFailed;
                (Status::TrxFail, None)
            }
            Verdict::Pass { .. } if t.state == TrxState::MustAbort => {
                // Aborted while replicating but ordered and certified: a
                // committing writeset replays, a fragment fails.
                t.state = if committing { TrxState::MustReplay } else { TrxState::CertFailed };
                (if committing { Status::BfAbort } else { Status::TrxFail }, None)
            }
            Verdict::Pass { depends_on } => {
                t.depends_on = depends_on;
                t.last_fragment = seqno;
                t.state = TrxState::Certified;
                meta.depends_on = depends_on;
                (Status::Ok, Some(seqno))
            }
        }
    }

    pub fn commit_order_enter(&self, h: &Handle) -> Status {
        match Opaque::decode(h.opaque) {
            // An applier's writeset holds its apply slot during apply_cb;
            // any other seqno is a handle we never gave out.
            Opaque::Applier(seqno) if !self.apply.is_entered(seqno) => Status::TrxMissing,
            Opaque::Applier(seqno) => {
                let asked = std::time::Instant::now();
                let entered = self.commit.enter(seqno, self.commit_rule(false));
                super::capacity::turn_began(asked, std::time::Instant::now());
                match entered {
                    Ok(()) => Status::Ok,
                    Err(_) => Status::ConnFail,
                }
            }
            Opaque::Local(_) => match self.local_trx(h) {
                Some(trx) => self.local_commit_enter(&trx),
                None => Status::TrxMissing,
            },
            Opaque::None => Status::TrxMissing,
        }
    }

    fn commit_rule(&self, local: bool) -> Rule {
        match self.setting(|s| s.commit_order) {
            0 | 1 => Rule::Now,
            2 if local => Rule::Now,
            _ => Rule::InOrder,
        }
    }

    fn local_commit_enter(&self, trx: &LocalTrx) -> Status {
        let seqno = {
            let mut t = trx.lock();
            if let Some(s) = self.aborted_before_commit(&mut t) {
                return s;
            }
            if t.seqno < 0 {
                return Status::TrxMissing;
            }
            if t.apply == Slot::Free {
                // A failed or replaying trx enters the apply monitor here.
                let seqno = t.seqno;
                drop(t);
                let entered = self.apply.enter(seqno, Rule::Now);
                t = trx.lock();
                if entered.is_err() {
                    return Status::ConnFail;
                }
                t.apply = Slot::Inside;
            }
            if t.state == TrxState::Certified {
                t.state = TrxState::Committing;
            }
            t.seqno
        };
        let entered = self.commit.enter(seqno, self.commit_rule(true));
        let mut t = trx.lock();
        match entered {
            Ok(()) => {
                t.commit = Slot::Inside;
                Status::Ok
            }
            Err(Interrupted::Aborted) => {
                log::debug!("commit order of trx {} at {} interrupted", trx.trx_id as i64, seqno);
                t.state = TrxState::MustAbort;
                self.aborted_before_commit(&mut t).unwrap_or(Status::TrxFail)
            }
            Err(Interrupted::Closed) => Status::ConnFail,
        }
    }

    /// A trx brute-force aborted after certification must not commit: a
    /// committing writeset replays, a fragment fails.
    fn aborted_before_commit(&self, t: &mut TrxInner) -> Option<Status> {
        if !matches!(t.state, TrxState::MustAbort | TrxState::MustReplay) {
            return None;
        }
        let committing = t.ws.as_ref().is_some_and(|w| w.has(flags::TRX_END));
        if committing {
            t.state = TrxState::MustReplay;
            Some(Status::BfAbort)
        } else {
            Some(Status::TrxFail)
        }
    }

    pub fn commit_order_leave(&self, h: &Handle, error: &[u8]) -> Status {
        match Opaque::decode(h.opaque) {
            Opaque::Applier(seqno) if !self.apply.is_entered(seqno) => Status::TrxMissing,
            Opaque::Applier(seqno) => {
                if !error.is_empty() {
                    // The server logged the error; the vote decides what
                    // it means, before anything after it commits here.
                    log::info!("applying seqno {} failed on this node: {}", seqno, String::from_utf8_lossy(error));
                    self.apply_error(seqno, error);
                }
                self.commit.finish(seqno);
                super::capacity::turn_ended(std::time::Instant::now());
                Status::Ok
            }
            Opaque::Local(_) => {
                let Some(trx) = self.local_trx(h) else { return Status::TrxMissing };
                let mut t = trx.lock();
                if t.commit == Slot::Inside {
                    self.commit.leave(t.seqno);
                    t.commit = Slot::Done;
                }
                if t.state == TrxState::Committing {
                    t.state = TrxState::Committed;
                }
                Status::Ok
            }
            Opaque::None => Status::TrxMissing,
        }
    }

    pub fn release(&self, h: &mut Handle) -> Status {
        let Some(trx) = self.local_trx(h) else {
            if let Opaque::Local(_) = Opaque::decode(h.opaque) {
                h.opaque = 0;
            }
            return Status::Ok;
        };
        let mut t = trx.lock();
        self.finish_monitors(&mut t);
        let keep = match t.state {
            TrxState::Committed | TrxState::Replayed => {
                self.counters.local_commits.fetch_add(1, Ordering::Relaxed);
                // A streaming fragment committed: the trx goes on.
                t.ws.as_ref().is_some_and(|w| !w.has(flags::TRX_END) && !w.has(flags::ROLLBACK))
            }
            _ => false,
        };
        if keep {
            t.state = TrxState::Executing;
            t.seqno = SEQNO_UNDEFINED;
            return Status::Ok;
        }
        drop(t);
        self.trxs.remove(&trx);
        h.opaque = 0;
        Status::Ok
    }

    /// An ordered seqno must pass both monitors even if the server skipped
    /// them (rollback after an error): otherwise everything after it waits.
    fn finish_monitors(&self, t: &mut TrxInner) {
        if t.seqno < 0 {
            return;
        }
        if t.apply == Slot::Free && !self.apply.is_done(t.seqno) {
            if self.apply.enter(t.seqno, Rule::Now).is_err() {
                return;
            }
            t.apply = Slot::Inside;
        }
        match t.commit {
            Slot::Inside => self.commit.leave(t.seqno),
            // Passed already through another handle (a replay applied
            // with the applier's handle).
            Slot::Free if self.commit.is_done(t.seqno) => {}
            Slot::Free => {
                if self.commit.enter(t.seqno, Rule::InOrder).is_ok() {
                    self.commit.leave(t.seqno);
                }
            }
            Slot::Done => {}
        }
        t.commit = Slot::Done;
        if t.apply == Slot::Inside {
            self.apply.leave(t.seqno);
        }
        t.apply = Slot::Done;
    }

    /// Brute-force abort (contract §3.9): an applier with `bf_seqno` needs
    /// locks the victim holds.
    pub fn abort_certification(&self, bf_seqno: Seqno, victim: u64, victim_seqno: &mut Seqno) -> Status {
        let Some(trx) = self.trxs.by_trx_id(victim) else {
            *victim_seqno = SEQNO_UNDEFINED;
            return Status::Ok; // unknown victim: the server may kill it
        };
        let mut t = trx.lock();
        *victim_seqno = t.seqno;
        let allowed = Self::may_abort(&t, bf_seqno, |seqno| self.commit.interrupt(seqno));
        log::debug!("abort trx {} (seqno {}, {:?}) for {}: {}", victim as i64, t.seqno, t.state, bf_seqno, if allowed { "aborted" } else { "not allowed" });
        if !allowed {
            return Status::NotAllowed;
        }
        t.state = TrxState::MustAbort;
        trx.aborted.store(true, Ordering::SeqCst);
        if let Some(g) = self.group() {
            g.wake_flow_waiters(); // it may wait for flow control in certify
        }
        Status::Ok
    }

    /// Whether a brute-force applier at `bf_seqno` may abort the trx. Only
    /// a commit ordered before the applier is out of its reach: that commit
    /// must happen first. A streaming fragment is not a commit, even when
    /// ordered before and stored already: the transaction keeps its row
    /// locks after each fragment, so refusing here would leave the applier
    /// waiting on locks that nothing releases (the transaction's own next
    /// commit waits for the applier's seqno). It rolls back instead, as
    /// with Galera, and its rollback fragment cleans up the others.
    fn may_abort(t: &TrxInner, bf_seqno: Seqno, interrupt_commit: impl FnOnce(Seqno) -> bool) -> bool {
        let committing = t.ws.as_ref().is_some_and(|w| w.has(flags::TRX_END));
        let ordered_before = t.seqno >= 0 && t.seqno < bf_seqno;
        if ordered_before && committing {
            return false;
        }
        match t.state {
            TrxState::Executing | TrxState::Replicating | TrxState::Certified => true,
            // Waiting for its commit turn: woken with an error. A fragment
            // already inside commits its part and the trx rolls back after.
            TrxState::Committing => interrupt_commit(t.seqno) || !committing,
            TrxState::Committed => !committing,
            _ => false,
        }
    }

    /// Applies a brute-force-aborted transaction's own writeset on its
    /// client thread (contract §3.10). The server's replayer passes commit
    /// order with the transaction's own handle, so the trx's monitor slots
    /// are tracked here as on the normal path.
    pub fn replay(&self, h: &Handle, ctx: RecvCtx) -> Status {
        let Some(trx) = self.local_trx(h) else { return Status::TrxFail };
        let Some((seqno, depends_on, ws)) = self.start_replay(&trx) else { return Status::TrxFail };
        // Everything ordered before must have committed: the replay takes
        // the locks the brute-force applier had.
        self.commit.wait_left(seqno - 1, None);
        self.counters.local_replays.fetch_add(1, Ordering::Relaxed);
        let meta = Meta {
            gtid: Gtid::new(self.history(), seqno),
            stid: Stid { node: self.my_id(), trx: trx.trx_id, conn: ws.conn_id },
            depends_on,
        };
        let handle = Handle { trx_id: trx.trx_id, opaque: Opaque::Applier(seqno).encode() };
        let mut exit = false;
        let ok = self.app.apply(ctx, handle, ws.flags, ws.data(), &meta, &mut exit);
        let mut t = trx.lock();
        self.finish_monitors(&mut t);
        t.state = TrxState::Replayed;
        if ok {
            Status::Ok
        } else {
            log::error!("replay of trx {} at seqno {} failed", trx.trx_id as i64, seqno);
            Status::NodeFail
        }
    }

    /// Moves a trx to Replaying holding its apply slot; None if it is not
    /// waiting for a replay.
    fn start_replay(&self, trx: &LocalTrx) -> Option<(Seqno, Seqno, WriteSet)> {
        let mut t = trx.lock();
        // MustAbort with a seqno: aborted after certify passed and before
        // commit order; wsrep-lib then replays without asking for commit
        // order first.
        let ordered_abort = t.state == TrxState::MustAbort && t.seqno >= 0;
        let Some(ws) = t.ws.clone().filter(|_| t.state == TrxState::MustReplay || ordered_abort) else {
            log::warning!("replay of trx {} in state {:?}", trx.trx_id as i64, t.state);
            return None;
        };
        t.state = TrxState::Replaying;
        let (seqno, depends_on) = (t.seqno, t.depends_on);
        if t.apply == Slot::Free {
            drop(t);
            self.apply.enter(seqno, Rule::After(depends_on)).ok()?;
            trx.lock().apply = Slot::Inside;
        }
        Some((seqno, depends_on, ws))
    }

    /// Streaming rollback: orders a rollback fragment every node (this one
    /// included) applies, without waiting for it.
    pub fn rollback(&self, trx_id: u64, data: &[u8]) -> Status {
        if let Some(trx) = self.trxs.by_trx_id(trx_id) {
            let mut t = trx.lock();
            if matches!(t.state, TrxState::Executing | TrxState::Replicating) {
                t.state = TrxState::MustAbort;
            }
        }
        if !self.node_state().can_replicate() {
            return Status::TrxFail;
        }
        let ws = WriteSet::new(
            flags::ROLLBACK | flags::PA_UNSAFE,
            self.my_id(),
            trx_id,
            CONN_NONE,
            self.apply.last_left(),
            vec![],
            Bytes::copy_from_slice(data),
        );
        match self.group() {
            Some(g) if g.propose(0, Bytes::from(ws.encode())).is_ok() => Status::Ok,
            _ => Status::TrxFail,
        }
    }
}

pub(super) fn append_error(e: AppendError) -> Status {
    match e {
        AppendError::SizeExceeded { size, limit } => {
            // Galera's words, which MariaDB's test suites expect.
            log::error!("Maximum writeset size exceeded by {}: {} bytes against a limit of {}", size - limit, size, limit);
            Status::SizeExceeded
        }
        AppendError::BadKey(why) => {
            log::warning!("refused key: {}", why);
            Status::ConnFail
        }
    }
}
