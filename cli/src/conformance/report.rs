//! From result lines to what the operator and CI need: counts per suite,
//! the failures, the listed tests that did not pass, a diff with a pass list.
//!
//! Counts are per run: a test with combinations runs once per combination,
//! and `--repeat`/`--retry` passed through to mtr report a test more than
//! once. A *test* passed when at least one of its runs passed and none
//! failed (a retry that passes does not hide a failure: flaky is not
//! passing). That is the unit of pass lists such as galera-26.4.23-pass.txt.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::results::{Outcome, TestResult};
use super::spec::{base_suite, TestSpec};

/// One outcome for several runs of a test: any failure fails it, else any
/// pass passes it; else skipped, else disabled.
fn combine<'a>(runs: impl IntoIterator<Item = &'a TestResult>) -> Option<&'a TestResult> {
    let rank = |o: Outcome| match o {
        Outcome::Fail => 0,
        Outcome::Pass => 1,
        Outcome::Skipped => 2,
        Outcome::Disabled => 3,
    };
    runs.into_iter().min_by_key(|r| rank(r.outcome))
}

/// Outcome per test (`suite.test`, suite as run), combinations combined.
pub fn per_test(results: &[TestResult]) -> BTreeMap<String, Outcome> {
    let mut runs: BTreeMap<String, Vec<&TestResult>> = BTreeMap::new();
    for r in results {
        runs.entry(format!("{}.{}", r.suite, r.test))
            .or_default()
            .push(r);
    }
    runs.into_iter()
        .filter_map(|(name, rs)| Some((name, combine(rs)?.outcome)))
        .collect()
}

#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub pass: usize,
    pub fail: usize,
    pub skipped: usize,
    pub disabled: usize,
    pub tests: usize,
    pub tests_passed: usize,
}

impl Counts {
    fn add_run(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail => self.fail += 1,
            Outcome::Skipped => self.skipped += 1,
            Outcome::Disabled => self.disabled += 1,
        }
    }

    fn add(&mut self, other: &Counts) {
        self.pass += other.pass;
        self.fail += other.fail;
        self.skipped += other.skipped;
        self.disabled += other.disabled;
        self.tests += other.tests;
        self.tests_passed += other.tests_passed;
    }
}

pub fn per_suite(results: &[TestResult]) -> BTreeMap<String, Counts> {
    let mut counts: BTreeMap<String, Counts> = BTreeMap::new();
    for r in results {
        counts
            .entry(r.suite.clone())
            .or_default()
            .add_run(r.outcome);
    }
    for (name, outcome) in per_test(results) {
        let suite = name.split_once('.').map_or(name.as_str(), |(s, _)| s);
        let c = counts.entry(suite.to_string()).or_default();
        c.tests += 1;
        c.tests_passed += usize::from(outcome == Outcome::Pass);
    }
    counts
}

/// The table of counts and the list of failed runs.
pub fn render_summary(results: &[TestResult]) -> String {
    let mut out = String::new();
    let row = |out: &mut String, name: &str, c: &Counts| {
        let _ = writeln!(
            out,
            "{name:<18} {:>5} {:>5} {:>8} {:>9}   {} of {}",
            c.pass, c.fail, c.skipped, c.disabled, c.tests_passed, c.tests
        );
    };
    let _ = writeln!(
        out,
        "{:<18} {:>5} {:>5} {:>8} {:>9}   tests passed",
        "suite", "pass", "fail", "skipped", "disabled"
    );
    let mut total = Counts::default();
    for (suite, c) in per_suite(results) {
        row(&mut out, &suite, &c);
        total.add(&c);
    }
    row(&mut out, "total", &total);
    let failed: Vec<&TestResult> = results
        .iter()
        .filter(|r| r.outcome == Outcome::Fail)
        .collect();
    let _ = writeln!(out, "\nfailed runs: {}", failed.len());
    for r in failed {
        let _ = writeln!(out, "  {:<48} {}", r.fullname(), r.detail);
    }
    out += &render_skip_reasons(results);
    out
}

/// Skipped runs grouped by mtr's reason: one line says "all skipped
/// because the provider lacks wsrep_interface_version", or "11 need a
/// debug build".
fn render_skip_reasons(results: &[TestResult]) -> String {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results.iter().filter(|r| r.outcome == Outcome::Skipped) {
        *reasons.entry(r.detail.as_str()).or_default() += 1;
    }
    let mut by_count: Vec<(&str, usize)> = reasons.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = String::new();
    if !by_count.is_empty() {
        let _ = writeln!(out, "\nskipped runs by reason:");
    }
    for (reason, n) in by_count {
        let _ = writeln!(
            out,
            "  {n:>4}  {}",
            if reason.is_empty() {
                "(no reason given)"
            } else {
                reason
            }
        );
    }
    out
}

/// A named test that did not pass, and why.
#[derive(Debug, PartialEq, Eq)]
pub struct NotPassed {
    pub spec: TestSpec,
    pub why: String,
}

/// Which of the named tests did not pass (runs of a test combined).
pub fn not_passed(specs: &[TestSpec], results: &[TestResult]) -> Vec<NotPassed> {
    specs
        .iter()
        .filter_map(|spec| {
            let runs = results
                .iter()
                .filter(|r| spec.covers(&r.suite, &r.test, r.combination.as_deref()));
            let why = match combine(runs) {
                None => "not run (mtr reported no result)".to_string(),
                Some(r) if r.outcome == Outcome::Pass => return None,
                Some(r) if r.detail.is_empty() => {
                    format!("{} ({})", r.outcome.word(), r.fullname())
                }
                Some(r) => format!("{} ({}): {}", r.outcome.word(), r.fullname(), r.detail),
            };
            Some(NotPassed {
                spec: spec.clone(),
                why,
            })
        })
        .collect()
}

pub fn render_not_passed(specs: &[TestSpec], missing: &[NotPassed]) -> String {
    let mut out = format!(
        "\nlisted tests that did not pass: {} of {}\n",
        missing.len(),
        specs.len()
    );
    for m in missing {
        let _ = writeln!(out, "  {:<48} {}", m.spec.to_string(), m.why);
    }
    out
}

/// Tests named by their base suite (`galera_1node.X` is `galera.X`).
fn base_name(suite: &str, test: &str) -> String {
    format!("{}.{}", base_suite(suite), test)
}

/// Diff with a pass list, limited to `in_scope` (the suites or tests of
/// this run): what passed here and is not listed, what is listed and did
/// not pass here (with what happened instead).
pub fn compare(
    list: &[TestSpec],
    results: &[TestResult],
    in_scope: impl Fn(&str) -> bool,
) -> (Vec<String>, Vec<String>) {
    let here: BTreeMap<String, Outcome> = per_test(results)
        .into_iter()
        .map(|(name, o)| {
            let (suite, test) = name.split_once('.').unwrap_or((&name, ""));
            (base_name(suite, test), o)
        })
        .collect();
    let listed: BTreeSet<String> = list
        .iter()
        .map(|s| base_name(&s.suite, &s.test))
        .filter(|n| in_scope(n))
        .collect();
    let extra = here
        .iter()
        .filter(|(n, o)| **o == Outcome::Pass && in_scope(n) && !listed.contains(*n))
        .map(|(n, _)| n.clone())
        .collect();
    let lacking = listed
        .iter()
        .filter(|n| here.get(*n) != Some(&Outcome::Pass))
        .map(|n| format!("{n:<48} {}", here.get(n).map_or("not run", |o| o.word())))
        .collect();
    (extra, lacking)
}

pub fn render_compare(file: &str, extra: &[String], lacking: &[String]) -> String {
    let mut out = format!(
        "\ncompared with {file}:\n  passed here, not in the list: {}\n",
        extra.len()
    );
    for n in extra {
        let _ = writeln!(out, "    {n}");
    }
    let _ = writeln!(out, "  in the list, did not pass here: {}", lacking.len());
    for n in lacking {
        let _ = writeln!(out, "    {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::results::parse_log;

    const WSREP_GALERA: &str = include_str!("fixtures/wsrep-galera.log");

    fn results() -> Vec<TestResult> {
        parse_log(WSREP_GALERA).results
    }

    #[test]
    fn counts_runs_and_tests() {
        let counts = per_suite(&results());
        let wsrep = counts["wsrep"];
        assert_eq!(
            (wsrep.pass, wsrep.fail, wsrep.skipped, wsrep.disabled),
            (22, 2, 11, 0)
        );
        // 28 tests; 19 passed: the 19 wsrep tests of galera-26.4.23-pass.txt.
        assert_eq!((wsrep.tests, wsrep.tests_passed), (28, 19));
    }

    #[test]
    fn summary_lists_failures() {
        let text = render_summary(&results());
        assert!(text.contains("failed runs: 2"), "{text}");
        assert!(
            text.contains("wsrep.wsrep-recover-sequences 'binlogon'"),
            "{text}"
        );
        assert!(text.contains("total"), "{text}");
        assert!(
            text.contains("     8  debug_sync is not available"),
            "{text}"
        );
    }

    #[test]
    fn named_tests_that_did_not_pass() {
        let specs: Vec<TestSpec> = [
            "wsrep.trans",
            "wsrep.wsrep_rpl,row",
            "wsrep.variables",
            "wsrep.wsrep-recover-sequences",
            "wsrep.nope",
        ]
        .iter()
        .map(|s| TestSpec::parse(s).unwrap())
        .collect();
        let missing = not_passed(&specs, &results());
        let names: Vec<String> = missing.iter().map(|m| m.spec.to_string()).collect();
        assert_eq!(
            names,
            [
                "wsrep.variables",
                "wsrep.wsrep-recover-sequences",
                "wsrep.nope"
            ]
        );
        assert!(
            missing[0]
                .why
                .starts_with("skipped (wsrep.variables): needs galera >= 26.4.27"),
            "{}",
            missing[0].why
        );
        assert!(missing[1].why.starts_with("failed"), "{}", missing[1].why);
        assert!(missing[2].why.starts_with("not run"), "{}", missing[2].why);
    }

    #[test]
    fn a_failed_run_fails_the_test_even_if_a_retry_passed() {
        let results = parse_log(
            "wsrep.trans                              w1 [ fail ]  timeout after 240 seconds\n\
             wsrep.trans                              w1 [ retry-pass ]      3\n",
        )
        .results;
        assert_eq!(per_test(&results)["wsrep.trans"], Outcome::Fail);
        let specs = [TestSpec::parse("wsrep.trans").unwrap()];
        assert_eq!(not_passed(&specs, &results).len(), 1);
    }

    #[test]
    fn compare_with_the_galera_pass_list() {
        let list: Vec<TestSpec> = ["wsrep.trans", "wsrep.variables", "galera.GAL-382"]
            .iter()
            .map(|s| TestSpec::parse(s).unwrap())
            .collect();
        let (extra, lacking) = compare(&list, &results(), |n| n.starts_with("wsrep."));
        assert_eq!(extra.len(), 18, "{extra:?}");
        assert_eq!(lacking.len(), 1);
        assert!(
            lacking[0].starts_with("wsrep.variables") && lacking[0].ends_with("skipped"),
            "{lacking:?}"
        );
    }

    #[test]
    fn one_node_runs_compare_as_their_base_suite() {
        let results = parse_log("/tmp/x/suites/galera_1node.GAL-382 w1 [ pass ]  100\n").results;
        let list = [TestSpec::parse("galera.GAL-382").unwrap()];
        let (extra, lacking) = compare(&list, &results, |_| true);
        assert!(
            extra.is_empty() && lacking.is_empty(),
            "{extra:?} {lacking:?}"
        );
    }
}
