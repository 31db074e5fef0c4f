//! What every cluster test shares: which provider, where, which ports.
//!
//! Environment:
//! - `LOCKSTEP_TEST_PROVIDER`: `lockstep` (default: liblockstep.so from
//!   this build's target dir), `galera`, or a library path.
//! - `LOCKSTEP_TEST_MULTI_PROVIDER`: the provider of multi-node tests
//!   (default `lockstep`; `galera` runs them against the referee).
//! - `LOCKSTEP_TEST_PROVIDER_OPTIONS`: extra provider options, `;`
//!   separated (e.g. `debug=yes` for a debugging run).
//! - `LOCKSTEP_TEST_BASE_PORT`: first port of the test range (default
//!   24100). Each test owns 100 ports from `base + 100 * slot`, so tests
//!   run in parallel without sharing a port.

#![allow(dead_code)] // each test binary uses a different part

use lockstep_cli::cluster::{Cluster, ClusterSpec, Conn, Node, Phase, Provider};
use lockstep_cli::workload::bank;
use std::path::PathBuf;
use std::time::Duration;

pub const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

pub fn provider() -> Provider {
    Provider::parse(&std::env::var("LOCKSTEP_TEST_PROVIDER").unwrap_or_else(|_| "lockstep".into()))
}

pub fn multi_node_provider() -> Provider {
    Provider::parse(&std::env::var("LOCKSTEP_TEST_MULTI_PROVIDER").unwrap_or_else(|_| "lockstep".into()))
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

/// A test's cluster: stopped when the test ends, and its directory removed
/// if the test passed (a failed test's logs stay for reading). The data
/// directories of a run's clusters add up to gigabytes, enough to fill a
/// CI machine's disk before its last step.
pub struct TestCluster(Option<Cluster>);

impl std::ops::Deref for TestCluster {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        self.0.as_ref().expect("a test cluster until dropped")
    }
}

impl TestCluster {
    /// A cluster started by something else (`lockstep migrate`), stopped
    /// and removed like the others.
    pub fn own(cluster: Cluster) -> TestCluster {
        TestCluster(Some(cluster))
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let Some(cluster) = self.0.take() else { return };
        let dir = cluster.dir().to_path_buf();
        drop(cluster);
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Starts the cluster or fails the test with the launcher's explanation.
/// Progress goes to stderr, which the test harness shows on failure.
pub fn up(spec: ClusterSpec) -> TestCluster {
    let result = Cluster::up_with_progress(spec, &mut |node, phase| {
        if let Phase::Synced { elapsed } = phase {
            eprintln!("node{node}: Synced in {:.1}s", elapsed.as_secs_f64());
        }
    });
    TestCluster(Some(result.unwrap_or_else(|e| panic!("cluster up failed: {e}"))))
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

/// Waits until `node` is out of the cluster with its server up
/// (`wsrep_cluster_status` Disconnected), or fails the test saying `why`
/// it should have left, with the tail of its log.
pub fn wait_disconnected(node: Node, within: Duration, why: &str) {
    let deadline = std::time::Instant::now() + within;
    while status_var(node, "wsrep_cluster_status") != "Disconnected" {
        assert!(std::time::Instant::now() < deadline, "{} is still connected {why}:\n{}", node.name(), node.error_log_tail(30));
        std::thread::sleep(Duration::from_millis(200));
    }
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

/// Starts nodes 1..=`count` of the cluster (the others stay down, to be
/// started by the test), or fails the test with the launcher's explanation.
pub fn up_first(spec: ClusterSpec, count: usize) -> TestCluster {
    let result = Cluster::up_first(spec, count, &mut |node, phase| {
        if let Phase::Synced { elapsed } = phase {
            eprintln!("node{node}: Synced in {:.1}s", elapsed.as_secs_f64());
        }
    });
    TestCluster(Some(result.unwrap_or_else(|e| panic!("cluster up ({count} nodes) failed: {e}"))))
}

/// Starts a stopped node (it joins the running ones), printing its
/// milestones; fails the test with the node's log tail if it does not
/// reach Synced. Returns the time from launch to Synced and whether the
/// server went through the joiner state (a state transfer).
pub fn start_node(node: Node) -> (Duration, bool) {
    let mut synced = Duration::ZERO;
    let mut joined = false;
    let result = node.start_with_progress(&mut |phase| {
        match phase {
            Phase::Joining => joined = true,
            Phase::Synced { elapsed } => synced = elapsed,
            _ => {}
        }
        eprintln!("{}: {phase:?}", node.name());
    });
    result.unwrap_or_else(|e| panic!("starting {} failed: {e}", node.name()));
    (synced, joined)
}

/// The bank checks on every node of the cluster (all must run).
pub fn check_bank(
    cluster: &Cluster,
    config: &bank::BankConfig,
    run: &bank::BankRun,
) -> bank::BankCheck {
    let check = bank::check(cluster, config, run, SYNC_TIMEOUT)
        .unwrap_or_else(|e| panic!("bank check (seed {}): {e}", config.seed));
    assert_eq!(
        check.nodes,
        cluster.len(),
        "bank check did not read every node"
    );
    eprintln!(
        "bank: all {} nodes at seqno {}, {} transfers in bank.log identical everywhere \
         (CHECKSUM TABLE too), total {} unchanged",
        check.nodes,
        check.converged.seqno,
        check.log_rows,
        config.total()
    );
    check
}

/// A CA and certificates for `nodes`, as the README makes them.
pub fn tls_certificates(dir: &std::path::Path, ca: &str, nodes: &[&str]) {
    let script = format!(
        "set -e; cd '{dir}'; openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj '/CN={ca}' -keyout {ca}-key.pem -out {ca}.pem; \
         for n in {nodes}; do openssl req -newkey rsa:2048 -nodes -subj \"/CN=$n\" -keyout $n-key.pem -out $n.csr; \
         openssl x509 -req -in $n.csr -CA {ca}.pem -CAkey {ca}-key.pem -CAcreateserial -days 30 -out $n-cert.pem; done",
        dir = dir.display(),
        nodes = nodes.join(" ")
    );
    let out = std::process::Command::new("sh").arg("-c").arg(&script).output().expect("sh runs");
    assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stderr));
}

/// The three options, one key=value each (the spec takes them apart).
pub fn tls_options(dir: &std::path::Path, ca: &str, node: &str) -> [String; 3] {
    let f = |name: String| dir.join(name).display().to_string();
    [
        format!("socket.ssl_ca={}", f(format!("{ca}.pem"))),
        format!("socket.ssl_cert={}", f(format!("{node}-cert.pem"))),
        format!("socket.ssl_key={}", f(format!("{node}-key.pem"))),
    ]
}

/// Where a server keeps the fragments of streaming transactions.
pub const STREAMING_LOG: &str = "mysql.wsrep_streaming_log";

/// Rows in `table` on `node`.
pub fn rows_in(node: Node, table: &str) -> i64 {
    let rows = node
        .sql(&format!("SELECT COUNT(*) FROM {table}"))
        .unwrap_or_else(|e| panic!("{}: counting {table}: {e}", node.name()));
    let cell = rows.first().and_then(|r| r.first());
    cell.and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{}: COUNT(*) of {table} gave {rows:?}", node.name()))
}

/// A whole number from the environment, or `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, not {text:?}")),
        Err(_) => default,
    }
}

/// Seconds from the environment, or `default`.
pub fn env_secs(name: &str, default: u64) -> Duration {
    Duration::from_secs(env_number(name, default))
}

/// `LOCKSTEP_TEST_SEED`, or one from the clock (workloads print theirs).
pub fn test_seed() -> u64 {
    env_number(
        "LOCKSTEP_TEST_SEED",
        lockstep_cli::workload::Rng::seed_from_clock(),
    )
}

/// The cluster tests of one test binary take turns: each runs several
/// servers and a load on a small machine (2 cores in CI), and two at once
/// would measure their contention, not replication.
static ONE_CLUSTER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    // A test that failed while holding the turn poisons the lock; the
    // next test is still fine to run.
    ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sets the flag when dropped: a load on another thread that runs until
/// the flag is set stops when the test's own thread is done with its part,
/// or panics (a failing test does not wait for the load's deadline).
pub struct StopOnDrop<'a>(pub &'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Our garbd is built in target/<profile>/, where liblockstep.so is (or
/// one up: tests load the copy in deps/); Galera's is Debian's.
fn garbd_for(provider_lib: &std::path::Path) -> PathBuf {
    if matches!(multi_node_provider(), Provider::Galera) {
        return PathBuf::from("/usr/bin/garbd");
    }
    let dir = provider_lib.parent().expect("the library's directory");
    [dir.join("garbd"), dir.join("../garbd")]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no garbd next to {}: build it with `cargo build --release --workspace`", provider_lib.display()))
}

/// A garbd this test started; killed (SIGKILL) when dropped.
pub struct Garbd(pub std::process::Child);

impl Drop for Garbd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts garbd in `cluster`'s group through `peer`, listening on `port`
/// (one no node of the cluster uses), logging to `log`.
pub fn start_garbd(cluster: &Cluster, peer: Node, port: u16, log: &std::path::Path) -> Garbd {
    let child = std::process::Command::new(garbd_for(cluster.provider_path()))
        .args(["--address", &format!("gcomm://127.0.0.1:{}", peer.ports().gcomm)])
        .args(["--group", &cluster.spec().cluster_name])
        .args(["--options", &format!("gmcast.listen_addr=tcp://127.0.0.1:{port}")])
        .args(["--log", &log.display().to_string()])
        // Where its gvwstate.dat goes (Galera's garbd writes one).
        .args(["--workdir", &cluster.dir().display().to_string()])
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("garbd starts");
    Garbd(child)
}
