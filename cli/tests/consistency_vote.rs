//! The consistency vote on a 3-node cluster under a write load: one
//! node's table is changed behind the cluster's back, the next writeset
//! that touches the row fails there only, the group votes, and that node
//! leaves while the other two stay Primary, keep committing and hold the
//! same data. Then the node rejoins without a restart (a mysqldump SST,
//! as galera_vote_rejoin_mysqldump does) and applies what follows.
//! `LOCKSTEP_TEST_MULTI_PROVIDER=galera` runs it on the referee.

mod common;

use common::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longer than a vote and an eviction take; a node that never leaves
/// fails the test here.
const LEAVES_WITHIN: Duration = Duration::from_secs(60);

/// A client of node 1 inserting rows, one autocommit each, until stopped.
fn writer(node: lockstep_cli::cluster::Node, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    let mut conn = node.connect().expect("a client of node 1");
    std::thread::spawn(move || {
        let mut id = 0u64;
        while !stop.load(Ordering::SeqCst) {
            id += 1;
            if conn.execute(&format!("INSERT INTO test.load VALUES ({id})")).is_ok() {
                done.fetch_add(1, Ordering::SeqCst);
            }
        }
    })
}

#[test]
fn a_node_whose_data_diverged_is_voted_out_and_the_others_go_on() {
    let cluster = up(spec("consistency_vote", 20, 3));
    let (n1, n2, n3) = (cluster.node(1), cluster.node(2), cluster.node(3));
    n1.sql("CREATE DATABASE test; CREATE TABLE test.t (id INT PRIMARY KEY, v INT); CREATE TABLE test.load (id INT PRIMARY KEY)").unwrap();
    n1.sql("INSERT INTO test.t VALUES (1, 0), (2, 0), (3, 0)").unwrap();
    // mysqldump's SST logs in to the joiner too: every node has the user.
    n1.sql("CREATE USER sst IDENTIFIED BY 'sst'; GRANT ALL PRIVILEGES ON *.* TO sst").unwrap();
    n3.wait_until("the rows on node 3", SYNC_TIMEOUT, |_| n3.sql("SELECT COUNT(*) FROM test.t").is_ok_and(|r| r[0][0] == "3")).unwrap();
    let (stop, done) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let load = writer(n1, stop.clone(), done.clone());

    // Behind the cluster's back: node 3 loses a row. The UPDATE of it
    // fails there only: 2 successes against 1 failure.
    let mut c3 = n3.connect().unwrap();
    c3.execute("SET SESSION wsrep_on = OFF").unwrap();
    c3.execute("DELETE FROM test.t WHERE id = 1").unwrap();
    n1.sql("UPDATE test.t SET v = 1 WHERE id = 1").unwrap();

    wait_disconnected(n3, LEAVES_WITHIN, "after losing the vote");
    let log = n3.error_log_tail(300);
    assert!(log.contains("Inconsistency detected: Inconsistent by consensus on"), "node 3's log:\n{log}");
    for n in [n1, n2] {
        n.wait_until("node 3 gone", LEAVES_WITHIN, |s| s.get("wsrep_cluster_size") == Some("2")).unwrap();
        assert_eq!(status_var(n, "wsrep_cluster_status"), "Primary", "{}", n.name());
        assert!(n.error_log_tail(300).contains("Votes over"), "{} took part in the vote", n.name());
    }

    // The two that agree keep committing: the load goes on through it.
    let before = done.load(Ordering::SeqCst);
    let deadline = Instant::now() + LEAVES_WITHIN;
    while done.load(Ordering::SeqCst) < before + 100 {
        assert!(Instant::now() < deadline, "the load on node 1 stopped after the vote ({} commits)", done.load(Ordering::SeqCst));
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    load.join().unwrap();
    n2.sql("UPDATE test.t SET v = 2 WHERE id = 2").unwrap();
    let checksum = |n: lockstep_cli::cluster::Node| n.sql("SET SESSION wsrep_sync_wait = 1; CHECKSUM TABLE test.t, test.load").unwrap();
    assert_eq!(checksum(n1), checksum(n2), "the two that stayed hold the same data");
    assert_eq!(status_var(n3, "wsrep_ready"), "OFF");

    rejoin_by_mysqldump(n3, &[n1, n2]);
    n1.sql("UPDATE test.t SET v = 3 WHERE id = 3; INSERT INTO test.load VALUES (1000000)").unwrap();
    assert_eq!(checksum(n3), checksum(n1), "the node that rejoined applies what the cluster commits");
    cluster.down().unwrap();
}

/// A running server takes a state by mysqldump (mariabackup needs a
/// restart): the donors log in as the SST user, the joiner gets the method
/// and its SQL port as the receive address, then it reconnects.
fn rejoin_by_mysqldump(joiner: lockstep_cli::cluster::Node, donors: &[lockstep_cli::cluster::Node]) {
    let address = joiner.sql("SELECT @@wsrep_cluster_address").unwrap()[0][0].clone();
    for d in donors {
        d.sql("SET GLOBAL wsrep_sst_auth = 'sst:sst'").unwrap();
    }
    let receive = format!("127.0.0.1:{}", joiner.ports().client);
    joiner.sql(&format!("SET GLOBAL wsrep_sst_receive_address = '{receive}'; SET GLOBAL wsrep_sst_method = 'mysqldump'")).unwrap();
    joiner.sql(&format!("SET GLOBAL wsrep_cluster_address = '{address}'")).unwrap();
    joiner.wait_until("node 3 synced again", SYNC_TIMEOUT, |s| s.get("wsrep_local_state_comment") == Some("Synced")).unwrap();
}
