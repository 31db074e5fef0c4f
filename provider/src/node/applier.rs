//! The server's applier threads inside `recv()`: each takes the next queued
//! item and delivers it with the callbacks, on its own thread and with its
//! own `recv_ctx`. Writesets apply in parallel as far as `depends_on`
//! allows; the commit monitor keeps commits in seqno order.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::types::{Handle, Meta, Opaque, RecvCtx, Status, Stid};
use super::stall::Change;
use super::Shared;
use crate::cert::Verdict;
use crate::group::{MemberState, View};
use crate::gtid::{Gtid, Seqno, SEQNO_UNDEFINED};
use crate::log;
use crate::monitor::Rule;
use crate::writeset::{flags, WriteSet};

/// What the group thread hands to appliers, in delivery order.
pub(super) enum Item {
    /// `connected_cb`: first view of this connection.
    Connected(View),
    /// `connected_cb` and `view_cb` of the restart view, then the tail
    /// of this node's gcache, applied (see `replay`).
    Resume { view: View, tail: super::replay::Tail },
    View(View),
    Apply { seqno: Seqno, ws: WriteSet, verdict: Verdict },
    /// A joiner's first view: ask for the state and wait for it.
    Joining(View),
    /// This node was chosen as donor for a request ordered at `seqno`.
    Donate { request: bytes::Bytes, seqno: Seqno, joiner: crate::gtid::Uuid, ist: crate::group::IstRequest },
    Synced,
    /// The final view: the applier that takes it ends the connection.
    Final,
    /// Another member failed this seqno: vote on it (see `vote`).
    Vote(Seqno),
}

pub(super) enum Flow {
    Continue,
    /// The server asked this thread to leave (`exit_loop`).
    Exit,
    /// The final view was delivered.
    Closed,
    /// The node cannot go on (a failed state transfer).
    Failed,
}

/// How long the final view waits for earlier seqnos to finish before it is
/// delivered anyway (a client that never releases must not hang shutdown).
const FINAL_DRAIN: Duration = Duration::from_secs(60);

impl Shared {
    pub(super) fn recv(&self, ctx: RecvCtx) -> Status {
        if self.status().closed {
            return Status::Fatal;
        }
        self.receivers.fetch_add(1, Ordering::SeqCst);
        let status = loop {
            self.hang_if_asked();
            let Some((order, item)) = self.queue.pop() else { break Status::ConnFail };
            // The backlog shrank as the item left the queue, as Galera's
            // does when an applier takes an action: a CONT due now must
            // not wait for this apply to finish.
            self.check_flow();
            let flow = self.process(ctx, order, item);
            self.check_flow();
            self.maybe_sync();
            match flow {
                Flow::Continue => {}
                Flow::Closed => break Status::Ok,
                Flow::Failed => break Status::NodeFail,
                Flow::Exit if self.receivers.load(Ordering::SeqCst) > 1 => break Status::Ok,
                Flow::Exit => log::warning!("Refusing exit for the last slave thread."),
            }
        };
        self.receivers.fetch_sub(1, Ordering::SeqCst);
        status
    }

    /// Items start in delivery order (the local monitor): a writeset leaves
    /// it at once and applies in parallel; any other item keeps it until
    /// its callback returns, so callbacks never overtake each other (no
    /// synced_cb before the view it follows).
    fn process(&self, ctx: RecvCtx, order: i64, item: Item) -> Flow {
        if self.local.enter(order, Rule::InOrder).is_err() {
            return Flow::Continue; // closing
        }
        if let Item::Apply { seqno, ws, verdict } = item {
            self.local.leave(order);
            if self.apply_failed.load(Ordering::SeqCst) != SEQNO_UNDEFINED {
                // Inconsistent, leaving: nothing more is applied.
                self.pass_monitors(seqno);
                return Flow::Continue;
            }
            if seqno <= self.skip_upto.load(Ordering::SeqCst) {
                return Flow::Continue; // contained in the transferred state
            }
            return self.apply_remote(ctx, seqno, &ws, verdict);
        }
        let flow = self.deliver_control(ctx, item);
        self.local.leave(order);
        flow
    }

    fn deliver_control(&self, ctx: RecvCtx, item: Item) -> Flow {
        match item {
            Item::Connected(v) => {
                if !self.app.connected(&v) {
                    log::error!("connected callback failed for view {}", v.conf_id);
                }
                Flow::Continue
            }
            Item::Resume { view, tail } => match self.apply_tail(ctx, &view, tail) {
                true => Flow::Continue,
                false => Flow::Failed,
            },
            Item::View(v) if v.primary && v.seqno <= self.skip_upto.load(Ordering::SeqCst) => Flow::Continue,
            Item::View(v) => {
                self.deliver_view(ctx, &v);
                Flow::Continue
            }
            Item::Joining(v) => {
                if self.join_by_state_transfer(ctx, &v) {
                    Flow::Continue
                } else {
                    Flow::Failed
                }
            }
            Item::Donate { request, seqno, joiner, ist } => {
                self.donate(ctx, &request, seqno, joiner, ist);
                Flow::Continue
            }
            Item::Apply { .. } => unreachable!("writesets are applied by process()"),
            Item::Synced => {
                if !self.app.synced() {
                    log::error!("synced callback failed");
                }
                Flow::Continue
            }
            Item::Final => {
                self.deliver_final(ctx);
                Flow::Closed
            }
            Item::Vote(seqno) => {
                self.answer_vote(seqno);
                Flow::Continue
            }
        }
    }

    /// A configuration change is an ordered event: everything before it has
    /// committed when `view_cb` runs, nothing after it applies before it
    /// returns (later writesets depend on its seqno).
    pub(super) fn deliver_view(&self, ctx: RecvCtx, v: &View) {
        if v.primary {
            self.gate.pass(v.seqno);
            self.apply.wait_left(v.seqno - 1, None);
        }
        if !self.app.view(ctx, v) {
            log::error!("View callback failed. This is unrecoverable, restart required.");
        }
        if v.primary {
            // After the callback: last_committed_id inside view_cb must not
            // include the view's own seqno.
            self.commit.finish(v.seqno);
            self.apply.finish(v.seqno);
        }
    }

    pub(super) fn apply_remote(&self, ctx: RecvCtx, seqno: Seqno, ws: &WriteSet, verdict: Verdict) -> Flow {
        let (depends_on, fl) = match verdict {
            Verdict::Pass { depends_on } => (depends_on, ws.flags),
            // A failed writeset reaches the server as a dummy that only
            // records the position, after everything before it.
            Verdict::Fail(_) => (seqno - 1, ws.flags | flags::ROLLBACK),
        };
        let big = ws.data().len() >= super::BIG_WRITESET;
        let long = big || fl & flags::ISOLATION != 0;
        if big {
            self.big_applying.fetch_add(1, Ordering::SeqCst);
            self.check_flow();
        }
        if long {
            self.long_applying.fetch_add(1, Ordering::SeqCst);
        }
        let flow = self.apply_in_order(ctx, seqno, ws, (depends_on, fl));
        if long {
            self.long_applying.fetch_sub(1, Ordering::SeqCst);
        }
        if big {
            self.big_applying.fetch_sub(1, Ordering::SeqCst);
            self.check_flow();
        }
        flow
    }

    fn apply_in_order(&self, ctx: RecvCtx, seqno: Seqno, ws: &WriteSet, (depends_on, fl): (Seqno, u32)) -> Flow {
        self.gate.pass(seqno);
        if self.apply.enter(seqno, Rule::After(depends_on)).is_err() {
            return Flow::Continue; // closing
        }
        let meta = Meta {
            gtid: Gtid::new(self.history(), seqno),
            stid: Stid { node: ws.source, trx: ws.trx_id, conn: ws.conn_id },
            depends_on,
        };
        let handle = Handle { trx_id: ws.trx_id, opaque: Opaque::Applier(seqno).encode() };
        let mut exit = false;
        let started = (Instant::now(), super::capacity::thread_cpu());
        let ok = self.app.apply(ctx, handle, fl, ws.data(), &meta, &mut exit);
        self.count_apply_time(started);
        if !ok && !self.ballots.voted_on(seqno) {
            // A failure the server did not report at commit order: voted
            // on without its message, before anything after it commits.
            log::error!("Failed to apply writeset {} (source {}, trx {})", seqno, ws.source, ws.trx_id as i64);
            self.apply_error(seqno, b"");
        }
        // The server passes commit order inside apply_cb; if it did not
        // (an error path), the seqno must still leave the commit monitor.
        self.commit.finish(seqno);
        self.apply.leave(seqno);
        if self.apply_failed.load(Ordering::SeqCst) == seqno {
            return self.inconsistent(seqno);
        }
        if exit { Flow::Exit } else { Flow::Continue }
    }

    /// `lockstep.debug_hang_appliers`: take nothing while it holds, as an
    /// applier stuck on a dead disk would (until the node closes).
    fn hang_if_asked(&self) {
        while self.hang_appliers.load(Ordering::Relaxed) && !self.status().closed {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// On every group tick: hung appliers (see `stall`) stop counting for
    /// flow control after `evs.suspect_timeout` and take the node out of
    /// the cluster after `evs.inactive_timeout`.
    pub(super) fn watch_appliers(self: &Arc<Self>, now: Instant) {
        let committed = self.apply.last_left();
        let waiting = self.last_ordered.load(Ordering::SeqCst) - committed;
        let progress = super::stall::Progress { committed, waiting: waiting > 0, excused: self.stall_excused() };
        let t = self.setting(|s| s.timeouts);
        let change = self.stall.lock().unwrap_or_else(|e| e.into_inner()).observe(progress, now, t.suspect, t.inactive);
        match change {
            None => return,
            // A note, not a warning: a client's LOCK TABLES holds an
            // applier so too, and Galera logs nothing then (mtr fails a
            // test on any warning it does not expect).
            Some(Change::Stalled(idle)) => log::info!(
                "appliers committed nothing for {:.1?} (evs.suspect_timeout) with {} write sets waiting after {}, and nothing paused them: this node no longer counts for flow control",
                idle, waiting, committed
            ),
            Some(Change::Recovered) => log::info!("appliers are committing again (at {}): this node counts for flow control again", committed),
            Some(Change::Leave(idle)) => {
                log::error!("appliers committed nothing for {:.1?} (evs.inactive_timeout) with {} write sets waiting after {}: leaving the cluster", idle, waiting, committed);
                // Leaving waits for the driver, which this thread runs.
                let shared = Arc::clone(self);
                std::thread::Builder::new()
                    .name("lockstep-leave".into())
                    .spawn(move || shared.leave_stalled())
                    .map(drop)
                    .unwrap_or_else(|e| log::error!("cannot start leaving the cluster: {}", e));
            }
        }
        let stalled = matches!(change, Some(Change::Stalled(_)) | Some(Change::Leave(_)));
        self.apply_stalled.store(stalled, Ordering::SeqCst);
        self.check_flow();
    }

    /// What may rightly hold the appliers: an operator's pause (FTWRL,
    /// RSU), a desync or a state transfer, a DDL (here or from another
    /// member) or a big writeset being applied.
    fn stall_excused(&self) -> bool {
        let synced = matches!(self.status().member, Some(MemberState::Synced) | Some(MemberState::Joined));
        !synced
            || self.gate.is_paused()
            || self.long_applying.load(Ordering::SeqCst) > 0
            || !self.toi.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// For `wsrep_apply_capacity`: the CPU time apply_cb took (without a
    /// thread CPU clock, its wall time less its wait for its turn in
    /// commit order), and its turn.
    fn count_apply_time(&self, (started, cpu): (Instant, Option<Duration>)) {
        let now = Instant::now();
        let (waited, turn) = super::capacity::take_turn(now);
        let work = match (cpu, super::capacity::thread_cpu()) {
            (Some(from), Some(to)) => to.saturating_sub(from),
            _ => now.saturating_duration_since(started).saturating_sub(waited),
        };
        self.capacity.applied(now, work, turn);
    }

    /// `seqno` is done without the server: it passes both monitors so
    /// that nothing after it waits for it.
    pub(super) fn pass_monitors(&self, seqno: Seqno) {
        self.commit.finish(seqno);
        self.apply.finish(seqno);
    }

    /// The server could not apply `seqno` (apply_cb failed, or it reported
    /// an error at commit order): the first such seqno makes the node
    /// inconsistent.
    pub(super) fn note_apply_failure(&self, seqno: Seqno) {
        let _ = self.apply_failed.compare_exchange(SEQNO_UNDEFINED, seqno, Ordering::SeqCst, Ordering::SeqCst);
        // It no longer holds the group back while it goes.
        self.check_flow();
    }

    /// This node's data differs from the cluster's: the vote went against
    /// it. It leaves (see `leave_inconsistent`); the appliers apply
    /// nothing more meanwhile.
    fn inconsistent(&self, seqno: Seqno) -> Flow {
        // Galera's words (mtr tests suppress them by this prefix), then
        // ours.
        log::error!(
            "Inconsistency detected: Inconsistent by consensus on {}:{} (this node failed to apply it; it leaves the cluster and must rejoin by state transfer)",
            self.history(),
            seqno
        );
        self.leave_inconsistent();
        Flow::Continue
    }

    fn deliver_final(&self, ctx: RecvCtx) {
        let upto = self.last_ordered.load(Ordering::SeqCst);
        if !self.apply.wait_left(upto, Some(Instant::now() + FINAL_DRAIN)) {
            log::warning!("closing with seqnos up to {} not committed (last committed {})", upto, self.apply.last_left());
        }
        let v = self.final_view();
        if !self.app.view(ctx, &v) {
            log::error!("final view callback failed");
        }
        self.status().closed = true;
        self.status_cv.notify_all();
        self.queue.close();
    }

    /// The view that tells the server it is disconnected (wsrep-lib's
    /// `view::is_final()`: not primary, no members, own index -1).
    fn final_view(&self) -> View {
        let last = self.last_committed();
        View { history: last.uuid, seqno: last.seqno, conf_id: -1, primary: false, members: vec![], my_idx: -1 }
    }
}
