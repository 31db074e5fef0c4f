//! Membership: nodes leave and join a running cluster that keeps taking
//! writes, and end up holding the same data as everyone else.
//!
//! - a node stopped cleanly (SIGTERM) leaves the view at once (the others'
//!   `wsrep_cluster_size` drops within [`LEAVE_BOUND`] of the SIGTERM, not
//!   after a failure detector's timeout), the others keep committing, and
//!   the node rejoins when started again (by SST, or IST where the
//!   provider has it), with the rows written while it was down;
//! - a fourth node joins a cluster of three under the bank load by SST,
//!   takes writes itself once Synced, and all four pass the bank checks;
//! - a node killed with SIGKILL (node 1, which bootstrapped and so leads
//!   the Raft group) is evicted after `evs.suspect_timeout`, the others
//!   keep committing, and the node rejoins when started again; the
//!   streaming transaction it had open is gone everywhere, its fragments
//!   on itself included;
//! - every node killed at once, then started again as an init system
//!   would (none bootstrapping): they find each other, the most advanced
//!   forms the component again, and no committed transfer is missing;
//! - a node frozen with SIGSTOP, or cut off the network with
//!   `gmcast.isolate=1`, is evicted the same way while the others keep
//!   committing; thawed (reconnected) under the load, it learns it is out,
//!   joins again by itself and catches up by IST, without a restart;
//! - a streaming transaction of node1 stays open while node3 restarts
//!   and joins again (a snapshot, then IST), and commits on node3 too.
//!
//! Environment, besides common's (`LOCKSTEP_TEST_MULTI_PROVIDER` picks the
//! provider; each test prints its timings):
//! - `LOCKSTEP_TEST_LEAVE_SECS`: the load around the clean stop (default
//!   20; node 3 is stopped a quarter into it);
//! - `LOCKSTEP_TEST_JOIN_WARMUP_SECS`: load before node 4 starts (default 5);
//! - `LOCKSTEP_TEST_JOIN_AFTER_SECS`: load on nodes 1-3 after node 4 is
//!   Synced (default 10);
//! - `LOCKSTEP_TEST_JOIN_ALL_SECS`: then load on all four (default 10);
//! - `LOCKSTEP_TEST_KILL_SECS`: the load around the kill (default 20; node
//!   1 is killed a quarter into it);
//! - `LOCKSTEP_TEST_RECOVER_SECS`: the load before the whole cluster is
//!   killed (default 10);
//! - `LOCKSTEP_TEST_CUT_SECS`: the load around a freeze or an isolation
//!   (default 30; node 3 is cut off a quarter into it, for twice
//!   `evs.suspect_timeout`);
//! - `LOCKSTEP_TEST_BANK_WORKERS`: workers of the loads (default 8);
//! - `LOCKSTEP_TEST_SEED`: the workloads' random seed.

mod common;

use common::*;
use lockstep_cli::cluster::{Cluster, ClusterSpec, Node};
use lockstep_cli::workload::bank;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How soon after its SIGTERM the others must stop counting a cleanly
/// stopped node. A graceful leave is a view change the leaver asks for
/// before it shuts down, a matter of round trips (Galera: about 0.1 s
/// here, under load); a node that vanishes without a word is only noticed
/// after a failure detector's timeout (Galera evicted a SIGKILLed node
/// after 6.4 s: evs.suspect_timeout is 5 s). The bound includes the
/// server's own shutdown up to its leave, on a loaded 2-core machine.
const LEAVE_BOUND: Duration = Duration::from_secs(3);

/// How long the survivors are watched for the smaller view, so that a
/// failure says how late it came, or that it never came.
const LEAVE_WATCH: Duration = Duration::from_secs(30);

/// Common's spec with a shorter start timeout: a join by SST under load
/// takes about 20 s here (mariabackup's donor alone waits 10 s), so a
/// joiner not Synced after two minutes is stuck, and the test says so
/// sooner than the launcher's default would.
fn membership_spec(name: &str, slot: u16, nodes: usize) -> ClusterSpec {
    let mut spec = spec(name, slot, nodes);
    spec.start_timeout = Duration::from_secs(120);
    spec
}

#[test]
fn a_node_stopped_cleanly_leaves_the_view_at_once_and_rejoins() {
    let _turn = take_turn();
    let started = Instant::now();
    let cluster = up_first(membership_spec("membership_leave", 10, 3), 3);
    // Workers only on the nodes that stay: node 3's clients would fail
    // with it, which is not what this test is about.
    let config = survivors_load(vec![1, 2], env_secs("LOCKSTEP_TEST_LEAVE_SECS", 20));
    bank::setup(&cluster, &config).unwrap_or_else(|e| panic!("bank setup: {e}"));
    let (run, rows_at_leave) = load_around(&cluster, &config, "node3 down", || {
        let leave = stop_and_watch_leave(&cluster, 3);
        eprintln!("{leave}");
        leave.assert_prompt();
        log_rows(cluster.node(1))
    });
    went_on_and_rejoins(&cluster, &config, &run, 3, "left", rows_at_leave);
    eprintln!("test took {:.1}s", started.elapsed().as_secs_f64());
}

#[test]
fn a_fourth_node_joins_a_loaded_cluster_by_sst() {
    let _turn = take_turn();
    let started = Instant::now();
    let cluster = up_first(membership_spec("membership_join", 11, 4), 3);
    let warmup = env_secs("LOCKSTEP_TEST_JOIN_WARMUP_SECS", 5);
    let after = env_secs("LOCKSTEP_TEST_JOIN_AFTER_SECS", 10);
    let first = bank::BankConfig {
        workers: env_number("LOCKSTEP_TEST_BANK_WORKERS", 8) as usize,
        nodes: vec![1, 2, 3],
        // Stopped once node 4 has been Synced for `after`; this only
        // bounds a run whose stop never comes.
        duration: warmup + cluster.spec().start_timeout + after + Duration::from_secs(30),
        seed: test_seed(),
        ..bank::BankConfig::default()
    };
    bank::setup(&cluster, &first).unwrap_or_else(|e| panic!("bank setup: {e}"));
    let run = load_while_joining(&cluster, &first, 4, warmup, after);
    cluster
        .wait_synced(SYNC_TIMEOUT)
        .unwrap_or_else(|e| panic!("after node4 joined: {e}"));
    // Some workers move to node 4: the joiner must take writes too.
    let all = bank::BankConfig {
        workers: first.workers + 2,
        nodes: Vec::new(),
        duration: env_secs("LOCKSTEP_TEST_JOIN_ALL_SECS", 10),
        first_transfer_id: run.next_transfer_id,
        seed: first.seed.wrapping_add(1),
        ..first.clone()
    };
    let later = bank::run(&cluster, &all)
        .unwrap_or_else(|e| panic!("bank load on all 4 nodes (seed {}): {e}", all.seed));
    eprintln!("{}", later.summary());
    assert!(
        later.per_node[3].committed > 0,
        "node4 committed no transfer in {:.1}s after it joined\n{}",
        later.elapsed.as_secs_f64(),
        later.summary()
    );
    let check = check_bank(&cluster, &first, &run.then(later));
    eprintln!(
        "all 4 nodes agree on {} transfers; test took {:.1}s",
        check.log_rows,
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_killed_node_is_evicted_while_the_others_keep_committing_and_rejoins() {
    let _turn = take_turn();
    let started = Instant::now();
    let cluster = up_first(membership_spec("membership_kill", 12, 3), 3);
    // Workers only on the survivors: the victim's clients die with it.
    let config = survivors_load(vec![2, 3], env_secs("LOCKSTEP_TEST_KILL_SECS", 20));
    bank::setup(&cluster, &config).unwrap_or_else(|e| panic!("bank setup: {e}"));
    let _open = open_streaming_transaction(cluster.node(1), cluster.node(2));
    let (run, rows_at_eviction) =
        load_around(&cluster, &config, "node1 killed", || kill_and_watch_eviction(&cluster, 1));
    went_on_and_rejoins(&cluster, &config, &run, 1, "was evicted", rows_at_eviction);
    // The killed node's own streaming transaction is rolled back on every
    // node, its fragments on itself too: its server hears the view that
    // left it out through IST (Galera alike).
    for n in 1..=3 {
        let left = rows_in(cluster.node(n), STREAMING_LOG);
        assert_eq!(left, 0, "node{n}: fragments of the killed node's transaction are left");
    }
    eprintln!("test took {:.1}s", started.elapsed().as_secs_f64());
}

/// A streaming transaction of node1 stays open while node3 restarts and
/// joins again under writes, from a group log compacted past its last
/// stay (a snapshot of the group's state, then IST). It commits, and
/// node3 has it too: the joiner's server hears the view it joined in
/// once. Heard twice in a row, the server took the repeat for a healed
/// partition and rolled back every streaming transaction of the others
/// on node3 alone, which then skipped the commit ("Could not find applier
/// context") and lost it.
#[test]
fn a_streaming_transaction_open_across_a_rejoin_commits_on_the_rejoined_node() {
    let _turn = take_turn();
    let cluster = up_first(membership_spec("membership_sr_rejoin", 17, 3), 3);
    let (node1, node3) = (cluster.node(1), cluster.node(3));
    let setup = "CREATE DATABASE bank; CREATE TABLE bank.small (id INT PRIMARY KEY)";
    node1.sql(setup).unwrap_or_else(|e| panic!("{setup}: {e}"));
    let mut open = open_streaming_transaction(node1, cluster.node(2));
    // Past the group log's snapshot threshold (16384 entries): node3's
    // new member must start from a snapshot. In parallel, to be quick.
    std::thread::scope(|scope| {
        for w in 0..4 {
            scope.spawn(move || small_writes(node1, w, |n| n == 4500));
        }
    });
    // Whether the snapshot comes after the join view depends on timing:
    // three rejoins make it likely that one of them does.
    for round in 0..REJOINS {
        node3.stop().unwrap_or_else(|e| panic!("stopping node3: {e}"));
        // Writes while node3 joins, from several clients: the snapshot it
        // gets is then taken some writesets after its join view, and the
        // IST that follows carries that view.
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let stop = &stop;
            let writers: Vec<_> =
                (0..8).map(|w| scope.spawn(move || small_writes(node1, 10 * (round + 1) + w, |_| stop.load(Ordering::Relaxed)))).collect();
            let _stop_on_panic = StopOnDrop(stop);
            start_node(node3);
            stop.store(true, Ordering::Relaxed);
            let written: u64 = writers.into_iter().map(|w| w.join().expect("a writer panicked")).sum();
            eprintln!("{written} small writes while node3 joined");
        });
    }
    for sql in ["INSERT INTO bank.streamed VALUES (4)", "COMMIT"] {
        open.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    cluster.wait_synced(SYNC_TIMEOUT).unwrap_or_else(|e| panic!("after the commit: {e}"));
    lockstep_cli::workload::converge::wait_converged(&cluster, SYNC_TIMEOUT)
        .unwrap_or_else(|e| panic!("converging: {e}"));
    for n in 1..=3 {
        assert_eq!(rows_in(cluster.node(n), "bank.streamed"), 4, "node{n}: the streaming transaction's rows");
        assert_eq!(rows_in(cluster.node(n), STREAMING_LOG), 0, "node{n}: fragments left");
    }
}

/// How many times node3 restarts with a streaming transaction open.
const REJOINS: u64 = 3;

/// Single-row inserts on `node`, ids `writer` * 1e6 + 1..., until
/// `done(inserted so far)`; how many.
fn small_writes(node: Node, writer: u64, done: impl Fn(u64) -> bool) -> u64 {
    let mut conn = node.connect().unwrap_or_else(|e| panic!("{}: {e}", node.name()));
    let mut n = 0;
    while !done(n) {
        n += 1;
        let sql = format!("INSERT INTO bank.small VALUES ({})", writer * 1_000_000 + n);
        conn.execute(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    n
}

/// A streaming transaction open on `origin` (a fragment per row), once
/// `other` holds its fragments; the connection keeps it open.
fn open_streaming_transaction(origin: Node, other: Node) -> lockstep_cli::cluster::Conn {
    let mut conn = origin.connect().unwrap_or_else(|e| panic!("{}: {e}", origin.name()));
    for sql in [
        "CREATE TABLE bank.streamed (id INT PRIMARY KEY)",
        "SET SESSION wsrep_trx_fragment_unit='rows'",
        "SET SESSION wsrep_trx_fragment_size=1",
        "START TRANSACTION",
        "INSERT INTO bank.streamed VALUES (1)",
        "INSERT INTO bank.streamed VALUES (2)",
        "INSERT INTO bank.streamed VALUES (3)",
    ] {
        conn.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    other
        .wait_until("the fragments", SYNC_TIMEOUT, |_| rows_in(other, STREAMING_LOG) > 0)
        .unwrap_or_else(|e| panic!("{}: {e}", other.name()));
    conn
}

#[test]
fn a_cluster_killed_at_once_recovers_by_itself_when_its_nodes_start_again() {
    let _turn = take_turn();
    let cluster = up_first(membership_spec("membership_recover", 15, 3), 3);
    let config = survivors_load(vec![1, 2, 3], env_secs("LOCKSTEP_TEST_RECOVER_SECS", 10));
    bank::setup(&cluster, &config).unwrap_or_else(|e| panic!("bank setup: {e}"));
    let run = bank::run(&cluster, &config).unwrap_or_else(|e| panic!("bank load (seed {}): {e}", config.seed));
    eprintln!("{}", run.summary());
    for n in 1..=3 {
        cluster.node(n).kill().unwrap_or_else(|e| panic!("killing node{n}: {e}"));
    }
    // As an operator's init system would: every node with its usual
    // configuration, none bootstrapping.
    let started = Instant::now();
    std::thread::scope(|s| {
        for n in 1..=3 {
            let node = cluster.node(n);
            s.spawn(move || node.start_member().unwrap_or_else(|e| panic!("node{n} did not recover: {e}")));
        }
    });
    cluster.wait_synced(SYNC_TIMEOUT).unwrap_or_else(|e| panic!("after the restart: {e}"));
    eprintln!("cluster recovered and Synced {:.1}s after the restart", started.elapsed().as_secs_f64());
    let check = check_bank(&cluster, &config, &run);
    eprintln!("all {} transfers committed before the crash are on every node", check.log_rows);
}

#[test]
fn a_frozen_node_is_evicted_and_catches_up_by_itself_when_thawed() {
    cut_off_and_back("membership_freeze", 13, Cut::Freeze);
}

#[test]
fn an_isolated_node_is_evicted_and_catches_up_by_itself_when_reconnected() {
    cut_off_and_back("membership_isolate", 14, Cut::Isolate);
}

/// How node 3 is cut off from the others.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// SIGSTOP, then SIGCONT.
    Freeze,
    /// `gmcast.isolate=1`, then 0.
    Isolate,
}

/// Node 3 is cut off a quarter into a load on nodes 1 and 2, evicted,
/// and back in the cluster before the load ends: it must rejoin without a
/// restart (the server keeps running) and pass the bank checks.
fn cut_off_and_back(name: &str, slot: u16, cut: Cut) {
    let _turn = take_turn();
    let started = Instant::now();
    let cluster = up_first(membership_spec(name, slot, 3), 3);
    let config = survivors_load(vec![1, 2], env_secs("LOCKSTEP_TEST_CUT_SECS", 30));
    bank::setup(&cluster, &config).unwrap_or_else(|e| panic!("bank setup: {e}"));
    let node3 = cluster.node(3);
    let pid = node3.pid();
    let (run, rows_at_eviction) = load_around(&cluster, &config, "node3 cut off", || {
        let rows = cut_and_watch_eviction(&cluster, 3, cut);
        match cut {
            Cut::Freeze => node3.thaw(),
            Cut::Isolate => node3.sql("SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'").map(|_| ()),
        }
        .unwrap_or_else(|e| panic!("bringing node3 back ({cut:?}): {e}"));
        let back = Instant::now();
        // node3's own status says Synced until it hears it was removed:
        // it is back once the others count it again.
        wait_cluster_size(&cluster, &[1, 2], 3, back)
            .unwrap_or_else(|e| panic!("node3 never rejoined after {cut:?}: {e}\n{}", node3.error_log_tail(30)));
        node3
            .wait_synced(SYNC_TIMEOUT)
            .unwrap_or_else(|e| panic!("node3 never Synced again after {cut:?}: {e}\n{}", node3.error_log_tail(30)));
        eprintln!("node3: Synced again {:.1}s after it was back ({cut:?})", back.elapsed().as_secs_f64());
        rows
    });
    assert_eq!(node3.pid(), pid, "node3 was restarted");
    let rows_at_end = log_rows(cluster.node(1));
    assert!(rows_at_end > rows_at_eviction, "nodes 1 and 2 committed nothing after node3 was evicted\n{}", run.summary());
    cluster.wait_synced(SYNC_TIMEOUT).unwrap_or_else(|e| panic!("after node3 came back: {e}"));
    let check = check_bank(&cluster, &config, &run);
    if matches!(cut, Cut::Isolate) {
        // Out and back once more with nothing written meanwhile, then a
        // restart, which comes back by IST alone: the view node 3
        // rejoined in, the last thing it heard, must have recorded the
        // server's position with it (the server compares the two at the
        // restart; it refused "SST script passed bogus GTID").
        cut_and_watch_eviction(&cluster, 3, Cut::Isolate);
        node3.sql("SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'").unwrap();
        wait_cluster_size(&cluster, &[1, 2], 3, Instant::now()).unwrap_or_else(|e| panic!("node3 never rejoined: {e}"));
        node3.wait_synced(SYNC_TIMEOUT).unwrap_or_else(|e| panic!("node3 never Synced again: {e}"));
        node3.stop().unwrap_or_else(|e| panic!("stopping node3: {e}"));
        let (synced, _) = start_node(node3);
        eprintln!("node3 restarted and Synced in {:.1}s", synced.as_secs_f64());
    }
    eprintln!("node3 holds all {} transfers; test took {:.1}s", check.log_rows, started.elapsed().as_secs_f64());
}

/// Cuts node `victim` off and waits for the others to evict it; the rows
/// in `bank.log` when they had.
fn cut_and_watch_eviction(cluster: &Cluster, victim: usize, cut: Cut) -> i64 {
    let survivors = running_except(cluster, victim);
    let cut_at = Instant::now();
    match cut {
        Cut::Freeze => cluster.node(victim).freeze(),
        Cut::Isolate => cluster.node(victim).sql("SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'").map(|_| ()),
    }
    .unwrap_or_else(|e| panic!("cutting node{victim} off ({cut:?}): {e}"));
    let evicted = wait_cluster_size(cluster, &survivors, survivors.len() as i64, cut_at)
        .unwrap_or_else(|e| panic!("node{victim} was cut off ({cut:?}) but never evicted: {e}"));
    eprintln!("node{victim}: evicted {:.1}s after {cut:?}", evicted.as_secs_f64());
    log_rows(cluster.node(survivors[0]))
}

/// The bank load of the leave and kill tests: on the nodes that stay.
fn survivors_load(nodes: Vec<usize>, duration: Duration) -> bank::BankConfig {
    bank::BankConfig {
        workers: env_number("LOCKSTEP_TEST_BANK_WORKERS", 8) as usize,
        nodes,
        duration,
        seed: test_seed(),
        ..bank::BankConfig::default()
    }
}

/// Runs `config`'s load and, a quarter into it (every node has applied
/// some of it as a member), `event`: a node leaves or dies. The run, and
/// what `event` returned; `what` names the event in a failure.
fn load_around<T: Send>(
    cluster: &Cluster,
    config: &bank::BankConfig,
    what: &str,
    event: impl FnOnce() -> T + Send,
) -> (bank::BankRun, T) {
    let stop = AtomicBool::new(false);
    let (run, seen) = std::thread::scope(|scope| {
        let load = scope.spawn(|| bank::run_until(cluster, config, &stop));
        let _stop_on_panic = StopOnDrop(&stop);
        std::thread::sleep(config.duration / 4);
        let seen = event();
        (load.join().expect("the load thread panicked"), seen)
    });
    let run = run.unwrap_or_else(|e| panic!("bank load with {what} (seed {}): {e}", config.seed));
    eprintln!("{}", run.summary());
    (run, seen)
}

/// After node `gone` left or was evicted (`how`) with `rows_then` rows in
/// `bank.log`: the others committed more, it rejoins, and every node
/// passes the bank checks.
fn went_on_and_rejoins(
    cluster: &Cluster,
    config: &bank::BankConfig,
    run: &bank::BankRun,
    gone: usize,
    how: &str,
    rows_then: i64,
) {
    let rows_at_end = log_rows(cluster.node(config.nodes[0]));
    assert!(
        rows_at_end > rows_then,
        "nodes {:?} committed no transfer after node{gone} {how} (bank.log: {rows_then} rows \
         then, {rows_at_end} at the end of the load)\n{}",
        config.nodes,
        run.summary()
    );
    rejoin(cluster, gone);
    let check = check_bank(cluster, config, run);
    eprintln!(
        "node{gone} holds all {} transfers, {} of them written after it {how}",
        check.log_rows,
        rows_at_end - rows_then
    );
}

/// Kills node `victim` and waits for the others to evict it; the rows in
/// `bank.log` when they had.
fn kill_and_watch_eviction(cluster: &Cluster, victim: usize) -> i64 {
    let survivors = running_except(cluster, victim);
    let watcher = cluster.node(survivors[0]);
    let rows_at_kill = log_rows(watcher);
    let killed = Instant::now();
    cluster
        .node(victim)
        .kill()
        .unwrap_or_else(|e| panic!("killing node{victim}: {e}"));
    let evicted = wait_cluster_size(cluster, &survivors, survivors.len() as i64, killed)
        .unwrap_or_else(|e| panic!("node{victim} was killed but never evicted: {e}"));
    let rows = log_rows(watcher);
    eprintln!(
        "node{victim}: evicted {:.1}s after SIGKILL; {} transfers committed meanwhile",
        evicted.as_secs_f64(),
        rows - rows_at_kill
    );
    rows
}

/// Runs `config`'s load; `warmup` into it starts node `joiner`, and stops
/// the load `after` the joiner is Synced. Fails the test when the joiner
/// does not join by state transfer or the cluster stops committing while
/// it joins.
fn load_while_joining(
    cluster: &Cluster,
    config: &bank::BankConfig,
    joiner: usize,
    warmup: Duration,
    after: Duration,
) -> bank::BankRun {
    let stop = AtomicBool::new(false);
    let run = std::thread::scope(|scope| {
        let load = scope.spawn(|| bank::run_until(cluster, config, &stop));
        let _stop_on_panic = StopOnDrop(&stop);
        std::thread::sleep(warmup);
        let before = last_committed(cluster.node(1));
        let (took, transferred) = start_node(cluster.node(joiner));
        let during = last_committed(cluster.node(1)) - before;
        eprintln!(
            "node{joiner}: joined and Synced in {:.1}s under load; {during} writesets \
             committed meanwhile",
            took.as_secs_f64()
        );
        assert!(
            transferred,
            "node{joiner} reached Synced without a state transfer"
        );
        if load.is_finished() {
            let outcome = match load.join().expect("the load thread panicked") {
                Ok(run) => format!("without an error, after {:.1}s", run.elapsed.as_secs_f64()),
                Err(e) => e.to_string(),
            };
            panic!(
                "the load ended while node{joiner} joined (seed {}): {outcome}",
                config.seed
            );
        }
        assert!(
            during > 0,
            "node1 committed no writeset in the {:.1}s node{joiner} took to join: the join \
             stalled the cluster",
            took.as_secs_f64()
        );
        std::thread::sleep(after);
        stop.store(true, Ordering::Relaxed);
        load.join().expect("the load thread panicked")
    });
    let run = run.unwrap_or_else(|e| {
        panic!(
            "bank load while node{joiner} joined (seed {}): {e}",
            config.seed
        )
    });
    eprintln!("{}", run.summary());
    run
}

/// When a stopped node left the others' view, from its SIGTERM.
struct Leave {
    node: usize,
    /// Until the server exited.
    exited: Duration,
    /// Until every other node reported the smaller cluster size, or why
    /// that did not happen within [`LEAVE_WATCH`].
    dropped: Result<Duration, String>,
}

impl std::fmt::Display for Leave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let exited = self.exited.as_secs_f64();
        match &self.dropped {
            Ok(d) => write!(
                f,
                "node{}: left the view {:.2}s after SIGTERM (exited after {exited:.2}s)",
                self.node,
                d.as_secs_f64()
            ),
            Err(e) => write!(
                f,
                "node{}: exited {exited:.2}s after SIGTERM, but the others still count it: {e}",
                self.node
            ),
        }
    }
}

impl Leave {
    fn assert_prompt(&self) {
        let dropped = self.dropped.as_ref().unwrap_or_else(|e| {
            panic!(
                "node{} was stopped cleanly (SIGTERM, exited after {:.2}s) but never left the \
                 view: {e}",
                self.node,
                self.exited.as_secs_f64()
            )
        });
        assert!(
            *dropped <= LEAVE_BOUND,
            "node{} was stopped cleanly but the others counted it for {:.2}s after SIGTERM \
             (exited after {:.2}s; bound {:.0}s): a graceful leave must change the view at \
             once, not through a failure detector's timeout",
            self.node,
            dropped.as_secs_f64(),
            self.exited.as_secs_f64(),
            LEAVE_BOUND.as_secs_f64()
        );
    }
}

/// The running nodes other than `node`: whose view must drop it.
fn running_except(cluster: &Cluster, node: usize) -> Vec<usize> {
    cluster
        .running_nodes()
        .into_iter()
        .filter(|n| *n != node)
        .collect()
}

/// Stops node `leaver` with SIGTERM while watching the others' view.
fn stop_and_watch_leave(cluster: &Cluster, leaver: usize) -> Leave {
    let others = running_except(cluster, leaver);
    let size = others.len() as i64;
    let started = Instant::now();
    std::thread::scope(|scope| {
        let stopping = scope.spawn(|| {
            let result = cluster.node(leaver).stop();
            (result, started.elapsed())
        });
        let dropped = wait_cluster_size(cluster, &others, size, started);
        let (result, exited) = stopping.join().expect("the stopping thread panicked");
        result.unwrap_or_else(|e| panic!("stopping node{leaver}: {e}"));
        Leave {
            node: leaver,
            exited,
            dropped,
        }
    })
}

/// Time from `since` until every node of `nodes` reports
/// `wsrep_cluster_size` = `size`, or why not within [`LEAVE_WATCH`] (which
/// is twice Galera's default `evs.inactive_timeout`: an eviction comes
/// within it too).
fn wait_cluster_size(
    cluster: &Cluster,
    nodes: &[usize],
    size: i64,
    since: Instant,
) -> Result<Duration, String> {
    let what = format!("wsrep_cluster_size={size}");
    for n in nodes {
        let left = LEAVE_WATCH.saturating_sub(since.elapsed());
        cluster
            .node(*n)
            .wait_until(&what, left, |s| s.int("wsrep_cluster_size") == Some(size))
            .map_err(|e| e.to_string())?;
    }
    Ok(since.elapsed())
}

/// Starts stopped node `index` again and waits until the whole cluster
/// is Synced with every node counted everywhere.
fn rejoin(cluster: &Cluster, index: usize) {
    let (took, transferred) = start_node(cluster.node(index));
    eprintln!(
        "node{index}: rejoined and Synced in {:.1}s ({})",
        took.as_secs_f64(),
        if transferred {
            "after a state transfer"
        } else {
            "no state transfer"
        }
    );
    cluster
        .wait_synced(SYNC_TIMEOUT)
        .unwrap_or_else(|e| panic!("after node{index} rejoined: {e}"));
}

/// Rows in `bank.log` on `node`: transfers committed so far.
fn log_rows(node: Node) -> i64 {
    rows_in(node, "bank.log")
}

