//! Acknowledged inserts: writers on every node insert rows of their own,
//! one autocommit `INSERT` each, while nodes are killed under them; every
//! row a client was told had committed must afterwards be on every node,
//! and every node must hold the same rows.
//!
//! A row's id says who wrote it (round, writer, count), so no two inserts
//! conflict and an id on a node that no writer sent is caught. An insert
//! whose connection broke before the answer is in doubt: it may or may
//! not have committed, and is neither required nor refused afterwards.

use super::sql::Session;
use super::{Divergence, Error, Result};
use crate::cluster::{Cluster, Node};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub const DATABASE: &str = "durability";
pub const TABLE: &str = "durability.acked";

/// How often a writer whose node is gone (or not ready) tries again:
/// soon enough to write as soon as it is back, seldom enough not to
/// flood the log of a node that refuses.
const RETRY_EVERY: Duration = Duration::from_millis(100);

/// Bits of an id below the writer's number: 2^32 inserts per writer and
/// round.
const COUNT_BITS: u32 = 32;
/// Bits of an id for the writer's number within a round.
const WRITER_BITS: u32 = 12;

#[derive(Clone, Debug)]
pub struct InsertConfig {
    /// Writer threads per node, each with its own connection.
    pub writers_per_node: usize,
    /// Socket timeout of every statement: a frozen node fails the insert
    /// (in doubt), it does not hang the writer.
    pub statement_timeout: Duration,
}

impl Default for InsertConfig {
    fn default() -> Self {
        InsertConfig { writers_per_node: 2, statement_timeout: Duration::from_secs(10) }
    }
}

/// What the writers of one round were told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acked {
    /// Inserts the server acknowledged.
    pub ids: BTreeSet<u64>,
    /// Inserts whose connection broke before the answer.
    pub in_doubt: u64,
    /// Inserts the server refused (not primary, not ready...).
    pub refused: u64,
}

impl Acked {
    fn merge(&mut self, other: Acked) {
        self.ids.extend(other.ids);
        self.in_doubt += other.in_doubt;
        self.refused += other.refused;
    }
}

/// The table, created on `node` and awaited on every node.
pub fn setup(cluster: &Cluster, node: usize) -> Result<()> {
    let mut s = Session::open(cluster.node(node), Duration::from_secs(60))?;
    s.run(&format!("CREATE DATABASE IF NOT EXISTS {DATABASE}"))?;
    s.run(&format!("CREATE TABLE IF NOT EXISTS {TABLE} (id BIGINT UNSIGNED PRIMARY KEY, node INT NOT NULL) ENGINE=InnoDB"))?;
    for n in cluster.nodes() {
        let mut s = Session::open(n, Duration::from_secs(60))?;
        s.run(&format!("SET SESSION wsrep_sync_wait=1; SELECT COUNT(*) FROM {TABLE}"))?;
    }
    Ok(())
}

/// The id of insert `count` of writer `writer` in round `round`.
pub fn id(round: u32, writer: usize, count: u64) -> u64 {
    assert!(writer < 1 << WRITER_BITS && count < 1 << COUNT_BITS, "id fields overflow");
    ((round as u64) << (COUNT_BITS + WRITER_BITS)) | ((writer as u64) << COUNT_BITS) | count
}

/// Writers on `nodes` (`writers_per_node` each) insert until `stop` is
/// set; what they were told, all writers together.
pub fn write_until(cluster: &Cluster, nodes: &[usize], config: &InsertConfig, round: u32, stop: &AtomicBool) -> Acked {
    let writers: Vec<(usize, Node)> = nodes
        .iter()
        .flat_map(|n| std::iter::repeat_n(*n, config.writers_per_node))
        .enumerate()
        .map(|(w, n)| (w, cluster.node(n)))
        .collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = writers.into_iter().map(|(w, node)| scope.spawn(move || writer(node, w, round, config, stop))).collect();
        let mut all = Acked::default();
        for h in handles {
            all.merge(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        all
    })
}

/// One writer: its own connection, one insert at a time until `stop`.
fn writer(node: Node, w: usize, round: u32, config: &InsertConfig, stop: &AtomicBool) -> Acked {
    let mut out = Acked::default();
    let mut session: Option<Session> = None;
    let mut count = 0;
    while !stop.load(Ordering::Relaxed) {
        let Some(s) = session.as_mut() else {
            session = Session::open(node, config.statement_timeout).ok();
            if session.is_none() {
                std::thread::sleep(RETRY_EVERY);
            }
            continue;
        };
        let id = id(round, w, count);
        count += 1;
        match s.run(&format!("INSERT INTO {TABLE} VALUES ({id}, {})", node.index())) {
            Ok(_) => {
                out.ids.insert(id);
            }
            Err(Error::Statement { source, .. }) if source.sql_code().is_some() => {
                out.refused += 1;
                std::thread::sleep(RETRY_EVERY);
            }
            Err(_) => {
                out.in_doubt += 1;
                session = None;
            }
        }
    }
    out
}

/// The ids a round's writers can have sent: each round is judged by its
/// own rows, so a divergence an earlier round left is not counted again.
fn round_ids(round: u32) -> String {
    format!("id >= {} AND id < {}", id(round, 0, 0), id(round + 1, 0, 0))
}

/// The ids of `round` each node holds, read causally (`wsrep_sync_wait=1`).
pub fn held(cluster: &Cluster, nodes: &[usize], round: u32) -> Result<Vec<(usize, BTreeSet<u64>)>> {
    let sql = format!("SET SESSION wsrep_sync_wait=1; SELECT id FROM {TABLE} WHERE {}", round_ids(round));
    nodes
        .iter()
        .map(|&n| {
            let mut s = Session::open(cluster.node(n), Duration::from_secs(120))?;
            let rows = s.rows(&sql)?;
            let ids = rows.iter().map(|r| s.parse(&sql, &r[0]).map(|v| v as u64)).collect::<Result<BTreeSet<u64>>>()?;
            Ok((n, ids))
        })
        .collect()
}

/// A checksum of `round`'s rows (ids and the node column) on each node:
/// `CHECKSUM TABLE` would cover every round.
pub fn checksums(cluster: &Cluster, nodes: &[usize], round: u32) -> Result<Vec<(usize, String)>> {
    let sql = format!("SELECT CONCAT(COUNT(*), ':', COALESCE(BIT_XOR(CRC32(CONCAT_WS(',', id, node))), 0)) FROM {TABLE} WHERE {}", round_ids(round));
    nodes
        .iter()
        .map(|&n| {
            let mut s = Session::open(cluster.node(n), Duration::from_secs(120))?;
            let rows = s.rows(&sql)?;
            let sum = rows.first().and_then(|r| r.first()).cloned().unwrap_or_default();
            Ok((n, sum))
        })
        .collect()
}

/// Per node, the acknowledged ids it lacks.
pub fn lost(acked: &BTreeSet<u64>, held: &[(usize, BTreeSet<u64>)]) -> Vec<(usize, Vec<u64>)> {
    held.iter().map(|(n, ids)| (*n, acked.difference(ids).copied().collect())).collect()
}

/// What is not as it must be: acknowledged ids missing, nodes that hold
/// different ids, different checksums.
pub fn divergences(acked: &BTreeSet<u64>, held: &[(usize, BTreeSet<u64>)], sums: &[(usize, String)]) -> Vec<Divergence> {
    let mut found = Vec::new();
    for (node, ids) in lost(acked, held) {
        found.extend(ids.into_iter().map(|id| Divergence::Lost { node, transfer: format!("insert {id}") }));
    }
    let all: BTreeSet<u64> = held.iter().flat_map(|(_, ids)| ids.iter().copied()).collect();
    for id in all {
        let by_node: Vec<(usize, Option<String>)> = held.iter().map(|(n, ids)| (*n, ids.contains(&id).then(|| "present".to_string()))).collect();
        if by_node.iter().any(|(_, v)| v.is_none()) && !acked.contains(&id) {
            found.push(Divergence::Row { table: TABLE.into(), key: id as i64, by_node });
        }
    }
    if sums.iter().any(|(_, s)| *s != sums[0].1) {
        found.push(Divergence::Checksum { table: TABLE.into(), by_node: sums.to_vec() });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[u64]) -> BTreeSet<u64> {
        ids.iter().copied().collect()
    }

    #[test]
    fn ids_name_round_writer_and_count_without_overlap() {
        assert_eq!(id(0, 0, 0), 0);
        assert_ne!(id(1, 0, 0), id(0, 1, 0));
        assert_ne!(id(0, 1, 0), id(0, 0, 1));
        assert!(id(3, 2, 7) > id(2, 4095, u32::MAX as u64));
    }

    #[test]
    fn a_lost_acknowledged_insert_and_a_row_on_one_node_only_are_named() {
        let acked = set(&[1, 2, 3]);
        let held = vec![(1, set(&[1, 2, 3, 9])), (2, set(&[1, 3, 9])), (3, set(&[1, 2, 3]))];
        let sums = vec![(1, "a".into()), (2, "b".into()), (3, "a".into())];
        let found = divergences(&acked, &held, &sums);
        let kinds: Vec<&str> = found.iter().map(Divergence::kind).collect();
        assert_eq!(kinds, vec!["lost", "row", "checksum"]);
        assert_eq!(found[0], Divergence::Lost { node: 2, transfer: "insert 2".into() });
        assert_eq!(lost(&acked, &held), vec![(1, vec![]), (2, vec![2]), (3, vec![])]);
    }

    #[test]
    fn in_doubt_rows_on_every_node_are_no_divergence() {
        let held = vec![(1, set(&[1, 5])), (2, set(&[1, 5]))];
        let sums = vec![(1, "a".into()), (2, "a".into())];
        assert!(divergences(&set(&[1]), &held, &sums).is_empty());
    }
}
