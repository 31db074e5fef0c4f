//! Joining by state snapshot transfer (contract §13): the joiner asks the
//! server for an SST request and the group for a donor, waits while the
//! server's script copies the data, then applies what was ordered meanwhile;
//! the donor runs the server's donor script and rejoins when it is done.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::ist::IstViews;
use super::types::{RecvCtx, Status};
use super::Shared;
use crate::group::{DonorError, IstRequest, Transition, View};
use crate::gtid::{Gtid, Seqno, Uuid, SEQNO_UNDEFINED};
use crate::log;

/// Where a joiner's state transfer stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Sst {
    /// Not joining (bootstrapped, or done).
    None,
    /// Asked the group; no donor answer yet.
    Requested,
    /// No donor could be chosen: ask again after a pause.
    Retry,
    /// This donor was chosen; the server's script is copying the data.
    Transferring(Uuid),
    /// The server called `sst_received`.
    Received(Gtid),
    Failed(i32),
}

/// How long a joiner waits before asking again when no donor was free
/// (Galera retries every second).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long a rejoining member's appliers may take to commit what it was
/// given before it left (bounded by the receive queue's flow control, so
/// seconds at most).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// The server's magic request strings: `trivial` pretends the state was
/// transferred (`wsrep_sst_method=skip`), `none` asks for no state at all.
fn is_request(req: &[u8], magic: &[u8]) -> bool {
    req.strip_suffix(&[0]).unwrap_or(req) == magic
}

/// A join in flight, from the view this node entered the group with to
/// the Join it sends once it holds the state. The group may remove the
/// node and add it again meanwhile (a partition that heals and cuts
/// again, as a majorities ring does): its server is still a joiner and
/// cannot be one twice, so the same join goes on into the newer
/// membership, with another transfer for what the first did not cover.
/// A second join queued behind the first would ask for a state that never
/// comes: the group would count the node joined by the first one's Join.
#[derive(Clone, Debug)]
pub(super) struct Join {
    /// The view of the membership this node is in now: the seqnos after
    /// it reach the node live, those up to it come by the transfer.
    view: View,
    /// The view of the membership the donor was chosen in: its transfer
    /// covers up to that view, not to a newer one.
    answered: Option<View>,
    /// Bumped each time the group adds this node again.
    entries: u32,
}

impl Join {
    pub(super) fn new(view: View) -> Join {
        Join { view, answered: None, entries: 0 }
    }

    /// The group added this node again, in `view`.
    pub(super) fn reenter(&mut self, view: View) {
        self.view = view;
        self.entries += 1;
    }
}

/// One state transfer of a join: the position its data reached, what the
/// server heard, and the view whose membership the donor served.
struct Round {
    at: Seqno,
    views: IstViews,
    view: View,
    /// The server was running (IST alone), rather than restarted by an SST.
    running: bool,
}

/// What follows a join's transfer.
enum Next {
    /// This node is a member of the view the transfer reached.
    Done(View),
    /// The group added it again after the donor was chosen: another
    /// transfer, up to this view.
    Again(View),
    Closed,
}

impl Shared {
    /// The joiner's applier, on the view it joined in: connected_cb came
    /// first; this asks for the state and waits for it. Returns false when
    /// the transfer failed (the node cannot continue).
    pub(super) fn join_by_state_transfer(&self, ctx: RecvCtx, view: &View) -> bool {
        let joined = self.join(ctx, view);
        if !joined {
            // A join that succeeded ended its record itself, under the
            // lock: by now it may be the next join's.
            self.status().join = None;
        }
        joined
    }

    fn join(&self, ctx: RecvCtx, view: &View) -> bool {
        let Some(mut req) = self.app.sst_request() else {
            // Galera's words; the server logged why.
            log::error!("SST request callback failed. This is unrecoverable, restart required.");
            self.abort_join()
        };
        if is_request(&req, b"trivial") || is_request(&req, b"none") {
            // No data moves: the node starts from the group's position.
            self.status().join = None;
            return self.state_installed(ctx, Gtid::new(view.history, view.seqno), false, view).is_some_and(|(at, _)| self.join_group(at));
        }
        let mut own = *self.joined_from.lock().unwrap_or_else(|e| e.into_inner());
        let mut first = true;
        loop {
            let Some(round) = self.transfer(ctx, own, &req, first) else { return false };
            match self.after_transfer(&round) {
                Next::Done(view) => return self.finish_join(ctx, &view, &round, first),
                Next::Again(view) => {
                    log::info!("the state reached {} in the membership of {}; this node is a member again since {}: one more transfer", round.at, round.view.seqno, view.seqno);
                    own = Gtid::new(view.history, round.at);
                    // The server holds its data now: IST alone (a running
                    // joiner's request is empty).
                    req = Vec::new();
                    first = false;
                }
                Next::Closed => return false,
            }
        }
    }

    /// Asks the group for the state after `own` and takes it in. None when
    /// it failed (the node cannot continue) or the node closed.
    fn transfer(&self, ctx: RecvCtx, own: Gtid, req: &[u8], first: bool) -> Option<Round> {
        let target = {
            let mut st = self.status();
            let join = st.join.as_mut()?;
            join.answered = None;
            join.view.clone()
        };
        self.set_sst(Sst::Requested);
        // Open until this function returns: IST, or what follows an SST,
        // arrives there.
        let receiver = self.prepare_ist(own, &target);
        let ist = IstRequest { position: (own.uuid, own.seqno), addr: receiver.as_ref().map_or_else(String::new, |r| r.addr().to_string()) };
        // A running server (a member rejoining after a partition) cannot
        // take an SST script's copy: its request is empty, and only IST
        // can bring it up to date (Galera alike).
        let ist_only = is_request(req, b"");
        let donors = self.status().donors.clone();
        loop {
            let entries = self.status().join.as_ref().map_or(0, |j| j.entries);
            if let Some(g) = self.group() {
                let _ = g.state_request(&donors, ist.clone(), req);
            }
            match self.wait_sst(ist_only, entries) {
                Sst::Retry => std::thread::sleep(RETRY_AFTER),
                // A member again, in a newer membership: the request may
                // have been lost with the old one.
                Sst::Requested => {}
                Sst::Transferring(_) => return self.caught_up_running(ctx, own, receiver.is_some(), first),
                Sst::Received(gtid) => return self.state_received(ctx, gtid, receiver.is_some()),
                // Shutting down while joining: the server stops on its own.
                Sst::Failed(_) if self.status().closed => return None,
                Sst::Failed(rc) => {
                    log::error!("SST failed: {} ({}): this node cannot join; restart required", rc, std::io::Error::from_raw_os_error(rc.saturating_neg()));
                    self.abort_join()
                }
                s => unreachable!("wait_sst returned {:?}", s),
            }
        }
    }

    /// The view whose membership the donor served (see `Join`).
    fn answered_view(&self) -> Option<View> {
        let st = self.status();
        let join = st.join.as_ref()?;
        Some(join.answered.clone().unwrap_or_else(|| join.view.clone()))
    }

    /// A running server that caught up by IST alone. `first`: the join's
    /// first transfer, which waits for the appliers to commit what this
    /// node was given before it left.
    fn caught_up_running(&self, ctx: RecvCtx, own: Gtid, receiving: bool, first: bool) -> Option<Round> {
        // The seqnos this node was given before it left are still being
        // applied by the other appliers: the IST continues after them.
        let held = self.drain_to.load(std::sync::atomic::Ordering::SeqCst);
        let deadline = Instant::now() + DRAIN_TIMEOUT;
        if first && held >= 0 && !self.apply.wait_left(held, Some(deadline)) {
            // A stuck applier: installing the state anyway keeps the node
            // going (its appliers fail on their own if that is fatal).
            log::warning!(
                "seqnos up to {} not committed within {:?} (apply monitor at {}); installing the state anyway",
                held,
                DRAIN_TIMEOUT,
                self.apply.last_left()
            );
        }
        let view = self.answered_view()?;
        let (at, views) = self.state_installed(ctx, own, receiving, &view)?;
        Some(Round { at, views, view, running: true })
    }

    /// A started server that received its state (an SST, or IST alone
    /// for a restarted node).
    fn state_received(&self, ctx: RecvCtx, gtid: Gtid, receiving: bool) -> Option<Round> {
        let gtid = self.installed_state(gtid);
        let view = self.answered_view()?;
        let (at, views) = self.state_installed(ctx, gtid, receiving, &view)?;
        Some(Round { at, views, view, running: false })
    }

    /// Once a transfer is in: the join ends in the membership the donor
    /// served, or goes on to the one this node is in now. It waits while
    /// the node is in no primary component (its server hears no view
    /// while a joiner), and decides under the lock the group thread takes
    /// when it removes or adds this node, so neither is missed.
    fn after_transfer(&self, round: &Round) -> Next {
        let mut st = self.status();
        loop {
            let member = !st.rejoining && st.view.as_ref().is_some_and(|v| v.primary);
            match st.join.as_ref().map(|j| j.view.clone()) {
                _ if st.closed => return Next::Closed,
                None => return Next::Closed,
                Some(v) if member && v.seqno == round.view.seqno => {
                    st.join = None;
                    return Next::Done(v);
                }
                Some(v) if member => return Next::Again(v),
                Some(_) => st = self.status_cv.wait_timeout(st, Duration::from_secs(1)).unwrap_or_else(|e| e.into_inner()).0,
            }
        }
    }

    /// The server hears the view it joins in, once it holds the state (a
    /// running server's view_cb takes it from joiner to joined, as after
    /// Galera's IST on a partition's heal). A server restarted by an SST
    /// hears it if the IST brought it views (the last one it heard is
    /// older than the cluster's, as after Galera's IST, which ends with
    /// that view), or if the join took more than one transfer.
    fn finish_join(&self, ctx: RecvCtx, view: &View, round: &Round, first: bool) -> bool {
        if round.running || round.views.heard || !first {
            self.hear_join_view(ctx, view, round.views);
        } else if round.views.join_held {
            self.pass_monitors(view.seqno);
        }
        self.join_group(round.at)
    }

    /// Tells the group this node holds the state up to `at`, once the
    /// view it joined in is finished (a Sync follows when the node has
    /// applied up to `at`, which it checks when the Join comes back).
    fn join_group(&self, at: Seqno) -> bool {
        self.group().is_some_and(|g| g.member_state(Transition::Join, at).is_ok())
    }

    /// The server hears the view this node joined in, once it holds the
    /// state (its view_cb takes it from joiner to joined).
    fn hear_join_view(&self, ctx: RecvCtx, view: &View, views: IstViews) {
        if views.join_held {
            // Finishes its seqno after the server heard it (see IstViews).
            return self.deliver_view(ctx, view);
        }
        if !self.app.view(ctx, view) {
            log::error!("view callback failed after IST");
        }
    }

    fn set_sst(&self, s: Sst) {
        self.status().sst = s;
        self.status_cv.notify_all();
    }

    /// Waits until the transfer ends or must be asked for again (or, for
    /// IST alone, until a donor was chosen). `entries`: the join's count
    /// of memberships when the request went out; Requested when the
    /// group added this node again before a donor was chosen.
    fn wait_sst(&self, until_donor: bool, entries: u32) -> Sst {
        let mut st = self.status();
        loop {
            match st.sst {
                s @ Sst::Transferring(_) if until_donor => return s,
                s @ (Sst::Retry | Sst::Received(_) | Sst::Failed(_)) => {
                    st.sst = Sst::Requested;
                    return s;
                }
                _ if st.closed => return Sst::Failed(-libc::ECANCELED),
                Sst::Requested if st.join.as_ref().is_some_and(|j| j.entries != entries) => return Sst::Requested,
                _ => st = self.status_cv.wait_timeout(st, Duration::from_secs(1)).unwrap_or_else(|e| e.into_inner()).0,
            }
        }
    }

    /// The group's answer to a state request (on the group thread).
    pub(super) fn on_state_transfer(&self, joiner: Uuid, donor: Result<Uuid, DonorError>, request: bytes::Bytes, seqno: Seqno, ist: IstRequest) {
        if !self.in_view.load(std::sync::atomic::Ordering::SeqCst) {
            // History a joiner replays from the group's log: a transfer
            // done long ago, this node's own of an earlier membership
            // among them (Galera's joiners never see it).
            return log::debug!("replayed state request of {} (donor {:?})", joiner, donor);
        }
        let name = |id: Uuid| self.member_name(id);
        match donor {
            Ok(d) => log::info!("Member {} requested state transfer: selected donor {}", name(joiner), name(d)),
            // Galera's wording for a busy donor (mtr suppresses it): the
            // joiner asks again every second.
            Err(DonorError::Again) => log::warning!(
                "Member {} requested state transfer from its donor list, but it is impossible to select State Transfer donor: Resource temporarily unavailable",
                name(joiner)
            ),
            Err(e) => log::warning!("Member {} requested state transfer but no donor is available ({:?}); it will retry", name(joiner), e),
        }
        if let Ok(d) = donor {
            self.status().transfers.insert(d, joiner);
        }
        if joiner == self.my_id() {
            let mut st = self.status();
            if let (Ok(_), Some(join)) = (donor, st.join.as_mut()) {
                join.answered = Some(join.view.clone());
            }
            st.sst = donor.map_or(Sst::Retry, Sst::Transferring);
            drop(st);
            self.status_cv.notify_all();
        }
        if donor == Ok(self.my_id()) {
            self.queue.push(super::applier::Item::Donate { request, seqno, joiner, ist });
        }
    }

    /// A donor's transfer failed (see `GroupEvent::StateTransferFailed`):
    /// every member says so in Galera's words. True on its joiner, which
    /// would wait for the state forever: its server's script waits for
    /// data that will not come.
    pub(super) fn on_state_transfer_failed(&self, donor: Uuid, code: i64) -> bool {
        let joiner = self.status().transfers.remove(&donor);
        let peer = joiner.map_or_else(|| "its joiner".to_string(), |j| self.member_name(j));
        let why = std::io::Error::from_raw_os_error(code.unsigned_abs().min(i32::MAX as u64) as i32);
        log::warning!("{}: State transfer to {} failed: {} ({})", self.member_name(donor), peer, code, why);
        if joiner != Some(self.my_id()) || !matches!(self.status().sst, Sst::Transferring(d) if d == donor) {
            return false;
        }
        log::error!("Will never receive state. Need to abort.");
        true
    }

    /// What Galera's joiner does once its state will never come (no
    /// request, a failed transfer): it leaves the group (so the others
    /// keep their quorum) and ends the process. Like Galera's abort, but
    /// without a core dump or the server's crash report: nothing in this
    /// process can finish the join (the server waits for the state in its
    /// startup), and the server has no call to be told to stop.
    pub(super) fn abort_join(&self) -> ! {
        self.leave_inconsistent();
        // SAFETY: _exit ends the process at once; nothing runs after it.
        unsafe { libc::_exit(1) }
    }

    fn member_name(&self, id: Uuid) -> String {
        let st = self.status();
        let found = st.view.as_ref().and_then(|v| v.members.iter().find(|m| m.id == id)).map(|m| m.name.clone());
        found.unwrap_or_else(|| id.to_string())
    }

    /// `sst_received`: the server's joiner thread reports the position the
    /// transferred data holds (or a failure).
    pub fn sst_received(&self, gtid: Gtid, rcode: i32) -> Status {
        let st = self.status().sst;
        if !matches!(st, Sst::Requested | Sst::Transferring(_) | Sst::Retry) {
            log::warning!("sst_received while not joining ({:?})", st);
            return Status::ConnFail;
        }
        if rcode < 0 {
            self.set_sst(Sst::Failed(rcode));
            return Status::Ok;
        }
        if gtid.uuid != self.history() {
            log::error!("State transfer delivered history {} but the cluster's is {}", gtid.uuid, self.history());
            self.set_sst(Sst::Failed(-libc::EREMCHG));
            return Status::Ok;
        }
        log::info!("SST received: {}", gtid);
        self.set_sst(Sst::Received(gtid));
        Status::Ok
    }

    /// The data now holds everything up to `gtid`: start applying after
    /// it and skip what it contains. With a receiver open, the donor's IST
    /// follows (after an SST too, where it is usually empty); the server
    /// hears the views it brings (see `apply_ist_item`). The position the
    /// node holds the state at, for `join_group` once the caller dealt
    /// with the view it joined in, and what the server heard; None when
    /// the node cannot go on.
    fn state_installed(&self, ctx: RecvCtx, gtid: Gtid, receiving: bool, joined_in: &View) -> Option<(Seqno, IstViews)> {
        self.skip_upto.store(gtid.seqno, Ordering::SeqCst);
        self.apply.reset(gtid.seqno);
        self.commit.reset(gtid.seqno);
        self.set_sst(Sst::None);
        // The transferred state replaces the data that diverged: a node
        // voted out and rejoined without a restart applies again (it
        // skipped every writeset since its failure, monitors passed).
        self.inconsistent.store(false, Ordering::SeqCst);
        self.apply_failed.store(SEQNO_UNDEFINED, Ordering::SeqCst);
        // From here a causal read waits for the IST and the backlog, as
        // Galera's does once its apply monitor has the transferred
        // position; it no longer fails at once (see `sync_wait`).
        *self.joined_from.lock().unwrap_or_else(|e| e.into_inner()) = gtid;
        log::info!("state installed at {}; applying what was ordered since", gtid);
        // Older than where this node entered the group (in the view the
        // donor served): the seqnos in between come from the donor's IST.
        let entered = joined_in.seqno;
        let reached = match receiving {
            true => self.receive_ist(ctx, gtid, entered, joined_in.conf_id),
            false if gtid.seqno < entered => {
                log::error!("the state holds up to {} but this node joined at {} and has no IST receiver for the gap", gtid.seqno, entered);
                None
            }
            false => Some((gtid.seqno, IstViews::default())),
        };
        reached
    }

    /// The donor's applier: once everything up to the request is
    /// committed, the server starts its donor script (asynchronously).
    pub(super) fn donate(&self, ctx: RecvCtx, request: &[u8], seqno: Seqno, joiner: Uuid, ist: IstRequest) {
        self.apply.wait_left(seqno, Some(Instant::now() + Duration::from_secs(600)));
        if self.donate_ist(ctx, request, seqno, joiner, &ist) {
            return;
        }
        let state = self.last_committed();
        log::info!("donating state {} (request ordered at {})", state, seqno);
        self.expect_sst_sent(joiner, &ist, seqno);
        if !self.app.sst_donate(ctx, request, state, false) {
            // Galera's words (mtr suppresses them where a test provokes it).
            log::error!("SST failed: the server did not start its donor script; rejoining");
            self.sst_sent(Gtid::new(state.uuid, SEQNO_UNDEFINED), -libc::ECANCELED);
        }
    }

    /// `sst_sent`: the donor script finished; the donor rejoins the group.
    pub fn sst_sent(&self, gtid: Gtid, rcode: i32) -> Status {
        if self.node_state() != super::state::NodeState::Donor {
            log::warning!("sst_sent while not a donor");
            return Status::ConnFail;
        }
        let after_sst = self.take_after_sst();
        if rcode < 0 {
            log::warning!("state transfer to the joiner failed ({})", rcode);
        } else {
            log::info!("{} donated", gtid);
            if let Some(sst) = after_sst {
                self.ist_after_sst(gtid, sst);
            }
        }
        // Galera's donor joins with the error code as its position: the
        // group tells the joiner that its state will not come.
        let at = if rcode < 0 { rcode as Seqno } else { gtid.seqno.max(0) };
        match self.group() {
            Some(g) if g.member_state(Transition::Join, at).is_ok() => Status::Ok,
            _ => Status::ConnFail,
        }
    }
}
