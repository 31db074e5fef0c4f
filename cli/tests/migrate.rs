//! `lockstep migrate` end to end, against a real 3-node Galera cluster
//! under a sysbench write load (on Galera nodes 2 and 3; node 1 is the one
//! copied and followed):
//!
//! 1. the copy is taken while the load writes, a 3-node lockstep cluster
//!    starts from it, and its node 1 replicates from Galera node 1;
//! 2. Galera node 1 is killed: replication moves to Galera node 2;
//! 3. lockstep node 1 (the replica) is killed: replication moves to
//!    lockstep node 2, and node 1, started again, does not replicate;
//! 4. the switch with read-only sources: the lockstep cluster catches up,
//!    a client writes to it as soon as the switch says so, and CHECKSUM
//!    TABLE of every table is still equal on Galera and on every lockstep
//!    node, because the comparison reads the views of the switch moment.
//!    The load's only errors besides certification conflicts are the
//!    read-only step's (it ignores 1290 and goes on).
//!
//! `LOCKSTEP_TEST_MIGRATE_ROWS`: rows per sysbench table (10,000; two tables).

mod common;

use common::*;
use lockstep_cli::cluster::{Cluster, Node, Provider};
use lockstep_cli::migrate::{self, Identity, Migration, Plan, Replication, Source, Step, SwitchOptions};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// MariaDB's ER_OPTION_PREVENTS_STATEMENT: what a write on a read-only
/// server gets. The others sysbench ignores are its defaults (deadlock,
/// lock wait timeout, record changed: a certification conflict on Galera).
const IGNORED: &str = "1290,1213,1205,1020";

const REPLICATION: (&str, &str) = ("repl", "repl-secret");

/// A client's write on the lockstep side while the switch compares: it
/// changes sbtest1's checksum there and not on the source.
/// (Galera's auto-increment control spaced the ids: which come first
/// depends on the node sysbench prepared on.)
const AFTER_SWITCH: &str = "UPDATE sbtest.sbtest1 SET c = 'after the switch' ORDER BY id LIMIT 1";
const APP: (&str, &str) = ("app", "app-secret");

#[test]
fn a_loaded_galera_cluster_moves_to_lockstep_with_failovers_on_both_sides_and_equal_checksums() {
    let _turn = take_turn();
    let started = Instant::now();
    let mut galera_spec = spec("migrate_galera", 28, 3);
    galera_spec.provider = Provider::Galera;
    galera_spec.extra.mysqld.extend(["server_id=1", "wsrep_gtid_mode=ON", "wsrep_gtid_domain_id=1"].map(String::from));
    let galera = up(galera_spec);
    accounts(galera.node(1));
    let rows = env_number("LOCKSTEP_TEST_MIGRATE_ROWS", 10_000);
    let mut load = Load::start(&galera, rows);

    let dir = test_dir("migrate");
    if let Ok(old) = Cluster::open(Migration::cluster_dir(&dir)) {
        let _ = old.down();
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (mut m, lockstep) = start(&galera, &dir);
    let lockstep = TestCluster::own(lockstep);
    follow_for(&mut m, &lockstep, Duration::from_secs(10), "after the start");

    galera.node(1).kill().expect("killing Galera node 1");
    let moved = follow_until(&mut m, &lockstep, |m| m.following != 0, "the source failover");
    eprintln!("Galera node 1 killed: {moved}");
    follow_for(&mut m, &lockstep, Duration::from_secs(8), "after the source failover");

    lockstep.node(1).kill().expect("killing lockstep node 1");
    let moved = follow_until(&mut m, &lockstep, |m| m.replica != 1, "the replica failover");
    eprintln!("lockstep node 1 killed: {moved}");
    let (took, _) = start_node(lockstep.node(1));
    let cleaned = migrate::keep_following(&mut m, &lockstep).unwrap_or_else(|e| panic!("following after node1 came back: {e}"));
    eprintln!("lockstep node1 back in {:.1}s: {cleaned:?}", took.as_secs_f64());
    follow_for(&mut m, &lockstep, Duration::from_secs(8), "after the replica failover");
    let replicating = lockstep.node(1).sql("SHOW SLAVE STATUS").expect("node1's replication status");
    assert!(replicating.is_empty(), "the former replica replicates again: {replicating:?}");

    let options = SwitchOptions { read_only: true, reverse: false, timeout: Duration::from_secs(120) };
    let mut say = |line: &str| {
        eprintln!("switch: {line}");
        if line.starts_with("the lockstep cluster takes the writes now") {
            let changed = lockstep.node(2).connect().and_then(|mut c| c.execute(AFTER_SWITCH));
            assert_eq!(changed.unwrap_or_else(|e| panic!("a write after the switch: {e}")), 1, "one row changed after the switch");
        }
    };
    let done = migrate::switch(&m, &lockstep, &options, &mut say).unwrap_or_else(|e| panic!("switch: {e}"));
    eprintln!("switched at {} after {:.1}s, {} tables equal; clients to {:?}", done.position, done.waited.as_secs_f64(), done.tables, done.clients);
    assert!(done.tables >= 2, "the sysbench tables were compared: {done:?}");
    let written = lockstep.node(3).sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM sbtest.sbtest1 WHERE c = 'after the switch'").expect("reading the write");
    assert_eq!(written, vec![vec!["1".to_string()]], "the write after the switch is on the lockstep cluster");
    load.stop_and_check();
    eprintln!("test took {:.1}s", started.elapsed().as_secs_f64());
}

/// The replication account, and an application account that read-only
/// stops (no READ_ONLY ADMIN), made on Galera (and so in the copy).
fn accounts(node: Node) {
    let sql = format!(
        "CREATE USER '{ru}'@'%' IDENTIFIED BY '{rp}'; GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{ru}'@'%'; \
         CREATE USER '{au}'@'%' IDENTIFIED BY '{ap}'; CREATE DATABASE sbtest; GRANT ALL ON sbtest.* TO '{au}'@'%'",
        ru = REPLICATION.0,
        rp = REPLICATION.1,
        au = APP.0,
        ap = APP.1
    );
    node.sql(&sql).unwrap_or_else(|e| panic!("accounts on Galera: {e}"));
}

fn start(galera: &Cluster, dir: &std::path::Path) -> (Migration, Cluster) {
    let sources = galera.nodes().map(|n| Source::from_cnf(&n.paths().cnf).expect("a Galera node's my.cnf")).collect();
    let plan = Plan {
        dir: dir.to_path_buf(),
        sources,
        replication: Replication { user: REPLICATION.0.into(), password: REPLICATION.1.into() },
        identity: Identity { server_id: 2, domain_id: 2 },
        cluster: spec("migrate_lockstep", 29, 3),
    };
    migrate::start(plan, &mut |step| match step {
        Step::Copied { bytes, took, position } => eprintln!("copied {} MiB in {:.1}s at {position}", bytes >> 20, took.as_secs_f64()),
        Step::Following { node, source, from } => eprintln!("lockstep node{node} replicates from {source} after {from}"),
        _ => {}
    })
    .unwrap_or_else(|e| panic!("migrate start: {e}"))
}

/// Follows (failover included) for `time`, printing the lag once a second.
fn follow_for(m: &mut Migration, cluster: &Cluster, time: Duration, when: &str) {
    let until = Instant::now() + time;
    while Instant::now() < until {
        let actions = migrate::keep_following(m, cluster).unwrap_or_else(|e| panic!("following {when}: {e}"));
        assert!(actions.is_empty(), "{when}: nothing had failed, yet: {actions:?}");
        let lag = migrate::lag(m, cluster).unwrap_or_else(|e| panic!("lag {when}: {e}"));
        eprintln!("{when}: node{} from {}: {lag}", m.replica, m.source().name());
        assert_eq!(lag.sql_running, "Yes", "{when}: the replica stopped applying: {lag}");
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Follows until `moved` holds of the migration; what was done.
fn follow_until(m: &mut Migration, cluster: &Cluster, moved: impl Fn(&Migration) -> bool, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut done = Vec::new();
    while !moved(m) {
        assert!(Instant::now() < deadline, "no {what} within 60 s");
        match migrate::keep_following(m, cluster) {
            Ok(actions) => done.extend(actions),
            Err(e) => eprintln!("{what}: {e} (again in a second)"),
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    done.join("; ")
}

/// sysbench oltp_write_only as the application account on Galera nodes 2 and 3.
struct Load {
    child: Child,
    log: std::path::PathBuf,
}

impl Load {
    fn start(galera: &Cluster, rows: u64) -> Load {
        let ports: Vec<String> = [2, 3].map(|n| galera.node(n).ports().client.to_string()).to_vec();
        let common = |command: &str| {
            let mut args = vec![
                "oltp_write_only".to_string(),
                "--mysql-host=127.0.0.1".into(),
                format!("--mysql-port={}", ports.join(",")),
                format!("--mysql-user={}", APP.0),
                format!("--mysql-password={}", APP.1),
                "--tables=2".into(),
                format!("--table-size={rows}"),
            ];
            args.push(command.into());
            args
        };
        let prepare = Command::new("sysbench").args(common("prepare")).output().expect("sysbench runs");
        assert!(prepare.status.success(), "sysbench prepare: {}", String::from_utf8_lossy(&prepare.stdout));
        let log = galera.dir().join("sysbench.log");
        let file = std::fs::File::create(&log).expect("the load's log");
        let mut args = common("run");
        args.splice(1..1, ["--threads=4".to_string(), "--time=0".into(), "--events=0".into(), format!("--mysql-ignore-errors={IGNORED}")]);
        let child = Command::new("sysbench").args(args).stdin(Stdio::null()).stdout(file.try_clone().unwrap()).stderr(file).spawn().expect("sysbench runs");
        Load { child, log }
    }

    /// The load ran to the end of the test: it never stopped on an error
    /// it does not ignore.
    fn stop_and_check(&mut self) {
        let early = self.child.try_wait().expect("the load's status");
        let _ = self.child.kill();
        let _ = self.child.wait();
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        assert!(early.is_none() && !text.contains("FATAL"), "the load stopped on an error ({early:?}):\n{text}");
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
