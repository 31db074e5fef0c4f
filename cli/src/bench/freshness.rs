//! `lockstep bench --scenario freshness`: how stale a replica gets, what
//! flow control costs the writers for it, and how both move when the
//! replica's apply speed changes mid-run.
//!
//! For each provider: a fresh 3-node cluster; node 2 applies with one
//! applier thread, and its readers wait for what was committed before them
//! (`wsrep_sync_wait=1`). For each setting (every provider: `gcs.fc_limit`
//! 16, then 25000; a provider that has `lockstep.max_lag_ms`: also that
//! bound at 100 ms with `gcs.fc_limit` 25000, so that the bound rules;
//! every provider: `gcs.fc_limit` 16 with the evs windows at 512, see
//! `settings`), sysbench
//! `oltp_update_index` with 64 threads writes on node 1 for two phases of
//! `--time` seconds, and one `oltp_point_select` client reads on node 2 in
//! each. Phase 1: node 2 with `innodb_flush_log_at_trx_commit=2`; phase
//! 2: =1, an fsync per commit, so a slower applier. Per phase: node 1's
//! write tps, the reads' p99, the share of the phase node 1 was paused by
//! flow control and node 2's mean receive queue; per second: write tps
//! and read p99 (the chart). Unthrottled, the faster provider loads node
//! 2 harder, and pauses and staleness follow from that load; `--rate`
//! gives both providers the same offered load.

use super::chart::{self, Panel, Series};
use super::plan::BenchSpec;
use super::sysbench::{self, Invocation};
use crate::cluster::{provider_setting, Cluster, Error, Node, Result, StatusVar};
use lockstep_config::keys;
use std::time::{Duration, Instant};

const WRITERS: u32 = 64;
/// node 2's `innodb_flush_log_at_trx_commit` per phase.
const PHASES: [u32; 2] = [2, 1];
const RUN_LIMIT: Duration = Duration::from_secs(1800);

/// A flow-control setting, as `wsrep_provider_options` entries.
struct Setting {
    label: &'static str,
    options: Vec<String>,
    /// Only for providers that have `lockstep.max_lag_ms`.
    needs_bound: bool,
}

/// In this order: the last one leaves evs windows wide for the rest of
/// the run.
fn settings() -> [Setting; 4] {
    let fc_limit = |n: u32| provider_setting(keys::GCS_FC_LIMIT, n);
    [
        Setting { label: "fc_limit=16", options: vec![fc_limit(16)], needs_bound: false },
        // Issue 52 judges flow control at Galera's default and at a limit
        // so high that it is a memory cap only, the bound off: there the
        // queue is what node 2's applier leaves behind at node 1's pace.
        Setting { label: "fc_limit=25000", options: vec![fc_limit(25000)], needs_bound: false },
        Setting {
            label: "max_lag_ms=100",
            options: vec![fc_limit(25000), provider_setting(keys::LOCKSTEP_MAX_LAG_MS, 100)],
            needs_bound: true,
        },
        // Galera's node 1 waits for its slowest node to receive each
        // message once evs.user_send_window (2) of its own are in flight,
        // and that wait is not flow control: it is not counted in
        // wsrep_flow_control_paused, and it slows node 1 to its slowest
        // node's pace before any STOP. lockstep commits with a majority
        // and has no such wait (its window is Raft's, 256 appends and
        // more). With the windows wide, both providers meet a slow
        // node 2 with flow control alone (issue 52).
        Setting {
            label: "windows=512",
            options: vec![
                fc_limit(16),
                provider_setting(keys::EVS_SEND_WINDOW, 512),
                provider_setting(keys::EVS_USER_SEND_WINDOW, 512),
            ],
            needs_bound: false,
        },
    ]
}

#[derive(Clone, Debug, PartialEq)]
pub struct PhaseFigures {
    pub flush: u32,
    pub write_tps: f64,
    /// The median of the writers' per-second p99 latencies in the phase:
    /// every wait a commit on node 1 met, flow control's and any other
    /// (Galera's send window holds its writers without counting it as
    /// paused), so that `paused` compares fairly with it beside. Under a
    /// `--rate` above what the cluster carries it also holds sysbench's
    /// backlog of events not yet started.
    pub write_p99_ms: f64,
    pub read_p99_ms: f64,
    /// Share of the phase node 1 was paused by flow control.
    pub paused: f64,
    /// Node 2's mean receive queue over the phase: what its readers wait
    /// behind, and what flow control keeps near `gcs.fc_limit`.
    pub queue_avg: f64,
}

/// One provider under one setting.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub setting: String,
    pub phases: Vec<PhaseFigures>,
    /// (second of the run, write tps) and (second, read p99 ms).
    pub write_tps: Vec<(f64, f64)>,
    pub read_p99_ms: Vec<(f64, f64)>,
    /// Seconds into the run where phase 2 began.
    pub phase_change: f64,
}

pub type ProviderRuns = (String, std::result::Result<Vec<Run>, String>);

pub fn run(spec: &BenchSpec, log: &mut dyn FnMut(&str)) -> Vec<ProviderRuns> {
    super::runner::per_provider(spec, log, |index, cluster, say| {
        set_up(spec, cluster)?;
        let has_bound = has_bound(cluster)?;
        let mut runs = Vec::new();
        for setting in settings().iter().filter(|s| has_bound || !s.needs_bound) {
            apply(cluster, setting, has_bound)?;
            say(&format!("{}: {} s per phase", setting.label, spec.time));
            let run = run_setting(spec, index, cluster, setting)?;
            for p in &run.phases {
                say(&format!(
                    "{} flush={}: writes {:.0} tps (p99 {:.1} ms), reads p99 {:.1} ms, paused {:.0}%",
                    setting.label,
                    p.flush,
                    p.write_tps,
                    p.write_p99_ms,
                    p.read_p99_ms,
                    p.paused * 100.0
                ));
            }
            runs.push(run);
        }
        Ok(runs)
    })
}

fn set_up(spec: &BenchSpec, cluster: &Cluster) -> Result<()> {
    cluster.node(1).sql("CREATE DATABASE IF NOT EXISTS sbtest")?;
    let prepare = invocation(spec, cluster.node(1), "oltp_update_index", "prepare", spec.tables.min(8), 0);
    prepare.run(&spec.dir.join("freshness-prepare.log"), Duration::from_secs(600))?;
    caught_up(cluster)?;
    cluster.node(2).sql("SET GLOBAL wsrep_slave_threads = 1")?;
    cluster.node(2).sql("SET GLOBAL wsrep_sync_wait = 1")?;
    Ok(())
}

/// The setting on every node; lockstep's bound off unless the setting
/// has it.
fn apply(cluster: &Cluster, setting: &Setting, has_bound: bool) -> Result<()> {
    let reset: Vec<String> = if has_bound { vec![provider_setting(keys::LOCKSTEP_MAX_LAG_MS, 0)] } else { vec![] };
    for node in cluster.nodes() {
        for option in reset.iter().chain(&setting.options) {
            node.set_provider_option(option)?;
        }
    }
    Ok(())
}

fn invocation(spec: &BenchSpec, node: Node, test: &str, command: &'static str, threads: u32, seconds: u32) -> Invocation {
    Invocation {
        test: test.into(),
        command,
        sockets: vec![node.socket()],
        threads,
        seconds,
        tables: spec.tables,
        table_size: spec.table_size,
    }
}

fn run_setting(spec: &BenchSpec, index: usize, cluster: &Cluster, setting: &Setting) -> Result<Run> {
    let dir = spec.provider_dir(index);
    let (n1, n2) = (cluster.node(1), cluster.node(2));
    set_flush(n2, PHASES[0])?;
    caught_up(cluster)?;
    let phase_secs = spec.time.max(4);
    let writes_log = dir.join(format!("freshness-{}-writes.log", setting.label));
    let writer = invocation(spec, n1, "oltp_update_index", "run", WRITERS, phase_secs * 2 + 2);
    let args = sysbench::at_rate(writer.args_with(99, 1), spec.rate);
    let mut child = sysbench::spawn(&args, &writes_log)?;
    let started = Instant::now();
    let phases = (|| {
        std::thread::sleep(Duration::from_secs(1));
        let mut phases = Vec::new();
        for (i, &flush) in PHASES.iter().enumerate() {
            set_flush(n2, flush)?;
            let from = started.elapsed().as_secs_f64();
            let paused_before = paused_ns(n1)?;
            n2.sql("FLUSH STATUS")?;
            let reader = invocation(spec, n2, "oltp_point_select", "run", 1, phase_secs - 1);
            let reads_log = dir.join(format!("freshness-{}-reads-{}.log", setting.label, i + 1));
            let text = reader.run_args(&reader.args_with(99, 1), &reads_log, RUN_LIMIT)?;
            let to = started.elapsed().as_secs_f64();
            let paused = (paused_ns(n1)? - paused_before).max(0) as f64 / 1e9 / (to - from);
            let queue = n2.status()?.float(StatusVar::LocalRecvQueueAvg).unwrap_or(f64::NAN);
            phases.push(Phase { flush, from, to, paused, queue, reads: text });
        }
        Ok::<_, Error>(phases)
    })();
    if phases.is_err() {
        let _ = child.kill();
    }
    let _ = child.wait();
    let phases = phases?;
    let writes = std::fs::read_to_string(&writes_log).map_err(|e| Error::io(format!("reading {}", writes_log.display()), e))?;
    figures(setting.label, &writes, &phases)
}

/// One phase as measured: its bounds in seconds of the run, the figures
/// read from the nodes, and the reader's output.
struct Phase {
    flush: u32,
    from: f64,
    to: f64,
    paused: f64,
    queue: f64,
    reads: String,
}

/// Per phase and per second, from the writer's and each reader's output.
fn figures(setting: &str, writes: &str, phases: &[Phase]) -> Result<Run> {
    let interim = sysbench::interim(writes);
    let write_tps: Vec<(f64, f64)> = interim.iter().map(|&(s, tps, _)| (s as f64, tps)).collect();
    let mut run = Run { setting: setting.into(), phases: Vec::new(), write_tps, read_p99_ms: Vec::new(), phase_change: 0.0 };
    for (i, p) in phases.iter().enumerate() {
        let result = sysbench::parse(&p.reads).map_err(Error::msg)?;
        let inside: Vec<&(u64, f64, f64)> = interim.iter().filter(|(s, _, _)| *s as f64 > p.from && *s as f64 <= p.to).collect();
        let write_tps = inside.iter().map(|s| s.1).sum::<f64>() / inside.len().max(1) as f64;
        let write_p99_ms = median(inside.iter().map(|s| s.2).collect());
        run.read_p99_ms.extend(sysbench::interim(&p.reads).into_iter().map(|(s, _, p99)| (p.from + s as f64, p99)));
        // `p95_ms` is the percentile asked for: 99 here (`args_with`).
        run.phases.push(PhaseFigures { flush: p.flush, write_tps, write_p99_ms, read_p99_ms: result.p95_ms, paused: p.paused, queue_avg: p.queue });
        if i == 1 {
            run.phase_change = p.from;
        }
    }
    Ok(run)
}

/// The upper median of an even count.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn set_flush(node: Node, value: u32) -> Result<()> {
    node.sql(&format!("SET GLOBAL innodb_flush_log_at_trx_commit = {value}")).map(drop)
}

fn paused_ns(node: Node) -> Result<i64> {
    node.status_int(StatusVar::FlowControlPausedNs)
}

/// Whether the cluster's provider has `lockstep.max_lag_ms` (Galera has
/// not).
pub(super) fn has_bound(cluster: &Cluster) -> Result<bool> {
    Ok(cluster.node(1).sql("SELECT @@wsrep_provider_options")?.concat().concat().contains(keys::LOCKSTEP_MAX_LAG_MS.name()))
}

/// Every node has committed what node 1 had.
pub(super) fn caught_up(cluster: &Cluster) -> Result<()> {
    let want = cluster.node(1).status()?.int(StatusVar::LastCommitted).unwrap_or(0);
    for node in cluster.nodes() {
        node.wait_until("caught up", RUN_LIMIT, |s| s.int(StatusVar::LastCommitted) >= Some(want))?;
    }
    Ok(())
}

/// The table, the JSON beside it, and the chart.
pub fn render(spec: &BenchSpec, runs: &[ProviderRuns], elapsed: Duration) -> String {
    let offered = if spec.rate > 0 { format!(" offering {} tps", spec.rate) } else { String::new() };
    let mut out = format!(
        "lockstep bench --scenario freshness: 3 nodes, {WRITERS} writers on node 1 (oltp_update_index){offered}, one wsrep_sync_wait reader on node 2 \
         (1 applier); phase 1 node 2 innodb_flush_log_at_trx_commit=2, phase 2 =1, {} s each; {} min\n\n",
        spec.time.max(4),
        elapsed.as_secs().div_ceil(60)
    );
    out.push_str(&format!(
        "{:<12} {:<16} {:>6} {:>10} {:>8} {:>13} {:>12} {:>9} {:>8}\n",
        "provider", "setting", "flush", "write tps", "ratio", "write p99 ms", "read p99 ms", "paused %", "queue"
    ));
    let baseline = first_run(runs);
    for (provider, result) in runs {
        match result {
            Err(e) => out.push_str(&format!("{provider:<12} n/a ({e})\n")),
            Ok(list) => {
                for run in list {
                    for (i, p) in run.phases.iter().enumerate() {
                        let ratio = baseline.and_then(|b| b.phases.get(i)).map_or(f64::NAN, |b| p.write_tps / b.write_tps);
                        out.push_str(&format!(
                            "{:<12} {:<16} {:>6} {:>10.0} {:>8.2} {:>13.1} {:>12.1} {:>9.0} {:>8.1}\n",
                            provider,
                            run.setting,
                            p.flush,
                            p.write_tps,
                            ratio,
                            p.write_p99_ms,
                            p.read_p99_ms,
                            p.paused * 100.0,
                            p.queue_avg
                        ));
                    }
                }
            }
        }
    }
    out.push_str(
        "\nratio: write tps over the first provider's first setting in the same phase; \
         write p99: the median of node 1's per-second p99 commit latencies in the phase, every wait included, \
         flow control's (paused) and any other; queue: node 2's wsrep_local_recv_queue_avg over the phase\n",
    );
    out
}

fn first_run(runs: &[ProviderRuns]) -> Option<&Run> {
    runs.first()?.1.as_ref().ok()?.first()
}

/// `freshness.json` and `freshness.svg` in the bench directory.
pub fn write_outputs(spec: &BenchSpec, runs: &[ProviderRuns]) -> Result<Vec<std::path::PathBuf>> {
    let json_path = spec.dir.join("freshness.json");
    let json = serde_json::to_string_pretty(&to_json(spec, runs)).map_err(|e| Error::msg(e.to_string()))?;
    std::fs::write(&json_path, json).map_err(|e| Error::io(format!("writing {}", json_path.display()), e))?;
    let svg_path = spec.dir.join("freshness.svg");
    let ok: Vec<(&String, &Run)> = runs.iter().filter_map(|(p, r)| r.as_ref().ok().map(|l| (p, l))).flat_map(|(p, l)| l.iter().map(move |r| (p, r))).collect();
    let line = |points: fn(&Run) -> &Vec<(f64, f64)>| -> Vec<Series> {
        ok.iter().map(|(p, r)| Series { label: format!("{p} {}", r.setting), points: points(r).clone() }).collect()
    };
    let panels = [
        Panel { y_label: "node 1 write tps".into(), series: line(|r| &r.write_tps) },
        Panel { y_label: "node 2 sync_wait read p99 (ms)".into(), series: line(|r| &r.read_p99_ms) },
    ];
    let marks: Vec<f64> = ok.first().map(|(_, r)| r.phase_change).into_iter().collect();
    chart::time_series(&svg_path, "freshness: node 2 flush=2, then flush=1 (vertical line)", &panels, &marks)?;
    Ok(vec![json_path, svg_path])
}

fn to_json(spec: &BenchSpec, runs: &[ProviderRuns]) -> serde_json::Value {
    use serde_json::json;
    let providers: Vec<serde_json::Value> = runs
        .iter()
        .map(|(provider, result)| match result {
            Err(e) => json!({ "provider": provider, "error": e }),
            Ok(list) => json!({
                "provider": provider,
                "runs": list.iter().map(|r| json!({
                    "setting": r.setting,
                    "phase_change_s": r.phase_change,
                    "phases": r.phases.iter().map(|p| json!({
                        "innodb_flush_log_at_trx_commit": p.flush,
                        "write_tps": p.write_tps,
                        "write_p99_ms": p.write_p99_ms,
                        "read_p99_ms": p.read_p99_ms,
                        "fc_paused": p.paused,
                        "node2_recv_queue_avg": p.queue_avg,
                    })).collect::<Vec<_>>(),
                    "per_second": { "write_tps": r.write_tps, "read_p99_ms": r.read_p99_ms },
                })).collect::<Vec<_>>(),
            }),
        })
        .collect();
    json!({
        "scenario": "freshness",
        "seconds_per_phase": spec.time.max(4),
        "writers": WRITERS,
        "offered_tps": spec.rate,
        "providers": providers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_take_the_writer_seconds_inside_them_and_the_readers_p99() {
        let writes = "[ 1s ] thds: 64 tps: 100.00 qps: 1 lat (ms,99%): 9.0 err/s: 0\n\
                      [ 2s ] thds: 64 tps: 300.00 qps: 1 lat (ms,99%): 7.0 err/s: 0\n\
                      [ 3s ] thds: 64 tps: 50.00 qps: 1 lat (ms,99%): 60.0 err/s: 0\n";
        let reads = |p99: &str| {
            format!(
                "[ 1s ] thds: 1 tps: 10.00 qps: 10.00 (r/w/o: 10.00/0.00/0.00) lat (ms,99%): {p99} err/s: 0.00 reconn/s: 0.00\n\
                 transactions: 10 (10.00 per sec.)\n99th percentile: {p99}\n"
            )
        };
        let phases = [
            Phase { flush: 2, from: 0.5, to: 2.0, paused: 0.1, queue: 3.0, reads: reads("4.0") },
            Phase { flush: 1, from: 2.0, to: 3.0, paused: 0.5, queue: 30.0, reads: reads("40.0") },
        ];
        let run = figures("fc_limit=16", writes, &phases).unwrap();
        assert_eq!(run.phases[0], PhaseFigures { flush: 2, write_tps: 200.0, write_p99_ms: 9.0, read_p99_ms: 4.0, paused: 0.1, queue_avg: 3.0 });
        assert_eq!(run.phases[1], PhaseFigures { flush: 1, write_tps: 50.0, write_p99_ms: 60.0, read_p99_ms: 40.0, paused: 0.5, queue_avg: 30.0 });
        assert_eq!(run.read_p99_ms, vec![(1.5, 4.0), (3.0, 40.0)]);
        assert_eq!(run.phase_change, 2.0);
    }
}
