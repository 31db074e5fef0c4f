//! `lockstep`: the operator's command. Every subcommand's arguments are a
//! clap `Cli` in its module; this file only names them.

use clap::{Parser, Subcommand};
use lockstep_cli::{bench, check, cluster, conformance, migrate, options, recover, top};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "lockstep", version, about = "lockstep: synchronous multi-primary replication for MariaDB, a wsrep provider on Raft")]
struct Lockstep {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// sysbench on fresh clusters: Galera vs lockstep, side by side
    Bench(bench::cli::Cli),
    /// What a cluster promises, checked under faults: acknowledged commits across crashes
    Check(check::cli::Cli),
    /// A local cluster of mariadbd processes: up, status, sql, down
    Cluster(cluster::cli::Cli),
    /// MariaDB's mtr galera/wsrep suites against a provider
    Conformance(conformance::Cli),
    /// From a running Galera cluster to lockstep while the application writes
    Migrate(migrate::cli::Cli),
    /// The provider options, and which ones lockstep acts on
    Options(options::Cli),
    /// InnoDB's crash recovery before a node starts (the package's step before galera_recovery)
    Recover(recover::Cli),
    /// The nodes live: state, queues, flow control, commit rate, lag, leader
    Top(top::Cli),
}

fn main() -> ExitCode {
    match Lockstep::parse().command {
        Command::Bench(cli) => bench::cli::run_cli(cli),
        Command::Check(cli) => check::cli::run_cli(cli),
        Command::Cluster(cli) => cluster::cli::run_cli(cli),
        Command::Conformance(cli) => conformance::run_cli(cli),
        Command::Migrate(cli) => migrate::cli::run_cli(cli),
        Command::Options(cli) => options::run_cli(cli),
        Command::Recover(cli) => recover::run_cli(cli),
        Command::Top(cli) => top::run_cli(cli),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(line: &str) -> Result<Command, clap::Error> {
        Lockstep::try_parse_from(line.split_whitespace()).map(|l| l.command)
    }

    #[test]
    fn the_command_tree_is_consistent() {
        Lockstep::command().debug_assert();
    }

    /// The settings of each subcommand's own `Cli` (a repeated option
    /// takes its last value, arguments after `--` go to mtr, `--dir` after
    /// a nested command) hold when it is parsed as a subcommand here.
    #[test]
    fn subcommands_keep_their_own_rules() {
        assert!(matches!(parse("lockstep bench --nodes 2 --nodes 3"), Ok(Command::Bench(_))));
        assert!(matches!(parse("lockstep conformance galera.t --vardir /v -- --repeat=4"), Ok(Command::Conformance(_))));
        assert!(matches!(parse("lockstep cluster sql 2 SELECT --dir /x"), Ok(Command::Cluster(_))));
        assert!(matches!(parse("lockstep top --once"), Ok(Command::Top(_))));
        assert!(matches!(parse("lockstep options --effective"), Ok(Command::Options(_))));
        assert!(parse("lockstep start").is_err());
        assert!(parse("lockstep bench --nodes three").is_err());
    }

    /// Every `lockstep` command line in the README and docs/ (in `sh`
    /// blocks, with the shell's quoting) parses: a renamed option or
    /// subcommand must take the documentation with it.
    #[test]
    fn the_documented_command_lines_parse() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
        let docs = std::fs::read_dir(root.join("docs")).expect("docs/");
        files.extend(docs.map(|e| e.expect("docs/ entry").path()).filter(|p| p.extension().is_some_and(|x| x == "md")));
        let mut checked = 0;
        for file in files.iter().filter(|f| f.exists()) {
            let text = std::fs::read_to_string(file).expect("readable");
            for line in documented_commands(&text) {
                let words = shlex::split(&line).unwrap_or_else(|| panic!("{}: unbalanced quotes: {line}", file.display()));
                Lockstep::try_parse_from(&words).unwrap_or_else(|e| panic!("{}: {line}\n{e}", file.display()));
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} documented command lines found");
    }

    /// The `lockstep ...` lines of a Markdown text's `sh` blocks, joined
    /// across `\` continuations, without comments, pipes and `$(...)`
    /// (each substitution one word), starting with the word `lockstep`.
    fn documented_commands(markdown: &str) -> Vec<String> {
        let mut lines = Vec::new();
        let mut in_sh = false;
        let mut pending = String::new();
        for raw in markdown.lines() {
            if raw.trim_start().starts_with("```") {
                in_sh = raw.trim() == "```sh";
                continue;
            }
            if !in_sh {
                continue;
            }
            pending.push_str(raw.trim_end().trim_end_matches('\\'));
            pending.push(' ');
            if raw.trim_end().ends_with('\\') {
                continue;
            }
            let line = std::mem::take(&mut pending);
            let line = line.split(" # ").next().unwrap_or("").split(" | ").next().unwrap_or("");
            let line = substitutions_as_words(line.trim().trim_start_matches("time "));
            for prefix in ["target/release/lockstep ", "$lockstep ", "lockstep "] {
                if let Some(rest) = line.strip_prefix(prefix) {
                    lines.push(format!("lockstep {rest}"));
                }
            }
        }
        lines
    }

    fn substitutions_as_words(line: &str) -> String {
        let mut out = String::new();
        let mut rest = line;
        while let Some(start) = rest.find("$(") {
            out.push_str(&rest[..start]);
            let end = rest[start..].find(')').map_or(rest.len(), |e| start + e + 1);
            out.push_str("SUBSTITUTED");
            rest = &rest[end..];
        }
        out + rest
    }
}
