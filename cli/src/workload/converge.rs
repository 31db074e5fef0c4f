//! Waiting until the cluster has settled after a load, and the provider's
//! own counters over a run (what Galera or lockstep did to get there).

use super::{Error, Result};
use crate::cluster::{Cluster, Node, ServerVar, StatusVar};
use lockstep_config::Shown;
use std::fmt;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(50);

/// Every node reached the same `wsrep_last_committed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Converged {
    pub seqno: i64,
    /// From the call to the moment all nodes agreed.
    pub waited: Duration,
}

/// Waits until `wsrep_last_committed` is equal on every running node of
/// the cluster. Call it when no client writes any more: then the highest
/// seqno is committed on its origin, and equal everywhere means every node
/// has committed everything. Fails at `timeout` with the last seqno of each
/// node (or why it did not answer).
///
/// Nodes the test stopped (or never started) are left out: they cannot
/// converge, and whether a node must run is the caller's business (the
/// checks that read every node fail on one that is down).
pub fn wait_converged(cluster: &Cluster, timeout: Duration) -> Result<Converged> {
    let started = Instant::now();
    // Bounded by the deadline; each poll is bounded by the status timeout.
    loop {
        let seqnos: Vec<(usize, std::result::Result<i64, String>)> = cluster
            .running_nodes()
            .into_iter()
            .map(|n| (n, last_committed(cluster.node(n))))
            .collect();
        if let Some(seqno) = common_seqno(&seqnos) {
            return Ok(Converged {
                seqno,
                waited: started.elapsed(),
            });
        }
        if started.elapsed() >= timeout {
            return Err(Error::Timeout(format!(
                "{} still differs after {:.1}s: {}",
                StatusVar::LastCommitted.shown(),
                timeout.as_secs_f64(),
                describe(&seqnos)
            )));
        }
        std::thread::sleep(POLL);
    }
}

fn last_committed(node: Node) -> std::result::Result<i64, String> {
    let value = node
        .status_var(StatusVar::LastCommitted)
        .map_err(|e| format!("(no answer: {e})"))?;
    value.parse().map_err(|_| format!("({value:?})"))
}

/// The seqno when every node answered the same one.
fn common_seqno(seqnos: &[(usize, std::result::Result<i64, String>)]) -> Option<i64> {
    let first = *seqnos.first()?.1.as_ref().ok()?;
    seqnos
        .iter()
        .all(|(_, s)| s.as_ref().ok() == Some(&first))
        .then_some(first)
}

fn describe(seqnos: &[(usize, std::result::Result<i64, String>)]) -> String {
    let parts: Vec<String> = seqnos
        .iter()
        .map(|(n, s)| match s {
            Ok(v) => format!("node{n}={v}"),
            Err(e) => format!("node{n}={e}"),
        })
        .collect();
    parts.join(", ")
}

/// The provider's counters on one node that explain a multi-writer run;
/// `None` when the provider does not report the variable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub node: usize,
    /// wsrep_local_cert_failures: local transactions that lost certification.
    pub cert_failures: Option<i64>,
    /// wsrep_local_bf_aborts: local transactions aborted by appliers.
    pub bf_aborts: Option<i64>,
    /// wsrep_local_replays: BF-aborted transactions replayed, not failed.
    pub replays: Option<i64>,
    /// wsrep_flow_control_paused_ns: time replication was paused.
    pub fc_paused_ns: Option<i64>,
    /// wsrep_flow_control_sent: FC_STOP/FC_CONT messages this node sent.
    pub fc_sent: Option<i64>,
    pub last_committed: Option<i64>,
}

/// Every running node's counters now (a node that is down has none; one
/// that starts or stops during a run shows `?` in the run's [`delta`]).
pub fn counters(cluster: &Cluster) -> Result<Vec<Counters>> {
    cluster
        .running_nodes()
        .into_iter()
        .map(|n| node_counters(cluster.node(n)))
        .collect()
}

fn node_counters(node: Node) -> Result<Counters> {
    let status = node.status().map_err(|source| Error::Statement {
        node: node.index(),
        sql: "SHOW GLOBAL STATUS LIKE 'wsrep%'".into(),
        source,
    })?;
    Ok(Counters {
        node: node.index(),
        cert_failures: status.int(StatusVar::LocalCertFailures),
        bf_aborts: status.int(ServerVar::LocalBfAborts),
        replays: status.int(StatusVar::LocalReplays),
        fc_paused_ns: status.int(StatusVar::FlowControlPausedNs),
        fc_sent: status.int(StatusVar::FlowControlSent),
        last_committed: status.int(StatusVar::LastCommitted),
    })
}

/// What changed per node between two readings of [`counters`].
pub fn delta(before: &[Counters], after: &[Counters]) -> Vec<Counters> {
    let sub = |a: Option<i64>, b: Option<i64>| Some(a? - b?);
    after
        .iter()
        .map(|a| {
            let b = before
                .iter()
                .find(|b| b.node == a.node)
                .cloned()
                .unwrap_or_default();
            Counters {
                node: a.node,
                cert_failures: sub(a.cert_failures, b.cert_failures),
                bf_aborts: sub(a.bf_aborts, b.bf_aborts),
                replays: sub(a.replays, b.replays),
                fc_paused_ns: sub(a.fc_paused_ns, b.fc_paused_ns),
                fc_sent: sub(a.fc_sent, b.fc_sent),
                last_committed: sub(a.last_committed, b.last_committed),
            }
        })
        .collect()
}

/// Two runs' [`delta`]s added up per node (unknown where either is).
pub fn sum(first: &[Counters], second: &[Counters]) -> Vec<Counters> {
    let add = |a: Option<i64>, b: Option<i64>| Some(a? + b?);
    let mut nodes: Vec<usize> = first.iter().chain(second).map(|c| c.node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let of = |list: &[Counters], node| {
        let found = list.iter().find(|c| c.node == node).cloned();
        found.unwrap_or(Counters { node, ..Counters::default() })
    };
    nodes
        .into_iter()
        .map(|node| {
            let (a, b) = (of(first, node), of(second, node));
            Counters {
                node,
                cert_failures: add(a.cert_failures, b.cert_failures),
                bf_aborts: add(a.bf_aborts, b.bf_aborts),
                replays: add(a.replays, b.replays),
                fc_paused_ns: add(a.fc_paused_ns, b.fc_paused_ns),
                fc_sent: add(a.fc_sent, b.fc_sent),
                last_committed: add(a.last_committed, b.last_committed),
            }
        })
        .collect()
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: Option<i64>| v.map_or("?".to_string(), |v| v.to_string());
        let paused = self
            .fc_paused_ns
            .map_or("?".to_string(), |ns| format!("{:.2}s", ns as f64 / 1e9));
        write!(
            f,
            "node{}: cert_failures={} bf_aborts={} replays={} fc_paused={paused} fc_sent={} seqnos={}",
            self.node,
            show(self.cert_failures),
            show(self.bf_aborts),
            show(self.replays),
            show(self.fc_sent),
            show(self.last_committed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_needs_every_node() {
        assert_eq!(common_seqno(&[(1, Ok(5)), (2, Ok(5))]), Some(5));
        assert_eq!(common_seqno(&[(1, Ok(5)), (2, Ok(4))]), None);
        assert_eq!(common_seqno(&[(1, Ok(5)), (2, Err("down".into()))]), None);
        assert_eq!(
            describe(&[(1, Ok(5)), (2, Err("(no answer: x)".into()))]),
            "node1=5, node2=(no answer: x)"
        );
    }

    #[test]
    fn deltas_per_node() {
        let at = |n, c| Counters {
            node: n,
            cert_failures: Some(c),
            last_committed: Some(c * 10),
            ..Counters::default()
        };
        let d = delta(&[at(1, 1), at(2, 2)], &[at(1, 4), at(2, 2)]);
        assert_eq!(d[0].cert_failures, Some(3));
        assert_eq!(d[0].last_committed, Some(30));
        assert_eq!(d[1].cert_failures, Some(0));
        assert_eq!(d[1].bf_aborts, None);
        assert!(d[1].to_string().contains("bf_aborts=?"));
        // A node that started during the run has no "before": unknown, not
        // its absolute counters passed off as the run's.
        let d = delta(&[at(1, 1)], &[at(1, 2), at(4, 5)]);
        assert_eq!(d[1].node, 4);
        assert_eq!(d[1].cert_failures, None);
        let total = sum(&[at(1, 1), at(2, 2)], &[at(2, 3), at(3, 4)]);
        let nodes: Vec<usize> = total.iter().map(|c| c.node).collect();
        assert_eq!(nodes, [1, 2, 3]);
        assert_eq!(total[1].cert_failures, Some(5));
        assert_eq!(total[1].last_committed, Some(50));
        assert_eq!(total[0].cert_failures, None);
    }
}
