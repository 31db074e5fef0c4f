//! Jepsen's list-append workload for MariaDB, as its harness (jepsen-io/
//! mysql) describes it, written here from that description: three
//! tables `txn0..txn2 (id INT PRIMARY KEY, sk INT, val TEXT)`, a key in
//! table `key mod 3`; a read is `SELECT val` split on commas; an append
//! is `UPDATE ... SET val = CONCAT(val, ',', v)`, or an `INSERT` when the
//! row is not there yet. A transaction has 1 to 4 reads and appends of
//! about 10 keys in play, each value unique per key, at most 256 appends
//! per key before a fresh key takes its place, a pause of 0-9 ms before
//! each; one operation alone runs as autocommit. An error the server
//! gives aborts the transaction; a connection that breaks leaves it
//! unknown. What every client was told is the history `check::elle`
//! reads.

use super::sql::Session;
use super::{Error, Rng};
use crate::check::elle::history::{Key, Mop, Outcome, Txn, Value};
use crate::cluster::{Cluster, Node};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const DATABASE: &str = "jepsen";
const TABLES: u64 = 3;
/// Keys in play at a time.
const ACTIVE_KEYS: usize = 10;
/// Appends per key before a fresh key replaces it: lists (and the reads
/// that return them) stay short.
const MAX_APPENDS: u64 = 256;
const MAX_MOPS: u64 = 4;
/// Runs start their keys at multiples of this (see `first_free_key`).
const KEY_SPAN: Key = 100_000;
/// A client whose node is gone tries again this often.
const RETRY_EVERY: Duration = Duration::from_millis(100);

#[derive(Clone, Debug)]
pub struct Config {
    pub clients_per_node: usize,
    /// `wsrep_sync_wait` of every client session.
    pub sync_wait: u32,
    /// A statement's socket timeout: a frozen node leaves its clients'
    /// transactions unknown, it does not hang them.
    pub statement_timeout: Duration,
    pub seed: u64,
}

/// The keys in play and how many values each has been given, shared by
/// every client so that a value is unique per key.
struct Keys {
    active: Vec<(Key, u64)>,
    next: Key,
}

impl Keys {
    /// Keys from `first` on: a run on tables an earlier run filled takes
    /// keys of its own, so no value it reads is another run's.
    fn new(first: Key) -> Keys {
        Keys { active: (first..first + ACTIVE_KEYS as u64).map(|k| (k, 0)).collect(), next: first + ACTIVE_KEYS as u64 }
    }

    fn pick(&self, rng: &mut Rng) -> Key {
        self.active[rng.below(self.active.len() as u64) as usize].0
    }

    /// The next value for `key`, just picked (under the same lock, so it
    /// is still in play); a key that has had its share is replaced.
    fn value_for(&mut self, key: Key) -> Value {
        let i = self.active.iter().position(|(k, _)| *k == key).expect("a key just picked is in play");
        self.active[i].1 += 1;
        let v = self.active[i].1;
        if v >= MAX_APPENDS {
            self.active[i] = (self.next, 0);
            self.next += 1;
        }
        v
    }
}

fn table(key: Key) -> String {
    format!("{DATABASE}.txn{}", key % TABLES)
}

/// The tables, created on `node` and awaited on every node.
pub fn setup(cluster: &Cluster, node: usize) -> super::Result<()> {
    let mut s = Session::open(cluster.node(node), Duration::from_secs(60))?;
    s.run(&format!("CREATE DATABASE IF NOT EXISTS {DATABASE}"))?;
    for t in 0..TABLES {
        s.run(&format!("CREATE TABLE IF NOT EXISTS {DATABASE}.txn{t} (id INT NOT NULL PRIMARY KEY, sk INT NOT NULL, val TEXT) ENGINE=InnoDB"))?;
    }
    for n in cluster.nodes() {
        let mut s = Session::open(n, Duration::from_secs(60))?;
        s.run(&format!("SET SESSION wsrep_sync_wait=1; SELECT COUNT(*) FROM {DATABASE}.txn{}", TABLES - 1))?;
    }
    Ok(())
}

/// The first key a run may take: past every key already in the tables.
pub fn first_free_key(cluster: &Cluster) -> super::Result<Key> {
    let mut s = Session::open(cluster.node(1), Duration::from_secs(60))?;
    let mut highest = -1;
    for t in 0..TABLES {
        highest = highest.max(s.int(&format!("SET SESSION wsrep_sync_wait=1; SELECT COALESCE(MAX(id), -1) FROM {DATABASE}.txn{t}"))?);
    }
    // Past a round hundred thousand: an append in doubt of an earlier
    // run that commits late lands among that run's keys, not this one's.
    Ok(((highest + 1) as Key / KEY_SPAN + 1) * KEY_SPAN)
}

/// Clients on every node run transactions on keys from `first` on until
/// `stop`; the history of all of them, times from `epoch`. Also the key
/// after the last one used.
pub fn run_until(cluster: &Cluster, config: &Config, first: Key, epoch: Instant, stop: &AtomicBool) -> (Vec<Txn>, Key) {
    let keys = Mutex::new(Keys::new(first));
    let clients: Vec<(usize, Node)> = cluster.nodes().flat_map(|n| std::iter::repeat_n(n, config.clients_per_node)).enumerate().collect();
    let mut history = std::thread::scope(|scope| {
        let handles: Vec<_> = clients.into_iter().map(|(p, node)| {
            let keys = &keys;
            scope.spawn(move || client(node, p, config, keys, epoch, stop))
        }).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect::<Vec<Txn>>()
    });
    history.sort_by_key(|t| t.invoked);
    let last = keys.into_inner().unwrap_or_else(|p| p.into_inner()).next;
    (history, last)
}

fn micros(epoch: Instant) -> u64 {
    epoch.elapsed().as_micros() as u64
}

/// One client: its own connection, one transaction at a time.
fn client(node: Node, process: usize, config: &Config, keys: &Mutex<Keys>, epoch: Instant, stop: &AtomicBool) -> Vec<Txn> {
    let mut rng = Rng::for_worker(config.seed, process);
    let mut history = Vec::new();
    let mut session: Option<Session> = None;
    while !stop.load(Ordering::Relaxed) {
        let Some(s) = session.as_mut() else {
            session = Session::open(node, config.statement_timeout).ok().and_then(|mut s| s.run(&format!("SET SESSION wsrep_sync_wait={}", config.sync_wait)).ok().map(|_| s));
            if session.is_none() {
                std::thread::sleep(RETRY_EVERY);
            }
            continue;
        };
        let planned = plan(&mut rng, keys);
        let invoked = micros(epoch);
        let (mops, outcome) = transaction(s, &mut rng, planned);
        let completed = (outcome != Outcome::Unknown).then(|| micros(epoch));
        if outcome == Outcome::Unknown {
            session = None;
        }
        if outcome == Outcome::Unknown {
            std::thread::sleep(RETRY_EVERY); // the node is gone or refuses (not primary...)
        }
        history.push(Txn { process, node: node.index(), invoked, completed, outcome, mops, final_read: false });
    }
    history
}

/// 1 to 4 operations, reads and appends alike.
fn plan(rng: &mut Rng, keys: &Mutex<Keys>) -> Vec<Mop> {
    let mut keys = keys.lock().unwrap_or_else(|p| p.into_inner());
    (0..1 + rng.below(MAX_MOPS))
        .map(|_| {
            let k = keys.pick(rng);
            match rng.below(2) {
                0 => Mop::Read(k, None),
                _ => Mop::Append(k, keys.value_for(k)),
            }
        })
        .collect()
}

/// Errors that say the transaction did not commit, whenever they come:
/// a deadlock (a certification failure too), a lock wait timeout, a
/// record changed since it was read, the key another append inserted
/// first. Jepsen's harness counts these as failed, and so do we.
const ABORTED: [u16; 4] = [1213, 1205, 1020, 1062];

/// Runs the planned operations; what ran (reads filled in; the one that
/// failed as it was sent, since an append whose answer was lost may have
/// happened) and how it ended.
fn transaction(s: &mut Session, rng: &mut Rng, planned: Vec<Mop>) -> (Vec<Mop>, Outcome) {
    let alone = planned.len() == 1;
    let mut done = Vec::with_capacity(planned.len());
    let mut last_statement = alone;
    let result = (|| -> super::Result<()> {
        if !alone {
            s.run("START TRANSACTION")?;
        }
        for m in planned {
            std::thread::sleep(Duration::from_millis(rng.below(10)));
            let sent = match &m {
                Mop::Read(k, _) => Mop::Read(*k, None),
                append => append.clone(),
            };
            match operation(s, m) {
                Ok(m) => done.push(m),
                Err(e) => {
                    done.push(sent);
                    return Err(e);
                }
            }
        }
        if !alone {
            last_statement = true;
            s.run("COMMIT")?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => (done, Outcome::Committed),
        Err(Error::Statement { source, .. }) if source.sql_code().is_some() => {
            let _ = s.rollback();
            let code = source.sql_code().unwrap_or(0);
            // Any other error at the statement that commits (COMMIT, or an
            // autocommit statement) may come after the writeset was
            // ordered: a node turning non-primary answers so, and the
            // others commit it.
            let outcome = if ABORTED.contains(&code) || !last_statement { Outcome::Aborted } else { Outcome::Unknown };
            (done, outcome)
        }
        Err(_) => (done, Outcome::Unknown),
    }
}

fn operation(s: &mut Session, m: Mop) -> super::Result<Mop> {
    match m {
        Mop::Read(k, _) => {
            let rows = s.rows(&format!("SELECT val FROM {} WHERE id = {k}", table(k)))?;
            let list = match rows.first().and_then(|r| r.first()) {
                None => Vec::new(),
                Some(text) => text.split(',').map(|v| v.parse().map_err(|_| s.unexpected("SELECT val", format!("{text:?} is not a list")))).collect::<super::Result<_>>()?,
            };
            Ok(Mop::Read(k, Some(list)))
        }
        Mop::Append(k, v) => {
            let updated = s.run(&format!("UPDATE {} SET val = CONCAT(val, ',', '{v}') WHERE id = {k}", table(k)))?;
            if updated.affected_rows == 0 {
                s.run(&format!("INSERT INTO {} (id, sk, val) VALUES ({k}, {k}, '{v}')", table(k)))?;
            }
            Ok(Mop::Append(k, v))
        }
    }
}

/// A read of every key of `keys` on every node, causally
/// (`wsrep_sync_wait=1`), one transaction per node: the final reads.
pub fn final_reads(cluster: &Cluster, keys: std::ops::Range<Key>, epoch: Instant) -> super::Result<Vec<Txn>> {
    let mut out = Vec::new();
    for node in cluster.nodes() {
        let mut s = Session::open(node, Duration::from_secs(120))?;
        s.run("SET SESSION wsrep_sync_wait=1")?;
        let invoked = micros(epoch);
        let mut mops = Vec::new();
        for t in 0..TABLES {
            let rows = s.rows(&format!("SELECT id, val FROM {DATABASE}.txn{t} WHERE id >= {} AND id < {}", keys.start, keys.end))?;
            for r in rows {
                let k: Key = s.parse("SELECT id", &r[0])? as Key;
                let list = r[1].split(',').filter(|v| !v.is_empty()).map(|v| v.parse().unwrap_or(Value::MAX)).collect();
                mops.push(Mop::Read(k, Some(list)));
            }
        }
        let present: std::collections::HashSet<Key> = mops.iter().map(Mop::key).collect();
        mops.extend(keys.clone().filter(|k| !present.contains(k)).map(|k| Mop::Read(k, Some(Vec::new()))));
        out.push(Txn { process: usize::MAX, node: node.index(), invoked, completed: Some(micros(epoch)), outcome: Outcome::Committed, mops, final_read: true });
    }
    Ok(out)
}
