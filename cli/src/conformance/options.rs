//! Command line of `lockstep conformance` (hand-rolled: a dozen options).

use std::path::PathBuf;

use super::spec::{self, TestSpec, SUITES};

pub const USAGE: &str =
    "usage: lockstep conformance [options] [suite.test[,combination] ...] [-- mtr-args...]

Runs MariaDB's mtr suites (galera, galera_sr, galera_3nodes, galera_3nodes_sr,
wsrep) against a wsrep provider, the way shared/conformance/README.md ran real
Galera, and summarises the results.

what to run (default: all five suites):
  --suites a,b         these suites; galera_1node / galera_sr_1node run the
                       galera / galera_sr tests on a one-server cluster
  --list FILE          exactly the tests in FILE (one suite.test per line,
                       # comments); exit status 1 unless every one passes
  suite.test ...       these tests (same exit status as --list)

options:
  --provider P         lockstep (liblockstep.so next to this binary), galera
                       (/usr/lib/galera/libgalera_smm.so) or a path [lockstep]
  --big-test           also run tests marked big
  --parallel N         mtr workers [2]
  --vardir DIR         run directory: DIR/conformance.log (mtr's output),
                       DIR/summary.txt, DIR/mtr (mtr's vardir), DIR/suites
                       (one-node suites) [/tmp/lockstep_conformance]
  --port-base P        first port; each worker takes 30 [30000]
  --timeout MIN        per testcase, minutes (mtr --testcase-timeout) [4]
  --suite-timeout MIN  whole run, minutes (mtr --suite-timeout) [360]
  --compare FILE       diff the tests that passed with a pass list, e.g.
                       ../shared/conformance/galera-26.4.23-pass.txt
  --verbose            echo all of mtr's output, not only result lines
  -- ARGS              passed to mariadb-test-run.pl as they are

exit status: 0 done; 1 a listed test did not pass; 2 usage; 3 mtr could not run";

pub const DEFAULT_DIR: &str = "/tmp/lockstep_conformance";

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
    pub mtr_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            provider: "lockstep".into(),
            selection: Selection::Suites(SUITES.iter().map(|s| s.to_string()).collect()),
            big_test: false,
            parallel: 2,
            dir: PathBuf::from(DEFAULT_DIR),
            port_base: 30000,
            testcase_timeout_min: 4,
            suite_timeout_min: 360,
            compare: None,
            verbose: false,
            mtr_args: Vec::new(),
        }
    }
}

/// What was asked for before the selection is settled.
#[derive(Default)]
struct Asked {
    suites: Option<Vec<String>>,
    lists: Vec<PathBuf>,
    tests: Vec<TestSpec>,
}

pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut asked = Asked::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            options.mtr_args = rest.by_ref().cloned().collect();
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| rest.next().cloned())
                .ok_or(format!("{name} needs a value"))
        };
        match name {
            "--provider" => options.provider = value()?,
            "--suites" => asked.suites = Some(parse_suites(&value()?)?),
            "--list" => asked.lists.push(PathBuf::from(value()?)),
            "--big-test" => options.big_test = true,
            "--parallel" => options.parallel = number(name, &value()?, 1, 16)?,
            "--vardir" => options.dir = PathBuf::from(value()?),
            "--port-base" => options.port_base = number(name, &value()?, 10000, 32000)?,
            "--timeout" => options.testcase_timeout_min = number(name, &value()?, 1, 600)?,
            "--suite-timeout" => options.suite_timeout_min = number(name, &value()?, 1, 10000)?,
            "--compare" => options.compare = Some(PathBuf::from(value()?)),
            "--verbose" => options.verbose = true,
            "-h" | "--help" => return Err(String::new()),
            _ if name.starts_with('-') => return Err(format!("unknown option {name}")),
            _ => asked.tests.push(TestSpec::parse(arg)?),
        }
    }
    options.selection = settle(asked)?;
    Ok(options)
}

fn parse_suites(text: &str) -> Result<Vec<String>, String> {
    let suites: Vec<String> = text
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if suites.is_empty() {
        return Err("--suites needs at least one suite".into());
    }
    suites.iter().try_for_each(|s| spec::check_suite(s))?;
    Ok(suites)
}

/// Suites or tests, not both: a test list means "exactly these".
fn settle(asked: Asked) -> Result<Selection, String> {
    let mut tests = Vec::new();
    for list in &asked.lists {
        tests.extend(spec::read_list(list)?);
    }
    tests.extend(asked.tests);
    let named = !asked.lists.is_empty() || !tests.is_empty();
    match (asked.suites, named) {
        (Some(_), true) => {
            Err("--suites runs whole suites; do not combine it with --list or test names".into())
        }
        (Some(suites), false) => Ok(Selection::Suites(suites)),
        // An empty list is valid: must-pass.txt starts empty and CI runs it.
        (None, true) => Ok(Selection::Tests(dedup(tests))),
        (None, false) => Ok(Options::default().selection),
    }
}

fn dedup(tests: Vec<TestSpec>) -> Vec<TestSpec> {
    let mut seen = std::collections::HashSet::new();
    tests
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

fn number(name: &str, text: &str, min: u32, max: u32) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{name}: expected a number from {min} to {max}, got '{text}'"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn defaults_run_all_five_suites_with_lockstep() {
        let o = parse(&[]).unwrap();
        assert_eq!(o, Options::default());
        assert_eq!(o.provider, "lockstep");
        assert!(matches!(o.selection, Selection::Suites(ref s) if s.len() == 5));
    }

    #[test]
    fn options_with_and_without_equals_and_passthrough() {
        let o = parse(&args("--provider=galera --suites wsrep,galera_1node --parallel 1 --port-base=31000 -- --mysqld=--x --verbose")).unwrap();
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
        let o = parse(&args(
            "wsrep.binlog_format galera.MW-258,innodb wsrep.binlog_format",
        ))
        .unwrap();
        let Selection::Tests(tests) = o.selection else {
            panic!()
        };
        assert_eq!(tests.len(), 2);
    }

    #[test]
    fn an_empty_list_selects_nothing() {
        let list = std::env::temp_dir().join(format!("lockstep_empty_list_{}", std::process::id()));
        std::fs::write(&list, "# nothing yet\n").unwrap();
        let o = parse(&["--list".into(), list.display().to_string()]).unwrap();
        assert_eq!(o.selection, Selection::Tests(vec![]));
        std::fs::remove_file(list).unwrap();
    }

    #[test]
    fn mistakes_are_refused() {
        for bad in [
            "--suites main",
            "--parallel 0",
            "--bogus",
            "--suites wsrep wsrep.trans",
            "--timeout",
            "nodot",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
    }
}
