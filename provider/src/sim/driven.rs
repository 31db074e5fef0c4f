//! A simulated member: the production group driver (`group::Driver`, the
//! code mariadbd runs) with the simulation's network (`SimLinks`) and
//! clock (`SimClock`), and a small node layer (`SimNode`) that takes its
//! deliveries as the provider's node layer does: certification, the
//! checker's notes, appliers that take a few writesets per tick, flow
//! control past a backlog, and the member-state transitions a joined node
//! reports. No rule of the group is written here.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use raft::{RawNode, StateRole};

use super::check::Note;
use super::network::Msg;
use super::{raft_id, uuid, HISTORY};
use crate::cert::{Certification, Verdict};
use crate::group::commands::Commands;
use crate::group::entry::{Entry, MemberInfo, Transition};
use crate::group::io::{Clock, Links};
use crate::group::liveness::Timeouts;
use crate::group::quorum::Policy;
use crate::group::recovery::Previous;
use crate::group::{self, Command, Counters, Delivery, Driver, DriverConfig, FlowGate, GroupEvent, GroupLog, GroupState, Limits, MemberState, Retention, Signal, Start};
use crate::gtid::{Seqno, Uuid, SEQNO_UNDEFINED};
use crate::transport::{Inbound, PeerId};
use crate::writeset::WriteSet;

/// The simulated appliers' flow-control limits.
pub(super) const FC_UPPER: usize = 16;
const FC_LOWER: usize = 8;

/// Frames the driver sent and addresses it contacted, for the
/// simulation's network to carry.
#[derive(Default)]
struct SimLinks {
    out: Mutex<Vec<(u64, Msg)>>,
    /// Members in two segments by the parity of their index (see
    /// `Sim::segmented`); false: no segments, as a build without them.
    segmented: bool,
    index: usize,
}

impl SimLinks {
    fn push(&self, to: u64, msg: Msg) {
        self.out.lock().unwrap_or_else(|e| e.into_inner()).push((to, msg));
    }
}

impl Links for SimLinks {
    fn send(&self, to: PeerId, kind: u8, payload: Bytes) -> bool {
        self.push(to, Msg::Frame { kind, payload });
        true
    }
    // Every member can reach every other unless a partition separates
    // them: there are no links to keep or drop.
    fn set_peer(&self, _: PeerId, _: &str) {}
    fn stop_dialing(&self, _: PeerId) {}
    fn forget(&self, _: PeerId) {}
    fn connect_addr(&self, addr: &str) {
        if let Some(index) = addr.strip_prefix("sim:").and_then(|i| i.parse::<usize>().ok()) {
            self.push(raft_id(index), Msg::Contact);
        }
    }
    fn set_isolated(&self, _: bool) {}
    fn stop(&self) {}
    fn own_segment(&self) -> u8 {
        (self.index % 2) as u8
    }
    fn segment(&self, id: PeerId) -> Option<u8> {
        self.segmented.then(|| (index_of(id) % 2) as u8)
    }
    // Member 2 speaks as a build without own payloads: every simulation
    // sends appends both with and without the receiver's own payloads.
    fn has_feature(&self, id: PeerId, feature: u8) -> bool {
        feature != crate::transport::handshake::FEATURE_OWN_PAYLOADS || index_of(id) != 2
    }
}

/// The simulation's time, set before every step.
struct SimClock(Mutex<Instant>);

impl SimClock {
    fn set(&self, now: Instant) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }
}

impl Clock for SimClock {
    fn now(&self) -> Instant {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `lockstep.log_sync`, as the simulation plays it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSync {
    /// The log is written as seqnos are delivered and synced by the
    /// operating system's writeback only, every `WRITEBACK_MS`.
    None,
    /// Synced at the end of each delivery, before its acknowledgements.
    Batch,
}

/// How often the operating system writes back an unsynced log.
const WRITEBACK_MS: u64 = 5_000;
/// How often the data (InnoDB with innodb_flush_log_at_trx_commit=0)
/// reaches the disk.
const DATA_FLUSH_MS: u64 = 1_000;

/// What a member's disk keeps across a power cut: its log (the gcache,
/// every seqno it delivered) as far as it was synced, and its data's
/// position as of the data's last flush. A process crash loses nothing
/// written; the simulation's crashes are power cuts, the worse case.
#[derive(Clone, Copy, Debug)]
struct SimDisk {
    policy: LogSync,
    log_synced: Seqno,
    data_synced: Seqno,
}

impl SimDisk {
    /// How far a restart finds this member's history reaching (see
    /// `node::replay`).
    fn reaches(&self) -> Seqno {
        self.log_synced.max(self.data_synced)
    }
}

/// The node layer's part, as `node::delivery` plays it for the server.
struct SimNode {
    /// What survives a power cut of this member.
    disk: SimDisk,
    cert: Certification,
    notes: Vec<Note>,
    /// Delivered writesets the simulated appliers have yet to apply.
    backlog: usize,
    /// In a primary view that lists this member (the node's `in_view`):
    /// before, a joiner's deliveries only feed its certification.
    in_view: bool,
    /// A committed entry could not be read (never expected here).
    halted: Option<u64>,
    /// The members of the last primary view this node was in: what the
    /// node layer writes to `gvwstate.dat`, and a killed node tells the
    /// cluster when it restarts.
    last_view: Option<Vec<Uuid>>,
    /// Rejoining after an eviction: the log's views of this member's
    /// previous incarnation replay, and only feed certification.
    rejoining: bool,
    /// The consistency vote, as `node::vote` plays it.
    votes: SimVotes,
    /// The member state whose transition (a joiner's Join, a joined
    /// member's Sync) this node sent: once, as the node layer sends it,
    /// so that a lost one is the driver's to send again.
    reported: Option<MemberState>,
}

/// A member whose "data" diverged: it fails the next writeset it applies
/// and votes on it, the others vote success when asked, and whoever the
/// result goes against leaves.
#[derive(Default)]
struct SimVotes {
    me: Uuid,
    /// Fail the next writeset applied here (the `Diverge` fault).
    fail_next: bool,
    /// This member's votes, by seqno.
    mine: std::collections::BTreeMap<Seqno, u64>,
    /// Votes to send at the next node tick.
    outbox: Vec<Entry>,
    /// A result went against this member: it leaves.
    lost: bool,
}

impl SimVotes {
    fn cast(&mut self, seqno: Seqno, code: u64) {
        if self.mine.contains_key(&seqno) {
            return; // once per seqno, as `node::vote::Ballots`
        }
        self.mine.insert(seqno, code);
        self.outbox.push(Entry::Vote { member: self.me, seqno, code, policy: 0, message: "sim: diverged".into() });
    }

    fn result(&mut self, seqno: Seqno, result: u64) {
        if self.mine.get(&seqno).is_some_and(|&mine| mine != result) {
            self.lost = true;
        }
    }
}

impl SimNode {
    fn on_event(&mut self, ev: GroupEvent) {
        match ev {
            GroupEvent::Ordered { seqno, origin, token, payload } => {
                // The token on the wire is the driver's own (its origin
                // gets the client's back); the simulation's clients put
                // theirs in the trx id, the same on every member.
                let (pass, token) = match WriteSet::decode(payload.clone()) {
                    Ok(ws) => (matches!(self.cert.certify(&ws, seqno), Verdict::Pass { .. }), ws.trx_id),
                    Err(_) => {
                        self.cert.skip(seqno);
                        (false, token)
                    }
                };
                if self.in_view {
                    self.backlog += 1;
                    if pass && std::mem::take(&mut self.votes.fail_next) {
                        self.votes.cast(seqno, group::vote::digest(HISTORY, seqno, b"diverged"));
                    }
                }
                self.notes.push(Note::Ordered { seqno, origin, token, ws: payload, pass });
            }
            GroupEvent::View(v) if v.primary => {
                // A joiner's data is where it was (a restarted member's
                // position, or none): the log it joins starts with a view,
                // and its certification starts right before it
                // (`node::delivery`'s adopt_history).
                let replayed = v.my_idx < 0 && self.rejoining;
                if !replayed && self.cert.position() != v.seqno - 1 {
                    self.cert.reset(v.seqno - 1);
                }
                if v.my_idx >= 0 {
                    self.rejoining = false;
                }
                self.cert.skip(v.seqno);
                self.in_view = v.my_idx >= 0;
                if self.in_view {
                    self.last_view = Some(v.members.iter().map(|m| m.id).collect());
                }
                self.notes.push(Note::View { seqno: v.seqno, conf_id: v.conf_id, members: v.members.iter().map(|m| m.id).collect() });
            }
            GroupEvent::View(_) => {
                self.in_view = false;
                self.notes.push(Note::NonPrimary);
            }
            GroupEvent::Restored { node, view } => {
                self.cert.restore(&node).expect("a snapshot's certification index restores");
                self.in_view = view.my_idx >= 0;
                if self.in_view {
                    self.last_view = Some(view.members.iter().map(|m| m.id).collect());
                }
                self.notes.push(Note::Restored { seqno: view.seqno });
            }
            GroupEvent::Rejoining => {
                // The node joins its new incarnation's group anew.
                self.reported = None;
                self.cert.reset(SEQNO_UNDEFINED);
                self.in_view = false;
                self.rejoining = true;
                self.notes.push(Note::Rejoining);
            }
            GroupEvent::Halted { index } => self.halted = Some(index),
            GroupEvent::ProposalFailed { token } => self.notes.push(Note::Failed { token }),
            // The simulated appliers apply what others failed: success.
            GroupEvent::VoteRequest { seqno } if self.in_view => self.votes.cast(seqno, group::vote::SUCCESS),
            GroupEvent::VoteResult { seqno, result } => {
                self.votes.result(seqno, result);
                self.notes.push(Note::Voted { seqno, result });
            }
            GroupEvent::VoteAnswer { seqno, result } => self.votes.result(seqno, result),
            _ => {}
        }
    }
}

struct NodeDelivery(Arc<Mutex<SimNode>>);

impl Delivery for NodeDelivery {
    fn deliver(&mut self, events: &mut Vec<GroupEvent>) {
        let mut node = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for ev in events.drain(..) {
            node.on_event(ev);
        }
        // Its clients hear of the batch (the checker's notes) after this.
        if node.disk.policy == LogSync::Batch {
            node.disk.log_synced = node.cert.position();
        }
    }

    fn snapshot(&mut self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).cert.encode()
    }
}

/// What a member is, beside its place and timing.
#[derive(Clone, Copy, Debug)]
pub struct Traits {
    /// `pc.weight`.
    pub weight: u32,
    /// In a segment by the parity of its index (see `Sim::segmented`).
    pub segmented: bool,
    /// An arbitrator (garbd): votes, leads only to hand over, takes no
    /// writes.
    pub arbitrator: bool,
    pub log_sync: LogSync,
}

pub struct Driven {
    index: usize,
    info: MemberInfo,
    driver: Driver,
    commands: Arc<Commands>,
    links: Arc<SimLinks>,
    clock: Arc<SimClock>,
    node: Arc<Mutex<SimNode>>,
    flow: Arc<FlowGate>,
    weight: u32,
    election_tick: usize,
    apply_rate: usize,
    /// Flow control as this node last asked for it.
    stop_requested: bool,
    /// Asked to leave the group (as a server's shutdown does): the
    /// driver answers here when it is done.
    leave: Option<std::sync::mpsc::Receiver<()>>,
}

impl Driven {
    fn node(&self) -> std::sync::MutexGuard<'_, SimNode> {
        self.node.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn step(&mut self, now: Instant, cmd: Option<Command>) {
        self.clock.set(now);
        let running = self.driver.step(cmd);
        assert!(running, "node{}'s driver stopped", self.index + 1);
    }

    fn command(&self, cmd: Command) {
        self.commands.send(cmd).expect("the driver owns the receiver");
    }

    /// What the server's node layer does each tick: its appliers work
    /// through the backlog; past the upper limit it asks the group to
    /// stop, under the lower one to go on; a member with its state reports
    /// Joined, then Synced once the backlog is drained, each once.
    fn node_tick(&mut self, now_ms: u64) {
        let (backlog, in_view) = {
            let mut n = self.node();
            n.backlog = n.backlog.saturating_sub(self.apply_rate);
            let position = n.cert.position();
            if now_ms % DATA_FLUSH_MS < super::TICK_MS {
                n.disk.data_synced = position;
            }
            if now_ms % WRITEBACK_MS < super::TICK_MS {
                n.disk.log_synced = position;
            }
            (n.backlog, n.in_view)
        };
        // As the group has ordered it (a member restored from a snapshot
        // hears no transition of its own).
        let own = self.driver.group_state().member(self.info.id).map(|m| m.state);
        if backlog > FC_UPPER && !self.stop_requested {
            self.stop_requested = true;
            self.command(Command::Flow(Signal::Stop));
        } else if backlog < FC_LOWER && self.stop_requested {
            self.stop_requested = false;
            self.command(Command::Flow(Signal::Cont));
        }
        let transition = match own {
            Some(MemberState::Joiner) if in_view => Some(Transition::Join),
            Some(MemberState::Joined) if backlog == 0 => Some(Transition::Sync),
            _ => None,
        };
        let transition = {
            let mut n = self.node();
            if n.reported != own {
                n.reported = None; // a new state: its transition is due once
            }
            let first = transition.filter(|_| n.reported.is_none());
            if first.is_some() {
                n.reported = own;
            }
            first
        };
        if let Some(transition) = transition {
            let seqno = self.driver.group_state().seqno();
            self.command(Command::Send(Entry::MemberState { member: self.info.id, transition, seqno }.encode()));
        }
        let (votes, lost) = {
            let mut n = self.node();
            (std::mem::take(&mut n.votes.outbox), n.votes.lost)
        };
        for vote in votes {
            self.command(Command::Send(vote.encode()));
        }
        if lost && self.leave.is_none() {
            self.leave(); // inconsistent: as `node::connection::leave_inconsistent`
        }
    }
}

/// How often an odd member's `evs.send_window` changes (see `tick`).
const SEND_WINDOW_EVERY_MS: u64 = 7_000;

impl Driven {
    /// Member `index`: the first bootstraps the cluster, the others join;
    /// `election_tick` is its own (the seed draws it), `apply_rate` how
    /// many writesets its appliers take per tick. `previous`: the member a
    /// killed node was, its last primary view and its position, as the
    /// node layer reads them from `gvwstate.dat` and its data when it
    /// restarts (its state is then that position's).
    pub fn new(index: usize, election_tick: usize, apply_rate: usize, bootstrap: bool, traits: Traits, previous: Option<Previous>, now: Instant) -> Driven {
        let Traits { weight, segmented, arbitrator, log_sync } = traits;
        let id = uuid(index);
        let info = MemberInfo { id, name: format!("node{}", index + 1), incoming: String::new(), address: format!("sim:{}", index), arbitrator, stateless: false };
        let mut raft = group::raft_config(id.raft_id());
        // One election timeout per member, drawn from the seed (raft-rs
        // would draw it from thread_rng, and two members that time out
        // together split the vote again on every term).
        raft.election_tick = election_tick;
        raft.min_election_tick = election_tick;
        raft.max_election_tick = election_tick + 1;
        if arbitrator {
            // Its later campaign too: raft-rs draws it from the range.
            raft = group::campaigns_last(raft);
            raft.max_election_tick = raft.min_election_tick + 1;
        }
        let start = match bootstrap {
            true => Start::Bootstrap { history: HISTORY, position: 0 },
            // Every member's address, as wsrep_cluster_address lists them.
            false => Start::Join { peers: (0..index).map(|i| format!("sim:{}", i)).collect() },
        };
        let cfg = DriverConfig {
            me: info.clone(),
            start,
            tick: Duration::from_millis(super::TICK_MS),
            timeouts: Timeouts::default(),
            previous: previous.clone(),
            raft,
            // Snapshots often, so that joiners and lagging members meet
            // them; a member of five cuts its writesets in
            // pieces of a few bytes, so that pieces of several writesets
            // interleave in the log and cross leader changes, partitions
            // and snapshots.
            limits: Limits {
                piece: if index % 5 == 2 { 32 } else { Limits::default().piece },
                snapshot_every: 64,
                snapshot_bytes: 4096,
                log_keep: Retention { entries: 16, bytes: 1024 },
                log_hold: Retention { entries: 128, bytes: 16384 },
            },
        };
        let position = match (&previous, bootstrap) {
            (Some(p), _) => p.position.1,
            (None, true) => 0,
            (None, false) => SEQNO_UNDEFINED,
        };
        let node = Arc::new(Mutex::new(SimNode {
            disk: SimDisk { policy: log_sync, log_synced: position, data_synced: position },
            cert: Certification::new(position),
            notes: Vec::new(),
            backlog: 0,
            in_view: false,
            halted: None,
            last_view: None,
            rejoining: false,
            votes: SimVotes { me: id, ..SimVotes::default() },
            reported: None,
        }));
        let (commands, inbox) = crate::group::commands::queue();
        let links = Arc::new(SimLinks { out: Mutex::default(), segmented, index });
        let clock = Arc::new(SimClock(Mutex::new(now)));
        let flow = Arc::new(FlowGate::default());
        let counters = Arc::new(Counters::default());
        let delivery = Box::new(NodeDelivery(node.clone()));
        let mut driver = Driver::new(cfg, inbox, delivery, links.clone(), clock.clone(), counters, flow.clone()).expect("a valid raft configuration");
        driver.campaign_if_bootstrapping();
        commands.send(Command::Policy(Policy { weight, ..Policy::default() })).expect("the driver owns the receiver");
        Driven { index, info, driver, commands, links, clock, node, flow, weight, election_tick, apply_rate, stop_requested: false, leave: None }
    }

    pub fn tick(&mut self, now: Instant, now_ms: u64) {
        self.node_tick(now_ms);
        // An operator widens and narrows evs.send_window now and then
        // (odd members only), while appends are in flight.
        if self.index % 2 == 1 && now_ms % SEND_WINDOW_EVERY_MS < super::TICK_MS {
            let wide = (now_ms / SEND_WINDOW_EVERY_MS) % 2 == 0;
            self.command(Command::SendWindow(if wide { 1000 } else { 4 }));
        }
        self.step(now, None);
    }

    pub fn receive(&mut self, from: u64, msg: Msg, now: Instant) {
        let inbound = match msg {
            Msg::Frame { kind, payload } => Inbound::Frame { from, kind, payload },
            // The transport's handshake: the contacted member answers who
            // it is, and both ends have a link.
            Msg::Contact => {
                self.links.push(from, Msg::Up);
                Inbound::PeerUp { id: from, uuid: uuid_of(from), addr: format!("sim:{}", index_of(from)) }
            }
            Msg::Up => Inbound::PeerUp { id: from, uuid: uuid_of(from), addr: format!("sim:{}", index_of(from)) },
        };
        self.step(now, Some(Command::Net(inbound)));
    }

    /// A client's writeset; false when it cannot be proposed now (not
    /// primary, or flow control holds the writers).
    pub fn propose(&mut self, token: u64, ws: &WriteSet, now: Instant) -> bool {
        if !self.is_primary() || self.flow.is_paused() {
            return false;
        }
        self.step(now, Some(Command::Propose { token, body: Bytes::from(ws.encode()) }));
        true
    }

    /// A causal read: the answer (the seqno it must wait for) comes on the
    /// receiver, or never (no leader; the caller would ask again).
    pub fn read(&mut self, now: Instant) -> std::sync::mpsc::Receiver<Seqno> {
        let (reply, answer) = std::sync::mpsc::channel();
        self.step(now, Some(Command::ReadIndex(reply)));
        answer
    }

    /// Leaves the group gracefully, as a server that shuts down does.
    pub fn leave(&mut self) {
        let (reply, done) = std::sync::mpsc::channel();
        self.command(Command::Leave(reply));
        self.leave = Some(done);
    }

    /// The next writeset this member applies fails here (its data
    /// diverged from the others').
    pub fn diverge(&mut self, on: bool) {
        self.node().votes.fail_next = on;
    }

    /// It failed a writeset and voted on it (see `diverge`).
    pub fn has_diverged(&self) -> bool {
        let n = self.node();
        n.votes.mine.values().any(|&v| v != group::vote::SUCCESS)
    }

    /// The leave is done (the process would exit now).
    pub fn has_left(&self) -> bool {
        self.leave.as_ref().is_some_and(|done| !matches!(done.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty)))
    }

    /// The client of `token` gave up (as a KILLed client does).
    pub fn fence(&mut self, token: u64) {
        self.command(Command::Cancel(token));
    }

    pub fn is_primary(&self) -> bool {
        self.driver.is_primary_member()
    }

    /// A synced member of a primary view with others in it: its server
    /// would be answering reads (see `group::standstill`).
    pub fn serves_reads(&self) -> bool {
        let me = self.id();
        let members = self.state().members();
        let synced = members.iter().any(|m| m.info.id == me && m.state == crate::group::MemberState::Synced);
        // One that alone outweighs the rest commits nothing without them
        // and nothing is committed without it: it cannot fall behind.
        let alone = crate::group::weights::decides_alone(self.state(), me);
        self.node().in_view && synced && members.len() >= 2 && !self.is_arbitrator() && !alone
    }

    pub fn is_leader(&self) -> bool {
        self.driver.raft().raft.state == StateRole::Leader
    }

    pub fn position(&self) -> Seqno {
        self.node().cert.position()
    }

    /// What this member, killed now, knows when it restarts: None unless
    /// it was in a primary view (a node that never was has no
    /// `gvwstate.dat`).
    pub fn previous(&self) -> Option<Previous> {
        let n = self.node();
        let view = n.last_view.clone()?;
        Some(Previous { member: self.info.id, view, position: (HISTORY, n.disk.reaches()) })
    }

    /// The members of the last primary view this member was in.
    pub fn last_view(&self) -> Option<Vec<Uuid>> {
        self.node().last_view.clone()
    }

    pub fn id(&self) -> Uuid {
        self.info.id
    }

    pub fn weight(&self) -> u32 {
        self.weight
    }

    pub fn is_arbitrator(&self) -> bool {
        self.info.arbitrator
    }

    /// Whether, leading, it can bring `member`, a data voter, up to date
    /// from its log: one that lacks entries already dropped here needs a
    /// snapshot, which an arbitrator, holding no data, cannot send.
    pub fn can_catch_up(&self, member: Uuid) -> bool {
        let raft = &self.driver.raft().raft;
        let voter = self.driver.group_state().member(member).is_some_and(|m| m.voter && !m.info.arbitrator);
        voter && raft.prs().get(member.raft_id()).is_some_and(|pr| pr.next_idx >= raft.raft_log.first_index())
    }

    pub fn election_tick(&self) -> usize {
        self.election_tick
    }

    pub fn take_outbox(&mut self) -> Vec<(u64, Msg)> {
        std::mem::take(&mut *self.links.out.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn take_notes(&mut self) -> Result<Vec<Note>, String> {
        let mut n = self.node();
        if let Some(index) = n.halted {
            return Err(format!("node{} halted at log index {}", self.index + 1, index));
        }
        Ok(std::mem::take(&mut n.notes))
    }

    pub fn backlog(&self) -> usize {
        self.node().backlog
    }

    pub fn state(&self) -> &GroupState {
        self.driver.group_state()
    }

    pub fn raft(&self) -> &RawNode<GroupLog> {
        self.driver.raft()
    }

    pub fn joining(&self) -> bool {
        self.driver.is_joining()
    }
}

/// The simulation numbers members from 0; their raft ids follow `uuid`.
fn index_of(id: u64) -> usize {
    (0..64).find(|i| raft_id(*i) == id).expect("a simulated member's raft id")
}

fn uuid_of(id: u64) -> Uuid {
    uuid(index_of(id))
}
