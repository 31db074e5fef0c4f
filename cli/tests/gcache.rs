//! The gcache survives a restart of its node (`gcache.recover`): a donor
//! restarted cleanly still serves IST for seqnos ordered before its
//! restart.
//!
//! Node 3 stops; rows are written; node 1 restarts (and catches up by
//! IST); more rows; node 3 starts with `wsrep_sst_donor=node1`, so node 1
//! must serve node 3's gap, most of which it cached before its restart.
//!
//! A restarted node also caches what the group's log replays to it when
//! it joins, so the first write phase goes past the group's log
//! compaction (a snapshot every 16384 entries): node 1 then rejoins from a
//! snapshot, and the seqnos node 3 misses are in node 1's gcache only if
//! they survived the restart. `LOCKSTEP_TEST_PROVIDER_OPTIONS=gcache.recover=no`
//! makes the test fail (node 1 falls back to SST).
//!
//! Environment, besides common's: `LOCKSTEP_TEST_GCACHE_ROWS`, the rows
//! of the first write phase (default 17500; fewer than the compaction
//! interval makes the test prove nothing, and it says so).

mod common;

use common::*;
use lockstep_cli::cluster::{Cluster, Node};
use std::ops::Range;

/// Clients writing at once (half on node 1, half on node 2).
const WRITERS: i64 = 4;

#[test]
fn a_restarted_donor_serves_ist_from_its_recovered_gcache() {
    let _turn = take_turn();
    let spec = spec("gcache_recover", 16, 3).node_mysqld_option(3, "wsrep_sst_donor=node1");
    let cluster = up_first(spec, 3);
    cluster.node(1).sql("CREATE DATABASE g; CREATE TABLE g.t (id INT PRIMARY KEY, v INT)").unwrap();
    cluster.node(3).stop().unwrap_or_else(|e| panic!("stopping node3: {e}"));
    let rows = env_number("LOCKSTEP_TEST_GCACHE_ROWS", 17500) as i64;
    insert_rows(&cluster, 0..rows);
    eprintln!("{rows} rows written while node3 was down; node1 at seqno {}", last_committed(cluster.node(1)));

    let node1_log = LogMark::at(cluster.node(1));
    cluster.node(1).stop().unwrap_or_else(|e| panic!("stopping node1: {e}"));
    let (took, _) = start_node(cluster.node(1));
    let restart = node1_log.read();
    eprintln!("node1: restarted and Synced in {:.1}s", took.as_secs_f64());
    assert_logged(&restart, "node1 at its restart (the group's log was not compacted: raise LOCKSTEP_TEST_GCACHE_ROWS)", "from a snapshot");
    insert_rows(&cluster, rows..rows + 200);

    let (node1_log, node3_log) = (LogMark::at(cluster.node(1)), LogMark::at(cluster.node(3)));
    let (took, joined) = start_node(cluster.node(3));
    eprintln!("node3: joined and Synced in {:.1}s", took.as_secs_f64());
    assert!(joined, "node3 reached Synced without a state transfer");
    let (donor, joiner) = (node1_log.read(), node3_log.read());
    assert_logged(&donor, "node1 as node3's donor", "async IST sender starting to serve");
    assert_logged(&donor, "node1 as node3's donor", "Bypassing the SST for IST");
    assert_not_logged(&donor, "node1 as node3's donor", "Streaming the backup to joiner");
    assert_logged(&joiner, "node3", "Receiving IST");

    cluster.wait_synced(SYNC_TIMEOUT).unwrap_or_else(|e| panic!("after node3 joined: {e}"));
    let count = cluster.node(3).sql("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM g.t").unwrap();
    assert_eq!(count, [[(rows + 200).to_string()]]);
    let sums: Vec<_> = cluster.nodes().map(|n| n.sql("CHECKSUM TABLE g.t").unwrap()).collect();
    assert!(sums.iter().all(|s| *s == sums[0]), "CHECKSUM TABLE differs: {sums:?}");
}

/// Inserts rows `ids` (id, id) from [`WRITERS`] clients on nodes 1 and 2.
fn insert_rows(cluster: &Cluster, ids: Range<i64>) {
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let node = cluster.node(1 + w as usize % 2);
            let mine = ids.clone().filter(move |id| id % WRITERS == w);
            s.spawn(move || {
                let mut conn = node.connect().unwrap_or_else(|e| panic!("{}: {e}", node.name()));
                for id in mine {
                    let sql = format!("INSERT INTO g.t VALUES ({id}, {id})");
                    conn.execute(&sql).unwrap_or_else(|e| panic!("{}: {sql}: {e}", node.name()));
                }
            });
        }
    });
}

/// A place in a node's error log (appended to across restarts).
struct LogMark {
    path: std::path::PathBuf,
    offset: u64,
}

impl LogMark {
    fn at(node: Node) -> LogMark {
        let path = node.paths().error_log;
        let offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        LogMark { path, offset }
    }

    /// What the log gained since the mark.
    fn read(&self) -> String {
        let bytes = std::fs::read(&self.path).unwrap_or_else(|e| panic!("{}: {e}", self.path.display()));
        String::from_utf8_lossy(&bytes[self.offset as usize..]).into_owned()
    }
}

fn assert_logged(log: &str, whose: &str, needle: &str) {
    assert!(log.contains(needle), "{whose}: no {needle:?} in the log:\n{}", tail(log));
}

fn assert_not_logged(log: &str, whose: &str, needle: &str) {
    assert!(!log.contains(needle), "{whose}: {needle:?} in the log:\n{}", tail(log));
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("WSREP")).collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
