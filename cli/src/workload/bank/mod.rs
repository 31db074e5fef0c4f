//! Bank transfers: `bank.accounts` holds a known total; workers on every
//! node move random amounts between random pairs of accounts, each transfer
//! one transaction that also writes a row with a unique id to `bank.log`.
//!
//! A transfer reads both balances with `SELECT ... FOR UPDATE` and writes
//! the new balances as absolute values (`SET balance = 950`, not
//! `balance - 50`): a lost update (two transactions on two nodes both
//! committing from the same read) then changes the total, where relative
//! updates would commute and hide it. So the total, the per-node ledger
//! and the row-by-row comparison catch a certification that lets a
//! conflict through, not only replication that drops or reorders.
//!
//! Use: [`setup`], then [`run`] (bounded by time and count), then [`check`]
//! once the load has stopped.

mod check;
mod worker;

pub use check::{check, snapshot, verify, BankCheck, BankSnapshot};

use super::converge::{self, Counters};
use super::sql::Session;
use super::{nodes_to_use, on_nodes, Bound, Divergence, Error, Latency, Result, Rng};
use crate::cluster::Cluster;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};

/// How big and how long a bank run is.
#[derive(Clone, Debug)]
pub struct BankConfig {
    /// Accounts 1..=accounts. Fewer accounts, more conflicts.
    pub accounts: u32,
    pub initial_balance: i64,
    /// Worker threads, each with its own connection; worker `i` talks to
    /// node `i % nodes + 1` (or to `nodes[i % nodes.len()]`).
    pub workers: usize,
    /// The nodes the workers talk to; empty: every node of the cluster.
    /// The others only replicate (e.g. a node that is about to be stopped,
    /// or one that joins during the run).
    pub nodes: Vec<usize>,
    /// The id of the run's first transfer: a second run checked together
    /// with a first one ([`BankRun::then`]) starts at the first one's
    /// [`BankRun::next_transfer_id`], so the ids in `bank.log` stay unique.
    pub first_transfer_id: u64,
    /// The run stops at this time ...
    pub duration: Duration,
    /// ... or when this many transfers have committed, whichever is first.
    pub max_transfers: u64,
    /// A transfer moves 1..=max_amount (capped at the source's balance, so
    /// balances never go negative).
    pub max_amount: i64,
    /// Every `audit_every`-th iteration a worker reads SUM(balance) in one
    /// snapshot on its node, which must be the total at every moment.
    /// 0: no audits.
    pub audit_every: u32,
    pub seed: u64,
    /// Socket timeout of every statement: a node that does not answer in
    /// this time fails the run.
    pub statement_timeout: Duration,
    /// For loads around crashes: a statement that fails other than with
    /// ER_LOCK_DEADLOCK (the node died, or is out of the primary
    /// component) leaves its transfer in doubt instead of failing the run.
    /// The worker records it ([`BankRun::lost`]) and connects again once
    /// its node is ready. A transfer in doubt may or may not be in the log:
    /// the client cannot know, so the checks accept either.
    pub survive_lost_nodes: bool,
}

impl Default for BankConfig {
    fn default() -> Self {
        BankConfig {
            accounts: 50,
            initial_balance: 1000,
            workers: 12,
            nodes: Vec::new(),
            first_transfer_id: 1,
            duration: Duration::from_secs(60),
            max_transfers: 1_000_000,
            max_amount: 100,
            audit_every: 20,
            seed: Rng::seed_from_clock(),
            statement_timeout: Duration::from_secs(60),
            survive_lost_nodes: false,
        }
    }
}

impl BankConfig {
    pub fn total(&self) -> i64 {
        self.accounts as i64 * self.initial_balance
    }
}

/// One transfer as its client saw it: `amount` moved from account `from`
/// to account `to` by a worker connected to `node`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub id: u64,
    pub from: u32,
    pub to: u32,
    pub amount: i64,
    pub node: usize,
}

impl fmt::Display for Transfer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "transfer #{} ({} from account {} to {}, via node{})",
            self.id, self.amount, self.from, self.to, self.node
        )
    }
}

/// A statement that failed because its node was lost (it died, or left
/// the primary component): when, why, and the transfer left in doubt.
#[derive(Clone, Debug)]
pub struct Lost {
    pub node: usize,
    pub at: Instant,
    pub error: String,
    /// None when the statement was an audit or a reconnection's.
    pub in_doubt: Option<Transfer>,
}

/// What the clients of one node saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeCounts {
    pub node: usize,
    pub workers: usize,
    pub committed: u64,
    /// ER_LOCK_DEADLOCK at COMMIT: mostly certification failures.
    pub aborted_at_commit: u64,
    /// ER_LOCK_DEADLOCK on an earlier statement: brute-force aborts by an
    /// applier (or a local InnoDB deadlock).
    pub aborted_before_commit: u64,
    pub audits: u64,
    /// Statements that failed with the node lost (see
    /// [`BankConfig::survive_lost_nodes`]).
    pub lost: u64,
}

impl NodeCounts {
    pub fn aborted(&self) -> u64 {
        self.aborted_at_commit + self.aborted_before_commit
    }

    /// Adds `other`'s counts (same node) to these.
    fn add(&mut self, other: &NodeCounts) {
        self.workers += other.workers;
        self.committed += other.committed;
        self.aborted_at_commit += other.aborted_at_commit;
        self.aborted_before_commit += other.aborted_before_commit;
        self.audits += other.audits;
        self.lost += other.lost;
    }
}

/// The outcome of [`run`]: what clients saw, to be checked by [`check`].
#[derive(Clone, Debug, Default)]
pub struct BankRun {
    pub seed: u64,
    pub elapsed: Duration,
    pub per_node: Vec<NodeCounts>,
    /// Every transfer whose COMMIT returned OK.
    pub committed: Vec<Transfer>,
    /// Every transfer that got ER_LOCK_DEADLOCK (retries get new ids).
    pub aborted: Vec<Transfer>,
    /// Every statement that failed with its node lost, when the config
    /// survives that; in time order per worker.
    pub lost: Vec<Lost>,
    /// Audits during the load that saw a wrong total.
    pub audit_failures: Vec<Divergence>,
    /// START TRANSACTION to COMMIT's OK, of committed transfers.
    pub latency: Latency,
    /// The provider's counters over the run, per node.
    pub counters: Vec<Counters>,
    /// The id a later run must start at (see [`BankConfig::first_transfer_id`]).
    pub next_transfer_id: u64,
}

impl BankRun {
    pub fn committed_count(&self) -> u64 {
        self.committed.len() as u64
    }

    pub fn aborted_count(&self) -> u64 {
        self.aborted.len() as u64
    }

    pub fn transfers_per_sec(&self) -> f64 {
        self.committed_count() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Aborted attempts over all attempts.
    pub fn abort_rate(&self) -> f64 {
        let attempts = self.committed_count() + self.aborted_count();
        self.aborted_count() as f64 / (attempts.max(1) as f64)
    }

    /// This run and a `later` one (on the same tables, with
    /// `first_transfer_id` = this run's `next_transfer_id`) as one, for a
    /// single [`check`] of both: phases of a test with different workers.
    /// Counts (workers too) and counters add up per node; the latency is the worse of
    /// the two phases' percentiles (a bound, not the percentile of all).
    pub fn then(mut self, later: BankRun) -> BankRun {
        self.elapsed += later.elapsed;
        for n in later.per_node {
            match self.per_node.iter_mut().find(|m| m.node == n.node) {
                Some(m) => m.add(&n),
                None => self.per_node.push(n),
            }
        }
        self.per_node.sort_by_key(|n| n.node);
        self.committed.extend(later.committed);
        self.committed.sort_by_key(|t| t.id);
        self.aborted.extend(later.aborted);
        self.aborted.sort_by_key(|t| t.id);
        self.lost.extend(later.lost);
        self.audit_failures.extend(later.audit_failures);
        self.latency = self.latency.worse(&later.latency);
        self.counters = converge::sum(&self.counters, &later.counters);
        self.next_transfer_id = self.next_transfer_id.max(later.next_transfer_id);
        self
    }

    /// A few lines for a test log or a benchmark report.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "bank: {} transfers committed in {:.1}s ({:.1}/s), {} aborted ({:.1}%), \
             latency {}, seed {}",
            self.committed_count(),
            self.elapsed.as_secs_f64(),
            self.transfers_per_sec(),
            self.aborted_count(),
            self.abort_rate() * 100.0,
            self.latency,
            self.seed
        );
        for n in &self.per_node {
            text.push_str(&format!(
                "\n  node{}: {} workers, {} committed, {} aborted at COMMIT, {} before, {} audits",
                n.node,
                n.workers,
                n.committed,
                n.aborted_at_commit,
                n.aborted_before_commit,
                n.audits
            ));
            if n.lost > 0 {
                text.push_str(&format!(", {} statements failed with the node lost", n.lost));
            }
        }
        for c in &self.counters {
            text.push_str(&format!("\n  {c}"));
        }
        text
    }
}

/// (Re)creates `bank.accounts` with every account at the initial balance
/// and an empty `bank.log`, on node 1, and waits until every node has them.
pub fn setup(cluster: &Cluster, config: &BankConfig) -> Result<()> {
    if config.accounts < 2 {
        return Err(Error::Unexpected {
            node: 1,
            sql: "(setup)".into(),
            what: format!("a bank needs 2 accounts or more, not {}", config.accounts),
        });
    }
    let mut s = Session::open(cluster.node(1), config.statement_timeout)?;
    s.run("DROP DATABASE IF EXISTS bank")?;
    s.run("CREATE DATABASE bank")?;
    s.run("CREATE TABLE bank.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)")?;
    // origin: the node whose client committed the transfer.
    s.run(
        "CREATE TABLE bank.log (id BIGINT PRIMARY KEY, src INT NOT NULL, dst INT NOT NULL, \
         amount BIGINT NOT NULL, origin INT NOT NULL)",
    )?;
    let values: Vec<String> = (1..=config.accounts)
        .map(|id| format!("({id}, {})", config.initial_balance))
        .collect();
    s.run(&format!(
        "INSERT INTO bank.accounts VALUES {}",
        values.join(", ")
    ))?;
    converge::wait_converged(cluster, config.statement_timeout)?;
    Ok(())
}

/// Runs the transfers from `config.workers` threads until the deadline or
/// `max_transfers` commits. Fails with the first worker error that is not
/// ER_LOCK_DEADLOCK (the other workers stop at their next transfer).
pub fn run(cluster: &Cluster, config: &BankConfig) -> Result<BankRun> {
    run_bounded(cluster, config, Bound::new(config.duration, config.max_transfers))
}

/// [`run`] that also stops as soon as `stop` is set: a load that lasts
/// until something else happened (a node joined), with `config.duration`
/// as the bound in case it never does.
pub fn run_until(cluster: &Cluster, config: &BankConfig, stop: &AtomicBool) -> Result<BankRun> {
    let bound = Bound::new(config.duration, config.max_transfers).or_when(stop);
    run_bounded(cluster, config, bound)
}

fn run_bounded(cluster: &Cluster, config: &BankConfig, bound: Bound) -> Result<BankRun> {
    let nodes = nodes_to_use(cluster.len(), &config.nodes)?;
    let before = converge::counters(cluster)?;
    let started = Instant::now();
    // Transfer ids, unique over all workers; an aborted attempt's id is
    // never reused.
    let next_id = AtomicU64::new(config.first_transfer_id);
    let outcomes = on_nodes(cluster, &nodes, config.workers, &bound, |w, node| {
        worker::run(w, node, config, &bound, &next_id)
    })?;
    let elapsed = started.elapsed();
    let after = converge::counters(cluster)?;
    let mut run = merge(cluster.len(), outcomes);
    run.seed = config.seed;
    run.elapsed = elapsed;
    run.counters = converge::delta(&before, &after);
    run.next_transfer_id = next_id.into_inner();
    Ok(run)
}

fn merge(nodes: usize, outcomes: Vec<worker::Outcome>) -> BankRun {
    let mut run = BankRun {
        per_node: (1..=nodes)
            .map(|node| NodeCounts {
                node,
                ..NodeCounts::default()
            })
            .collect(),
        ..BankRun::default()
    };
    let mut latencies = Vec::new();
    for o in outcomes {
        run.per_node[o.counts.node - 1].add(&o.counts);
        run.committed.extend(o.committed);
        run.aborted.extend(o.aborted);
        run.lost.extend(o.lost);
        run.audit_failures.extend(o.audit_failures);
        latencies.extend(o.latencies);
    }
    run.committed.sort_by_key(|t| t.id);
    run.aborted.sort_by_key(|t| t.id);
    run.latency = Latency::of(latencies);
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_up_per_node() {
        let outcome = |node, id| worker::Outcome {
            counts: NodeCounts {
                node,
                workers: 1,
                committed: 1,
                aborted_at_commit: 1,
                ..NodeCounts::default()
            },
            committed: vec![Transfer {
                id,
                from: 1,
                to: 2,
                amount: 5,
                node,
            }],
            aborted: vec![],
            lost: vec![],
            audit_failures: vec![],
            latencies: vec![Duration::from_millis(1)],
        };
        let run = merge(3, vec![outcome(2, 9), outcome(1, 3), outcome(2, 4)]);
        assert_eq!(run.per_node[1].workers, 2);
        assert_eq!(run.per_node[1].committed, 2);
        assert_eq!(run.per_node[2].workers, 0);
        let ids: Vec<u64> = run.committed.iter().map(|t| t.id).collect();
        assert_eq!(ids, [3, 4, 9]);
        assert!(run
            .summary()
            .contains("node2: 2 workers, 2 committed, 2 aborted at COMMIT"));
    }

    #[test]
    fn two_phases_check_as_one_run() {
        let transfer = |id, node| Transfer {
            id,
            from: 1,
            to: 2,
            amount: 1,
            node,
        };
        let counts = |node, committed| NodeCounts {
            node,
            workers: 1,
            committed,
            ..NodeCounts::default()
        };
        let first = BankRun {
            elapsed: Duration::from_secs(2),
            per_node: vec![counts(1, 2), counts(2, 0)],
            committed: vec![transfer(1, 1), transfer(3, 1)],
            aborted: vec![transfer(2, 1)],
            next_transfer_id: 4,
            ..BankRun::default()
        };
        let later = BankRun {
            elapsed: Duration::from_secs(1),
            per_node: vec![counts(1, 1), counts(2, 1), counts(4, 0)],
            committed: vec![transfer(5, 2), transfer(4, 1)],
            next_transfer_id: 6,
            ..BankRun::default()
        };
        let run = first.then(later);
        let ids: Vec<u64> = run.committed.iter().map(|t| t.id).collect();
        assert_eq!(ids, [1, 3, 4, 5]);
        assert_eq!(run.aborted_count(), 1);
        assert_eq!(run.elapsed, Duration::from_secs(3));
        assert_eq!(run.next_transfer_id, 6);
        let per_node: Vec<(usize, usize, u64)> = run
            .per_node
            .iter()
            .map(|n| (n.node, n.workers, n.committed))
            .collect();
        assert_eq!(per_node, [(1, 2, 3), (2, 2, 1), (4, 1, 0)]);
    }
}
