//! TLS between nodes on a real cluster: three nodes with certificates of
//! one CA replicate; a fourth with a certificate of another CA is refused
//! (both sides say why in their logs) and the cluster stays at three; a
//! plain-TCP stranger on the group port is refused; the cluster keeps
//! committing. The certificates are made with the openssl commands of the
//! README. `LOCKSTEP_TEST_MULTI_PROVIDER=galera` runs it on the referee
//! (without the log checks: the wording is lockstep's).

mod common;

use common::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[test]
fn a_tls_cluster_replicates_and_refuses_a_stranger_and_plain_tcp() {
    let dir = std::env::temp_dir().join("lockstep-test-tls-certificates");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    tls_certificates(&dir, "ca", &["node1", "node2", "node3"]);
    tls_certificates(&dir, "other", &["node4"]);
    let mut spec = spec("tls", 21, 4);
    for n in 1..=3 {
        for option in tls_options(&dir, "ca", &format!("node{n}")) {
            spec = spec.node_provider_option(n, option);
        }
    }
    // The stranger trusts our CA; only the cluster can refuse it.
    let [_, cert, key] = tls_options(&dir, "other", "node4");
    for option in [tls_options(&dir, "ca", "node4")[0].clone(), cert, key] {
        spec = spec.node_provider_option(4, option);
    }
    let cluster = up_first(spec, 3);
    let (n1, n3, n4) = (cluster.node(1), cluster.node(3), cluster.node(4));
    n1.sql("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY)").unwrap();
    n1.sql("INSERT INTO d.t VALUES (1)").unwrap();
    assert_eq!(n3.sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM d.t").unwrap(), [["1"]]);

    n4.launch().unwrap();
    std::thread::sleep(Duration::from_secs(10));
    for n in cluster.nodes().take(3) {
        assert_eq!(status_var(n, "wsrep_cluster_size"), "3", "{} let the stranger in", n.name());
    }

    // A stranger speaking plain TCP on node 1's group port.
    let mut plain = std::net::TcpStream::connect(("127.0.0.1", n1.ports().gcomm)).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    plain.write_all(b"hello, are you a database?\n").unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);

    n1.sql("INSERT INTO d.t VALUES (2)").unwrap();
    assert_eq!(n3.sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM d.t").unwrap(), [["2"]]);
    if matches!(multi_node_provider(), lockstep_cli::cluster::Provider::Lockstep) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let said = |n: lockstep_cli::cluster::Node, what: &str| n.error_log_tail(400).contains(what);
        while !(said(n4, "refused the TLS connection") && said(n1, "TLS handshake failed")) {
            assert!(Instant::now() < deadline, "node 4:\n{}\nnode 1:\n{}", n4.error_log_tail(40), n1.error_log_tail(40));
            std::thread::sleep(Duration::from_millis(500));
        }
        assert!(said(n1, "the peer speaks plain TCP"), "node 1:\n{}", n1.error_log_tail(40));
        // Said once, not at every retry of the stranger's contacts.
        let refusals = n4.error_log_tail(1000).matches("refused the TLS connection").count();
        assert!(refusals <= 3, "node 4 repeats its refusal {refusals} times:\n{}", n4.error_log_tail(20));
        assert!(String::from_utf8_lossy(&answer).contains("accepts TLS connections only"), "{:?}", answer);
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}
