//! What lockstep promises, checked the way Jepsen checks: three nodes
//! with `innodb_snapshot_isolation=ON` and every client at
//! `wsrep_sync_wait=1`, Jepsen's list-append transactions from two
//! clients per node while one node after another is paused (SIGSTOP),
//! then while one after another is killed and started again; every key
//! read on every node after each; the Elle-style checker must find
//! nothing but G2-item (write skew, which snapshot isolation allows).
//! Then the pauses again with `wsrep_sync_wait=0`: no stale read on a
//! node that was paused, once it runs again.
//!
//! `LOCKSTEP_TEST_LIST_APPEND_SECS` sets each run's length (default 45).

mod common;

use common::*;
use lockstep_cli::check::elle::STRONG_SNAPSHOT_ISOLATION_ALLOWS;
use lockstep_cli::check::list_append::{self, Fault, RunSpec};
use lockstep_cli::workload::list_append::{setup, Config};
use std::time::Duration;

#[test]
fn with_snapshot_isolation_and_causal_reads_pauses_and_kills_show_no_anomaly_but_write_skew() {
    let _turn = take_turn();
    let spec = spec("list_append", 25, 3).mysqld_option("innodb_snapshot_isolation=ON").mysqld_option("innodb_lock_wait_timeout=1");
    let cluster = up(lockstep_cli::cluster::ClusterSpec { slave_threads: 4, ..spec });
    setup(&cluster, 1).unwrap_or_else(|e| panic!("creating the tables: {e}"));
    let config = Config { clients_per_node: 2, sync_wait: 1, statement_timeout: Duration::from_secs(10), seed: 49_50 };
    let time = env_secs("LOCKSTEP_TEST_LIST_APPEND_SECS", 45);
    for fault in [Fault::Pause, Fault::KillOne] {
        let spec = RunSpec { fault, time, gap: Duration::from_secs(6), recovery_timeout: SYNC_TIMEOUT };
        let run = list_append::run(&cluster, &spec, &config);
        let what = format!("list-append under {}", fault.label());
        if let Some(e) = &run.error {
            panic!("{what}: {e}\n{}", run.faults.join("\n"));
        }
        assert!(run.committed() > 500, "{what}: only {} transactions committed", run.committed());
        assert!(!run.faults.is_empty(), "{what}: no fault was done");
        let found: Vec<&str> = run.report.counts().into_keys().filter(|k| !STRONG_SNAPSHOT_ISOLATION_ALLOWS.contains(k)).collect();
        assert!(found.is_empty(), "{what}: {}\n{}\n{}", run.report.summary(), run.faults.join("\n"), run.report.examples(&run.history, 3));
        assert!(run.report.stopped.iter().all(|(c, _)| STRONG_SNAPSHOT_ISOLATION_ALLOWS.contains(&c.name())), "{what}: {}", run.report.summary());
        eprintln!("{what}: {} committed, {} faults, found {}", run.committed(), run.faults.len(), run.report.summary());
    }
    // Without causal reads (the default), a node that was paused does not
    // answer from where it stopped once it runs again (`group::standstill`):
    // reads elsewhere may lag by the usual few milliseconds, not its.
    let config = Config { sync_wait: 0, ..config };
    let spec = RunSpec { fault: Fault::Pause, time, gap: Duration::from_secs(6), recovery_timeout: SYNC_TIMEOUT };
    let run = list_append::run(&cluster, &spec, &config);
    assert!(run.error.is_none(), "list-append under pause, sync_wait 0: {:?}", run.error);
    assert!(run.struck.iter().any(|f| f.ended - f.began >= 2_000_000), "no pause of 2 s or more: {:?}", run.faults);
    assert_eq!(run.stale_on_struck, 0, "stale reads on a node after its pause:\n{}\n{}", run.faults.join("\n"), run.report.examples(&run.history, 3));
    eprintln!("list-append under pause, sync_wait 0: {} committed, found {}, none stale on a paused node", run.committed(), run.report.summary());
}
