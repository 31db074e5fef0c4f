//! One-node suites: `galera_1node` runs the tests of `galera` on a cluster
//! of one server.
//!
//! Every configuration shipped with the galera suites starts two or more
//! wsrep servers, and mtr starts every `[mysqld.N]` of a test's
//! configuration before the test runs, so no galera test runs on one node as
//! shipped. Yet many of them only ever talk to node_1. To run those while
//! lockstep cannot form a multi-node cluster, we generate a suite directory
//! that mirrors the original (tests, results, includes, suite.pm: symlinks)
//! but whose `my.cnf` and `galera_2nodes.cnf` describe a single server
//! (galera_1node.cnf). mtr accepts a suite given as a path and names its
//! tests `<path>.<test>`.
//!
//! The `t/` directory holds one symlink per file rather than being a symlink
//! itself: a test's own `.cnf` says `!include ../galera_2nodes.cnf`, and mtr
//! resolves that from the textual path of the .cnf, which must then land in
//! our directory, not in the original suite. `r/` is built the same way so
//! that mtr's `.reject` files (written next to the `.result`) land here and
//! not in the installed suite. Likewise tests source
//! `../../wsrep/include/...` relative to their own path, so the directory
//! holding our suites also links every original suite by its name.

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// The one-server configuration, written as both my.cnf and galera_2nodes.cnf.
const ONE_NODE_CNF: &str = include_str!("galera_1node.cnf");

/// The configurations replaced by the one-node one; any other .cnf of the
/// suite (galera_4nodes.cnf ...) is left out so that tests needing it fail
/// loudly instead of running with several servers.
const REPLACED_CNF: [&str; 2] = ["my.cnf", "galera_2nodes.cnf"];

/// Directories mirrored file by file instead of linked whole (see above).
const PER_FILE_DIRS: [&str; 2] = ["t", "r"];

/// Create (or recreate) `<root>/<name>` mirroring `<mtr_dir>/suite/<base>`.
pub fn build(root: &Path, name: &str, base: &str, mtr_dir: &Path) -> io::Result<PathBuf> {
    let source = mtr_dir.join("suite").join(base);
    let target = root.join(name);
    if target.exists() {
        // Only ever our own generated directory (root is the runner's dir).
        fs::remove_dir_all(&target)?;
    }
    fs::create_dir_all(&target)?;
    link_sibling_suites(root, &mtr_dir.join("suite"))?;
    link_top_level(&source, &target)?;
    for dir in PER_FILE_DIRS {
        fs::create_dir_all(target.join(dir))?;
        link_each_file(&source.join(dir), &target.join(dir))?;
    }
    for cnf in REPLACED_CNF {
        fs::write(target.join(cnf), ONE_NODE_CNF)?;
    }
    Ok(target)
}

/// `<root>/wsrep` -> `<mtr_dir>/suite/wsrep` and so on, once.
fn link_sibling_suites(root: &Path, suites: &Path) -> io::Result<()> {
    for entry in fs::read_dir(suites)? {
        let name = entry?.file_name();
        let link = root.join(&name);
        if link.symlink_metadata().is_err() {
            symlink(suites.join(&name), link)?;
        }
    }
    Ok(())
}

fn link_top_level(source: &Path, target: &Path) -> io::Result<()> {
    for entry in fs::read_dir(source)? {
        let name = entry?.file_name();
        let text = name.to_string_lossy();
        if PER_FILE_DIRS.contains(&text.as_ref()) || text.ends_with(".cnf") {
            continue;
        }
        symlink(source.join(&name), target.join(&name))?;
    }
    Ok(())
}

fn link_each_file(source: &Path, target: &Path) -> io::Result<()> {
    for entry in fs::read_dir(source)? {
        let name = entry?.file_name();
        symlink(source.join(&name), target.join(&name))?;
    }
    Ok(())
}

/// mtr splits a suite argument at `-` (suite-overlay) and test names at `.`
/// (suite.test): a path that contains either cannot be used as a suite.
pub fn check_usable(root: &Path) -> Result<(), String> {
    let text = root.to_string_lossy();
    if text.contains('-') || text.contains('.') {
        return Err(format!(
            "{text}: one-node suites live under the run directory, and mtr cannot use \
             a suite path containing '-' or '.'; choose a --vardir without them"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_suite(mtr: &Path) {
        let suite = mtr.join("suite/galera");
        fs::create_dir_all(suite.join("t")).unwrap();
        fs::create_dir_all(suite.join("r")).unwrap();
        fs::write(suite.join("suite.pm"), "1;").unwrap();
        fs::write(suite.join("galera_4nodes.cnf"), "").unwrap();
        fs::write(suite.join("my.cnf"), "!include galera_2nodes.cnf").unwrap();
        fs::write(suite.join("t/MW-258.test"), "").unwrap();
        fs::write(suite.join("r/MW-258.result"), "").unwrap();
    }

    #[test]
    fn mirrors_the_suite_with_one_node_configuration() {
        let tmp =
            std::env::temp_dir().join(format!("lockstep_overlay_test_{}", std::process::id()));
        let mtr = tmp.join("mtr");
        fake_suite(&mtr);
        let dir = build(&tmp.join("suites"), "galera_1node", "galera", &mtr).unwrap();
        // Twice: a second run replaces the first.
        let dir2 = build(&tmp.join("suites"), "galera_1node", "galera", &mtr).unwrap();
        assert_eq!(dir, dir2);
        assert!(dir.join("t").is_dir() && !dir.join("t").is_symlink());
        assert!(dir.join("t/MW-258.test").is_symlink());
        assert!(dir.join("r").is_dir() && !dir.join("r").is_symlink());
        assert!(dir.join("r/MW-258.result").is_symlink() && dir.join("suite.pm").is_symlink());
        assert_eq!(
            fs::read_to_string(dir.join("my.cnf")).unwrap(),
            ONE_NODE_CNF
        );
        assert_eq!(
            fs::read_to_string(dir.join("galera_2nodes.cnf")).unwrap(),
            ONE_NODE_CNF
        );
        assert!(!dir.join("galera_4nodes.cnf").exists());
        // ../../galera/... from a test resolves to the original suite.
        assert!(tmp.join("suites/galera").is_symlink());
        assert!(dir.join("t/../../galera/suite.pm").is_file());
        fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn refuses_paths_mtr_would_split() {
        assert!(check_usable(Path::new("/tmp/lockstep_conformance/suites")).is_ok());
        assert!(check_usable(Path::new("/tmp/lockstep-conformance/suites")).is_err());
        assert!(check_usable(Path::new("/tmp/a.b/suites")).is_err());
    }
}
