//! An acknowledged commit survives the crash of every node's process at
//! once, whatever InnoDB kept: three nodes with
//! `innodb_flush_log_at_trx_commit=0` (InnoDB writes its log about once a
//! second), two writers per node inserting rows of their own, every node
//! SIGKILLed 0.2 s apart while they write; the nodes start again without
//! an operator, once as Debian's mariadb.service starts them (recovery
//! first) and once plainly; then every acknowledged insert is on every
//! node and every node holds the same rows. Then a majority is killed,
//! and the survivor must not go on without what the killed ones
//! committed. The gcache is the log that makes this so (see
//! `provider/src/node/replay.rs`); before it was kept, each such round
//! lost a second of acknowledged inserts on every node.
//!
//! `LOCKSTEP_TEST_DURABILITY_SECS` sets how long the writers write before
//! the kills (default 8).

mod common;

use common::*;
use lockstep_cli::check::crash::{self, Kill, Round, RoundSpec, Start};
use lockstep_cli::workload::inserts::{self, InsertConfig};
use std::time::Duration;

#[test]
fn acknowledged_commits_survive_every_node_killed_at_once_with_innodb_flush_log_at_trx_commit_0() {
    let _turn = take_turn();
    let cluster = up(spec("durability", 23, 3).mysqld_option("innodb_flush_log_at_trx_commit=0"));
    inserts::setup(&cluster, 1).unwrap_or_else(|e| panic!("creating the table: {e}"));
    let writers = InsertConfig { writers_per_node: 2, ..InsertConfig::default() };
    let load = env_secs("LOCKSTEP_TEST_DURABILITY_SECS", 8);
    let rounds = [(Kill::All, Start::Systemd), (Kill::All, Start::Plain), (Kill::Majority, Start::Plain)];
    for (number, (kill, start)) in rounds.into_iter().enumerate() {
        let spec = RoundSpec { kill, start, load, kill_gap: Duration::from_millis(200), after_kill: Duration::from_secs(1), recovery_timeout: SYNC_TIMEOUT };
        let round = crash::round(&cluster, &spec, &writers, number as u32);
        check(&round, kill, start);
    }
}

fn check(r: &Round, kill: Kill, start: Start) {
    let what = format!("kill {} (nodes {:?}), start {}", kill.label(), r.victims, start.label());
    let round = &r.verdict;
    if let Some(e) = &round.error {
        panic!("{what}: {e}");
    }
    assert!(round.acked.ids.len() > 100, "{what}: only {} inserts acknowledged: the load did not run", round.acked.ids.len());
    assert_eq!(round.lost_total(), 0, "{what}: acknowledged inserts missing per node {:?}", round.lost);
    assert!(round.divergences.is_empty(), "{what}: {}", lockstep_cli::workload::Error::Diverged(round.divergences.clone()));
    eprintln!(
        "{what}: {} inserts acknowledged, none missing on any node, checksums equal, Synced {:.1}s after the restart",
        round.acked.ids.len(),
        r.recovery.map_or(0.0, |d| d.as_secs_f64())
    );
}
