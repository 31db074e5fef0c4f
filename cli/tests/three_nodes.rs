//! A killed node: the others evict it (evs.suspect_timeout) and it
//! rejoins. `LOCKSTEP_TEST_MULTI_PROVIDER=galera` runs it on the referee.

mod common;

use common::*;
use std::time::{Duration, Instant};

#[test]
fn three_nodes_replicate_and_a_killed_node_rejoins() {
    let cluster = up(spec("three_nodes", 6, 3));
    for node in cluster.nodes() {
        let status = node.status().unwrap();
        assert!(status.is_synced(), "{}: {}", node.name(), status.summary());
        assert_eq!(status.int("wsrep_cluster_size"), Some(3), "{}", node.name());
    }

    // Written on node 2, read on node 3 (causal read: wait for the writeset).
    cluster
        .node(2)
        .sql("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(10))")
        .unwrap();
    cluster
        .node(2)
        .sql("INSERT INTO d.t VALUES (1, 'from2')")
        .unwrap();
    let rows = cluster
        .node(3)
        .sql("SET SESSION wsrep_sync_wait = 1; SELECT v FROM d.t WHERE id = 1")
        .unwrap();
    assert_eq!(rows, [["from2"]]);
    cluster
        .wait_until("equal wsrep_last_committed everywhere", SYNC_TIMEOUT, |c| {
            let seqnos: Vec<i64> = c.nodes().map(last_committed).collect();
            seqnos.iter().all(|s| *s == seqnos[0])
        })
        .unwrap();

    // A crash: the others drop node 3 from the primary component.
    let killed_at = Instant::now();
    cluster.node(3).kill().unwrap();
    let size_two =
        |s: &lockstep_cli::cluster::Status| s.int("wsrep_cluster_size") == Some(2) && s.is_synced();
    cluster
        .node(1)
        .wait_until("cluster size 2", Duration::from_secs(60), size_two)
        .unwrap();
    eprintln!(
        "node3 evicted {:.1}s after SIGKILL",
        killed_at.elapsed().as_secs_f64()
    );

    // Missed while down, received at rejoin (IST).
    cluster
        .node(1)
        .sql("INSERT INTO d.t VALUES (2, 'missed')")
        .unwrap();
    let rejoin = Instant::now();
    cluster.node(3).start().unwrap();
    eprintln!("node3 rejoined in {:.1}s", rejoin.elapsed().as_secs_f64());
    cluster.wait_synced(SYNC_TIMEOUT).unwrap();
    let rows = cluster
        .node(3)
        .sql("SET SESSION wsrep_sync_wait = 1; SELECT v FROM d.t ORDER BY id")
        .unwrap();
    assert_eq!(rows, [["from2"], ["missed"]]);

    // A clean stop and start of a member that is not the last one.
    cluster.node(2).stop().unwrap();
    cluster
        .node(1)
        .wait_until("cluster size 2", Duration::from_secs(60), size_two)
        .unwrap();
    cluster.node(2).start().unwrap();
    cluster.wait_synced(SYNC_TIMEOUT).unwrap();
    assert_eq!(
        cluster
            .node(2)
            .sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM d.t")
            .unwrap(),
        [["2"]]
    );
}
