//! The checks after a bank run: read every node (a [`BankSnapshot`]), then
//! compare the nodes with each other and with what the clients saw
//! ([`verify`], a pure function, unit-tested with fabricated snapshots).

use super::{BankConfig, BankRun, Transfer};
use crate::cluster::{Cluster, Node};
use crate::workload::converge::{self, Converged};
use crate::workload::sql::Session;
use crate::workload::{diverged_if_any, rows_agree, Divergence, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What one node holds after the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BankSnapshot {
    pub node: usize,
    /// Account id to balance.
    pub accounts: BTreeMap<i64, i64>,
    /// Transfer id to the row of `bank.log` (`node` is its `origin`).
    pub log: BTreeMap<u64, Transfer>,
    /// `CHECKSUM TABLE` per table, e.g. ("bank.accounts", "3171926043").
    pub checksums: Vec<(String, String)>,
}

/// Every check passed: when the nodes agreed, and on what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankCheck {
    pub converged: Converged,
    pub nodes: usize,
    pub log_rows: usize,
}

/// Waits until every node has committed the same seqno, reads every node,
/// and verifies. Call after [`super::run`] returned.
pub fn check(
    cluster: &Cluster,
    config: &BankConfig,
    run: &BankRun,
    timeout: Duration,
) -> Result<BankCheck> {
    let converged = converge::wait_converged(cluster, timeout)?;
    let snapshots = cluster
        .nodes()
        .map(|n| snapshot(n, timeout))
        .collect::<Result<Vec<_>>>()?;
    diverged_if_any(verify(config, run, &snapshots))?;
    Ok(BankCheck {
        converged,
        nodes: snapshots.len(),
        log_rows: snapshots.first().map_or(0, |s| s.log.len()),
    })
}

const ACCOUNTS_SQL: &str = "SELECT id, balance FROM bank.accounts ORDER BY id";
const LOG_SQL: &str = "SELECT id, src, dst, amount, origin FROM bank.log ORDER BY id";
const CHECKSUM_SQL: &str = "CHECKSUM TABLE bank.accounts, bank.log";

/// Reads `node`'s accounts and log in one snapshot, after a causal wait
/// (wsrep_sync_wait=1: the snapshot begins after everything the cluster
/// had committed when it was asked for), then the tables' checksums.
pub fn snapshot(node: Node, timeout: Duration) -> Result<BankSnapshot> {
    let mut s = Session::open(node, timeout)?;
    s.run("SET SESSION wsrep_sync_wait = 1")?;
    s.run("START TRANSACTION WITH CONSISTENT SNAPSHOT")?;
    let accounts = read_accounts(&mut s)?;
    let log = read_log(&mut s)?;
    s.run("COMMIT")?;
    let checksums = s
        .rows(CHECKSUM_SQL)?
        .into_iter()
        .filter_map(|row| <[String; 2]>::try_from(row).ok())
        .map(|[table, sum]| (table, sum))
        .collect();
    Ok(BankSnapshot {
        node: node.index(),
        accounts,
        log,
        checksums,
    })
}

fn read_accounts(s: &mut Session) -> Result<BTreeMap<i64, i64>> {
    let rows = s.rows(ACCOUNTS_SQL)?;
    let mut accounts = BTreeMap::new();
    for row in rows {
        let [id, balance] = cells(s, ACCOUNTS_SQL, row)?;
        accounts.insert(
            s.parse(ACCOUNTS_SQL, &id)?,
            s.parse(ACCOUNTS_SQL, &balance)?,
        );
    }
    Ok(accounts)
}

fn read_log(s: &mut Session) -> Result<BTreeMap<u64, Transfer>> {
    let rows = s.rows(LOG_SQL)?;
    let mut log = BTreeMap::new();
    for row in rows {
        let [id, src, dst, amount, origin] = cells(s, LOG_SQL, row)?;
        let int = |cell: &str| s.parse(LOG_SQL, cell);
        let transfer = Transfer {
            id: int(&id)? as u64,
            from: int(&src)? as u32,
            to: int(&dst)? as u32,
            amount: int(&amount)?,
            node: int(&origin)? as usize,
        };
        log.insert(transfer.id, transfer);
    }
    Ok(log)
}

fn cells<const N: usize>(s: &Session, sql: &str, row: Vec<String>) -> Result<[String; N]> {
    <[String; N]>::try_from(row)
        .map_err(|row| s.unexpected(sql, format!("expected {N} columns, got {row:?}")))
}

/// Everything that is wrong, most telling first: nodes that disagree
/// (checksums, then the account rows that differ), a node whose accounts
/// break the invariant or do not match its own log, transfers lost or
/// present against what the clients were told, log rows that differ, and
/// totals the workers read during the load. Empty when all is well.
pub fn verify(config: &BankConfig, run: &BankRun, snapshots: &[BankSnapshot]) -> Vec<Divergence> {
    let mut found = checksums_agree(snapshots);
    let accounts: Vec<_> = snapshots
        .iter()
        .map(|s| (s.node, account_texts(&s.accounts)))
        .collect();
    found.extend(rows_agree("bank.accounts", &accounts));
    for snap in snapshots {
        found.extend(totals(config, snap));
        found.extend(ledger(config, snap));
    }
    for snap in snapshots {
        found.extend(acknowledged(run, snap));
    }
    let logs: Vec<_> = snapshots
        .iter()
        .map(|s| (s.node, log_texts(&s.log)))
        .collect();
    found.extend(rows_agree("bank.log", &logs));
    found.extend(run.audit_failures.iter().cloned());
    found
}

/// One divergence per table whose checksum is not the same everywhere.
fn checksums_agree(snapshots: &[BankSnapshot]) -> Vec<Divergence> {
    let tables: BTreeSet<&String> = snapshots
        .iter()
        .flat_map(|s| s.checksums.iter().map(|(t, _)| t))
        .collect();
    let mut found = Vec::new();
    for table in tables {
        let by_node: Vec<(usize, String)> = snapshots
            .iter()
            .map(|s| {
                let sum = s.checksums.iter().find(|(t, _)| t == table);
                (s.node, sum.map_or("(none)".into(), |(_, v)| v.clone()))
            })
            .collect();
        if by_node.iter().any(|(_, v)| *v != by_node[0].1) {
            found.push(Divergence::Checksum {
                table: table.clone(),
                by_node,
            });
        }
    }
    found
}

fn account_texts(accounts: &BTreeMap<i64, i64>) -> BTreeMap<i64, String> {
    accounts
        .iter()
        .map(|(id, balance)| (*id, format!("balance {balance}")))
        .collect()
}

fn log_texts(log: &BTreeMap<u64, Transfer>) -> BTreeMap<i64, String> {
    log.values().map(|t| (t.id as i64, log_row(t))).collect()
}

fn log_row(t: &Transfer) -> String {
    format!(
        "{} from {} to {} via node{}",
        t.amount, t.from, t.to, t.node
    )
}

/// The invariant on one node: every account there, the total unchanged,
/// no balance below zero.
fn totals(config: &BankConfig, snap: &BankSnapshot) -> Vec<Divergence> {
    let mut found = Vec::new();
    let value = |what: String, expected: String, got: String| Divergence::Value {
        node: snap.node,
        what,
        expected,
        got,
    };
    let count = snap.accounts.len() as i64;
    if count != config.accounts as i64 {
        let what = "COUNT(*) of bank.accounts".to_string();
        found.push(value(what, config.accounts.to_string(), count.to_string()));
    }
    let sum: i64 = snap.accounts.values().sum();
    if sum != config.total() {
        let what = "SUM(balance) of bank.accounts".to_string();
        found.push(value(what, config.total().to_string(), sum.to_string()));
    }
    for (id, balance) in snap.accounts.iter().filter(|(_, b)| **b < 0) {
        let what = format!("balance of account {id}");
        found.push(value(what, ">= 0".into(), balance.to_string()));
    }
    found
}

/// Each balance on a node equals the initial balance plus what that node's
/// own `bank.log` says came in minus what went out: a transfer is one
/// transaction, so a node applying half of one breaks this.
fn ledger(config: &BankConfig, snap: &BankSnapshot) -> Vec<Divergence> {
    let mut net: BTreeMap<i64, i64> = BTreeMap::new();
    for t in snap.log.values() {
        *net.entry(t.from as i64).or_default() -= t.amount;
        *net.entry(t.to as i64).or_default() += t.amount;
    }
    let mut found = Vec::new();
    for (id, balance) in &snap.accounts {
        let change = net.get(id).copied().unwrap_or(0);
        let expected = config.initial_balance + change;
        if *balance != expected {
            found.push(Divergence::Value {
                node: snap.node,
                what: format!("balance of account {id}"),
                expected: format!(
                    "{expected} (initial {} {change:+} in bank.log)",
                    config.initial_balance
                ),
                got: balance.to_string(),
            });
        }
    }
    found
}

/// The node against the clients: every committed transfer present and as
/// written, no aborted one present, one in doubt (its node was lost) as
/// written if present, nothing nobody wrote.
fn acknowledged(run: &BankRun, snap: &BankSnapshot) -> Vec<Divergence> {
    let mut found = Vec::new();
    let in_doubt: Vec<&Transfer> = run.lost.iter().filter_map(|l| l.in_doubt.as_ref()).collect();
    for t in &run.committed {
        match snap.log.get(&t.id) {
            None => found.push(Divergence::Lost {
                node: snap.node,
                transfer: t.to_string(),
            }),
            Some(row) => found.extend(as_written(snap.node, t, row)),
        }
    }
    for t in &in_doubt {
        if let Some(row) = snap.log.get(&t.id) {
            found.extend(as_written(snap.node, t, row));
        }
    }
    let aborted: BTreeSet<u64> = run.aborted.iter().map(|t| t.id).collect();
    for t in run.aborted.iter().filter(|t| snap.log.contains_key(&t.id)) {
        found.push(Divergence::AbortedButPresent {
            node: snap.node,
            transfer: t.to_string(),
        });
    }
    let known: BTreeSet<u64> = run
        .committed
        .iter()
        .chain(in_doubt.iter().copied())
        .map(|t| t.id)
        .chain(aborted.iter().copied())
        .collect();
    for id in snap.log.keys().filter(|id| !known.contains(id)) {
        found.push(Divergence::Unknown {
            node: snap.node,
            table: "bank.log".into(),
            key: *id as i64,
        });
    }
    found
}

/// A log row against what its client wrote.
fn as_written(node: usize, t: &Transfer, row: &Transfer) -> Option<Divergence> {
    (row != t).then(|| Divergence::Value {
        node,
        what: format!("bank.log id={}", t.id),
        expected: log_row(t),
        got: log_row(row),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::bank::Lost;

    fn config() -> BankConfig {
        BankConfig {
            accounts: 3,
            initial_balance: 100,
            ..BankConfig::default()
        }
    }

    fn transfer(id: u64, from: u32, to: u32, amount: i64, node: usize) -> Transfer {
        Transfer {
            id,
            from,
            to,
            amount,
            node,
        }
    }

    /// Three nodes that applied transfers #1 (node1) and #2 (node2), with
    /// #3 aborted: all agree.
    fn healthy() -> (BankRun, Vec<BankSnapshot>) {
        let committed = vec![transfer(1, 1, 2, 30, 1), transfer(2, 2, 3, 10, 2)];
        let run = BankRun {
            committed: committed.clone(),
            aborted: vec![transfer(3, 3, 1, 5, 3)],
            ..BankRun::default()
        };
        let snap = |node| BankSnapshot {
            node,
            accounts: [(1, 70), (2, 120), (3, 110)].into(),
            log: committed.iter().map(|t| (t.id, t.clone())).collect(),
            checksums: vec![
                ("bank.accounts".into(), "111".into()),
                ("bank.log".into(), "222".into()),
            ],
        };
        (run, vec![snap(1), snap(2), snap(3)])
    }

    fn texts(found: &[Divergence]) -> Vec<String> {
        found.iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn healthy_nodes_pass() {
        let (run, snaps) = healthy();
        assert_eq!(verify(&config(), &run, &snaps), []);
    }

    /// What `SET SESSION wsrep_on=0; UPDATE ...` on one node looks like.
    #[test]
    fn a_balance_changed_on_one_node_only() {
        let (run, mut snaps) = healthy();
        snaps[2].accounts.insert(2, 121);
        snaps[2].checksums[0].1 = "999".into();
        let found = texts(&verify(&config(), &run, &snaps));
        assert_eq!(
            found,
            [
                "CHECKSUM TABLE bank.accounts differs: node1=111, node2=111, node3=999",
                "bank.accounts id=2 differs: node1=balance 120, node2=balance 120, node3=balance 121",
                "node3: SUM(balance) of bank.accounts = 301, expected 300",
                "node3: balance of account 2 = 121, expected 120 (initial 100 +20 in bank.log)",
            ]
        );
    }

    /// Transfer #2's client lost its node at COMMIT: present everywhere
    /// as written, or absent everywhere, both pass; another amount is
    /// caught.
    #[test]
    fn a_transfer_in_doubt_may_be_there_or_not_but_as_written() {
        let (mut run, snaps) = healthy();
        let in_doubt = run.committed.pop().expect("two committed");
        run.lost.push(Lost {
            node: 2,
            at: std::time::Instant::now(),
            error: "connection lost".into(),
            in_doubt: Some(in_doubt),
        });
        assert_eq!(verify(&config(), &run, &snaps), []);
        let (_, mut without) = healthy();
        for snap in &mut without {
            snap.log.remove(&2);
            snap.accounts = [(1, 70), (2, 130), (3, 100)].into();
        }
        assert_eq!(verify(&config(), &run, &without), []);
        let mut other = snaps.clone();
        other[0].log.insert(2, transfer(2, 2, 3, 11, 2));
        let found = texts(&verify(&config(), &run, &other));
        assert!(found.contains(&"node1: bank.log id=2 = 11 from 2 to 3 via node2, expected 10 from 2 to 3 via node2".into()), "{found:#?}");
    }

    #[test]
    fn a_transfer_lost_on_one_node() {
        let (run, mut snaps) = healthy();
        snaps[1].log.remove(&2);
        snaps[1].accounts.insert(2, 130);
        snaps[1].accounts.insert(3, 100);
        let found = texts(&verify(&config(), &run, &snaps));
        assert!(found.contains(
            &"node2: transfer #2 (10 from account 2 to 3, via node2) was acknowledged as committed but is missing".into()
        ), "{found:#?}");
        assert!(found.contains(
            &"bank.log id=2 differs: node1=10 from 2 to 3 via node2, node2=(no row), node3=10 from 2 to 3 via node2".into()
        ), "{found:#?}");
        // The node is consistent with itself: no ledger or total complaint.
        assert!(
            !found
                .iter()
                .any(|f| f.contains("SUM(balance)") || f.contains("initial")),
            "{found:#?}"
        );
    }

    #[test]
    fn an_aborted_transfer_that_committed_and_an_unknown_one() {
        let (run, mut snaps) = healthy();
        for snap in &mut snaps {
            snap.log.insert(3, transfer(3, 3, 1, 5, 3));
            snap.log.insert(9, transfer(9, 1, 2, 0, 1));
            snap.accounts.insert(3, 105);
            snap.accounts.insert(1, 75);
        }
        let found = texts(&verify(&config(), &run, &snaps));
        assert_eq!(found.len(), 6, "{found:#?}");
        assert_eq!(
            found[0],
            "node1: transfer #3 (5 from account 3 to 1, via node3) is present although its client got ER_LOCK_DEADLOCK"
        );
        assert_eq!(
            found[1],
            "node1: bank.log id=9 exists but no client wrote it"
        );
    }

    #[test]
    fn a_log_row_that_differs_from_what_the_client_wrote() {
        let (run, mut snaps) = healthy();
        for snap in &mut snaps {
            snap.log.insert(1, transfer(1, 1, 2, 31, 1));
        }
        let found = texts(&verify(&config(), &run, &snaps));
        assert!(found.contains(
            &"node1: bank.log id=1 = 31 from 1 to 2 via node1, expected 30 from 1 to 2 via node1".into()
        ), "{found:#?}");
    }

    #[test]
    fn negative_balance_and_missing_account() {
        let (run, mut snaps) = healthy();
        for snap in &mut snaps {
            snap.accounts = [(1, -10), (2, 310)].into();
        }
        let found = texts(&verify(&config(), &run, &snaps));
        assert!(
            found.contains(&"node1: COUNT(*) of bank.accounts = 2, expected 3".into()),
            "{found:#?}"
        );
        assert!(
            found.contains(&"node1: balance of account 1 = -10, expected >= 0".into()),
            "{found:#?}"
        );
    }

    #[test]
    fn audit_failures_are_reported() {
        let (mut run, snaps) = healthy();
        run.audit_failures.push(Divergence::Value {
            node: 2,
            what: "SUM(balance), COUNT(*) of bank.accounts read during the load".into(),
            expected: "300, 3".into(),
            got: "290, 3".into(),
        });
        assert_eq!(verify(&config(), &run, &snaps).len(), 1);
    }
}
