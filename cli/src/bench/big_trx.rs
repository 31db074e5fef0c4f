//! `lockstep bench --scenario big-trx`: one big UPDATE under a write load,
//! on each provider in turn, with and without streaming replication.
//!
//! For each provider: a fresh 2-node cluster (4 appliers), a table of
//! `--rows` rows (`big (id INT PRIMARY KEY, k INT, c CHAR(120), KEY
//! k_1(k))`), sysbench's 4 x 1000-row tables. Then, for each fragment
//! size (`--fragments`, 0 = no streaming): sysbench `oltp_update_index`
//! with 8 threads on node 1, reporting every second; after a baseline,
//! `UPDATE big SET k = k + 1` on node 1. Measured: the UPDATE's time, how
//! much later node 2 has applied it (`wsrep_last_committed`), the seconds
//! in which the load committed less than a tenth of its baseline (the
//! stall), and the largest growth of each node's resident memory while it
//! ran.

use super::plan::BenchSpec;
use super::sysbench::Invocation;
use crate::cluster::{Cluster, Error, Node, Result, StatusVar};
use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Seconds of load before the UPDATE (its first second is not counted:
/// connections are still being made).
const BASELINE: Duration = Duration::from_secs(6);
/// Seconds of load watched after node 2 applied the UPDATE.
const AFTER: Duration = Duration::from_secs(4);
/// How long one UPDATE, or node 2's apply of it, may take.
const STEP_LIMIT: Duration = Duration::from_secs(1800);

/// One UPDATE's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub fragment: u64,
    pub outcome: std::result::Result<Figures, String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    pub update: Duration,
    /// From the UPDATE's return until node 2 committed it.
    pub applied_after: Duration,
    /// Seconds of the load below a tenth of its baseline tps.
    pub stall_secs: u32,
    pub baseline_tps: f64,
    /// Largest resident-memory growth of node 1 and node 2, bytes.
    pub rss_growth: [u64; 2],
    /// Share of the UPDATE's time node 1 was paused by flow control
    /// (`wsrep_flow_control_paused_ns`): where a slow UPDATE waits for
    /// node 2's appliers.
    pub fc_paused: f64,
    /// The load's tps by second, time 0 at the UPDATE's start (the chart).
    pub load_tps: Vec<(f64, f64)>,
}

pub fn run(spec: &BenchSpec, log: &mut dyn FnMut(&str)) -> Vec<(String, std::result::Result<Vec<Step>, String>)> {
    super::runner::per_provider(spec, log, |index, cluster, say| {
        set_up(spec, cluster, say)?;
        let mut steps = Vec::new();
        for &fragment in &spec.fragments {
            let outcome = step(spec, index, cluster, fragment, say);
            match &outcome {
                Ok(f) => say(&format!(
                    "fragments {}: UPDATE {:.1}s, node 2 +{:.1}s, stall {}s, RSS +{} / +{} MB",
                    fragment_label(fragment),
                    f.update.as_secs_f64(),
                    f.applied_after.as_secs_f64(),
                    f.stall_secs,
                    f.rss_growth[0] >> 20,
                    f.rss_growth[1] >> 20
                )),
                Err(e) => say(&format!("fragments {}: {e}", fragment_label(fragment))),
            }
            steps.push(Step { fragment, outcome: outcome.map_err(|e| super::runner::short_reason(&e.to_string())) });
        }
        Ok(steps)
    })
}

fn fragment_label(bytes: u64) -> String {
    match bytes {
        0 => "none".into(),
        b if b % 1_000_000 == 0 => format!("{}MB", b / 1_000_000),
        b if b % 1000 == 0 => format!("{}KB", b / 1000),
        b => format!("{b}B"),
    }
}

fn set_up(spec: &BenchSpec, cluster: &Cluster, say: &mut dyn FnMut(&str)) -> Result<()> {
    let n1 = cluster.node(1);
    let mut c = n1.connect()?;
    say(&format!("filling bt.big with {} rows", spec.rows));
    c.execute("CREATE DATABASE IF NOT EXISTS sbtest")?;
    c.execute("CREATE DATABASE bt")?;
    c.execute("CREATE TABLE bt.big (id INT PRIMARY KEY, k INT, c CHAR(120), KEY k_1(k))")?;
    c.execute("SET SESSION max_recursive_iterations = 100000000")?;
    // In batches: the table's own load is not what is measured.
    const BATCH: u64 = 50_000;
    let mut from = 1;
    while from <= spec.rows {
        let to = (from + BATCH - 1).min(spec.rows);
        c.execute(&format!(
            "INSERT INTO bt.big WITH RECURSIVE s(i) AS (SELECT {from} UNION ALL SELECT i+1 FROM s WHERE i < {to}) SELECT i, i, REPEAT('x', 120) FROM s"
        ))?;
        from = to + 1;
    }
    let prepare = load(spec, cluster, "prepare", 0);
    prepare.run(&spec.dir.join("big-trx-prepare.log"), Duration::from_secs(600))?;
    caught_up(cluster, STEP_LIMIT)?;
    Ok(())
}

fn load(spec: &BenchSpec, cluster: &Cluster, command: &'static str, seconds: u32) -> Invocation {
    Invocation {
        test: "oltp_update_index".into(),
        command,
        sockets: vec![cluster.node(1).socket()],
        threads: spec.threads.first().copied().unwrap_or(8),
        seconds,
        tables: 4,
        table_size: 1000,
    }
}

/// Node 2 has committed everything node 1 had when this was called.
fn caught_up(cluster: &Cluster, limit: Duration) -> Result<Duration> {
    let started = Instant::now();
    let want = last_committed(cluster.node(1))?;
    while last_committed(cluster.node(2))? < want {
        if started.elapsed() > limit {
            return Err(Error::Timeout(format!("node 2 did not reach seqno {want} within {}s", limit.as_secs())));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(started.elapsed())
}

fn paused_ns(node: Node) -> Result<i64> {
    node.status_int(StatusVar::FlowControlPausedNs)
}

fn last_committed(node: Node) -> Result<i64> {
    node.status_int(StatusVar::LastCommitted)
}

fn step(spec: &BenchSpec, index: usize, cluster: &Cluster, fragment: u64, say: &mut dyn FnMut(&str)) -> Result<Figures> {
    let out = spec.provider_dir(index).join(format!("big-trx-{}.log", fragment_label(fragment)));
    let started = Instant::now();
    let mut sysbench = spawn_load(spec, cluster, &out)?;
    let rss = RssWatch::start([cluster.node(1).pid(), cluster.node(2).pid()]);
    let result = (|| {
        std::thread::sleep(BASELINE);
        let mut c = cluster.node(1).connect_timeout(STEP_LIMIT)?;
        if fragment > 0 {
            c.execute("SET SESSION wsrep_trx_fragment_unit = 'bytes'")?;
            c.execute(&format!("SET SESSION wsrep_trx_fragment_size = {fragment}"))?;
        }
        say(&format!("fragments {}: UPDATE bt.big", fragment_label(fragment)));
        let update_at = started.elapsed();
        let paused_before = paused_ns(cluster.node(1))?;
        c.execute("UPDATE bt.big SET k = k + 1")?;
        let update = started.elapsed() - update_at;
        let paused = paused_ns(cluster.node(1))? - paused_before;
        let fc_paused = paused.max(0) as f64 / update.as_nanos().max(1) as f64;
        let applied_after = caught_up(cluster, STEP_LIMIT)?;
        std::thread::sleep(AFTER);
        Ok((update_at, update, applied_after, fc_paused))
    })();
    let _ = sysbench.kill();
    let _ = sysbench.wait();
    let rss_growth = rss.stop();
    let (update_at, update, applied_after, fc_paused) = result?;
    let text = std::fs::read_to_string(&out).map_err(|e| Error::io(format!("reading {}", out.display()), e))?;
    let per_second = per_second_tps(&text);
    let watched = update_at..update_at + update + applied_after + AFTER;
    let (baseline_tps, stall_secs) = stall(&per_second, update_at, watched);
    let load_tps = per_second.iter().map(|&(s, tps)| (s as f64 - update_at.as_secs_f64(), tps)).collect();
    Ok(Figures { update, applied_after, stall_secs, baseline_tps, rss_growth, fc_paused, load_tps })
}

fn spawn_load(spec: &BenchSpec, cluster: &Cluster, out: &Path) -> Result<Child> {
    super::sysbench::spawn(&load(spec, cluster, "run", 3600).args_with(95, 1), out)
}

/// Tps by second, from sysbench's interim lines.
pub fn per_second_tps(text: &str) -> Vec<(u64, f64)> {
    super::sysbench::interim(text).into_iter().map(|(s, tps, _)| (s, tps)).collect()
}

/// The baseline (mean tps of the whole seconds before `update_at`, the
/// first one left out) and the seconds within `watched` whose tps fell
/// below a tenth of it.
pub fn stall(per_second: &[(u64, f64)], update_at: Duration, watched: std::ops::Range<Duration>) -> (f64, u32) {
    let before: Vec<f64> = per_second.iter().filter(|(s, _)| *s >= 2 && Duration::from_secs(*s) <= update_at).map(|(_, t)| *t).collect();
    let baseline = if before.is_empty() { 0.0 } else { before.iter().sum::<f64>() / before.len() as f64 };
    // Second s covers (s-1, s]: it counts if it overlaps the window.
    let stalled = per_second
        .iter()
        .filter(|(s, _)| Duration::from_secs(*s) > watched.start && Duration::from_secs(s.saturating_sub(1)) < watched.end)
        .filter(|(_, tps)| *tps < baseline / 10.0)
        .count();
    (baseline, stalled as u32)
}

/// Samples the resident memory of the nodes' processes every 100 ms; the
/// largest growth over the first sample.
struct RssWatch {
    stop: Arc<AtomicBool>,
    growth: Arc<[AtomicU64; 2]>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssWatch {
    fn start(pids: [Option<u32>; 2]) -> RssWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let growth = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let thread = {
            let (stop, growth) = (stop.clone(), growth.clone());
            std::thread::spawn(move || {
                let first = pids.map(|p| p.and_then(rss_bytes).unwrap_or(0));
                while !stop.load(Ordering::Relaxed) {
                    for i in 0..2 {
                        if let Some(now) = pids[i].and_then(rss_bytes) {
                            growth[i].fetch_max(now.saturating_sub(first[i]), Ordering::Relaxed);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        RssWatch { stop, growth, thread: Some(thread) }
    }

    fn stop(mut self) -> [u64; 2] {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        [self.growth[0].load(Ordering::Relaxed), self.growth[1].load(Ordering::Relaxed)]
    }
}

fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb << 10)
}

/// The report: one row per provider and fragment size, then the ratios
/// of each provider's UPDATE time to the first's.
pub fn render(spec: &BenchSpec, runs: &[(String, std::result::Result<Vec<Step>, String>)], elapsed: Duration) -> String {
    let mut out = format!(
        "lockstep bench --scenario big-trx: {} rows, UPDATE big SET k = k + 1 on node 1 of {} under sysbench oltp_update_index ({} threads), {:.0} min\n\n",
        spec.rows,
        spec.nodes,
        spec.threads.first().copied().unwrap_or(8),
        elapsed.as_secs_f64() / 60.0
    );
    out += &format!("{:<12} {:>9} {:>10} {:>11} {:>9} {:>13} {:>13} {:>13} {:>11}\n", "provider", "fragments", "UPDATE s", "node 2 +s", "stall s", "baseline tps", "node1 RSS +MB", "node2 RSS +MB", "FC paused %");
    for (label, result) in runs {
        match result {
            Err(e) => out += &format!("{label:<12} n/a: {e}\n"),
            Ok(steps) => {
                for s in steps {
                    out += &match &s.outcome {
                        Ok(f) => format!(
                            "{:<12} {:>9} {:>10.1} {:>11.1} {:>9} {:>13.0} {:>13} {:>13} {:>11.0}\n",
                            label,
                            fragment_label(s.fragment),
                            f.update.as_secs_f64(),
                            f.applied_after.as_secs_f64(),
                            f.stall_secs,
                            f.baseline_tps,
                            f.rss_growth[0] >> 20,
                            f.rss_growth[1] >> 20,
                            100.0 * f.fc_paused
                        ),
                        Err(e) => format!("{:<12} {:>9} n/a: {}\n", label, fragment_label(s.fragment), e),
                    };
                }
            }
        }
    }
    out += &ratios(runs);
    out
}

/// `big-trx.json` and `big-trx.svg` in the bench directory: per fragment
/// size a panel of the load's tps by second, one line per provider.
pub fn write_outputs(spec: &BenchSpec, runs: &[(String, std::result::Result<Vec<Step>, String>)]) -> Result<Vec<std::path::PathBuf>> {
    use super::chart::{Panel, Series};
    let json_path = spec.dir.join("big-trx.json");
    let text = serde_json::to_string_pretty(&to_json(spec, runs)).map_err(|e| Error::msg(e.to_string()))?;
    std::fs::write(&json_path, text).map_err(|e| Error::io(format!("writing {}", json_path.display()), e))?;
    let figures = |fragment: u64| runs.iter().filter_map(move |(p, r)| Some((p, r.as_ref().ok()?.iter().find(|s| s.fragment == fragment)?.outcome.as_ref().ok()?)));
    let panels: Vec<Panel> = spec
        .fragments
        .iter()
        .map(|&fragment| Panel {
            y_label: format!("load tps, fragments {}", fragment_label(fragment)),
            series: figures(fragment).map(|(p, f)| Series { label: p.clone(), points: f.load_tps.clone() }).collect(),
        })
        .collect();
    let svg_path = spec.dir.join("big-trx.svg");
    super::chart::time_series(&svg_path, "big-trx: the 8-thread load on node 1, 0 s = the UPDATE starts", &panels, &[0.0])?;
    Ok(vec![json_path, svg_path])
}

fn to_json(spec: &BenchSpec, runs: &[(String, std::result::Result<Vec<Step>, String>)]) -> serde_json::Value {
    use serde_json::json;
    let step = |s: &Step| match &s.outcome {
        Err(e) => json!({ "fragment_bytes": s.fragment, "error": e }),
        Ok(f) => json!({
            "fragment_bytes": s.fragment,
            "update_s": f.update.as_secs_f64(),
            "node2_applied_after_s": f.applied_after.as_secs_f64(),
            "stall_s": f.stall_secs,
            "baseline_tps": f.baseline_tps,
            "rss_growth_bytes": f.rss_growth,
            "fc_paused": f.fc_paused,
            "load_tps_per_second": f.load_tps,
        }),
    };
    json!({
        "scenario": "big-trx",
        "rows": spec.rows,
        "providers": runs.iter().map(|(p, r)| match r {
            Err(e) => json!({ "provider": p, "error": e }),
            Ok(steps) => json!({ "provider": p, "steps": steps.iter().map(step).collect::<Vec<_>>() }),
        }).collect::<Vec<_>>(),
    })
}

/// UPDATE time of every provider over the first's, per fragment size.
fn ratios(runs: &[(String, std::result::Result<Vec<Step>, String>)]) -> String {
    let Some((base_label, Ok(base))) = runs.first() else { return String::new() };
    let mut out = format!("\nUPDATE time / {base_label}'s:\n");
    for (label, result) in runs.iter().skip(1) {
        let Ok(steps) = result else { continue };
        for (s, b) in steps.iter().zip(base) {
            if let (Ok(f), Ok(g)) = (&s.outcome, &b.outcome) {
                out += &format!("  {label} fragments {}: {:.2}\n", fragment_label(s.fragment), f.update.as_secs_f64() / g.update.as_secs_f64());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysbench_reports_give_tps_by_second() {
        let text = "[ 1s ] thds: 8 tps: 7997.04 qps: 7997.04 (r/w/o: 0.00/7997.04/0.00) lat (ms,95%): 1.82 err/s: 0.00 reconn/s: 0.00\n\
                    noise\n[ 12s ] thds: 8 tps: 0.00 qps: 0.00\n";
        assert_eq!(per_second_tps(text), vec![(1, 7997.04), (12, 0.0)]);
    }

    #[test]
    fn the_stall_counts_the_seconds_under_a_tenth_of_the_baseline() {
        let per: Vec<(u64, f64)> = vec![(1, 10.0), (2, 1000.0), (3, 1000.0), (4, 50.0), (5, 99.0), (6, 900.0), (7, 0.0)];
        let at = Duration::from_millis(3500);
        let (base, stalled) = stall(&per, at, at..Duration::from_millis(6000));
        assert_eq!(base, 1000.0);
        // Seconds 4 and 5 (second 7 is past the window).
        assert_eq!(stalled, 2);
    }

    #[test]
    fn fragment_sizes_read_as_operators_write_them() {
        assert_eq!(fragment_label(0), "none");
        assert_eq!(fragment_label(10_000), "10KB");
        assert_eq!(fragment_label(1_000_000), "1MB");
        assert_eq!(fragment_label(1234), "1234B");
    }
}
