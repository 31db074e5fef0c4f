//! Multi-writer correctness on three nodes: clients write on every node at
//! once, then the nodes must agree with each other and with what the
//! clients were told (see `lockstep_cli::workload`). Against lockstep by
//! default; `LOCKSTEP_TEST_MULTI_PROVIDER=galera` runs them on the referee.
//!
//! Environment, besides common's:
//! - `LOCKSTEP_TEST_BANK_SECS`: length of the bank load (default 30: long
//!   enough for thousands of conflicting transfers, short enough for CI);
//! - `LOCKSTEP_TEST_BANK_WORKERS`: bank workers over the 3 nodes (default 12);
//! - `LOCKSTEP_TEST_HOT_ROW_SECS`: length of the hot-row load (default 15);
//! - `LOCKSTEP_TEST_SEED`: the workloads' random seed (default: the clock;
//!   every run prints the one it used).

mod common;

use common::*;
use lockstep_cli::workload::{bank, causal, hot_row};
use std::time::{Duration, Instant};

fn three_nodes(name: &str, slot: u16) -> TestCluster {
    let started = Instant::now();
    let cluster = up(spec(name, slot, 3));
    eprintln!(
        "{name}: 3 nodes Synced in {:.1}s ({})",
        started.elapsed().as_secs_f64(),
        cluster.provider_path().display()
    );
    cluster
}

#[test]
fn bank_transfers_keep_the_invariant_on_three_nodes() {
    let _turn = take_turn();
    let cluster = three_nodes("multi_writer_bank", 7);
    let config = bank::BankConfig {
        workers: env_number("LOCKSTEP_TEST_BANK_WORKERS", 12) as usize,
        duration: Duration::from_secs(env_number("LOCKSTEP_TEST_BANK_SECS", 30)),
        seed: test_seed(),
        ..bank::BankConfig::default()
    };
    bank::setup(&cluster, &config).unwrap_or_else(|e| panic!("bank setup: {e}"));
    let run = bank::run(&cluster, &config)
        .unwrap_or_else(|e| panic!("bank load (seed {}): {e}", config.seed));
    eprintln!("{}", run.summary());
    for node in &run.per_node {
        assert!(
            node.committed > 0,
            "node{}: no transfer committed in {:.1}s\n{}",
            node.node,
            run.elapsed.as_secs_f64(),
            run.summary()
        );
    }
    let checking = Instant::now();
    let check = bank::check(&cluster, &config, &run, SYNC_TIMEOUT)
        .unwrap_or_else(|e| panic!("bank check (seed {}): {e}", config.seed));
    eprintln!(
        "bank: all {} nodes at seqno {} {:.2}s after the load; {} transfers in bank.log, \
         identical everywhere; total {} unchanged (checks took {:.1}s)",
        check.nodes,
        check.converged.seqno,
        check.converged.waited.as_secs_f64(),
        check.log_rows,
        config.total(),
        checking.elapsed().as_secs_f64()
    );
}

#[test]
fn hot_row_updates_from_all_nodes_converge() {
    let _turn = take_turn();
    let cluster = three_nodes("multi_writer_hot_row", 8);
    let config = hot_row::HotRowConfig {
        duration: Duration::from_secs(env_number("LOCKSTEP_TEST_HOT_ROW_SECS", 15)),
        ..hot_row::HotRowConfig::default()
    };
    hot_row::setup(&cluster, &config).unwrap_or_else(|e| panic!("hot row setup: {e}"));
    let run = hot_row::run(&cluster, &config).unwrap_or_else(|e| panic!("hot row load: {e}"));
    eprintln!("{}", run.summary());
    assert!(
        run.succeeded() > 0,
        "no update succeeded\n{}",
        run.summary()
    );
    let check = hot_row::check(&cluster, &run, SYNC_TIMEOUT)
        .unwrap_or_else(|e| panic!("hot row check: {e}\n{}", run.summary()));
    eprintln!(
        "hot row: v = {} on all nodes, at seqno {} {:.2}s after the load",
        check.value,
        check.converged.seqno,
        check.converged.waited.as_secs_f64()
    );
}

#[test]
fn a_row_written_on_any_node_is_readable_on_every_node_with_sync_wait() {
    let _turn = take_turn();
    let cluster = three_nodes("multi_writer_causal", 9);
    let run = causal::run(&cluster, &causal::CausalConfig::default())
        .unwrap_or_else(|e| panic!("causal reads: {e}"));
    eprintln!("{}", run.summary());
    assert_eq!(run.reads, run.rows * 2, "{}", run.summary());
}
