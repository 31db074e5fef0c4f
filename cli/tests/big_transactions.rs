//! Big transactions on a 2-node cluster under a write load, as users hurt
//! Galera: one UPDATE of a few hundred thousand rows (a writeset over
//! 64 MiB, which once wedged the cluster), the same with streaming
//! replication in 10,000-byte fragments (which once crashed the applying
//! node: two fragments of the transaction applied at once), and a node
//! whose apply fails (it must leave, not stay Primary with other data;
//! `consistency_vote.rs` has the 3-node case).
//!
//! Environment, besides common's:
//! - `LOCKSTEP_TEST_BIG_ROWS`: rows of the big table (default 300,000:
//!   the UPDATE's writeset is about 80 MB).

mod common;

use common::*;
use lockstep_cli::cluster::{Cluster, Node};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The background load: `THREADS` clients of node 1 updating random rows
/// of `TABLES` small tables, autocommit (sysbench's oltp_update_index).
const THREADS: usize = 8;
const TABLES: usize = 4;
const TABLE_ROWS: u64 = 1000;

/// A wedge is forever; a stall this long is one.
const WEDGED: Duration = Duration::from_secs(60);

fn two_nodes(name: &str, slot: u16) -> TestCluster {
    let spec = spec(name, slot, 2)
        .mysqld_option("innodb_flush_log_at_trx_commit=2")
        // The big table and its undo must fit without thrashing.
        .mysqld_option("innodb_buffer_pool_size=256M");
    let mut spec = spec;
    spec.slave_threads = 4;
    up(spec)
}

struct Load {
    stop: Arc<AtomicBool>,
    commits: Arc<AtomicU64>,
    errors: Arc<Mutex<Vec<String>>>,
    /// (time, commits so far) every 100 ms.
    samples: Arc<Mutex<Vec<(Instant, u64)>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(node: Node) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let commits = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for t in 0..THREADS {
            let (stop, commits, errors) = (stop.clone(), commits.clone(), errors.clone());
            let mut conn = node.connect().expect("load connection");
            threads.push(std::thread::spawn(move || {
                let mut rng = lockstep_cli::workload::Rng::new(t as u64 + 1);
                while !stop.load(Ordering::Relaxed) {
                    let sql = format!("UPDATE bg.t{} SET k = k + 1 WHERE id = {}", rng.below(TABLES as u64), 1 + rng.below(TABLE_ROWS));
                    match conn.execute(&sql) {
                        Ok(_) => {
                            commits.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => errors.lock().unwrap().push(e.to_string()),
                    }
                }
            }));
        }
        {
            let (stop, commits, samples) = (stop.clone(), commits.clone(), samples.clone());
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    samples.lock().unwrap().push((Instant::now(), commits.load(Ordering::Relaxed)));
                    std::thread::sleep(Duration::from_millis(100));
                }
            }));
        }
        Load { stop, commits, errors, samples, threads }
    }

    /// The longest time between `from` and `to` in which no load
    /// transaction committed.
    fn longest_stall(&self, from: Instant, to: Instant) -> Duration {
        let samples = self.samples.lock().unwrap();
        let mut longest = Duration::ZERO;
        let mut since: Option<(Instant, u64)> = None;
        for &(at, n) in samples.iter().filter(|(at, _)| *at >= from && *at <= to) {
            match since {
                Some((t0, n0)) if n0 == n => longest = longest.max(at - t0),
                _ => since = Some((at, n)),
            }
        }
        longest
    }

    fn stop(&mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join().expect("load thread");
        }
        std::mem::take(&mut *self.errors.lock().unwrap())
    }
}

impl Drop for Load {
    /// A failing test does not leave its load running.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn create_tables(node: Node, rows: u64) {
    let mut conn = node.connect().expect("connect");
    conn.execute("CREATE DATABASE bg").unwrap();
    for t in 0..TABLES {
        conn.execute(&format!("CREATE TABLE bg.t{t} (id INT PRIMARY KEY, k INT NOT NULL, KEY k_1(k))")).unwrap();
        conn.execute(&format!(
            "INSERT INTO bg.t{t} WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < {TABLE_ROWS}) SELECT i, i FROM s"
        ))
        .unwrap();
    }
    conn.execute("CREATE DATABASE bt").unwrap();
    conn.execute("CREATE TABLE bt.big (id INT PRIMARY KEY, k INT, c CHAR(120), KEY k_1(k))").unwrap();
    conn.execute("SET SESSION max_recursive_iterations = 100000000").unwrap();
    conn.execute(&format!(
        "INSERT INTO bt.big WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < {rows}) SELECT i, i, REPEAT('x', 120) FROM s"
    ))
    .unwrap();
}

fn sum_k(node: Node) -> String {
    node.sql("SELECT SUM(k) FROM bt.big").unwrap()[0][0].clone()
}

fn checksum(node: Node, table: &str) -> String {
    node.sql(&format!("CHECKSUM TABLE {table}")).unwrap()[0][1].clone()
}

fn replicated_bytes(node: Node) -> u64 {
    status_var(node, "wsrep_replicated_bytes").parse().unwrap()
}

/// Runs the big UPDATE on node 1 (in fragments of `fragment` bytes, or
/// none) under the load; checks it commits, reaches node 2, and the load
/// was never wedged. Returns the writeset bytes it replicated.
fn big_update(cluster: &Cluster, load: &Load, fragment: Option<u64>) -> u64 {
    let (n1, n2) = (cluster.node(1), cluster.node(2));
    let before = replicated_bytes(n1);
    let mut conn = n1.connect().unwrap();
    if let Some(bytes) = fragment {
        conn.execute("SET SESSION wsrep_trx_fragment_unit = 'bytes'").unwrap();
        conn.execute(&format!("SET SESSION wsrep_trx_fragment_size = {bytes}")).unwrap();
    }
    let load_before = load.commits.load(Ordering::Relaxed);
    let started = Instant::now();
    conn.execute("UPDATE bt.big SET k = k + 1").unwrap_or_else(|e| panic!("the big UPDATE ({fragment:?}): {e}"));
    let committed = Instant::now();
    let want = sum_k(n1);
    let deadline = committed + WEDGED;
    while sum_k(n2) != want {
        assert!(Instant::now() < deadline, "node 2 did not apply the big UPDATE within {WEDGED:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let applied = Instant::now();
    // The load goes on after it, too.
    let after = load.commits.load(Ordering::Relaxed);
    while load.commits.load(Ordering::Relaxed) < after + 100 {
        assert!(Instant::now() < applied + WEDGED, "the load stopped committing after the big UPDATE");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stall = load.longest_stall(started, Instant::now());
    eprintln!(
        "fragments {:?}: UPDATE {:.1}s, node 2 applied {:.1}s later, load committed {} meanwhile, longest stall {:.1}s",
        fragment,
        (committed - started).as_secs_f64(),
        (applied - committed).as_secs_f64(),
        after - load_before,
        stall.as_secs_f64()
    );
    assert!(stall < WEDGED, "the load stalled {stall:?}");
    replicated_bytes(n1) - before
}

fn assert_primary_synced(node: Node, size: &str) {
    let status = node.status().unwrap();
    assert_eq!(status.get("wsrep_cluster_status"), Some("Primary"), "{}", node.name());
    assert_eq!(status.get("wsrep_local_state_comment"), Some("Synced"), "{}", node.name());
    assert_eq!(status.get("wsrep_cluster_size"), Some(size), "{}", node.name());
}

#[test]
fn a_big_update_commits_under_load_with_and_without_streaming() {
    let _turn = take_turn();
    let cluster = two_nodes("big_update", 17);
    let (n1, n2) = (cluster.node(1), cluster.node(2));
    create_tables(n1, env_number("LOCKSTEP_TEST_BIG_ROWS", 300_000));
    let target = last_committed(n1);
    n2.wait_until("the big table", SYNC_TIMEOUT, |s| s.int("wsrep_last_committed") >= Some(target)).unwrap();
    let mut load = Load::start(n1);
    std::thread::sleep(Duration::from_secs(2));

    let whole = big_update(&cluster, &load, None);
    assert!(whole > 64 << 20, "the writeset must be over the old 64 MiB limit: {whole} bytes");
    big_update(&cluster, &load, Some(10_000));

    let errors = load.stop();
    assert!(errors.is_empty(), "load errors: {:?}", &errors[..errors.len().min(5)]);
    for node in [n1, n2] {
        assert_primary_synced(node, "2");
    }
    assert_eq!(checksum(n1, "bt.big"), checksum(n2, "bt.big"));
    for t in 0..TABLES {
        let table = format!("bg.t{t}");
        n2.wait_until("equal load tables", SYNC_TIMEOUT, |_| checksum(n1, &table) == checksum(n2, &table)).unwrap();
    }
    cluster.down().unwrap();
}

/// A node that cannot apply what the other committed loses the
/// consistency vote (1 against 1: success wins a tie) and leaves: it never
/// stays Primary with other data. As with Galera, its server stays up,
/// Disconnected, until the operator restarts it.
#[test]
fn a_node_that_fails_to_apply_leaves_the_cluster() {
    let _turn = take_turn();
    let cluster = two_nodes("apply_failure", 18);
    let (n1, n2) = (cluster.node(1), cluster.node(2));
    n1.sql("CREATE DATABASE test").unwrap();
    n1.sql("CREATE TABLE test.t (id INT PRIMARY KEY, v INT)").unwrap();
    n1.sql("INSERT INTO test.t VALUES (1, 0), (2, 0)").unwrap();
    n2.wait_until("the rows", SYNC_TIMEOUT, |_| n2.sql("SELECT COUNT(*) FROM test.t").is_ok_and(|r| r[0][0] == "2")).unwrap();
    // Behind the cluster's back: node 2 loses a row.
    let mut c2 = n2.connect().unwrap();
    c2.execute("SET SESSION wsrep_on = OFF").unwrap();
    c2.execute("DELETE FROM test.t WHERE id = 1").unwrap();
    n1.sql("UPDATE test.t SET v = 1 WHERE id = 1").unwrap();

    n1.wait_until("node 2 gone", WEDGED, |s| s.get("wsrep_cluster_size") == Some("1")).unwrap();
    assert_primary_synced(n1, "1");
    n1.sql("UPDATE test.t SET v = 2 WHERE id = 2").unwrap();
    wait_disconnected(n2, WEDGED, "after failing to apply");
    let log = n2.error_log_tail(200);
    assert!(log.contains("Inconsistency detected"), "node 2's log:\n{log}");
    assert_eq!(status_var(n2, "wsrep_ready"), "OFF");
    cluster.down().unwrap();
}
