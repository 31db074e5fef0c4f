//! Two data nodes and garbd, the deployment an arbitrator exists for: with
//! garbd in the cluster, killing either data node (SIGKILL) leaves the other
//! Primary and writing; the killed node rejoins from the survivor (garbd
//! has nothing to give); both data nodes killed at once recover the
//! component with garbd when they start again; a garbd stopped with
//! SIGTERM leaves at once and exits 0. `LOCKSTEP_TEST_MULTI_PROVIDER=galera` runs it on the referee
//! with Debian's garbd.

mod common;

use common::*;
use lockstep_cli::cluster::Node;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn wait_size(node: Node, size: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while status_var(node, "wsrep_cluster_size") != size {
        assert!(Instant::now() < deadline, "{}: cluster size is not {size}:\n{}", node.name(), node.error_log_tail(30));
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The survivor of a killed peer: Primary with itself and garbd, and it
/// commits.
fn goes_on_alone_with_garbd(survivor: Node, row: u32) {
    wait_size(survivor, "2", Duration::from_secs(30));
    assert_eq!(status_var(survivor, "wsrep_cluster_status"), "Primary", "{}", survivor.error_log_tail(30));
    survivor.sql(&format!("INSERT INTO d.t VALUES ({row})")).unwrap_or_else(|e| panic!("{}: {e}", survivor.name()));
}

#[test]
fn with_garbd_either_of_two_data_nodes_survives_the_others_death() {
    let _turn = take_turn();
    let spec = spec("arbitrator", 22, 3);
    let cluster = up_first(spec, 2);
    let (n1, n2) = (cluster.node(1), cluster.node(2));
    let log = cluster.dir().join("garbd.log");
    // Node 3's ports, which no server uses here.
    let mut garbd = start_garbd(&cluster, n1, cluster.node(3).ports().gcomm, &log);
    wait_size(n1, "3", Duration::from_secs(30));
    n1.sql("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY)").unwrap();
    n2.sql("INSERT INTO d.t VALUES (1)").unwrap();

    n1.kill().unwrap();
    goes_on_alone_with_garbd(n2, 2);
    start_node(n1);
    wait_size(n2, "3", Duration::from_secs(30));
    n2.kill().unwrap();
    goes_on_alone_with_garbd(n1, 3);
    assert_eq!(n1.sql("SELECT COUNT(*) FROM d.t").unwrap(), [["3"]], "the rejoined node holds every row");
    start_node(n2);
    assert_eq!(n2.sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM d.t").unwrap(), [["3"]]);

    // Both data nodes at once (their site lost power, garbd's did not),
    // started again as an init system would: they recover the component
    // with garbd, which never forms one of its own.
    for n in [n1, n2] {
        n.kill().unwrap();
    }
    std::thread::scope(|s| {
        for n in [n1, n2] {
            s.spawn(move || n.start_member().unwrap_or_else(|e| panic!("{} did not recover: {e}", n.name())));
        }
    });
    for n in [n1, n2] {
        wait_size(n, "3", Duration::from_secs(60));
        n.wait_until("Synced", SYNC_TIMEOUT, |st| st.get("wsrep_local_state_comment") == Some("Synced")).unwrap_or_else(|e| panic!("{}: {e}", n.name()));
    }
    assert_eq!(n2.sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM d.t").unwrap(), [["3"]]);

    // A data node killed while both write, twice: the second kill is the
    // leader's. garbd may then hold entries the survivor lacks
    // (acknowledged just before the kill); it must pass them on, not keep
    // the survivor from being elected forever. That window is narrow on
    // loopback (this never hit it in four runs without the fix); the
    // simulator's seed 2910 is the case that pins it.
    for (round, (victim, survivor)) in [(n1, n2), (n2, n1)].into_iter().enumerate() {
        kill_under_load(victim, survivor, round as u32);
        goes_on_alone_with_garbd(survivor, 10 + round as u32);
        start_node(victim);
        wait_size(survivor, "3", Duration::from_secs(30));
    }
    let count = |n: Node| n.sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*), SUM(id) FROM d.t").unwrap();
    assert_eq!(count(n1), count(n2), "both data nodes hold the same rows");

    let stopped = Instant::now();
    // SAFETY: a signal to the child we started.
    unsafe { libc_kill(garbd.0.id() as i32, 15) };
    let status = garbd.0.wait().expect("garbd exits");
    assert!(status.success(), "garbd exited with {status}:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    wait_size(n1, "2", Duration::from_secs(30));
    assert!(stopped.elapsed() < Duration::from_secs(4), "garbd left by eviction ({:?}), not by leaving", stopped.elapsed());
    n1.sql("INSERT INTO d.t VALUES (4)").unwrap();
    // A causal read: n2 may not have applied the row yet when n1 commits.
    assert_eq!(n2.sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM d.t WHERE id = 4").unwrap(), [["1"]]);
    assert_eq!(count(n1), count(n2));
}

/// Both nodes insert rows of their own as fast as they can; `victim` is
/// killed 1.5 s in, and the writers stop soon after (the victim's fail at
/// once, the survivor's once the group has a view without the victim).
fn kill_under_load(victim: Node, survivor: Node, round: u32) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for (k, n) in [victim, survivor].into_iter().enumerate() {
            let stop = &stop;
            s.spawn(move || {
                let mut id = 1_000_000 * (1 + 2 * round + k as u32);
                while !stop.load(Ordering::Relaxed) {
                    let _ = n.sql(&format!("INSERT INTO d.t VALUES ({id})"));
                    id += 1;
                }
            });
        }
        std::thread::sleep(Duration::from_millis(1500));
        victim.kill().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::Relaxed);
    });
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}
