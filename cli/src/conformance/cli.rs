//! `lockstep conformance`: plan the mtr run, run it, report.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::mtr::{self, mtr_dir, Ending, Invocation, GALERA_PROVIDER};
use super::options::{Cli, Options, Selection};
use super::overlay;
use super::report;
use super::results::{Parser, TestResult};
use super::spec::{self, base_suite, TestSpec};

const EXIT_NOT_PASSED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_MTR: u8 = 3;

pub fn run_cli(cli: Cli) -> ExitCode {
    let options = match Options::try_from(cli) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("lockstep conformance: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(&options) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("lockstep conformance: {e}");
            ExitCode::from(EXIT_MTR)
        }
    }
}

/// What mtr is asked to run, and what the report checks afterwards.
struct Plan {
    invocation: Invocation,
    /// Named tests that must each pass (None for whole suites).
    expected: Option<Vec<TestSpec>>,
    /// `base_suite.test` names (or suite prefixes) the run covers, for --compare.
    scope: Scope,
}

enum Scope {
    Suites(BTreeSet<String>),
    Tests(BTreeSet<String>),
}

impl Scope {
    fn contains(&self, name: &str) -> bool {
        match self {
            Scope::Suites(suites) => name
                .split_once('.')
                .is_some_and(|(s, _)| suites.contains(s)),
            Scope::Tests(tests) => tests.contains(name),
        }
    }
}

fn run(o: &Options) -> Result<u8, String> {
    if o.selection == Selection::Tests(vec![]) {
        println!("the list names no test: nothing to run");
        return Ok(0);
    }
    let provider = resolve_provider(&o.provider)?;
    check_run_dir(&o.dir)?;
    fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let plan = plan(o, provider)?;
    let log = o.dir.join("conformance.log");
    println!("provider: {}", plan.invocation.provider.display());
    println!("mtr:      {}", plan.invocation.shell_line()?);
    println!("log:      {}", log.display());

    // One-node suites are named by their path in mtr's output: show the name.
    let suites_prefix = format!("{}/", o.dir.join("suites").display());
    let started = Instant::now();
    let mut parser = Parser::default();
    let ending = mtr::run(&plan.invocation, &log, |line| {
        let is_result = parser.feed(line).is_some();
        if o.verbose || is_result || is_notable(line) {
            println!("{}", line.replace(&suites_prefix, ""));
        }
    })
    .map_err(|e| format!("could not run mtr: {e}"))?;
    let wall = started.elapsed();
    let parsed = parser.finish();
    let results = parsed.results;

    let (text, code) = conclude(o, &plan, &ending, &parsed.mtr_errors, &results, wall)?;
    print!("{text}");
    let summary = o.dir.join("summary.txt");
    fs::write(&summary, &text).map_err(|e| format!("{}: {e}", summary.display()))?;
    Ok(code)
}

/// Lines worth showing even without --verbose: ports, version, mtr's verdict.
fn is_notable(line: &str) -> bool {
    line.contains("*** ERROR")
        || line.contains("Using MTR_BUILD_THREAD")
        || line.starts_with("MariaDB Version")
        || line.starts_with("Completed:")
        || line.starts_with("Test suite timeout")
}

/// The summary text and the exit status.
fn conclude(
    o: &Options,
    plan: &Plan,
    ending: &Ending,
    mtr_errors: &[String],
    results: &[TestResult],
    wall: Duration,
) -> Result<(String, u8), String> {
    let mut text = format!(
        "\n== lockstep conformance: {} results, wall time {} ==\n",
        results.len(),
        clock(wall)
    );
    text += &format!("provider {}\n", plan.invocation.provider.display());
    text += &report::render_summary(results);
    let mut code = 0;
    if let Some(specs) = &plan.expected {
        let missing = report::not_passed(specs, results);
        text += &report::render_not_passed(specs, &missing);
        if !missing.is_empty() {
            code = EXIT_NOT_PASSED;
        }
    }
    if let Some(file) = &o.compare {
        let list = spec::read_list(file)?;
        let (extra, lacking) = report::compare(&list, results, |n| plan.scope.contains(n));
        text += &report::render_compare(&file.display().to_string(), &extra, &lacking);
    }
    if let Some(problem) = mtr_problem(ending, mtr_errors, results) {
        text += &format!("\nmtr did not complete: {problem}\n");
        code = EXIT_MTR;
    }
    Ok((text, code))
}

/// Why the run cannot be trusted as a whole, if it cannot.
fn mtr_problem(ending: &Ending, mtr_errors: &[String], results: &[TestResult]) -> Option<String> {
    match ending {
        Ending::TimedOut => {
            Some("stopped at the deadline (--suite-timeout plus 10 minutes)".into())
        }
        _ if !mtr_errors.is_empty() => Some(mtr_errors.join("; ")),
        Ending::Exited(status) if results.is_empty() && !status.success() => Some(format!(
            "mtr exited with {status} before reporting any test"
        )),
        Ending::Exited(_) if results.is_empty() => Some("mtr reported no test".into()),
        Ending::Exited(_) => None,
    }
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}m{:02}s ({:.1} s)", s / 60, s % 60, d.as_secs_f64())
}

fn plan(o: &Options, provider: PathBuf) -> Result<Plan, String> {
    let suites_root = o.dir.join("suites");
    let suites_of: Vec<String> = match &o.selection {
        Selection::Suites(s) => s.clone(),
        Selection::Tests(tests) => unique(tests.iter().map(|t| t.suite.clone())),
    };
    // The name mtr knows each suite by: its name, or our one-node suite's path.
    let mut mtr_name = std::collections::HashMap::new();
    for suite in &suites_of {
        mtr_name.insert(suite.clone(), suite_for_mtr(suite, &suites_root)?);
    }
    let (tests, expected, scope) = match &o.selection {
        Selection::Suites(s) => (
            vec![],
            None,
            Scope::Suites(s.iter().map(|x| base_suite(x).to_string()).collect()),
        ),
        Selection::Tests(specs) => {
            let tests = specs
                .iter()
                .map(|t| test_for_mtr(t, &mtr_name[&t.suite]))
                .collect();
            let scope = Scope::Tests(
                specs
                    .iter()
                    .map(|t| format!("{}.{}", base_suite(&t.suite), t.test))
                    .collect(),
            );
            (tests, Some(specs.clone()), scope)
        }
    };
    let invocation = Invocation {
        provider,
        suites: suites_of.iter().map(|s| mtr_name[s].clone()).collect(),
        tests,
        vardir: o.dir.join("mtr"),
        parallel: o.parallel,
        port_base: o.port_base,
        testcase_timeout_min: o.testcase_timeout_min,
        suite_timeout_min: o.suite_timeout_min,
        big_test: o.big_test,
        stock_sst: o.stock_sst,
        extra: o.mtr_args.clone(),
    };
    invocation.ports()?;
    Ok(Plan {
        invocation,
        expected,
        scope,
    })
}

fn unique(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    items.filter(|i| seen.insert(i.clone())).collect()
}

fn suite_for_mtr(suite: &str, suites_root: &Path) -> Result<String, String> {
    let Some(base) = spec::one_node_base(suite) else {
        return Ok(suite.to_string());
    };
    overlay::check_usable(suites_root)?;
    let dir = overlay::build(suites_root, suite, base, Path::new(mtr_dir()))
        .map_err(|e| format!("building {suite} under {}: {e}", suites_root.display()))?;
    Ok(dir.to_string_lossy().into_owned())
}

/// `suite.test[,comb]` with the suite as mtr knows it.
fn test_for_mtr(t: &TestSpec, suite: &str) -> String {
    let mut name = format!("{suite}.{}", t.test);
    for c in &t.combinations {
        name.push(',');
        name.push_str(c);
    }
    name
}

fn resolve_provider(choice: &str) -> Result<PathBuf, String> {
    let path = match choice {
        "galera" => PathBuf::from(GALERA_PROVIDER),
        "lockstep" => lockstep_library()?,
        other => PathBuf::from(other),
    };
    // Absolute but not canonical: keep the name the operator knows
    // (/usr/lib/galera/libgalera_smm.so is a symlink).
    let path =
        std::path::absolute(&path).map_err(|e| format!("provider {}: {e}", path.display()))?;
    if !path.is_file() {
        return Err(format!("provider {}: no such file", path.display()));
    }
    Ok(path)
}

/// liblockstep.so from the same cargo profile directory as this binary.
fn lockstep_library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this binary: {e}"))?;
    let lib = exe.with_file_name("liblockstep.so");
    if !lib.is_file() {
        return Err(format!(
            "{} not found: build it next to this binary (cargo build [--release] -p lockstep-provider) \
             or pass --provider PATH",
            lib.display()
        ));
    }
    Ok(lib)
}

/// mtr must not write into its own tree, and runs must not litter a checkout.
fn check_run_dir(dir: &Path) -> Result<(), String> {
    let absolute = nearest_existing(dir)?;
    if absolute.starts_with(mtr_dir()) {
        return Err(format!(
            "--vardir {}: must be outside {}",
            dir.display(),
            mtr_dir()
        ));
    }
    if let Some(repo) = absolute.ancestors().find(|a| a.join(".git").exists()) {
        return Err(format!(
            "--vardir {}: inside the git checkout {}; use a directory under /tmp",
            dir.display(),
            repo.display()
        ));
    }
    Ok(())
}

/// The canonical form of `dir`, or of its closest existing ancestor.
fn nearest_existing(dir: &Path) -> Result<PathBuf, String> {
    let absolute = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let existing = absolute
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    existing
        .canonicalize()
        .map_err(|e| format!("{}: {e}", existing.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn options(args: &[&str]) -> Options {
        let cli = Cli::try_parse_from(std::iter::once(&"lockstep conformance").chain(args));
        Options::try_from(cli.unwrap()).unwrap()
    }

    #[test]
    fn run_dir_must_be_outside_checkouts_and_mtr() {
        assert!(check_run_dir(Path::new("/tmp/lockstep_conformance_unit/x")).is_ok());
        assert!(check_run_dir(Path::new("/usr/share/mysql/mysql-test/var")).is_err());
        let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("target_conformance");
        if Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .any(|a| a.join(".git").exists())
        {
            assert!(check_run_dir(&here).is_err());
        }
    }

    #[test]
    fn plans_named_tests_with_their_suites() {
        let o = options(&[
            "--vardir=/tmp/lockstep_conformance_unit",
            "wsrep.trans",
            "wsrep.wsrep_rpl,row",
        ]);
        let p = plan(&o, PathBuf::from(GALERA_PROVIDER)).unwrap();
        assert_eq!(p.invocation.suites, ["wsrep"]);
        assert_eq!(p.invocation.tests, ["wsrep.trans", "wsrep.wsrep_rpl,row"]);
        assert_eq!(
            p.invocation.vardir,
            Path::new("/tmp/lockstep_conformance_unit/mtr")
        );
        assert!(p.scope.contains("wsrep.trans") && !p.scope.contains("wsrep.plugin"));
    }

    #[test]
    fn whole_suite_scope_uses_base_suites() {
        let o = options(&["--suites=wsrep,galera_sr"]);
        let p = plan(&o, PathBuf::from(GALERA_PROVIDER)).unwrap();
        assert!(p.expected.is_none());
        assert!(p.scope.contains("galera_sr.GCF-580") && !p.scope.contains("galera.GAL-382"));
    }
}
