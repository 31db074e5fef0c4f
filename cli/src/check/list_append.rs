//! What isolation does a cluster give? Jepsen's list-append workload
//! (`workload::list_append`) on every node while one fault class strikes
//! again and again: kills of one node, a majority or every node (started
//! again as systemd does), SIGSTOP pauses, partitions of one node or a
//! minority (`fault::partition`). Then every fault is healed, every key is
//! read on every node, and the history goes through the Elle-style
//! checker (`check::elle`).

use super::elle::{self, history::Txn, Report};
use super::partition::Split;
use crate::cluster::Cluster;
use crate::fault::partition::Partition;
use crate::workload::list_append::{self, Config};
use crate::workload::Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A fault class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    KillOne,
    KillMajority,
    KillAll,
    Pause,
    PartitionOne,
    PartitionMinority,
}

impl Fault {
    pub const ALL: [Fault; 7] = [Fault::None, Fault::KillOne, Fault::KillMajority, Fault::KillAll, Fault::Pause, Fault::PartitionOne, Fault::PartitionMinority];

    pub fn parse(text: &str) -> Result<Fault, String> {
        Fault::ALL.into_iter().find(|f| f.label() == text).ok_or_else(|| format!("{text:?}: expected one of {}", Fault::ALL.map(Fault::label).join(", ")))
    }

    pub fn label(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::KillOne => "kill-one",
            Fault::KillMajority => "kill-majority",
            Fault::KillAll => "kill-all",
            Fault::Pause => "pause",
            Fault::PartitionOne => "partition-one",
            Fault::PartitionMinority => "partition-minority",
        }
    }

    /// How long one fault lasts, shortest and longest.
    fn lasting(self) -> (u64, u64) {
        match self {
            Fault::Pause => (2_000, 6_000),
            Fault::PartitionOne | Fault::PartitionMinority => (4_000, 12_000),
            _ => (1_000, 3_000),
        }
    }
}

/// One run's setting.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub fault: Fault,
    pub time: Duration,
    /// Quiet time between two faults.
    pub gap: Duration,
    pub recovery_timeout: Duration,
}

/// What one run found.
pub struct Run {
    pub fault: Fault,
    pub history: Vec<Txn>,
    pub report: Report,
    /// The faults done, a line each.
    pub faults: Vec<String>,
    pub error: Option<String>,
}

impl Run {
    pub fn committed(&self) -> usize {
        self.history.iter().filter(|t| t.outcome == elle::history::Outcome::Committed && !t.final_read).count()
    }
}

/// One run on a running cluster (its nodes on addresses of their own for
/// the partition classes).
pub fn run(cluster: &Cluster, spec: &RunSpec, config: &Config) -> Run {
    let first = match list_append::first_free_key(cluster) {
        Ok(k) => k,
        Err(e) => return Run { fault: spec.fault, history: Vec::new(), report: Report::default(), faults: Vec::new(), error: Some(format!("reading the tables: {e}")) },
    };
    let epoch = Instant::now();
    let stop = AtomicBool::new(false);
    let mut rng = Rng::for_worker(config.seed, usize::MAX);
    let ((mut history, last), faults) = std::thread::scope(|scope| {
        let load = scope.spawn(|| list_append::run_until(cluster, config, first, epoch, &stop));
        let faults = nemesis(cluster, spec, &mut rng, epoch);
        stop.store(true, Ordering::Relaxed);
        (load.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), faults)
    });
    let mut out = Run { fault: spec.fault, history: Vec::new(), report: Report::default(), faults, error: None };
    if let Err(e) = cluster.wait_synced(spec.recovery_timeout) {
        out.error = Some(format!("the cluster did not become whole after the faults: {e}"));
    }
    match list_append::final_reads(cluster, first..last, epoch) {
        Ok(finals) => history.extend(finals),
        Err(e) => out.error = out.error.take().or(Some(format!("final reads: {e}"))),
    }
    out.report = elle::check(&history);
    out.history = history;
    out
}

/// Faults of the run's class, one after another with a quiet gap, until
/// the run's time is up; each is healed before the next.
fn nemesis(cluster: &Cluster, spec: &RunSpec, rng: &mut Rng, epoch: Instant) -> Vec<String> {
    let mut done = Vec::new();
    let mut round = 0;
    while epoch.elapsed() + spec.gap < spec.time {
        std::thread::sleep(spec.gap);
        if spec.fault == Fault::None {
            continue;
        }
        let (low, high) = spec.fault.lasting();
        let lasting = Duration::from_millis(low + rng.below(high - low + 1));
        let began = epoch.elapsed();
        let what = strike(cluster, spec.fault, round, lasting);
        done.push(format!("{:.1}-{:.1} s: {what}", began.as_secs_f64(), epoch.elapsed().as_secs_f64()));
        round += 1;
    }
    let left = spec.time.saturating_sub(epoch.elapsed());
    std::thread::sleep(left);
    done
}

/// One fault, held for `lasting`, then healed; what it was.
fn strike(cluster: &Cluster, fault: Fault, round: u32, lasting: Duration) -> String {
    let n = cluster.len();
    let rotate = |count: usize| -> Vec<usize> { (0..count).map(|i| (round as usize + i) % n + 1).collect() };
    let (what, victims) = match fault {
        Fault::None => return String::new(),
        Fault::KillOne => ("SIGKILL", rotate(1)),
        Fault::KillMajority => ("SIGKILL", rotate(n / 2 + 1)),
        Fault::KillAll => ("SIGKILL", rotate(n)),
        Fault::Pause => ("SIGSTOP", rotate(1)),
        Fault::PartitionOne | Fault::PartitionMinority => {
            let split = if fault == Fault::PartitionOne { Split::One } else { Split::Minority };
            let (cut, rest) = split.sides(n, round);
            let partition = Partition::cut(cluster.spec(), &[cut.clone(), rest]);
            std::thread::sleep(lasting);
            let status = match partition {
                Ok(p) => {
                    p.heal();
                    String::new()
                }
                Err(e) => format!(" (failed: {e})"),
            };
            return format!("partition of {cut:?} for {:.1} s{status}", lasting.as_secs_f64());
        }
    };
    let mut failures = Vec::new();
    for &v in &victims {
        let node = cluster.node(v);
        let r = if fault == Fault::Pause { node.freeze() } else { node.kill() };
        if let Err(e) = r {
            failures.push(e.to_string());
        }
    }
    std::thread::sleep(lasting);
    if fault == Fault::Pause {
        failures.extend(victims.iter().filter_map(|v| cluster.node(*v).thaw().err()).map(|e| e.to_string()));
    } else {
        failures.extend(super::crash::start_together(cluster, &victims, super::crash::Start::Systemd));
    }
    let status = if failures.is_empty() { String::new() } else { format!(" ({})", failures.join("; ")) };
    format!("{what} {victims:?} for {:.1} s{status}", lasting.as_secs_f64())
}
