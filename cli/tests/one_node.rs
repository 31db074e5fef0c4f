//! One-node clusters: what the lockstep provider must do first.
//! Run with `LOCKSTEP_TEST_PROVIDER=galera` to check the tests themselves.

mod common;

use common::*;
use std::time::Duration;

#[test]
fn one_node_comes_up_synced_and_primary() {
    let cluster = up(spec("one_node_up", 0, 1));
    let node = cluster.node(1);
    assert_synced_alone(node);
    let status = node.status().unwrap();
    let uuid = status.get("wsrep_cluster_state_uuid").unwrap();
    assert_eq!(uuid.len(), 36, "cluster state uuid {uuid:?}");
    assert_eq!(status.get("wsrep_local_state_uuid"), Some(uuid));
    assert_eq!(
        node.sql("SELECT @@wsrep_on, @@wsrep_node_name").unwrap(),
        [["1", "node1"]]
    );
    cluster.down().unwrap();
    assert!(!node.is_running());
}

/// Every committed write transaction and every DDL takes exactly one seqno;
/// reads, rollbacks and writes that change nothing take none.
#[test]
fn one_seqno_per_write_transaction_and_ddl() {
    let cluster = up(spec("one_node_seqno", 1, 1));
    let node = cluster.node(1);
    let mut conn = node.connect().unwrap();
    let step = |conn: &mut _, sql, delta| assert_seqno_step(node, conn, sql, delta);
    step(&mut conn, "CREATE DATABASE d", 1);
    step(&mut conn, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)", 1);
    step(&mut conn, "INSERT INTO d.t VALUES (1, 10)", 1);
    step(&mut conn, "INSERT INTO d.t VALUES (2, 20), (3, 30)", 1);
    step(
        &mut conn,
        "BEGIN; INSERT INTO d.t VALUES (4, 40); UPDATE d.t SET v = v + 1 WHERE id = 1; COMMIT",
        1,
    );
    step(&mut conn, "UPDATE d.t SET v = 0 WHERE id = 2", 1);
    step(&mut conn, "DELETE FROM d.t WHERE id = 3", 1);
    step(&mut conn, "SELECT * FROM d.t", 0);
    step(
        &mut conn,
        "BEGIN; SELECT * FROM d.t WHERE id = 1 FOR UPDATE; COMMIT",
        0,
    );
    step(
        &mut conn,
        "BEGIN; INSERT INTO d.t VALUES (9, 90); ROLLBACK",
        0,
    );
    step(&mut conn, "UPDATE d.t SET v = v WHERE id = 1", 0);
    step(&mut conn, "ALTER TABLE d.t ADD COLUMN w INT", 1);
    step(&mut conn, "DROP TABLE d.t", 1);
    assert_synced_alone(node);
}

#[test]
fn crud_round_trip() {
    let cluster = up(spec("one_node_crud", 2, 1));
    let mut conn = cluster.node(1).connect().unwrap();
    conn.execute("CREATE DATABASE shop").unwrap();
    conn.execute(
        "CREATE TABLE shop.items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20), price INT)",
    )
    .unwrap();
    assert_eq!(
        conn.execute(
            "INSERT INTO shop.items (name, price) VALUES ('apple', 3), ('pear', 4), ('fig', NULL)"
        )
        .unwrap(),
        3
    );
    assert_eq!(
        conn.execute("UPDATE shop.items SET price = 5 WHERE name = 'pear'")
            .unwrap(),
        1
    );
    assert_eq!(
        conn.execute("DELETE FROM shop.items WHERE name = 'apple'")
            .unwrap(),
        1
    );
    let rows = conn
        .query("SELECT name, price FROM shop.items ORDER BY name")
        .unwrap();
    assert_eq!(rows, [["fig", "NULL"], ["pear", "5"]]);
    let result = conn
        .query_results("SELECT COUNT(*) AS n FROM shop.items")
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(result.columns, ["n"]);
    assert_eq!(
        conn.query_value("SELECT SUM(price) FROM shop.items")
            .unwrap()
            .as_deref(),
        Some("5")
    );
}

/// A clean restart keeps the cluster's history (same state UUID) and
/// continues its seqnos where they stopped.
#[test]
fn restart_keeps_state_uuid_and_seqnos() {
    let cluster = up(spec("one_node_restart", 3, 1));
    let node = cluster.node(1);
    node.sql(
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY); INSERT INTO d.t VALUES (1)",
    )
    .unwrap();
    let uuid = status_var(node, "wsrep_cluster_state_uuid");
    let before = last_committed(node);
    let pid = node.pid().unwrap();

    node.stop().unwrap();
    assert!(!node.is_running());
    node.start().unwrap();
    assert_ne!(node.pid(), Some(pid), "a new process");

    assert_synced_alone(node);
    assert_eq!(status_var(node, "wsrep_cluster_state_uuid"), uuid);
    assert_eq!(status_var(node, "wsrep_local_state_uuid"), uuid);
    let after_restart = last_committed(node);
    assert!(
        after_restart >= before,
        "wsrep_last_committed went back from {before} to {after_restart}"
    );
    let mut conn = node.connect().unwrap();
    assert_seqno_step(node, &mut conn, "INSERT INTO d.t VALUES (2)", 1);
    assert_eq!(
        conn.query("SELECT id FROM d.t ORDER BY id").unwrap(),
        [["1"], ["2"]]
    );
}

/// What workload tests rely on: server errors keep their MySQL code and
/// leave the connection usable; a frozen node times out instead of hanging.
#[test]
fn sql_errors_codes_and_frozen_node() {
    let cluster = up(spec("one_node_errors", 4, 1));
    let node = cluster.node(1);
    let mut a = node.connect().unwrap();
    a.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v INT); INSERT INTO d.t VALUES (1, 0), (2, 0)")
        .unwrap();
    assert_eq!(
        a.execute("INSERT INTO d.t VALUES (1, 0)")
            .unwrap_err()
            .sql_code(),
        Some(1062)
    );
    assert_eq!(a.execute("SELEC 1").unwrap_err().sql_code(), Some(1064));
    assert_eq!(a.query("SELECT 1").unwrap(), [["1"]], "usable after errors");

    let deadlock = crossed_updates(node);
    assert!(
        deadlock,
        "one of two crossed transactions must fail with ER_LOCK_DEADLOCK"
    );

    // A later statement's error ends a multi-statement query with its code.
    assert_eq!(a.query_results("SELECT 1; SELEC 2").unwrap_err().sql_code(), Some(1064));
    assert_eq!(a.query("SELECT 3").unwrap(), [["3"]], "usable after errors");

    let mut short = node.connect_timeout(Duration::from_millis(500)).unwrap();
    node.freeze().unwrap();
    assert!(node.is_frozen());
    assert!(matches!(
        short.query("SELECT 1"),
        Err(lockstep_cli::cluster::Error::Timeout(_))
    ));
    assert!(
        short.query("SELECT 1").is_err(),
        "a timed-out connection stays unusable"
    );
    node.thaw().unwrap();
    assert_eq!(node.sql("SELECT 2").unwrap(), [["2"]]);
    node.wait_synced(SYNC_TIMEOUT).unwrap();
}

/// Two transactions lock rows 1 and 2, then each wants the other's row:
/// InnoDB picks a victim, which sees error 1213.
fn crossed_updates(node: lockstep_cli::cluster::Node) -> bool {
    let mut a = node.connect().unwrap();
    let mut b = node.connect().unwrap();
    a.execute("BEGIN; UPDATE d.t SET v = v + 1 WHERE id = 1")
        .unwrap();
    b.execute("BEGIN; UPDATE d.t SET v = v + 1 WHERE id = 2")
        .unwrap();
    let waiter = std::thread::spawn(move || {
        let result = a.execute("UPDATE d.t SET v = v + 1 WHERE id = 2");
        let _ = a.execute("ROLLBACK");
        result
    });
    std::thread::sleep(Duration::from_millis(500));
    let b_result = b.execute("UPDATE d.t SET v = v + 1 WHERE id = 1");
    let _ = b.execute("ROLLBACK");
    let a_result = waiter.join().unwrap();
    [a_result, b_result]
        .iter()
        .filter(|r| matches!(r, Err(e) if e.is_deadlock()))
        .count()
        == 1
}
