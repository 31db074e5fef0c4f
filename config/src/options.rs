//! The registry of provider options: every key Galera 26.4.23 accepts, with
//! its default, type, runtime behaviour and rendering, in one table.
//!
//! The table is sorted by key (byte order), which is also the order of
//! `options_get` (Galera keeps its config in a `std::map`). The `Opt` enum
//! and the typed constants in [`keys`] are generated from the same rows, so
//! an option's index, name and type cannot drift apart.

use crate::value::IntSyntax;
use std::time::Duration;

/// How a value is read and checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Bool,
    /// Inclusive range.
    Int {
        syntax: IntSyntax,
        min: i64,
        max: i64,
    },
    /// `[min, max]`, or `[min, max)` when `max_open`.
    Double {
        min: f64,
        max: f64,
        max_open: bool,
    },
    /// ISO-8601 or seconds; not below `min`.
    Duration {
        min: Duration,
    },
    /// Free text.
    Str,
    /// One of the words, compared case-insensitively.
    Choice(&'static [&'static str]),
    /// `auto` or a non-negative size (socket buffers).
    BufSize,
    /// `[scheme://]host[:port]`.
    Addr,
    /// Empty or `policy:priority` (`other`, `fifo`, `rr`).
    ThreadPrio,
}

/// Where an option's value comes from before the user sets it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Default {
    /// A fixed default, shown by `options_get`.
    Shown(&'static str),
    /// Computed from the node (address, data dir) or from other options;
    /// shown when it can be computed.
    Derived,
    /// Not shown until set at startup (Galera's "hidden" keys: they have no
    /// default value in its config). The inner value, if any, is what the
    /// provider should assume when the key is not set.
    Hidden(Option<&'static str>),
}

/// What `SET GLOBAL wsrep_provider_options` does with the option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// Applied immediately.
    Dynamic,
    /// Accepted and shown, but only takes effect at the next start (Galera
    /// does this for `base_*` and `repl.proto_max`).
    Restart,
    /// Refused at runtime.
    Static,
    /// A command (e.g. `pc.bootstrap=yes`, `gmcast.isolate=1`): performed
    /// every time it is set, never stored or shown.
    Action,
}

/// How a value is written back in `options_get`. Galera stores what the
/// user typed unless the module that owns the option rewrites it in its
/// canonical form; when that happens depends on the module (observed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Render {
    /// Always as typed.
    Verbatim,
    /// Always canonical (gcomm keys: `evs.*`, most `pc.*`, `gmcast.*`).
    Canonical,
    /// Canonical when set at startup, as typed when set at runtime
    /// (`pc.ignore_sb`, `pc.ignore_quorum`).
    CanonicalAtInit,
    /// As typed at startup, canonical when set at runtime (GCS, gcache).
    CanonicalAtRuntime,
}

/// One row of the registry.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub default: Default,
    pub runtime: Runtime,
    pub render: Render,
    /// Galera warns that the option will be removed when it is set.
    pub deprecated: bool,
    /// lockstep implements the option's meaning. Options that are not
    /// effective are accepted and shown, and logged once when set.
    pub effective: bool,
    /// What the option means (one line).
    pub doc: &'static str,
}

impl OptionSpec {
    pub fn is_hidden(&self) -> bool {
        matches!(self.default, Default::Hidden(_))
    }

    /// Why lockstep accepts the option and does nothing with it (`None`
    /// for an effective one): what a Galera user must know instead of
    /// believing it works.
    pub fn ignored_because(&self) -> Option<&'static str> {
        if self.effective {
            return None;
        }
        Some(match self.name {
            "evs.user_send_window" => {
                "Raft's window counts appends only (no heartbeats, no votes): evs.send_window sets it"
            }
            "evs.auto_evict" | "evs.delay_margin" | "evs.delayed_keep_period" | "evs.evict" => {
                "no delayed list: a member that stops answering is removed after evs.suspect_timeout"
            }
            "gcache.mem_size" => "deprecated by Galera; the cache is the ring buffer file alone",
            "gcs.max_packet_size" => "lockstep cuts big write sets in pieces of its own (1 MiB Raft entries)",
            "gcs.recv_q_hard_limit" | "gcs.recv_q_soft_limit" => "the receive queue is bounded by flow control (gcs.fc_limit, lockstep.max_lag_ms)",
            "gcs.max_throttle" => "a state transfer does not throttle replication",
            "gcs.fc_debug" => "flow control shows in status variables, the metrics endpoint and lockstep top, not in the log",
            "gmcast.group" => "the group's name is wsrep_cluster_name",
            "gmcast.mcast_addr" | "gmcast.mcast_port" | "gmcast.mcast_ttl" => "no multicast: nodes talk over TCP",
            "gmcast.peer_addr" => "peers come from wsrep_cluster_address and the group's membership",
            "gmcast.mira" | "gmcast.peer_timeout" | "gmcast.time_wait" => "the transport reconnects to a peer on its own schedule",
            "pc.checksum" | "socket.checksum" => "every frame between nodes carries a CRC32-C, always",
            "pc.announce_timeout" | "pc.wait_prim" | "pc.wait_prim_timeout" | "pc.linger" => {
                "joining and leaving go through the Raft leader, with its own timeouts (evs.suspect_timeout)"
            }
            "pc.npvo" => "no conflicting primary views: Raft has one leader per term",
            "socket.recv_buf_size" | "socket.send_buf_size" | "socket.non_blocking" | "gcomm.thread_prio" => {
                "the kernel's defaults and the transport's own threads; not mapped"
            }
            "socket.ssl_compression" => "ignored by Galera too: TLS compression is unsafe",
            "cert.length_check" => "a tuning knob of Galera's certification index; lockstep's index has no such check",
            "ist.keep_keys" => "IST sends write sets as they were ordered, keys included",
            "repl.key_format" | "repl.proto_max" | "evs.version" | "gmcast.version" | "pc.version" | "protonet.backend" | "protonet.version" => {
                "a Galera protocol version or backend: lockstep has its own wire protocol"
            }
            n if n.starts_with("evs.") => {
                "a knob of EVS, Galera's membership protocol: lockstep's membership is Raft's, timed by evs.suspect_timeout and evs.inactive_timeout"
            }
            _ => "not implemented",
        })
    }
}

// Short constructors so that each row fits on a few lines.
const fn int(min: i64, max: i64) -> Kind {
    Kind::Int {
        syntax: IntSyntax::Galera,
        min,
        max,
    }
}
const fn dec(min: i64, max: i64) -> Kind {
    Kind::Int {
        syntax: IntSyntax::Decimal,
        min,
        max,
    }
}
const HEX: Kind = Kind::Int {
    syntax: IntSyntax::Hex,
    min: 0,
    max: i32::MAX as i64,
};
const fn dbl(min: f64, max: f64) -> Kind {
    Kind::Double {
        min,
        max,
        max_open: false,
    }
}
const fn dbl_open(min: f64, max: f64) -> Kind {
    Kind::Double {
        min,
        max,
        max_open: true,
    }
}
const fn dur_ms(min_ms: u64) -> Kind {
    Kind::Duration {
        min: Duration::from_millis(min_ms),
    }
}
const DUR: Kind = dur_ms(0);
const BOOL: Kind = Kind::Bool;
const STR: Kind = Kind::Str;
const MAX: i64 = i64::MAX;
const INT_MAX: i64 = i32::MAX as i64;
const KEY_FORMATS: &[&str] = &["FLAT8", "FLAT8A", "FLAT16", "FLAT16A"];

const fn shown(v: &'static str) -> Default {
    Default::Shown(v)
}
const HIDDEN: Default = Default::Hidden(None);
const fn hidden(v: &'static str) -> Default {
    Default::Hidden(Some(v))
}
const DERIVED: Default = Default::Derived;

macro_rules! registry {
    ($( $variant:ident $konst:ident $kty:ident = $name:literal,
        $kind:expr, $default:expr, $runtime:ident, $render:ident,
        $dep:literal, $eff:literal, $doc:literal; )*) => {
        /// Every option, in the order of [`TABLE`] (sorted by name).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opt { $($variant),* }

        impl Opt {
            pub const ALL: &'static [Opt] = &[$(Opt::$variant),*];
        }

        /// The registry, one row per option, sorted by name.
        pub static TABLE: &[OptionSpec] = &[$(OptionSpec {
            name: $name, kind: $kind, default: $default,
            runtime: Runtime::$runtime, render: Render::$render,
            deprecated: $dep, effective: $eff, doc: $doc,
        }),*];

        /// Typed handles for the provider: `cfg.get(keys::GCS_FC_LIMIT)`.
        /// Constants are the option name in upper case, `.` → `_`.
        pub mod keys {
            use super::Opt;
            use crate::typed::*;
            $( pub const $konst: $kty = $kty::new(Opt::$variant); )*

            /// (option, constant name, handle type) for the consistency tests.
            #[cfg(test)]
            pub(crate) const TYPES: &[(Opt, &str, &str)] =
                &[$((Opt::$variant, stringify!($konst), stringify!($kty))),*];
        }
    };
}

registry! {
    BaseDir BASE_DIR StrKey = "base_dir", STR, DERIVED, Restart, Verbatim, false, true,
        "Directory for the provider's files; the server's data dir by default";
    BaseHost BASE_HOST StrKey = "base_host", STR, DERIVED, Restart, Verbatim, false, true,
        "This node's address for group communication; host of wsrep_node_address";
    BasePort BASE_PORT IntKey = "base_port", dec(0, 65535), DERIVED, Restart, Verbatim, false, true,
        "Group communication port; from wsrep_node_address or gmcast.listen_addr, else 4567";
    CertLengthCheck CERT_LENGTH_CHECK IntKey = "cert.length_check", int(0, INT_MAX), hidden("127"),
        Static, Verbatim, false, false,
        "How many write sets between checks of the certification index length";
    CertLogConflicts CERT_LOG_CONFLICTS BoolKey = "cert.log_conflicts", BOOL, shown("no"),
        Dynamic, Verbatim, false, true, "Log details of every certification conflict";
    CertMaxLength CERT_MAX_LENGTH IntKey = "cert.max_length", int(0, INT_MAX), hidden("16384"),
        Static, Verbatim, false, true, "Certification index length that triggers purging";
    CertOptimisticPa CERT_OPTIMISTIC_PA BoolKey = "cert.optimistic_pa", BOOL, shown("yes"),
        Dynamic, Verbatim, false, true,
        "Let appliers start before dependencies commit (depends_on from the originator)";
    Debug DEBUG BoolKey = "debug", BOOL, shown("no"), Dynamic, Verbatim, false, true,
        "Debug logging of the provider";
    EvsAutoEvict EVS_AUTO_EVICT IntKey = "evs.auto_evict", dec(0, MAX), shown("0"),
        Dynamic, Canonical, false, false,
        "Delayed-list entries after which a node is evicted (0: never)";
    EvsCausalKeepalivePeriod EVS_CAUSAL_KEEPALIVE_PERIOD DurationKey =
        "evs.causal_keepalive_period", DUR, DERIVED, Dynamic, Canonical, false, false,
        "Keepalive period for causal messages; evs.keepalive_period by default";
    EvsDebugLogMask EVS_DEBUG_LOG_MASK IntKey = "evs.debug_log_mask", HEX, shown("0x1"),
        Dynamic, Canonical, false, false, "EVS debug log mask (hex)";
    EvsDelayMargin EVS_DELAY_MARGIN DurationKey = "evs.delay_margin", DUR, shown("PT1S"),
        Dynamic, Canonical, false, false,
        "Response time above which a peer is put on the delayed list";
    EvsDelayedKeepPeriod EVS_DELAYED_KEEP_PERIOD DurationKey = "evs.delayed_keep_period", DUR,
        shown("PT30S"), Dynamic, Canonical, false, false,
        "How long a peer stays on the delayed list after it recovers";
    EvsEvict EVS_EVICT StrKey = "evs.evict", STR, HIDDEN, Action, Verbatim, false, false,
        "Evict the node with this UUID (empty: clear the evict list)";
    EvsInactiveCheckPeriod EVS_INACTIVE_CHECK_PERIOD DurationKey = "evs.inactive_check_period",
        DUR, shown("PT0.5S"), Static, Canonical, false, false,
        "How often peers are checked for inactivity (at most evs.suspect_timeout/2)";
    EvsInactiveTimeout EVS_INACTIVE_TIMEOUT DurationKey = "evs.inactive_timeout", dur_ms(100),
        shown("PT15S"), Dynamic, Canonical, false, true,
        "Silence after which a peer is declared dead unconditionally";
    EvsInfoLogMask EVS_INFO_LOG_MASK IntKey = "evs.info_log_mask", HEX, shown("0"),
        Dynamic, Canonical, false, false, "EVS info log mask (hex)";
    EvsInstallTimeout EVS_INSTALL_TIMEOUT DurationKey = "evs.install_timeout", DUR, DERIVED,
        Dynamic, Canonical, false, false,
        "Time allowed to install a new view; evs.inactive_timeout/2 by default";
    EvsJoinRetransPeriod EVS_JOIN_RETRANS_PERIOD DurationKey = "evs.join_retrans_period",
        dur_ms(100), shown("PT1S"), Dynamic, Canonical, false, false,
        "Retransmission period of join messages during membership changes";
    EvsKeepalivePeriod EVS_KEEPALIVE_PERIOD DurationKey = "evs.keepalive_period", dur_ms(100),
        shown("PT1S"), Dynamic, Canonical, false, false,
        "Keepalive period when there is no traffic (at most evs.suspect_timeout/3)";
    EvsMaxInstallTimeouts EVS_MAX_INSTALL_TIMEOUTS IntKey = "evs.max_install_timeouts",
        dec(0, INT_MAX), shown("3"), Dynamic, Canonical, false, false,
        "View installation attempts before giving up on unresponsive members";
    EvsSendWindow EVS_SEND_WINDOW IntKey = "evs.send_window", dec(1, MAX), shown("4"),
        Dynamic, Canonical, false, true,
        "Messages in flight (lockstep: Raft appends in flight per follower, 256 to 4096, each a batch); >= evs.user_send_window";
    EvsStatsReportPeriod EVS_STATS_REPORT_PERIOD DurationKey = "evs.stats_report_period",
        dur_ms(1000), shown("PT1M"), Dynamic, Canonical, false, true,
        "Period over which wsrep_evs_repl_latency is gathered before it starts over";
    EvsSuspectTimeout EVS_SUSPECT_TIMEOUT DurationKey = "evs.suspect_timeout", dur_ms(100),
        shown("PT5S"), Dynamic, Canonical, false, true,
        "Silence after which a peer is suspected; evicted once a majority agrees";
    EvsUseAggregate EVS_USE_AGGREGATE BoolKey = "evs.use_aggregate", BOOL, shown("true"),
        Dynamic, Canonical, false, false, "Aggregate small messages into one";
    EvsUserSendWindow EVS_USER_SEND_WINDOW IntKey = "evs.user_send_window", dec(1, MAX),
        shown("2"), Dynamic, Canonical, false, false,
        "Data messages in flight; <= evs.send_window";
    EvsVersion EVS_VERSION IntKey = "evs.version", dec(0, 1), shown("1"), Dynamic, Canonical,
        false, false, "EVS protocol version";
    EvsViewForgetTimeout EVS_VIEW_FORGET_TIMEOUT DurationKey = "evs.view_forget_timeout",
        dur_ms(1000), shown("PT24H"), Static, Canonical, false, false,
        "How long past views are remembered";
    GcacheDir GCACHE_DIR StrKey = "gcache.dir", STR, DERIVED, Static, Verbatim, false, true,
        "Directory of the write-set cache; base_dir by default";
    GcacheKeepPagesSize GCACHE_KEEP_PAGES_SIZE IntKey = "gcache.keep_pages_size", int(0, MAX),
        shown("0"), Dynamic, CanonicalAtRuntime, false, true,
        "Total size of overflow pages kept for IST";
    GcacheMemSize GCACHE_MEM_SIZE IntKey = "gcache.mem_size", int(0, MAX), shown("0"),
        Dynamic, CanonicalAtRuntime, false, false, "Size of the in-memory cache (deprecated in Galera docs)";
    GcacheName GCACHE_NAME StrKey = "gcache.name", STR, shown("galera.cache"), Static, Verbatim,
        false, true, "File name of the ring buffer (relative to gcache.dir)";
    GcachePageSize GCACHE_PAGE_SIZE IntKey = "gcache.page_size", int(0, MAX), shown("128M"),
        Dynamic, CanonicalAtRuntime, false, true, "Size of overflow page files";
    GcacheRecover GCACHE_RECOVER BoolKey = "gcache.recover", BOOL, shown("yes"), Static,
        Verbatim, false, true, "Recover the write-set cache at startup so IST can serve from it";
    GcacheSize GCACHE_SIZE IntKey = "gcache.size", int(0, MAX), shown("128M"), Static,
        Verbatim, false, true, "Size of the write-set cache ring buffer (IST window)";
    GcommThreadPrio GCOMM_THREAD_PRIO StrKey = "gcomm.thread_prio", Kind::ThreadPrio, shown(""),
        Static, Verbatim, false, false, "Scheduling policy:priority of the group thread";
    GcsFcDebug GCS_FC_DEBUG IntKey = "gcs.fc_debug", int(0, MAX), shown("0"), Dynamic,
        Verbatim, false, false, "Log flow-control statistics every N events (0: off)";
    GcsFcFactor GCS_FC_FACTOR DoubleKey = "gcs.fc_factor", dbl(0.0, 1.0), shown("1.0"),
        Dynamic, CanonicalAtRuntime, false, true,
        "Resume replication when the receive queue drops below fc_factor * fc_limit";
    GcsFcLimit GCS_FC_LIMIT IntKey = "gcs.fc_limit", int(1, MAX), shown("16"), Dynamic,
        CanonicalAtRuntime, false, true,
        "Receive queue length at which the node asks the cluster to pause";
    GcsFcMasterSlave GCS_FC_MASTER_SLAVE BoolKey = "gcs.fc_master_slave", BOOL, shown("no"),
        Static, Verbatim, true, true, "Old name of gcs.fc_single_primary";
    GcsFcSinglePrimary GCS_FC_SINGLE_PRIMARY BoolKey = "gcs.fc_single_primary", BOOL,
        shown("no"), Static, Verbatim, false, true,
        "Flow-control limit does not grow with the cluster size (one writer)";
    GcsMaxPacketSize GCS_MAX_PACKET_SIZE IntKey = "gcs.max_packet_size", int(1, MAX),
        shown("64500"), Static, Verbatim, false, false,
        "Largest group message; bigger write sets are fragmented";
    GcsMaxThrottle GCS_MAX_THROTTLE DoubleKey = "gcs.max_throttle", dbl_open(0.0, 1.0),
        shown("0.25"), Dynamic, CanonicalAtRuntime, false, false,
        "Lowest fraction of normal replication rate while throttling for state transfer";
    GcsRecvQHardLimit GCS_RECV_Q_HARD_LIMIT IntKey = "gcs.recv_q_hard_limit", int(1, MAX),
        shown("9223372036854775807"), Dynamic, CanonicalAtRuntime, false, false,
        "Receive queue size (bytes) at which the node aborts";
    GcsRecvQSoftLimit GCS_RECV_Q_SOFT_LIMIT DoubleKey = "gcs.recv_q_soft_limit",
        dbl_open(0.0, 1.0), shown("0.25"), Dynamic, CanonicalAtRuntime, false, false,
        "Fraction of the hard limit at which replication is throttled";
    GcsStateless GCS_STATELESS BoolKey = "gcs.stateless", BOOL, hidden("no"), Static, Verbatim,
        false, true, "Node is never chosen as a state transfer donor";
    GcsSyncDonor GCS_SYNC_DONOR BoolKey = "gcs.sync_donor", BOOL, shown("no"), Dynamic,
        Verbatim, false, true, "A donor in state transfer still takes part in flow control";
    GcsVotePolicy GCS_VOTE_POLICY IntKey = "gcs.vote_policy", int(0, 255), hidden("0"), Static,
        Verbatim, false, true, "How apply-error votes are decided: 0 the most votes win, N > 0 N successes win";
    GmcastGroup GMCAST_GROUP StrKey = "gmcast.group", STR, HIDDEN, Static, Verbatim, false, false,
        "Group name (normally from wsrep_cluster_name)";
    GmcastIsolate GMCAST_ISOLATE IntKey = "gmcast.isolate", dec(0, 2), hidden("0"), Action,
        Verbatim, false, true,
        "Test knob: 1 cuts the node off the network, 0 reconnects, 2 makes it leave fatally";
    GmcastListenAddr GMCAST_LISTEN_ADDR StrKey = "gmcast.listen_addr", Kind::Addr, DERIVED,
        Static, Verbatim, false, true,
        "Listen address for group communication; tcp://0.0.0.0:<base_port> by default";
    GmcastMcastAddr GMCAST_MCAST_ADDR StrKey = "gmcast.mcast_addr", STR, shown(""), Static,
        Verbatim, false, false, "Multicast address (empty: TCP only)";
    GmcastMcastPort GMCAST_MCAST_PORT IntKey = "gmcast.mcast_port", dec(0, 65535), HIDDEN,
        Static, Verbatim, false, false, "Multicast port; base_port by default";
    GmcastMcastTtl GMCAST_MCAST_TTL IntKey = "gmcast.mcast_ttl", dec(1, 255), shown("1"),
        Static, Canonical, false, false, "Multicast TTL";
    GmcastMira GMCAST_MIRA IntKey = "gmcast.mira", dec(0, INT_MAX), hidden("2147483647"), Action, Verbatim,
        false, false, "Reconnect attempts to an initial peer before giving up on it";
    GmcastPeerAddr GMCAST_PEER_ADDR StrKey = "gmcast.peer_addr", Kind::Addr, HIDDEN, Action,
        Verbatim, false, false, "Add a peer address at runtime";
    GmcastPeerTimeout GMCAST_PEER_TIMEOUT DurationKey = "gmcast.peer_timeout", DUR,
        shown("PT3S"), Static, Canonical, false, false, "Connection timeout to a peer";
    GmcastSegment GMCAST_SEGMENT IntKey = "gmcast.segment", dec(0, 255), shown("0"), Static,
        Canonical, false, true,
        "Network segment (data center) of this node: appends cross to another segment once, through a relay there, and the leader moves to the segment that writes most";
    GmcastTimeWait GMCAST_TIME_WAIT DurationKey = "gmcast.time_wait", DUR, shown("PT5S"),
        Static, Canonical, false, false, "Wait before reconnecting to a failed peer";
    GmcastVersion GMCAST_VERSION IntKey = "gmcast.version", dec(0, 0), shown("0"), Static,
        Canonical, false, false, "GMCast protocol version";
    IstKeepKeys IST_KEEP_KEYS BoolKey = "ist.keep_keys", BOOL, hidden("yes"), Static, Verbatim,
        false, false, "Send keys with IST write sets";
    IstRecvAddr IST_RECV_ADDR StrKey = "ist.recv_addr", Kind::Addr, DERIVED, Static, Verbatim,
        false, true, "Address the joiner receives IST on; host of wsrep_node_address, port base_port+1";
    IstRecvBind IST_RECV_BIND StrKey = "ist.recv_bind", Kind::Addr, HIDDEN, Static, Verbatim,
        false, true, "Address the IST receiver binds to (when behind NAT)";
    LockstepDebugHangAppliers LOCKSTEP_DEBUG_HANG_APPLIERS BoolKey = "lockstep.debug_hang_appliers", BOOL,
        shown("no"), Dynamic, Verbatim, false, true,
        "lockstep: fault injection for tests: while yes, appliers take no new write set, as on a stuck disk";
    LockstepLogSync LOCKSTEP_LOG_SYNC StrKey = "lockstep.log_sync", Kind::Choice(&["none", "batch"]), shown("none"),
        Dynamic, Verbatim, false, true,
        "lockstep: when this node's gcache, its copy of the ordered log, is on disk: none (written, not synced: a crash of every mariadbd loses nothing acknowledged, a power cut of every node may), batch (synced before a local commit is acknowledged, one fdatasync for a batch of commits)";
    LockstepMaxLagMs LOCKSTEP_MAX_LAG_MS IntKey = "lockstep.max_lag_ms", dec(0, MAX), shown("0"),
        Dynamic, Verbatim, false, true,
        "lockstep: longest a write set may wait between being ordered and being committed on any member, in ms; flow control holds writers to it (0: off)";
    LockstepMetricsAddr LOCKSTEP_METRICS_ADDR StrKey = "lockstep.metrics_addr", Kind::Str,
        shown(""), Static, Verbatim, false, true,
        "lockstep: host:port where this node serves Prometheus metrics on GET /metrics (empty: off)";
    LockstepSegmentCompression LOCKSTEP_SEGMENT_COMPRESSION BoolKey = "lockstep.segment_compression", BOOL,
        shown("yes"), Static, Verbatim, false, true,
        "lockstep: compress what is sent to nodes of another gmcast.segment (deflate), unless the link uses TLS";
    PcAnnounceTimeout PC_ANNOUNCE_TIMEOUT DurationKey = "pc.announce_timeout", DUR,
        shown("PT3S"), Static, Verbatim, false, false, "Wait for peers at startup";
    PcBootstrap PC_BOOTSTRAP BoolKey = "pc.bootstrap", BOOL, hidden("no"), Action, Verbatim,
        false, true, "Make this non-primary component primary (pc.bootstrap=yes)";
    PcChecksum PC_CHECKSUM BoolKey = "pc.checksum", BOOL, shown("false"), Static, Canonical,
        false, false, "Checksum replicated messages";
    PcIgnoreQuorum PC_IGNORE_QUORUM BoolKey = "pc.ignore_quorum", BOOL, shown("false"), Dynamic,
        CanonicalAtInit, false, true, "Stay primary without quorum (dangerous)";
    PcIgnoreSb PC_IGNORE_SB BoolKey = "pc.ignore_sb", BOOL, shown("false"), Dynamic,
        CanonicalAtInit, false, true, "Stay primary on an even split (dangerous)";
    PcLinger PC_LINGER DurationKey = "pc.linger", DUR, shown("PT20S"), Static, Canonical, false,
        false, "Wait for the group to agree on our leaving";
    PcNpvo PC_NPVO BoolKey = "pc.npvo", BOOL, shown("false"), Static, Canonical, false, false,
        "Newer primary view overrides older in conflicts";
    PcRecovery PC_RECOVERY BoolKey = "pc.recovery", BOOL, shown("true"), Static, Canonical, false,
        true, "Save the primary view so a full-cluster restart recovers it";
    PcVersion PC_VERSION IntKey = "pc.version", dec(0, 1), shown("0"), Static, Verbatim, false,
        false, "PC protocol version";
    PcWaitPrim PC_WAIT_PRIM BoolKey = "pc.wait_prim", BOOL, shown("true"), Static, Verbatim,
        false, false, "Wait for a primary component at startup";
    PcWaitPrimTimeout PC_WAIT_PRIM_TIMEOUT DurationKey = "pc.wait_prim_timeout", DUR,
        shown("PT30S"), Static, Verbatim, false, false, "How long to wait for a primary component";
    PcWeight PC_WEIGHT IntKey = "pc.weight", dec(0, 255), shown("1"), Dynamic, Canonical, false,
        true, "This node's weight in quorum computation";
    ProtonetBackend PROTONET_BACKEND StrKey = "protonet.backend", Kind::Choice(&["asio"]),
        shown("asio"), Static, Verbatim, true, false, "Network backend";
    ProtonetVersion PROTONET_VERSION IntKey = "protonet.version", dec(0, 0), shown("0"), Static,
        Verbatim, true, false, "Network backend version";
    ReplCausalReadTimeout REPL_CAUSAL_READ_TIMEOUT DurationKey = "repl.causal_read_timeout",
        DUR, shown("PT30S"), Dynamic, Verbatim, false, true,
        "Timeout of a causal read (wsrep_sync_wait)";
    ReplCommitOrder REPL_COMMIT_ORDER IntKey = "repl.commit_order", dec(0, 3), shown("3"),
        Static, Verbatim, false, true,
        "Commit order: 0 bypass, 1 out of order, 2 local out of order, 3 in order";
    ReplKeyFormat REPL_KEY_FORMAT StrKey = "repl.key_format", Kind::Choice(KEY_FORMATS),
        shown("FLAT8"), Dynamic, Verbatim, false, false, "Key hash format of write sets";
    ReplMaxWsSize REPL_MAX_WS_SIZE IntKey = "repl.max_ws_size", dec(0, INT_MAX),
        shown("2147483647"), Dynamic, Verbatim, false, true, "Largest write set in bytes, counted as Galera counts it (its header and record sets, 8 bytes a key part, the data); checked when the write set is sent";
    ReplProtoMax REPL_PROTO_MAX IntKey = "repl.proto_max", dec(1, 11), shown("11"), Restart,
        Verbatim, false, false, "Highest replication protocol version to use";
    SocketChecksum SOCKET_CHECKSUM IntKey = "socket.checksum", dec(0, 2), shown("2"), Static,
        Canonical, false, false, "Message checksum: 0 none, 1 CRC32, 2 CRC32-C";
    SocketDynamic SOCKET_DYNAMIC BoolKey = "socket.dynamic", BOOL, hidden("no"), Static,
        Verbatim, false, true, "Accept both TLS and plain connections";
    SocketNonBlocking SOCKET_NON_BLOCKING BoolKey = "socket.non_blocking", BOOL, hidden("no"), Static,
        Verbatim, false, false, "Non-blocking sockets (undocumented)";
    SocketRecvBufSize SOCKET_RECV_BUF_SIZE StrKey = "socket.recv_buf_size", Kind::BufSize,
        shown("auto"), Dynamic, Verbatim, false, false, "Socket receive buffer (auto or bytes)";
    SocketSendBufSize SOCKET_SEND_BUF_SIZE StrKey = "socket.send_buf_size", Kind::BufSize,
        shown("auto"), Static, Verbatim, false, false, "Socket send buffer (auto or bytes)";
    SocketSsl SOCKET_SSL BoolKey = "socket.ssl", BOOL, hidden("no"), Static, Verbatim, false,
        true, "Use TLS between nodes";
    SocketSslCa SOCKET_SSL_CA StrKey = "socket.ssl_ca", STR, HIDDEN, Static, Verbatim, false,
        true, "TLS certificate authority file";
    SocketSslCert SOCKET_SSL_CERT StrKey = "socket.ssl_cert", STR, HIDDEN, Static, Verbatim,
        false, true, "TLS certificate file";
    SocketSslCipher SOCKET_SSL_CIPHER StrKey = "socket.ssl_cipher", STR, HIDDEN, Static,
        Verbatim, false, true, "TLS cipher list";
    SocketSslCompression SOCKET_SSL_COMPRESSION BoolKey = "socket.ssl_compression", BOOL, hidden("no"),
        Static, Verbatim, true, false, "TLS compression (ignored)";
    SocketSslKey SOCKET_SSL_KEY StrKey = "socket.ssl_key", STR, HIDDEN, Static, Verbatim, false,
        true, "TLS private key file";
    SocketSslPasswordFile SOCKET_SSL_PASSWORD_FILE StrKey = "socket.ssl_password_file", STR,
        HIDDEN, Static, Verbatim, false, true, "File with the TLS key password";
    SocketSslReload SOCKET_SSL_RELOAD BoolKey = "socket.ssl_reload", BOOL, hidden("no"), Action,
        Verbatim, false, true, "Reload TLS certificates now";
}

impl Opt {
    pub fn spec(self) -> &'static OptionSpec {
        &TABLE[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The option with this exact name (names are case-sensitive, as in
    /// Galera).
    pub fn from_name(name: &str) -> Option<Opt> {
        TABLE
            .binary_search_by(|spec| spec.name.cmp(name))
            .ok()
            .map(|i| Opt::ALL[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_unique_and_matches_the_enum() {
        assert_eq!(TABLE.len(), Opt::ALL.len());
        for pair in TABLE.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} !< {}",
                pair[0].name,
                pair[1].name
            );
        }
        for (i, opt) in Opt::ALL.iter().enumerate() {
            assert_eq!(*opt as usize, i);
            assert_eq!(Opt::from_name(opt.name()), Some(*opt));
        }
        assert_eq!(Opt::from_name("no.such.option"), None);
        assert_eq!(Opt::from_name("GCS.FC_LIMIT"), None);
    }

    /// MariaDB 11.x names each parameter the config service lists
    /// `wsrep_provider_<name>` with `.` turned into `_`, and unloads a
    /// provider that lists one name twice.
    #[test]
    fn names_stay_unique_as_server_variables() {
        let mut seen = std::collections::HashSet::new();
        for spec in TABLE {
            assert!(seen.insert(spec.name.replace('.', "_")), "{} clashes as a server variable", spec.name);
        }
    }

    #[test]
    fn every_key_constant_is_named_after_its_option() {
        for (opt, konst, _) in keys::TYPES {
            assert_eq!(*konst, opt.name().to_uppercase().replace('.', "_"));
            let variant = format!("{opt:?}").to_lowercase();
            assert_eq!(
                konst.to_lowercase().replace('_', ""),
                variant,
                "{}",
                opt.name()
            );
        }
    }

    #[test]
    fn handle_types_match_kinds() {
        for (opt, _, handle) in keys::TYPES {
            let expected = match opt.spec().kind {
                Kind::Bool => "BoolKey",
                Kind::Int { .. } => "IntKey",
                Kind::Double { .. } => "DoubleKey",
                Kind::Duration { .. } => "DurationKey",
                _ => "StrKey",
            };
            assert_eq!(*handle, expected, "{}", opt.name());
        }
    }

    #[test]
    fn galera_default_set_has_72_visible_keys_and_hidden_ones_are_settable() {
        let galera = |s: &&OptionSpec| !s.name.starts_with("lockstep.");
        let visible = TABLE.iter().filter(galera).filter(|s| !s.is_hidden()).count();
        // 72 on 26.4.23 (the contract says 73 but lists 72)
        assert_eq!(visible, 72);
        // lockstep's own are shown too, and say whose they are.
        for own in TABLE.iter().filter(|s| !galera(s)) {
            assert!(!own.is_hidden() && own.doc.starts_with("lockstep: "), "{}", own.name);
        }
        for name in [
            "pc.bootstrap",
            "gmcast.isolate",
            "ist.recv_bind",
            "cert.max_length",
            "cert.length_check",
            "gmcast.peer_addr",
            "socket.ssl",
            "socket.ssl_key",
            "socket.ssl_cert",
            "socket.ssl_ca",
            "socket.ssl_cipher",
            "socket.ssl_compression",
            "socket.ssl_reload",
            "socket.ssl_password_file",
            "socket.dynamic",
            "gcs.stateless",
            "gcs.vote_policy",
            "evs.evict",
            "gmcast.group",
            "gmcast.mcast_port",
            "gmcast.mira",
            "ist.keep_keys",
            "socket.non_blocking",
        ] {
            let opt = Opt::from_name(name).unwrap_or_else(|| panic!("{name} missing"));
            assert!(opt.spec().is_hidden(), "{name}");
        }
    }

    #[test]
    fn effective_column_is_the_agreed_starting_set() {
        let effective: Vec<&str> = TABLE
            .iter()
            .filter(|s| s.effective)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            effective,
            [
                "base_dir",
                "base_host",
                "base_port",
                "cert.log_conflicts",
                "cert.max_length",
                "cert.optimistic_pa",
                "debug",
                "evs.inactive_timeout",
                "evs.send_window",
                "evs.stats_report_period",
                "evs.suspect_timeout",
                "gcache.dir",
                "gcache.keep_pages_size",
                "gcache.name",
                "gcache.page_size",
                "gcache.recover",
                "gcache.size",
                "gcs.fc_factor",
                "gcs.fc_limit",
                "gcs.fc_master_slave",
                "gcs.fc_single_primary",
                "gcs.stateless",
                "gcs.sync_donor",
                "gcs.vote_policy",
                "gmcast.isolate",
                "gmcast.listen_addr",
                "gmcast.segment",
                "ist.recv_addr",
                "ist.recv_bind",
                "lockstep.debug_hang_appliers",
                "lockstep.log_sync",
                "lockstep.max_lag_ms",
                "lockstep.metrics_addr",
                "lockstep.segment_compression",
                "pc.bootstrap",
                "pc.ignore_quorum",
                "pc.ignore_sb",
                "pc.recovery",
                "pc.weight",
                "repl.causal_read_timeout",
                "repl.commit_order",
                "repl.max_ws_size",
                "socket.dynamic",
                "socket.ssl",
                "socket.ssl_ca",
                "socket.ssl_cert",
                "socket.ssl_cipher",
                "socket.ssl_key",
                "socket.ssl_password_file",
                "socket.ssl_reload",
            ]
        );
    }

    #[test]
    fn every_option_lockstep_ignores_says_why() {
        for spec in TABLE {
            match spec.ignored_because() {
                None => assert!(spec.effective, "{}", spec.name),
                Some(why) => assert!(!spec.effective && why != "not implemented", "{} has no reason", spec.name),
            }
        }
    }

    #[test]
    fn shown_defaults_parse_as_their_kind() {
        for spec in TABLE {
            let text = match spec.default {
                Default::Shown(t) | Default::Hidden(Some(t)) => t,
                _ => continue,
            };
            crate::check::check_value(spec, text)
                .unwrap_or_else(|e| panic!("default of {}: {e}", spec.name));
        }
    }

    #[test]
    fn derived_defaults_are_exactly_the_node_and_evs_ones() {
        let derived: Vec<&str> = TABLE
            .iter()
            .filter(|s| s.default == Default::Derived)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            derived,
            [
                "base_dir",
                "base_host",
                "base_port",
                "evs.causal_keepalive_period",
                "evs.install_timeout",
                "gcache.dir",
                "gmcast.listen_addr",
                "ist.recv_addr",
            ]
        );
    }

    #[test]
    fn actions_are_hidden_so_never_shown_from_runtime() {
        for spec in TABLE.iter().filter(|s| s.runtime == Runtime::Action) {
            assert!(spec.is_hidden(), "{}", spec.name);
        }
    }
}
