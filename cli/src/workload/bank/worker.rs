//! One bank worker: its own connection to one node, transfers until told
//! to stop, every outcome recorded.

use super::{BankConfig, Lost, NodeCounts, Transfer};
use crate::cluster::Node;
use crate::workload::sql::Session;
use crate::workload::{Bound, Divergence, Error, Result, Rng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What one worker saw.
pub(super) struct Outcome {
    pub counts: NodeCounts,
    pub committed: Vec<Transfer>,
    pub aborted: Vec<Transfer>,
    pub lost: Vec<Lost>,
    pub audit_failures: Vec<Divergence>,
    pub latencies: Vec<Duration>,
}

/// Worker `index` on `node`: transfers until `bound` is reached.
pub(super) fn run(
    index: usize,
    node: Node,
    config: &BankConfig,
    bound: &Bound,
    ids: &AtomicU64,
) -> Result<Outcome> {
    let mut session = Session::open(node, config.statement_timeout)?;
    let mut rng = Rng::for_worker(config.seed, index);
    let mut out = Outcome {
        counts: NodeCounts {
            node: node.index(),
            workers: 1,
            ..NodeCounts::default()
        },
        committed: Vec::new(),
        aborted: Vec::new(),
        lost: Vec::new(),
        audit_failures: Vec::new(),
        latencies: Vec::new(),
    };
    // Bounded by the deadline and the count in `bound`.
    let mut iteration: u64 = 0;
    while !bound.reached() {
        iteration += 1;
        let mut step = one_transfer(&mut session, config, bound, ids, &mut rng, &mut out);
        if step.is_ok() && config.audit_every > 0 && iteration.is_multiple_of(config.audit_every as u64) {
            step = audit(&mut session, config, &mut out);
            if let Err(e) = &step {
                lost(config, &mut out, e, None);
            }
        }
        match step {
            Err(e) if !survives(config, &e) => return Err(e),
            Err(_) => match reconnect(node, config, bound) {
                Some(s) => session = s,
                None => break,
            },
            Ok(()) => {}
        }
    }
    Ok(out)
}

/// How often a worker whose node was lost tries it again: often enough
/// to write as soon as it is back, seldom enough not to flood its log.
const RECONNECT_EVERY: Duration = Duration::from_millis(250);

/// A new session once `node` answers and is ready (`wsrep_ready`: a
/// joining node accepts connections before it accepts transactions), or
/// None when the run ended first. Failures on the way are not recorded:
/// one loss per outage says enough.
fn reconnect(node: Node, config: &BankConfig, bound: &Bound) -> Option<Session> {
    while !bound.reached() {
        std::thread::sleep(RECONNECT_EVERY);
        if node.status_var("wsrep_ready").ok().as_deref() != Some("ON") {
            continue;
        }
        if let Ok(session) = Session::open(node, config.statement_timeout) {
            return Some(session);
        }
    }
    None
}

/// A statement the server did not answer, or refused (no primary
/// component ...), when the config survives lost nodes. An answer of the
/// wrong shape (a missing account) always fails the run.
fn survives(config: &BankConfig, e: &Error) -> bool {
    config.survive_lost_nodes && matches!(e, Error::Statement { .. })
}

/// Records a statement that failed with the node lost (see [`survives`]).
fn lost(config: &BankConfig, out: &mut Outcome, e: &Error, in_doubt: Option<Transfer>) {
    if !survives(config, e) {
        return;
    }
    out.counts.lost += 1;
    out.lost.push(Lost {
        node: out.counts.node,
        at: Instant::now(),
        error: e.to_string(),
        in_doubt,
    });
}

/// One attempt: committed or aborted (recorded either way); an error only
/// for anything but ER_LOCK_DEADLOCK. An aborted transfer is not retried
/// under the same id: the next attempt is a new transfer, so the log can
/// tell every attempt apart.
fn one_transfer(
    session: &mut Session,
    config: &BankConfig,
    bound: &Bound,
    ids: &AtomicU64,
    rng: &mut Rng,
    out: &mut Outcome,
) -> Result<()> {
    let (from, to) = rng.two_distinct(config.accounts);
    let mut transfer = Transfer {
        id: ids.fetch_add(1, Ordering::Relaxed),
        from,
        to,
        amount: rng.between(1, config.max_amount.max(1)),
        node: session.node,
    };
    let started = Instant::now();
    match transact(session, &mut transfer) {
        Ok(()) => {
            out.latencies.push(started.elapsed());
            out.counts.committed += 1;
            bound.success();
            out.committed.push(transfer);
            Ok(())
        }
        Err(e) if e.is_deadlock() => {
            let at_commit = matches!(&e, Error::Statement { sql, .. } if sql == "COMMIT");
            if at_commit {
                out.counts.aborted_at_commit += 1;
            } else {
                out.counts.aborted_before_commit += 1;
            }
            out.aborted.push(transfer);
            session.rollback()
        }
        Err(e) => {
            // Leave no transaction open on the way out; the error that
            // matters is the first one.
            let _ = session.rollback();
            lost(config, out, &e, Some(transfer));
            Err(e)
        }
    }
}

/// The transfer as one transaction; fixes `transfer.amount` to what the
/// source can pay.
fn transact(s: &mut Session, t: &mut Transfer) -> Result<()> {
    s.run("START TRANSACTION")?;
    let sql = format!(
        "SELECT id, balance FROM bank.accounts WHERE id IN ({}, {}) FOR UPDATE",
        t.from, t.to
    );
    let rows = s.rows(&sql)?;
    let from_balance = balance_of(s, &sql, &rows, t.from)?;
    let to_balance = balance_of(s, &sql, &rows, t.to)?;
    t.amount = t.amount.min(from_balance).max(0);
    set_balance(s, t.from, from_balance - t.amount)?;
    set_balance(s, t.to, to_balance + t.amount)?;
    s.run(&format!(
        "INSERT INTO bank.log (id, src, dst, amount, origin) VALUES ({}, {}, {}, {}, {})",
        t.id, t.from, t.to, t.amount, t.node
    ))?;
    s.run("COMMIT")?;
    Ok(())
}

fn balance_of(s: &Session, sql: &str, rows: &[Vec<String>], account: u32) -> Result<i64> {
    let row = rows
        .iter()
        .find(|r| r.first().map(String::as_str) == Some(account.to_string().as_str()));
    let cell = row.and_then(|r| r.get(1));
    let cell = cell.ok_or_else(|| s.unexpected(sql, format!("account {account} is missing")))?;
    s.parse(sql, cell)
}

/// An absolute value: see the module comment of `bank` for why.
fn set_balance(s: &mut Session, account: u32, balance: i64) -> Result<()> {
    let sql = format!("UPDATE bank.accounts SET balance = {balance} WHERE id = {account}");
    let affected = s.run(&sql)?.affected_rows;
    // 0 when the balance does not change (a transfer of 0 from an empty account).
    if affected > 1 {
        return Err(s.unexpected(&sql, format!("{affected} rows changed, expected at most 1")));
    }
    Ok(())
}

const AUDIT_SQL: &str = "SELECT SUM(balance), COUNT(*) FROM bank.accounts";

/// One statement is one read view: the sum of every committed state is the
/// total, whatever transfers are in flight or being applied.
fn audit(s: &mut Session, config: &BankConfig, out: &mut Outcome) -> Result<()> {
    let rows = s.rows(AUDIT_SQL)?;
    let row = rows.first().filter(|r| r.len() == 2);
    let row = row.ok_or_else(|| s.unexpected(AUDIT_SQL, format!("got {rows:?}")))?;
    let (sum, count) = (s.parse(AUDIT_SQL, &row[0])?, s.parse(AUDIT_SQL, &row[1])?);
    out.counts.audits += 1;
    let expected = (config.total(), config.accounts as i64);
    if (sum, count) != expected {
        out.audit_failures.push(Divergence::Value {
            node: s.node,
            what: "SUM(balance), COUNT(*) of bank.accounts read during the load".into(),
            expected: format!("{}, {}", expected.0, expected.1),
            got: format!("{sum}, {count}"),
        });
    }
    Ok(())
}
