//! The README's guided tour runs as it is written: the `sh` block under
//! "## A guided tour", with this build's `lockstep`, in a directory and
//! on ports of the test's own. With lockstep, the INSERT while node 3
//! stands still commits at once, node 3 counts it once it is resumed,
//! and all 1,001 acknowledged commits are there after every node was
//! killed at once with `innodb_flush_log_at_trx_commit=0`. With Galera,
//! the same INSERT waits for the paused node (the tour says so): the
//! block runs up to node 3's resume.

mod common;

use common::*;
use lockstep_cli::cluster::{Cluster, ClusterSpec};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Longer than a commit takes on a loaded CI machine, shorter than the
/// 5 s `evs.suspect_timeout` that Galera waits for before it gives up on
/// a paused node.
const AT_ONCE_SECS: f64 = 2.0;

#[test]
fn the_readmes_guided_tour_runs_as_written() {
    let _turn = take_turn();
    let out = run_tour("tour", 31, &tour_block(), "");
    assert_eq!(counts(&out.stdout), [1, 1001], "the tour's two COUNT(*) results\n{}", out.stdout);
    let insert = out.insert_secs();
    assert!(insert < AT_ONCE_SECS, "the INSERT with node 3 paused took {insert} s: it waited for the paused node");
}

#[test]
fn with_galera_the_tours_insert_waits_for_the_paused_node() {
    let _turn = take_turn();
    let block = tour_block();
    let until_resume: Vec<&str> = block.lines().take_while(|l| !l.contains("cluster sql 3")).collect();
    let out = run_tour("tour_galera", 32, &until_resume.join("\n"), " --provider galera");
    let insert = out.insert_secs();
    assert!(insert >= AT_ONCE_SECS, "with Galera the INSERT with node 3 paused took only {insert} s");
}

/// The README's tour, as a newcomer would paste it.
fn tour_block() -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).expect("README.md");
    let tour = readme.split_once("\n## A guided tour\n").expect("README has \"## A guided tour\"").1;
    let block = tour.split_once("```sh\n").expect("the tour has an sh block").1;
    block.split_once("\n```").expect("the tour's block ends").0.to_string()
}

struct Output {
    stdout: String,
    stderr: String,
}

impl Output {
    /// The seconds bash's `time` gave the INSERT (TIMEFORMAT below).
    fn insert_secs(&self) -> f64 {
        let line = self.stderr.lines().find_map(|l| l.strip_prefix("insert took ")).unwrap_or_else(|| panic!("no time in\n{}", self.stderr));
        line.trim().parse().expect("seconds")
    }
}

/// Runs `block` with bash (stopping at the first failing command), this
/// build's binary for `target/release/lockstep`, the cluster in the
/// test's directory on its ports, and `up_extra` added to `cluster up`.
fn run_tour(name: &str, slot: u16, block: &str, up_extra: &str) -> Output {
    // The test's directory and ports, as every cluster test's (spec stops
    // what an interrupted run left there).
    let ClusterSpec { dir, base_port: port, .. } = spec(name, slot, 3);
    let _ = std::fs::remove_dir_all(&dir);
    let _down = DownOnDrop(dir.clone());
    let script = block
        .replace("lockstep=target/release/lockstep", &format!("lockstep={}", env!("CARGO_BIN_EXE_lockstep")))
        .replace("cluster up --nodes 3", &format!("cluster up --nodes 3 --base-port {port}{up_extra}"));
    assert!(script.contains(&format!("--base-port {port}")), "the tour starts no cluster:\n{block}");
    let out = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &script])
        .env("LOCKSTEP_CLUSTER_DIR", &dir)
        .env("TIMEFORMAT", "insert took %R")
        .output()
        .expect("bash runs");
    let output = Output { stdout: String::from_utf8_lossy(&out.stdout).into(), stderr: String::from_utf8_lossy(&out.stderr).into() };
    assert!(out.status.success(), "the tour failed ({})\nstdout:\n{}\nstderr:\n{}", out.status, output.stdout, output.stderr);
    eprintln!("{}{}", output.stdout, output.stderr);
    output
}

/// The one-number rows of the tables `cluster sql` printed, in order.
fn counts(stdout: &str) -> Vec<i64> {
    stdout.lines().filter_map(|l| l.strip_prefix('|')?.strip_suffix('|')?.trim().parse().ok()).collect()
}

/// Stops what the tour left running, also when it failed half-way, and
/// removes its directory if the test passed, as `TestCluster` does for
/// the clusters a test starts itself (an opened cluster is not stopped
/// when dropped).
struct DownOnDrop(PathBuf);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        if let Ok(cluster) = Cluster::open(&self.0) {
            let _ = cluster.down();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
