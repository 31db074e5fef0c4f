//! Does an acknowledged commit survive a crash? Rounds of: writers on
//! every node insert (autocommit) for a while; one node, a majority or
//! every node gets SIGKILL, one after another, while they write; the
//! killed nodes start again, as Debian's `mariadb.service` starts them
//! (`galera_recovery` first) or plainly; once every node is Synced, every
//! insert a client was told had committed is looked up on every node, and
//! the nodes' rows and checksums are compared (`workload::inserts`).

use crate::cluster::{Cluster, ClusterSpec};
use crate::workload::inserts::{self, Acked, InsertConfig};
use crate::workload::Divergence;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Which nodes a round kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kill {
    /// Every node.
    All,
    /// One node (each round the next one).
    One,
    /// The smallest majority (each round starting at the next node).
    Majority,
}

impl Kill {
    pub fn parse(text: &str) -> Result<Kill, String> {
        match text {
            "all" => Ok(Kill::All),
            "one" => Ok(Kill::One),
            "majority" => Ok(Kill::Majority),
            _ => Err(format!("{text:?}: expected all, one or majority")),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Kill::All => "all",
            Kill::One => "one",
            Kill::Majority => "majority",
        }
    }

    /// The nodes round `round` kills, in the order it kills them.
    pub fn victims(self, nodes: usize, round: u32) -> Vec<usize> {
        let count = match self {
            Kill::All => nodes,
            Kill::One => 1,
            Kill::Majority => nodes / 2 + 1,
        };
        (0..count).map(|i| (round as usize + i) % nodes + 1).collect()
    }
}

/// How the killed nodes start again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// As Debian's `mariadb.service`: `galera_recovery` (`mariadbd
    /// --wsrep-recover`), then mariadbd with `--wsrep_start_position`.
    Systemd,
    /// mariadbd with its configuration only.
    Plain,
}

impl Start {
    pub fn parse(text: &str) -> Result<Start, String> {
        match text {
            "systemd" => Ok(Start::Systemd),
            "plain" => Ok(Start::Plain),
            _ => Err(format!("{text:?}: expected systemd or plain")),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Start::Systemd => "systemd",
            Start::Plain => "plain",
        }
    }
}

/// One round's setting: what is killed, how it starts again, how long
/// the writers write first.
#[derive(Clone, Copy, Debug)]
pub struct RoundSpec {
    pub kill: Kill,
    pub start: Start,
    pub load: Duration,
    /// Between two kills of a round.
    pub kill_gap: Duration,
    /// How long the writers go on after the last kill (the survivors'
    /// commits meanwhile count too).
    pub after_kill: Duration,
    /// From the first restart until every node must be Synced.
    pub recovery_timeout: Duration,
}

/// What the writers of a round were told and what the nodes hold
/// afterwards: the part of a round's findings every check shares.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    pub acked: Acked,
    /// Acknowledged inserts missing, per node (node, count).
    pub lost: Vec<(usize, usize)>,
    pub divergences: Vec<Divergence>,
    pub error: Option<String>,
}

impl Verdict {
    pub fn lost_total(&self) -> usize {
        self.lost.iter().map(|(_, n)| n).sum()
    }

    /// Nothing lost, nothing diverged, no error.
    pub fn clean(&self) -> bool {
        self.error.is_none() && self.divergences.is_empty()
    }

    /// Reads round `round`'s rows on `nodes` and compares them with what
    /// was acknowledged; divergences are also written to the cluster's
    /// directory, `round-N.divergences`.
    pub fn verify(&mut self, cluster: &Cluster, nodes: &[usize], round: u32) {
        if let Err(e) = self.compare(cluster, nodes, round) {
            self.error = Some(e.to_string());
        }
        if !self.divergences.is_empty() {
            let path = cluster.dir().join(format!("round-{round}.divergences"));
            let text: String = self.divergences.iter().map(|d| format!("{d}\n")).collect();
            let _ = std::fs::write(&path, text);
        }
    }

    fn compare(&mut self, cluster: &Cluster, nodes: &[usize], round: u32) -> crate::workload::Result<()> {
        let held = inserts::held(cluster, nodes, round)?;
        let sums = inserts::checksums(cluster, nodes, round)?;
        self.lost = inserts::lost(&self.acked.ids, &held).into_iter().map(|(n, ids)| (n, ids.len())).collect();
        self.divergences = inserts::divergences(&self.acked.ids, &held, &sums);
        Ok(())
    }

    /// What diverged besides the lost inserts (counted already), for a
    /// report line.
    pub fn diverged_text(&self) -> String {
        let other: Vec<_> = self.divergences.iter().filter(|d| d.kind() != "lost").cloned().collect();
        match other.is_empty() {
            true => String::new(),
            false => format!("; {}", crate::workload::Error::Diverged(other)),
        }
    }
}

/// What one round found.
#[derive(Clone, Debug)]
pub struct Round {
    pub round: u32,
    pub victims: Vec<usize>,
    /// From the first restart to every node Synced; None when the cluster
    /// did not recover in time (the verdict's error says why).
    pub recovery: Option<Duration>,
    pub verdict: Verdict,
}

/// A cluster for the check: `spec` with every node's
/// `innodb_flush_log_at_trx_commit` set, up and with the table created.
pub fn cluster(spec: ClusterSpec, flush: u8) -> crate::cluster::Result<Cluster> {
    let cluster = Cluster::up(spec.mysqld_option(format!("innodb_flush_log_at_trx_commit={flush}")))?;
    inserts::setup(&cluster, 1).map_err(|e| crate::cluster::Error::msg(e.to_string()))?;
    Ok(cluster)
}

/// One round on a running cluster; the round number keeps its ids apart
/// from every other round's.
pub fn round(cluster: &Cluster, spec: &RoundSpec, writers: &InsertConfig, number: u32) -> Round {
    let nodes: Vec<usize> = (1..=cluster.len()).collect();
    let victims = spec.kill.victims(cluster.len(), number);
    let stop = AtomicBool::new(false);
    let (acked, killed) = std::thread::scope(|scope| {
        let load = scope.spawn(|| inserts::write_until(cluster, &nodes, writers, number, &stop));
        std::thread::sleep(spec.load);
        let killed = kill(cluster, &victims, spec.kill_gap);
        std::thread::sleep(spec.after_kill);
        stop.store(true, Ordering::Relaxed);
        (load.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), killed)
    });
    let mut out = Round { round: number, victims: victims.clone(), recovery: None, verdict: Verdict { acked, ..Verdict::default() } };
    if let Err(e) = killed {
        out.verdict.error = Some(e);
        return out;
    }
    match restart(cluster, &victims, spec) {
        Ok(took) => out.recovery = Some(took),
        Err(e) => {
            out.verdict.error = Some(e);
            return out;
        }
    }
    out.verdict.verify(cluster, &nodes, number);
    out
}

/// SIGKILL to each victim in turn, `gap` apart.
fn kill(cluster: &Cluster, victims: &[usize], gap: Duration) -> Result<(), String> {
    for (i, n) in victims.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(gap);
        }
        cluster.node(*n).kill().map_err(|e| format!("killing node{n}: {e}"))?;
    }
    Ok(())
}

/// Starts `victims` at once, none bootstrapping, each as `start` says;
/// why each that did not come back failed.
pub(super) fn start_together(cluster: &Cluster, victims: &[usize], start: Start) -> Vec<String> {
    cluster.start_members(victims, matches!(start, Start::Plain))
}

/// Starts every victim at once, none bootstrapping, and waits until the
/// whole cluster is Synced; how long that took.
fn restart(cluster: &Cluster, victims: &[usize], spec: &RoundSpec) -> Result<Duration, String> {
    let started = Instant::now();
    // Every failure, not the first: one node that never listens leaves the
    // others waiting for it, and only its own log says why.
    let failures = start_together(cluster, victims, spec.start);
    if !failures.is_empty() {
        return Err(failures.join("\n"));
    }
    let left = spec.recovery_timeout.saturating_sub(started.elapsed());
    cluster.wait_synced(left).map_err(|e| format!("the cluster did not become Synced: {e}"))?;
    Ok(started.elapsed())
}

/// The rounds `numbers` (first, count) name, of one setting on a running
/// cluster, each reported as it ends. A round after which the cluster
/// did not recover ends the series: the cluster is unusable; with
/// `stop_on_failure`, so does any round that was not clean (its data
/// stays as it was found, for a look).
pub fn series(cluster: &Cluster, spec: &RoundSpec, writers: &InsertConfig, numbers: (u32, u32), stop_on_failure: bool, report: &mut dyn FnMut(&Round)) -> Vec<Round> {
    super::series(numbers, |n| round(cluster, spec, writers, n), report, |r| r.recovery.is_none() || (stop_on_failure && !r.verdict.clean()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn victims_rotate_and_a_majority_is_the_smallest_one() {
        assert_eq!(Kill::All.victims(3, 5), vec![3, 1, 2]);
        assert_eq!(Kill::One.victims(3, 0), vec![1]);
        assert_eq!(Kill::One.victims(3, 4), vec![2]);
        assert_eq!(Kill::Majority.victims(3, 1), vec![2, 3]);
        assert_eq!(Kill::Majority.victims(5, 0), vec![1, 2, 3]);
    }

    #[test]
    fn settings_parse_from_their_labels() {
        for k in [Kill::All, Kill::One, Kill::Majority] {
            assert_eq!(Kill::parse(k.label()), Ok(k));
        }
        for s in [Start::Systemd, Start::Plain] {
            assert_eq!(Start::parse(s.label()), Ok(s));
        }
        assert!(Kill::parse("two").is_err());
    }
}
