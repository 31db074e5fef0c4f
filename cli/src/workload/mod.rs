//! Multi-writer correctness workloads: load on every node of a running
//! [`Cluster`], then checks that the nodes agree with each other and with
//! what the clients were told.
//!
//! - [`bank`]: random transfers between accounts from workers on all nodes;
//!   the total never changes, every node holds the same rows, every
//!   transfer a client saw committed is on every node and every transfer a
//!   client saw aborted is on none;
//! - [`hot_row`]: conflicting autocommit increments of one row from all
//!   nodes; the final value is the number of increments that succeeded;
//! - [`causal`]: a row committed on one node is visible on every other
//!   node to a read with `wsrep_sync_wait=1`;
//! - [`inserts`]: autocommit inserts of rows of their own from every node
//!   while nodes are killed; every acknowledged insert is on every node;
//! - [`list_append`]: Jepsen's list-append transactions, recorded as a
//!   history for `check::elle` (its own error rules: any error aborts);
//! - [`converge`]: waiting until every node has committed the same seqno,
//!   and the provider's own counters (cert failures, BF aborts, flow
//!   control) over a run.
//!
//! The rules every workload follows: ER_LOCK_DEADLOCK (1213) is the one
//! error a multi-writer cluster may answer (certification failure or
//! brute-force abort) and is counted, never hidden; any other error stops
//! the workload with the node, the statement and the server's answer. Every
//! loop is bounded by a deadline and a count, every wait by a timeout.
//! The checks are pure functions over per-node snapshots, so each one is
//! unit-tested with fabricated divergences.
//!
//! Written against real Galera first (the referee), so the same workloads
//! can judge lockstep once it forms multi-node clusters.

pub mod bank;
pub mod causal;
pub mod converge;
pub mod hot_row;
pub mod inserts;
pub mod list_append;
mod rng;
mod sql;

pub use rng::Rng;

use crate::cluster::{self, Cluster, Node};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Why a workload or a check failed.
#[derive(Debug)]
pub enum Error {
    /// A statement got an error other than a retryable ER_LOCK_DEADLOCK
    /// (or could not be sent: no connection, socket timeout).
    Statement {
        node: usize,
        sql: String,
        source: cluster::Error,
    },
    /// The server answered, but not with the shape the workload needs
    /// (a missing account, a count that is not a number ...).
    Unexpected {
        node: usize,
        sql: String,
        what: String,
    },
    /// A wait ran out of time; the text says what was awaited and what was
    /// seen last.
    Timeout(String),
    /// The nodes disagree with each other or with what clients were told.
    Diverged(Vec<Divergence>),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// ER_LOCK_DEADLOCK from the server: the transaction was rolled back
    /// (certification failure or brute-force abort) and may be retried.
    pub fn is_deadlock(&self) -> bool {
        matches!(self, Error::Statement { source, .. } if source.is_deadlock())
    }

    /// The divergences when the checks failed, else empty.
    pub fn divergences(&self) -> &[Divergence] {
        match self {
            Error::Diverged(list) => list,
            _ => &[],
        }
    }
}

/// At most this many divergences are spelled out in an error message: the
/// first ones tell what went wrong, a thousand more only bury them.
const SHOWN_DIVERGENCES: usize = 20;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Statement { node, sql, source } => {
                write!(f, "node{node}: `{sql}` failed: {source}")
            }
            Error::Unexpected { node, sql, what } => write!(f, "node{node}: `{sql}`: {what}"),
            Error::Timeout(text) => f.write_str(text),
            Error::Diverged(list) => write_divergences(f, list),
        }
    }
}

fn write_divergences(f: &mut fmt::Formatter<'_>, list: &[Divergence]) -> fmt::Result {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for d in list {
        *kinds.entry(d.kind()).or_default() += 1;
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    write!(f, "{} divergence(s) ({}):", list.len(), kinds.join(", "))?;
    for d in list.iter().take(SHOWN_DIVERGENCES) {
        write!(f, "\n  - {d}")?;
    }
    if list.len() > SHOWN_DIVERGENCES {
        write!(f, "\n  ... and {} more", list.len() - SHOWN_DIVERGENCES)?;
    }
    Ok(())
}

impl std::error::Error for Error {}

/// One thing that is not as it must be. Each variant names the node(s),
/// the table, what was expected and what was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Divergence {
    /// `CHECKSUM TABLE` gave different answers on different nodes.
    Checksum {
        table: String,
        by_node: Vec<(usize, String)>,
    },
    /// One row (by primary key) differs between nodes; `None` is absent.
    Row {
        table: String,
        key: i64,
        by_node: Vec<(usize, Option<String>)>,
    },
    /// An aggregate on one node is not what it must be.
    Value {
        node: usize,
        what: String,
        expected: String,
        got: String,
    },
    /// A transfer the client saw committed is not on `node`.
    Lost { node: usize, transfer: String },
    /// A transfer the client was told had failed (ER_LOCK_DEADLOCK) is on
    /// `node`: the server lied about an abort.
    AbortedButPresent { node: usize, transfer: String },
    /// A row on `node` that no client wrote (or heard of).
    Unknown {
        node: usize,
        table: String,
        key: i64,
    },
    /// A committed write was not visible to a later read on another node;
    /// `what` names the row and how it was read.
    StaleRead {
        writer: usize,
        reader: usize,
        what: String,
    },
}

impl Divergence {
    /// A short name of the variant, for the count by kind in a report.
    pub fn kind(&self) -> &'static str {
        match self {
            Divergence::Checksum { .. } => "checksum",
            Divergence::Row { .. } => "row",
            Divergence::Value { .. } => "value",
            Divergence::Lost { .. } => "lost",
            Divergence::AbortedButPresent { .. } => "aborted-but-present",
            Divergence::Unknown { .. } => "unknown",
            Divergence::StaleRead { .. } => "stale-read",
        }
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Divergence::Checksum { table, by_node } => {
                write!(
                    f,
                    "CHECKSUM TABLE {table} differs: {}",
                    by_node_text(by_node)
                )
            }
            Divergence::Row {
                table,
                key,
                by_node,
            } => {
                let cells: Vec<(usize, String)> = by_node
                    .iter()
                    .map(|(n, v)| (*n, v.clone().unwrap_or_else(|| "(no row)".into())))
                    .collect();
                write!(f, "{table} id={key} differs: {}", by_node_text(&cells))
            }
            Divergence::Value {
                node,
                what,
                expected,
                got,
            } => write!(f, "node{node}: {what} = {got}, expected {expected}"),
            Divergence::Lost { node, transfer } => write!(
                f,
                "node{node}: {transfer} was acknowledged as committed but is missing"
            ),
            Divergence::AbortedButPresent { node, transfer } => write!(
                f,
                "node{node}: {transfer} is present although its client got ER_LOCK_DEADLOCK"
            ),
            Divergence::Unknown { node, table, key } => write!(
                f,
                "node{node}: {table} id={key} exists but no client wrote it"
            ),
            Divergence::StaleRead {
                writer,
                reader,
                what,
            } => write!(
                f,
                "node{reader}: {what}, committed on node{writer}, was not visible \
                 to a read that began after the commit"
            ),
        }
    }
}

/// `node1=a, node2=a, node3=b`
fn by_node_text(by_node: &[(usize, String)]) -> String {
    let parts: Vec<String> = by_node
        .iter()
        .map(|(n, v)| format!("node{n}={v}"))
        .collect();
    parts.join(", ")
}

/// Node `i % nodes + 1` for worker `i`: workers spread evenly, node 1 first.
pub fn node_of_worker(cluster: &Cluster, worker: usize) -> usize {
    worker % cluster.len() + 1
}

/// The nodes a workload runs on: `nodes` when given, else all nodes
/// 1..=`cluster_len`; an error naming the first node the cluster does not
/// have (a workload configured for a bigger cluster than it runs on).
fn nodes_to_use(cluster_len: usize, nodes: &[usize]) -> Result<Vec<usize>> {
    if nodes.is_empty() {
        return Ok((1..=cluster_len).collect());
    }
    match nodes.iter().find(|n| !(1..=cluster_len).contains(*n)) {
        Some(bad) => Err(Error::Unexpected {
            node: *bad,
            sql: "(workload configuration)".into(),
            what: format!("node{bad} is not in this cluster of {cluster_len} nodes"),
        }),
        None => Ok(nodes.to_vec()),
    }
}

/// One divergence per key whose row is not the same on every node
/// (`per_node`: node, then key to the row as text).
fn rows_agree(table: &str, per_node: &[(usize, BTreeMap<i64, String>)]) -> Vec<Divergence> {
    let keys: BTreeSet<i64> = per_node
        .iter()
        .flat_map(|(_, rows)| rows.keys().copied())
        .collect();
    let mut found = Vec::new();
    for key in keys {
        let by_node: Vec<(usize, Option<String>)> = per_node
            .iter()
            .map(|(node, rows)| (*node, rows.get(&key).cloned()))
            .collect();
        if by_node.iter().any(|(_, v)| *v != by_node[0].1) {
            found.push(Divergence::Row {
                table: table.to_string(),
                key,
                by_node,
            });
        }
    }
    found
}

/// When a run of several threads stops: at the deadline, after `max`
/// successes, as soon as one thread failed, or when the caller's `stop`
/// flag is set (a load that lasts until something else happened, still
/// bounded by the deadline).
struct Bound<'a> {
    deadline: Instant,
    max: u64,
    done: AtomicU64,
    failed: AtomicBool,
    stop: Option<&'a AtomicBool>,
}

impl Bound<'static> {
    fn new(duration: Duration, max: u64) -> Bound<'static> {
        Bound {
            deadline: Instant::now() + duration,
            max,
            done: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            stop: None,
        }
    }
}

impl<'a> Bound<'a> {
    fn or_when(self, stop: &'a AtomicBool) -> Bound<'a> {
        Bound {
            stop: Some(stop),
            ..self
        }
    }

    fn reached(&self) -> bool {
        Instant::now() >= self.deadline
            || self.done.load(Ordering::Relaxed) >= self.max
            || self.failed.load(Ordering::Relaxed)
            || self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    fn success(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `body(thread, node)` on `threads` threads, thread `i` on node
/// [`node_of_worker`]`(i)`; a thread that fails stops the others (through
/// `bound`). The first error, or every thread's result in thread order.
fn on_threads<T: Send>(
    cluster: &Cluster,
    threads: usize,
    bound: &Bound,
    body: impl Fn(usize, Node) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let all: Vec<usize> = (1..=cluster.len()).collect();
    on_nodes(cluster, &all, threads, bound, body)
}

/// [`on_threads`] over some nodes only: thread `i` on `nodes[i % len]`.
/// `nodes` must be non-empty and name nodes of the cluster (see
/// [`nodes_to_use`]).
fn on_nodes<T: Send>(
    cluster: &Cluster,
    nodes: &[usize],
    threads: usize,
    bound: &Bound,
    body: impl Fn(usize, Node) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let body = &body;
    let results: Vec<Result<T>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let node = cluster.node(nodes[i % nodes.len()]);
                scope.spawn(move || {
                    let result = body(i, node);
                    if result.is_err() {
                        bound.failed.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        // A thread that panicked is a bug in the workload: pass it on.
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.into_iter().collect()
}

/// Commit latencies summarised.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Latency {
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Latency {
    pub fn of(mut samples: Vec<Duration>) -> Latency {
        if samples.is_empty() {
            return Latency::default();
        }
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Latency {
            p50: at(0.50),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

impl Latency {
    /// Each percentile the higher of the two: a bound for two runs taken
    /// together when their samples are gone.
    pub fn worse(&self, other: &Latency) -> Latency {
        Latency {
            p50: self.p50.max(other.p50),
            p99: self.p99.max(other.p99),
            max: self.max.max(other.max),
        }
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "p50 {:.1}ms p99 {:.1}ms max {:.1}ms",
            ms(self.p50),
            ms(self.p99),
            ms(self.max)
        )
    }
}

/// Fails with every divergence when there is any.
fn diverged_if_any(list: Vec<Divergence>) -> Result<()> {
    if list.is_empty() {
        Ok(())
    } else {
        Err(Error::Diverged(list))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divergences_read_as_sentences() {
        let d = Divergence::Checksum {
            table: "bank.accounts".into(),
            by_node: vec![(1, "11".into()), (2, "11".into()), (3, "12".into())],
        };
        assert_eq!(
            d.to_string(),
            "CHECKSUM TABLE bank.accounts differs: node1=11, node2=11, node3=12"
        );
        let d = Divergence::Row {
            table: "bank.log".into(),
            key: 7,
            by_node: vec![(1, Some("a".into())), (2, None)],
        };
        assert_eq!(
            d.to_string(),
            "bank.log id=7 differs: node1=a, node2=(no row)"
        );
    }

    #[test]
    fn long_lists_are_cut() {
        let one = Divergence::Unknown {
            node: 1,
            table: "t".into(),
            key: 1,
        };
        let text = Error::Diverged(vec![one; 25]).to_string();
        assert!(text.starts_with("25 divergence(s) (unknown 25):"), "{text}");
        assert!(text.ends_with("... and 5 more"), "{text}");
        assert_eq!(text.matches("\n  - ").count(), SHOWN_DIVERGENCES);
    }

    #[test]
    fn rows_agree_names_the_odd_node() {
        let rows = |v: &str| BTreeMap::from([(1, "a".to_string()), (2, v.to_string())]);
        let mut odd = rows("b");
        odd.remove(&1);
        let found = rows_agree("t", &[(1, rows("b")), (2, rows("b")), (3, odd)]);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].to_string(),
            "t id=1 differs: node1=a, node2=a, node3=(no row)"
        );
    }

    #[test]
    fn workload_nodes_default_to_all_and_must_exist() {
        assert_eq!(nodes_to_use(3, &[]).unwrap(), [1, 2, 3]);
        assert_eq!(nodes_to_use(4, &[4, 2]).unwrap(), [4, 2]);
        let err = nodes_to_use(3, &[1, 4]).unwrap_err().to_string();
        assert_eq!(
            err,
            "node4: `(workload configuration)`: node4 is not in this cluster of 3 nodes"
        );
        assert!(nodes_to_use(3, &[0]).is_err());
    }

    #[test]
    fn latency_percentiles() {
        let l = Latency::of((1..=100).map(Duration::from_millis).collect());
        assert_eq!(l.p50, Duration::from_millis(51));
        assert_eq!(l.p99, Duration::from_millis(99));
        assert_eq!(l.max, Duration::from_millis(100));
        assert_eq!(Latency::of(Vec::new()), Latency::default());
        assert_eq!(l.to_string(), "p50 51.0ms p99 99.0ms max 100.0ms");
    }

    #[test]
    fn only_statement_deadlocks_are_retryable() {
        let deadlock = cluster::Error::Sql {
            code: 1213,
            state: "40001".into(),
            message: "Deadlock found".into(),
        };
        let err = Error::Statement {
            node: 2,
            sql: "COMMIT".into(),
            source: deadlock,
        };
        assert!(err.is_deadlock());
        assert_eq!(
            err.to_string(),
            "node2: `COMMIT` failed: ERROR 1213 (40001): Deadlock found"
        );
        assert!(!Error::Timeout("x".into()).is_deadlock());
    }
}
