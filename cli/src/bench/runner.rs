//! The run itself: for each provider a fresh cluster, the data, every
//! cell, then the cluster goes down. A provider that fails (today:
//! lockstep cannot form a 3-node cluster) yields "n/a (reason)" cells and
//! the run goes on with the next one.

use super::counters::{self, Summary};
use super::follower_delay::{Delays, Probe};
use super::plan::{BenchSpec, Cell, Target};
use super::sysbench::{self, Invocation, SysbenchResult};
use super::wan::DelayProxy;
use crate::cluster::{Cluster, Error, Phase, Result, ServerVar, StatusVar};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the cluster may take to apply what a cell left queued.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(180);
/// A sysbench run may overrun --time by this much (flow-control stalls,
/// thread shutdown) before it is killed.
const SYSBENCH_GRACE: Duration = Duration::from_secs(120);
const PREPARE_TIMEOUT: Duration = Duration::from_secs(900);
const POLL: Duration = Duration::from_millis(200);

/// The result of one provider over the whole matrix.
#[derive(Debug)]
pub struct ProviderRun {
    pub label: String,
    /// Set when no cell could run (cluster start or data load failed).
    pub setup_error: Option<String>,
    /// One per cell of [`BenchSpec::cells`], same order.
    pub cells: Vec<CellOutcome>,
    /// Start-up and prepare times, stop problems: context for the reader.
    pub notes: Vec<String>,
}

#[derive(Debug)]
pub enum CellOutcome {
    Measured {
        sysbench: SysbenchResult,
        counters: Box<Summary>,
    },
    /// Why this provider has no number for this cell.
    Failed(String),
}

/// Runs every provider in turn; `log` receives progress lines.
pub fn run(spec: &BenchSpec, log: &mut dyn FnMut(&str)) -> Vec<ProviderRun> {
    (0..spec.providers.len())
        .map(|index| run_provider(spec, index, log))
        .collect()
}

fn run_provider(spec: &BenchSpec, index: usize, log: &mut dyn FnMut(&str)) -> ProviderRun {
    let label = spec.provider_slug(index);
    let cells = spec.cells();
    let mut run = ProviderRun {
        label: label.clone(),
        setup_error: None,
        cells: Vec::new(),
        notes: Vec::new(),
    };
    let mut say = |text: &str| log(&format!("[{label}] {text}"));
    let setup = set_up(spec, index, &mut say, &mut run.notes);
    let (cluster, proxy) = match setup {
        Ok(ready) => ready,
        Err(e) => {
            let reason = record_failure(&spec.provider_dir(index), &e);
            say(&format!("n/a: {reason}"));
            run.cells = cells
                .iter()
                .map(|_| CellOutcome::Failed(reason.clone()))
                .collect();
            run.setup_error = Some(reason);
            return run;
        }
    };
    let mut broken: Option<String> = None;
    for cell in &cells {
        let crossed = proxy.as_ref().map(DelayProxy::crossed);
        let (outcome, stuck) = match &broken {
            Some(reason) => (CellOutcome::Failed(reason.clone()), false),
            None => measure(spec, index, &cluster, cell, &mut say),
        };
        if let (Some(before), Some(p), CellOutcome::Measured { sysbench, .. }) = (crossed, &proxy, &outcome) {
            // Warmup included: it crosses too, and sysbench counts only
            // the measured part, so this errs high.
            let per = (p.crossed() - before) as f64 / sysbench.transactions.max(1) as f64;
            run.notes.push(format!("{}: {:.0} bytes crossed the WAN proxy per transaction (warmup included)", cell.slug(), per));
        }
        if let CellOutcome::Failed(reason) = &outcome {
            // A stuck cluster would make every later cell wait out the
            // same timeouts: give up on this provider instead.
            if broken.is_none() && (stuck || !healthy(&cluster, spec.nodes)) {
                broken = Some(format!("cluster broken earlier: {reason}"));
            }
        }
        run.cells.push(outcome);
    }
    if let Some(proxy) = &proxy {
        run.notes
            .push(format!("WAN proxy carried: {}", proxy.links()));
    }
    for report in cluster.stop_all() {
        if let Err(e) = report.result {
            run.notes.push(format!("stopping node{}: {e}", report.node));
        }
    }
    say("cluster stopped");
    drop_data(spec, &cluster, &mut say);
    run
}

/// Once a cluster is stopped, its data directories go unless asked to
/// stay: 1-5 GB per provider and run, and a few runs filled a disk.
fn drop_data(spec: &BenchSpec, cluster: &Cluster, say: &mut dyn FnMut(&str)) {
    if spec.keep_data {
        return;
    }
    for node in 1..=cluster.len() {
        let data = cluster.spec().paths(node).datadir;
        if let Err(e) = std::fs::remove_dir_all(&data) {
            say(&format!("could not remove {}: {e}", data.display()));
        }
    }
}

/// A running cluster with the sysbench tables on every node (and the WAN
/// proxy when asked for; it must outlive the cluster's use).
fn set_up(
    spec: &BenchSpec,
    index: usize,
    say: &mut dyn FnMut(&str),
    notes: &mut Vec<String>,
) -> Result<(Cluster, Option<DelayProxy>)> {
    let dir = spec.provider_dir(index);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    let mut cluster_spec = spec.cluster_spec(index);
    let proxy = match spec.wan_delay_ms {
        Some(ms) => Some(super::wan::wire(&mut cluster_spec, ms, |n| spec.wan_side(n))?),
        None => None,
    };
    say(&format!(
        "starting {} nodes in {} (ports from {})",
        spec.nodes,
        cluster_spec.dir.display(),
        cluster_spec.base_port
    ));
    let started = Instant::now();
    let mut proxy_error = None;
    let mut listening = std::collections::BTreeSet::new();
    let cluster = Cluster::up_with_progress(cluster_spec, &mut |node, phase| match phase {
        // The proxy for a node listens once the launcher has checked the
        // node's ports and started it (see wan.rs). Node 1's waits for
        // node 2's launch: node 1 starts twice (it seeds the others'
        // datadirs in between), and its second start checks its ports,
        // which a proxy would hold. Nobody connects to it before.
        Phase::Launched { .. } if node > 1 => {
            let new: Vec<usize> = (1..=node).filter(|n| listening.insert(*n)).collect();
            if let Some(Err(e)) = proxy.as_ref().map(|p| new.iter().try_for_each(|n| p.listen(*n))) {
                proxy_error.get_or_insert(e);
            }
        }
        Phase::Synced { elapsed } => say(&format!(
            "node{node} Synced in {:.1}s",
            elapsed.as_secs_f64()
        )),
        _ => {}
    });
    if let Some(e) = proxy_error {
        return Err(e);
    }
    let cluster = cluster?;
    notes.push(format!(
        "{} nodes Synced in {:.0}s",
        spec.nodes,
        started.elapsed().as_secs_f64()
    ));
    if let Some(p) = &proxy {
        say(&p.describe());
        notes.push(p.describe());
    }
    let loaded = Instant::now();
    prepare_data(spec, &cluster, &dir)?;
    let text = format!(
        "{} tables x {} rows loaded on node1 and present on all nodes in {:.0}s",
        spec.tables,
        spec.table_size,
        loaded.elapsed().as_secs_f64()
    );
    say(&text);
    notes.push(text);
    Ok((cluster, proxy))
}

/// `sysbench prepare` on node 1, then proof that every node has it all.
fn prepare_data(spec: &BenchSpec, cluster: &Cluster, dir: &Path) -> Result<()> {
    cluster
        .node(1)
        .sql("CREATE DATABASE IF NOT EXISTS sbtest")?;
    let prepare = Invocation {
        test: spec.tests[0].clone(),
        command: "prepare",
        sockets: vec![cluster.node(1).socket()],
        // sysbench loads one table per thread.
        threads: spec.tables.min(4),
        seconds: 0,
        tables: spec.tables,
        table_size: spec.table_size,
    };
    prepare.run(&dir.join("prepare.txt"), PREPARE_TIMEOUT)?;
    wait_settled(cluster, PREPARE_TIMEOUT)?;
    let last_table = format!("sbtest.sbtest{}", spec.tables);
    for node in cluster.nodes() {
        // wsrep_sync_wait=1: the read waits until the node applied
        // everything committed before it, whatever the provider.
        let rows = node.sql(&format!(
            "SET SESSION wsrep_sync_wait=1; SELECT COUNT(*) FROM {last_table}"
        ))?;
        let count = rows
            .first()
            .and_then(|r| r.first())
            .cloned()
            .unwrap_or_default();
        if count != spec.table_size.to_string() {
            return Err(Error::msg(format!(
                "{} has {count} rows in {last_table}, expected {}",
                node.name(),
                spec.table_size
            )));
        }
    }
    Ok(())
}

/// Waits until every node has applied everything (equal
/// wsrep_last_committed, empty receive queue), so a cell starts from a
/// quiet cluster and does not pay for the previous one's backlog.
fn wait_settled(cluster: &Cluster, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut seen = Vec::new();
        for node in cluster.nodes() {
            let status = node.status()?;
            let seqno = status.int(StatusVar::LastCommitted);
            let queue = status.int(StatusVar::LocalRecvQueue).unwrap_or(0);
            seen.push((seqno, queue));
        }
        let first = seen[0].0;
        if first.is_some() && seen.iter().all(|(s, q)| *s == first && *q == 0) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "nodes did not converge within {}s (last_committed/recv_queue: {})",
                timeout.as_secs(),
                describe_positions(&seen)
            )));
        }
        std::thread::sleep(POLL);
    }
}

fn describe_positions(seen: &[(Option<i64>, i64)]) -> String {
    let parts: Vec<String> = seen
        .iter()
        .enumerate()
        .map(|(i, (s, q))| {
            let s = s.map_or("?".into(), |s| s.to_string());
            format!("node{} {s}/{q}", i + 1)
        })
        .collect();
    parts.join(", ")
}

/// Every node runs, is Synced and sees the whole cluster.
fn healthy(cluster: &Cluster, nodes: usize) -> bool {
    cluster.nodes().all(|node| {
        node.status()
            .is_ok_and(|s| s.is_synced() && s.int(ServerVar::ClusterSize) == Some(nodes as i64))
    })
}

/// One cell: settle, warm up, measure with counters around the run. The
/// flag is set when the cell failed on a timeout (cluster stuck).
fn measure(
    spec: &BenchSpec,
    index: usize,
    cluster: &Cluster,
    cell: &Cell,
    say: &mut dyn FnMut(&str),
) -> (CellOutcome, bool) {
    let head = format!("{} {}t {}", cell.test, cell.threads, cell.target.label());
    match measure_cell(spec, index, cluster, cell) {
        Ok((sysbench, counters, delays)) => {
            say(&format!(
                "{head}: {:.1} tps, p95 {:.2} ms, {:.1} err/s, fc paused {}, lag at end {}",
                sysbench.tps,
                sysbench.p95_ms,
                sysbench.errors_per_s,
                counters
                    .fc_paused
                    .map_or("-".into(), |f| format!("{:.0}%", f * 100.0)),
                counters
                    .lag_at_end
                    .map_or("-".into(), |l| format!("{l:.0}"))
            ));
            for d in &delays {
                say(&format!("{head}: seen after node1's commit returned: {}", d.describe()));
            }
            let outcome = CellOutcome::Measured {
                sysbench,
                counters: Box::new(Summary { follower_delays: delays, ..counters }),
            };
            (outcome, false)
        }
        Err(e) => {
            let reason = first_line(&e.to_string());
            say(&format!("{head}: n/a ({reason})"));
            (CellOutcome::Failed(reason), matches!(e, Error::Timeout(_)))
        }
    }
}

fn measure_cell(
    spec: &BenchSpec,
    index: usize,
    cluster: &Cluster,
    cell: &Cell,
) -> Result<(SysbenchResult, Summary, Vec<Delays>)> {
    let dir = spec.provider_dir(index);
    let invocation = Invocation {
        test: cell.test.clone(),
        command: "run",
        sockets: cell
            .target
            .nodes(spec.nodes)
            .into_iter()
            .map(|n| cluster.node(n).socket())
            .collect(),
        threads: cell.threads,
        seconds: spec.time,
        tables: spec.tables,
        table_size: spec.table_size,
    };
    wait_settled(cluster, SETTLE_TIMEOUT)?;
    if spec.warmup > 0 {
        let warmup = Invocation {
            seconds: spec.warmup,
            ..invocation.clone()
        };
        let log = dir.join(format!("{}.warmup.txt", cell.slug()));
        warmup.run_args(
            &sysbench::at_rate(warmup.args(), spec.rate),
            &log,
            Duration::from_secs(spec.warmup as u64) + SYSBENCH_GRACE,
        )?;
        wait_settled(cluster, SETTLE_TIMEOUT)?;
    }
    counters::flush(cluster);
    let before = counters::take(cluster);
    let log = dir.join(format!("{}.txt", cell.slug()));
    // One writer node: how long the others take to show its commits.
    let probe = match cell.target {
        Target::Node(1) if spec.nodes > 1 => Some(Probe::start(cluster)?),
        _ => None,
    };
    let args = sysbench::at_rate(invocation.args(), spec.rate);
    let output = invocation.run_args(&args, &log, Duration::from_secs(spec.time as u64) + SYSBENCH_GRACE);
    let delays = probe.map(Probe::finish).transpose()?.unwrap_or_default();
    let after = counters::take(cluster);
    let result = sysbench::parse(&output?).map_err(Error::Msg)?;
    append_details(&dir.join("counters.tsv"), cell, &before, &after)?;
    let summary = counters::summarize(&before, &after, result.transactions);
    Ok((result, summary, delays))
}

/// Appends this cell's per-node counters to DIR/<provider>/counters.tsv.
fn append_details(
    path: &Path,
    cell: &Cell,
    before: &counters::Snapshot,
    after: &counters::Snapshot,
) -> Result<()> {
    let fresh = !path.exists();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let mut text = String::new();
    if fresh {
        text.push_str("test\tthreads\ttarget\tnode\tvariable\tbefore\tafter\n");
    }
    for row in counters::detail_rows(before, after) {
        text.push_str(&format!(
            "{}\t{}\t{}\t{row}\n",
            cell.test,
            cell.threads,
            cell.target.label()
        ));
    }
    file.write_all(text.as_bytes())
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Keeps the whole error in DIR/<provider>/error.txt and returns a one-line
/// reason for the table: the first line plus the first [ERROR] line of the
/// server log tail it quotes, which is usually the real cause.
fn record_failure(dir: &Path, error: &Error) -> String {
    let text = error.to_string();
    let path: PathBuf = dir.join("error.txt");
    let _ = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, &text));
    short_reason(&text)
}

/// The scenarios' frame (big-trx, freshness, drain): for each provider in
/// turn, a fresh cluster with 4 appliers, `work` on it, the cluster
/// stopped. Per provider, its label and what `work` gave, or why it
/// could not run (logged as n/a).
pub fn per_provider<T>(
    spec: &BenchSpec,
    log: &mut dyn FnMut(&str),
    work: impl Fn(usize, &Cluster, &mut dyn FnMut(&str)) -> Result<T>,
) -> Vec<(String, std::result::Result<T, String>)> {
    (0..spec.providers.len())
        .map(|index| {
            let label = spec.provider_slug(index);
            let mut say = |text: &str| log(&format!("[{label}] {text}"));
            let result = on_cluster(spec, index, &mut say, &work).map_err(|e| short_reason(&e.to_string()));
            if let Err(e) = &result {
                say(&format!("n/a: {e}"));
            }
            (label, result)
        })
        .collect()
}

fn on_cluster<T>(
    spec: &BenchSpec,
    index: usize,
    say: &mut dyn FnMut(&str),
    work: &impl Fn(usize, &Cluster, &mut dyn FnMut(&str)) -> Result<T>,
) -> Result<T> {
    let mut cluster_spec = spec.cluster_spec(index);
    cluster_spec.slave_threads = 4;
    say(&format!("starting {} nodes in {}", spec.nodes, cluster_spec.dir.display()));
    let cluster = Cluster::up(cluster_spec)?;
    let result = work(index, &cluster, say);
    cluster.stop_all();
    say("cluster stopped");
    drop_data(spec, &cluster, say);
    result
}

pub fn short_reason(text: &str) -> String {
    let head = first_line(text);
    let head = head
        .split_once("; last lines of")
        .map_or(head.as_str(), |(h, _)| h)
        .to_string();
    let cause = text.lines().find_map(|l| {
        let (_, msg) = l.split_once("[ERROR] ")?;
        Some(msg.trim_start_matches("WSREP: ").trim().to_string())
    });
    match cause {
        Some(cause) => format!("{head}: {cause}"),
        None => head,
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_reason_names_the_cause() {
        let text = "node2 exited 0.1s after it was started; last lines of /x/error.log:\n\
            \x20 2026-11-22  6:26:46 0 [Note] WSREP: Start replication\n\
            \x20 2026-11-22  6:26:46 0 [ERROR] WSREP: cannot join cluster 'lockstep': this lockstep build only runs one-node clusters\n\
            \x20 2026-11-22  6:26:46 0 [ERROR] WSREP: wsrep::connect() failed: 6\n";
        assert_eq!(
            short_reason(text),
            "node2 exited 0.1s after it was started: cannot join cluster 'lockstep': this lockstep build only runs one-node clusters"
        );
        assert_eq!(short_reason("sysbench failed\nmore"), "sysbench failed");
    }

    #[test]
    fn positions_read_well() {
        assert_eq!(
            describe_positions(&[(Some(5), 0), (None, 3)]),
            "node1 5/0, node2 ?/3"
        );
    }
}
