//! What isolation does a cluster give? Jepsen's list-append workload
//! (`workload::list_append`) on every node while one fault class strikes
//! again and again: kills of one node, a majority or every node (started
//! again as systemd does), SIGSTOP pauses, partitions of one node or a
//! minority (`fault::partition`). Then every fault is healed, every key is
//! read on every node, and the history goes through the Elle-style
//! checker (`check::elle`).

use super::elle::{self, history::{Mop, Outcome, Txn}, Report};
use std::collections::HashMap;
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
    /// A majorities ring (`fault::partition::ring`).
    Ring,
}

impl Fault {
    pub const ALL: [Fault; 8] = [Fault::None, Fault::KillOne, Fault::KillMajority, Fault::KillAll, Fault::Pause, Fault::PartitionOne, Fault::PartitionMinority, Fault::Ring];

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
            Fault::Ring => "ring",
        }
    }

    /// How long one fault lasts, shortest and longest.
    fn lasting(self) -> (u64, u64) {
        match self {
            Fault::Pause => (2_000, 6_000),
            Fault::PartitionOne | Fault::PartitionMinority | Fault::Ring => (4_000, 12_000),
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
    /// The same: when each began and ended (µs into the history) and the
    /// nodes it struck.
    pub struck: Vec<Struck>,
    /// `count_stale_on_struck`'s count, taken once the history is whole.
    pub stale_on_struck: usize,
    pub error: Option<String>,
}

/// One fault done.
#[derive(Clone, Debug)]
pub struct Struck {
    pub began: u64,
    pub ended: u64,
    pub nodes: Vec<usize>,
}

/// How long after a fault a stale read on a node it struck is counted as
/// the fault's (`Run::count_stale_on_struck`).
pub const AFTER_FAULT: Duration = Duration::from_secs(10);
/// How stale a read must be to count as the fault's: without causal
/// reads a node lags the one that acknowledged a commit by milliseconds
/// (Galera's nodes too); a node answering from where a pause left it is
/// seconds behind.
pub const STALE_BEYOND: Duration = Duration::from_secs(1);

impl Run {
    /// Reads by a node a fault struck, while it lasted or within
    /// `AFTER_FAULT` after, that miss an append acknowledged more than
    /// `STALE_BEYOND` before their transaction began: stale reads the
    /// fault caused. Looked for directly, read by read, not through the
    /// checker's cycles, of which it reports one example per component.
    fn count_stale_on_struck(&self) -> usize {
        let (after, beyond) = (AFTER_FAULT.as_micros() as u64, STALE_BEYOND.as_micros() as u64);
        let struck = |t: &Txn| self.struck.iter().any(|f| f.nodes.contains(&t.node) && t.invoked >= f.began && t.invoked <= f.ended + after);
        // Per key: acknowledged appends, by when they were acknowledged.
        let mut acked: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
        for t in self.history.iter().filter(|t| t.outcome == Outcome::Committed) {
            for (k, v) in t.appends() {
                acked.entry(k).or_default().push((t.completed.unwrap_or(u64::MAX), v));
            }
        }
        acked.values_mut().for_each(|list| list.sort_unstable());
        let misses = |t: &Txn, key: u64, read: &[u64]| {
            let before = t.invoked.saturating_sub(beyond);
            let list = acked.get(&key).map_or(&[][..], Vec::as_slice);
            let known = &list[..list.partition_point(|(at, _)| *at < before)];
            known.iter().any(|(_, v)| !read.contains(v))
        };
        let stale_reads = |t: &Txn| t.mops.iter().filter(|m| matches!(m, Mop::Read(k, Some(read)) if misses(t, *k, read))).count();
        self.history.iter().filter(|t| t.outcome == Outcome::Committed && !t.final_read && struck(t)).map(stale_reads).sum()
    }

    pub fn committed(&self) -> usize {
        self.history.iter().filter(|t| t.outcome == elle::history::Outcome::Committed && !t.final_read).count()
    }
}

/// One run on a running cluster (its nodes on addresses of their own for
/// the partition classes).
pub fn run(cluster: &Cluster, spec: &RunSpec, config: &Config) -> Run {
    run_then(cluster, spec, config, |_| {})
}

/// [`run`], handing the history to `before_check` before it is checked:
/// a check that takes long (or is stopped) does not take the history
/// with it.
pub fn run_then(cluster: &Cluster, spec: &RunSpec, config: &Config, before_check: impl FnOnce(&[Txn])) -> Run {
    let first = match list_append::first_free_key(cluster) {
        Ok(k) => k,
        Err(e) => return Run { fault: spec.fault, history: Vec::new(), report: Report::default(), faults: Vec::new(), struck: Vec::new(), stale_on_struck: 0, error: Some(format!("reading the tables: {e}")) },
    };
    let epoch = Instant::now();
    let stop = AtomicBool::new(false);
    let mut rng = Rng::for_worker(config.seed, usize::MAX);
    let ((mut history, last), (faults, struck)) = std::thread::scope(|scope| {
        let load = scope.spawn(|| list_append::run_until(cluster, config, first, epoch, &stop));
        let faults = nemesis(cluster, spec, &mut rng, epoch);
        stop.store(true, Ordering::Relaxed);
        (load.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), faults)
    });
    let mut out = Run { fault: spec.fault, history: Vec::new(), report: Report::default(), faults, struck, stale_on_struck: 0, error: None };
    if let Err(e) = cluster.wait_synced(spec.recovery_timeout) {
        out.error = Some(format!("the cluster did not become whole after the faults: {e}"));
    }
    match list_append::final_reads(cluster, first..last, epoch) {
        Ok(finals) => history.extend(finals),
        Err(e) => out.error = out.error.take().or(Some(format!("final reads: {e}"))),
    }
    before_check(&history);
    out.report = elle::check(&history);
    out.history = history;
    out.stale_on_struck = out.count_stale_on_struck();
    out
}

/// Faults of the run's class, one after another with a quiet gap, until
/// the run's time is up; each is healed before the next.
fn nemesis(cluster: &Cluster, spec: &RunSpec, rng: &mut Rng, epoch: Instant) -> (Vec<String>, Vec<Struck>) {
    let (mut done, mut struck) = (Vec::new(), Vec::new());
    let mut round = 0;
    while epoch.elapsed() + spec.gap < spec.time {
        std::thread::sleep(spec.gap);
        if spec.fault == Fault::None {
            continue;
        }
        let (low, high) = spec.fault.lasting();
        let lasting = Duration::from_millis(low + rng.below(high - low + 1));
        let began = epoch.elapsed();
        let (what, nodes) = strike(cluster, spec.fault, round, lasting);
        let ended = epoch.elapsed();
        done.push(format!("{:.1}-{:.1} s: {what}", began.as_secs_f64(), ended.as_secs_f64()));
        struck.push(Struck { began: began.as_micros() as u64, ended: ended.as_micros() as u64, nodes });
        round += 1;
    }
    let left = spec.time.saturating_sub(epoch.elapsed());
    std::thread::sleep(left);
    (done, struck)
}

/// One fault, held for `lasting`, then healed; what it was, and the
/// nodes it struck (a partition's: the side cut off).
fn strike(cluster: &Cluster, fault: Fault, round: u32, lasting: Duration) -> (String, Vec<usize>) {
    let n = cluster.len();
    let rotate = |count: usize| -> Vec<usize> { (0..count).map(|i| (round as usize + i) % n + 1).collect() };
    let (what, victims) = match fault {
        Fault::None => return (String::new(), Vec::new()),
        Fault::KillOne => ("SIGKILL", rotate(1)),
        Fault::KillMajority => ("SIGKILL", rotate(n / 2 + 1)),
        Fault::KillAll => ("SIGKILL", rotate(n)),
        Fault::Pause => ("SIGSTOP", rotate(1)),
        Fault::Ring => {
            let links = crate::fault::partition::ring(n, round);
            let status = hold(Partition::cut_links(cluster.spec(), &links), lasting);
            let mut struck: Vec<usize> = links.iter().flat_map(|&(a, b)| [a, b]).collect();
            struck.sort_unstable();
            struck.dedup();
            return (format!("ring without links {links:?} for {:.1} s{status}", lasting.as_secs_f64()), struck);
        }
        Fault::PartitionOne | Fault::PartitionMinority => {
            let split = if fault == Fault::PartitionOne { Split::One } else { Split::Minority };
            let (cut, rest) = split.sides(n, round);
            let status = hold(Partition::cut(cluster.spec(), &[cut.clone(), rest]), lasting);
            return (format!("partition of {cut:?} for {:.1} s{status}", lasting.as_secs_f64()), cut);
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
    (format!("{what} {victims:?} for {:.1} s{status}", lasting.as_secs_f64()), victims)
}

/// Keeps a partition for `lasting`, then heals it; what went wrong, as
/// the fault's line says it.
fn hold(partition: crate::cluster::Result<Partition>, lasting: Duration) -> String {
    std::thread::sleep(lasting);
    match partition {
        Ok(p) => {
            p.heal();
            String::new()
        }
        Err(e) => format!(" (failed: {e})"),
    }
}
