//! Server-side counters around each measured run: where the time goes.
//!
//! sysbench sees throughput and latency; the servers know why. Before a
//! cell every node gets `FLUSH STATUS` (which restarts Galera's averages:
//! recv queue, apply window, deps distance, flow-control fraction), then a
//! snapshot; after the cell another snapshot. Counters that FLUSH does not
//! reset (cert failures, bf aborts, paused ns) are read as differences.
//! CPU time of each mariadbd comes from /proc: on 2 shared cores, CPU per
//! transaction is the cost that limits throughput.

use super::threads::{self, Threads};
use crate::cluster::{Cluster, ServerVar, StatusVar, VarName};
use lockstep_config::Shown;
use std::collections::BTreeMap;
use std::time::Instant;

/// Status variables kept in the per-node detail file, as `SHOW STATUS`
/// names them.
pub fn recorded() -> Vec<String> {
    let provider = [
        StatusVar::FlowControlPaused,
        StatusVar::FlowControlPausedNs,
        StatusVar::FlowControlSent,
        StatusVar::FlowControlRecv,
        StatusVar::LocalCertFailures,
        StatusVar::LocalRecvQueueAvg,
        StatusVar::LocalRecvQueueMax,
        StatusVar::LocalSendQueueAvg,
        StatusVar::ApplyWindow,
        StatusVar::CommitWindow,
        StatusVar::ApplyOooe,
        StatusVar::CertDepsDistance,
        StatusVar::Replicated,
        StatusVar::Received,
        StatusVar::LastCommitted,
    ];
    let mut names: Vec<String> = provider.iter().map(|v| v.shown()).collect();
    names.push(ServerVar::LocalBfAborts.shown());
    names
}

/// One node at one moment. Missing values (a node that did not answer, a
/// provider without the variable) stay missing: "-" in the report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeSnapshot {
    pub node: usize,
    pub vars: BTreeMap<String, String>,
    /// utime + stime of the node's mariadbd, in seconds.
    pub cpu_seconds: Option<f64>,
    /// Its threads' context switches and the provider threads' CPU.
    pub threads: Option<Threads>,
    /// Why `vars` is empty, if it is.
    pub error: Option<String>,
}

impl NodeSnapshot {
    fn float(&self, var: impl VarName) -> Option<f64> {
        self.vars.get(var.key().as_ref())?.trim().parse().ok()
    }
}

/// All nodes plus the machine's CPU at one moment.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub at: Instant,
    pub nodes: Vec<NodeSnapshot>,
    /// (busy, total) jiffies of the whole machine from /proc/stat.
    pub machine: Option<(u64, u64)>,
    /// CPU seconds of this process and its reaped children (sysbench).
    pub bench_cpu: Option<f64>,
}

/// `FLUSH STATUS` on every running node (best effort: a node that does not
/// answer shows up in the snapshot that follows).
pub fn flush(cluster: &Cluster) {
    for node in cluster.nodes() {
        let _ = node.sql("FLUSH STATUS");
    }
}

pub fn take(cluster: &Cluster) -> Snapshot {
    let nodes = cluster
        .nodes()
        .map(|node| {
            let (vars, error) = match node.status() {
                Ok(status) => (status.vars, None),
                Err(e) => (BTreeMap::new(), Some(e.to_string())),
            };
            NodeSnapshot {
                node: node.index(),
                vars,
                cpu_seconds: node.pid().and_then(process_cpu_seconds),
                threads: node.pid().and_then(threads::read),
                error,
            }
        })
        .collect();
    Snapshot {
        at: Instant::now(),
        nodes,
        machine: machine_jiffies(),
        bench_cpu: own_cpu_seconds(),
    }
}

/// What the counters say about one measured run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub seconds: f64,
    /// Largest fraction of the run any node spent paused by flow control.
    pub fc_paused: Option<f64>,
    /// FC_STOP messages sent, per node: who could not keep up.
    pub fc_sent: Vec<Option<f64>>,
    pub cert_failures: Option<f64>,
    pub bf_aborts: Option<f64>,
    /// Largest average receive queue and the node that had it.
    pub recv_queue_avg: Option<(f64, usize)>,
    pub apply_window: Option<f64>,
    pub deps_distance: Option<f64>,
    /// Writesets each node originated: shows how "all" spread the load.
    pub replicated: Vec<Option<f64>>,
    /// Spread of wsrep_last_committed over the nodes when the run ended:
    /// writesets some node had not yet applied. Throughput bought with a
    /// growing backlog is not throughput the cluster sustains.
    pub lag_at_end: Option<f64>,
    /// CPU of all mariadbd processes per sysbench transaction.
    pub server_cpu_ms_per_txn: Option<f64>,
    /// The same with the load generator's (sysbench and this process):
    /// the whole cluster's cost of a transaction on shared cores.
    pub cluster_cpu_ms_per_txn: Option<f64>,
    /// Context switches of all mariadbd threads per transaction: thread
    /// hand-offs on the commit path show here.
    pub switches_per_txn: Option<f64>,
    /// The provider's own threads' share of the servers' CPU (lockstep
    /// only: Galera's threads carry no name of their own).
    pub provider_share: Option<f64>,
    /// Fraction of the machine's CPU in use (sysbench included).
    pub machine_busy: Option<f64>,
    /// Fraction of the machine's CPU used by processes that are not part
    /// of the benchmark (neither the servers, nor sysbench, nor lockstep):
    /// noise on a shared machine.
    pub other_load: Option<f64>,
    /// Per follower, how long after node 1's COMMIT returned it showed
    /// the probe's rows (cells with node 1 as the only writer node).
    pub follower_delays: Vec<super::follower_delay::Delays>,
}

/// Compares two snapshots taken around a run of `transactions`.
pub fn summarize(before: &Snapshot, after: &Snapshot, transactions: u64) -> Summary {
    let seconds = after.at.duration_since(before.at).as_secs_f64();
    let pairs: Vec<(&NodeSnapshot, &NodeSnapshot)> = before
        .nodes
        .iter()
        .filter_map(|b| Some((b, after.nodes.iter().find(|a| a.node == b.node)?)))
        .collect();
    let delta = |var: &str| -> Vec<Option<f64>> {
        pairs
            .iter()
            .map(|(b, a)| Some(a.float(var)? - b.float(var)?))
            .collect()
    };
    let after_values =
        |var: &str| -> Vec<Option<f64>> { pairs.iter().map(|(_, a)| a.float(var)).collect() };
    Summary {
        seconds,
        fc_paused: fc_paused(&delta(&StatusVar::FlowControlPausedNs.shown()), seconds)
            .or_else(|| max(&after_values(&StatusVar::FlowControlPaused.shown()))),
        fc_sent: delta(&StatusVar::FlowControlSent.shown()),
        cert_failures: sum(&delta(&StatusVar::LocalCertFailures.shown())),
        bf_aborts: sum(&delta(&ServerVar::LocalBfAborts.shown())),
        recv_queue_avg: max_with_node(&after_values(&StatusVar::LocalRecvQueueAvg.shown()), &pairs),
        apply_window: max(&after_values(&StatusVar::ApplyWindow.shown())),
        deps_distance: max(&after_values(&StatusVar::CertDepsDistance.shown())),
        replicated: delta(&StatusVar::Replicated.shown()),
        lag_at_end: spread(&after_values(&StatusVar::LastCommitted.shown())),
        server_cpu_ms_per_txn: server_cpu(&pairs)
            .filter(|_| transactions > 0)
            .map(|cpu| cpu * 1000.0 / transactions as f64),
        cluster_cpu_ms_per_txn: server_cpu(&pairs)
            .zip(after.bench_cpu.zip(before.bench_cpu))
            .filter(|_| transactions > 0)
            .map(|(cpu, (a, b))| (cpu + a - b) * 1000.0 / transactions as f64),
        switches_per_txn: thread_delta(&pairs, |t| Some(t.switches as f64))
            .filter(|_| transactions > 0)
            .map(|n| n / transactions as f64),
        provider_share: thread_delta(&pairs, |t| Some(t.provider_ticks? as f64 / clock_ticks_per_second()))
            .zip(server_cpu(&pairs))
            .and_then(|(ours, all)| (all > 0.0).then(|| (ours / all).clamp(0.0, 1.0))),
        machine_busy: machine_busy(before.machine, after.machine),
        other_load: other_load(before, after, server_cpu(&pairs)),
        follower_delays: Vec::new(),
    }
}

fn fc_paused(paused_ns: &[Option<f64>], seconds: f64) -> Option<f64> {
    let worst = max(paused_ns)?;
    (seconds > 0.0).then(|| (worst / 1e9 / seconds).clamp(0.0, 1.0))
}

/// max - min, only when every node reported.
fn spread(values: &[Option<f64>]) -> Option<f64> {
    let present: Vec<f64> = values.iter().copied().collect::<Option<_>>()?;
    let max = present.iter().copied().reduce(f64::max)?;
    let min = present.iter().copied().reduce(f64::min)?;
    Some(max - min)
}

fn sum(values: &[Option<f64>]) -> Option<f64> {
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    (!present.is_empty()).then(|| present.iter().sum())
}

fn max(values: &[Option<f64>]) -> Option<f64> {
    values.iter().flatten().copied().reduce(f64::max)
}

fn max_with_node(
    values: &[Option<f64>],
    pairs: &[(&NodeSnapshot, &NodeSnapshot)],
) -> Option<(f64, usize)> {
    values
        .iter()
        .zip(pairs)
        .filter_map(|(v, (b, _))| Some(((*v)?, b.node)))
        .reduce(|best, x| if x.0 > best.0 { x } else { best })
}

/// CPU seconds of all servers; only when every node's CPU is known: a
/// partial sum would flatter.
fn server_cpu(pairs: &[(&NodeSnapshot, &NodeSnapshot)]) -> Option<f64> {
    let mut total = 0.0;
    for (b, a) in pairs {
        total += a.cpu_seconds? - b.cpu_seconds?;
    }
    (!pairs.is_empty()).then_some(total)
}

/// The sum over all servers of `value` after minus before; only when
/// every node has it (a partial sum would flatter).
fn thread_delta(pairs: &[(&NodeSnapshot, &NodeSnapshot)], value: impl Fn(&Threads) -> Option<f64>) -> Option<f64> {
    let mut total = 0.0;
    for (b, a) in pairs {
        total += value(a.threads.as_ref()?)? - value(b.threads.as_ref()?)?;
    }
    (!pairs.is_empty()).then_some(total)
}

/// Machine busy time minus what the benchmark's own processes used, as a
/// fraction of the machine's capacity over the run.
fn other_load(before: &Snapshot, after: &Snapshot, servers: Option<f64>) -> Option<f64> {
    let ((b_busy, b_total), (a_busy, a_total)) = (before.machine?, after.machine?);
    let ticks = clock_ticks_per_second();
    let capacity = a_total.checked_sub(b_total)? as f64 / ticks;
    let busy = a_busy.saturating_sub(b_busy) as f64 / ticks;
    let ours = servers? + (after.bench_cpu? - before.bench_cpu?);
    (capacity > 0.0).then(|| ((busy - ours) / capacity).clamp(0.0, 1.0))
}

fn machine_busy(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((b_busy, b_total), (a_busy, a_total)) = (before?, after?);
    let total = a_total.checked_sub(b_total)?;
    (total > 0).then(|| a_busy.saturating_sub(b_busy) as f64 / total as f64)
}

/// Tab-separated detail rows `node variable before after` for the
/// variables in [`recorded`] and the CPU seconds.
pub fn detail_rows(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut rows = Vec::new();
    for b in &before.nodes {
        let a = after.nodes.iter().find(|a| a.node == b.node);
        let get = |s: Option<&NodeSnapshot>, name: &str| {
            s.and_then(|s| s.vars.get(name).cloned())
                .unwrap_or_else(|| "-".into())
        };
        for name in recorded() {
            let name = name.as_str();
            rows.push(format!(
                "node{}\t{name}\t{}\t{}",
                b.node,
                get(Some(b), name),
                get(a, name)
            ));
        }
        let cpu = |s: Option<&NodeSnapshot>| {
            s.and_then(|s| s.cpu_seconds)
                .map_or("-".into(), |c| format!("{c:.2}"))
        };
        rows.push(format!(
            "node{}\tcpu_seconds\t{}\t{}",
            b.node,
            cpu(Some(b)),
            cpu(a)
        ));
    }
    rows
}

extern "C" {
    fn sysconf(name: i32) -> i64;
}

/// _SC_CLK_TCK on Linux.
const SC_CLK_TCK: i32 = 2;

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads its integer argument.
    let ticks = unsafe { sysconf(SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// utime + stime from /proc/PID/stat, in seconds.
fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_proc_stat_cpu(&text).map(|ticks| ticks as f64 / clock_ticks_per_second())
}

/// Fields 14 and 15 of /proc/PID/stat; counted after the `)` that ends the
/// command name, which may itself contain spaces.
pub(super) fn parse_proc_stat_cpu(text: &str) -> Option<u64> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// utime + stime + cutime + cstime of this process: its own threads (the
/// WAN proxy) and the children it has waited for (sysbench runs).
fn own_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = (11..=14)
        .map(|i| fields.get(i)?.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    Some(ticks as f64 / clock_ticks_per_second())
}

fn machine_jiffies() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_machine_jiffies(&text)
}

/// The `cpu` line of /proc/stat: (busy, total), idle and iowait not busy.
fn parse_machine_jiffies(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest is in user).
    let total: u64 = values.iter().take(8).sum();
    let idle = values.get(3)? + values.get(4).unwrap_or(&0);
    Some((total - idle, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn node(index: usize, cpu: f64, vars: &[(&str, &str)]) -> NodeSnapshot {
        NodeSnapshot {
            node: index,
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            cpu_seconds: Some(cpu),
            threads: Some(Threads { switches: (cpu * 100.0) as u64, provider_ticks: Some((cpu * 10.0) as u64) }),
            error: None,
        }
    }

    #[test]
    fn summary_of_two_snapshots() {
        let start = Instant::now();
        let before = Snapshot {
            at: start,
            nodes: vec![
                node(
                    1,
                    10.0,
                    &[
                        ("wsrep_flow_control_paused_ns", "1000000000"),
                        ("wsrep_local_cert_failures", "5"),
                        ("wsrep_replicated", "100"),
                    ],
                ),
                node(
                    2,
                    20.0,
                    &[
                        ("wsrep_flow_control_paused_ns", "0"),
                        ("wsrep_local_cert_failures", "7"),
                        ("wsrep_flow_control_sent", "0"),
                    ],
                ),
            ],
            machine: Some((100, 1000)),
            bench_cpu: Some(1.0),
        };
        let after = Snapshot {
            at: start + Duration::from_secs(10),
            nodes: vec![
                node(
                    1,
                    13.0,
                    &[
                        ("wsrep_flow_control_paused_ns", "3000000000"),
                        ("wsrep_local_cert_failures", "6"),
                        ("wsrep_replicated", "1100"),
                        ("wsrep_local_recv_queue_avg", "0.5"),
                        ("wsrep_last_committed", "900"),
                        ("wsrep_apply_window", "1.2"),
                    ],
                ),
                node(
                    2,
                    22.0,
                    &[
                        ("wsrep_flow_control_paused_ns", "500000000"),
                        ("wsrep_local_cert_failures", "10"),
                        ("wsrep_flow_control_sent", "12"),
                        ("wsrep_local_recv_queue_avg", "7.25"),
                        ("wsrep_last_committed", "850"),
                        ("wsrep_apply_window", "2.5"),
                    ],
                ),
            ],
            machine: Some((1700, 3000)),
            bench_cpu: Some(3.0),
        };
        let s = summarize(&before, &after, 1000);
        assert_eq!(s.seconds, 10.0);
        assert_eq!(s.fc_paused, Some(0.2));
        assert_eq!(s.cert_failures, Some(4.0));
        assert_eq!(s.bf_aborts, None);
        assert_eq!(s.fc_sent, [None, Some(12.0)]);
        assert_eq!(s.recv_queue_avg, Some((7.25, 2)));
        assert_eq!(s.apply_window, Some(2.5));
        assert_eq!(s.replicated, [Some(1000.0), None]);
        assert_eq!(s.lag_at_end, Some(50.0));
        assert_eq!(s.server_cpu_ms_per_txn, Some(5.0));
        // Servers 5 s, sysbench 2 s, over 1000 transactions.
        assert_eq!(s.cluster_cpu_ms_per_txn, Some(7.0));
        // Switches: 100 per server CPU second in `node`, 500 in all.
        assert_eq!(s.switches_per_txn, Some(0.5));
        if clock_ticks_per_second() == 100.0 {
            // Provider ticks: 10 per CPU second, 50 ticks = 0.5 s of 5 s.
            assert!((s.provider_share.unwrap() - 0.1).abs() < 1e-9, "{s:?}");
        }
        assert_eq!(s.machine_busy, Some(0.8));
        // 1600 busy jiffies of 2000 = 16 s at 100 Hz; ours: 5 s servers +
        // 2 s sysbench; the other 9 s of 20 s capacity were someone else's.
        if clock_ticks_per_second() == 100.0 {
            assert!((s.other_load.unwrap() - 0.45).abs() < 1e-9, "{s:?}");
        }
        let rows = detail_rows(&before, &after);
        assert!(rows.contains(&"node2\twsrep_local_cert_failures\t7\t10".to_string()));
        assert!(rows.contains(&"node1\tcpu_seconds\t10.00\t13.00".to_string()));
        assert!(rows.contains(&"node1\twsrep_apply_window\t-\t1.2".to_string()));
    }

    #[test]
    fn missing_cpu_means_no_cpu_figure() {
        let mut a = node(1, 0.0, &[]);
        a.cpu_seconds = None;
        let snap = |n: NodeSnapshot| Snapshot {
            at: Instant::now(),
            nodes: vec![n],
            machine: None,
            bench_cpu: None,
        };
        let s = summarize(&snap(a.clone()), &snap(a), 10);
        assert_eq!(s.server_cpu_ms_per_txn, None);
        assert_eq!(s.fc_paused, None);
        assert_eq!(s.machine_busy, None);
    }

    #[test]
    fn proc_files() {
        let stat = "4242 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 30 0";
        assert_eq!(parse_proc_stat_cpu(stat), Some(300));
        let machine = "cpu  100 5 50 800 40 1 2 2 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_machine_jiffies(machine), Some((160, 1000)));
        assert!(process_cpu_seconds(std::process::id()).is_some());
        assert!(machine_jiffies().is_some());
        assert!(own_cpu_seconds().is_some());
    }
}
