//! Chaos, for minutes: three nodes take bank transfers on every node and
//! streaming transactions from one node after another, while a node at a
//! time is killed (SIGKILL) or stopped (SIGTERM), then started again.
//! The leader dies as often as any other node: nothing picks the victims
//! but the seed.
//!
//! What must hold at the end, once the load stopped and every node is
//! Synced again:
//! - every node holds the same rows (bank checks, CHECKSUM TABLE);
//! - every transfer and streaming batch a client saw commit is on every
//!   node, none that got ER_LOCK_DEADLOCK is, and one whose node died
//!   under it (in doubt) is there whole or not at all: a streaming batch
//!   has all its rows or none, on every node;
//! - a client only ever saw its node lost while that node was down or
//!   rejoining: the clients of the nodes that stayed up never got an error
//!   other than ER_LOCK_DEADLOCK.
//!
//! Minutes of load, so it is not in the default run:
//! `cargo test --release -p lockstep-cli --test chaos -- --ignored --nocapture`.
//! Environment, besides common's:
//! - `LOCKSTEP_TEST_CHAOS_GARBD=1`: two data nodes and garbd, the
//!   deployment an arbitrator exists for (garbd is never a victim);
//! - `LOCKSTEP_TEST_CHAOS_SECS`: how long victims are taken (default 180);
//! - `LOCKSTEP_TEST_BANK_WORKERS`: bank workers over the data nodes (default 9);
//! - `LOCKSTEP_TEST_SEED`: the seed of the load and of the victims.

mod common;

use common::*;
use lockstep_cli::cluster::{Cluster, Node};
use lockstep_cli::workload::{bank, Rng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Members of the group: data nodes, or two and garbd.
const MEMBERS: usize = 3;

/// Rows per streaming batch, and per fragment: a batch is tens of
/// fragments, so a kill lands in the middle of one more often than not.
const BATCH_ROWS: u32 = 2000;
const FRAGMENT_ROWS: u32 = 50;

/// After a node is back, a client of it may still see the tail of its
/// outage (a connection opened just before it went down fails after).
const OUTAGE_SLACK: Duration = Duration::from_secs(5);

#[test]
#[ignore = "minutes of load; run with --ignored"]
fn kills_and_restarts_under_load_lose_nothing_and_diverge_nowhere() {
    let _turn = take_turn();
    let seed = test_seed();
    let chaos_for = env_secs("LOCKSTEP_TEST_CHAOS_SECS", 180);
    let arbitrators = usize::from(env_number("LOCKSTEP_TEST_CHAOS_GARBD", 0) > 0);
    let mut spec = spec("chaos", 30, MEMBERS - arbitrators);
    spec.start_timeout = Duration::from_secs(180);
    let cluster = Chaos { cluster: up(spec), arbitrators };
    // The ports of the node garbd stands for, which no server uses.
    let _garbd = (arbitrators > 0).then(|| {
        let garbd = start_garbd(&cluster.cluster, cluster.node(1), cluster.spec().ports(MEMBERS).gcomm, &cluster.dir().join("garbd.log"));
        cluster.wait_synced().unwrap_or_else(|e| panic!("garbd did not join: {e}"));
        garbd
    });
    let config = bank::BankConfig {
        workers: env_number("LOCKSTEP_TEST_BANK_WORKERS", 9) as usize,
        // The chaos ends the load; this only bounds a hung one.
        duration: chaos_for + Duration::from_secs(600),
        seed,
        survive_lost_nodes: true,
        ..bank::BankConfig::default()
    };
    bank::setup(&cluster, &config).unwrap_or_else(|e| panic!("bank setup: {e}"));
    streaming_setup(&cluster);
    let stop = AtomicBool::new(false);
    let (run, batches, outages) = std::thread::scope(|scope| {
        let load = scope.spawn(|| bank::run_until(&cluster, &config, &stop));
        let streams = scope.spawn(|| stream_batches(&cluster, seed, &stop));
        let _stop_on_panic = StopOnDrop(&stop);
        let outages = take_victims(&cluster, seed, chaos_for);
        stop.store(true, Ordering::Relaxed);
        let run = load.join().expect("the load thread panicked");
        (run, streams.join().expect("the streaming thread panicked"), outages)
    });
    let run = run.unwrap_or_else(|e| panic!("bank load (seed {seed}): {e}"));
    eprintln!("{}", run.summary());
    eprintln!("{} outages; streaming batches: {batches}", outages.len());
    cluster.wait_synced().unwrap_or_else(|e| panic!("after the chaos: {e}"));
    for lost in &run.lost {
        assert_during_outage(&outages, lost.node, lost.at, &lost.error);
    }
    for lost in &batches.lost {
        assert_during_outage(&outages, lost.node, lost.at, &format!("batch {}: {}", lost.batch, lost.error));
    }
    let check = bank::check(&cluster, &config, &run, SYNC_TIMEOUT)
        .unwrap_or_else(|e| panic!("bank check (seed {seed}): {e}"));
    eprintln!("bank: {} transfers identical on all {} nodes", check.log_rows, check.nodes);
    check_batches(&cluster, &batches);
}

/// The cluster's data nodes, and how many garbd members the group has
/// besides.
struct Chaos {
    cluster: TestCluster,
    arbitrators: usize,
}

impl std::ops::Deref for Chaos {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

impl Chaos {
    fn wait_synced(&self) -> lockstep_cli::cluster::Result<()> {
        self.cluster.wait_synced_with_arbitrators(SYNC_TIMEOUT, self.arbitrators)
    }

    /// A data node picked by `rng`.
    fn pick(&self, rng: &mut Rng) -> Node<'_> {
        self.node(rng.between(1, self.spec().nodes as i64) as usize)
    }
}

/// One node down, from its kill or stop until it was Synced again.
struct Outage {
    node: usize,
    began: Instant,
    ended: Instant,
}

/// Takes victims until `chaos_for` has passed: a node (the seed picks
/// which, the leader as likely as another) runs a few seconds more, dies
/// (SIGKILL or SIGTERM), stays down a few seconds, and starts again; the
/// next victim only once the whole cluster is Synced.
fn take_victims(cluster: &Chaos, seed: u64, chaos_for: Duration) -> Vec<Outage> {
    let mut rng = Rng::new(seed ^ 0xc4a05);
    let started = Instant::now();
    let mut outages = Vec::new();
    while started.elapsed() < chaos_for {
        std::thread::sleep(Duration::from_secs(rng.between(3, 10) as u64));
        let node = cluster.pick(&mut rng);
        let kill = rng.below(3) > 0;
        let began = Instant::now();
        eprintln!(
            "[{:6.1}s] {}: {}",
            started.elapsed().as_secs_f64(),
            node.name(),
            if kill { "SIGKILL" } else { "SIGTERM" }
        );
        let gone = if kill { node.kill() } else { node.stop() };
        gone.unwrap_or_else(|e| panic!("{}: {e}", node.name()));
        std::thread::sleep(Duration::from_secs(rng.between(1, 8) as u64));
        let (took, transferred) = start_node(node);
        cluster
            .wait_synced()
            .unwrap_or_else(|e| panic!("after {} came back: {e}", node.name()));
        eprintln!(
            "[{:6.1}s] {}: Synced again in {:.1}s ({})",
            started.elapsed().as_secs_f64(),
            node.name(),
            took.as_secs_f64(),
            if transferred { "state transfer" } else { "no state transfer" }
        );
        outages.push(Outage {
            node: node.index(),
            began,
            ended: Instant::now(),
        });
    }
    outages
}

/// Fails the test unless node `node` was down (or just back) at `at`.
fn assert_during_outage(outages: &[Outage], node: usize, at: Instant, error: &str) {
    let covered = outages
        .iter()
        .any(|o| o.node == node && o.began <= at && at <= o.ended + OUTAGE_SLACK);
    assert!(
        covered,
        "a client of node{node} got an error while node{node} was up and the cluster \
         Primary: {error}"
    );
}

fn streaming_setup(cluster: &Cluster) {
    let node = cluster.node(1);
    node.sql(
        "CREATE TABLE bank.streamed (batch INT NOT NULL, n INT NOT NULL, \
         c CHAR(100) NOT NULL, PRIMARY KEY (batch, n))",
    )
    .unwrap_or_else(|e| panic!("creating bank.streamed: {e}"));
}

/// What the streaming client saw.
#[derive(Default)]
struct Batches {
    committed: Vec<u32>,
    aborted: Vec<u32>,
    /// The batches whose node was lost, in doubt.
    lost: Vec<LostBatch>,
}

struct LostBatch {
    batch: u32,
    node: usize,
    at: Instant,
    error: String,
}

impl std::fmt::Display for Batches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} committed, {} aborted, {} in doubt",
            self.committed.len(),
            self.aborted.len(),
            self.lost.len()
        )
    }
}

/// Streaming transactions (a fragment every [`FRAGMENT_ROWS`] rows) of
/// [`BATCH_ROWS`] rows each, on a node picked by the seed, until `stop`.
fn stream_batches(cluster: &Chaos, seed: u64, stop: &AtomicBool) -> Batches {
    let mut rng = Rng::new(seed ^ 0x5742);
    let mut batches = Batches::default();
    let mut batch = 0;
    while !stop.load(Ordering::Relaxed) {
        let node = cluster.pick(&mut rng);
        if !node.is_running() || node.status_var("wsrep_ready").ok().as_deref() != Some("ON") {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        batch += 1;
        match stream_one(node, batch) {
            Ok(()) => batches.committed.push(batch),
            Err(e) if e.is_deadlock() => batches.aborted.push(batch),
            Err(e) => batches.lost.push(LostBatch { batch, node: node.index(), at: Instant::now(), error: e.to_string() }),
        }
    }
    batches
}

fn stream_one(node: Node, batch: u32) -> lockstep_cli::cluster::Result<()> {
    let mut conn = node.connect_timeout(Duration::from_secs(60))?;
    conn.query_results(&format!(
        "SET SESSION wsrep_trx_fragment_unit='rows'; \
         SET SESSION wsrep_trx_fragment_size={FRAGMENT_ROWS}"
    ))?;
    conn.query_results("START TRANSACTION")?;
    let rows = conn.query_results(&format!(
        "INSERT INTO bank.streamed SELECT {batch}, seq, REPEAT('x', 100) FROM bank.seq_1_to_{BATCH_ROWS}"
    ));
    let rows = rows.and_then(|_| conn.query_results("COMMIT"));
    if rows.is_err() {
        let _ = conn.query_results("ROLLBACK");
    }
    rows.map(|_| ())
}

/// Every node: each committed batch whole, no aborted one, an in-doubt
/// one whole or absent, and the same batches everywhere.
fn check_batches(cluster: &Cluster, batches: &Batches) {
    let mut first: Option<Vec<Vec<String>>> = None;
    for node in cluster.nodes() {
        let rows = node
            .sql("SET SESSION wsrep_sync_wait=1; SELECT batch, COUNT(*) FROM bank.streamed GROUP BY batch ORDER BY batch")
            .unwrap_or_else(|e| panic!("{}: reading bank.streamed: {e}", node.name()));
        let count = |b: u32| {
            rows.iter()
                .find(|r| r[0] == b.to_string())
                .map_or(0, |r| r[1].parse::<u32>().unwrap())
        };
        for b in &batches.committed {
            assert_eq!(count(*b), BATCH_ROWS, "{}: committed batch {b}", node.name());
        }
        for b in &batches.aborted {
            assert_eq!(count(*b), 0, "{}: aborted batch {b}", node.name());
        }
        for b in batches.lost.iter().map(|l| &l.batch) {
            assert!(
                [0, BATCH_ROWS].contains(&count(*b)),
                "{}: batch {b} (in doubt) has {} rows: half a transaction",
                node.name(),
                count(*b)
            );
        }
        match &first {
            None => first = Some(rows),
            Some(f) => assert_eq!(f, &rows, "{}: batches differ from node1's", node.name()),
        }
    }
    for node in cluster.nodes() {
        assert_eq!(rows_in(node, STREAMING_LOG), 0, "{}: fragments of finished transactions are left", node.name());
    }
    eprintln!("streaming: every node agrees on {batches}, no fragment left anywhere");
}
