//! `lockstep bench --scenario drain`: the experiment operators run on
//! Galera to learn a node's apply capacity (desync it, lock it with FLUSH
//! TABLES WITH READ LOCK, let it fall behind, unlock it and time how fast
//! it catches up), beside lockstep's live estimate
//! (`wsrep_apply_capacity`), which needs neither.
//!
//! For each provider: a fresh 3-node cluster (4 appliers), sysbench
//! `oltp_write_only` with 16 threads on node 1. Run 1, writes going on:
//! after `SETTLE`, node 2's estimate is read three times (a provider
//! without it shows n/a), then node 2 is desynced and locked for `LOCKED`;
//! once unlocked, with the load still running, node 2's apply rate until
//! it has caught up with node 1 (at most `CATCH_UP`) is the drain rate
//! with writes going on. Run 2,
//! writes stopped: node 2 is locked while the load runs, then the load
//! stops and the lock goes; the time node 2 takes to apply its backlog
//! gives the drain rate with writes stopped. Node 1's and node 2's
//! committed seqnos are sampled every second for the chart.

use super::chart::{self, Panel, Series};
use super::plan::BenchSpec;
use super::sysbench::{self, Invocation};
use crate::cluster::{Cluster, Error, Node, Result, StatusVar};
use std::time::{Duration, Instant};

const THREADS: u32 = 16;
const SETTLE: Duration = Duration::from_secs(10);
const LOCKED: Duration = Duration::from_secs(15);
const CATCH_UP: Duration = Duration::from_secs(10);
const LIMIT: Duration = Duration::from_secs(600);

#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    /// `wsrep_apply_capacity` read three times under load; None when the
    /// provider has no such variable.
    pub estimate: Option<f64>,
    /// Writesets per second node 2 applied from the unlock until it caught
    /// up (at most `CATCH_UP`), writes going on.
    pub drain_going_on: f64,
    /// Writesets per second node 2 applied its backlog, writes stopped.
    pub drain_stopped: f64,
    /// (second, node 2 writesets applied that second), both runs end to end.
    pub applied_per_second: Vec<(f64, f64)>,
    /// (second, node 1's committed seqno minus node 2's).
    pub behind: Vec<(f64, f64)>,
}

pub type ProviderFigures = (String, std::result::Result<Figures, String>);

pub fn run(spec: &BenchSpec, log: &mut dyn FnMut(&str)) -> Vec<ProviderFigures> {
    super::runner::per_provider(spec, log, |index, cluster, say| {
        cluster.node(1).sql("CREATE DATABASE IF NOT EXISTS sbtest")?;
        load(spec, cluster, "prepare", 0).run(&spec.dir.join("drain-prepare.log"), LIMIT)?;
        let mut samples = Samples::default();
        say("run 1: writes going on after the lock");
        let (estimate, drain_going_on) = going_on(spec, index, cluster, &mut samples)?;
        say("run 2: writes stopped before the unlock");
        let drain_stopped = stopped(spec, index, cluster, &mut samples)?;
        let (applied_per_second, behind) = samples.series();
        let estimate_text = estimate.map_or("n/a".into(), |e| format!("{e:.0}/s"));
        say(&format!("estimate {estimate_text}, drain {drain_going_on:.0}/s going on, {drain_stopped:.0}/s stopped"));
        Ok(Figures { estimate, drain_going_on, drain_stopped, applied_per_second, behind })
    })
}

fn load(spec: &BenchSpec, cluster: &Cluster, command: &'static str, seconds: u32) -> Invocation {
    Invocation {
        test: "oltp_write_only".into(),
        command,
        sockets: vec![cluster.node(1).socket()],
        threads: THREADS,
        seconds,
        tables: spec.tables,
        table_size: spec.table_size,
    }
}

/// Run 1: the estimate under load, then the lock, then node 2's apply
/// rate once unlocked while the load goes on.
fn going_on(spec: &BenchSpec, index: usize, cluster: &Cluster, samples: &mut Samples) -> Result<(Option<f64>, f64)> {
    let seconds = (SETTLE + LOCKED + CATCH_UP).as_secs() as u32 + 2;
    let log = spec.provider_dir(index).join("drain-going-on.log");
    let mut child = sysbench::spawn(&load(spec, cluster, "run", seconds).args_with(95, 1), &log)?;
    let result = (|| {
        samples.for_a_while(cluster, SETTLE - Duration::from_secs(4));
        let mut estimates = Vec::new();
        for _ in 0..3 {
            estimates.extend(cluster.node(2).status()?.get(StatusVar::ApplyCapacity).and_then(|v| v.parse::<f64>().ok()));
            samples.for_a_while(cluster, Duration::from_secs(1));
        }
        let estimate = (estimates.len() == 3).then(|| estimates.iter().sum::<f64>() / 3.0);
        let lock = Lock::take(cluster.node(2))?;
        samples.for_a_while(cluster, LOCKED);
        lock.release()?;
        let rate = catch_up(cluster, samples)?;
        samples.until_exit(cluster, &mut child);
        Ok((estimate, rate))
    })();
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// Node 2's apply rate from the unlock until it has caught up with node
/// 1 (or for `CATCH_UP` if it cannot): the rate of its catching up while
/// node 1 keeps writing.
fn catch_up(cluster: &Cluster, samples: &mut Samples) -> Result<f64> {
    let (from, started) = (committed(cluster.node(2))?, Instant::now());
    loop {
        samples.take(cluster);
        let now = committed(cluster.node(2))?;
        if now >= committed(cluster.node(1))? || started.elapsed() >= CATCH_UP {
            return Ok((now - from) as f64 / started.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run 2: the lock while the load runs; the load ends, the lock goes, and
/// node 2's backlog is timed.
fn stopped(spec: &BenchSpec, index: usize, cluster: &Cluster, samples: &mut Samples) -> Result<f64> {
    let log = spec.provider_dir(index).join("drain-stopped.log");
    let lock = Lock::take(cluster.node(2))?;
    let mut child = sysbench::spawn(&load(spec, cluster, "run", LOCKED.as_secs() as u32).args_with(95, 1), &log)?;
    samples.until_exit(cluster, &mut child);
    let target = committed(cluster.node(1))?;
    let from = committed(cluster.node(2))?;
    lock.release()?;
    let started = Instant::now();
    while committed(cluster.node(2))? < target {
        if started.elapsed() > LIMIT {
            return Err(Error::Timeout(format!("node 2 did not apply its backlog within {}s", LIMIT.as_secs())));
        }
        samples.take(cluster);
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed().as_secs_f64();
    samples.take(cluster);
    Ok((target - from) as f64 / took)
}

/// Node 2 desynced and held by FLUSH TABLES WITH READ LOCK on a
/// connection of its own, as an operator does it.
struct Lock<'a> {
    node: Node<'a>,
    conn: crate::cluster::Conn,
}

impl<'a> Lock<'a> {
    fn take(node: Node<'a>) -> Result<Lock<'a>> {
        node.sql("SET GLOBAL wsrep_desync = ON")?;
        let mut conn = node.connect()?;
        conn.execute("FLUSH TABLES WITH READ LOCK")?;
        Ok(Lock { node, conn })
    }

    fn release(mut self) -> Result<()> {
        self.conn.execute("UNLOCK TABLES")?;
        self.node.sql("SET GLOBAL wsrep_desync = OFF").map(drop)
    }
}

fn committed(node: Node) -> Result<i64> {
    node.status_int(StatusVar::LastCommitted)
}

/// (time, node 1's committed seqno, node 2's), at most one per second.
#[derive(Default)]
struct Samples {
    started: Option<Instant>,
    points: Vec<(f64, i64, i64)>,
}

impl Samples {
    fn take(&mut self, cluster: &Cluster) {
        let t0 = *self.started.get_or_insert_with(Instant::now);
        let now = t0.elapsed().as_secs_f64();
        if self.points.last().is_some_and(|p| now - p.0 < 1.0) {
            return;
        }
        if let (Ok(a), Ok(b)) = (committed(cluster.node(1)), committed(cluster.node(2))) {
            self.points.push((now, a, b));
        }
    }

    fn until_exit(&mut self, cluster: &Cluster, child: &mut std::process::Child) {
        while matches!(child.try_wait(), Ok(None)) {
            self.take(cluster);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn for_a_while(&mut self, cluster: &Cluster, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until {
            self.take(cluster);
            std::thread::sleep(Duration::from_millis(100).min(until.saturating_duration_since(Instant::now())));
        }
    }

    /// Node 2's applied per second, and how far behind node 1 it is.
    fn series(&self) -> (Vec<(f64, f64)>, Vec<(f64, f64)>) {
        let rate = self.points.windows(2).map(|w| (w[1].0, (w[1].2 - w[0].2) as f64 / (w[1].0 - w[0].0))).collect();
        let behind = self.points.iter().map(|p| (p.0, (p.1 - p.2) as f64)).collect();
        (rate, behind)
    }
}

pub fn render(runs: &[ProviderFigures], elapsed: Duration) -> String {
    let mut out = format!(
        "lockstep bench --scenario drain: 3 nodes, oltp_write_only {THREADS} threads on node 1; node 2 desynced and locked (FTWRL) {} s, \
         then drained with writes going on (until caught up, {} s at most) and with writes stopped; {} min\n\n",
        LOCKED.as_secs(),
        CATCH_UP.as_secs(),
        elapsed.as_secs().div_ceil(60)
    );
    out.push_str(&format!("{:<12} {:>14} {:>18} {:>16} {:>18}\n", "provider", "estimate /s", "drain going on /s", "drain stopped /s", "estimate / drain"));
    let base = runs.first().and_then(|(_, r)| r.as_ref().ok());
    for (provider, result) in runs {
        match result {
            Err(e) => out.push_str(&format!("{provider:<12} n/a ({e})\n")),
            Ok(f) => out.push_str(&format!(
                "{:<12} {:>14} {:>18} {:>16} {:>18}\n",
                provider,
                f.estimate.map_or("n/a".into(), |e| format!("{e:.0}")),
                with_ratio(f.drain_going_on, base.map(|b| b.drain_going_on)),
                with_ratio(f.drain_stopped, base.map(|b| b.drain_stopped)),
                f.estimate.map_or("n/a".into(), |e| format!("{:.2}", e / f.drain_stopped)),
            )),
        }
    }
    out.push_str("\n(x.xx): over the first provider\n");
    out
}

fn with_ratio(value: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 => format!("{value:.0} ({:.2})", value / b),
        _ => format!("{value:.0}"),
    }
}

/// `drain.json` and `drain.svg` in the bench directory.
pub fn write_outputs(spec: &BenchSpec, runs: &[ProviderFigures]) -> Result<Vec<std::path::PathBuf>> {
    use serde_json::json;
    let ok: Vec<(&String, &Figures)> = runs.iter().filter_map(|(p, r)| r.as_ref().ok().map(|f| (p, f))).collect();
    let json = json!({
        "scenario": "drain",
        "providers": runs.iter().map(|(p, r)| match r {
            Err(e) => json!({ "provider": p, "error": e }),
            Ok(f) => json!({
                "provider": p,
                "estimate_per_s": f.estimate,
                "drain_going_on_per_s": f.drain_going_on,
                "drain_stopped_per_s": f.drain_stopped,
                "per_second": { "node2_applied": f.applied_per_second, "node2_behind": f.behind },
            }),
        }).collect::<Vec<_>>(),
    });
    let json_path = spec.dir.join("drain.json");
    let text = serde_json::to_string_pretty(&json).map_err(|e| Error::msg(e.to_string()))?;
    std::fs::write(&json_path, text).map_err(|e| Error::io(format!("writing {}", json_path.display()), e))?;
    let line = |points: fn(&Figures) -> &Vec<(f64, f64)>| -> Vec<Series> {
        ok.iter().map(|(p, f)| Series { label: p.to_string(), points: points(f).clone() }).collect()
    };
    let panels = [
        Panel { y_label: "node 2 applied per second".into(), series: line(|f| &f.applied_per_second) },
        Panel { y_label: "node 2 behind node 1 (write sets)".into(), series: line(|f| &f.behind) },
    ];
    let svg_path = spec.dir.join("drain.svg");
    chart::time_series(&svg_path, "drain: node 2 locked, then unlocked with writes going on; locked again, drained with writes stopped", &panels, &[])?;
    Ok(vec![json_path, svg_path])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_give_node_2s_rate_and_lag() {
        let s = Samples { started: None, points: vec![(0.0, 100, 90), (1.0, 200, 90), (2.0, 250, 250)] };
        let (rate, behind) = s.series();
        assert_eq!(rate, vec![(1.0, 0.0), (2.0, 160.0)]);
        assert_eq!(behind, vec![(0.0, 10.0), (1.0, 110.0), (2.0, 0.0)]);
    }

    #[test]
    fn the_table_has_the_ratio_to_the_first_provider_and_the_estimate_over_the_drain() {
        let f = |estimate, stopped| Figures { estimate, drain_going_on: 4000.0, drain_stopped: stopped, applied_per_second: vec![], behind: vec![] };
        let text = render(&[("galera".into(), Ok(f(None, 10000.0))), ("lockstep".into(), Ok(f(Some(12000.0), 15000.0)))], Duration::from_secs(60));
        let lockstep = text.lines().find(|l| l.starts_with("lockstep ") && !l.contains("--scenario")).unwrap();
        assert!(lockstep.contains("15000 (1.50)") && lockstep.contains("0.80"), "{lockstep}");
        assert!(text.lines().find(|l| l.starts_with("galera ")).unwrap().contains("n/a"));
    }
}
