//! One hot row: every thread on every node runs the autocommit statement
//! `UPDATE hot.counter SET v = v + 1 WHERE id = 1` as fast as it can. Each
//! statement either succeeds (then it was applied exactly once) or gets
//! ER_LOCK_DEADLOCK (then it was not applied at all). The server itself
//! retries a conflicting autocommit statement `wsrep_retry_autocommit`
//! times before it answers 1213, so a success may hide retries, never a
//! double apply: afterwards every node holds v = number of successes.

use super::converge::{self, Converged, Counters};
use super::sql::Session;
use super::{diverged_if_any, on_threads, rows_agree, Bound, Divergence, Result};
use crate::cluster::{Cluster, Node};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const UPDATE_SQL: &str = "UPDATE hot.counter SET v = v + 1 WHERE id = 1";
const READ_SQL: &str = "SELECT v FROM hot.counter WHERE id = 1";

#[derive(Clone, Debug)]
pub struct HotRowConfig {
    /// Threads on each node, each with its own connection.
    pub threads_per_node: usize,
    /// The run stops at this time ...
    pub duration: Duration,
    /// ... or after this many successful updates, whichever is first.
    pub max_updates: u64,
    pub statement_timeout: Duration,
}

impl Default for HotRowConfig {
    fn default() -> Self {
        HotRowConfig {
            threads_per_node: 3,
            duration: Duration::from_secs(15),
            max_updates: 1_000_000,
            statement_timeout: Duration::from_secs(60),
        }
    }
}

/// What the clients of one node saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HotRowCounts {
    pub node: usize,
    pub threads: usize,
    pub succeeded: u64,
    pub deadlocks: u64,
    /// `@@wsrep_retry_autocommit` of the node: how often the server retried
    /// a statement before answering 1213.
    pub retry_autocommit: i64,
}

#[derive(Clone, Debug, Default)]
pub struct HotRowRun {
    pub elapsed: Duration,
    pub per_node: Vec<HotRowCounts>,
    pub counters: Vec<Counters>,
}

impl HotRowRun {
    pub fn succeeded(&self) -> u64 {
        self.per_node.iter().map(|n| n.succeeded).sum()
    }

    pub fn deadlocks(&self) -> u64 {
        self.per_node.iter().map(|n| n.deadlocks).sum()
    }

    pub fn summary(&self) -> String {
        let attempts = (self.succeeded() + self.deadlocks()).max(1);
        let mut text = format!(
            "hot row: {} updates succeeded in {:.1}s ({:.1}/s), {} got ER_LOCK_DEADLOCK ({:.1}%)",
            self.succeeded(),
            self.elapsed.as_secs_f64(),
            self.succeeded() as f64 / self.elapsed.as_secs_f64().max(1e-9),
            self.deadlocks(),
            self.deadlocks() as f64 * 100.0 / attempts as f64
        );
        for n in &self.per_node {
            text.push_str(&format!(
                "\n  node{}: {} threads, {} succeeded, {} deadlocks (wsrep_retry_autocommit={})",
                n.node, n.threads, n.succeeded, n.deadlocks, n.retry_autocommit
            ));
        }
        for c in &self.counters {
            text.push_str(&format!("\n  {c}"));
        }
        text
    }
}

/// (Re)creates `hot.counter` with the row (1, 0), on node 1, and waits
/// until every node has it.
pub fn setup(cluster: &Cluster, config: &HotRowConfig) -> Result<()> {
    let mut s = Session::open(cluster.node(1), config.statement_timeout)?;
    s.run("DROP DATABASE IF EXISTS hot")?;
    s.run("CREATE DATABASE hot")?;
    s.run("CREATE TABLE hot.counter (id INT PRIMARY KEY, v BIGINT NOT NULL)")?;
    s.run("INSERT INTO hot.counter VALUES (1, 0)")?;
    converge::wait_converged(cluster, config.statement_timeout)?;
    Ok(())
}

/// Runs the updates until the deadline or `max_updates` successes.
pub fn run(cluster: &Cluster, config: &HotRowConfig) -> Result<HotRowRun> {
    let before = converge::counters(cluster)?;
    let started = Instant::now();
    let bound = Bound::new(config.duration, config.max_updates);
    let threads = config.threads_per_node * cluster.len();
    let outcomes = on_threads(cluster, threads, &bound, |_, node| {
        updates(node, config, &bound)
    })?;
    let elapsed = started.elapsed();
    let after = converge::counters(cluster)?;
    let mut per_node: Vec<HotRowCounts> = Vec::new();
    for o in outcomes {
        match per_node.iter_mut().find(|n| n.node == o.node) {
            Some(n) => {
                n.threads += 1;
                n.succeeded += o.succeeded;
                n.deadlocks += o.deadlocks;
            }
            None => per_node.push(HotRowCounts { threads: 1, ..o }),
        }
    }
    per_node.sort_by_key(|n| n.node);
    Ok(HotRowRun {
        elapsed,
        per_node,
        counters: converge::delta(&before, &after),
    })
}

/// One thread's loop on `node`.
fn updates(node: Node, config: &HotRowConfig, bound: &Bound) -> Result<HotRowCounts> {
    let mut s = Session::open(node, config.statement_timeout)?;
    let mut counts = HotRowCounts {
        node: node.index(),
        retry_autocommit: s.int("SELECT @@wsrep_retry_autocommit")?,
        ..HotRowCounts::default()
    };
    // Bounded by the deadline and the count in `bound`.
    while !bound.reached() {
        match s.run(UPDATE_SQL) {
            Ok(result) if result.affected_rows == 1 => {
                counts.succeeded += 1;
                bound.success();
            }
            Ok(result) => {
                let what = format!("{} rows changed, expected 1", result.affected_rows);
                return Err(s.unexpected(UPDATE_SQL, what));
            }
            Err(e) if e.is_deadlock() => counts.deadlocks += 1,
            Err(e) => return Err(e),
        }
    }
    Ok(counts)
}

/// Every check passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotRowCheck {
    pub converged: Converged,
    pub value: i64,
}

/// Waits until every node has committed the same seqno, reads the row on
/// every node (causal read), and verifies.
pub fn check(cluster: &Cluster, run: &HotRowRun, timeout: Duration) -> Result<HotRowCheck> {
    let converged = converge::wait_converged(cluster, timeout)?;
    let values = cluster
        .nodes()
        .map(|n| read_value(n, timeout).map(|v| (n.index(), v)))
        .collect::<Result<Vec<_>>>()?;
    diverged_if_any(verify(run, &values))?;
    Ok(HotRowCheck {
        converged,
        value: run.succeeded() as i64,
    })
}

fn read_value(node: Node, timeout: Duration) -> Result<Option<i64>> {
    let mut s = Session::open(node, timeout)?;
    s.run("SET SESSION wsrep_sync_wait = 1")?;
    let rows = s.rows(READ_SQL)?;
    match rows.first().and_then(|r| r.first()) {
        Some(cell) => Ok(Some(s.parse(READ_SQL, cell)?)),
        None => Ok(None),
    }
}

/// The nodes agree on the row, and its value is the number of successful
/// updates. `values`: node and its `v` (None: no row).
pub fn verify(run: &HotRowRun, values: &[(usize, Option<i64>)]) -> Vec<Divergence> {
    let rows: Vec<(usize, BTreeMap<i64, String>)> = values
        .iter()
        .map(|(node, v)| (*node, v.iter().map(|v| (1, format!("v {v}"))).collect()))
        .collect();
    let mut found = rows_agree("hot.counter", &rows);
    let per_node: Vec<String> = run
        .per_node
        .iter()
        .map(|n| format!("node{} {}", n.node, n.succeeded))
        .collect();
    let expected = format!(
        "{} (successful UPDATEs: {})",
        run.succeeded(),
        per_node.join(", ")
    );
    for (node, v) in values {
        if *v != Some(run.succeeded() as i64) {
            found.push(Divergence::Value {
                node: *node,
                what: "v of hot.counter id=1".into(),
                expected: expected.clone(),
                got: v.map_or("(no row)".into(), |v| v.to_string()),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(succeeded: [u64; 3]) -> HotRowRun {
        HotRowRun {
            per_node: (0..3)
                .map(|i| HotRowCounts {
                    node: i + 1,
                    threads: 3,
                    succeeded: succeeded[i],
                    deadlocks: 7,
                    retry_autocommit: 1,
                })
                .collect(),
            ..HotRowRun::default()
        }
    }

    #[test]
    fn agreeing_nodes_with_the_right_value_pass() {
        let run = run_of([10, 20, 30]);
        assert_eq!(
            verify(&run, &[(1, Some(60)), (2, Some(60)), (3, Some(60))]),
            []
        );
        assert!(run.summary().contains("60 updates succeeded"));
    }

    #[test]
    fn a_double_apply_and_a_divergent_node() {
        let run = run_of([10, 20, 30]);
        let found: Vec<String> = verify(&run, &[(1, Some(61)), (2, Some(61)), (3, None)])
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert_eq!(
            found,
            [
                "hot.counter id=1 differs: node1=v 61, node2=v 61, node3=(no row)",
                "node1: v of hot.counter id=1 = 61, expected 60 (successful UPDATEs: node1 10, node2 20, node3 30)",
                "node2: v of hot.counter id=1 = 61, expected 60 (successful UPDATEs: node1 10, node2 20, node3 30)",
                "node3: v of hot.counter id=1 = (no row), expected 60 (successful UPDATEs: node1 10, node2 20, node3 30)",
            ]
        );
    }
}
