//! Command line of `lockstep conformance`: clap parses it into [`Cli`],
//! which settles into the [`Options`] of a run (list files read).

use std::path::PathBuf;

use clap::{value_parser, Parser};

use super::spec::{self, TestSpec, SUITES};

pub const DEFAULT_DIR: &str = "/tmp/lockstep_conformance";

#[derive(Parser, Debug)]
#[command(
    name = "lockstep conformance",
    about = "Run MariaDB's mtr galera/wsrep suites against a wsrep provider and summarise the results",
    long_about = "Runs MariaDB's mtr suites (galera, galera_sr, galera_3nodes, galera_3nodes_sr,
wsrep) against a wsrep provider, the way shared/conformance/README.md ran real
Galera, and summarises the results.

What to run: all five suites by default; --suites runs whole suites, --list and
test names run exactly those tests.",
    after_help = "Exit status: 0 done; 1 a listed or named test did not pass; 2 usage; 3 mtr could not run.",
    // A repeated option takes its last value, as the hand-written parser did.
    args_override_self = true
)]
pub struct Cli {
    /// These tests, as suite.test or suite.test,combination (same exit
    /// status as --list).
    #[arg(value_name = "SUITE.TEST", value_parser = TestSpec::parse)]
    pub tests: Vec<TestSpec>,
    /// These suites, e.g. wsrep,galera_1node; galera_1node / galera_sr_1node
    /// run the galera / galera_sr tests on a one-server cluster. Whole suites:
    /// not with --list or test names.
    #[arg(long, value_name = "A,B", value_parser = parse_suites, conflicts_with_all = ["lists", "tests"])]
    pub suites: Option<Suites>,
    /// Exactly the tests in FILE (one suite.test per line, # comments); exit
    /// status 1 unless every one passes (repeatable).
    #[arg(long = "list", value_name = "FILE")]
    pub lists: Vec<PathBuf>,
    /// The provider: lockstep (liblockstep.so next to this binary), galera
    /// (/usr/lib/galera/libgalera_smm.so) or a path.
    #[arg(long, value_name = "P", default_value = "lockstep")]
    pub provider: String,
    /// Also run tests marked big.
    #[arg(long)]
    pub big_test: bool,
    /// mtr workers.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = value_parser!(u32).range(1..=16))]
    pub parallel: u32,
    /// Run directory: DIR/conformance.log (mtr's output), DIR/summary.txt,
    /// DIR/mtr (mtr's vardir), DIR/suites (one-node suites).
    #[arg(long = "vardir", value_name = "DIR", default_value = DEFAULT_DIR)]
    pub dir: PathBuf,
    /// First port; each worker takes 30.
    #[arg(long, value_name = "P", default_value_t = 30000, value_parser = value_parser!(u32).range(10000..=32000))]
    pub port_base: u32,
    /// Per testcase, minutes (mtr --testcase-timeout).
    #[arg(long = "timeout", value_name = "MIN", default_value_t = 4, value_parser = value_parser!(u32).range(1..=600))]
    pub testcase_timeout_min: u32,
    /// Whole run, minutes (mtr --suite-timeout).
    #[arg(long = "suite-timeout", value_name = "MIN", default_value_t = 360, value_parser = value_parser!(u32).range(1..=10000))]
    pub suite_timeout_min: u32,
    /// Diff the tests that passed with a pass list, e.g.
    /// ../shared/conformance/galera-26.4.23-pass.txt.
    #[arg(long, value_name = "FILE")]
    pub compare: Option<PathBuf>,
    /// Echo all of mtr's output, not only result lines.
    #[arg(long)]
    pub verbose: bool,
    /// Keep mariabackup's donor pause as installed (10 s before each SST's
    /// stream), instead of ending it once the joiner listens.
    #[arg(long)]
    pub stock_sst: bool,
    /// Passed to mariadb-test-run.pl as they are (after --).
    #[arg(last = true, value_name = "MTR-ARGS")]
    pub mtr_args: Vec<String>,
}

/// The value of --suites: one value, so a repeated --suites replaces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suites(pub Vec<String>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Whole suites; failures are reported, the exit status stays 0.
    Suites(Vec<String>),
    /// Named tests (from --list and/or the command line); each must pass.
    Tests(Vec<TestSpec>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// `lockstep`, `galera` or a path; resolved by the runner.
    pub provider: String,
    pub selection: Selection,
    pub big_test: bool,
    pub parallel: u32,
    pub dir: PathBuf,
    pub port_base: u32,
    pub testcase_timeout_min: u32,
    pub suite_timeout_min: u32,
    pub compare: Option<PathBuf>,
    pub verbose: bool,
    pub stock_sst: bool,
    pub mtr_args: Vec<String>,
}

/// Reads the --list files: the one check clap cannot make.
impl TryFrom<Cli> for Options {
    type Error = String;

    fn try_from(cli: Cli) -> Result<Options, String> {
        Ok(Options {
            selection: selection(cli.suites, &cli.lists, cli.tests)?,
            provider: cli.provider,
            big_test: cli.big_test,
            parallel: cli.parallel,
            dir: cli.dir,
            port_base: cli.port_base,
            testcase_timeout_min: cli.testcase_timeout_min,
            suite_timeout_min: cli.suite_timeout_min,
            compare: cli.compare,
            verbose: cli.verbose,
            stock_sst: cli.stock_sst,
            mtr_args: cli.mtr_args,
        })
    }
}

fn parse_suites(text: &str) -> Result<Suites, String> {
    let suites: Vec<String> = text
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if suites.is_empty() {
        return Err("--suites needs at least one suite".into());
    }
    suites.iter().try_for_each(|s| spec::check_suite(s))?;
    Ok(Suites(suites))
}

/// Suites or tests (clap refuses both): a test list means "exactly these".
fn selection(
    suites: Option<Suites>,
    lists: &[PathBuf],
    named: Vec<TestSpec>,
) -> Result<Selection, String> {
    if let Some(Suites(suites)) = suites {
        return Ok(Selection::Suites(suites));
    }
    if lists.is_empty() && named.is_empty() {
        return Ok(Selection::Suites(
            SUITES.iter().map(|s| s.to_string()).collect(),
        ));
    }
    let mut tests = Vec::new();
    for list in lists {
        tests.extend(spec::read_list(list)?);
    }
    tests.extend(named);
    // An empty list is valid: must-pass.txt starts empty and CI runs it.
    Ok(Selection::Tests(dedup(tests)))
}

fn dedup(tests: Vec<TestSpec>) -> Vec<TestSpec> {
    let mut seen = std::collections::HashSet::new();
    tests
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("lockstep conformance").chain(text.split_whitespace()))
    }

    fn options(text: &str) -> Options {
        Options::try_from(parse(text).unwrap()).unwrap()
    }

    #[test]
    fn defaults_run_all_five_suites_with_lockstep() {
        let o = options("");
        assert_eq!(o.provider, "lockstep");
        assert!(matches!(o.selection, Selection::Suites(ref s) if s.len() == 5));
        assert_eq!(
            (o.parallel, o.port_base, o.big_test, o.verbose),
            (2, 30000, false, false)
        );
        assert_eq!((o.testcase_timeout_min, o.suite_timeout_min), (4, 360));
        assert_eq!((o.dir, o.compare), (PathBuf::from(DEFAULT_DIR), None));
        assert!(o.mtr_args.is_empty());
    }

    #[test]
    fn options_with_and_without_equals_and_passthrough() {
        let o = options("--provider=galera --suites wsrep,galera_1node --parallel 1 --port-base=31000 -- --mysqld=--x --verbose");
        assert_eq!(o.provider, "galera");
        assert_eq!(
            o.selection,
            Selection::Suites(vec!["wsrep".into(), "galera_1node".into()])
        );
        assert_eq!((o.parallel, o.port_base, o.verbose), (1, 31000, false));
        assert_eq!(o.mtr_args, ["--mysqld=--x", "--verbose"]);
    }

    #[test]
    fn named_tests_are_a_selection() {
        let o = options("wsrep.binlog_format galera.MW-258,innodb wsrep.binlog_format");
        let Selection::Tests(tests) = o.selection else {
            panic!()
        };
        assert_eq!(tests.len(), 2);
    }

    #[test]
    fn test_names_mix_with_options_and_a_repeated_option_takes_the_last() {
        let o = options("wsrep.trans --vardir a --big-test wsrep.plugin --vardir b --parallel 3");
        assert_eq!(
            o.selection,
            Selection::Tests(vec![
                TestSpec::parse("wsrep.trans").unwrap(),
                TestSpec::parse("wsrep.plugin").unwrap(),
            ])
        );
        assert_eq!(
            (o.dir, o.big_test, o.parallel),
            (PathBuf::from("b"), true, 3)
        );
        let repeated = parse("--list a --list b").unwrap();
        assert_eq!(repeated.lists, [PathBuf::from("a"), PathBuf::from("b")]);
    }

    #[test]
    fn an_empty_list_selects_nothing() {
        let list = std::env::temp_dir().join(format!("lockstep_empty_list_{}", std::process::id()));
        std::fs::write(&list, "# nothing yet\n").unwrap();
        let o = options(&format!("--list {}", list.display()));
        assert_eq!(o.selection, Selection::Tests(vec![]));
        std::fs::remove_file(list).unwrap();
    }

    #[test]
    fn a_missing_list_is_refused_when_settled() {
        let cli = parse("--list no/such/list.txt").unwrap();
        assert!(Options::try_from(cli).is_err());
    }

    #[test]
    fn mistakes_are_refused() {
        for bad in [
            "--suites main",
            "--suites ,",
            "--parallel 0",
            "--port-base 9999",
            "--bogus",
            "--suites wsrep wsrep.trans",
            "--suites wsrep --list x",
            "--timeout",
            "nodot",
            "galera.x,",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// `lockstep` may make this a subcommand of one clap command.
    #[test]
    fn works_as_a_subcommand() {
        #[derive(Parser)]
        struct Lockstep {
            #[command(subcommand)]
            command: Command,
        }
        #[derive(clap::Subcommand)]
        enum Command {
            Conformance(Cli),
        }
        let line = "lockstep conformance wsrep.trans --vardir a --vardir b -- --repeat=2";
        let Command::Conformance(cli) = Lockstep::try_parse_from(line.split(' ')).unwrap().command;
        assert_eq!((cli.tests.len(), cli.dir), (1, PathBuf::from("b")));
        assert_eq!(cli.mtr_args, ["--repeat=2"]);
    }

    /// The command lines of scripts/test, the READMEs and galera-baseline.md.
    #[test]
    fn documented_command_lines_parse() {
        for line in [
            "--provider lockstep --big-test --list conformance/must-pass.txt",
            "--list conformance/must-pass.txt",
            "--big-test --list conformance/must-pass.txt",
            "--provider galera --suites wsrep",
            "--list conformance/one-node-candidates.txt",
            "--provider galera --suites wsrep --compare ../shared/conformance/galera-26.4.23-pass.txt",
            "--provider galera --list conformance/one-node-candidates.txt --compare ../shared/conformance/galera-26.4.23-pass.txt",
            "wsrep.trans -- --repeat=5",
            "galera.MDEV-30418 --vardir DIR -- --repeat=4",
        ] {
            let cli = parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(cli.mtr_args.is_empty(), !line.contains(" -- "), "{line}");
        }
    }
}
