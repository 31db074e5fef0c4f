//! `lockstep conformance`: MariaDB's own wsrep test suites as the referee.
//!
//! Runs mariadb-test-run.pl (package mariadb-test) on the suites galera,
//! galera_sr, galera_3nodes, galera_3nodes_sr and wsrep with a chosen
//! provider, exactly as real Galera was run for the conformance target
//! (shared/conformance/README.md), then reads mtr's result lines and reports
//! per-suite counts, failures, and for a test list (CI's
//! `conformance/must-pass.txt`) every listed test that did not pass.
//!
//! - [`options`]: the command line ([`Cli`]) and the options of a run;
//! - [`spec`]: test names and list files;
//! - [`overlay`]: one-node variants of the galera suites (`galera_1node`);
//! - [`mtr`]: mtr's command line and a bounded, logged run;
//! - [`results`]: parsing mtr's output;
//! - [`report`]: counts, failures, listed tests, comparison with a pass list.
//!
//! Notes for provider authors on what the suites demand: conformance/NOTES.md.

pub mod cli;
pub mod mtr;
pub mod options;
pub mod overlay;
pub mod report;
pub mod results;
pub mod spec;

pub use cli::run_cli;
pub use options::Cli;
