//! Status variables (`SHOW STATUS LIKE 'wsrep%'`), with Galera's names,
//! order, types and meanings (contract §11.1).

use std::sync::atomic::{AtomicU64, Ordering};

use lockstep_config::StatusVar;

use super::Shared;


/// Counters the node bumps as it works. Cumulative since start: Galera's
/// FLUSH STATUS (`stats_reset`) only resets queue, flow-control, monitor
/// and certification averages.
#[derive(Default)]
pub(super) struct Counters {
    pub replicated: AtomicU64,
    pub replicated_bytes: AtomicU64,
    pub repl_keys: AtomicU64,
    pub repl_keys_bytes: AtomicU64,
    pub repl_data_bytes: AtomicU64,
    pub received: AtomicU64,
    pub received_bytes: AtomicU64,
    pub local_commits: AtomicU64,
    pub local_cert_failures: AtomicU64,
    pub local_replays: AtomicU64,
    pub causal_reads: AtomicU64,
}

/// The server's view-derived status variables, as the provider knows them.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterStatus {
    pub status: &'static str,
    pub size: i64,
    pub conf_id: i64,
    pub local_index: i64,
    pub state_uuid: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StatValue {
    Str(String),
    Int(i64),
    Double(f64),
}

fn n(c: &AtomicU64) -> StatValue {
    StatValue::Int(c.load(Ordering::Relaxed) as i64)
}

impl Shared {
    /// Every status variable, in Galera's order.
    pub fn stats(&self) -> Vec<(StatusVar, StatValue)> {
        use StatValue::*;
        use StatusVar as V;
        let c = &self.counters;
        let st = self.status();
        let (state, history, view, desync) = (st.state, st.history, st.view.clone(), st.desync_count);
        drop(st);
        let recv = self.queue.stats();
        let send = self.group().map_or(0, |g| g.send_queue()) as i64;
        let fc = self.group().map(|g| g.flow_stats()).unwrap_or_default();
        let yes_no = |b: bool| Str(if b { "true" } else { "false" }.into());
        let (apply, commit) = (self.apply.stats(), self.commit.stats());
        let appliers = self.receivers.load(std::sync::atomic::Ordering::Relaxed);
        let capacity = self.capacity.estimate(std::time::Instant::now(), super::capacity::parallel(appliers));
        let lag_ms = self.apply_lag().as_millis() as i64;
        // What IST can serve from here on (-1: nothing cached yet), as
        // operators read it before they restart a node.
        let cached_downto = self.gcache.lock().unwrap_or_else(|e| e.into_inner()).first().unwrap_or(-1);
        let cert = self.cert.lock().unwrap_or_else(|e| e.into_inner());
        let (cs, index_size) = (cert.stats(), cert.index_size());
        drop(cert);
        let incoming = view.as_ref().map(|v| v.members.iter().map(|m| m.incoming.as_str()).collect::<Vec<_>>().join(",")).unwrap_or_default();
        // The group publishes its weighing once a tick; until then a
        // primary view weighs its head count (every weight is 1 by default).
        let group_weight = self.group().map_or(0, |g| g.cluster_weight());
        let weight = view.as_ref().filter(|v| v.primary).map_or(0, |v| if group_weight > 0 { group_weight } else { v.members.len() as u64 });
        vec![
            (V::LocalStateUuid, Str(history.to_string())),
            (V::ProtocolVersion, Int(PROTOCOL_VERSION)),
            (V::ProtocolApplication, Int(4)),
            (V::ProtocolReplicator, Int(PROTOCOL_VERSION)),
            (V::ProtocolGcs, Int(5)),
            (V::LastCommitted, Int(self.apply.last_left())),
            (V::Replicated, n(&c.replicated)),
            (V::ReplicatedBytes, n(&c.replicated_bytes)),
            (V::ReplKeys, n(&c.repl_keys)),
            (V::ReplKeysBytes, n(&c.repl_keys_bytes)),
            (V::ReplDataBytes, n(&c.repl_data_bytes)),
            (V::ReplOtherBytes, Int(0)),
            (V::Received, n(&c.received)),
            (V::ReceivedBytes, n(&c.received_bytes)),
            (V::LocalCommits, n(&c.local_commits)),
            (V::LocalCertFailures, n(&c.local_cert_failures)),
            (V::LocalReplays, n(&c.local_replays)),
            (V::LocalSendQueue, Int(send)),
            (V::LocalSendQueueMax, Int(send)),
            (V::LocalSendQueueMin, Int(send)),
            (V::LocalSendQueueAvg, Double(send as f64)),
            (V::LocalRecvQueue, Int(recv.len as i64)),
            (V::LocalRecvQueueMax, Int(recv.max as i64)),
            (V::LocalRecvQueueMin, Int(recv.min as i64)),
            (V::LocalRecvQueueAvg, Double(recv.avg)),
            (V::LocalCachedDownto, Int(cached_downto)),
            (V::FlowControlPausedNs, Int(fc.paused_ns as i64)),
            (V::FlowControlPaused, Double(fc.paused)),
            (V::FlowControlSent, Int(fc.sent as i64)),
            (V::FlowControlRecv, Int(fc.recv as i64)),
            (V::FlowControlActive, yes_no(fc.active)),
            (V::FlowControlRequested, yes_no(fc.requested)),
            (V::CertDepsDistance, Double(ratio(cs.deps_distance_sum, cs.certified))),
            (V::ApplyOooe, Double(apply.oooe())),
            (V::ApplyOool, Double(apply.oool())),
            (V::ApplyWindow, Double(apply.window())),
            (V::ApplyWaits, Int(apply.waits as i64)),
            (V::CommitOooe, Double(commit.oooe())),
            (V::CommitOool, Double(commit.oool())),
            (V::CommitWindow, Double(commit.window())),
            (V::LocalState, Int(state.local_state())),
            (V::LocalStateComment, Str(state.comment(false).into())),
            (V::CertIndexSize, Int(index_size as i64)),
            (V::CausalReads, n(&c.causal_reads)),
            (V::CertInterval, Double(ratio(cs.interval_sum, cs.certified))),
            (V::OpenTransactions, Int(self.trxs.len() as i64)),
            (V::OpenConnections, Int(self.toi.lock().unwrap_or_else(|e| e.into_inner()).len() as i64)),
            (V::IncomingAddresses, Str(incoming)),
            (V::ClusterWeight, Str(weight.to_string())),
            (V::DesyncCount, Str(desync.to_string())),
            (V::EvsDelayed, Str(String::new())),
            (V::EvsEvictList, Str(String::new())),
            (V::EvsReplLatency, Str(self.repl_latency.show(std::time::Instant::now(), self.setting(|s| s.stats_report_period)))),
            (V::EvsState, Str(if view.is_some() { "OPERATIONAL" } else { "CLOSED" }.into())),
            (V::GcommUuid, Str(self.my_id().to_string())),
            (V::GmcastSegment, Str(self.setting(|s| s.segment).to_string())),
            (V::ApplyCapacity, Double(capacity.capacity)),
            (V::ApplyCapacityUsed, Double(capacity.used)),
            (V::ApplyLagMs, Int(lag_ms)),
            (V::ClusterApplyLagMs, Int(self.cluster_apply_lag_ms(lag_ms))),
            (V::ApplyStalled, Str(if self.apply_stalled.load(std::sync::atomic::Ordering::SeqCst) { "ON" } else { "OFF" }.into())),
            (V::LeaderIndex, Int(self.leader_index(view.as_ref()))),
            (V::CausalReadsByLeader, Int(self.group().map_or(0, |g| g.reads_answered_by_leader()) as i64)),
        ]
    }

    /// The view as the server shows it in its own status variables
    /// (`wsrep_cluster_status`, `wsrep_cluster_size`, ...), which are not
    /// the provider's: for the metrics endpoint.
    pub fn cluster_status(&self) -> ClusterStatus {
        let st = self.status();
        let status = match &st.view {
            None => "Disconnected",
            Some(v) if v.primary => "Primary",
            Some(_) => "non-Primary",
        };
        let v = st.view.as_ref();
        ClusterStatus {
            status,
            size: v.map_or(0, |v| v.members.len() as i64),
            conf_id: v.map_or(-1, |v| v.conf_id),
            local_index: v.map_or(-1, |v| v.my_idx as i64),
            state_uuid: st.history.to_string(),
        }
    }

    /// Every local writeset's time from proposal to ordering, as a
    /// histogram (`wsrep_evs_repl_latency` gives its moments only).
    pub fn repl_latency_histogram(&self) -> prometheus_client::metrics::histogram::Histogram {
        self.repl_latency.histogram()
    }

    /// The group's answer times per follower (see `group::round_trips`);
    /// None while not connected.
    pub fn round_trip_metrics(&self) -> Option<crate::group::round_trips::Shown> {
        self.group().map(|g| g.round_trip_metrics())
    }

    /// `wsrep_leader_index`: where the leader the group knows is in `view`.
    fn leader_index(&self, view: Option<&crate::group::View>) -> i64 {
        let leader = self.group().map_or(0, |g| g.leader());
        let at = view.and_then(|v| v.members.iter().position(|m| leader != 0 && m.id.raft_id() == leader));
        at.map_or(-1, |i| i as i64)
    }

    /// FLUSH STATUS.
    pub fn stats_reset(&self) {
        if let Some(g) = self.group() {
            g.reset_flow_stats();
        }
        self.queue.reset_stats();
        self.apply.flush_stats();
        self.commit.flush_stats();
    }
}

/// The replicator protocol version Galera 26.4.23 reports; mtr tests print
/// it, and it is the writeset protocol generation we behave as.
const PROTOCOL_VERSION: i64 = 11;

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

