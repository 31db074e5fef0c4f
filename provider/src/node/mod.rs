//! The replicator: one node's side of the wsrep API.
//!
//! Threads that meet here:
//! * client threads: `append_*`, `certify`, commit order, `release`, TOI,
//!   `sync_wait` ([`local`], [`toi`], [`causal`]);
//! * the group thread: delivers ordered events; certification runs there,
//!   in total order ([`delivery`]);
//! * the server's applier threads inside `recv`: apply remote writesets,
//!   deliver views and the other callbacks ([`applier`]).
//!
//! Every ordered seqno passes the apply and commit monitors exactly once,
//! whoever handles it; that is what keeps `wsrep_last_committed` gap-free.

mod applier;
mod capacity;
mod causal;
mod connection;
mod delivery;
mod fc_grace;
mod lag;
mod log_sync;
mod stall;
mod local;
mod pause;
pub mod recv_queue;
mod repl_latency;
mod replay;
pub mod saved_state;
mod view_state;
mod ist;
mod settings;
mod sst;
pub mod state;
mod stats;
mod toi;
mod trx;
mod vote;
pub mod wsrep_recover;
pub mod types;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

pub use settings::Settings;
pub use stats::{ClusterStatus, StatValue};
pub use types::{Application, Handle, KeyParts, Meta, Opaque, RecvCtx, Status, Stid, CONN_NONE, TRX_NONE};

use crate::cert::Certification;
use crate::group::{Group, MemberInfo, MemberState, View};
use crate::gtid::{Gtid, Seqno, Uuid, SEQNO_UNDEFINED};
use crate::monitor::Monitor;
use applier::Item;
use delivery::Pending;
use pause::Gate;
use saved_state::SavedState;
use state::NodeState;
use stats::Counters;
use trx::TrxTable;

/// What the server passes to `init`, already copied out of C memory.
pub struct InitArgs {
    pub node_name: String,
    pub node_address: String,
    pub node_incoming: String,
    pub data_dir: PathBuf,
    /// The server's recovered position (`wsrep_start_position`), if any.
    pub state_id: Gtid,
    pub settings: Settings,
    /// The server's allowlist, for peers that connect to the group port.
    pub allow: crate::transport::Allow,
    /// MariaDB's node-isolation flag (its fatal-signal handler sets it).
    pub isolation: Option<&'static std::sync::atomic::AtomicU8>,
}

/// The node's view of itself, changed by the group thread and read by
/// everyone; guarded by `Shared::status`.
struct NodeStatus {
    state: NodeState,
    /// History UUID of the current (or last) primary component.
    history: Uuid,
    /// The group's record of this member while in a primary component.
    member: Option<MemberState>,
    desync_count: u32,
    /// Bumped on every change of `member`/`desync_count`: desync/resync
    /// wait for their own transition to be ordered.
    member_epoch: u64,
    view: Option<View>,
    /// `connected_cb` goes once per connection, before the first view.
    connected_sent: bool,
    /// The applier that delivered the final view has finished.
    closed: bool,
    /// This connection bootstrapped its component (else it joins one and
    /// needs a state transfer).
    bootstrapping: bool,
    /// The group went on without this node, which is joining it again:
    /// its next view is a joiner's (state transfer, no connected_cb).
    rejoining: bool,
    /// The join in flight: the view it enters with (see `sst::Join`).
    join: Option<sst::Join>,
    /// `wsrep_sst_donor`, as given to connect.
    donors: String,
    sst: sst::Sst,
    /// Joiner of each donor's state transfer under way (for the log line
    /// when a donor reports that its transfer failed). One per donor.
    transfers: std::collections::HashMap<Uuid, Uuid>,
    /// Members of the last primary view (safe_to_bootstrap at close).
    last_primary_members: usize,
}

/// The replicator's state, shared by client threads, the group thread and
/// the appliers. `Node` derefs to it: the API methods live in the files
/// named after their paths (local, toi, causal, pause, connection).
pub struct Shared {
    app: Box<dyn Application>,
    allow: crate::transport::Allow,
    isolation: Option<&'static std::sync::atomic::AtomicU8>,
    /// This node as group members see it. Its id is new at every connect
    /// (Galera's gcomm UUID alike; the server forgets the old one at the
    /// final view), so a node that reconnects is never mistaken for its
    /// previous self in the log.
    me: RwLock<MemberInfo>,
    settings: RwLock<Settings>,
    saved: Mutex<SavedState>,
    group: RwLock<Option<Arc<Group>>>,
    cert: Mutex<Certification>,
    /// Delivery order of queued items (Galera's local monitor).
    local: Monitor,
    apply: Monitor,
    commit: Monitor,
    queue: recv_queue::RecvQueue<Item>,
    trxs: TrxTable,
    /// Connection id -> seqno of its TOI in progress.
    toi: Mutex<HashMap<u64, Seqno>>,
    /// Local proposals waiting for their delivery, by token.
    pending: Mutex<HashMap<u64, Arc<Pending>>>,
    /// Outcomes of this delivery batch waiting for the gcache to be on
    /// disk (`lockstep.log_sync=batch`), and the thread that syncs it.
    unsynced: Mutex<Vec<(Arc<Pending>, delivery::Outcome)>>,
    syncer: log_sync::Syncer,
    next_token: AtomicU64,
    status: Mutex<NodeStatus>,
    status_cv: Condvar,
    gate: Gate,
    counters: Counters,
    /// How fast the appliers could go (`wsrep_apply_capacity`).
    capacity: capacity::Capacity,
    /// How long our writesets take to be ordered (`wsrep_evs_repl_latency`).
    repl_latency: repl_latency::ReplLatency,
    /// How stale this node is (`wsrep_apply_lag_ms`).
    lag: lag::Lag,
    /// The pace this node commits at while it has a backlog (the bound's
    /// drain time).
    pace: lag::ApplyPace,
    /// `lockstep.max_lag_ms` (0: off), read by every `check_flow`.
    max_lag_ms: AtomicU64,
    receivers: AtomicUsize,
    /// Highest seqno the group delivered (pause point, causal reads).
    last_ordered: AtomicI64,
    /// Seqnos up to this one are in the state a transfer installed: the
    /// appliers skip them.
    skip_upto: AtomicI64,
    /// The first seqno this node failed to apply (SEQNO_UNDEFINED: none).
    /// Its data may differ from the cluster's from there on: it stops
    /// applying and leaves (see `applier::inconsistent`).
    apply_failed: AtomicI64,
    /// This node's consistency votes (see `vote`).
    ballots: vote::Ballots,
    /// Joined, waiting for the backlog to drain before syncing.
    awaiting_sync: std::sync::atomic::AtomicBool,
    /// This connection has seen a view it is a member of: before that,
    /// ordered writesets belong to the state a joiner receives.
    in_view: std::sync::atomic::AtomicBool,
    /// This node asked the group to stop (flow control). A lock, not an
    /// atomic: the decision and the signal it sends must be one step, or
    /// a pusher's STOP could reach the group after a popper's later CONT
    /// and hold every member paused with nothing left to lift it.
    fc_requested: Mutex<bool>,
    /// Writesets of at least `BIG_WRITESET` bytes in apply_cb now (see
    /// `limits_after_big_apply`).
    big_applying: AtomicUsize,
    /// Writesets that may rightly hold the appliers for long (a DDL, a
    /// big writeset) in apply now, local TOI aside: the stall watch
    /// excuses them.
    long_applying: AtomicUsize,
    /// Hung appliers (`stall`): the watch, and whether it found them
    /// stalled (then this node does not count for flow control).
    stall: Mutex<stall::StallWatch>,
    apply_stalled: std::sync::atomic::AtomicBool,
    /// `lockstep.debug_hang_appliers`.
    hang_appliers: std::sync::atomic::AtomicBool,
    /// After a big writeset applied: the lowest the receive queue has
    /// been since, while flow control's limits ride on it (0: they do
    /// not; see `fc_grace`).
    fc_grace_low: AtomicUsize,
    /// Flow-control limits (lower << 32 | upper), refreshed on views and
    /// option changes.
    fc_cached_limits: AtomicU64,
    /// The latest ordered seqnos, to serve joiners by IST.
    gcache: Mutex<crate::gcache::Gcache>,
    /// What the gcache held beyond the data's position at start (see
    /// `replay`), until the node forms a component or joins one.
    tail: Mutex<Option<replay::Tail>>,
    /// Seqnos crash recovery left out below the data's position (see
    /// `wsrep_recover`), until they are applied.
    holes: Mutex<Option<wsrep_recover::Holes>>,
    /// An incremental transfer this node receives as a joiner.
    ist: Arc<crate::transfer::inbox::Incoming>,
    /// A full SST this node donates, until its script reports the state.
    after_sst: Mutex<Option<ist::AfterSst>>,
    /// What the data held when this connection began (where a joiner's
    /// IST starts), then the state installed: whether a causal read on a
    /// joiner has a history to wait in.
    joined_from: Mutex<Gtid>,
    /// This node left as inconsistent (a lost vote, an entry it cannot
    /// read): its data is no prefix of the cluster's, so its next join
    /// needs a full state transfer, not IST from where it stopped. Set
    /// until a state is installed.
    inconsistent: AtomicBool,
    /// How many times the group went on without this node (it rejoined):
    /// a streaming transaction begun before is orphaned (see
    /// `local::orphaned`).
    rejoins: AtomicU64,
    /// On a rejoin from a view this node was in: the last seqno it had
    /// handed to its appliers, which must commit before the IST installs
    /// what follows. Undefined on a fresh connection (its appliers hold
    /// nothing, and its monitors start wherever the log replay put them).
    drain_to: AtomicI64,
}

/// A writeset this large is big: its client's log line says when it was
/// ordered, and while it applies, flow control waits for it (see
/// `fc_grace`).
pub(crate) const BIG_WRITESET: usize = 16 << 20;

/// The provider instance behind one `wsrep_t`.
pub struct Node {
    shared: Arc<Shared>,
}

/// Capabilities we offer (Galera offers more: NBO, PREORDERED, UNORDERED;
/// we advertise only what we implement, as the contract asks).
pub const CAPABILITIES: u32 = (1 << 0) // MULTI_MASTER
    | (1 << 1) // CERTIFICATION
    | (1 << 2) // PARALLEL_APPLYING
    | (1 << 3) // TRX_REPLAY
    | (1 << 4) // ISOLATION
    | (1 << 5) // PAUSE
    | (1 << 6) // CAUSAL_READS
    | (1 << 8) // INCREMENTAL_WRITESET
    | (1 << 15); // STREAMING

/// How long `SET GLOBAL wsrep_provider_options='pc.weight=N'` waits for
/// the group to order the new weight.
const WEIGHT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Node {
    pub fn new(args: InitArgs, app: Box<dyn Application>) -> Node {
        let mut saved = SavedState::open(&args.data_dir);
        let (position, recovered) = start_position(&mut saved, args.state_id);
        let holes = recovered.filter(|r| !r.missing.is_empty()).map(|r| wsrep_recover::Holes::new(saved.dir(), r));
        if holes.is_none() {
            wsrep_recover::forget(saved.dir());
        }
        let me = MemberInfo {
            id: Uuid::time_ordered(),
            name: args.node_name,
            incoming: args.node_incoming,
            address: args.settings.group_address.clone(),
            arbitrator: false,
            stateless: args.settings.stateless,
        };
        crate::log::info!("Node {} starts at {}:{}", me.name, position.uuid, position.seqno);
        let (gcache, tail) = open_gcache(&args.settings, &args.data_dir, position);
        let shared = Shared {
            app,
            allow: args.allow,
            isolation: args.isolation,
            me: RwLock::new(me),
            settings: RwLock::new(args.settings),
            saved: Mutex::new(saved),
            group: RwLock::new(None),
            cert: Mutex::new(Certification::new(position.seqno)),
            local: Monitor::new(0),
            apply: Monitor::new(position.seqno),
            commit: Monitor::new(position.seqno),
            queue: recv_queue::RecvQueue::new(),
            trxs: TrxTable::default(),
            toi: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            unsynced: Mutex::new(Vec::new()),
            syncer: log_sync::Syncer::new(),
            next_token: AtomicU64::new(1),
            status: Mutex::new(NodeStatus {
                state: NodeState::Closed,
                history: position.uuid,
                member: None,
                desync_count: 0,
                member_epoch: 0,
                view: None,
                connected_sent: false,
                closed: true,
                bootstrapping: false,
                rejoining: false,
                join: None,
                donors: String::new(),
                sst: sst::Sst::None,
                transfers: Default::default(),
                last_primary_members: 0,
            }),
            status_cv: Condvar::new(),
            gate: Gate::default(),
            counters: Counters::default(),
            capacity: capacity::Capacity::default(),
            repl_latency: Default::default(),
            lag: lag::Lag::default(),
            pace: lag::ApplyPace::default(),
            max_lag_ms: AtomicU64::new(0),
            receivers: AtomicUsize::new(0),
            last_ordered: AtomicI64::new(position.seqno),
            skip_upto: AtomicI64::new(SEQNO_UNDEFINED),
            apply_failed: AtomicI64::new(SEQNO_UNDEFINED),
            ballots: Default::default(),
            awaiting_sync: Default::default(),
            in_view: Default::default(),
            fc_requested: Default::default(),
            big_applying: AtomicUsize::new(0),
            long_applying: AtomicUsize::new(0),
            stall: Default::default(),
            apply_stalled: Default::default(),
            hang_appliers: Default::default(),
            fc_grace_low: AtomicUsize::new(0),
            fc_cached_limits: AtomicU64::new((16 << 32) | 16),
            gcache: Mutex::new(gcache),
            tail: Mutex::new(tail),
            holes: Mutex::new(holes),
            ist: Default::default(),
            after_sst: Mutex::new(None),
            joined_from: Mutex::new(Gtid::UNDEFINED),
            inconsistent: AtomicBool::new(false),
            rejoins: AtomicU64::new(0),
            drain_to: AtomicI64::new(SEQNO_UNDEFINED),
        };
        Node { shared: Arc::new(shared) }
    }

    pub fn member_id(&self) -> Uuid {
        self.shared.my_id()
    }

    pub fn connect(&self, cluster_name: &str, address: &lockstep_config::ClusterAddress, donor: &str, bootstrap: bool) -> Status {
        self.shared.connect(cluster_name, address, donor, bootstrap)
    }

    /// An applier thread's loop: returns when the provider closes or the
    /// server asks this thread to exit.
    pub fn recv(&self, ctx: RecvCtx) -> Status {
        self.shared.recv(ctx)
    }

    pub fn settings(&self) -> Settings {
        self.shared.settings()
    }

    pub fn set_settings(&self, s: Settings) {
        self.shared.apply_settings(s);
    }

    /// `pc.bootstrap=YES`: a non-primary node forms a primary component of
    /// its own (the operator vouches that no other one exists).
    pub fn bootstrap_component(&self) {
        match self.shared.group() {
            Some(g) => g.reform(),
            None => crate::log::warning!("pc.bootstrap ignored: not connected"),
        }
    }

    /// `gmcast.isolate`: 1 cuts this node off the group's network, 0 lets
    /// it back.
    pub fn isolate(&self, on: bool) {
        if let Some(g) = self.shared.group() {
            g.isolate(on);
        }
    }

    /// `socket.ssl_reload=1` (and the server's FLUSH SSL): an error is
    /// logged and the loaded key and certificates stay.
    pub fn reload_tls(&self) {
        let result = match self.shared.group() {
            Some(g) => g.reload_tls(),
            None => Err("socket.ssl_reload: the node is not connected".into()),
        };
        if let Err(e) = result {
            crate::log::error!("{}", e);
        }
    }
}

impl std::ops::Deref for Node {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// The position to start from: grastate.dat, or the server's recovered
/// position when grastate says the last run did not close cleanly (Galera's
/// rule: only for the same history, and only when grastate has no seqno).
///
/// When neither knows it (a crash, and a server started without
/// galera_recovery), InnoDB is asked here (see `wsrep_recover`): a
/// position of -1 with a history means "ask InnoDB", never "no data".
/// After a crash, what the recovery found missing below the position
/// comes too: the node starts before the first hole.
fn start_position(saved: &mut SavedState, state_id: Gtid) -> (Gtid, Option<wsrep_recover::Recovered>) {
    let p = saved.get();
    let crashed = !p.uuid.is_nil() && p.seqno == SEQNO_UNDEFINED;
    if !crashed {
        wsrep_recover::forget(saved.dir());
        let seqno = if p.seqno < 0 { SEQNO_UNDEFINED } else { p.seqno };
        return (Gtid::new(p.uuid, seqno), None);
    }
    let recovered = match state_id.uuid == p.uuid && state_id.seqno >= 0 {
        true => Some(recovered_before_start(saved.dir(), state_id)),
        false => wsrep_recover::ask_innodb(saved.dir()),
    };
    match recovered.filter(|r| r.position.uuid == p.uuid) {
        Some(r) => (Gtid::new(p.uuid, r.contiguous()), Some(r)),
        None => (Gtid::new(p.uuid, SEQNO_UNDEFINED), None),
    }
}

/// The server was given its position (`--wsrep_start_position`, from
/// galera_recovery): what a recovery run before it recorded, when that
/// one found this position; else holes recorded by an earlier crash that
/// are still missing. A recovery the provider did not see may have left
/// more, which it cannot find (noted).
fn recovered_before_start(dir: &std::path::Path, given: Gtid) -> wsrep_recover::Recovered {
    let recorded = wsrep_recover::recorded(dir).filter(|r| r.position.uuid == given.uuid && r.position.seqno <= given.seqno);
    match recorded {
        Some(r) if r.position == given => r,
        other => {
            crate::log::info!(
                "started at {} recovered without lockstep's recovery step (lockstep recover): seqnos InnoDB's crash recovery left out below it, if any, cannot be found (with the binary log on and innodb_flush_log_at_trx_commit=0 it can leave some)",
                given
            );
            let missing = other.map(|r| r.missing).unwrap_or_default();
            wsrep_recover::record(dir, wsrep_recover::Recovered { position: given, missing })
        }
    }
}

/// The gcache as the last run left it. What it holds beyond the data's
/// position, when it continues the data, is the node's tail (see
/// `replay`): ordered before the crash, and kept. A tail that does not
/// continue the data cannot be applied on it, and is discarded.
fn open_gcache(s: &Settings, data_dir: &std::path::Path, position: Gtid) -> (crate::gcache::Gcache, Option<replay::Tail>) {
    let anchor = (position.seqno >= 0).then_some(position.seqno);
    let mut gcache = crate::gcache::Gcache::open(&s.gcache_path(data_dir), s.gcache_size, s.gcache_recover, anchor);
    gcache.set_pages(s.gcache_page_size, s.gcache_keep_pages_size);
    if gcache.history() != position.uuid && gcache.last().is_some() {
        crate::log::info!("the gcache holds seqnos of history {}, this node's data is of history {}: discarding them", gcache.history(), position.uuid);
    }
    gcache.set_history(position.uuid);
    let tail = replay::Tail::of(&gcache, position);
    match tail {
        Some(t) => crate::log::info!("the gcache holds seqnos {}-{} beyond the data's position {}: ordered before the crash, this node's history reaches {}", t.after + 1, t.upto, position.seqno, t.upto),
        None => gcache.truncate_after(position.seqno),
    }
    (gcache, tail)
}

impl Shared {
    fn status(&self) -> MutexGuard<'_, NodeStatus> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// One setting read in place, for the paths every key and every commit
    /// takes: `settings()` clones them, strings and all.
    fn setting<T>(&self, f: impl FnOnce(&Settings) -> T) -> T {
        f(&self.settings.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn apply_settings(&self, s: Settings) {
        {
            let mut cert = self.cert.lock().unwrap_or_else(|e| e.into_inner());
            cert.set_optimistic_pa(s.optimistic_pa);
            cert.set_max_length(s.cert_max_length);
        }
        crate::log::set_debug(s.debug);
        self.gcache.lock().unwrap_or_else(|e| e.into_inner()).set_pages(s.gcache_page_size, s.gcache_keep_pages_size);
        if let Some(g) = self.group() {
            g.set_timeouts(s.timeouts);
            g.set_send_window(s.send_window);
            g.set_policy(s.quorum_policy);
            // Galera's SET of pc.weight returns once the group has the new
            // weight (mtr tests isolate a node right after it).
            let primary = self.status().view.as_ref().is_some_and(|v| v.primary);
            if primary && !g.wait_weight(s.quorum_policy.weight, WEIGHT_WAIT) {
                crate::log::info!("pc.weight {} not yet known to the group after {:?}; it will be", s.quorum_policy.weight, WEIGHT_WAIT);
            }
        }
        *self.settings.write().unwrap_or_else(|e| e.into_inner()) = s;
        self.refresh_fc_limits();
    }

    /// This connection's member id.
    fn my_id(&self) -> Uuid {
        self.me.read().unwrap_or_else(|e| e.into_inner()).id
    }

    fn group(&self) -> Option<Arc<Group>> {
        self.group.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn node_state(&self) -> NodeState {
        self.status().state
    }

    fn history(&self) -> Uuid {
        self.status().history
    }

    /// `last_committed_id`: the apply monitor's last left seqno.
    fn last_committed(&self) -> Gtid {
        Gtid::new(self.history(), self.apply.last_left())
    }
}

#[cfg(test)]
mod tests;
