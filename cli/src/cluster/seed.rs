//! Seeding a new node's datadir from a cleanly stopped node's, so that it
//! joins at the same position and needs no state transfer. A local
//! cluster's first start pays mariabackup's SST once per joiner otherwise:
//! its donor script sleeps 10 s before it streams, whatever the size, so
//! three nodes took 25 s to come up, and every integration test starts
//! such clusters.
//!
//! What is copied is what an operator copies to clone a stopped Galera
//! node: the data, and `grastate.dat` (the history and seqno the copy
//! holds), never the files that say who a node is or what it was part of.

use super::{Error, Result};
use std::path::Path;

/// Files a seeded node must not inherit from its source: the provider's
/// identity and last view (`gvwstate.dat` names the source's own member
/// UUID: two nodes with one identity would confuse every member), the
/// writeset cache (a node builds its own), and the source's logs of its
/// own SSTs.
const NOT_COPIED: &[&str] = &["gvwstate.dat", "galera.cache", "mariabackup.backup.log", "mariabackup.prepare.log", "mariabackup.move.log"];

/// Copies the stopped source datadir `from` into `to` (which must not exist
/// or be empty), then marks the copy's saved state as not safe to
/// bootstrap from: the source is the node that bootstraps.
pub fn copy_datadir(from: &Path, to: &Path) -> Result<()> {
    copy_tree(from, to)?;
    let grastate = to.join("grastate.dat");
    let text = std::fs::read_to_string(&grastate)
        .map_err(|e| Error::io(format!("reading {} (the source was not stopped cleanly?)", grastate.display()), e))?;
    std::fs::write(&grastate, not_safe_to_bootstrap(&text)).map_err(|e| Error::io(format!("writing {}", grastate.display()), e))
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io(format!("creating {}", to.display()), e))?;
    let entries = std::fs::read_dir(from).map_err(|e| Error::io(format!("reading {}", from.display()), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("reading {}", from.display()), e))?;
        let name = entry.file_name();
        if NOT_COPIED.iter().any(|n| name == *n) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type().map_err(|e| Error::io(format!("reading {}", src.display()), e))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map_err(|e| Error::io(format!("copying {} to {}", src.display(), dst.display()), e))?;
        }
    }
    Ok(())
}

fn not_safe_to_bootstrap(grastate: &str) -> String {
    grastate
        .lines()
        .map(|l| if l.starts_with("safe_to_bootstrap:") { "safe_to_bootstrap: 0" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_keeps_the_position_and_leaves_identity_and_bootstrap_to_the_source() {
        let dir = std::env::temp_dir().join(format!("lockstep-seed-test-{}", std::process::id()));
        let (from, to) = (dir.join("from"), dir.join("to"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(from.join("mysql")).unwrap();
        let state = "# GALERA saved state\nversion: 2.1\nuuid:    65ac3688-a82b-4922-96cd-235f0fb7f4b4\nseqno:   42\nsafe_to_bootstrap: 1\n";
        std::fs::write(from.join("grastate.dat"), state).unwrap();
        std::fs::write(from.join("gvwstate.dat"), "my_uuid: 01a225c9\n").unwrap();
        std::fs::write(from.join("galera.cache"), "cache").unwrap();
        std::fs::write(from.join("mysql").join("user.MAD"), "rows").unwrap();
        copy_datadir(&from, &to).unwrap();
        let copied = std::fs::read_to_string(to.join("grastate.dat")).unwrap();
        assert_eq!(copied, state.replace("safe_to_bootstrap: 1", "safe_to_bootstrap: 0"));
        assert_eq!(std::fs::read_to_string(to.join("mysql").join("user.MAD")).unwrap(), "rows");
        assert!(!to.join("gvwstate.dat").exists() && !to.join("galera.cache").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_source_without_saved_state_is_an_error() {
        let dir = std::env::temp_dir().join(format!("lockstep-seed-test-none-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("from")).unwrap();
        let err = copy_datadir(&dir.join("from"), &dir.join("to")).unwrap_err();
        assert!(err.to_string().contains("grastate.dat"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
