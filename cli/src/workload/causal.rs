//! Causal reads: a row committed on one node is visible at once on every
//! other node to a read with `wsrep_sync_wait=1` (the read waits until the
//! node has applied everything the cluster had committed when it began).
//! One writer thread per node, all at the same time, so the reads also
//! wait behind the other writers' writesets.

use super::converge;
use super::sql::Session;
use super::{diverged_if_any, on_threads, Bound, Divergence, Latency, Result};
use crate::cluster::{Cluster, Node};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct CausalConfig {
    /// Rows each node's writer inserts (each read back on every other node).
    pub rows_per_node: u32,
    /// `wsrep_sync_wait` of the reading sessions: 1 is the claim under
    /// test; 0 shows how often a plain read is stale (and that the check
    /// can fail).
    pub sync_wait: u32,
    pub statement_timeout: Duration,
}

impl Default for CausalConfig {
    fn default() -> Self {
        CausalConfig {
            rows_per_node: 300,
            sync_wait: 1,
            statement_timeout: Duration::from_secs(60),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct CausalRun {
    pub elapsed: Duration,
    pub rows: u64,
    pub reads: u64,
    /// Latency of a causal read on a node that did not write the row.
    pub read_latency: Latency,
}

impl CausalRun {
    pub fn summary(&self) -> String {
        format!(
            "causal reads: {} rows, {} reads on other nodes in {:.1}s, read latency {}",
            self.rows,
            self.reads,
            self.elapsed.as_secs_f64(),
            self.read_latency
        )
    }
}

/// (Re)creates `causal.t`, runs the writers, and fails with every read
/// that did not see its row.
pub fn run(cluster: &Cluster, config: &CausalConfig) -> Result<CausalRun> {
    setup(cluster, config)?;
    let started = Instant::now();
    // The writers are bounded by their row counts (and each statement by
    // its timeout); `bound` only stops the others early when one fails.
    let bound = Bound::new(Duration::from_secs(24 * 3600), u64::MAX);
    let outcomes = on_threads(cluster, cluster.len(), &bound, |_, node| {
        writer(cluster, node, config, &bound)
    })?;
    let mut run = CausalRun {
        elapsed: started.elapsed(),
        ..CausalRun::default()
    };
    let mut stale = Vec::new();
    let mut latencies = Vec::new();
    for o in outcomes {
        run.rows += o.rows;
        run.reads += o.latencies.len() as u64;
        latencies.extend(o.latencies);
        stale.extend(o.stale);
    }
    run.read_latency = Latency::of(latencies);
    diverged_if_any(stale)?;
    Ok(run)
}

fn setup(cluster: &Cluster, config: &CausalConfig) -> Result<()> {
    let mut s = Session::open(cluster.node(1), config.statement_timeout)?;
    s.run("DROP DATABASE IF EXISTS causal")?;
    s.run("CREATE DATABASE causal")?;
    s.run("CREATE TABLE causal.t (id BIGINT PRIMARY KEY, origin INT NOT NULL)")?;
    converge::wait_converged(cluster, config.statement_timeout)?;
    Ok(())
}

struct WriterOutcome {
    rows: u64,
    latencies: Vec<Duration>,
    stale: Vec<Divergence>,
}

/// Inserts rows on `node`; after each commit, reads the row on every
/// other node through a session with `config.sync_wait`.
fn writer(
    cluster: &Cluster,
    node: Node,
    config: &CausalConfig,
    bound: &Bound,
) -> Result<WriterOutcome> {
    let mut write = Session::open(node, config.statement_timeout)?;
    let mut readers = Vec::new();
    for other in cluster.nodes().filter(|n| n.index() != node.index()) {
        let mut s = Session::open(other, config.statement_timeout)?;
        s.run(&format!(
            "SET SESSION wsrep_sync_wait = {}",
            config.sync_wait
        ))?;
        readers.push(s);
    }
    let mut out = WriterOutcome {
        rows: 0,
        latencies: Vec::new(),
        stale: Vec::new(),
    };
    for i in (0..config.rows_per_node).take_while(|_| !bound.reached()) {
        // Ids do not overlap between writers: no conflicts, no aborts.
        let id = node.index() as u64 * 1_000_000 + i as u64;
        write.run(&format!(
            "INSERT INTO causal.t (id, origin) VALUES ({id}, {})",
            node.index()
        ))?;
        out.rows += 1;
        for reader in &mut readers {
            read_back(reader, node.index(), id, config.sync_wait, &mut out)?;
        }
    }
    Ok(out)
}

fn read_back(
    reader: &mut Session,
    writer: usize,
    id: u64,
    sync_wait: u32,
    out: &mut WriterOutcome,
) -> Result<()> {
    let started = Instant::now();
    let rows = reader.rows(&format!("SELECT origin FROM causal.t WHERE id = {id}"))?;
    out.latencies.push(started.elapsed());
    if rows != [[writer.to_string()]] {
        out.stale.push(Divergence::StaleRead {
            writer,
            reader: reader.node,
            what: format!("causal.t id={id} (wsrep_sync_wait={sync_wait} read {rows:?})"),
        });
    }
    Ok(())
}
