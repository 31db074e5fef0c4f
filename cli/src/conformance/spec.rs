//! Test names (`suite.test`, optionally `,combination`) and list files.
//!
//! A list file holds one test per line. `#` starts a comment at the start of
//! a line or after whitespace only, because test names themselves contain
//! `#` (`galera.galera#505`, `galera.mysql-wsrep#247`).

use std::fmt;
use std::path::Path;

/// The suites of the conformance target (see shared/conformance/README.md).
pub const SUITES: [&str; 5] = [
    "galera",
    "galera_sr",
    "galera_3nodes",
    "galera_3nodes_sr",
    "wsrep",
];

/// Suites whose tests may also run on a one-node cluster, as `<suite>_1node`
/// (see overlay.rs). The 3-node suites are left out: their tests all need
/// three servers.
pub const ONE_NODE_BASES: [&str; 2] = ["galera", "galera_sr"];

const ONE_NODE_SUFFIX: &str = "_1node";

/// One test, or some of its combinations, e.g. `wsrep.wsrep_rpl,row`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TestSpec {
    pub suite: String,
    pub test: String,
    /// Empty: every combination of the test.
    pub combinations: Vec<String>,
}

impl TestSpec {
    pub fn parse(text: &str) -> Result<TestSpec, String> {
        let mut parts = text.split(',');
        let name = parts.next().unwrap_or_default();
        let combinations: Vec<String> = parts.map(str::to_string).collect();
        let (suite, test) = name
            .split_once('.')
            .ok_or_else(|| format!("'{text}': expected suite.test"))?;
        check_suite(suite)?;
        if test.is_empty() || combinations.iter().any(String::is_empty) {
            return Err(format!("'{text}': expected suite.test[,combination]"));
        }
        Ok(TestSpec {
            suite: suite.to_string(),
            test: test.to_string(),
            combinations,
        })
    }

    /// Does a result for `suite.test` with these combinations belong to this spec?
    pub fn covers(&self, suite: &str, test: &str, combination: Option<&str>) -> bool {
        if self.suite != suite || self.test != test {
            return false;
        }
        let ran: Vec<&str> = combination
            .map(|c| c.split(',').collect())
            .unwrap_or_default();
        self.combinations.iter().all(|c| ran.contains(&c.as_str()))
    }
}

impl fmt::Display for TestSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.suite, self.test)?;
        for c in &self.combinations {
            write!(f, ",{c}")?;
        }
        Ok(())
    }
}

/// A suite name we know how to run: one of [`SUITES`] or a one-node variant.
pub fn check_suite(suite: &str) -> Result<(), String> {
    if SUITES.contains(&suite) || one_node_base(suite).is_some() {
        return Ok(());
    }
    Err(format!(
        "unknown suite '{suite}' (known: {}, and {} with suffix {ONE_NODE_SUFFIX})",
        SUITES.join(", "),
        ONE_NODE_BASES.join(", ")
    ))
}

/// `galera_1node` -> `galera`; None for ordinary suites.
pub fn one_node_base(suite: &str) -> Option<&str> {
    let base = suite.strip_suffix(ONE_NODE_SUFFIX)?;
    ONE_NODE_BASES.contains(&base).then_some(base)
}

/// The suite whose tests these are: a one-node run of `galera.X` is still
/// test `galera.X` when compared with a pass list.
pub fn base_suite(suite: &str) -> &str {
    one_node_base(suite).unwrap_or(suite)
}

/// Parse the text of a list file; errors name the line.
pub fn parse_list(text: &str) -> Result<Vec<TestSpec>, String> {
    let mut specs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.splitn(2, char::is_whitespace);
        let name = words.next().unwrap_or_default();
        let rest = words.next().unwrap_or_default().trim_start();
        if !rest.is_empty() && !rest.starts_with('#') {
            return Err(format!(
                "line {}: one test per line, then only a # comment",
                n + 1
            ));
        }
        specs.push(TestSpec::parse(name).map_err(|e| format!("line {}: {e}", n + 1))?);
    }
    Ok(specs)
}

pub fn read_list(path: &Path) -> Result<Vec<TestSpec>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_list(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/conformance.md states the counts the lists in conformance/ hold.
    #[test]
    fn the_conformance_document_counts_the_lists() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let list = |name: &str| read_list(&root.join("conformance").join(name)).unwrap();
        let must_pass: Vec<TestSpec> = [list("must-pass.txt"), list("must-pass-alone.txt")].concat();
        let wsrep = must_pass.iter().filter(|t| t.suite == "wsrep").count();
        let one_node = list("one-node-candidates.txt");
        let rewritten = one_node.iter().filter(|t| one_node_base(&t.suite).is_some()).count();
        let doc = std::fs::read_to_string(root.join("docs/conformance.md")).unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
        for stated in [
            format!("it holds {} tests: the {wsrep} of the `wsrep` suite that pass with Galera, and {} multi-node tests", must_pass.len(), must_pass.len() - wsrep),
            format!("The {rewritten} `galera`/`galera_sr` tests rewritten for a one-server cluster"),
            format!("the {} lines of `conformance/one-node-candidates.txt`", one_node.len()),
            format!("The {} tests marked big", list("big-tests.txt").len()),
        ] {
            assert!(doc.contains(&stated), "docs/conformance.md should say: {stated}");
        }
    }

    #[test]
    fn list_comments_and_hash_in_names() {
        let text = "# header\n\nwsrep.binlog_format\ngalera.galera#505   # node_1 only\n  galera_1node.MW-258\n";
        let specs = parse_list(text).unwrap();
        let names: Vec<String> = specs.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            [
                "wsrep.binlog_format",
                "galera.galera#505",
                "galera_1node.MW-258"
            ]
        );
    }

    #[test]
    fn list_rejects_two_names_on_a_line() {
        let err = parse_list("wsrep.a wsrep.b\n").unwrap_err();
        assert!(err.starts_with("line 1:"), "{err}");
    }

    #[test]
    fn unknown_suites_are_refused() {
        assert!(TestSpec::parse("main.alias").is_err());
        assert!(TestSpec::parse("galera_3nodes_1node.x").is_err());
        assert!(TestSpec::parse("galera_sr_1node.GCF-580").is_ok());
    }

    #[test]
    fn combinations_select_results() {
        let any = TestSpec::parse("wsrep.wsrep_rpl").unwrap();
        let row = TestSpec::parse("wsrep.wsrep_rpl,row").unwrap();
        assert!(any.covers("wsrep", "wsrep_rpl", Some("mix")));
        assert!(any.covers("wsrep", "wsrep_rpl", None));
        assert!(row.covers("wsrep", "wsrep_rpl", Some("row")));
        assert!(!row.covers("wsrep", "wsrep_rpl", Some("mix")));
        assert!(!row.covers("wsrep", "wsrep_rpl", None));
    }

    #[test]
    fn one_node_suites_map_to_their_base() {
        assert_eq!(base_suite("galera_1node"), "galera");
        assert_eq!(base_suite("wsrep"), "wsrep");
        assert_eq!(one_node_base("wsrep_1node"), None);
    }
}
