//! Total order and membership: Galera's GCS, built on Raft.
//!
//! Every ordered action (writeset, TOI, fragment), every member-state
//! transition and every membership change goes through the Raft log; once
//! committed, each member applies the log to the same [`GroupState`] and so
//! assigns the same global seqnos and sees the same views and member
//! states. The node layer receives the result as [`GroupEvent`]s through
//! its [`Delivery`]. Members talk over [`crate::transport`].
//!
//! # The rooms
//!
//! Each room owns its state and imports only from the rooms above it in
//! this list; the shell holds them all and is the only one that sends,
//! proposes to Raft or hands events to the node.
//!
//! - `wire`: entries, frames, relays, pieces, notices. Values only.
//! - `state`: [`GroupState`], the log applied: seqnos, views, member states, votes.
//! - `order`: `Order`, this member's writesets until ordered, fences,
//!   big writesets joined, answers and appends that need not go, round trips.
//! - `membership`: `Members`, joining, leaving, phase, removals,
//!   recovery of a restarted component, the leader's placement, the arbitrator's hold.
//! - `primary`: `Primary`, who spoke lately, the quorum and
//!   weight rules, cut off, stood still.
//! - `flow`: `Flow`, STOP/CONT, the writers' gate, cluster lag, load.
//! - `shell`: the `Driver` (Raft node, incarnation, links, clock) and, per room,
//!   what it decides done (`shell/order.rs`, `membership.rs`, `primary.rs`,
//!   `weighted.rs`); frames in `net.rs`, committed entries in `apply.rs`.
//!
//! What flows between them:
//!
//! - A local commit: `Group::propose` → `Command::Propose` → `Order` keeps it
//!   and cuts it into `wire` pieces → Raft → `Order::outgoing` trims what goes →
//!   committed → `GroupState::apply` gives it its seqno → `Order` hands back the
//!   client's token → `Delivery`.
//! - A remote writeset: a frame → `shell/net` → Raft → its pieces stored into
//!   one buffer (`order::defrag`) → committed → `GroupState::apply` →
//!   `Order::join_assembled` → `Delivery`.
//! - A view change: `Members`/`Primary` decide a join, leave or eviction →
//!   the shell proposes the conf change → applied: Raft's configuration and
//!   `GroupState::apply_membership` (the view) → `Flow`, `Primary`, `Order`
//!   forget the members gone → `Delivery`.
//! - A restart: `gvwstate.dat` gives `membership::recovery::Previous` → the
//!   joiner tells the survivors → once the whole last view is back its most
//!   advanced member forms it again (`shell/membership.rs`, a new `Incarnation`).

mod flow;
mod membership;
mod order;
mod primary;
mod shell;
pub mod state;
mod wire;

// Each module at the path the rest of the crate knows it by.
pub use flow::{cluster_lag, flow_control};
pub(crate) use flow::gate::FlowGate;
pub use flow::gate::FlowStats;
pub use membership::{placement, recovery};
pub use order::{round_trips, sequence};
pub use primary::{cut_off, liveness, quorum, weights};
pub use primary::standstill::STOOD_STILL;
pub use shell::{io, ready, snapshot_watch, step};
pub(crate) use shell::commands;
pub use state::vote;
pub use wire::{entry, pieces, relay};
pub(crate) use wire::frame;

use std::sync::atomic::{AtomicU8, Ordering as AtomicOrdering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use shell::driver::Delivery;
/// The Raft settings every member starts from (the simulator pins the
/// election timeout in them), and the snapshot's two parts.
pub use shell::config::{campaigns_last, raft_config, send_window, split_snapshot};
pub use shell::log::GroupLog;
pub use entry::{IstRequest, MemberInfo, Transition};
pub use state::{DonorError, GroupEvent, GroupState, MemberState, View};

pub(crate) use shell::commands::Command;
pub(crate) use shell::config::{DriverConfig, Limits, Retention, Start};
pub(crate) use shell::driver::{Counters, Driver};
pub use flow_control::Signal;
use entry::Entry;

use crate::gtid::{Seqno, Uuid};
use crate::transport::{Allow, Identity, Transport, TransportConfig, TransportStats};

#[derive(Debug, PartialEq, Eq)]
pub enum GroupError {
    /// The group thread has stopped (disconnect) or never started.
    Closed,
    /// Raft refused the configuration.
    Raft(String),
    Io(String),
}

impl std::fmt::Display for GroupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupError::Closed => write!(f, "group communication is closed"),
            GroupError::Raft(e) => write!(f, "raft: {}", e),
            GroupError::Io(e) => write!(f, "{}", e),
        }
    }
}

/// Raft's clock tick on a real member (a data node or the arbitrator).
/// Heartbeats go every 2 ticks, elections start after 10-20 ticks without
/// a leader.
pub const TICK: Duration = Duration::from_millis(50);

/// How this member enters the group.
pub enum Mode {
    /// Start a new primary component continuing `history` after
    /// `position` (`gcomm://` or `--wsrep-new-cluster`).
    Bootstrap { history: Uuid, position: Seqno },
    /// Join the component reachable at these addresses (`host:port`).
    Join { peers: Vec<String> },
}

pub struct GroupConfig {
    /// Id, name and incoming address; `address` is what peers connect to
    /// (empty: the bound listen address).
    pub me: MemberInfo,
    pub mode: Mode,
    /// Where the group transport listens (`gmcast.listen_addr`).
    pub listen: String,
    /// `gmcast.segment` (see `relay`).
    pub segment: u8,
    /// `lockstep.segment_compression` (see `transport::deflate`).
    pub compress_segments: bool,
    /// `wsrep_cluster_name`: peers of other clusters are refused.
    pub cluster_name: String,
    /// The server's allowlist.
    pub allow: Allow,
    /// MariaDB's node-isolation flag (set from its signal handler).
    pub isolation: Option<&'static AtomicU8>,
    /// Raft's clock: heartbeats every 2 ticks, elections after 10-20.
    pub tick: Duration,
    /// When a silent member is removed.
    pub timeouts: liveness::Timeouts,
    /// What this node knew of its last primary component before it was
    /// killed (`gvwstate.dat`): told to the group when joining, so that
    /// survivors know the old member is gone, and restarted members find
    /// each other (see `recovery`).
    pub previous: Option<recovery::Previous>,
    /// TLS for the group's connections (socket.ssl); None: plain TCP.
    pub tls: Option<Arc<crate::transport::tls::Tls>>,
}

/// The handle the node holds; the Raft node runs on its own thread.
pub struct Group {
    me: MemberInfo,
    commands: Arc<commands::Commands>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    counters: Arc<Counters>,
    net: Arc<Transport>,
    flow: Arc<FlowGate>,
}

impl Group {
    pub fn start(cfg: GroupConfig, delivery: Box<dyn Delivery>) -> Result<Group, GroupError> {
        let (commands, inbox) = commands::queue();
        let runner_slot = Arc::new(std::sync::OnceLock::new());
        let net = start_transport(&cfg, shell::runner::NetInbox { commands: commands.clone(), runner: runner_slot.clone() })?;
        let mut me = cfg.me;
        if me.address.is_empty() || me.address.ends_with(":0") {
            me.address = net.local_addr().to_string();
        }
        let counters = Arc::new(Counters::default());
        let start = match cfg.mode {
            Mode::Bootstrap { history, position } => Start::Bootstrap { history, position },
            Mode::Join { peers } => Start::Join { peers },
        };
        let raft = match me.arbitrator {
            true => shell::config::campaigns_last(raft_config(me.id.raft_id())),
            false => raft_config(me.id.raft_id()),
        };
        let driver_cfg = DriverConfig { me: me.clone(), start, tick: cfg.tick, timeouts: cfg.timeouts, previous: cfg.previous, raft, limits: Limits::default() };
        let flow = Arc::new(FlowGate::default());
        flow.reset(Instant::now());
        let driver = Driver::new(driver_cfg, inbox, delivery, net.clone(), Arc::new(shell::io::SystemClock::new()), counters.clone(), flow.clone()).map_err(|e| GroupError::Raft(e.to_string()))?;
        let runner = shell::runner::Runner::new(driver, commands.clone());
        let _ = runner_slot.set(Arc::downgrade(&runner));
        let raft = spawn("lockstep-group", move || runner.run())?;
        Ok(Group { me, commands, threads: Mutex::new(vec![raft]), counters, net, flow })
    }

    pub fn me(&self) -> &MemberInfo {
        &self.me
    }

    /// Waits while the driver's queue is full (see `commands`).
    fn command(&self, cmd: Command) -> Result<(), GroupError> {
        self.commands.send(cmd).map_err(|_| GroupError::Closed)
    }

    /// Proposes an ordered payload, of any size (a large one goes in
    /// pieces: see `pieces`). Its delivery comes back through the
    /// `Delivery` as `Ordered` with this `token`, or `ProposalFailed`.
    /// Bounded by the callers: each client thread has at most one proposal
    /// in flight, and waits for it.
    pub fn propose(&self, token: u64, body: bytes::Bytes) -> Result<(), GroupError> {
        if token != 0 {
            self.counters.send_queue.fetch_add(1, AtomicOrdering::Relaxed);
        }
        self.command(Command::Propose { token, body }).inspect_err(|_| {
            if token != 0 {
                self.counters.sent_one_less();
            }
        })
    }

    /// Orders a change of this member's state (desync, join, sync).
    pub fn member_state(&self, transition: Transition, seqno: Seqno) -> Result<(), GroupError> {
        let data = Entry::MemberState { member: self.me.id, transition, seqno }.encode();
        self.command(Command::Send(data))
    }

    /// Casts this member's consistency vote on `seqno` (see `vote`).
    pub fn vote(&self, seqno: Seqno, code: u64, policy: u8, message: &str) -> Result<(), GroupError> {
        let entry = Entry::Vote { member: self.me.id, seqno, code, policy, message: message.into() };
        self.command(Command::Send(entry.encode()))
    }

    /// Asks the group for a state transfer to this member (the server's
    /// SST request, the donors it prefers, the position it already has and
    /// where it receives IST).
    pub fn state_request(&self, donors: &str, ist: IstRequest, request: &[u8]) -> Result<(), GroupError> {
        let entry = Entry::StateRequest { joiner: self.me.id, donors: donors.into(), ist, request: bytes::Bytes::copy_from_slice(request) };
        self.command(Command::Send(entry.encode()))
    }

    /// The client waiting for `token` gives up (KILL): its writeset is
    /// withdrawn if it can still be (not wholly sent), and the client then
    /// hears `ProposalFailed`; otherwise it is ordered as usual.
    pub fn cancel(&self, token: u64) {
        let _ = self.command(Command::Cancel(token));
    }

    /// The last seqno ordered before now, confirmed with a quorum (Raft
    /// ReadIndex): what a causal read waits for. None on timeout.
    /// Raft drops a read asked while no leader is known (an election, a
    /// reformed component) without a word, so it is asked again every
    /// READ_RETRY until the deadline.
    pub fn read_index(&self, deadline: Instant) -> Option<Seqno> {
        const READ_RETRY: Duration = Duration::from_secs(1);
        loop {
            let (tx, rx) = channel();
            self.command(Command::ReadIndex(tx)).ok()?;
            let wait = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait.min(READ_RETRY)) {
                Ok(seqno) => return Some(seqno),
                Err(_) if wait <= READ_RETRY => return None,
                Err(RecvTimeoutError::Timeout) => {}
                // Forgotten by the driver (a reform): pace the retry.
                Err(RecvTimeoutError::Disconnected) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Leaves the group gracefully: returns once the others have removed
    /// this member (or after a bounded wait).
    pub fn leave(&self) {
        let (tx, rx) = channel();
        if self.command(Command::Leave(tx)).is_ok() {
            let _ = rx.recv_timeout(Duration::from_secs(10));
        }
    }

    /// `gmcast.isolate`: cuts this member off the network (tests), or not.
    pub fn isolate(&self, on: bool) {
        let _ = self.command(Command::Isolate(on));
    }

    /// The TLS in use on the group's connections, for IST's.
    pub fn tls(&self) -> Option<Arc<crate::transport::tls::Tls>> {
        self.net.tls()
    }

    /// `socket.ssl_reload`: new connections use the files as they are now.
    pub fn reload_tls(&self) -> Result<(), String> {
        self.net.reload_tls()
    }

    /// `pc.bootstrap=YES`: a non-primary member forms a primary component
    /// of its own.
    pub fn reform(&self) {
        let _ = self.command(Command::Reform);
    }

    /// `pc.ignore_sb` / `pc.ignore_quorum` / `pc.weight` changed at runtime.
    pub fn set_policy(&self, p: quorum::Policy) {
        let _ = self.command(Command::Policy(p));
    }

    /// `evs.send_window` set, at start or at runtime (see
    /// [`send_window`]).
    pub fn set_send_window(&self, evs_send_window: usize) {
        let _ = self.command(Command::SendWindow(evs_send_window));
    }

    /// `evs.suspect_timeout` / `evs.inactive_timeout` changed at runtime.
    pub fn set_timeouts(&self, t: liveness::Timeouts) {
        let _ = self.command(Command::Timeouts(t));
    }

    /// This member's backlog crossed a flow-control limit.
    pub fn flow(&self, signal: Signal) {
        let _ = self.command(Command::Flow(signal));
    }

    /// Waits while flow control pauses replication, or until `interrupted`
    /// is set (a brute-force abort of the waiting transaction; whoever sets
    /// it calls `wake_flow_waiters`).
    pub fn wait_flow(&self, interrupted: &std::sync::atomic::AtomicBool) {
        self.flow.wait(&self.counters.stopped, interrupted);
    }

    pub fn wake_flow_waiters(&self) {
        self.flow.wake();
    }

    /// `wsrep_cluster_apply_lag_ms`: the largest apply lag the members
    /// reported in the last seconds.
    pub fn cluster_apply_lag_ms(&self) -> u32 {
        self.flow.worst_lag_ms()
    }

    pub fn flow_stats(&self) -> FlowStats {
        self.flow.stats(Instant::now())
    }

    /// FLUSH STATUS: restarts the paused-fraction window and the counters.
    pub fn reset_flow_stats(&self) {
        self.flow.reset(Instant::now());
        let _ = self.command(Command::ResetFlowCounters);
    }

    pub fn send_queue(&self) -> u64 {
        self.counters.send_queue.load(AtomicOrdering::Relaxed)
    }

    /// `wsrep_cluster_weight`: the sum of `pc.weight` over the primary
    /// component (0 outside one).
    pub fn cluster_weight(&self) -> u64 {
        self.counters.cluster_weight.load(AtomicOrdering::Relaxed)
    }

    /// Waits until the group has ordered `weight` as this member's (true),
    /// or `timeout` passed.
    pub fn wait_weight(&self, weight: u32, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.counters.own_weight.load(AtomicOrdering::Relaxed) != u64::from(weight) {
            if Instant::now() >= deadline || self.counters.stopped.load(AtomicOrdering::SeqCst) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// The leader's raft id as this member knows it (0: none known), as of
    /// the last tick.
    pub fn leader(&self) -> u64 {
        self.counters.leader.load(AtomicOrdering::Relaxed)
    }

    /// Causal reads this member answered from its leader's last index,
    /// without Raft's heartbeat round (see `shell::reads`).
    pub fn reads_answered_by_leader(&self) -> u64 {
        self.counters.reads_by_leader.load(AtomicOrdering::Relaxed)
    }

    /// Its followers' answer times while it leads (see `round_trips`).
    pub fn round_trip_metrics(&self) -> round_trips::Shown {
        self.counters.round_trips.clone()
    }

    pub fn transport_stats(&self) -> TransportStats {
        self.net.stats()
    }

    /// Stops the group thread (and the transport) and waits for them.
    /// Idempotent.
    pub fn stop(&self) {
        let _ = self.command(Command::Stop);
        let threads: Vec<_> = self.threads.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
        self.net.stop();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop();
    }
}

fn start_transport(cfg: &GroupConfig, inbox: shell::runner::NetInbox) -> Result<Arc<Transport>, GroupError> {
    let identity = Identity { id: cfg.me.id.raft_id(), uuid: cfg.me.id, listen: cfg.me.address.clone(), segment: cfg.segment };
    let mut tc = TransportConfig::new(&cfg.listen, &cfg.cluster_name, identity);
    tc.allow = cfg.allow.clone();
    tc.isolation = cfg.isolation;
    tc.tls = cfg.tls.clone();
    tc.compress_segments = cfg.compress_segments;
    let net = Transport::start(tc, inbox).map_err(|e| GroupError::Io(format!("cannot listen on {}: {}", cfg.listen, e)))?;
    Ok(Arc::new(net))
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, GroupError> {
    std::thread::Builder::new().name(name.into()).spawn(f).map_err(|e| GroupError::Io(format!("cannot start {}: {}", name, e)))
}

#[cfg(test)]
mod tests;
