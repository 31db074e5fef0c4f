//! Does a cluster heal after a partition? Rounds of: writers on every
//! node insert (autocommit); the network between one side and the other
//! drops every packet for a few seconds (`fault::partition`), the
//! writers going on; then it lets them through again, and the round
//! measures how long until every node is Synced in one primary component
//! of every node, and checks, as `crash` does, that every acknowledged
//! insert is on every node and that the nodes hold the same rows.

use super::crash::Verdict;
use crate::cluster::{Cluster, ServerVar, StatusVar};
use crate::fault::partition::Partition;
use crate::workload::inserts::{self, InsertConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Which nodes a round cuts off from the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// One node (each round the next one) from the rest.
    One,
    /// The largest minority (each round starting at the next node) from
    /// the majority: two of five, one of three.
    Minority,
}

impl Split {
    pub fn parse(text: &str) -> Result<Split, String> {
        match text {
            "one" => Ok(Split::One),
            "minority" => Ok(Split::Minority),
            _ => Err(format!("{text:?}: expected one or minority")),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Split::One => "one",
            Split::Minority => "minority",
        }
    }

    /// Round `round`'s cut-off side, then the rest.
    pub fn sides(self, nodes: usize, round: u32) -> (Vec<usize>, Vec<usize>) {
        let count = match self {
            Split::One => 1,
            Split::Minority => (nodes - 1) / 2,
        };
        let cut: Vec<usize> = (0..count.max(1)).map(|i| (round as usize + i) % nodes + 1).collect();
        let rest = (1..=nodes).filter(|n| !cut.contains(n)).collect();
        (cut, rest)
    }
}

/// One round's setting.
#[derive(Clone, Copy, Debug)]
pub struct RoundSpec {
    pub split: Split,
    /// Writing before the cut.
    pub load: Duration,
    /// How long the cut lasts, shortest and longest; each round takes the
    /// next of nine steps between them, so a series covers the range.
    pub cut: (Duration, Duration),
    /// The verdict's bound: healed means every node Synced in one
    /// component within this long of the heal.
    pub heal_within: Duration,
    /// How long to wait for it at all (the series ends when exceeded).
    pub recovery_timeout: Duration,
}

impl RoundSpec {
    fn cut_for(&self, round: u32) -> Duration {
        let (low, high) = self.cut;
        let step = (round * 4) % 9; // 0, 4, 8, 3, 7, 2, 6, 1, 5: spread over the range
        low + (high.saturating_sub(low)) * step / 8
    }
}

/// What one round found.
#[derive(Clone, Debug)]
pub struct Round {
    pub number: u32,
    pub cut_off: Vec<usize>,
    pub cut: Duration,
    /// From the heal until every node was Synced in one component of all.
    pub back: Option<Duration>,
    pub verdict: Verdict,
}

impl Round {
    pub fn healed_within(&self, bound: Duration) -> bool {
        self.back.is_some_and(|b| b <= bound)
    }
}

/// One round on a running cluster whose nodes have their own addresses.
pub fn round(cluster: &Cluster, spec: &RoundSpec, writers: &InsertConfig, number: u32) -> Round {
    let nodes: Vec<usize> = (1..=cluster.len()).collect();
    let (cut_off, rest) = spec.split.sides(cluster.len(), number);
    let cut = spec.cut_for(number);
    let stop = AtomicBool::new(false);
    let mut out = Round { number, cut_off: cut_off.clone(), cut, back: None, verdict: Verdict::default() };
    let (acked, healed) = std::thread::scope(|scope| {
        let load = scope.spawn(|| inserts::write_until(cluster, &nodes, writers, number, &stop));
        std::thread::sleep(spec.load);
        let healed = cut_and_heal(cluster, spec, &[cut_off, rest], cut);
        std::thread::sleep(Duration::from_secs(1)); // writes on the healed cluster count too
        stop.store(true, Ordering::Relaxed);
        (load.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), healed)
    });
    out.verdict.acked = acked;
    match healed {
        Ok(back) => out.back = Some(back),
        Err(e) => {
            out.verdict.error = Some(e);
            return out;
        }
    }
    out.verdict.verify(cluster, &nodes, number);
    out
}

/// Cuts for `cut`, heals, and waits until the cluster is whole: how long
/// that took from the heal.
fn cut_and_heal(cluster: &Cluster, spec: &RoundSpec, sides: &[Vec<usize>], cut: Duration) -> Result<Duration, String> {
    let partition = Partition::cut(cluster.spec(), sides).map_err(|e| e.to_string())?;
    std::thread::sleep(cut);
    partition.heal();
    let healed = Instant::now();
    whole_for(cluster, STABLE, healed + spec.recovery_timeout)
        .map(|since| since.duration_since(healed))
        .map_err(|e| format!("not whole {:.0} s after the heal: {e}; {}", healed.elapsed().as_secs_f64(), sizes(cluster)))
}

/// How long the cluster must stay whole to count as healed: a node cut
/// off for about `evs.suspect_timeout` can be Synced in a component of
/// all at the heal and removed a moment later (Galera does it).
const STABLE: Duration = Duration::from_secs(5);

/// Waits until every node has been Synced in one component of all for
/// `hold` without a break; since when.
fn whole_for(cluster: &Cluster, hold: Duration, deadline: Instant) -> crate::cluster::Result<Instant> {
    let mut since: Option<Instant> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match cluster.wait_synced(Duration::from_millis(100).min(left)) {
            Ok(()) => {
                let start = *since.get_or_insert_with(Instant::now);
                if start.elapsed() >= hold {
                    return Ok(start);
                }
            }
            Err(e) if left.is_zero() => return Err(e),
            Err(_) => since = None,
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What each node says of the component it is in, for a round that did
/// not heal: who counts whom.
fn sizes(cluster: &Cluster) -> String {
    let each: Vec<String> = cluster
        .statuses()
        .into_iter()
        .map(|(n, s)| match s {
            Ok(s) => format!("node{n} {} size {}", s.get(StatusVar::LocalStateComment).unwrap_or("?"), s.get(ServerVar::ClusterSize).unwrap_or("?")),
            Err(e) => format!("node{n}: {e}"),
        })
        .collect();
    each.join(", ")
}

/// The rounds `numbers` (first, count) name, each reported as it ends; a
/// round after which the cluster did not become whole ends the series.
pub fn series(cluster: &Cluster, spec: &RoundSpec, writers: &InsertConfig, numbers: (u32, u32), report: &mut dyn FnMut(&Round)) -> Vec<Round> {
    super::series(numbers, |n| round(cluster, spec, writers, n), report, |r| r.back.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_rotate_and_a_minority_is_the_largest_one() {
        assert_eq!(Split::One.sides(3, 4), (vec![2], vec![1, 3]));
        assert_eq!(Split::Minority.sides(5, 0), (vec![1, 2], vec![3, 4, 5]));
        assert_eq!(Split::Minority.sides(3, 2), (vec![3], vec![1, 2]));
    }

    #[test]
    fn cuts_cover_the_range() {
        let spec = RoundSpec { split: Split::One, load: Duration::ZERO, cut: (Duration::from_secs(4), Duration::from_secs(12)), heal_within: Duration::ZERO, recovery_timeout: Duration::ZERO };
        let cuts: Vec<u64> = (0..9).map(|r| spec.cut_for(r).as_secs()).collect();
        assert_eq!(cuts.iter().min(), Some(&4));
        assert_eq!(cuts.iter().max(), Some(&12));
        let mut sorted = cuts.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 9);
    }
}
