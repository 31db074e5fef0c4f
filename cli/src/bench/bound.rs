//! `lockstep bench --scenario bound`: does `lockstep.max_lag_ms` bound
//! what a `wsrep_sync_wait` read waits on a slow replica, whatever the
//! write load and `gcs.fc_limit` (issue 52, item 2)?
//!
//! Per provider: a fresh 3-node cluster, one table of `--table-size` rows
//! (100,000); node 2 applies with one applier and
//! `innodb_flush_log_at_trx_commit=1`. Per cell (writer threads x
//! `gcs.fc_limit`; lockstep with `lockstep.max_lag_ms=100`, Galera with
//! the limit alone): sysbench `oltp_update_index` on node 1 for `--time`
//! seconds, and on node 2 one client running a range read with
//! `wsrep_sync_wait=1` every `READ_EVERY`. Per cell: write tps, the share
//! of it node 1 was paused by flow control, node 2's mean receive queue,
//! and the reads' p50, p99 and worst. Before the cells, the same read
//! with the cluster idle: what the query itself costs on node 2.

use super::freshness::{caught_up, has_bound};
use super::plan::BenchSpec;
use super::sysbench::{self, Invocation};
use crate::cluster::{provider_setting, Cluster, Conn, Error, Node, Result, StatusVar};
use crate::workload::Latency;
use lockstep_config::keys;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The read: about 45,000 rows of node 2's copy of the table.
const READ: &str = "SELECT SUM(k) FROM sbtest.sbtest1 WHERE id > 5000 AND id < 50000";
const READ_EVERY: Duration = Duration::from_millis(250);
pub const FC_LIMITS: [u32; 3] = [16, 1000, 25000];
/// The bound every lockstep cell runs with, and what its reads' p99 must
/// stay under.
pub const MAX_LAG_MS: u32 = 100;
pub const GOAL_MS: f64 = 150.0;
const RUN_LIMIT: Duration = Duration::from_secs(1800);

#[derive(Clone, Debug, PartialEq)]
pub struct CellFigures {
    pub threads: u32,
    pub fc_limit: u32,
    pub write_tps: f64,
    pub paused: f64,
    pub queue_avg: f64,
    pub reads: Latency,
    pub read_count: usize,
}

/// One provider: the idle read's median, then every cell.
pub type ProviderRun = (String, std::result::Result<(Duration, Vec<CellFigures>), String>);

pub fn run(spec: &BenchSpec, log: &mut dyn FnMut(&str)) -> Vec<ProviderRun> {
    super::runner::per_provider(spec, log, |index, cluster, say| {
        set_up(spec, cluster)?;
        let idle = idle_read(cluster.node(2))?;
        say(&format!("the read alone on node 2: {:.1} ms", ms(idle)));
        let has_bound = has_bound(cluster)?;
        let mut cells = Vec::new();
        for &threads in &spec.threads {
            for fc_limit in FC_LIMITS {
                configure(cluster, fc_limit, has_bound)?;
                let cell = run_cell(spec, index, cluster, threads, fc_limit)?;
                say(&describe(&cell));
                cells.push(cell);
            }
        }
        Ok((idle, cells))
    })
}

fn set_up(spec: &BenchSpec, cluster: &Cluster) -> Result<()> {
    cluster.node(1).sql("CREATE DATABASE IF NOT EXISTS sbtest")?;
    let prepare = invocation(spec, cluster.node(1), "prepare", 1, 0);
    prepare.run(&spec.dir.join("bound-prepare.log"), Duration::from_secs(600))?;
    caught_up(cluster)?;
    let n2 = cluster.node(2);
    n2.sql("SET GLOBAL wsrep_slave_threads = 1")?;
    n2.sql("SET GLOBAL innodb_flush_log_at_trx_commit = 1").map(drop)
}

/// The median of five reads with nothing else running.
fn idle_read(node: Node) -> Result<Duration> {
    let mut conn = node.connect()?;
    let mut took = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        conn.query_value(READ)?;
        took.push(started.elapsed());
    }
    Ok(Latency::of(took).p50)
}

/// The cell's flow-control setting on every node: lockstep's bound on
/// top of the limit, the limit alone for a provider without it.
fn configure(cluster: &Cluster, fc_limit: u32, has_bound: bool) -> Result<()> {
    let mut options = vec![provider_setting(keys::GCS_FC_LIMIT, fc_limit)];
    if has_bound {
        options.push(provider_setting(keys::LOCKSTEP_MAX_LAG_MS, MAX_LAG_MS));
    }
    for node in cluster.nodes() {
        for option in &options {
            node.set_provider_option(option)?;
        }
    }
    Ok(())
}

fn invocation(spec: &BenchSpec, node: Node, command: &'static str, threads: u32, seconds: u32) -> Invocation {
    Invocation {
        test: "oltp_update_index".into(),
        command,
        sockets: vec![node.socket()],
        threads,
        seconds,
        tables: 1,
        table_size: spec.table_size,
    }
}

fn run_cell(spec: &BenchSpec, index: usize, cluster: &Cluster, threads: u32, fc_limit: u32) -> Result<CellFigures> {
    let (n1, n2) = (cluster.node(1), cluster.node(2));
    caught_up(cluster)?;
    n2.sql("FLUSH STATUS")?;
    let paused_before = n1.status_int(StatusVar::FlowControlPausedNs)?;
    let log = spec.provider_dir(index).join(format!("bound-{threads}t-fc{fc_limit}.log"));
    let started = Instant::now();
    let reader = Reader::start(n2.connect()?)?;
    let written = invocation(spec, n1, "run", threads, spec.time).run(&log, RUN_LIMIT);
    let reads = reader.finish();
    let seconds = started.elapsed().as_secs_f64();
    let result = sysbench::parse(&written?).map_err(Error::msg)?;
    let paused = (n1.status_int(StatusVar::FlowControlPausedNs)? - paused_before).max(0) as f64 / 1e9 / seconds;
    let queue_avg = n2.status()?.float(StatusVar::LocalRecvQueueAvg).unwrap_or(f64::NAN);
    let reads = reads?;
    Ok(CellFigures { threads, fc_limit, write_tps: result.tps, paused: paused.min(1.0), queue_avg, read_count: reads.len(), reads: Latency::of(reads) })
}

/// The read on node 2, every `READ_EVERY`, until told to stop.
struct Reader {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<Vec<Duration>>>,
}

impl Reader {
    fn start(mut conn: Conn) -> Result<Reader> {
        conn.execute("SET SESSION wsrep_sync_wait = 1")?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut took = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let started = Instant::now();
                conn.query_value(READ)?;
                took.push(started.elapsed());
                std::thread::sleep(READ_EVERY.saturating_sub(started.elapsed()));
            }
            Ok(took)
        });
        Ok(Reader { stop, thread })
    }

    fn finish(self) -> Result<Vec<Duration>> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().map_err(|_| Error::msg("the reader panicked"))?
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn describe(c: &CellFigures) -> String {
    format!(
        "{} threads, gcs.fc_limit={}: writes {:.0} tps, paused {:.0}%, queue {:.1}; {} reads p50 {:.1} p99 {:.1} max {:.1} ms",
        c.threads,
        c.fc_limit,
        c.write_tps,
        c.paused * 100.0,
        c.queue_avg,
        c.read_count,
        ms(c.reads.p50),
        ms(c.reads.p99),
        ms(c.reads.max)
    )
}

pub fn render(spec: &BenchSpec, runs: &[ProviderRun], elapsed: Duration) -> String {
    let mut out = format!(
        "lockstep bench --scenario bound: 3 nodes, oltp_update_index on node 1 (1 table, {} rows), node 2 with 1 applier and \
         innodb_flush_log_at_trx_commit=1 reading `{READ}` with wsrep_sync_wait=1 every {} ms; lockstep with lockstep.max_lag_ms={MAX_LAG_MS}; \
         {} s per cell; {} min\n\n",
        spec.table_size,
        READ_EVERY.as_millis(),
        spec.time,
        elapsed.as_secs().div_ceil(60)
    );
    for (provider, result) in runs {
        match result {
            Err(e) => out.push_str(&format!("{provider}: n/a ({e})\n")),
            Ok((idle, cells)) => {
                out.push_str(&format!("{provider}: the read alone on node 2 {:.1} ms\n", ms(*idle)));
                for c in cells {
                    out.push_str(&format!("  {}\n", describe(c)));
                }
                let worst = cells.iter().map(|c| ms(c.reads.p99)).fold(0.0, f64::max);
                let held = cells.iter().all(|c| ms(c.reads.p99) <= GOAL_MS);
                out.push_str(&format!("  {provider}: worst cell p99 {worst:.1} ms; every cell at most {GOAL_MS:.0} ms: {}\n", if held { "yes" } else { "no" }));
            }
        }
    }
    out
}

/// `bound.json` in the bench directory.
pub fn write_outputs(spec: &BenchSpec, runs: &[ProviderRun]) -> Result<Vec<std::path::PathBuf>> {
    use serde_json::json;
    let providers: Vec<serde_json::Value> = runs
        .iter()
        .map(|(provider, result)| match result {
            Err(e) => json!({ "provider": provider, "error": e }),
            Ok((idle, cells)) => json!({
                "provider": provider,
                "idle_read_ms": ms(*idle),
                "cells": cells.iter().map(|c| json!({
                    "threads": c.threads, "fc_limit": c.fc_limit, "write_tps": c.write_tps, "fc_paused": c.paused,
                    "node2_recv_queue_avg": c.queue_avg, "reads": c.read_count,
                    "read_p50_ms": ms(c.reads.p50), "read_p99_ms": ms(c.reads.p99), "read_max_ms": ms(c.reads.max),
                })).collect::<Vec<_>>(),
            }),
        })
        .collect();
    let value = json!({ "scenario": "bound", "seconds_per_cell": spec.time, "max_lag_ms": MAX_LAG_MS, "providers": providers });
    let path = spec.dir.join("bound.json");
    let text = serde_json::to_string_pretty(&value).map_err(|e| Error::msg(e.to_string()))?;
    std::fs::write(&path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    Ok(vec![path])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(threads: u32, p99_ms: u64) -> CellFigures {
        let reads = Latency { p50: Duration::from_millis(p99_ms / 2), p99: Duration::from_millis(p99_ms), max: Duration::from_millis(p99_ms + 10) };
        CellFigures { threads, fc_limit: 16, write_tps: 1000.0, paused: 0.25, queue_avg: 3.0, reads, read_count: 120 }
    }

    #[test]
    fn the_report_says_whether_every_cell_held_the_goal() {
        let spec = BenchSpec { time: 30, table_size: 100_000, ..BenchSpec::default() };
        let held = vec![("lockstep".to_string(), Ok((Duration::from_millis(30), vec![cell(16, 90), cell(64, 150)])))];
        let text = render(&spec, &held, Duration::from_secs(60));
        assert!(text.contains("the read alone on node 2 30.0 ms"), "{text}");
        assert!(text.contains("64 threads, gcs.fc_limit=16: writes 1000 tps, paused 25%, queue 3.0; 120 reads p50 75.0 p99 150.0 max 160.0 ms"), "{text}");
        assert!(text.contains("worst cell p99 150.0 ms; every cell at most 150 ms: yes"), "{text}");
        let missed = vec![("lockstep".to_string(), Ok((Duration::from_millis(30), vec![cell(16, 90), cell(128, 151)])))];
        assert!(render(&spec, &missed, Duration::from_secs(60)).contains("every cell at most 150 ms: no"));
    }
}
