//! The Raft node on its own thread: takes proposals and network frames,
//! ticks, persists to the in-memory log, applies committed entries to the
//! group state and hands the resulting events to the node, in order.
//!
//! Nothing of the Raft log survives a restart (DESIGN: every process start
//! is a new member that catches up by IST/SST), so the log lives in memory.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use raft::prelude::{ConfChange, ConfChangeType};
use raft::{ProgressState, RawNode, StateRole};

use super::commands::Command;
use super::config::{arbitrator_log, raft_node_with, DriverConfig, Limits, Start};
use super::incarnation::Incarnation;
use super::io::{Clock, Links};
use super::log::GroupLog;
use crate::group::flow::gate::FlowGate;
use crate::group::flow::Flow;
use crate::group::membership::Members;
use crate::group::membership::joining::Joining;
use crate::group::order::Order;
use crate::group::primary::Primary;
use crate::group::state::{GroupEvent, GroupState};
use crate::group::wire::entry::{MemberInfo, Membership};
use crate::log;

/// Receives the group's events in total order, on the thread running the
/// driver (the group thread or a link reader: see `runner`), one call at a
/// time. It must not block for long: Raft heartbeats wait while it runs.
pub trait Delivery: Send + 'static {
    fn deliver(&mut self, events: &mut Vec<GroupEvent>);
    /// The node layer's state to ship in a Raft snapshot, as of every event
    /// delivered so far (its certification index).
    fn snapshot(&mut self) -> Vec<u8>;
    /// Called on every tick of the driver, events or not; the same
    /// rule as `deliver` (no blocking).
    fn tick(&mut self) {}
    /// This member's apply lag in ms, for the others (`cluster_lag`).
    fn apply_lag_ms(&mut self) -> u32 {
        0
    }
}


/// A member keeps up (`Driver::keeps_up`, for a relay or a new leader)
/// only if heard this recently: five heartbeat rounds, so that one late
/// answer does not move a relay, while a relay that froze starves its
/// segment for half a second only.
const KEEPS_UP_HEARD_WITHIN: Duration = Duration::from_millis(500);

/// How many commands one loop turn takes before handling a Ready: proposals
/// that arrive together are appended and sent together.
const BATCH: usize = 256;

#[derive(Default)]
pub(crate) struct Counters {
    /// Local proposals not yet delivered or failed (`wsrep_local_send_queue`).
    pub send_queue: AtomicU64,
    pub stopped: AtomicBool,
    /// `wsrep_cluster_weight`: the primary component's weight, 0 outside one.
    pub cluster_weight: AtomicU64,
    /// This member's weight as the group has ordered it.
    pub own_weight: AtomicU64,
    /// The leader's raft id as this member knows it (0: none known).
    pub leader: AtomicU64,
    /// Its followers' answer times, for the metrics endpoint.
    pub round_trips: crate::group::order::round_trips::Shown,
    /// Causal reads that took the leader's last index without Raft's
    /// heartbeat round (see `reads`).
    pub reads_by_leader: AtomicU64,
}

impl Counters {
    /// One local proposal less in flight; never below zero (a proposal
    /// counted as failed may still be ordered later, and is then counted
    /// again).
    pub fn sent_one_less(&self) {
        let _ = self.send_queue.fetch_update(AtomicOrdering::Relaxed, AtomicOrdering::Relaxed, |n| Some(n.saturating_sub(1)));
    }
}

pub(crate) struct Driver {
    /// The current Raft node and what it learned (see `incarnation`).
    pub(super) incarnation: Incarnation,
    pub(super) inbox: super::commands::Inbox,
    pub(super) state: GroupState,
    pub(super) delivery: Box<dyn Delivery>,
    pub(super) me: MemberInfo,
    pub(super) net: Arc<dyn Links>,
    /// What every Raft node of this member starts from (a bootstrap, a
    /// rejoin, a reform).
    pub(super) raft_config: raft::Config,
    pub(super) limits: Limits,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) tick: Duration,
    pub(super) next_tick: Instant,
    pub(super) events: Vec<GroupEvent>,
    pub(super) next_read: u64,
    pub(super) counters: Arc<Counters>,
    /// Entry bytes applied since the last snapshot (big writesets' pieces
    /// make entries of very different sizes).
    pub(super) applied_bytes: u64,
    pub(super) snapshots: super::snapshot_watch::SnapshotWatch,
    /// Members the transport is asked to keep links to.
    pub(super) peers: std::collections::BTreeSet<u64>,
    /// Departed members, and when to drop their links.
    pub(super) departed: Vec<(u64, Instant)>,
    /// Index of the entry (or snapshot) being applied.
    pub(super) applying: u64,
    /// Whether this turn took every command waiting, frames among them:
    /// only then is when each member was last heard current (see
    /// `cut_off`). A turn after a long one may find more than a batch.
    pub(super) inbox_drained: bool,
    /// When a dropped message of each non-member sender was last said
    /// (see `drop_from_non_member`).
    pub(super) non_member_said: BTreeMap<u64, Instant>,
    /// Frame kinds this build does not know, said once each in the log
    /// (at most 256): a member of a newer build sends them, and a rolling
    /// upgrade must not meet one (a newer build sends a new kind only to
    /// peers whose handshake offers the feature).
    pub(super) unknown_kinds: std::collections::BTreeSet<u8>,
    /// This member's writesets until ordered, and what goes out of
    /// the order (see `order`).
    pub(super) order: Order,
    /// Joining, leaving, removals, the leader's placement (see
    /// `membership`).
    pub(super) members: Members,
    /// Who spoke lately and whether this side may order (see `primary`).
    pub(super) primary: Primary,
    pub(super) flow: Flow,
}

impl Driver {
    pub fn new(
        cfg: DriverConfig,
        inbox: super::commands::Inbox,
        delivery: Box<dyn Delivery>,
        net: Arc<dyn Links>,
        clock: Arc<dyn Clock>,
        counters: Arc<Counters>,
        flow: Arc<FlowGate>,
    ) -> raft::Result<Driver> {
        let id = cfg.me.id.raft_id();
        let now = clock.now();
        let (voters, bootstrap, joining, last_peers) = match cfg.start {
            Start::Bootstrap { history, position } => (vec![id], Some((history, position)), None, Vec::new()),
            Start::Join { peers } => (vec![], None, Some(Joining::new(peers.clone(), now)), peers),
        };
        let raw = raft_node_with(&cfg.raft, voters)?;
        Ok(Driver {
            raft_config: cfg.raft.clone(),
            limits: cfg.limits,
            clock,
            incarnation: Incarnation::first(arbitrator_log(raw, cfg.me.arbitrator)),
            inbox,
            state: GroupState::new(cfg.me.id),
            delivery,
            me: cfg.me,
            net,
            tick: cfg.tick,
            next_tick: now + cfg.tick,
            inbox_drained: false,
            non_member_said: BTreeMap::new(),
            unknown_kinds: Default::default(),
            events: Vec::new(),
            next_read: 1,
            counters,
            applied_bytes: 0,
            snapshots: Default::default(),
            peers: Default::default(),
            departed: Vec::new(),
            applying: 0,
            order: Order::new(cfg.limits.piece, now),
            members: Members::new(bootstrap, joining, last_peers, cfg.previous, now),
            primary: Primary::new(cfg.timeouts, now, cfg.tick),
            flow: Flow::new(flow, now),
        })
    }

    /// For the simulator's checks: the group state, the Raft node, and
    /// whether this member is in a primary component as its server would
    /// be told.
    pub(crate) fn group_state(&self) -> &GroupState {
        &self.state
    }

    pub(crate) fn raft(&self) -> &RawNode<GroupLog> {
        &self.incarnation.raw
    }

    pub(crate) fn is_primary_member(&self) -> bool {
        !self.is_joining() && self.state.member(self.me.id).is_some() && self.incarnation.quorum.is_primary() && self.state.is_primary()
    }

    pub(crate) fn is_joining(&self) -> bool {
        self.members.is_joining()
    }

    /// A bootstrapping member campaigns at once: a sole voter wins.
    pub(crate) fn campaign_if_bootstrapping(&mut self) {
        if self.members.bootstrap.is_some() {
            let _ = self.incarnation.raw.campaign();
        }
    }

    /// How long until the next tick is due: the group thread waits for
    /// commands at most that long.
    pub(super) fn until_tick(&self) -> Duration {
        self.next_tick.saturating_duration_since(self.clock.now())
    }

    /// `step` on a live thread (see `runner`), its time counted as work
    /// (see `load`); false once stopped.
    pub(super) fn turn(&mut self) -> bool {
        let woke = self.clock.now();
        let go = self.step(None);
        self.flow.worked(woke, self.clock.now());
        go
    }

    /// The driver is done: its replicating threads learn it, its queue
    /// closes (a link reader waiting for room there gives up), then the
    /// transport, which joins the readers.
    pub(super) fn close(self) {
        self.counters.stopped.store(true, AtomicOrdering::SeqCst);
        let net = self.net.clone();
        drop(self);
        net.stop();
    }

    /// Everything the driver does but wait: the command that woke it and
    /// those queued behind it, the tick if one is due, then Raft's `Ready`
    /// and what follows from it. False once stopped. Nothing here blocks,
    /// so a simulation can call it with its own clock.
    pub(crate) fn step(&mut self, first: Option<Command>) -> bool {
        // Both are taken, so that one stop is not seen twice.
        let watched = self.clock.stood_still();
        if let Some(gap) = self.primary.turn_begins(self.clock.now()).or(watched) {
            self.stood_still(gap);
        }
        let go = self.step_commands(first);
        self.primary.turn_ended(self.clock.now());
        go
    }

    fn step_commands(&mut self, first: Option<Command>) -> bool {
        if let Some(cmd) = first {
            if !self.handle(cmd) {
                return false;
            }
        }
        self.inbox_drained = false;
        for _ in 0..BATCH {
            let Some(cmd) = self.inbox.try_recv() else {
                self.inbox_drained = true;
                break;
            };
            if !self.handle(cmd) {
                return false;
            }
        }
        if self.clock.now() >= self.next_tick {
            self.incarnation.raw.tick();
            self.next_tick += self.tick;
            self.on_tick();
        }
        self.maybe_bootstrap();
        self.rejoin_once_led();
        self.net.set_eager(self.flow.has_spare_time());
        self.on_ready();
        if std::mem::take(&mut self.order.pump_due) {
            self.pump();
            self.on_ready();
        }
        if std::mem::take(&mut self.members.members_moved) {
            // Waiting for the tick cost a joiner up to two of them
            // between its JOIN and its SYNC (the leader's promotion, then
            // the release), a window in which the server has the
            // transferred state but is not ready for clients.
            self.promote_learners();
            self.release_sync();
            self.on_ready();
        }
        self.advance_weighted_commit();
        if let Some(index) = self.members.removed_at.take() {
            self.on_removed_notice(index);
        }
        if let Some(gap) = self.clock.stood_still() {
            // The process stopped inside this turn.
            self.stood_still(gap);
        }
        self.flush_events();
        self.maybe_snapshot();
        true
    }

    fn handle(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Propose { token, body } => self.propose(token, body),
            Command::Send(data) => self.propose_or_keep(data),
            Command::Cancel(token) => {
                if let Some(failed) = self.order.proposals.cancel(token) {
                    log::info!("a client gave up its writeset before it was wholly sent: it is withdrawn");
                    self.fail(failed);
                }
            }
            Command::ReadIndex(reply) => self.ask_read(reply),
            Command::Net(inbound) => self.on_net(inbound),
            Command::Leave(reply) => self.start_leaving(reply),
            Command::Isolate(on) => self.net.set_isolated(on),
            Command::Flow(signal) => {
                let me = self.me.id.raft_id();
                if let Some(sig) = self.flow.local(me, signal, self.clock.now()) {
                    self.broadcast_flow(sig);
                }
                self.publish_flow();
            }
            Command::ResetFlowCounters => {
                self.flow.reset_counters();
                self.publish_flow();
            }
            Command::Timeouts(t) => self.primary.set_timeouts(t),
            Command::Reform => self.reform(false),
            Command::Policy(p) => self.primary.set_policy(p),
            Command::SendWindow(w) => self.set_send_window(w),
            Command::Stop => {
                self.flow.open_for_good(self.clock.now());
                return false;
            }
        }
        true
    }

    fn on_tick(&mut self) {
        let now = self.clock.now();
        let (due, keep): (Vec<_>, Vec<_>) = self.departed.drain(..).partition(|(_, at)| *at <= now);
        self.departed = keep;
        for (id, _) in due {
            if !self.peers.contains(&id) {
                self.net.forget(id);
            }
        }
        if self.incarnation.raw.raft.state == StateRole::Leader {
            let reported = self.snapshots.check(&mut self.incarnation.raw, now);
            for id in reported.arrived {
                log::info!("member {:x} has restored the snapshot sent to it (its commit index says so, its answer has not come): replicating to it again", id);
            }
            for id in reported.lost {
                log::info!("no answer to the snapshot sent to member {:x} within {:?}: sending it again", id, super::snapshot_watch::LOST_AFTER);
            }
        }
        self.joining_tick();
        self.leaving_tick();
        self.promote_learners();
        self.release_sync();
        self.evict_silent();
        self.hand_over();
        self.place_leader();
        self.counters.leader.store(self.incarnation.raw.raft.leader_id, AtomicOrdering::Relaxed);
        self.watch_quorum();
        self.send_commit_notice(now);
        self.propose_weight(now);
        self.publish_weights();
        self.resend();
        let member = self.state.member(self.me.id).is_some();
        if let Some(token) = self.order.fence_due(self.clock.now(), member) {
            self.propose_fence(token);
        }
        if let Some(sig) = self.flow.tick(self.me.id.raft_id(), self.clock.now()) {
            self.broadcast_flow(sig);
        }
        self.publish_flow();
        self.delivery.tick();
        self.report_lag(now);
        self.tell_arbitrators(now);
    }

    /// The bootstrapping member records the new component in the log once
    /// it leads: a conf-change entry naming itself the voter, so a member
    /// replaying the log learns the voter set from it.
    /// raft-rs silently turns a conf change into a no-op while another is
    /// pending (a new leader's first entry counts), so this repeats until
    /// the bootstrap entry is applied.
    fn maybe_bootstrap(&mut self) {
        if self.state.member(self.me.id).is_some() && !self.state.awaits_bootstrap() {
            self.members.bootstrap = None;
        }
        let Some((history, position)) = self.members.bootstrap else { return };
        if self.incarnation.raw.raft.state != StateRole::Leader || self.incarnation.raw.raft.has_pending_conf() {
            return;
        }
        let ctx = Membership::Bootstrap { history, position, member: self.me.clone() };
        self.propose_membership(ctx, ConfChangeType::AddNode);
    }

    pub(super) fn propose_membership(&mut self, m: Membership, kind: ConfChangeType) {
        let mut cc = ConfChange::default();
        cc.set_change_type(kind);
        cc.node_id = m.member().raft_id();
        // The membership rides in the conf change's own context (the
        // entry's context is not kept in the log).
        cc.set_context(Bytes::from(m.encode()));
        if let Err(e) = self.incarnation.raw.propose_conf_change(vec![], cc) {
            log::debug!("membership change {:?} not proposed now: {}", m, e);
        }
    }

    fn on_ready(&mut self) {
        super::ready::hand_off(self);
    }

    /// Appends in flight per follower: for the Raft node of now (each
    /// follower's window) and for the next ones.
    fn set_send_window(&mut self, evs_send_window: usize) {
        let cap = super::config::send_window(evs_send_window);
        self.raft_config.max_inflight_msgs = cap;
        let raft = &mut self.incarnation.raw.raft;
        raft.max_inflight = cap;
        let ids: Vec<u64> = raft.prs().iter().map(|(id, _)| *id).collect();
        for id in ids {
            raft.adjust_max_inflight_msgs(id, cap);
        }
    }

    /// Replaces the Raft node (a reform or a rejoin); an arbitrator's log
    /// stays one that sends no snapshot.
    pub(super) fn next_incarnation(&mut self, raw: RawNode<GroupLog>) {
        self.incarnation = self.incarnation.next(arbitrator_log(raw, self.me.arbitrator));
        self.order.defrag.clear();
    }

    /// Whether the member `id` (its progress `pr`, as this leader tracks
    /// it) receives appends as they come and answers: a relay, or a
    /// leader to hand over to (see `placement`).
    pub(super) fn keeps_up(&self, id: u64, pr: &raft::Progress, now: Instant) -> bool {
        pr.state == ProgressState::Replicate && self.primary.heard_within(id, now, KEEPS_UP_HEARD_WITHIN)
    }
}
