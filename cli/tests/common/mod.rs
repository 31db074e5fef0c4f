//! What every cluster test shares: which provider, where, which ports.
//!
//! Environment:
//! - `LOCKSTEP_TEST_PROVIDER`: `lockstep` (default: liblockstep.so from
//!   this build's target dir), `galera`, or a library path.
//! - `LOCKSTEP_TEST_MULTI_PROVIDER`: the provider of multi-node tests
//!   (default `galera` until lockstep forms clusters of several nodes;
//!   they then check the launcher against the reference).
//! - `LOCKSTEP_TEST_PROVIDER_OPTIONS`: extra provider options, `;`
//!   separated (e.g. `debug=yes` for a debugging run).
//! - `LOCKSTEP_TEST_BASE_PORT`: first port of the test range (default
//!   24100). Each test owns 100 ports from `base + 100 * slot`, so tests
//!   run in parallel without sharing a port.

#![allow(dead_code)] // each test binary uses a different part

use lockstep_cli::cluster::{Cluster, ClusterSpec, Conn, Node, Phase, Provider};
use std::path::PathBuf;
use std::time::Duration;

pub const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

pub fn provider() -> Provider {
    Provider::parse(&std::env::var("LOCKSTEP_TEST_PROVIDER").unwrap_or_else(|_| "lockstep".into()))
}

pub fn multi_node_provider() -> Provider {
    Provider::parse(&std::env::var("LOCKSTEP_TEST_MULTI_PROVIDER").unwrap_or_else(|_| "galera".into()))
}

fn base_port() -> u16 {
    let text = std::env::var("LOCKSTEP_TEST_BASE_PORT").unwrap_or_else(|_| "24100".into());
    text.parse()
        .expect("LOCKSTEP_TEST_BASE_PORT must be a port number")
}

/// The directory of test `name`: in cargo's per-target scratch dir when
/// its socket paths fit in sun_path (108 bytes), else under /tmp.
pub fn test_dir(name: &str) -> PathBuf {
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cluster-{name}"));
    if scratch.join("node9/mysqld.sock").as_os_str().len() < 100 {
        return scratch;
    }
    std::env::temp_dir().join(format!("lockstep-test-{name}"))
}

/// A spec for test `name` with its own directory and port slot. Stops
/// whatever an earlier, interrupted run of the same test left running.
pub fn spec(name: &str, slot: u16, nodes: usize) -> ClusterSpec {
    let dir = test_dir(name);
    if let Ok(old) = Cluster::open(&dir) {
        let _ = old.down();
    }
    let provider = if nodes > 1 { multi_node_provider() } else { provider() };
    let mut spec = ClusterSpec::new(nodes, provider, dir).base_port(base_port() + slot * 100);
    // Extra provider options for a debugging run, e.g. "debug=yes".
    for opt in std::env::var("LOCKSTEP_TEST_PROVIDER_OPTIONS").unwrap_or_default().split(';').filter(|o| !o.trim().is_empty()) {
        spec = spec.provider_option(opt.trim());
    }
    spec
}

/// Starts the cluster or fails the test with the launcher's explanation.
/// Progress goes to stderr, which the test harness shows on failure.
pub fn up(spec: ClusterSpec) -> Cluster {
    let result = Cluster::up_with_progress(spec, &mut |node, phase| {
        if let Phase::Synced { elapsed } = phase {
            eprintln!("node{node}: Synced in {:.1}s", elapsed.as_secs_f64());
        }
    });
    result.unwrap_or_else(|e| panic!("cluster up failed: {e}"))
}

pub fn last_committed(node: Node) -> i64 {
    let status = node
        .status()
        .unwrap_or_else(|e| panic!("{}: status: {e}", node.name()));
    status
        .int("wsrep_last_committed")
        .expect("wsrep_last_committed")
}

pub fn status_var(node: Node, name: &str) -> String {
    node.status_var(name)
        .unwrap_or_else(|e| panic!("{}: {name}: {e}", node.name()))
}

/// Runs `sql` on `conn` and checks wsrep_last_committed moved by `delta`.
pub fn assert_seqno_step(node: Node, conn: &mut Conn, sql: &str, delta: i64) {
    let before = last_committed(node);
    conn.query_results(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let after = last_committed(node);
    assert_eq!(
        after - before,
        delta,
        "wsrep_last_committed {before} -> {after} after {sql:?}"
    );
}

pub fn assert_synced_alone(node: Node) {
    let status = node.status().unwrap();
    assert_eq!(status.get("wsrep_local_state_comment"), Some("Synced"));
    assert_eq!(status.get("wsrep_cluster_status"), Some("Primary"));
    assert_eq!(status.get("wsrep_cluster_size"), Some("1"));
    assert_eq!(status.get("wsrep_ready"), Some("ON"));
}
