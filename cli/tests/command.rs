//! The `lockstep cluster` command itself, end to end on one node.

mod common;

use common::*;
use lockstep_cli::cluster::Cluster;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Stops the cluster in `dir` when the test ends, passed or failed: the
/// command detaches its servers, so no Drop of ours would. A passed test's
/// directory goes too.
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

fn lockstep(args: &[&str], dir: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .arg("cluster")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .expect("running lockstep");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn up_status_sql_down() {
    let spec = spec("command", 5, 1);
    let dir = spec.dir.clone();
    let _guard = DownOnDrop(dir.clone());
    let port = spec.base_port.to_string();
    let provider = provider().label();

    let (ok, out) = lockstep(
        &[
            "up",
            "--nodes",
            "1",
            "--provider",
            &provider,
            "--base-port",
            &port,
        ],
        &dir,
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("node1: initialising datadir ... starting (pid "),
        "{out}"
    );
    assert!(out.contains("Synced in "), "{out}");
    assert!(
        out.contains(&format!(
            "mariadb -S {}/node1/mysqld.sock -uroot",
            dir.display()
        )),
        "{out}"
    );

    let (ok, out) = lockstep(&["up", "--provider", &provider, "--base-port", &port], &dir);
    assert!(
        !ok && out.contains("already running"),
        "a second up must refuse: {out}"
    );

    let (ok, out) = lockstep(&["status"], &dir);
    assert!(ok, "{out}");
    let row = out.lines().find(|l| l.starts_with("node1")).expect(&out);
    assert!(
        row.contains("alive") && row.contains("Synced") && row.contains("Primary"),
        "{out}"
    );

    let (ok, out) = lockstep(
        &[
            "sql",
            "1",
            "CREATE DATABASE d; CREATE TABLE d.t (a INT PRIMARY KEY)",
        ],
        &dir,
    );
    assert!(ok, "{out}");
    let (ok, out) = lockstep(
        &["sql", "1", "INSERT INTO d.t VALUES (7); SELECT a FROM d.t"],
        &dir,
    );
    assert!(
        ok && out.contains("| 7 |") && out.contains("1 row(s)"),
        "{out}"
    );
    let (ok, out) = lockstep(&["sql", "1", "SELEC"], &dir);
    assert!(!ok && out.contains("ERROR 1064 (42000)"), "{out}");

    let (ok, out) = lockstep(&["down"], &dir);
    assert!(ok && out.contains("node1: stopped (pid "), "{out}");
    let (ok, out) = lockstep(&["status"], &dir);
    assert!(!ok && out.contains("down"), "{out}");
}
