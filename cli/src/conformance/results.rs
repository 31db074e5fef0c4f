//! Reading mtr's output: one result line per test (and combination), e.g.
//!
//! ```text
//! wsrep.pool_of_threads                    w1 [ pass ]      9
//! wsrep.MDEV-23081 'binlogon'              w2 [ skipped ]  debug_sync is not available
//! wsrep.variables_debug                    [ skipped ]  Requires debug build
//! /tmp/lockstep_conformance/suites/galera_1node.MW-258 w2 [ pass ]  12705
//! galera.galera_sst_rsync                  w1 [ fail ]  timeout after 240 seconds
//! ```
//!
//! mtr prints the name padded to 40 columns, the worker (absent when the
//! test was skipped before reaching a worker), then `[ status ]` and a time
//! in ms or a comment. Suites given to mtr as a path (our one-node suites)
//! are printed with that path, which we strip.

/// The final word on one test run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Pass,
    Fail,
    Skipped,
    Disabled,
}

impl Outcome {
    /// mtr's status word; retries and repeats count as their final status.
    fn from_status(status: &str) -> Option<Outcome> {
        let word = status.rsplit(' ').next()?;
        let word = word.strip_prefix("retry-").unwrap_or(word);
        match word {
            "pass" => Some(Outcome::Pass),
            // exp-fail: listed as experimental, still not a pass.
            "fail" | "exp-fail" => Some(Outcome::Fail),
            "skipped" => Some(Outcome::Skipped),
            "disabled" => Some(Outcome::Disabled),
            _ => None,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "passed",
            Outcome::Fail => "failed",
            Outcome::Skipped => "skipped",
            Outcome::Disabled => "disabled",
        }
    }
}

/// One result line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResult {
    pub suite: String,
    pub test: String,
    /// As mtr prints it: sorted, comma separated (`'innodb,row'`).
    pub combination: Option<String>,
    pub outcome: Outcome,
    /// Time in ms for a pass; otherwise mtr's comment, or for a failure
    /// without one, the first line of mysqltest's report.
    pub detail: String,
}

impl TestResult {
    /// `suite.test 'combination'`, the way mtr names a run.
    pub fn fullname(&self) -> String {
        match &self.combination {
            Some(c) => format!("{}.{} '{}'", self.suite, self.test, c),
            None => format!("{}.{}", self.suite, self.test),
        }
    }
}

/// Parse one line; None unless it is a test's result line.
pub fn parse_result_line(line: &str) -> Option<TestResult> {
    // Result lines start at column 0; everything mtr indents is detail.
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let open = line.find(" [ ")?;
    let close = open + line[open..].find(" ]")?;
    let outcome = Outcome::from_status(line[open + 3..close].trim())?;
    let detail = line[close + 2..].trim().to_string();
    let (name, combination) = split_name(line[..open].trim_end())?;
    let (suite, test) = split_suite(name)?;
    Some(TestResult {
        suite,
        test,
        combination,
        outcome,
        detail,
    })
}

/// `name 'comb' w1` -> (`name`, Some(`comb`)); the worker is dropped.
fn split_name(left: &str) -> Option<(&str, Option<String>)> {
    let left = match left.rsplit_once(' ') {
        Some((rest, w)) if is_worker(w) => rest.trim_end(),
        _ => left,
    };
    if let Some(body) = left.strip_suffix('\'') {
        let (name, comb) = body.split_once(" '")?;
        return Some((name.trim_end(), Some(comb.to_string())));
    }
    if left.contains(char::is_whitespace) {
        return None;
    }
    Some((left, None))
}

fn is_worker(word: &str) -> bool {
    word.len() > 1 && word.starts_with('w') && word[1..].bytes().all(|b| b.is_ascii_digit())
}

/// `/some/dir/galera_1node.MW-258` -> (`galera_1node`, `MW-258`).
fn split_suite(name: &str) -> Option<(String, String)> {
    let name = name.rsplit('/').next()?;
    let (suite, test) = name.split_once('.')?;
    let suite_ok = !suite.is_empty()
        && suite
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !suite_ok || test.is_empty() {
        return None;
    }
    Some((suite.to_string(), test.to_string()))
}

/// Everything the runner keeps from mtr's output.
#[derive(Debug, Default)]
pub struct Parsed {
    pub results: Vec<TestResult>,
    /// mtr's own fatal errors (`*** ERROR: ...`), not test failures.
    pub mtr_errors: Vec<String>,
}

/// Fed mtr's output line by line, as it is produced.
#[derive(Default)]
pub struct Parser {
    parsed: Parsed,
    /// A failure whose reason is still to be found in the lines after it.
    wants_reason: Option<usize>,
}

impl Parser {
    /// Returns the result if this line was a result line.
    pub fn feed(&mut self, line: &str) -> Option<&TestResult> {
        if let Some(result) = parse_result_line(line) {
            let needs_reason = result.outcome == Outcome::Fail && result.detail.is_empty();
            self.parsed.results.push(result);
            let index = self.parsed.results.len() - 1;
            self.wants_reason = needs_reason.then_some(index);
            return self.parsed.results.last();
        }
        self.note_mtr_error(line);
        self.note_reason(line);
        None
    }

    pub fn finish(self) -> Parsed {
        self.parsed
    }

    fn note_mtr_error(&mut self, line: &str) {
        // "there were failing test cases" is how mtr ends any run with a failure.
        let fatal = (line.contains("*** ERROR:")
            && !line.contains("there were failing test cases"))
            || line.starts_with("Test suite timeout");
        if fatal {
            self.parsed.mtr_errors.push(line.trim().to_string());
        }
    }

    /// mysqltest reports why a test failed a few lines below `[ fail ]`:
    /// `mysqltest: At line 17: ...`, or after `mysqltest: In included
    /// file ...` a line `At line N: ...`; or mtr shows the diff between
    /// .result and .reject, whose first added line is usually the story
    /// (`+Timeout in wait_condition.inc for ...`).
    fn note_reason(&mut self, line: &str) {
        let Some(index) = self.wants_reason else {
            return;
        };
        let reason = if line.starts_with('+') && !line.starts_with("+++") {
            format!("result differs: {}", &line[1..])
        } else {
            let line = line.trim();
            let is_reason = (line.starts_with("mysqltest: ")
                && !line.starts_with("mysqltest: In included file"))
                || line.starts_with("At line ")
                || line.starts_with("Failed to start")
                || line.starts_with("WSREP did not transition");
            if !is_reason {
                return;
            }
            line.to_string()
        };
        self.parsed.results[index].detail = shorten(&reason, 200);
        self.wants_reason = None;
    }
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// Parse a whole log at once (used on saved logs and in tests).
pub fn parse_log(text: &str) -> Parsed {
    let mut parser = Parser::default();
    for line in text.lines() {
        parser.feed(line);
    }
    parser.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real output of the wsrep suite with Galera 26.4.23 (see galera-baseline.md).
    const WSREP_GALERA: &str = include_str!("fixtures/wsrep-galera.log");
    /// Real output of one-node runs (suite given to mtr as a path).
    const ONE_NODE_GALERA: &str = include_str!("fixtures/one-node-galera.log");
    /// Real output for disabled tests named on the command line.
    const DISABLED_GALERA: &str = include_str!("fixtures/disabled-galera.log");

    fn line(text: &str) -> TestResult {
        parse_result_line(text).unwrap_or_else(|| panic!("not a result line: {text}"))
    }

    #[test]
    fn pass_with_worker_and_time() {
        let r = line("wsrep.pool_of_threads                    w1 [ pass ]      9");
        assert_eq!(
            (r.suite.as_str(), r.test.as_str()),
            ("wsrep", "pool_of_threads")
        );
        assert_eq!(
            (r.outcome, r.detail.as_str(), r.combination),
            (Outcome::Pass, "9", None)
        );
    }

    #[test]
    fn skipped_before_reaching_a_worker() {
        let r = line("wsrep.variables_debug                    [ skipped ]  Requires debug build");
        assert_eq!(r.outcome, Outcome::Skipped);
        assert_eq!(r.detail, "Requires debug build");
    }

    #[test]
    fn combination_is_kept() {
        let r = line(
            "wsrep.MDEV-23081 'binlogon'              w2 [ skipped ]  debug_sync is not available",
        );
        assert_eq!(r.combination.as_deref(), Some("binlogon"));
        assert_eq!(r.fullname(), "wsrep.MDEV-23081 'binlogon'");
        // A long name leaves a single space before the worker.
        let r = line("wsrep.wsrep-recover-sequences 'binlogoff' w2 [ fail ]");
        assert_eq!(
            (r.test.as_str(), r.combination.as_deref()),
            ("wsrep-recover-sequences", Some("binlogoff"))
        );
        assert_eq!(r.outcome, Outcome::Fail);
    }

    #[test]
    fn path_suites_are_named_by_their_directory() {
        let r = line("/tmp/lockstep_conformance/suites/galera_1node.MW-258 w2 [ pass ]  12705");
        assert_eq!(
            (r.suite.as_str(), r.test.as_str()),
            ("galera_1node", "MW-258")
        );
    }

    #[test]
    fn statuses_of_retries_timeouts_and_disabled() {
        let timeout =
            line("galera.galera_sst_rsync                  w1 [ fail ]  timeout after 240 seconds");
        assert_eq!(
            (timeout.outcome, timeout.detail.as_str()),
            (Outcome::Fail, "timeout after 240 seconds")
        );
        // Retries are not seen with --retry=0; format from lib/mtr_report.pm.
        assert_eq!(
            line("galera.GAL-419                           w2 [ retry-pass ]   4513").outcome,
            Outcome::Pass
        );
        assert_eq!(
            line("galera.GAL-419                           w2 [ retry-fail ]").outcome,
            Outcome::Fail
        );
    }

    #[test]
    fn disabled_tests_carry_the_reason() {
        let parsed = parse_log(DISABLED_GALERA);
        let disabled: Vec<(String, &str)> = parsed
            .results
            .iter()
            .filter(|r| r.outcome == Outcome::Disabled)
            .map(|r| (r.fullname(), r.detail.as_str()))
            .collect();
        assert_eq!(
            disabled,
            [
                ("galera.MDEV-26266".to_string(), "cannot work reliably"),
                (
                    "galera.galera_wan".to_string(),
                    "MDEV-35940 Unallowed state transition: donor -> synced in galera_wan"
                ),
            ]
        );
    }

    #[test]
    fn other_lines_are_not_results() {
        for text in [
            "worker[01] Using MTR_BUILD_THREAD 667, with reserved ports 30010..30039",
            "TEST                                  WORKER RESULT   TIME (ms) or COMMENT",
            "        Test ended at 2026-11-22 05:46:57",
            "Completed: Failed 2/24 tests, 91.67% were successful.",
            "wsrep.t1 [ xyz ]",
            "not a test [ pass ]  1",
        ] {
            assert_eq!(parse_result_line(text), None, "{text}");
        }
    }

    #[test]
    fn failure_reason_comes_from_mysqltest_report() {
        let parsed = parse_log(WSREP_GALERA);
        let failed: Vec<&TestResult> = parsed
            .results
            .iter()
            .filter(|r| r.outcome == Outcome::Fail)
            .collect();
        assert_eq!(failed.len(), 2);
        assert!(
            failed[0]
                .detail
                .starts_with("At line 17: exec of '/usr/sbin/mariadbd"),
            "{}",
            failed[0].detail
        );
    }

    #[test]
    fn whole_wsrep_log() {
        let parsed = parse_log(WSREP_GALERA);
        let count = |o| parsed.results.iter().filter(|r| r.outcome == o).count();
        assert_eq!(parsed.results.len(), 35);
        assert_eq!(
            (
                count(Outcome::Pass),
                count(Outcome::Fail),
                count(Outcome::Skipped)
            ),
            (22, 2, 11)
        );
        assert!(parsed.mtr_errors.is_empty(), "{:?}", parsed.mtr_errors);
    }

    #[test]
    fn whole_one_node_log() {
        let parsed = parse_log(ONE_NODE_GALERA);
        assert_eq!(parsed.results.len(), 76);
        assert!(parsed.results.iter().all(|r| r.suite.ends_with("_1node")));
        let failed: Vec<(String, &str)> = parsed
            .results
            .iter()
            .filter(|r| r.outcome == Outcome::Fail)
            .map(|r| (r.fullname(), r.detail.as_str()))
            .collect();
        assert_eq!(failed.len(), 2);
        assert_eq!(failed[0].0, "galera_1node.galera#505");
        assert!(
            failed[0]
                .1
                .starts_with("mysqltest: At line 9: Could not open"),
            "{}",
            failed[0].1
        );
        assert_eq!(
            failed[1].0,
            "galera_1node.galera_sst_mariabackup_encrypt_with_key-openssl"
        );
        assert!(
            failed[1]
                .1
                .starts_with("result differs: Timeout in wait_condition.inc"),
            "{}",
            failed[1].1
        );
    }

    #[test]
    fn mtr_errors_are_collected() {
        let parsed = parse_log(
            "mysql-test-run: *** ERROR: Could not find 'nope' in 'wsrep' suite\n\
             mysql-test-run: *** ERROR: there were failing test cases\n",
        );
        assert_eq!(
            parsed.mtr_errors,
            ["mysql-test-run: *** ERROR: Could not find 'nope' in 'wsrep' suite"]
        );
    }
}
