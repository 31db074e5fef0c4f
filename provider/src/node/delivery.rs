//! What the group delivers, handled on the group thread in total order:
//! certification happens here, once per seqno, so every node certifies the
//! same stream in the same order. Local writesets go back to the client
//! thread waiting in `certify`; everything else is queued for appliers.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use bytes::Bytes;

use super::applier::Item;
use super::saved_state::Position;
use super::state::NodeState;
use super::Shared;
use crate::cert::Verdict;
use crate::group::{Delivery, GroupEvent, MemberState, Transition, View};
use crate::gtid::{Gtid, Seqno, Uuid, SEQNO_UNDEFINED};
use crate::log;
use crate::writeset::{flags, WriteSet};

/// The outcome of a local proposal, handed from the group thread to the
/// client thread waiting for it.
#[derive(Clone, Debug)]
pub(super) enum Outcome {
    Ordered { seqno: Seqno, verdict: Verdict },
    /// Never ordered: no primary component took it, or the node closed.
    Failed,
}

pub(super) struct Pending {
    outcome: Mutex<Option<Outcome>>,
    cv: Condvar,
}

impl Pending {
    pub fn new() -> Arc<Pending> {
        Arc::new(Pending { outcome: Mutex::new(None), cv: Condvar::new() })
    }

    pub fn complete(&self, o: Outcome) {
        let mut g = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        g.get_or_insert(o);
        self.cv.notify_all();
    }

    /// Waits for the outcome. No timeout: once proposed, a writeset is
    /// either ordered or failed by the group (which fails one that makes
    /// no progress), and the client must learn which (answering early
    /// could contradict what other nodes commit).
    pub fn wait(&self) -> Outcome {
        self.wait_or(|| false, || {})
    }

    /// `wait`, and once `aborted` says so, `give_up` (once): it asks the
    /// group to fail the proposal if it still can.
    pub fn wait_or(&self, aborted: impl Fn() -> bool, give_up: impl FnOnce()) -> Outcome {
        // How often an aborted flag is looked at: a KILL is answered
        // within this.
        const LOOK: std::time::Duration = std::time::Duration::from_millis(100);
        let mut give_up = Some(give_up);
        let mut g = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(o) = g.clone() {
                return o;
            }
            if give_up.is_some() && aborted() {
                drop(g);
                (give_up.take().expect("checked"))();
                g = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
                continue;
            }
            g = self.cv.wait_timeout(g, LOOK).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// The node's end of the group: owned by the group thread.
pub(super) struct NodeDelivery(pub Arc<Shared>);

impl NodeDelivery {
    /// Leaving waits for the driver, which this thread runs: another
    /// thread leaves.
    fn off_driver(&self, name: &str, leave: fn(&Shared)) {
        let shared = self.0.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || leave(&shared))
            .map(drop)
            .unwrap_or_else(|e| log::error!("cannot start leaving the cluster: {}", e));
    }
}

impl Delivery for NodeDelivery {
    fn deliver(&mut self, events: &mut Vec<GroupEvent>) {
        for ev in events.drain(..) {
            match ev {
                GroupEvent::Halted { .. } => self.off_driver("lockstep-halt", Shared::leave_inconsistent),
                GroupEvent::StateTransferFailed { donor, code } => {
                    if self.0.on_state_transfer_failed(donor, code) {
                        self.off_driver("lockstep-abort", |s| s.abort_join());
                    }
                }
                ev => self.0.on_event(ev),
            }
        }
        self.0.sync_acknowledgements();
    }

    fn tick(&mut self) {
        self.0.watch_appliers(std::time::Instant::now());
    }

    fn apply_lag_ms(&mut self) -> u32 {
        self.0.apply_lag().as_millis().min(u32::MAX as u128) as u32
    }

    fn snapshot(&mut self) -> Vec<u8> {
        self.0.cert.lock().unwrap_or_else(|e| e.into_inner()).encode()
    }
}

impl Shared {
    pub(super) fn on_event(&self, ev: GroupEvent) {
        if matches!(ev, GroupEvent::Ordered { .. } | GroupEvent::View(_) | GroupEvent::Restored { .. }) {
            self.settle_tail();
        }
        match ev {
            GroupEvent::Ordered { seqno, origin, token, payload } => self.on_ordered(seqno, origin, token, payload),
            GroupEvent::View(v) => self.on_view(v),
            GroupEvent::MemberState { member, state, desync_count } if member == self.my_id() => {
                self.on_member_state(state, desync_count)
            }
            GroupEvent::MemberState { .. } => {}
            GroupEvent::ProposalFailed { token } => {
                self.complete(token, Outcome::Failed);
            }
            GroupEvent::StateTransfer { joiner, donor, request, seqno, ist } => self.on_state_transfer(joiner, donor, request, seqno, ist),
            // Our own fences are the group layer's business (it resends
            // what they cover); others' say nothing to this node. Pieces
            // of big writesets likewise (the driver drops them, and turns
            // a complete one into `Ordered`).
            GroupEvent::Fenced { .. } | GroupEvent::Assembling { .. } | GroupEvent::Assembled { .. } => {}
            GroupEvent::Vote { member, seqno, code, message } => self.on_vote(member, seqno, code, &message),
            GroupEvent::VoteRequest { seqno } => self.on_vote_request(seqno),
            GroupEvent::VoteResult { seqno, result } => self.on_vote_result(seqno, result),
            GroupEvent::VoteAnswer { seqno, result } => self.ballots.decided(seqno, result),
            GroupEvent::Restored { node, view } => self.on_restored(&node, view),
            GroupEvent::Rejoining => self.on_rejoining(),
            GroupEvent::Bootstrapping => self.status().bootstrapping = true,
            // NodeDelivery::deliver takes them (leaving needs an Arc).
            GroupEvent::Halted { .. } | GroupEvent::StateTransferFailed { .. } => {}
        }
    }

    /// The group went on without this node (it was evicted, or the others
    /// formed a new component): the group layer joins it again, and the
    /// node catches up from what its data holds, by IST if a donor has it.
    fn on_rejoining(&self) {
        self.lag.clear(); // the gap is filled by IST or SST, not from these marks
        self.pace.clear();
        self.fail_pending();
        self.rejoins.fetch_add(1, Ordering::SeqCst);
        // Set under the lock the joiner's applier checks before it ends a
        // join (see `sst::Join`): from here that join waits for the
        // membership this node rejoins, and goes on to it.
        let joining = {
            let mut st = self.status();
            st.rejoining = true;
            st.join.is_some()
        };
        let was_member = self.in_view.swap(false, Ordering::SeqCst);
        if joining {
            // Its appliers hold only what queued behind the join, which
            // the join's transfer covers: nothing to drain, and the join
            // keeps its own position.
            log::info!("this node was removed from the group while joining: its join goes on into the membership it rejoins");
        } else {
            self.gap_starts_after(was_member);
        }
        // The group's log is replayed from its start or a snapshot: the
        // index is rebuilt from there, as on every other member.
        self.cert.lock().unwrap_or_else(|e| e.into_inner()).reset(SEQNO_UNDEFINED);
        let from = *self.joined_from.lock().unwrap_or_else(|e| e.into_inner());
        log::info!("rejoining the primary component from {} (committed up to {})", from, self.last_committed().seqno);
    }

    /// What a member rejoining from a running state asks its donor for.
    /// What was ordered while this node was a member is already in its
    /// appliers' queue and will commit: the gap starts after it. (From
    /// what has committed so far, a node thawed with a full queue would
    /// be sent those seqnos again and apply them twice.)
    fn gap_starts_after(&self, was_member: bool) {
        let (from, held) = if was_member {
            let ordered = self.last_ordered.load(Ordering::SeqCst);
            (Gtid::new(self.history(), ordered), ordered)
        } else {
            (self.last_committed(), SEQNO_UNDEFINED)
        };
        self.drain_to.store(held, Ordering::SeqCst);
        *self.joined_from.lock().unwrap_or_else(|e| e.into_inner()) = from;
    }

    /// The group state came from a leader's snapshot: take its
    /// certification index (so this node certifies like everyone else) and
    /// its current view.
    fn on_restored(&self, node: &[u8], view: View) {
        self.lag.clear(); // a new position: the marks of the old one mean nothing
        self.pace.clear();
        if let Err(e) = self.cert.lock().unwrap_or_else(|e| e.into_inner()).restore(node) {
            log::error!("the group's snapshot has an unusable certification index ({}): this node cannot certify consistently", e);
            return;
        }
        self.last_ordered.store(view.seqno, Ordering::SeqCst);
        self.status().history = view.history;
        // The seqnos up to the snapshot reach this node, if at all, by
        // its own IST: what the gcache holds before them waits for it.
        let mut gcache = self.gcache.lock().unwrap_or_else(|e| e.into_inner());
        gcache.set_history(view.history);
        gcache.continue_after(view.seqno);
        drop(gcache);
        self.take_view(view, None);
    }

    fn on_ordered(&self, seqno: Seqno, origin: Uuid, token: u64, payload: Bytes) {
        self.counters.received.fetch_add(1, Ordering::Relaxed);
        self.counters.received_bytes.fetch_add(payload.len() as u64, Ordering::Relaxed);
        let (ws, verdict) = self.certify_ordered(seqno, payload.clone());
        let certified = matches!(verdict, Verdict::Pass { .. });
        self.gcache.lock().unwrap_or_else(|e| e.into_inner()).push(seqno, crate::gcache::Cached::Writeset { payload, certified });
        self.last_ordered.store(seqno, Ordering::SeqCst);
        if !self.in_view.load(Ordering::SeqCst) {
            // Ordered before this node became a member (a joiner replaying
            // the log): it is in the state the joiner will receive, and
            // only feeds certification here.
            return;
        }
        self.lag.ordered(seqno, std::time::Instant::now());
        if origin == self.my_id() && token != 0 && self.acknowledge(token, Outcome::Ordered { seqno, verdict }) {
            return;
        }
        // Remote, a local rollback fragment (applied here too), or a local
        // writeset whose client is gone: appliers take it.
        self.queue.push(Item::Apply { seqno, ws, verdict });
        self.check_flow();
    }

    fn certify_ordered(&self, seqno: Seqno, payload: Bytes) -> (WriteSet, Verdict) {
        let mut cert = self.cert.lock().unwrap_or_else(|e| e.into_inner());
        match WriteSet::decode(payload) {
            Ok(ws) => {
                let v = cert.certify(&ws, seqno);
                log::debug!("certified {} from {} trx {} last_seen {} keys {}: {:?}", seqno, ws.source, ws.trx_id as i64, ws.last_seen, ws.keys.len(), v);
                (ws, v)
            }
            Err(e) => {
                // Every node received the same bytes and reaches the same
                // verdict: deliver an empty dummy so the seqno still
                // passes through the server in order.
                log::error!("writeset {} cannot be decoded ({}); applying it as a no-op", seqno, e);
                cert.skip(seqno);
                let ws = WriteSet::new(flags::TRX_START | flags::TRX_END, Uuid::NIL, u64::MAX, u64::MAX, seqno - 1, vec![], Bytes::new());
                (ws, Verdict::Fail(crate::cert::FailReason::BelowIndex))
            }
        }
    }

    /// Hands the outcome of a local writeset the group ordered to its
    /// client, once the gcache that holds it is on disk when
    /// `lockstep.log_sync` asks so (see `log_sync`); false if nobody waits.
    fn acknowledge(&self, token: u64, o: Outcome) -> bool {
        if !self.setting(|s| s.log_sync) {
            return self.complete(token, o);
        }
        let Some(p) = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&token) else { return false };
        self.unsynced.lock().unwrap_or_else(|e| e.into_inner()).push((p, o));
        true
    }

    /// After a delivery batch: its acknowledgements go to the sync thread,
    /// with what the sync must cover.
    fn sync_acknowledgements(&self) {
        let acks = std::mem::take(&mut *self.unsynced.lock().unwrap_or_else(|e| e.into_inner()));
        if acks.is_empty() {
            return;
        }
        let media = self.gcache.lock().unwrap_or_else(|e| e.into_inner()).sync_targets();
        self.syncer.submit(acks, media);
    }

    /// Hands an outcome to the waiting client; false if nobody waits.
    pub(super) fn complete(&self, token: u64, o: Outcome) -> bool {
        let p = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&token);
        match p {
            Some(p) => {
                p.complete(o);
                true
            }
            None => false,
        }
    }

    /// Fails every proposal still waiting (the group stopped).
    pub(super) fn fail_pending(&self) {
        let all: Vec<_> = self.pending.lock().unwrap_or_else(|e| e.into_inner()).drain().collect();
        for (_, p) in all {
            p.complete(Outcome::Failed);
        }
    }

    fn on_view(&self, v: View) {
        if v.primary {
            // A rejoining node replays the views of its previous
            // incarnation (not its own, my_idx -1): its data and monitors
            // are where they were, only certification follows the replay.
            let replayed = v.my_idx < 0 && self.status().rejoining;
            let resume = if replayed { None } else { self.adopt_history(&v) };
            self.cert.lock().unwrap_or_else(|e| e.into_inner()).skip(v.seqno);
            let mut gcache = self.gcache.lock().unwrap_or_else(|e| e.into_inner());
            gcache.set_history(v.history);
            gcache.push(v.seqno, crate::gcache::Cached::View { conf: Bytes::from(v.encode()) });
            drop(gcache);
            self.last_ordered.store(v.seqno, Ordering::SeqCst);
            return self.take_view(v, resume);
        }
        self.take_view(v, None);
    }

    /// Records a view and queues what the server must hear of it. Views
    /// before this node is a member (a joiner replaying the log) only move
    /// the position. `resume`: the restart view and the gcache tail the
    /// server hears first (see `replay`).
    fn take_view(&self, v: View, resume: Option<(View, super::replay::Tail)>) {
        if v.primary && v.my_idx >= 0 {
            // Running: the position lives in InnoDB until a clean close.
            let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
            saved.set(Position { uuid: v.history, seqno: SEQNO_UNDEFINED, safe_to_bootstrap: v.members.len() == 1 });
            super::view_state::save(saved.dir(), self.my_id(), &v);
        }
        let (first, joining, rejoined) = {
            let mut st = self.status();
            if v.my_idx < 0 && (!st.connected_sent || st.rejoining) {
                return;
            }
            if self.join_takes(&mut st, &v) {
                drop(st);
                self.status_cv.notify_all();
                if v.primary {
                    self.refresh_fc_limits();
                }
                return;
            }
            let first = !st.connected_sent;
            let rejoined = std::mem::take(&mut st.rejoining);
            st.connected_sent = true;
            self.in_view.store(true, Ordering::SeqCst);
            st.history = v.history;
            st.view = Some(v.clone());
            if v.primary {
                st.last_primary_members = v.members.len();
            } else {
                st.state = NodeState::Connected;
                st.member = None;
            }
            let joining = !st.bootstrapping;
            if rejoined || (first && joining) {
                st.join = Some(super::sst::Join::new(v.clone()));
            }
            (first, joining, rejoined)
        };
        self.status_cv.notify_all();
        if v.primary {
            self.refresh_fc_limits();
            let (lower, upper) = self.fc_limits();
            log::info!("Flow-control interval: [{}, {}]", lower, upper);
        }
        if rejoined {
            // The server knows this node already: no connected_cb, but a
            // state transfer for what the group ordered without it.
            self.queue.push(Item::Joining(v));
            return;
        }
        if first {
            match resume {
                Some((view, tail)) => self.queue.push(Item::Resume { view, tail }),
                None => self.queue.push(Item::Connected(v.clone())),
            };
            if joining {
                // The view a joiner enters with is in the state it will
                // receive: no view_cb for it now; the server hears it
                // after the state transfer if the IST brought it older
                // views (see `state_received`), as Galera's IST ends.
                self.queue.push(Item::Joining(v));
                return;
            }
        }
        self.queue.push(Item::View(v));
    }

    /// A view while a join is in flight (see `sst::Join`), which takes it
    /// (true) when the server must not hear it now: it is a joiner, and
    /// hears the view it joins in once it holds the state. A non-primary
    /// view only holds the join's end back; the primary view this node
    /// rejoins in becomes the join's. The views of the membership it is
    /// in are queued as always (false): the server hears them after the
    /// join, or not at all if the transfer holds them.
    fn join_takes(&self, st: &mut super::NodeStatus, v: &View) -> bool {
        let Some(join) = st.join.as_mut() else { return false };
        if v.primary && !st.rejoining {
            return false;
        }
        if v.primary {
            log::info!("this node is a member again at {} while joining: its join now enters this view", v.seqno);
            join.reenter(v.clone());
            st.rejoining = false;
            self.in_view.store(true, Ordering::SeqCst);
            st.history = v.history;
            st.last_primary_members = v.members.len();
        } else {
            st.state = NodeState::Connected;
            st.member = None;
        }
        st.view = Some(v.clone());
        true
    }

    /// A bootstrap that starts a new history (this node had no position)
    /// begins right before its first view. One that continues the tail of
    /// this node's gcache starts certifying there, and its server hears
    /// the restart view and the tail first: what it returns.
    fn adopt_history(&self, v: &View) -> Option<(View, super::replay::Tail)> {
        let position = self.cert.lock().unwrap_or_else(|e| e.into_inner()).position();
        if v.history == self.history() && position == v.seqno - 1 {
            return None;
        }
        if let Some(tail) = self.tail_before(v) {
            self.cert.lock().unwrap_or_else(|e| e.into_inner()).reset(v.seqno - 1);
            return Some((self.restart_view(tail, v), tail));
        }
        log::info!("starting history {} at {} (was {}:{})", v.history, v.seqno - 1, self.history(), position);
        self.cert.lock().unwrap_or_else(|e| e.into_inner()).reset(v.seqno - 1);
        self.apply.reset(v.seqno - 1);
        self.commit.reset(v.seqno - 1);
        self.status().history = v.history;
        None
    }

    fn on_member_state(&self, state: MemberState, desync_count: u32) {
        let was = {
            let mut st = self.status();
            let was = st.member;
            st.member = Some(state);
            st.desync_count = desync_count;
            st.member_epoch += 1;
            st.state = NodeState::in_primary(state);
            was
        };
        self.status_cv.notify_all();
        self.check_flow();
        if let Some(was) = was.filter(|w| *w != state) {
            // Galera's line, which galera_3nodes.galera_sst_stateless counts
            // (the DONOR ones) in the donor's log.
            log::info!("Shifting {} -> {} (TO: {})", galera_name(was), galera_name(state), self.last_ordered.load(Ordering::SeqCst));
        }
        match state {
            MemberState::Synced if was != Some(MemberState::Synced) => {
                self.queue.push(Item::Synced);
            }
            MemberState::Joined => {
                self.awaiting_sync.store(true, Ordering::SeqCst);
                self.maybe_sync();
            }
            _ => {}
        }
    }

    /// A joined node tells the group it is synced once its backlog is down
    /// to the flow-control lower limit (Galera's SYNC), once.
    pub(super) fn maybe_sync(&self) {
        if !self.awaiting_sync.load(Ordering::Relaxed) || self.queue.len() > self.fc_lower_limit() {
            return;
        }
        if self.awaiting_sync.swap(false, Ordering::SeqCst) {
            if let Some(g) = self.group() {
                let _ = g.member_state(Transition::Sync, self.apply.last_left());
            }
        }
    }

    pub(super) fn fc_lower_limit(&self) -> usize {
        self.fc_limits().0
    }

    /// Galera's flow-control interval: the upper limit is fc_limit scaled
    /// by the square root of the cluster size (unless single-primary), the
    /// lower one that times fc_factor.
    pub(super) fn fc_limits(&self) -> (usize, usize) {
        let s = self.settings();
        let members = self.status().last_primary_members.max(1) as f64;
        let upper = if s.fc_single_primary { s.fc_limit as f64 } else { s.fc_limit as f64 * members.sqrt() };
        let upper = (upper + 0.5) as usize;
        ((upper as f64 * s.fc_factor + 0.5) as usize, upper)
    }

    /// After the backlog changed: ask the group to stop when it passes the
    /// upper limit, to go on when it is back under the lower one. Only a
    /// joined or synced member throttles the group: a donor or desynced
    /// node may fall behind (Galera's default, gcs.sync_donor=no).
    pub(super) fn check_flow(&self) {
        let mut requested = self.fc_requested.lock().unwrap_or_else(|e| e.into_inner());
        let len = self.queue.len();
        let (lower, upper) = self.limits_after_big_apply(len, self.fc_limits_cached());
        let (late, fresh) = self.lag_vs_bound();
        let signal = if !*requested && (len > upper || late) && self.flow_eligible() {
            crate::group::Signal::Stop
        } else if *requested && ((fresh && len <= lower) || !self.flow_eligible()) {
            crate::group::Signal::Cont
        } else {
            return;
        };
        *requested = signal == crate::group::Signal::Stop;
        // Still under the lock: signals reach the group in decision order.
        if let Some(g) = self.group() {
            g.flow(signal);
        }
    }

    /// This node's lag against `lockstep.max_lag_ms` (see `lag::against`):
    /// how long its oldest writeset has waited, or how long its backlog
    /// takes at the pace it commits, whichever is longer (see
    /// `lag::ApplyPace`).
    fn lag_vs_bound(&self) -> (bool, bool) {
        let bound = self.max_lag_ms.load(Ordering::Relaxed);
        if bound == 0 {
            return super::lag::against(std::time::Duration::ZERO, std::time::Duration::ZERO, 0);
        }
        // One reading of the backlog and the clock for both measures.
        let (committed, ordered, now) = (self.apply.last_left(), self.last_ordered.load(Ordering::SeqCst), std::time::Instant::now());
        self.pace.note(committed, ordered, now);
        let drain = self.pace.drain(ordered.saturating_sub(committed).max(0) as u64);
        super::lag::against(self.lag.age(committed, ordered, now), drain, bound)
    }

    /// `wsrep_apply_lag_ms`: how long the oldest writeset ordered but not
    /// yet committed here has waited.
    pub(super) fn apply_lag(&self) -> std::time::Duration {
        let committed = self.apply.last_left();
        self.lag.age(committed, self.last_ordered.load(Ordering::SeqCst), std::time::Instant::now())
    }

    /// `wsrep_cluster_apply_lag_ms`: the worst the members reported, this
    /// node's own lag as of now (`own_ms`, read once for both variables)
    /// included.
    pub(super) fn cluster_apply_lag_ms(&self, own_ms: i64) -> i64 {
        self.group().map_or(own_ms, |g| own_ms.max(g.cluster_apply_lag_ms() as i64))
    }

    /// The limits around a big writeset's apply (see `fc_grace`).
    fn limits_after_big_apply(&self, len: usize, usual: (usize, usize)) -> (usize, usize) {
        let big = self.big_applying.load(Ordering::SeqCst) > 0;
        // Only check_flow reads and stores the mark, under its lock.
        let (low, limits) = super::fc_grace::limits(self.fc_grace_low.load(Ordering::SeqCst), big, len, usual);
        self.fc_grace_low.store(low, Ordering::SeqCst);
        limits
    }

    fn flow_eligible(&self) -> bool {
        let inconsistent = self.apply_failed.load(Ordering::SeqCst) != SEQNO_UNDEFINED;
        let stalled = self.apply_stalled.load(Ordering::SeqCst);
        !inconsistent && !stalled && matches!(self.status().member, Some(MemberState::Synced) | Some(MemberState::Joined))
    }

    /// The limits change with the view and the options only: cached so
    /// that the per-writeset check takes no lock.
    fn fc_limits_cached(&self) -> (usize, usize) {
        let packed = self.fc_cached_limits.load(Ordering::Relaxed);
        ((packed >> 32) as usize, (packed & 0xffff_ffff) as usize)
    }

    pub(super) fn refresh_fc_limits(&self) {
        self.max_lag_ms.store(self.setting(|s| s.max_lag_ms), Ordering::Relaxed);
        self.hang_appliers.store(self.setting(|s| s.hang_appliers), Ordering::Relaxed);
        let (lower, upper) = self.fc_limits();
        let packed = ((lower.min(u32::MAX as usize) as u64) << 32) | upper.min(u32::MAX as usize) as u64;
        self.fc_cached_limits.store(packed, Ordering::Relaxed);
    }
}

/// A member state as Galera's "Shifting" lines name it.
fn galera_name(state: MemberState) -> &'static str {
    match state {
        MemberState::Joiner => "JOINER",
        MemberState::Donor => "DONOR/DESYNCED",
        MemberState::Joined => "JOINED",
        MemberState::Synced => "SYNCED",
    }
}
