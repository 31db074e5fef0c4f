//! The Raft node on its own thread: takes proposals and network frames,
//! ticks, persists to the in-memory log, applies committed entries to the
//! group state and hands the resulting events to the node, in order.
//!
//! Nothing of the Raft log survives a restart (DESIGN: every process start
//! is a new member that catches up by IST/SST), so the log lives in memory.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use protobuf::Message as _;
use raft::prelude::{ConfChange, ConfChangeType, Entry as RaftEntry, EntryType, Message, MessageType, Snapshot};
use raft::{ProgressState, RawNode, StateRole};

use crate::group::wire::entry::{Entry, MemberInfo, Membership, Transition};
use crate::group::flow::flow_control::Signal;
use crate::group::wire::frame::{Frame, FrameError};
use crate::group::primary::liveness::Timeouts;
use crate::group::wire::pieces;
use crate::group::order::proposals::Failed;
use crate::group::primary::quorum::{Change, Quorum, Seen};
use crate::group::membership::recovery::Previous;
use crate::group::wire::relay::Out;
use super::io::{Clock, Links};
use crate::transport::handshake::{FEATURE_LEADER_WORDS, FEATURE_OWN_PAYLOADS};
use super::commands::Command;
use crate::group::flow::Flow;
use crate::group::membership::Members;
use crate::group::order::Order;
use crate::group::primary::Primary;
use crate::group::FlowGate;
use super::incarnation::{Incarnation, MAX_DROPPED};
use super::log::GroupLog;
use crate::group::membership::joining::Joining;
use crate::group::membership::phase::Phase;
use crate::group::state::{GroupEvent, GroupState, Member};
use crate::gtid::{Seqno, Uuid};
use crate::log;
use crate::transport::Inbound;

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


/// How long a departed member stays reachable, so that the notice of its
/// removal gets through before its link is dropped.
const FORGET_AFTER: Duration = Duration::from_secs(2);
/// A member keeps up (`Driver::keeps_up`, for a relay or a new leader)
/// only if heard this recently: five heartbeat rounds, so that one late
/// answer does not move a relay, while a relay that froze starves its
/// segment for half a second only.
const KEEPS_UP_HEARD_WITHIN: Duration = Duration::from_millis(500);

/// How many commands one loop turn takes before handling a Ready: proposals
/// that arrive together are appended and sent together.
const BATCH: usize = 256;

/// How often a message dropped from one non-member sender is said.
const NON_MEMBER_SAID_EVERY: Duration = Duration::from_secs(10);

/// Snapshot every this many applied entries, keeping this many behind it
/// for followers that lag a little.
#[cfg(not(test))]
const SNAPSHOT_EVERY: u64 = 16384;
#[cfg(not(test))]
const LOG_KEEP: u64 = 4096;
// Small in tests, so that joiners meet compacted logs.
#[cfg(test)]
const SNAPSHOT_EVERY: u64 = 64;
#[cfg(test)]
const LOG_KEEP: u64 = 16;
/// The same in bytes: pieces of big writesets are entries of 1 MiB, and the
/// log lives in memory. Every member's log stays this small while the
/// members keep up: a streamed UPDATE of 200 MB in 1 MB fragments held
/// all of it (RSS +140 MB against Galera's +45) when the first snapshot
/// came at 256 MiB. The gcache, a file, is what serves a member that
/// needs older writesets (IST), as with Galera. Not smaller: a snapshot
/// encodes the certification index (a few MB, milliseconds, under its
/// lock); at 32 MiB that UPDATE took about 3% longer.
const SNAPSHOT_BYTES: u64 = 64 << 20;
const LOG_KEEP_BYTES: u64 = 8 << 20;
/// A leader keeps what a member still lacks, up to this many entries and
/// bytes behind the snapshot: a member that is slow to receive (a far
/// one, a big writeset) goes on with Raft's appends instead of a state
/// transfer, and one gone for good costs a bounded amount of memory
/// until it is removed.
const LOG_HOLD: u64 = 65536;
const LOG_HOLD_BYTES: u64 = 256 << 20;

/// A local proposal still waiting this long is presumed lost with a
/// leader: fence it so the client learns its fate.
const FENCE_AFTER: Duration = Duration::from_secs(2);

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
}

impl Counters {
    /// One local proposal less in flight; never below zero (a proposal
    /// counted as failed may still be ordered later, and is then counted
    /// again).
    pub fn sent_one_less(&self) {
        let _ = self.send_queue.fetch_update(AtomicOrdering::Relaxed, AtomicOrdering::Relaxed, |n| Some(n.saturating_sub(1)));
    }
}

pub(crate) enum Start {
    Bootstrap { history: Uuid, position: Seqno },
    Join { peers: Vec<String> },
}

pub(crate) struct Driver {
    /// The current Raft node and what it learned (see `incarnation`).
    pub(in crate::group) incarnation: Incarnation,
    inbox: super::commands::Inbox,
    pub(in crate::group) state: GroupState,
    delivery: Box<dyn Delivery>,
    pub(in crate::group) me: MemberInfo,
    pub(in crate::group) net: Arc<dyn Links>,
    /// What every Raft node of this member starts from (a bootstrap, a
    /// rejoin, a reform).
    pub(in crate::group) raft_config: raft::Config,
    limits: Limits,
    pub(in crate::group) clock: Arc<dyn Clock>,
    tick: Duration,
    next_tick: Instant,
    pub(in crate::group) events: Vec<GroupEvent>,
    next_read: u64,
    pub(in crate::group) counters: Arc<Counters>,
    /// Entry bytes applied since the last snapshot (big writesets' pieces
    /// make entries of very different sizes).
    applied_bytes: u64,
    snapshots: super::snapshot_watch::SnapshotWatch,
    /// Members the transport is asked to keep links to.
    pub(in crate::group) peers: std::collections::BTreeSet<u64>,
    /// Departed members, and when to drop their links.
    departed: Vec<(u64, Instant)>,
    /// Index of the entry (or snapshot) being applied.
    pub(in crate::group) applying: u64,
    /// Whether this turn took every command waiting, frames among them:
    /// only then is when each member was last heard current (see
    /// `cut_off`). A turn after a long one may find more than a batch.
    inbox_drained: bool,
    /// When a dropped message of each non-member sender was last said
    /// (see `drop_from_non_member`).
    non_member_said: BTreeMap<u64, Instant>,
    /// Frame kinds this build does not know, said once each in the log
    /// (at most 256): a member of a newer build sends them, and a rolling
    /// upgrade must not meet one (a newer build sends a new kind only to
    /// peers whose handshake offers the feature).
    unknown_kinds: std::collections::BTreeSet<u8>,
    /// This member's writesets until ordered, and what goes out of
    /// the order (see `order`).
    pub(in crate::group) order: Order,
    /// Joining, leaving, removals, the leader's placement (see
    /// `membership`).
    pub(in crate::group) members: Members,
    /// Who spoke lately and whether this side may order (see `primary`).
    pub(in crate::group) primary: Primary,
    pub(in crate::group) flow: Flow,
}

pub(crate) struct DriverConfig {
    pub me: MemberInfo,
    pub start: Start,
    pub tick: Duration,
    pub timeouts: Timeouts,
    pub previous: Option<Previous>,
    /// The Raft settings every Raft node of this member starts from
    /// (`raft_config`; a simulation pins the election timeout).
    pub raft: raft::Config,
    pub limits: Limits,
}

/// Sizes a simulation makes small, so that its short runs meet
/// snapshots, compacted logs and writesets in pieces; mariadbd runs with
/// `Limits::default()`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Bytes per piece of a big writeset (`pieces::PIECE_BYTES`).
    pub piece: usize,
    /// Snapshot every this many applied entries or bytes, keeping this
    /// many behind (more on a leader, for members that lack them).
    pub snapshot_every: u64,
    pub snapshot_bytes: u64,
    pub log_keep: Retention,
    pub log_hold: Retention,
}

/// A bound on the entries a log keeps behind its snapshot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retention {
    pub entries: u64,
    pub bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            piece: crate::group::wire::pieces::PIECE_BYTES,
            snapshot_every: SNAPSHOT_EVERY,
            snapshot_bytes: SNAPSHOT_BYTES,
            log_keep: Retention { entries: LOG_KEEP, bytes: LOG_KEEP_BYTES },
            log_hold: Retention { entries: LOG_HOLD, bytes: LOG_HOLD_BYTES },
        }
    }
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
    pub(in crate::group) fn until_tick(&self) -> Duration {
        self.next_tick.saturating_duration_since(self.clock.now())
    }

    /// `step` on a live thread (see `runner`), its time counted as work
    /// (see `load`); false once stopped.
    pub(in crate::group) fn turn(&mut self) -> bool {
        let woke = self.clock.now();
        let go = self.step(None);
        self.flow.load.worked(woke, self.clock.now());
        go
    }

    /// The driver is done: its replicating threads learn it, its queue
    /// closes (a link reader waiting for room there gives up), then the
    /// transport, which joins the readers.
    pub(in crate::group) fn close(self) {
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
        if let Some(gap) = self.primary.standstill.turn_begins(self.clock.now()).or(watched) {
            self.stood_still(gap);
        }
        let go = self.step_commands(first);
        self.primary.standstill.turn_ended(self.clock.now());
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
        self.net.set_eager(self.flow.load.has_spare_time());
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
            Command::ReadIndex(reply) => {
                let id = self.next_read;
                self.next_read += 1;
                self.incarnation.raw.read_index(self.read_context(id));
                self.incarnation.reads_asked.push((id, reply));
            }
            Command::Net(inbound) => self.on_net(inbound),
            Command::Leave(reply) => self.start_leaving(reply),
            Command::Isolate(on) => self.net.set_isolated(on),
            Command::Flow(signal) => {
                let me = self.me.id.raft_id();
                if let Some(sig) = self.flow.fc.local(me, signal, self.clock.now()) {
                    self.broadcast_flow(sig);
                }
                self.publish_flow();
            }
            Command::ResetFlowCounters => {
                self.flow.fc.reset_counters();
                self.publish_flow();
            }
            Command::Timeouts(t) => self.primary.liveness.timeouts = t,
            Command::Reform => self.reform(false),
            Command::Policy(p) => self.primary.policy = p,
            Command::SendWindow(w) => self.set_send_window(w),
            Command::Stop => {
                self.flow.gate.publish(false, false, self.flow.fc.counters(), self.clock.now());
                return false;
            }
        }
        true
    }

    fn propose(&mut self, token: u64, body: Bytes) {
        if token == 0 {
            // Rollback fragments: small, and nobody waits for them.
            return self.propose_or_keep(Entry::Ordered { origin: self.me.id, token, payload: body }.encode());
        }
        if self.gate_full(token) {
            return;
        }
        self.order.proposals.add(token, body, self.clock.now());
        self.pump();
    }

    /// Hands Raft what our writesets have ready (see `Proposals::pump`).
    fn pump(&mut self) {
        let raw = &mut self.incarnation.raw;
        self.order.proposals.pump(self.me.id, self.clock.now(), |entry| propose_split(raw, entry));
    }

    /// The payload of a writeset's entry that this member proposed (bytes
    /// `offset..offset + len` of writeset `token`), as a view of the buffer
    /// it still holds: a member that is not the leader gets its entries
    /// back from the leader, and would keep a second copy of a big
    /// writeset in its log. None: no longer held.
    fn own_payload(&self, token: u64, offset: u64, len: usize) -> Option<Bytes> {
        crate::group::order::own_payloads::part(self.order.proposals.body(token)?, offset, len)
    }

    /// A writeset of ours failed: its client hears it, and what of it may
    /// be in the log is fenced so that no member keeps its pieces.
    fn fail(&mut self, failed: Failed) {
        self.events.push(GroupEvent::ProposalFailed { token: failed.client });
        if let Some(wire) = failed.fence {
            self.owe_fence(wire);
        }
    }

    /// Our writesets up to `token` must be fenced: now, and every tick
    /// until the fence is ordered (see `owed_fence`).
    fn owe_fence(&mut self, token: u64) {
        self.order.owed_fence = self.order.owed_fence.max(Some(token));
        let _ = self.incarnation.raw.propose(vec![], Entry::Fence { origin: self.me.id, token }.encode());
    }

    /// A fire-and-forget proposal (member state, state request, rollback
    /// fragment) Raft drops is kept and retried once a leader is known.
    fn propose_or_keep(&mut self, data: Vec<u8>) {
        let entry = Entry::decode(&Bytes::copy_from_slice(&data)).ok();
        if self.hold_sync(entry.as_ref(), &data) {
            return; // kept as unconfirmed once proposed, not while held
        }
        if let Some(e) = &entry {
            self.incarnation.unconfirmed.sent(self.me.id, e, &data, &self.state, self.clock.now());
        }
        if let Err(raft::Error::ProposalDropped) = self.incarnation.raw.propose(vec![], data.clone()) {
            if self.incarnation.dropped.len() >= MAX_DROPPED {
                log::warning!("dropping a group message: {} already wait for a leader", MAX_DROPPED);
                self.incarnation.dropped.pop_front();
            }
            self.incarnation.dropped.push_back(data);
        }
    }

    /// A member reports Synced (and its server takes writes) only once it
    /// votes: the leader promotes a learner when it is Joined, and a
    /// synced learner is no quorum. Reported before, a synced node whose
    /// leader died before promoting it was non-Primary with a peer that
    /// should have kept it Primary (two data nodes and garbd: the one just
    /// rejoined, and garbd). Galera counts every member of a view alike.
    /// Bounded: one held entry, proposed in the turn that applies the
    /// promotion (see `release_sync`).
    fn hold_sync(&mut self, entry: Option<&Entry>, data: &[u8]) -> bool {
        let voter = self.state.member(self.me.id).is_some_and(|m| m.voter);
        if voter {
            return false;
        }
        match entry {
            Some(Entry::MemberState { member, transition: Transition::Sync, .. }) if *member == self.me.id => {
                self.incarnation.held_sync = Some(data.to_vec());
                true
            }
            _ => false,
        }
    }

    fn release_sync(&mut self) {
        if self.state.member(self.me.id).is_some_and(|m| m.voter) {
            if let Some(data) = self.incarnation.held_sync.take() {
                self.propose_or_keep(data);
            }
        }
    }

    /// Retries what Raft dropped while no leader was known; fails
    /// writesets that made no progress for too long. Once a tick, so that
    /// a writeset is not copied in a busy loop while no leader is known.
    fn resend(&mut self) {
        if self.members.bootstrap.is_some() {
            return; // a component being formed orders nothing before it
        }
        let give_up = self.give_up_after();
        for failed in self.order.proposals.stalled(self.clock.now(), give_up) {
            self.fail(failed);
        }
        self.pump();
        if let Some(token) = self.order.owed_fence.filter(|_| self.incarnation.quorum.is_primary()) {
            let _ = self.incarnation.raw.propose(vec![], Entry::Fence { origin: self.me.id, token }.encode());
        }
        for data in std::mem::take(&mut self.incarnation.dropped) {
            self.propose_or_keep(data);
        }
        for data in self.incarnation.unconfirmed.due(self.me.id, &self.state, self.clock.now()) {
            self.propose_or_keep(data);
        }
    }

    /// How long a writeset may wait for a leader before its client gets an
    /// error: through an election and an eviction, as Galera's clients
    /// wait through a configuration change.
    fn give_up_after(&self) -> Duration {
        self.primary.liveness.timeouts.inactive.max(2 * FENCE_AFTER)
    }

    fn on_net(&mut self, inbound: Inbound) {
        if let Inbound::Frame { from, .. } = &inbound {
            self.primary.liveness.heard(*from, self.clock.now());
        }
        match inbound {
            Inbound::Frame { kind, payload, from } => match Frame::decode(kind, &payload) {
                Ok(frame) => self.on_frame(from, frame),
                // A newer member's message: it copes without our answer.
                Err(e @ FrameError::Kind(kind)) if self.unknown_kinds.insert(kind) => {
                    log::warning!("ignoring frames of a kind this build does not know from member {:x} (a newer lockstep build?): {}", from, e)
                }
                Err(FrameError::Kind(_)) => {}
                Err(e) => log::warning!("ignoring a frame from {:x}: {}", from, e),
            },
            Inbound::PeerUp { id, addr, .. } => self.on_peer_up(id, &addr),
            Inbound::PeerDown { .. } => {}
            Inbound::ContactFailed { addr, reason } => log::debug!("could not reach {}: {}", addr, reason),
        }
    }

    fn on_frame(&mut self, from: u64, frame: Frame) {
        match frame {
            Frame::Raft(m) => {
                self.tell_if_removed(from);
                if matches!(m.get_msg_type(), MessageType::MsgAppend | MessageType::MsgHeartbeat | MessageType::MsgSnapshot) {
                    self.primary.leader_contact = Some((m.from, self.clock.now()));
                }
                // A member only hears its own group: after a reform the
                // old group's members must not pull it back into their
                // terms. Not while it replays its previous incarnation's
                // log: the group there is history (its leader may have
                // been removed then and be back since), not its own yet.
                // Its author counts, not its bearer: a relay (see `relay`)
                // this member's log does not list yet brings the leader's
                // appends that would list it (a joiner in another segment
                // than the leader's dropped them all, seed 5933).
                if self.is_member_now() && !self.peers.contains(&m.from) {
                    return self.drop_from_non_member(m.from, m.get_msg_type());
                }
                let log = &self.incarnation.raw.raft.raft_log;
                let Some(m) = super::step::admit(m, log.last_index(), log.committed, self.members.vote_floor) else {
                    return log::debug!("not answering a vote request from {:x}: this log is short of its previous incarnation's ({} < {})", from, log.last_index(), self.members.vote_floor);
                };
                let answer = (m.get_msg_type() == MessageType::MsgAppendResponse && !m.reject).then_some((m.from, m.term, m.index));
                let committed = self.incarnation.raw.raft.raft_log.committed;
                let _ = self.incarnation.raw.step(m);
                // m.from, not the frame's sender: a relay (see `relay`) may have brought it.
                if let Some((follower, term, index)) = answer {
                    self.note_answer(follower, term, index, committed);
                }
            }
            Frame::Relay(msgs) => match crate::group::wire::relay::unpack(msgs, from, self.me.id.raft_id()) {
                Ok((own, forwards)) => {
                    if self.peers.contains(&from) {
                        for m in forwards {
                            self.send_frame([m.to], &Frame::Raft(m));
                        }
                    }
                    if let Some(own) = own {
                        self.on_frame(from, Frame::Raft(own));
                    }
                }
                Err(why) => log::warning!("ignoring a relay frame from {:x}: {}", from, why),
            },
            Frame::Own(mut m, left_out) => {
                let proposals = &self.order.proposals;
                match crate::group::order::own_payloads::fill(&mut m, &left_out, self.me.id, |token| proposals.body(token).cloned()) {
                    Ok(()) => self.on_frame(from, Frame::Raft(m)),
                    // Raft sends it again, whole (see `own_payloads`).
                    Err(why) => log::debug!("dropping an append from {:x}: {}", from, why),
                }
            }
            Frame::Join { member, previous } => self.on_join_request(member, previous),
            Frame::Probe => self.tell_if_removed(from),
            Frame::Commit(notice) => self.on_commit_notice(from, notice),
            Frame::Left { member, index } if member == self.me.id => self.on_removed_notice(index),
            Frame::Left { .. } => {}
            Frame::Lag(ms) => {
                if self.state.member_by_raft_id(from).is_some() {
                    self.flow.cluster_lag.on_report(from, ms, self.clock.now());
                }
            }
            Frame::Leader(word) => {
                if self.state.member_by_raft_id(from).is_some() {
                    self.primary.leader_words.on_word(from, word, self.clock.now());
                }
            }
            Frame::Hold(index) => {
                if self.me.arbitrator && self.state.member_by_raft_id(from).is_some() {
                    self.members.arbitrator_hold.on_word(index);
                }
            }
            Frame::Flow(signal) => {
                // Only members may pause the group.
                if self.state.member_by_raft_id(from).is_some() {
                    let now = self.clock.now();
                    self.flow.fc.on_message(from, signal, now);
                    if let Some(sig) = self.flow.fc.resume_deferred(self.me.id.raft_id(), now) {
                        self.broadcast_flow(sig);
                    }
                    self.publish_flow();
                }
            }
        }
    }

    /// A follower's acceptance, for `round_trips`: how long it took, and
    /// whether it moved the commit index from `committed`.
    fn note_answer(&mut self, from: u64, term: u64, index: u64, committed: u64) {
        let took = self.order.round_trips.answered(from, term, index, self.clock.now());
        let moved = self.incarnation.raw.raft.raft_log.committed > committed;
        if took.is_none() && !moved {
            return;
        }
        if !self.order.answer_series.contains_key(&from) {
            let Some(m) = self.state.member_by_raft_id(from) else { return };
            let name = m.info.name.clone();
            let series = self.counters.round_trips.series(&name);
            self.order.answer_series.insert(from, (name, series));
        }
        self.order.answer_series[&from].1.record(took, moved);
    }

    /// Members that left take their answer series off the metrics page.
    fn forget_answers_of_the_gone(&mut self) {
        let gone: Vec<u64> = self.order.answer_series.keys().copied().filter(|id| self.state.member_by_raft_id(*id).is_none()).collect();
        for id in gone {
            if let Some((name, _)) = self.order.answer_series.remove(&id) {
                self.counters.round_trips.forget(&name);
            }
        }
    }

    /// Sends `frame` to each of `to`, encoded once.
    pub(in crate::group) fn send_frame(&self, to: impl IntoIterator<Item = u64>, frame: &Frame) {
        let (kind, payload) = match frame.encode() {
            Ok(encoded) => encoded,
            Err(e) => return log::error!("cannot encode a group frame: {}", e),
        };
        for id in to {
            self.net.send(id, kind, payload.clone());
        }
    }

    /// Said at info once per sender every `NON_MEMBER_SAID_EVERY`: a
    /// member that drops its leader's every message as a non-member's
    /// never catches up, and at debug level nothing showed why (a
    /// rejoining member stranded for 29 s after a partition, issue 50).
    fn drop_from_non_member(&mut self, from: u64, kind: MessageType) {
        let now = self.clock.now();
        let due = self.non_member_said.get(&from).is_none_or(|at| now.saturating_duration_since(*at) >= NON_MEMBER_SAID_EVERY);
        if !due {
            return;
        }
        // Bounded: senders that are not members are few, but not ours to count.
        if self.non_member_said.len() >= 64 {
            self.non_member_said.clear();
        }
        self.non_member_said.insert(from, now);
        log::info!(
            "dropping a {:?} from {:x}: not a member of this group as this node has it (applied index {}, previous incarnation's log up to {})",
            kind,
            from,
            self.applying,
            self.members.stale_until
        );
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
        self.maybe_fence();
        if let Some(sig) = self.flow.fc.tick(self.me.id.raft_id(), self.clock.now()) {
            self.broadcast_flow(sig);
        }
        self.publish_flow();
        self.delivery.tick();
        self.report_lag(now);
        self.tell_arbitrators(now);
    }

    /// A leader tells the arbitrators the lowest index a data voter has
    /// matched, which their logs keep (see `arbitrator_hold`).
    fn tell_arbitrators(&mut self, now: Instant) {
        let raft = &self.incarnation.raw.raft;
        if raft.state != StateRole::Leader {
            return;
        }
        let members = self.state.members();
        let arbitrators: Vec<u64> = members.iter().filter(|m| m.info.arbitrator && m.info.id != self.me.id).map(|m| m.info.id.raft_id()).collect();
        if arbitrators.is_empty() {
            return;
        }
        let data_voters = members.iter().filter(|m| m.voter && !m.info.arbitrator);
        let Some(lowest) = data_voters.filter_map(|m| raft.prs().get(m.info.id.raft_id())).map(|pr| pr.matched).min() else { return };
        if self.members.arbitrator_hold.due(lowest, now) {
            self.send_frame(arbitrators, &Frame::Hold(lowest));
        }
    }

    /// Sends this member's apply lag to the others when due, and
    /// publishes the cluster's worst.
    fn report_lag(&mut self, now: Instant) {
        if self.flow.cluster_lag.due(now) {
            let ms = self.delivery.apply_lag_ms();
            let me = self.me.id.raft_id();
            self.flow.cluster_lag.on_report(me, ms, now);
            let others = self.state.members().iter().filter(|m| m.info.id != self.me.id).map(|m| m.info.id.raft_id());
            self.send_frame(others, &Frame::Lag(ms));
            self.report_leader(now);
        }
        self.flow.gate.publish_lag(self.flow.cluster_lag.worst(now));
    }

    /// A follower that hears its leader says so to the other followers
    /// that read it (see `cut_off`); one that does not hear it says
    /// nothing.
    fn report_leader(&self, now: Instant) {
        let raft = &self.incarnation.raw.raft;
        let me = self.me.id.raft_id();
        let Some((leader, at)) = self.primary.leader_contact.filter(|(l, _)| *l == raft.leader_id && *l != me) else { return };
        let silent = now.saturating_duration_since(at);
        // A word older than this counts for nobody (`LeaderWords`).
        if silent >= crate::group::primary::cut_off::heard_elsewhere_within(crate::group::primary::cut_off::window(self.tick)) {
            return;
        }
        let word = crate::group::primary::cut_off::LeaderWord { leader, term: raft.term, silent_ms: silent.as_millis() as u32 };
        let others = self.state.members().iter().map(|m| m.info.id.raft_id()).filter(|id| *id != leader && *id != me && self.net.has_feature(*id, FEATURE_LEADER_WORDS));
        self.send_frame(others, &Frame::Leader(word));
    }

    fn broadcast_flow(&self, signal: Signal) {
        let others = self.state.members().iter().filter(|m| m.info.id != self.me.id).map(|m| m.info.id.raft_id());
        self.send_frame(others, &Frame::Flow(signal));
    }

    fn publish_flow(&self) {
        let now = self.clock.now();
        self.flow.gate.publish(self.flow.fc.paused(now), self.flow.fc.requested(), self.flow.fc.counters(), now);
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

    pub(in crate::group) fn propose_membership(&mut self, m: Membership, kind: ConfChangeType) {
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

    /// Raft's messages out: appends to another segment through one relay
    /// there (see `relay`), less the answers that repeat (see `answers`)
    /// and the appends of a commit index alone that another append in
    /// the batch carries (see `commit_only`).
    fn send(&mut self, mut msgs: Vec<Message>) {
        msgs.retain(|m| !self.order.answers.repeats(m));
        crate::group::order::commit_only::fold(&mut msgs);
        let now = self.clock.now();
        for m in msgs.iter().filter(|m| m.get_msg_type() == MessageType::MsgAppend) {
            if let Some(last) = m.entries.last() {
                self.order.round_trips.sent(m.to, m.term, last.index, now);
            }
        }
        let relays = self.relays();
        let net = self.net.clone();
        // One segment (the usual case): no lookups per message.
        let relay_of = |to| if relays.is_empty() { None } else { net.segment(to).and_then(|s| relays.get(&s).copied()) };
        for out in crate::group::wire::relay::route(msgs, relay_of) {
            match out {
                Out::Direct(mut m) => {
                    let to = m.to;
                    let net = &self.net;
                    let left_out = self.order.own_payloads.leave_out(&mut m, || net.has_feature(to, FEATURE_OWN_PAYLOADS));
                    let frame = if left_out.is_empty() { Frame::Raft(m) } else { Frame::Own(m, left_out) };
                    self.send_frame([to], &frame)
                }
                Out::Relay { via, msgs } => {
                    for m in &msgs {
                        let _ = self.order.own_payloads.note(m);
                    }
                    self.send_relayed(via, msgs)
                }
            }
        }
    }

    /// The relay of each other segment, while this member leads: its
    /// lowest member that keeps up and answers (one that stops answering
    /// would starve its segment; a change of relay costs a resend).
    fn relays(&self) -> BTreeMap<u8, u64> {
        let raft = &self.incarnation.raw.raft;
        let (mine, now) = (self.net.own_segment(), self.clock.now());
        let mut relays = BTreeMap::new();
        if raft.state != StateRole::Leader {
            return relays;
        }
        for (&id, pr) in raft.prs().iter() {
            let Some(segment) = self.net.segment(id).filter(|s| *s != mine) else { continue };
            if id != self.me.id.raft_id() && self.keeps_up(id, pr, now) {
                relays.entry(segment).and_modify(|r: &mut u64| *r = (*r).min(id)).or_insert(id);
            }
        }
        relays
    }

    /// Appends in flight per follower: for the Raft node of now (each
    /// follower's window) and for the next ones.
    fn set_send_window(&mut self, evs_send_window: usize) {
        let cap = send_window(evs_send_window);
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
    pub(in crate::group) fn next_incarnation(&mut self, raw: RawNode<GroupLog>) {
        self.incarnation = self.incarnation.next(arbitrator_log(raw, self.me.arbitrator));
        self.order.defrag.clear();
    }

    /// Whether the member `id` (its progress `pr`, as this leader tracks
    /// it) receives appends as they come and answers: a relay, or a
    /// leader to hand over to (see `placement`).
    pub(in crate::group) fn keeps_up(&self, id: u64, pr: &raft::Progress, now: Instant) -> bool {
        pr.state == ProgressState::Replicate && self.primary.liveness.heard_within(id, now, KEEPS_UP_HEARD_WITHIN)
    }

    fn send_relayed(&mut self, via: u64, msgs: Vec<Message>) {
        let frame = Frame::Relay(msgs);
        let sent = match frame.encode() {
            Ok((kind, payload)) => self.net.send(via, kind, payload),
            Err(e) => {
                log::error!("cannot encode a relay frame: {}", e);
                false
            }
        };
        let Frame::Relay(msgs) = frame else { unreachable!() };
        if !sent {
            // The relay's link went down: the others straight (Raft
            // resends what the relay missed once it is back).
            let (_, forwards) = crate::group::wire::relay::unpack(msgs, self.me.id.raft_id(), via).expect("routed as relayed");
            for m in forwards {
                self.send_frame([m.to], &Frame::Raft(m));
            }
        }
    }

    fn apply(&mut self, entries: Vec<RaftEntry>) {
        self.apply_gated(entries);
        self.answer_reads();
    }

    /// One committed entry, through the gate (see `weighted`).
    pub(in crate::group) fn apply_entry(&mut self, e: RaftEntry) {
        self.applying = e.index;
        self.applied_bytes += (e.context.len() + e.data.len()) as u64;
        match e.get_entry_type() {
            EntryType::EntryNormal if e.data.is_empty() && e.context.is_empty() => {} // leader no-op
            EntryType::EntryNormal => self.apply_normal(e.index, &e.context, &e.data),
            EntryType::EntryConfChange => self.apply_conf_change(e.index, e.get_data()),
            // Never proposed by lockstep: a peer that speaks another protocol.
            EntryType::EntryConfChangeV2 => self.halt(e.index, "a joint configuration change"),
        }
    }

    fn apply_normal(&mut self, index: u64, head: &Bytes, body: &Bytes) {
        match Entry::decode_split(head, body) {
            Ok(entry) => {
                if matches!(entry, Entry::MemberState { member, transition: Transition::Rejoin, .. } if member == self.me.id) {
                    self.incarnation.quorum.rejoined();
                }
                self.incarnation.unconfirmed.committed(self.me.id, &entry);
                self.members.members_moved |= matches!(entry, Entry::MemberState { .. });
                let before = self.events.len();
                self.state.apply(entry, &mut self.events);
                self.join_assembled(before);
                self.drop_stale(index, before);
                let leader = self.incarnation.raw.raft.state == StateRole::Leader;
                self.members.placement.count(leader, &self.events[before..]);
                self.note_own_deliveries(before);
            }
            Err(err) => self.halt(index, &err.to_string()),
        }
    }

    /// Every seqno handed to the node follows the last (see `sequence`).
    /// At a break this member's order is not the group's: it hands
    /// nothing more to the node, which leaves the cluster.
    fn check_sequence(&mut self) {
        for i in 0..self.events.len() {
            let Err(e) = self.order.sequence.check(&self.events[i]) else { continue };
            log::error!("the order this node was given is broken ({}, log index {}): it stops applying and leaves the cluster", e, self.applying);
            self.events.truncate(i);
            return self.stop_applying(self.applying);
        }
    }

    /// A committed entry this member cannot decode stops it: skipping it
    /// could change what it decides from then on (a membership, a
    /// writeset's seqno) while the others, which decoded it, go on. The
    /// node leaves the cluster (see `GroupEvent::Halted`).
    pub(in crate::group) fn halt(&mut self, index: u64, what: &str) {
        log::error!(
            "the group entry committed at index {} cannot be read ({}): a member of another lockstep version or corrupt data; this node stops applying and leaves the cluster",
            index,
            what
        );
        self.stop_applying(index);
    }

    /// Nothing after log index `index` is applied, and the node is told
    /// to leave the cluster.
    pub(in crate::group) fn stop_applying(&mut self, index: u64) {
        if self.members.halt() {
            self.events.push(GroupEvent::Halted { index });
        }
    }

    /// A writeset ordered from pieces reaches the node as one payload. Our
    /// own is the buffer we sent, which its client holds anyway: joining
    /// the pieces would make a big writeset's second copy on its origin.
    /// Another's is the buffer its pieces were written into as they were
    /// stored, when they all were (see `defrag`); a fence lets go of the
    /// buffers of the writesets it drops.
    fn join_assembled(&mut self, from: usize) {
        for ev in &mut self.events[from..] {
            if let GroupEvent::Fenced { origin, token } = ev {
                self.order.defrag.fence(*origin, *token);
            }
            let GroupEvent::Assembled { seqno, origin, token, pieces } = ev else { continue };
            let len: usize = pieces.iter().map(Bytes::len).sum();
            let ours = if *origin == self.me.id { self.order.proposals.body(*token).filter(|b| b.len() == len) } else { None };
            let payload = match ours {
                Some(body) => {
                    debug_assert!(pieces::join(pieces.clone()) == *body, "our writeset came back changed");
                    body.clone()
                }
                None => match self.order.defrag.take(*origin, *token, pieces) {
                    Some(whole) => whole,
                    None => pieces::join(std::mem::take(pieces)),
                },
            };
            *ev = GroupEvent::Ordered { seqno: *seqno, origin: *origin, token: *token, payload };
        }
    }

    /// Our writesets ordered now get their client's token back, their
    /// pieces send more; our fences resend what they cover (the node never
    /// sees either).
    fn note_own_deliveries(&mut self, from: usize) {
        let me = self.me.id;
        let mut fenced = None;
        let mut progressed = false;
        for ev in &mut self.events[from..] {
            match ev {
                GroupEvent::Assembling { origin, token, bytes } if *origin == me => {
                    self.order.proposals.progressed(*token, *bytes, self.clock.now());
                    progressed = true;
                }
                GroupEvent::Ordered { origin, token, .. } if *origin == me && *token != 0 => {
                    // None: a copy from before a fence cannot be ordered
                    // (the group drops it), so this is not expected.
                    *token = self.order.proposals.ordered(*token).unwrap_or(0);
                    self.counters.sent_one_less();
                }
                GroupEvent::Fenced { origin, token } if *origin == me => {
                    fenced = Some(*token);
                    if self.order.owed_fence.is_some_and(|owed| *token >= owed) {
                        self.order.owed_fence = None;
                    }
                }
                _ => {}
            }
        }
        self.events.retain(|ev| !matches!(ev, GroupEvent::Fenced { origin, .. } if *origin == me) && !matches!(ev, GroupEvent::Assembling { .. }));
        if let Some(upto) = fenced {
            let give_up = self.give_up_after();
            for client in self.order.proposals.fenced(upto, self.clock.now(), give_up) {
                self.events.push(GroupEvent::ProposalFailed { token: client });
            }
        }
        // Not now: this runs inside a Ready hand-off (see `turn`).
        self.order.pump_due |= progressed || fenced.is_some();
    }

    fn apply_conf_change(&mut self, index: u64, data: &[u8]) {
        let cc = match ConfChange::parse_from_bytes(data) {
            Ok(cc) => cc,
            Err(e) => return self.halt(index, &format!("configuration change: {}", e)),
        };
        self.members.members_moved = true;
        let membership = Membership::decode(cc.get_context());
        // A join asked again before the first Add was applied is ordered
        // twice. The group state ignores the second; raft-rs would make
        // the member, a voter by then, a learner again: Raft's quorum
        // would then leave out a member the group counts (simulator,
        // seed 1913: voters node 1 and 2, node 3 a learner; node 2's
        // crash then left no leader for good). Every member skips it alike.
        let repeated = matches!(&membership, Ok(Membership::Add { member }) if self.state.member(member.id).is_some());
        if repeated {
            log::debug!("a repeated join at index {}: not applied to raft", index);
        } else {
            match self.incarnation.raw.apply_conf_change(&cc) {
                Ok(cs) => self.incarnation.raw.store().set_conf_state(cs),
                // Refused alike on every member (e.g. removing the last voter).
                Err(e) => log::info!("configuration change at index {} refused by raft: {}", index, e),
            }
        }
        match membership {
            Ok(m) => {
                log::debug!("applying membership {:?} at index {} (stale until {}, member now: {})", m, index, self.members.stale_until, self.state.member(self.me.id).is_some());
                if let Membership::Add { member } = &m {
                    if !repeated {
                        self.incarnation.raw.store().note_added(member.id.raft_id(), index);
                    }
                }
                if let Membership::Remove { member } = &m {
                    if *member != self.me.id {
                        self.send_frame([member.raft_id()], &Frame::Left { member: *member, index });
                        self.members.remember_removed(*member, index);
                    }
                }
                let me_out = matches!(&m, Membership::Remove { member } if *member == self.me.id);
                if me_out && index > self.members.stale_until && !self.members.is_leaving_or_left() {
                    // As if told by the notice (see `removed_at`).
                    self.members.removed_at = Some(index);
                    return;
                }
                let before = self.events.len();
                self.state.apply_membership(m, &mut self.events);
                self.drop_stale(index, before);
                self.refresh_peers();
                let ids: Vec<u64> = self.state.members().iter().map(|m| m.info.id.raft_id()).collect();
                self.flow.fc.retain_members(&ids);
                self.primary.liveness.retain_members(&ids);
                self.flow.cluster_lag.retain_members(&ids);
                self.primary.leader_words.retain_members(&ids);
                self.order.own_payloads.retain_members(&ids);
                self.forget_answers_of_the_gone();
                self.publish_flow();
                if me_out && matches!(self.members.phase, Phase::Leaving(_)) {
                    // The leave is done: what the group orders after it
                    // is not numbered for this member (see `applies`).
                    self.leaving_tick();
                }
            }
            Err(e) => self.halt(index, &format!("membership change: {}", e)),
        }
    }

    /// Replaces our state with the leader's snapshot (a joiner, or a member
    /// that fell too far behind).
    fn restore(&mut self, snap: Snapshot) {
        let index = snap.get_metadata().index;
        let (group, node) = match split_snapshot(snap.get_data()) {
            Some(parts) => parts,
            None => return log::error!("ignoring a malformed snapshot at index {}", index),
        };
        let state = match GroupState::decode(self.me.id, group) {
            Ok(s) => s,
            Err(e) => return log::error!("ignoring a snapshot at index {}: {}", index, e),
        };
        if let Err(e) = self.incarnation.raw.store().apply_snapshot(snap.clone()) {
            return log::error!("cannot install the snapshot at index {}: {}", index, e);
        }
        self.state = state;
        self.order.defrag.clear();
        self.applying = index;
        self.incarnation.gate.restart(self.state.weighted().then_some(index));
        log::info!("restored the group state at seqno {} from a snapshot (index {})", self.state.seqno(), index);
        self.forget_own_proposals();
        let mut view = self.state.view();
        if index <= self.members.stale_until {
            // Taken before our removal: we are not in it as who we are now.
            view.members.retain(|m| m.id != self.me.id);
            view.my_idx = -1;
        }
        self.events.push(GroupEvent::Restored { node: Bytes::copy_from_slice(node), view });
        self.refresh_peers();
    }

    /// Our writesets handed to Raft may have been ordered inside the
    /// snapshot just restored, where we never see them: sent again after a
    /// fence, they would be ordered twice (every node would commit them
    /// twice; the simulator found it: a proposal forwarded just before a
    /// partition, committed while this member was cut off, which then
    /// caught up by snapshot). Their clients fail, as on a non-primary
    /// view; one that was ordered reaches this node's data by its state
    /// transfer, as Galera's do. What is still in flight is fenced.
    fn forget_own_proposals(&mut self) {
        let fence = self.order.proposals.highest_sent();
        let failed = self.order.proposals.abandon();
        if !failed.is_empty() {
            log::info!("{} writesets of this node's clients may be in the snapshot it caught up with: they fail", failed.len());
        }
        for client in failed {
            self.events.push(GroupEvent::ProposalFailed { token: client });
        }
        self.order.owed_fence = self.order.owed_fence.max(fence);
    }

    /// Tells the transport where every member listens, and to stop
    /// reaching members that left: a restarted node comes back at the same
    /// address as a new member, and a dialer still looking for its old id
    /// there would keep breaking the new member's link.
    pub(in crate::group) fn refresh_peers(&mut self) {
        let mut wanted = std::collections::BTreeSet::new();
        for m in self.state.members() {
            if m.info.id != self.me.id && !m.info.address.is_empty() {
                let id = m.info.id.raft_id();
                self.net.set_peer(id, &m.info.address);
                wanted.insert(id);
            }
        }
        let now = self.clock.now();
        for gone in self.peers.difference(&wanted) {
            // Its link stays for the notice of its removal, but no dial:
            // its address may hold its successor already (it left and
            // connected again), which would take each dial for a new link
            // and ask the server's allowlist (that a mysqldump SST may be
            // reloading: galera_vote_rejoin_mysqldump).
            self.net.stop_dialing(*gone);
            self.departed.push((*gone, now + FORGET_AFTER));
        }
        self.peers = wanted;
        if self.is_member_now() {
            self.joined();
        }
    }

    /// A member in its current incarnation: not before its Add, nor while
    /// it replays the log of its previous one (up to `stale_until`), where
    /// the group it sees is history.
    fn is_member_now(&self) -> bool {
        self.state.member(self.me.id).is_some() && self.applying > self.members.stale_until
    }

    /// A read's context must be unique in the whole group: the leader
    /// keeps pending reads by context and silently drops a duplicate, so a
    /// per-member counter alone would let two members' reads collide.
    fn read_context(&self, id: u64) -> Vec<u8> {
        let mut ctx = self.me.id.0.to_vec();
        ctx.extend_from_slice(&id.to_le_bytes());
        ctx
    }

    fn take_read_states(&mut self, states: Vec<raft::ReadState>) {
        for rs in states {
            let ctx = rs.request_ctx.as_slice();
            if ctx.len() != 24 || ctx[..16] != self.me.id.0 {
                continue;
            }
            let id = u64::from_le_bytes(ctx[16..].try_into().expect("8 bytes"));
            if let Some(i) = self.incarnation.reads_asked.iter().position(|(r, _)| *r == id) {
                let (_, reply) = self.incarnation.reads_asked.swap_remove(i);
                self.incarnation.reads_ready.push((rs.index, reply));
            }
        }
        self.answer_reads();
    }

    /// A read is answered with the seqno assigned when the applied index
    /// reached the read index: everything ordered before the read.
    pub(in crate::group) fn answer_reads(&mut self) {
        let applied = self.incarnation.raw.raft.raft_log.applied;
        let seqno = self.state.seqno();
        self.incarnation.reads_ready.retain(|(index, reply)| {
            if *index > applied {
                return true;
            }
            let _ = reply.send(seqno);
            false
        });
        // Requests Raft dropped (no leader) are answered by the caller's
        // timeout; keep the list bounded meanwhile.
        if self.incarnation.reads_asked.len() > 4096 {
            self.incarnation.reads_asked.drain(..2048);
        }
    }

    /// Tells the server when this member leaves the primary component (no
    /// leader past the grace) and asks the group for a new primary view
    /// once a leader is back (see `quorum`).
    fn watch_quorum(&mut self) {
        if !self.watches_quorum() {
            return;
        }
        let now = self.clock.now();
        if self.cut_off(now) {
            return;
        }
        let leader = self.leader_seen(now);
        if self.incarnation.quorum.probe_due(now) {
            self.send_frame(self.peers.iter().copied(), &Frame::Probe);
            self.relay_commit_index();
            self.call_restarted_members();
        }
        self.incarnation.quorum.note_leader(self.incarnation.raw.raft.leader_id);
        match self.incarnation.quorum.observe(leader, now, self.primary.liveness.timeouts.suspect) {
            Some(Change::Lost) => self.lose_primary_or_ignore(),
            Some(Change::AskRejoin) => self.ask_rejoin(),
            None => {}
        }
    }

    /// A member as the log names it: `<uuid> (<wsrep_node_name>)`, the
    /// Raft id alone for one this member's group does not list.
    fn described(&self, raft_id: u64) -> String {
        match self.state.member_by_raft_id(raft_id) {
            Some(m) => format!("{} ({})", m.info.id, m.info.name),
            None => format!("{:x}", raft_id),
        }
    }

    /// A member that serves reads and has heard from no weighted majority
    /// for `cut_off::window`, or nothing from its leader that long while
    /// another member hears it, leaves the primary component now instead
    /// of after the grace: the others may be committing without it (see
    /// `cut_off`). Its writesets in flight fail as at the grace's end;
    /// members kept primary by configuration or weight wait out the grace
    /// as before (`lose_primary_or_ignore`).
    fn cut_off(&mut self, now: Instant) -> bool {
        let window = crate::group::primary::cut_off::window(self.tick);
        let listening = self.inbox_drained && self.primary.standstill.ran_throughout(now, window);
        if !self.incarnation.quorum.is_primary() || !listening || !self.could_go_on_without_me() {
            return false;
        }
        let ids: Vec<u64> = self.state.members().iter().map(|m| m.info.id.raft_id()).collect();
        self.primary.liveness.list(&ids, now);
        let heard = |m: &Member| m.info.id == self.me.id || self.primary.liveness.spoke_lately(m.info.id.raft_id(), now, window);
        let why = if crate::group::primary::cut_off::hears_a_minority(&self.state, heard) {
            format!("heard from no majority of the cluster for {:?} (cut off, or the others are down)", window)
        } else if let Some((reporter, leader)) = self.leader_heard_elsewhere(now, window) {
            format!("heard nothing from leader {} for {:?} while member {} hears it (the links to the leader are cut)", self.described(leader), window, self.described(reporter))
        } else {
            return false;
        };
        let side: Vec<MemberInfo> = self.state.members().iter().filter(|m| heard(m)).map(|m| m.info.clone()).collect();
        log::info!("this node {}: it is non-Primary with {} of {} members until it hears a leader again", why, side.len(), self.state.members().len());
        self.incarnation.quorum.fell_behind();
        self.non_primary_view(side);
        true
    }

    /// A leader another member hears now and this follower has not heard
    /// for `window`: (that member, the leader). See `cut_off`.
    fn leader_heard_elsewhere(&self, now: Instant, window: Duration) -> Option<(u64, u64)> {
        let raft = &self.incarnation.raw.raft;
        let me = self.me.id.raft_id();
        if raft.state == StateRole::Leader {
            return None;
        }
        // Appends relayed by a member of this segment (see `relay`) are the
        // leader heard too, though its own frames are not.
        let led_lately = |id: u64| self.primary.leader_contact.is_some_and(|(l, at)| l == id && now.saturating_duration_since(at) < window);
        let silent = |id: u64| id != me && self.state.member_by_raft_id(id).is_some() && !self.primary.liveness.spoke_lately(id, now, window) && !led_lately(id);
        self.primary.leader_words.heard_elsewhere(now, raft.term, window, silent)
    }

    /// A non-primary member asks for its primary view in the turn that
    /// brings a leader, not at the next tick: its server may already have
    /// heard a primary view with it (another member's rejoin), and is not
    /// ready for clients until its own rejoin gives it its state again
    /// (galera.MDEV-35946 read in that window, 1 run in 10).
    fn rejoin_once_led(&mut self) {
        if self.incarnation.quorum.is_primary() || !self.watches_quorum() {
            return;
        }
        let now = self.clock.now();
        let leader = self.leader_seen(now);
        self.incarnation.quorum.note_leader(self.incarnation.raw.raft.leader_id);
        if let Some(Change::AskRejoin) = self.incarnation.quorum.observe(leader, now, self.primary.liveness.timeouts.suspect) {
            self.ask_rejoin();
        }
    }

    fn watches_quorum(&self) -> bool {
        let member = self.state.member(self.me.id).is_some();
        member && !matches!(self.members.phase, Phase::Joining(_) | Phase::Leaving(_)) && !self.members.removed
    }

    /// The leader as `quorum` needs it: none, this member, or another
    /// with when it last spoke as leader.
    fn leader_seen(&self, now: Instant) -> Seen {
        if !self.leader_known(now) {
            return Seen::None;
        }
        match self.primary.leader_contact {
            Some((leader, at)) if leader == self.incarnation.raw.raft.leader_id && leader != self.me.id.raft_id() => Seen::Other(at),
            _ => Seen::Me,
        }
    }

    /// A leader that spoke as one lately, and that the weights allow.
    fn leader_known(&self, now: Instant) -> bool {
        let silent = crate::group::primary::quorum::LEADER_SILENT;
        let spoke_as_leader = |id| self.primary.leader_contact.is_some_and(|(l, at)| l == id && now.saturating_duration_since(at) <= silent);
        crate::group::primary::quorum::has_leader(self.incarnation.raw.raft.leader_id, self.me.id.raft_id(), spoke_as_leader) && self.weight_allows_leader(now)
    }

    fn ask_rejoin(&mut self) {
        log::info!("leader {:x} is known and this node is non-Primary: asking the group for a primary view", self.incarnation.raw.raft.leader_id);
        let entry = Entry::MemberState { member: self.me.id, transition: Transition::Rejoin, seqno: self.state.seqno() };
        let _ = self.incarnation.raw.propose(vec![], entry.encode());
    }

    /// A non-primary arbitrator calls its last view's addresses as a first
    /// contact: a data node restarted there is a new member the links to
    /// the old one refuse, and the data nodes' cluster address seldom
    /// names the arbitrator, so without the call they would never tell it
    /// they restarted (see `rejoin_restarted_view`).
    fn call_restarted_members(&self) {
        if !self.me.arbitrator {
            return;
        }
        for m in self.state.members().iter().filter(|m| m.info.id != self.me.id && !m.info.address.is_empty()) {
            self.net.connect_addr(&m.info.address);
        }
    }

    /// Forms a new primary component of this member alone, continuing the
    /// history and seqnos (`pc.bootstrap=YES`). The old Raft group stays
    /// behind with its log: nothing it had not committed is ordered here
    /// (those writesets' clients failed with the non-primary view).
    /// `keep_alone_view`: see `GroupState::reform`.
    pub(in crate::group) fn reform(&mut self, keep_alone_view: bool) {
        if self.incarnation.quorum.is_primary() || self.state.member(self.me.id).is_none() {
            // A note: on a primary node it is a no-op, which mtr tests
            // use as a precaution (galera_3nodes.galera-features#115).
            return log::info!("pc.bootstrap ignored: this node is not in a non-primary component");
        }
        if self.me.arbitrator {
            // A component of the arbitrator alone would order writes no
            // data node holds.
            return log::info!("an arbitrator never forms a primary component: it waits for a data member");
        }
        // The new log numbers on from everything this member holds of the
        // old one (see GroupLog::continuing).
        let (last, term) = (self.incarnation.raw.raft.raft_log.last_index(), self.incarnation.raw.raft.term);
        match raft_node_continuing(&self.raft_config, last.max(self.applying), term) {
            Ok(raw) => self.next_incarnation(raw),
            Err(e) => return log::error!("pc.bootstrap: cannot start a new raft group: {}", e),
        }
        log::info!("forming a primary component of this node alone at {}:{}", self.state.history(), self.state.seqno());
        // The others are out of this component: told so if they call, they
        // join it again.
        let others: Vec<Uuid> = self.state.members().iter().map(|m| m.info.id).filter(|id| *id != self.me.id).collect();
        let at = self.incarnation.raw.raft.raft_log.last_index();
        for id in others {
            self.members.remember_removed(id, at);
        }
        self.members.bootstrap = Some((self.state.history(), self.state.seqno()));
        self.state.reform(keep_alone_view);
        self.refresh_peers();
        self.forget_answers_of_the_gone();
        let _ = self.incarnation.raw.campaign();
    }

    /// No leader past the grace: non-primary, unless this member alone
    /// weighs more than half (`pc.weight`) or the configuration says to go
    /// on; then it delivers its whole log and forms the primary component
    /// again, the writesets waiting proposed again there.
    fn lose_primary_or_ignore(&mut self) {
        let now = self.clock.now();
        let standing = self.side_standing(now);
        let forced = self.primary.policy.forces_primary(standing);
        // An arbitrator never forms a component (see `reform`), so it must
        // not deliver its log's tail either: the group's leader sends it
        // those entries again once the partition heals, and each would be
        // ordered twice here, one seqno apart from every data node (the
        // simulator found it with a garbd outweighing both data nodes).
        if self.me.arbitrator || (!forced && !self.reforms_by_weight()) {
            return self.lose_primary();
        }
        if forced && self.primary.policy.ignore_sb && standing == crate::group::primary::weights::Standing::Split {
            // Galera's wording (mtr suppresses it): the operator chose this.
            log::warning!("Ignoring possible split-brain (allowed by configuration) from view: this side stands {:?} in the last primary view", standing);
        } else if forced {
            // pc.ignore_quorum, in Galera's words too (galera_allowlist
            // suppresses exactly this).
            log::warning!("Ignoring lack of quorum (allowed by configuration) from view: this side stands {:?} in the last primary view", standing);
        } else {
            log::info!("this node alone weighs more than half of the last primary view: it forms the primary component");
        }
        self.deliver_own_log();
        self.order.proposals.unsend_all(now);
        // No non-primary view was delivered on this path.
        self.reform(true);
    }

    /// A non-primary view of this node's side of the partition: itself and
    /// the members it still hears from. It consumes no seqno.
    fn lose_primary(&mut self) {
        let now = self.clock.now();
        let members: Vec<MemberInfo> = self
            .state
            .members()
            .iter()
            .filter(|m| self.hears(m, now))
            .map(|m| m.info.clone())
            .collect();
        // Info, as Galera logs its non-primary views: the operator's
        // signal is wsrep_cluster_status, and mtr tests count warnings.
        log::info!(
            "no leader for longer than {:?}: this node is non-Primary with {} of {} members of the last primary view",
            self.primary.liveness.timeouts.suspect.max(Quorum::MIN_GRACE),
            members.len(),
            self.state.members().len()
        );
        self.non_primary_view(members);
    }

    /// Nothing of this member ran for `gap` (see `standstill`): unless the
    /// group could not have gone on without it, it goes non-primary now
    /// and rejoins once a leader speaks (`quorum`). Its writesets in
    /// flight stay: sent before it stopped, most are ordered by now, and
    /// their clients hear so once it reads the log; the rest are fenced
    /// and sent again as after any stall (`maybe_fence`).
    fn stood_still(&mut self, gap: Duration) {
        if !self.primary.standstill.is_new(self.clock.now()) || !self.could_go_on_without_me() {
            return;
        }
        log::info!("this node stood still for {:.1} s (paused or starved of CPU) while the group went on: it is non-Primary until it has caught up", gap.as_secs_f64());
        self.incarnation.quorum.fell_behind();
        let me: Vec<MemberInfo> = self.state.members().iter().filter(|m| m.info.id == self.me.id).map(|m| m.info.clone()).collect();
        self.deliver_non_primary(me);
    }

    /// Whether this member serves reads (synced in a primary view with
    /// other data members) that the group may have overtaken while it
    /// stood still. Not when the configuration keeps it primary whatever
    /// happens (`pc.ignore_quorum`, `pc.ignore_sb`), nor when it alone
    /// outweighs the rest: nothing was committed without it then. Not
    /// only when its quorum watch says primary: a member asking to rejoin
    /// may already have been delivered another's primary view with it
    /// in, and its server answers reads (simulator seed 344).
    fn could_go_on_without_me(&self) -> bool {
        let synced = self.state.member(self.me.id).is_some_and(|m| m.state == crate::group::state::MemberState::Synced);
        let other_data = self.state.members().iter().any(|m| m.info.id != self.me.id && !m.info.arbitrator);
        let kept_primary = self.primary.policy.ignore_quorum || self.primary.policy.ignore_sb || self.reforms_by_weight();
        synced && other_data && !kept_primary && !self.me.arbitrator && self.watches_quorum() && !self.members.is_halted() && !self.members.is_leaving_or_left()
    }

    /// The non-primary view of `members` (this member's side): what this
    /// member proposed and is not yet ordered fails.
    fn non_primary_view(&mut self, members: Vec<MemberInfo>) {
        // What of them may be in the log is fenced once a leader is known
        // again (see `owed_fence`).
        let fence = self.order.proposals.highest_sent();
        for client in self.order.proposals.abandon() {
            self.events.push(GroupEvent::ProposalFailed { token: client });
        }
        self.order.owed_fence = self.order.owed_fence.max(fence);
        self.deliver_non_primary(members);
    }

    fn deliver_non_primary(&mut self, members: Vec<MemberInfo>) {
        let my_idx = members.iter().position(|m| m.id == self.me.id).map_or(-1, |i| i as i32);
        let view = crate::group::View { history: self.state.history(), seqno: self.state.seqno(), conf_id: -1, primary: false, members, my_idx };
        self.events.push(GroupEvent::View(view));
        self.flush_events();
    }

    /// A proposal of ours handed to Raft that has made no progress for
    /// long (nothing of it committed) was probably lost with a leader:
    /// fence everything up to the highest token so that it can never be
    /// ordered later; it is sent again (or its client learns it failed).
    fn maybe_fence(&mut self) {
        let Some(upto) = self.order.proposals.highest_sent() else { return };
        let now = self.clock.now();
        let stalled = self.order.proposals.oldest_progress().is_some_and(|at| now.saturating_duration_since(at) >= FENCE_AFTER);
        if !stalled || self.clock.now().saturating_duration_since(self.order.last_fence) < FENCE_AFTER {
            return;
        }
        if self.state.member(self.me.id).is_none() {
            return;
        }
        self.order.last_fence = self.clock.now();
        log::info!("fencing proposals up to token {} (no progress for {:?}); they will be sent again", upto, FENCE_AFTER);
        let data = Entry::Fence { origin: self.me.id, token: upto }.encode();
        let _ = self.incarnation.raw.propose(vec![], data);
    }

    /// Snapshots when raft-rs asked for one or the log grew long.
    fn maybe_snapshot(&mut self) {
        let applied = self.incarnation.raw.raft.raft_log.applied;
        let store = self.incarnation.raw.store();
        let due = applied >= store.snapshot_index() + self.limits.snapshot_every || self.applied_bytes >= self.limits.snapshot_bytes;
        if !(store.snapshot_wanted() || due) || !self.state.is_primary() || !self.state.may_snapshot() {
            return;
        }
        self.applied_bytes = 0;
        let mut snap = Snapshot::default();
        let node = self.delivery.snapshot();
        snap.set_data(Bytes::from(join_snapshot(&self.state.encode(), &node)));
        let md = snap.mut_metadata();
        md.index = applied;
        md.term = self.incarnation.raw.raft.raft_log.term(applied).unwrap_or(0);
        md.set_conf_state(self.incarnation.raw.raft.prs().conf().to_conf_state());
        let keep_from = self.keep_from(applied);
        self.incarnation.raw.store().set_snapshot(snap, keep_from);
    }

    /// The first entry to keep behind a snapshot at `applied`: a few, and
    /// also those a member still lacks (see `lowest_needed`), within
    /// `log_hold`.
    fn keep_from(&self, applied: u64) -> u64 {
        let store = self.incarnation.raw.store();
        let keep = store.keep_from(applied, self.limits.log_keep.entries, self.limits.log_keep.bytes);
        let Some(has) = self.lowest_needed() else { return keep };
        if has >= keep {
            // Everyone has what goes (the usual case): no need to walk
            // the log for the hold's bound.
            return keep;
        }
        let hold = store.keep_from(applied, self.limits.log_hold.entries, self.limits.log_hold.bytes);
        keep.min(has.max(hold))
    }

    /// The last entry the member furthest behind has, whose log this
    /// member must keep for it: on a leader, every other member's; on an
    /// arbitrator, the data voters' as its leader told it (see
    /// `arbitrator_hold`); a data follower keeps none (the leader sends a
    /// snapshot). From the last entry a member has, not the first it
    /// lacks: the next append to it carries that entry's term, which a
    /// compacted log cannot give, and raft-rs would send a snapshot
    /// instead.
    fn lowest_needed(&self) -> Option<u64> {
        let raft = &self.incarnation.raw.raft;
        if raft.state == StateRole::Leader {
            let me = self.me.id.raft_id();
            return raft.prs().iter().filter(|(id, _)| **id != me).map(|(_, pr)| pr.matched).min();
        }
        self.me.arbitrator.then(|| self.members.arbitrator_hold.lowest())
    }

    /// Events of an entry at `index` from `from` on: up to our removal
    /// (`stale_until`), they are our previous incarnation's, and the node
    /// must not take them for its new join (nor donate again what it
    /// donated then). Our states and the state transfers go. The views
    /// stay, as views of the others (`my_idx` -1; our own removal, which
    /// the state shows us as non-primary, as the view they saw then):
    /// every seqno reaches the node in order, its certification and
    /// gcache see the same sequence as everyone's, and a seqno the
    /// appliers never see is not a gap in what the server is given.
    fn drop_stale(&mut self, index: u64, from: usize) {
        if index > self.members.stale_until {
            return;
        }
        let me = self.me.id;
        let mut i = from;
        while i < self.events.len() {
            match &mut self.events[i] {
                GroupEvent::View(v) if v.primary => v.my_idx = -1,
                GroupEvent::View(_) => self.events[i] = GroupEvent::View(self.state.view()),
                GroupEvent::StateTransfer { .. } | GroupEvent::StateTransferFailed { .. } => {
                    self.events.remove(i);
                    continue;
                }
                GroupEvent::MemberState { member, .. } if *member == me => {
                    self.events.remove(i);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    pub(in crate::group) fn flush_events(&mut self) {
        self.check_sequence();
        for ev in &self.events {
            if let GroupEvent::ProposalFailed { .. } = ev {
                self.counters.sent_one_less();
            }
        }
        if !self.events.is_empty() {
            self.delivery.deliver(&mut self.events);
            self.events.clear();
        }
    }
}

/// Proposes a writeset's entry with its payload apart (`Entry::split`),
/// so that the log holds a view of the client's buffer: raft-rs's
/// `propose` takes owned vectors, a copy of every payload. A MsgPropose
/// stepped in is what `propose` makes; true if Raft took it.
fn propose_split(raw: &mut RawNode<GroupLog>, entry: Entry) -> bool {
    let (head, body) = entry.split();
    let mut e = RaftEntry::default();
    e.context = Bytes::from(head);
    e.data = body;
    let mut m = Message::default();
    m.set_msg_type(MessageType::MsgPropose);
    m.from = raw.raft.id;
    m.set_entries(vec![e].into());
    raw.step(m).is_ok()
}

/// Raft's window of appends in flight to one follower for Galera's
/// `evs.send_window` (messages in flight), within
/// [`SEND_WINDOW_FLOOR`]..=[`SEND_WINDOW_CEILING`]. An EVS message
/// carries one fragment of at most 64 KB (`gcs.max_packet_size`); a Raft
/// append carries every entry pending for that follower, up to
/// `max_size_per_msg` (1 MiB). So Galera's default of 4 taken as such
/// would hold a far follower to 4 round trips' worth of batches and add a
/// round trip to commits under load: the window never goes below the
/// floor, and `evs.send_window` above it (Galera's WAN advice is 512)
/// widens it. `evs.user_send_window` has no effect of its own: Raft does
/// not count its heartbeats and votes in the window, so every message in
/// it is a data message.
pub fn send_window(evs_send_window: usize) -> usize {
    evs_send_window.clamp(SEND_WINDOW_FLOOR, SEND_WINDOW_CEILING)
}

/// See [`send_window`]: 256 appends of up to 1 MiB exceed what Galera's
/// 512 messages of 64 KB allow in bytes.
pub const SEND_WINDOW_FLOOR: usize = 256;
/// The leader keeps a slot per append in flight per follower, and up to
/// `max_size_per_msg` in each: 4096 bound that to 4 GiB of resends and a
/// 32 KB ring per follower, whatever the option says.
pub const SEND_WINDOW_CEILING: usize = 4096;

/// The Raft settings of every member (the simulator starts from them).
pub fn raft_config(id: u64) -> raft::Config {
    raft::Config {
        id,
        election_tick: 10,
        heartbeat_tick: 2,
        check_quorum: true,
        pre_vote: true,
        max_inflight_msgs: SEND_WINDOW_FLOOR,
        max_size_per_msg: 1 << 20,
        ..Default::default()
    }
}

/// An arbitrator's Raft settings: it campaigns only after three to four
/// election timeouts without a leader, when no data member could win,
/// while the lease it grants a leader (`election_tick`) stays the usual
/// one. A data member cannot win when the arbitrator's log holds entries
/// it lacks (a leader died right after the arbitrator acknowledged them,
/// which may have committed them): the arbitrator refuses it its vote, as
/// Raft must. The arbitrator then leads only to pass those entries on and
/// hand leadership to that member (`Driver::hand_over`); it keeps no data,
/// so it never sends a snapshot nor takes a joiner meanwhile.
pub fn campaigns_last(config: raft::Config) -> raft::Config {
    let election = config.election_tick;
    raft::Config { min_election_tick: 3 * election, max_election_tick: 4 * election, ..config }
}

/// Makes `raw` an arbitrator's when `arbitrator` (see `campaigns_last`).
fn arbitrator_log(raw: RawNode<GroupLog>, arbitrator: bool) -> RawNode<GroupLog> {
    if arbitrator {
        raw.store().refuse_snapshots();
    }
    raw
}

pub fn raft_node_with(config: &raft::Config, voters: Vec<u64>) -> raft::Result<RawNode<GroupLog>> {
    config.validate()?;
    RawNode::new(config, GroupLog::new(voters), &super::raft_log::logger())
}

/// A Raft node of this member alone whose log numbers on after `index`
/// (a component formed again: see `GroupLog::continuing`).
pub fn raft_node_continuing(config: &raft::Config, index: u64, term: u64) -> raft::Result<RawNode<GroupLog>> {
    config.validate()?;
    RawNode::new(config, GroupLog::continuing(config.id, index, term)?, &super::raft_log::logger())
}

/// A snapshot's data: the group state, then the node layer's part.
pub fn join_snapshot(group: &[u8], node: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + group.len() + node.len());
    out.extend_from_slice(&(group.len() as u32).to_le_bytes());
    out.extend_from_slice(group);
    out.extend_from_slice(node);
    out
}

pub fn split_snapshot(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
    let group = data.get(4..4 + len)?;
    Some((group, &data[4 + len..]))
}

impl super::ready::ReadyHandler for Driver {
    fn raw(&mut self) -> &mut RawNode<GroupLog> {
        &mut self.incarnation.raw
    }

    fn send(&mut self, msgs: Vec<Message>) {
        Driver::send(self, msgs)
    }

    fn restore(&mut self, snap: Snapshot) {
        Driver::restore(self, snap)
    }

    fn apply(&mut self, entries: Vec<RaftEntry>) {
        Driver::apply(self, entries)
    }

    fn applied(&self) -> Option<u64> {
        self.incarnation.gate.applied_for_raft(self.applying, self.incarnation.raw.raft.raft_log.applied)
    }

    fn read_states(&mut self, states: Vec<raft::ReadState>) {
        self.take_read_states(states)
    }

    fn conf_stored(&mut self) -> &mut u64 {
        &mut self.incarnation.conf_stored
    }

    fn to_store(&mut self, entries: &mut [RaftEntry]) {
        let me = self.me.id;
        for e in entries.iter_mut().filter(|e| !e.context.is_empty()) {
            let len = e.data.len();
            let stored = match Entry::decode(&e.context) {
                Ok(Entry::Ordered { origin, token, .. }) if origin == me => self.own_payload(token, 0, len),
                Ok(Entry::Piece { origin, token, offset, .. }) if origin == me => self.own_payload(token, offset, len),
                Ok(Entry::Piece { origin, token, total, offset, .. }) => self.order.defrag.stage(origin, token, total, offset, &e.data),
                _ => None,
            };
            if let Some(data) = stored {
                e.data = data;
            }
        }
    }
}
