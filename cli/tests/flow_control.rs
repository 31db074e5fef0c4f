//! Flow control must not let one sick member hold the cluster: a member
//! whose appliers hang (a stuck disk) while its group links stay up stops
//! the others' writers for at most `evs.suspect_timeout`, then leaves the
//! cluster after `evs.inactive_timeout`. Galera's writers wait for as long
//! as the hang lasts. Meanwhile every member shows the stalest member's
//! lag (`wsrep_cluster_apply_lag_ms`).

mod common;

use common::*;
use lockstep_cli::cluster::Node;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SUSPECT: Duration = Duration::from_secs(3);
const INACTIVE: Duration = Duration::from_secs(10);
/// Slack for the flow-control signals and the watch's tick.
const SLACK: Duration = Duration::from_secs(2);

/// `threads` clients of `node` updating random rows of test.t, with the
/// longest time no commit happened, sampled every 50 ms.
struct Writers {
    stop: Arc<AtomicBool>,
    commits: Arc<AtomicU64>,
    longest_gap: Arc<Mutex<Duration>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Writers {
    fn start(node: Node, threads: u64) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let commits = Arc::new(AtomicU64::new(0));
        let longest_gap = Arc::new(Mutex::new(Duration::ZERO));
        let mut handles = Vec::new();
        for t in 0..threads {
            let (stop, commits) = (stop.clone(), commits.clone());
            let mut conn = node.connect().expect("writer connection");
            handles.push(std::thread::spawn(move || {
                let mut rng = lockstep_cli::workload::Rng::new(t + 1);
                while !stop.load(Ordering::Relaxed) {
                    let sql = format!("UPDATE test.t SET v = v + 1 WHERE id = {}", 1 + rng.below(1000));
                    if conn.execute(&sql).is_ok() {
                        commits.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        let (s, c, gap) = (stop.clone(), commits.clone(), longest_gap.clone());
        handles.push(std::thread::spawn(move || {
            let (mut last, mut since) = (c.load(Ordering::Relaxed), Instant::now());
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let now = c.load(Ordering::Relaxed);
                if now != last {
                    (last, since) = (now, Instant::now());
                }
                let mut g = gap.lock().unwrap();
                *g = (*g).max(since.elapsed());
            }
        }));
        Writers { stop, commits, longest_gap, threads: handles }
    }

    fn longest_gap(&self) -> Duration {
        *self.longest_gap.lock().unwrap()
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn a_member_whose_appliers_hang_stops_the_writers_for_at_most_suspect_timeout() {
    let _turn = take_turn();
    let spec = spec("hung_appliers", 19, 2)
        .provider_option(&format!("evs.suspect_timeout=PT{}S", SUSPECT.as_secs()))
        .provider_option(&format!("evs.inactive_timeout=PT{}S", INACTIVE.as_secs()));
    let cluster = up(spec);
    let (n1, n2) = (cluster.node(1), cluster.node(2));
    n1.sql("CREATE DATABASE test").unwrap();
    n1.sql("CREATE TABLE test.t (id INT PRIMARY KEY, v INT)").unwrap();
    n1.sql("INSERT INTO test.t SELECT seq, 0 FROM test.seq_1_to_1000").unwrap();
    let target = last_committed(n1);
    n2.wait_until("the rows", SYNC_TIMEOUT, |s| s.int("wsrep_last_committed") >= Some(target)).unwrap();
    let mut writers = Writers::start(n1, 4);
    std::thread::sleep(Duration::from_secs(1));
    assert!(writers.longest_gap() < SLACK, "the load runs before the hang");

    n2.set_provider_option("lockstep.debug_hang_appliers=yes").unwrap();
    let hung = Instant::now();
    // Every member sees how stale the stalest one is.
    n1.wait_until("node 2's lag seen on node 1", SUSPECT, |s| s.int("wsrep_cluster_apply_lag_ms") >= Some(1000)).unwrap();
    n2.wait_until("node 2 stalled", SUSPECT + SLACK * 2, |s| s.get("wsrep_apply_stalled") == Some("ON")).unwrap();
    let at_stall = writers.commits.load(Ordering::Relaxed);
    n1.wait_until("writers going on", SLACK * 2, |_| writers.commits.load(Ordering::Relaxed) > at_stall + 100).unwrap();
    let gap = writers.longest_gap();
    eprintln!("node 1's writers stood still for {gap:?} at most");
    assert!(gap <= SUSPECT + SLACK, "node 1's writers waited {gap:?} for a member whose appliers hang");
    assert!(gap >= SUSPECT - SLACK, "flow control did hold node 1 while node 2 was not yet suspect: {gap:?}");

    n1.wait_until("node 2 gone", INACTIVE + SLACK * 3, |s| s.get("wsrep_cluster_size") == Some("1")).unwrap();
    eprintln!("node 2 left {:?} after its appliers hung", hung.elapsed());
    assert!(hung.elapsed() >= INACTIVE, "left after {:?}, before evs.inactive_timeout", hung.elapsed());
    assert_eq!(status_var(n1, "wsrep_cluster_status"), "Primary");
    let before = writers.commits.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(1));
    assert!(writers.commits.load(Ordering::Relaxed) > before, "node 1 commits alone");
    writers.stop();
    let log = n2.error_log_tail(200);
    assert!(log.contains("no longer counts for flow control") && log.contains("leaving the cluster"), "node 2's log:\n{log}");

    // The disk comes back: node 2 applies what it held, then hears that
    // it is out.
    n2.set_provider_option("lockstep.debug_hang_appliers=no").unwrap();
    let deadline = Instant::now() + SYNC_TIMEOUT;
    while status_var(n2, "wsrep_cluster_status") != "Disconnected" {
        assert!(Instant::now() < deadline, "node 2 did not disconnect:\n{}", n2.error_log_tail(20));
        std::thread::sleep(Duration::from_millis(200));
    }
    cluster.down().unwrap();
}
