//! `lockstep check crash`: arguments in, rounds and a summary table out.

use super::crash::{self, Kill, Round, RoundSpec, Start};
use crate::cluster::{ClusterSpec, Provider};
use crate::workload::inserts::InsertConfig;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(name = "lockstep check", about = "Check what a cluster promises under faults, on either provider", subcommand_required = true, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Acknowledged commits across SIGKILLs: writers insert on every node, nodes are killed under them and started again, every acknowledged insert is looked up on every node
    #[command(after_help = CRASH_AFTER_HELP)]
    Crash(CrashArgs),
}

const CRASH_AFTER_HELP: &str = "\
Lists are comma-separated. Each provider and flush setting gets a fresh
cluster, which runs every kill and start setting in turn, --rounds rounds
each. A round: --writers writers per node insert for --time seconds; the
nodes --kill names get SIGKILL 0.2 s apart while they write; the writers
go on for 1 s, then stop; the killed nodes start again (--start: systemd
runs galera_recovery first, as Debian's mariadb.service does; plain starts
mariadbd alone), and once every node is Synced every acknowledged insert
is looked up on every node with wsrep_sync_wait=1, and the nodes' rows
and CHECKSUM TABLE compared. A cluster that does not recover ends its
settings' rounds. Exit status: 0 when every round lost nothing, diverged
nowhere and recovered; 1 otherwise; 2 for bad arguments.";

#[derive(Args, Debug)]
struct CrashArgs {
    /// galera, lockstep or library paths
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "lockstep", value_parser = provider)]
    providers: Vec<Provider>,
    /// innodb_flush_log_at_trx_commit values
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "0")]
    flush: Vec<u8>,
    /// Which nodes a round kills: all, one, majority
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "all", value_parser = Kill::parse)]
    kill: Vec<Kill>,
    /// How killed nodes start again: systemd, plain
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "systemd,plain", value_parser = Start::parse)]
    start: Vec<Start>,
    /// Rounds per setting
    #[arg(long, value_name = "N", default_value_t = 3)]
    rounds: u32,
    /// Seconds the writers write before the first kill
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    time: u64,
    /// Writers per node
    #[arg(long, value_name = "N", default_value_t = 2)]
    writers: usize,
    /// Cluster size
    #[arg(long, value_name = "N", default_value_t = 3)]
    nodes: usize,
    /// Seconds the killed nodes have to be Synced again
    #[arg(long, value_name = "SECS", default_value_t = 180)]
    recovery_timeout: u64,
    /// The clusters' directories
    #[arg(long, value_name = "DIR", default_value = "/tmp/lockstep-check")]
    dir: PathBuf,
    /// Node N uses P+10(N-1) and up (see lockstep cluster up)
    #[arg(long, value_name = "P", default_value_t = 26000)]
    base_port: u16,
    /// Extra [mysqld] option for every node (repeatable)
    #[arg(long = "mysqld-option", value_name = "K=V")]
    mysqld_options: Vec<String>,
    /// Extra wsrep_provider_options entry for every node (repeatable)
    #[arg(long = "provider-option", value_name = "K=V")]
    provider_options: Vec<String>,
    /// Stop at the first round that lost or diverged, leaving the
    /// cluster's data as that round found it
    #[arg(long)]
    stop_on_failure: bool,
    /// Also write the summary table to FILE
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

fn provider(text: &str) -> Result<Provider, String> {
    Ok(Provider::parse(text))
}

pub fn run_cli(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Crash(args) => run_crash(&args),
    }
}

/// One setting's rounds, for the summary.
struct Series {
    provider: String,
    flush: u8,
    kill: Kill,
    start: Start,
    rounds: Vec<Round>,
    /// Why the setting could not run at all.
    failed: Option<String>,
}

fn run_crash(args: &CrashArgs) -> ExitCode {
    let writers = InsertConfig { writers_per_node: args.writers, ..InsertConfig::default() };
    let mut all = Vec::new();
    for provider in &args.providers {
        for &flush in &args.flush {
            all.extend(provider_series(args, provider, flush, &writers));
        }
    }
    let table = summary(&all);
    println!("\n{table}");
    if let Some(path) = &args.output {
        if let Err(e) = std::fs::write(path, &table) {
            eprintln!("cannot write {}: {e}", path.display());
        }
    }
    let clean = all.iter().all(|s| s.failed.is_none() && s.rounds.iter().all(Round::clean));
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Every kill and start setting on one fresh cluster of `provider`.
fn provider_series(args: &CrashArgs, provider: &Provider, flush: u8, writers: &InsertConfig) -> Vec<Series> {
    let label = provider.label();
    let mut spec = ClusterSpec::new(args.nodes, provider.clone(), args.dir.join(format!("{}-flush{flush}", label.replace('/', "_")))).base_port(args.base_port);
    for o in &args.mysqld_options {
        spec = spec.mysqld_option(o.clone());
    }
    for o in &args.provider_options {
        spec = spec.provider_option(o.clone());
    }
    let settings: Vec<(Kill, Start)> = args.kill.iter().flat_map(|k| args.start.iter().map(move |s| (*k, *s))).collect();
    let series_of = |kill, start, rounds, failed| Series { provider: label.clone(), flush, kill, start, rounds, failed };
    eprintln!("{label}, innodb_flush_log_at_trx_commit={flush}: starting {} nodes in {}", args.nodes, spec.dir.display());
    let cluster = match crash::cluster(spec, flush) {
        Ok(c) => c,
        Err(e) => return settings.into_iter().map(|(k, s)| series_of(k, s, Vec::new(), Some(e.to_string()))).collect(),
    };
    let mut first = 0;
    let mut out = Vec::new();
    for (kill, start) in settings {
        let spec = RoundSpec {
            kill,
            start,
            load: Duration::from_secs(args.time),
            kill_gap: Duration::from_millis(200),
            after_kill: Duration::from_secs(1),
            recovery_timeout: Duration::from_secs(args.recovery_timeout),
        };
        let rounds = crash::series(&cluster, &spec, writers, (first, args.rounds), args.stop_on_failure, &mut |r| report_round(&label, flush, &spec, r));
        first += args.rounds;
        let broken = rounds.last().is_some_and(|r| r.recovery.is_none() || (args.stop_on_failure && !r.clean()));
        out.push(series_of(kill, start, rounds, None));
        if broken {
            break; // the cluster is unusable: the other settings of this provider do not run
        }
    }
    out
}

fn report_round(provider: &str, flush: u8, spec: &RoundSpec, r: &Round) {
    let lost: Vec<String> = r.lost.iter().map(|(_, n)| n.to_string()).collect();
    let back = r.recovery.map_or("not back".to_string(), |d| format!("back in {:.1}s", d.as_secs_f64()));
    eprintln!(
        "{provider} flush={flush} kill={} ({}) start={} round {}: {} acknowledged ({} in doubt, {} refused), lost per node {}, {back}{}{}",
        spec.kill.label(),
        r.victims.iter().map(|n| format!("node{n}")).collect::<Vec<_>>().join(","),
        spec.start.label(),
        r.round,
        r.acked.ids.len(),
        r.acked.in_doubt,
        r.acked.refused,
        if lost.is_empty() { "-".into() } else { lost.join("/") },
        r.error.as_ref().map_or(String::new(), |e| format!("; {e}")),
        diverged_text(r),
    );
}

/// What diverged besides the lost inserts (counted already).
fn diverged_text(r: &Round) -> String {
    let other: Vec<_> = r.divergences.iter().filter(|d| d.kind() != "lost").cloned().collect();
    match other.is_empty() {
        true => String::new(),
        false => format!("; {}", crate::workload::Error::Diverged(other)),
    }
}

/// The summary: one row per setting.
fn summary(all: &[Series]) -> String {
    let mut out = String::from(
        "| provider | flush | kill | start | rounds | acknowledged per round | lost per node (all rounds) | rounds losing | rounds diverged | back in (median, max) |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in all {
        if let Some(why) = &s.failed {
            out.push_str(&format!("| {} | {} | {} | {} | 0 | n/a: {} | | | | |\n", s.provider, s.flush, s.kill.label(), s.start.label(), why.lines().next().unwrap_or("")));
            continue;
        }
        out.push_str(&summary_row(s));
    }
    out
}

fn summary_row(s: &Series) -> String {
    let n = s.rounds.len().max(1);
    let acked: usize = s.rounds.iter().map(|r| r.acked.ids.len()).sum();
    let mut lost: Vec<usize> = Vec::new();
    for r in &s.rounds {
        for (i, (_, count)) in r.lost.iter().enumerate() {
            if lost.len() <= i {
                lost.push(0);
            }
            lost[i] += count;
        }
    }
    let losing = s.rounds.iter().filter(|r| r.lost_total() > 0).count();
    let diverged = s.rounds.iter().filter(|r| r.divergences.iter().any(|d| d.kind() != "lost")).count();
    let mut back: Vec<f64> = s.rounds.iter().filter_map(|r| r.recovery).map(|d| d.as_secs_f64()).collect();
    back.sort_by(f64::total_cmp);
    let not_back = s.rounds.len() - back.len();
    let times = match back.len() {
        0 => "not back".to_string(),
        k => format!("{:.1} s, {:.1} s{}", back[k / 2], back[k - 1], if not_back > 0 { format!(" ({not_back} not back)") } else { String::new() }),
    };
    let lost_text = if lost.is_empty() { "-".into() } else { lost.iter().map(usize::to_string).collect::<Vec<_>>().join(" / ") };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        s.provider,
        s.flush,
        s.kill.label(),
        s.start.label(),
        s.rounds.len(),
        acked / n,
        lost_text,
        losing,
        diverged,
        times
    )
}
