//! A killed node: the others evict it (evs.suspect_timeout) and it
//! rejoins. `LOCKSTEP_TEST_MULTI_PROVIDER=galera` runs it on the referee.

mod common;

use common::*;
use lockstep_cli::cluster::Node;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn three_nodes_replicate_and_a_killed_node_rejoins() {
    let cluster = up(spec("three_nodes", 6, 3));
    for node in cluster.nodes() {
        let status = node.status().unwrap();
        assert!(status.is_synced(), "{}: {}", node.name(), status.summary());
        assert_eq!(status.int("wsrep_cluster_size"), Some(3), "{}", node.name());
    }
    // `up` seeds node2 and node3 with a copy of node1's datadir: they join
    // by IST, and node1 serves no SST.
    let donor_log = std::fs::read_to_string(cluster.node(1).paths().error_log).unwrap();
    assert!(donor_log.contains("async IST sender starting to serve"), "node1 served no IST at up:\n{}", cluster.node(1).error_log_tail(30));
    assert!(!donor_log.contains("Streaming the backup to joiner"), "node1 served an SST at up:\n{}", cluster.node(1).error_log_tail(30));

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

    check_exporter_names(cluster.node(1));
    if cluster.spec().provider == lockstep_cli::cluster::Provider::Lockstep {
        let pages: Vec<(String, String)> = cluster.nodes().map(|n| (n.name(), check_metrics_endpoint(n))).collect();
        // The leader times the others' answers to its appends, by name.
        let timed = |page: &str, member: &str| page.contains(&format!("lockstep_append_round_trip_seconds_count{{member=\"{member}\"}}"));
        let timing_both = pages.iter().filter(|(me, page)| pages.iter().all(|(other, _)| other == me || timed(page, other)));
        assert!(timing_both.count() >= 1, "no node times both others' answers: {pages:?}");
    }

    check_top(&cluster);

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

/// `GET /metrics` from 127.0.0.1:`port`, the body once it answers 200.
fn http_metrics(port: u16, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let reply = std::net::TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
            let mut out = String::new();
            s.read_to_string(&mut out)?;
            Ok(out)
        });
        match reply {
            Ok(r) if r.starts_with("HTTP/1.1 200") || r.starts_with("HTTP/1.0 200") => {
                return r.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
            }
            other if Instant::now() > deadline => panic!("no metrics on port {port}: {other:?}"),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// lockstep's endpoint (`lockstep.metrics_addr`, which `lockstep cluster`
/// sets): Prometheus' own Python parser (Debian's python3-prometheus-client)
/// reads it, and it has the state, a text value and the latency histogram.
fn check_metrics_endpoint(node: Node) -> String {
    let body = http_metrics(node.ports().metrics, Duration::from_secs(5));
    assert!(body.contains("\nmysql_global_status_wsrep_local_state 4\n"), "{}: {body}", node.name());
    assert!(body.contains("mysql_global_status_wsrep_local_state_comment_text_info{value=\"Synced\"} 1"), "{body}");
    assert!(body.contains("mysql_global_status_wsrep_cluster_status_text_info{value=\"Primary\"} 1"), "{body}");
    assert!(body.contains("lockstep_repl_latency_seconds_bucket{le="), "{body}");
    let parse = "import sys\n\
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om\n\
from prometheus_client.parser import text_string_to_metric_families as prom\n\
t = sys.stdin.read()\n\
print(len(list(om(t))), len(list(prom(t))))\n";
    // Debian's python3, where the package installs the module.
    let mut py = Command::new("/usr/bin/python3")
        .args(["-c", parse])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("/usr/bin/python3 (Debian's python3 with python3-prometheus-client)");
    py.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(out.status.success(), "{}: the parser refused the page: {}", node.name(), String::from_utf8_lossy(&out.stderr));
    eprintln!("{}: metrics parsed, families (OpenMetrics, classic): {}", node.name(), String::from_utf8_lossy(&out.stdout).trim());
    body
}

/// Debian's mysqld_exporter against `node`: every wsrep and galera metric
/// it gives for a Galera node (the fixture, recorded on Galera) it gives
/// for this node too.
fn check_exporter_names(node: Node) {
    let port = node.ports().metrics + 1;
    let mut exporter = Command::new("prometheus-mysqld-exporter")
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .env("DATA_SOURCE_NAME", format!("root@unix({})/", node.socket().display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus-mysqld-exporter (Debian's prometheus-mysqld-exporter)");
    let body = std::panic::catch_unwind(|| http_metrics(port, Duration::from_secs(10)));
    let _ = exporter.kill();
    let _ = exporter.wait();
    let body = body.unwrap_or_else(|_| panic!("mysqld_exporter never answered on port {port}"));
    assert!(body.contains("\nmysql_up 1\n"), "the exporter cannot reach {}", node.name());
    let names: std::collections::BTreeSet<&str> = body
        .lines()
        .filter(|l| l.starts_with("mysql_global_status_wsrep_") || l.starts_with("mysql_galera_"))
        .map(|l| l.split(['{', ' ']).next().unwrap_or_default())
        .collect();
    let fixture = include_str!("fixtures/exporter-galera-names.txt");
    let missing: Vec<&str> = fixture.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).filter(|n| !names.contains(n)).collect();
    assert!(missing.is_empty(), "{}: the exporter gives Galera's {:?} but not this node's", node.name(), missing);
    eprintln!("{}: mysqld_exporter gives {} wsrep/galera metrics, every one Galera's node gives", node.name(), names.len());
}

/// `lockstep top --once` on the cluster: a row per node, each Synced in a
/// primary component of 3; lockstep's rows name the leader, a watched node.
fn check_top(cluster: &lockstep_cli::cluster::Cluster) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(["top", "--once", "--interval", "0.3", "--dir"])
        .arg(cluster.dir())
        .output()
        .expect("lockstep top");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for node in cluster.nodes() {
        let row = text.lines().find(|l| l.contains(&format!("\u{2502}{} ", node.name()))).unwrap_or_else(|| panic!("no row for {}: {text}", node.name()));
        let cells: Vec<&str> = row.trim_matches('\u{2502}').split_whitespace().collect();
        assert_eq!(cells[1..3], ["Synced", "Primary/3"], "{row}");
        let lockstep = cluster.spec().provider == lockstep_cli::cluster::Provider::Lockstep;
        let leader_named = cluster.nodes().any(|n| n.name() == cells[3]);
        assert!(if lockstep { leader_named } else { cells[3] == "-" }, "leader column: {row}");
    }
    eprintln!("{text}");
}
