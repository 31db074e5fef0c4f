//! The status variables `stats_get` returns, in Galera 26.4.23's order,
//! with its names (no `wsrep_` prefix; the server adds it and compares
//! case-insensitively) and its value types. Checked by calling `stats_get`
//! on the real library: some counters are strings there (the GCS backend
//! ones, 49-56, and the flow-control flags), and so they must be here.
//! The provider fills the values; this module only names them.

/// `wsrep_var_type` of the wsrep API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarKind {
    /// `WSREP_VAR_STRING` (0)
    String,
    /// `WSREP_VAR_INT64` (1)
    Int64,
    /// `WSREP_VAR_DOUBLE` (2)
    Double,
}

impl VarKind {
    /// The `wsrep_var_type_t` value in the C ABI.
    pub fn wsrep_var_type(self) -> u32 {
        match self {
            VarKind::String => 0,
            VarKind::Int64 => 1,
            VarKind::Double => 2,
        }
    }
}

macro_rules! status_vars {
    ($( $variant:ident = $name:literal, $kind:ident, $doc:literal; )*) => {
        /// A status variable; `ALL` is the order of `stats_get`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum StatusVar { $($variant),* }

        impl StatusVar {
            pub const ALL: &'static [StatusVar] = &[$(StatusVar::$variant),*];

            /// The name without the `wsrep_` prefix.
            pub fn name(self) -> &'static str {
                match self { $(StatusVar::$variant => $name),* }
            }

            pub fn kind(self) -> VarKind {
                match self { $(StatusVar::$variant => VarKind::$kind),* }
            }

            /// What the variable means (one line).
            pub fn doc(self) -> &'static str {
                match self { $(StatusVar::$variant => $doc),* }
            }
        }
    };
}

status_vars! {
    LocalStateUuid = "local_state_uuid", String, "UUID of the history (cluster state) this node is in";
    ProtocolVersion = "protocol_version", Int64, "Write-set protocol version in use (-1 before the first view)";
    ProtocolApplication = "protocol_application", Int64, "Application protocol version agreed by the cluster";
    ProtocolReplicator = "protocol_replicator", Int64, "Replicator protocol version agreed by the cluster";
    ProtocolGcs = "protocol_GCS", Int64, "Group communication protocol version (note the capitals)";
    LastCommitted = "last_committed", Int64, "Seqno of the last write set committed in order";
    Replicated = "replicated", Int64, "Local write sets replicated to the cluster";
    ReplicatedBytes = "replicated_bytes", Int64, "Bytes of the write sets replicated";
    ReplKeys = "repl_keys", Int64, "Keys replicated";
    ReplKeysBytes = "repl_keys_bytes", Int64, "Bytes of the keys replicated";
    ReplDataBytes = "repl_data_bytes", Int64, "Bytes of the data replicated";
    ReplOtherBytes = "repl_other_bytes", Int64, "Bytes of other (unordered, annotation) data replicated";
    Received = "received", Int64, "Actions received from the cluster, configuration changes included";
    ReceivedBytes = "received_bytes", Int64, "Bytes of the actions received";
    LocalCommits = "local_commits", Int64, "Local transactions committed (streaming fragments included)";
    LocalCertFailures = "local_cert_failures", Int64, "Local transactions that failed certification";
    LocalReplays = "local_replays", Int64, "Local transactions replayed after a brute-force abort";
    LocalSendQueue = "local_send_queue", Int64, "Current length of the send queue";
    LocalSendQueueMax = "local_send_queue_max", Int64, "Longest send queue since the last FLUSH STATUS";
    LocalSendQueueMin = "local_send_queue_min", Int64, "Shortest send queue since the last FLUSH STATUS";
    LocalSendQueueAvg = "local_send_queue_avg", Double, "Average send queue length since the last FLUSH STATUS";
    LocalRecvQueue = "local_recv_queue", Int64, "Current length of the receive queue";
    LocalRecvQueueMax = "local_recv_queue_max", Int64, "Longest receive queue since the last FLUSH STATUS";
    LocalRecvQueueMin = "local_recv_queue_min", Int64, "Shortest receive queue since the last FLUSH STATUS";
    LocalRecvQueueAvg = "local_recv_queue_avg", Double, "Average receive queue length since the last FLUSH STATUS";
    LocalCachedDownto = "local_cached_downto", Int64, "Lowest seqno in the write-set cache (IST possible from it)";
    FlowControlPausedNs = "flow_control_paused_ns", Int64, "Total nanoseconds replication was paused by flow control";
    FlowControlPaused = "flow_control_paused", Double, "Fraction of time paused by flow control since the last FLUSH STATUS";
    FlowControlSent = "flow_control_sent", Int64, "Flow-control pause requests sent by this node";
    FlowControlRecv = "flow_control_recv", Int64, "Flow-control pause requests received (own included)";
    FlowControlActive = "flow_control_active", String, "\"true\" while the cluster is paused by flow control";
    FlowControlRequested = "flow_control_requested", String, "\"true\" while this node asks the cluster to pause";
    CertDepsDistance = "cert_deps_distance", Double, "Average seqno - depends_on: the parallelism appliers could use";
    ApplyOooe = "apply_oooe", Double, "Apply monitor: fraction of write sets entered out of order";
    ApplyOool = "apply_oool", Double, "Apply monitor: fraction of write sets left out of order";
    ApplyWindow = "apply_window", Double, "Apply monitor: average distance between last entered and last left";
    ApplyWaits = "apply_waits", Int64, "Times an applier had to wait to enter the apply monitor";
    CommitOooe = "commit_oooe", Double, "Commit monitor: fraction entered out of order";
    CommitOool = "commit_oool", Double, "Commit monitor: fraction left out of order";
    CommitWindow = "commit_window", Double, "Commit monitor: average distance between last entered and last left";
    LocalState = "local_state", Int64, "Node state: 1 joining, 2 donor, 3 joined, 4 synced";
    LocalStateComment = "local_state_comment", String, "Node state in words (Initialized, Joining, Donor/Desynced, Joined, Synced)";
    CertIndexSize = "cert_index_size", Int64, "Entries in the certification index";
    CausalReads = "causal_reads", Int64, "Causal reads (sync_wait) served";
    CertInterval = "cert_interval", Double, "Average number of write sets certified concurrently with each";
    OpenTransactions = "open_transactions", Int64, "Transactions the provider holds open";
    OpenConnections = "open_connections", Int64, "Connections (TOI contexts) the provider holds open";
    IncomingAddresses = "incoming_addresses", String, "Comma-separated client addresses of the view's members";
    ClusterWeight = "cluster_weight", String, "Sum of pc.weight over the primary component";
    DesyncCount = "desync_count", String, "How many desync requests hold this node out of flow control";
    EvsDelayed = "evs_delayed", String, "Delayed peers, comma-separated uuid:address:count";
    EvsEvictList = "evs_evict_list", String, "UUIDs of evicted nodes";
    EvsReplLatency = "evs_repl_latency", String, "Group round trip: min/avg/max/stddev/samples in seconds";
    EvsState = "evs_state", String, "Group communication state (OPERATIONAL, GATHER, ...)";
    GcommUuid = "gcomm_uuid", String, "This node's member UUID in the group";
    GmcastSegment = "gmcast_segment", String, "This node's segment (gmcast.segment)";
    ApplyCapacity = "apply_capacity", Double, "lockstep: write sets per second this node's appliers could apply now, estimated over the last 10 s of applying (0: too few applied to say)";
    ApplyCapacityUsed = "apply_capacity_used", Double, "lockstep: the share of apply_capacity in use, 0.0 to 1.0";
    ApplyLagMs = "apply_lag_ms", Int64, "lockstep: how long the oldest write set ordered but not yet committed on this node has waited, in ms (0: none waits)";
    ClusterApplyLagMs = "cluster_apply_lag_ms", Int64, "lockstep: the largest apply_lag_ms among the members, as each reports it every 250 ms (reports older than 2 s left out)";
    ApplyStalled = "apply_stalled", String, "lockstep: ON while this node's appliers have committed nothing for evs.suspect_timeout with write sets waiting and nothing pausing them: it no longer counts for flow control, and leaves the cluster after evs.inactive_timeout";
    LeaderIndex = "leader_index", Int64, "lockstep: index in this node's view of the member that orders write sets (the Raft leader); -1 when none is known";
    CausalReadsByLeader = "causal_reads_by_leader", Int64, "lockstep: causal reads (sync_wait) whose position this node took from the leader's last index in one round trip, without Raft's heartbeat round (a voting follower of a cluster of three voters or fewer)";
}

/// Galera 26.4.23 has the first this many, in this order; lockstep's own
/// come after them.
pub const GALERA_STATUS_VARS: usize = 56;

impl StatusVar {
    /// Position in `stats_get`'s array.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Looks a name up as the server does (case-insensitive, with or
    /// without the `wsrep_` prefix).
    pub fn from_name(name: &str) -> Option<StatusVar> {
        let lower = name.to_ascii_lowercase();
        let bare = lower.strip_prefix("wsrep_").unwrap_or(&lower);
        StatusVar::ALL
            .iter()
            .copied()
            .find(|v| v.name().eq_ignore_ascii_case(bare))
    }
}

/// A `wsrep_%` status variable the server computes from the view the
/// provider delivered, not one of `stats_get`'s. Named here too so that
/// what reads status (the metrics page, the `lockstep` command) spells no
/// name of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerVar {
    ClusterStatus,
    ClusterSize,
    ClusterConfId,
    ClusterStateUuid,
    LocalIndex,
    Ready,
    Connected,
    LocalBfAborts,
}

impl ServerVar {
    /// The name without the `wsrep_` prefix.
    pub fn name(self) -> &'static str {
        match self {
            ServerVar::ClusterStatus => "cluster_status",
            ServerVar::ClusterSize => "cluster_size",
            ServerVar::ClusterConfId => "cluster_conf_id",
            ServerVar::ClusterStateUuid => "cluster_state_uuid",
            ServerVar::LocalIndex => "local_index",
            ServerVar::Ready => "ready",
            ServerVar::Connected => "connected",
            ServerVar::LocalBfAborts => "local_bf_aborts",
        }
    }

    /// What the variable means (one line).
    pub fn doc(self) -> &'static str {
        match self {
            ServerVar::ClusterStatus => "Primary, non-Primary or Disconnected, as the server shows it",
            ServerVar::ClusterSize => "Members in this node's view",
            ServerVar::ClusterConfId => "Primary views seen by the cluster (-1: none)",
            ServerVar::ClusterStateUuid => "UUID of the history the view belongs to",
            ServerVar::LocalIndex => "This node's index in its view",
            ServerVar::Ready => "ON when the node accepts queries",
            ServerVar::Connected => "ON when the provider is connected to a group",
            ServerVar::LocalBfAborts => "Local transactions aborted by replicated ones (brute force)",
        }
    }
}

/// A status variable of either kind, by the name `SHOW STATUS` gives it.
pub trait Shown: Copy {
    /// The name without the `wsrep_` prefix.
    fn bare_name(self) -> &'static str;

    /// `wsrep_<name>`, as `SHOW GLOBAL STATUS` lists it.
    fn shown(self) -> String {
        format!("wsrep_{}", self.bare_name())
    }
}

impl Shown for StatusVar {
    fn bare_name(self) -> &'static str {
        self.name()
    }
}

impl Shown for ServerVar {
    fn bare_name(self) -> &'static str {
        self.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `stats_get` of libgalera_smm.so 26.4.23 on a bootstrapped node,
    /// number, name and `wsrep_var_type` as printed by a probe program.
    const OBSERVED: &str = "\
1 local_state_uuid STRING|2 protocol_version INT64|3 protocol_application INT64|\
4 protocol_replicator INT64|5 protocol_GCS INT64|6 last_committed INT64|7 replicated INT64|\
8 replicated_bytes INT64|9 repl_keys INT64|10 repl_keys_bytes INT64|11 repl_data_bytes INT64|\
12 repl_other_bytes INT64|13 received INT64|14 received_bytes INT64|15 local_commits INT64|\
16 local_cert_failures INT64|17 local_replays INT64|18 local_send_queue INT64|\
19 local_send_queue_max INT64|20 local_send_queue_min INT64|21 local_send_queue_avg DOUBLE|\
22 local_recv_queue INT64|23 local_recv_queue_max INT64|24 local_recv_queue_min INT64|\
25 local_recv_queue_avg DOUBLE|26 local_cached_downto INT64|27 flow_control_paused_ns INT64|\
28 flow_control_paused DOUBLE|29 flow_control_sent INT64|30 flow_control_recv INT64|\
31 flow_control_active STRING|32 flow_control_requested STRING|33 cert_deps_distance DOUBLE|\
34 apply_oooe DOUBLE|35 apply_oool DOUBLE|36 apply_window DOUBLE|37 apply_waits INT64|\
38 commit_oooe DOUBLE|39 commit_oool DOUBLE|40 commit_window DOUBLE|41 local_state INT64|\
42 local_state_comment STRING|43 cert_index_size INT64|44 causal_reads INT64|\
45 cert_interval DOUBLE|46 open_transactions INT64|47 open_connections INT64|\
48 incoming_addresses STRING|49 cluster_weight STRING|50 desync_count STRING|\
51 evs_delayed STRING|52 evs_evict_list STRING|53 evs_repl_latency STRING|54 evs_state STRING|\
55 gcomm_uuid STRING|56 gmcast_segment STRING";

    #[test]
    fn order_names_and_types_match_galera() {
        let ours: Vec<String> = StatusVar::ALL[..GALERA_STATUS_VARS]
            .iter()
            .map(|v| {
                let kind = match v.kind() {
                    VarKind::String => "STRING",
                    VarKind::Int64 => "INT64",
                    VarKind::Double => "DOUBLE",
                };
                format!("{} {} {}", v.index() + 1, v.name(), kind)
            })
            .collect();
        assert_eq!(ours.join("|"), OBSERVED);
        assert!(StatusVar::ALL[GALERA_STATUS_VARS..].iter().all(|v| v.doc().starts_with("lockstep: ")));
    }

    #[test]
    fn lookup_is_case_insensitive_with_optional_prefix() {
        assert_eq!(
            StatusVar::from_name("wsrep_protocol_gcs"),
            Some(StatusVar::ProtocolGcs)
        );
        assert_eq!(
            StatusVar::from_name("LOCAL_REPLAYS"),
            Some(StatusVar::LocalReplays)
        );
        assert_eq!(StatusVar::from_name("wsrep_cluster_size"), None); // server's own
    }

    #[test]
    fn every_variable_is_documented_and_unique() {
        let mut names: Vec<String> = StatusVar::ALL
            .iter()
            .map(|v| v.name().to_ascii_lowercase())
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), StatusVar::ALL.len());
        assert!(StatusVar::ALL.iter().all(|v| !v.doc().is_empty()));
        assert_eq!(VarKind::Double.wsrep_var_type(), 2);
    }
}
