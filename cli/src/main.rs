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
}
