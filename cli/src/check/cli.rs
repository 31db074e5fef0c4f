//! `lockstep check crash|partition`: arguments in, rounds and a summary
//! table out.

use super::crash::{self, Kill, Round, RoundSpec, Start};
use super::elle;
use super::list_append;
use super::partition::{self, Split};
use crate::cluster::{Cluster, ClusterSpec, Provider};
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
    /// Healing after partitions: writers insert on every node, the network between one side and the rest drops every packet for a few seconds, then heals; how long until every node is Synced in one component, and every acknowledged insert on every node
    #[command(after_help = PARTITION_AFTER_HELP)]
    Partition(PartitionArgs),
    /// Isolation under faults: Jepsen's list-append transactions on every node while one fault class strikes again and again, then every key read on every node, and the history checked for anomalies (an Elle-style checker)
    #[command(name = "list-append", after_help = LIST_APPEND_AFTER_HELP)]
    ListAppend(ListAppendArgs),
    /// Checks a list-append history again (a DIR/<setting>/<fault>.history that check list-append wrote): the anomalies found, five examples of each
    History(HistoryArgs),
}

#[derive(Args, Debug)]
struct HistoryArgs {
    /// The history: a transaction per line, as JSON
    file: PathBuf,
    /// Anomaly kinds that fail the check (default: every kind but G2-item and G2-item-realtime)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    forbid: Vec<String>,
}

const LIST_APPEND_AFTER_HELP: &str = "\
Lists are comma-separated. Each provider, flush, --sync-wait and
--snapshot-isolation setting gets a fresh cluster (nodes on addresses of
their own, as `check partition` makes them), which runs each --faults
class for --time seconds: --clients clients per node run transactions of
1-4 reads and appends (Jepsen's list-append, REPEATABLE READ,
innodb_lock_wait_timeout=1, wsrep_slave_threads=4) while the class's
fault strikes every --gap seconds (kills: 1-3 s, then started again as
systemd does; pause: SIGSTOP 2-6 s; partitions: 4-12 s; ring: every
node keeps only its nearest neighbours in a ring, so that each sees a
majority and no two the same one, or with three nodes one link goes,
4-12 s). Then every key is read on every node, and the history is
checked: G0, G1a, G1b, G1c, G-single, G-nonadjacent, G2-item and their
real-time variants (stale reads), lost updates, incompatible orders,
duplicated, garbage and lost appends. A
table, a row per fault class and a column per setting, counts what was
found; examples go to DIR/<setting>/<fault>.anomalies, the history to
DIR/<setting>/<fault>.history (see check history). Exit status: 0
when no run found an anomaly in --forbid (default: every kind but
G2-item and G2-item-realtime, the write skew snapshot isolation allows)
and every run ended whole; 1 otherwise; 2 for bad arguments.";

#[derive(Args, Debug)]
struct ListAppendArgs {
    #[command(flatten)]
    common: Common,
    /// Fault classes: none, kill-one, kill-majority, kill-all, pause, partition-one, partition-minority, ring
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "none,pause", value_parser = list_append::Fault::parse)]
    faults: Vec<list_append::Fault>,
    /// Clients per node
    #[arg(long, value_name = "N", default_value_t = 3)]
    clients: usize,
    /// wsrep_sync_wait values of the clients' sessions
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "0")]
    sync_wait: Vec<u32>,
    /// innodb_snapshot_isolation values: on, off
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "on", value_parser = on_off)]
    snapshot_isolation: Vec<bool>,
    /// Seconds between two faults
    #[arg(long, value_name = "SECS", default_value_t = 8)]
    gap: u64,
    /// Anomaly kinds that fail the check
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    forbid: Vec<String>,
    /// Seed of the clients' choices (default: from the clock, printed)
    #[arg(long)]
    seed: Option<u64>,
}

fn on_off(text: &str) -> Result<bool, String> {
    match text {
        "on" | "ON" | "1" => Ok(true),
        "off" | "OFF" | "0" => Ok(false),
        _ => Err(format!("{text:?}: expected on or off")),
    }
}

const PARTITION_AFTER_HELP: &str = "\
Lists are comma-separated. Each provider and flush setting gets a fresh
cluster whose nodes listen for group, IST and SST traffic on addresses of
their own (127.20.0.N); a partition is an nftables table (named after
--base-port) that drops every packet between two sides' addresses, so
connections stay open and nothing crosses, as when a network drops
packets. A round: --writers writers per node insert for --time seconds;
--split names the side cut off (one node, or the largest minority), for
--cut seconds (each round the next of nine steps of the range); then the
rules go, and the round waits until every node is Synced in a primary
component of every node. Then as in `check crash`: every acknowledged
insert looked up on every node, rows and checksums compared. Needs root
and nft. Exit status: 0 when every round healed within --heal-within,
lost nothing and diverged nowhere; 1 otherwise; 2 for bad arguments.";

/// What every check takes: the clusters, the writers, the rounds.
#[derive(Args, Debug)]
struct Common {
    /// galera, lockstep or library paths
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "lockstep", value_parser = provider)]
    providers: Vec<Provider>,
    /// innodb_flush_log_at_trx_commit values
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "0")]
    flush: Vec<u8>,
    /// Rounds per setting
    #[arg(long, value_name = "N", default_value_t = 3)]
    rounds: u32,
    /// Seconds the writers write before the fault
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    time: u64,
    /// Writers per node
    #[arg(long, value_name = "N", default_value_t = 2)]
    writers: usize,
    /// Cluster size
    #[arg(long, value_name = "N", default_value_t = 3)]
    nodes: usize,
    /// Seconds the cluster has to be whole and Synced again
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
    /// Also write the summary table to FILE
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

impl Common {
    fn writers(&self) -> InsertConfig {
        InsertConfig { writers_per_node: self.writers, ..InsertConfig::default() }
    }

    /// The spec of the cluster for one provider and flush setting, in a
    /// directory of its own (`kind`: the check's name, or nothing).
    fn spec(&self, provider: &Provider, flush: u8, kind: &str) -> ClusterSpec {
        let name = format!("{kind}{}-flush{flush}", provider.label().replace('/', "_"));
        let mut spec = ClusterSpec::new(self.nodes, provider.clone(), self.dir.join(name)).base_port(self.base_port);
        for o in &self.mysqld_options {
            spec = spec.mysqld_option(o.clone());
        }
        for o in &self.provider_options {
            spec = spec.provider_option(o.clone());
        }
        spec
    }

    /// Prints the table, writes it to --output, and says how it ended.
    fn finish(&self, table: &str, clean: bool) -> ExitCode {
        println!("\n{table}");
        if let Some(path) = &self.output {
            if let Err(e) = std::fs::write(path, table) {
                eprintln!("cannot write {}: {e}", path.display());
            }
        }
        match clean {
            true => ExitCode::SUCCESS,
            false => ExitCode::FAILURE,
        }
    }
}

#[derive(Args, Debug)]
struct PartitionArgs {
    #[command(flatten)]
    common: Common,
    /// Which side a round cuts off: one, minority
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "one", value_parser = Split::parse)]
    split: Vec<Split>,
    /// Seconds a cut lasts: LOW-HIGH
    #[arg(long, value_name = "LOW-HIGH", default_value = "4-12", value_parser = seconds_range)]
    cut: (Duration, Duration),
    /// A round heals when every node is Synced in one component within
    /// this many seconds of the heal
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    heal_within: u64,
}

fn seconds_range(text: &str) -> Result<(Duration, Duration), String> {
    let (low, high) = text.split_once('-').unwrap_or((text, text));
    let parse = |t: &str| t.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map(Duration::from_secs_f64);
    match (parse(low), parse(high)) {
        (Some(l), Some(h)) if l <= h => Ok((l, h)),
        _ => Err(format!("{text:?}: expected seconds LOW-HIGH, LOW <= HIGH")),
    }
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
    #[command(flatten)]
    common: Common,
    /// Which nodes a round kills: all, one, majority
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "all", value_parser = Kill::parse)]
    kill: Vec<Kill>,
    /// How killed nodes start again: systemd, plain
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "systemd,plain", value_parser = Start::parse)]
    start: Vec<Start>,
    /// Stop at the first round that lost or diverged, leaving the
    /// cluster's data as that round found it
    #[arg(long)]
    stop_on_failure: bool,
}

fn provider(text: &str) -> Result<Provider, String> {
    Ok(Provider::parse(text))
}

pub fn run_cli(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Crash(args) => run_crash(&args),
        Command::Partition(args) => run_partition(&args),
        Command::ListAppend(args) => run_list_append(&args),
        Command::History(args) => run_history(&args),
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
    let writers = args.common.writers();
    let mut all = Vec::new();
    for provider in &args.common.providers {
        for &flush in &args.common.flush {
            all.extend(provider_series(args, provider, flush, &writers));
        }
    }
    let clean = all.iter().all(|s| s.failed.is_none() && s.rounds.iter().all(|r| r.verdict.clean()));
    args.common.finish(&summary(&all), clean)
}

/// Every kill and start setting on one fresh cluster of `provider`.
fn provider_series(args: &CrashArgs, provider: &Provider, flush: u8, writers: &InsertConfig) -> Vec<Series> {
    let label = provider.label();
    let spec = args.common.spec(provider, flush, "");
    let settings: Vec<(Kill, Start)> = args.kill.iter().flat_map(|k| args.start.iter().map(move |s| (*k, *s))).collect();
    let series_of = |kill, start, rounds, failed| Series { provider: label.clone(), flush, kill, start, rounds, failed };
    eprintln!("{label}, innodb_flush_log_at_trx_commit={flush}: starting {} nodes in {}", args.common.nodes, spec.dir.display());
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
            load: Duration::from_secs(args.common.time),
            kill_gap: Duration::from_millis(200),
            after_kill: Duration::from_secs(1),
            recovery_timeout: Duration::from_secs(args.common.recovery_timeout),
        };
        let rounds = crash::series(&cluster, &spec, writers, (first, args.common.rounds), args.stop_on_failure, &mut |r| report_round(&label, flush, &spec, r));
        first += args.common.rounds;
        let broken = rounds.last().is_some_and(|r| r.recovery.is_none() || (args.stop_on_failure && !r.verdict.clean()));
        out.push(series_of(kill, start, rounds, None));
        if broken {
            break; // the cluster is unusable: the other settings of this provider do not run
        }
    }
    out
}

fn report_round(provider: &str, flush: u8, spec: &RoundSpec, r: &Round) {
    let lost: Vec<String> = r.verdict.lost.iter().map(|(_, n)| n.to_string()).collect();
    let back = r.recovery.map_or("not back".to_string(), |d| format!("back in {:.1}s", d.as_secs_f64()));
    eprintln!(
        "{provider} flush={flush} kill={} ({}) start={} round {}: {} acknowledged ({} in doubt, {} refused), lost per node {}, {back}{}{}",
        spec.kill.label(),
        r.victims.iter().map(|n| format!("node{n}")).collect::<Vec<_>>().join(","),
        spec.start.label(),
        r.round,
        r.verdict.acked.ids.len(),
        r.verdict.acked.in_doubt,
        r.verdict.acked.refused,
        if lost.is_empty() { "-".into() } else { lost.join("/") },
        r.verdict.error.as_ref().map_or(String::new(), |e| format!("; {e}")),
        r.verdict.diverged_text(),
    );
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
    let acked: usize = s.rounds.iter().map(|r| r.verdict.acked.ids.len()).sum();
    let mut lost: Vec<usize> = Vec::new();
    for r in &s.rounds {
        for (i, (_, count)) in r.verdict.lost.iter().enumerate() {
            if lost.len() <= i {
                lost.push(0);
            }
            lost[i] += count;
        }
    }
    let losing = s.rounds.iter().filter(|r| r.verdict.lost_total() > 0).count();
    let diverged = s.rounds.iter().filter(|r| r.verdict.divergences.iter().any(|d| d.kind() != "lost")).count();
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

/// One partition setting's rounds, for the summary.
struct PartitionSeries {
    provider: String,
    flush: u8,
    split: Split,
    rounds: Vec<partition::Round>,
    failed: Option<String>,
}

fn run_partition(args: &PartitionArgs) -> ExitCode {
    let bound = Duration::from_secs(args.heal_within);
    let mut all = Vec::new();
    for provider in &args.common.providers {
        for &flush in &args.common.flush {
            all.extend(partition_series(args, provider, flush));
        }
    }
    let clean = all.iter().all(|s| s.failed.is_none() && s.rounds.iter().all(|r| r.verdict.clean() && r.healed_within(bound)));
    args.common.finish(&partition_summary(&all, bound), clean)
}

/// Every split setting on one fresh cluster of `provider`, its nodes on
/// addresses of their own.
fn partition_series(args: &PartitionArgs, provider: &Provider, flush: u8) -> Vec<PartitionSeries> {
    let label = provider.label();
    let spec = crate::fault::partition::own_addresses(args.common.spec(provider, flush, "partition-"));
    let series_of = |split, rounds, failed| PartitionSeries { provider: label.clone(), flush, split, rounds, failed };
    eprintln!("{label}, innodb_flush_log_at_trx_commit={flush}: starting {} nodes in {}", args.common.nodes, spec.dir.display());
    let cluster: Cluster = match crash::cluster(spec, flush) {
        Ok(c) => c,
        Err(e) => return args.split.iter().map(|s| series_of(*s, Vec::new(), Some(e.to_string()))).collect(),
    };
    let mut first = 0;
    let mut out = Vec::new();
    for &split in &args.split {
        let spec = partition::RoundSpec {
            split,
            load: Duration::from_secs(args.common.time),
            cut: args.cut,
            heal_within: Duration::from_secs(args.heal_within),
            recovery_timeout: Duration::from_secs(args.common.recovery_timeout),
        };
        let rounds = partition::series(&cluster, &spec, &args.common.writers(), (first, args.common.rounds), &mut |r| report_partition(&label, flush, &spec, r));
        first += args.common.rounds;
        let broken = rounds.last().is_some_and(|r| r.back.is_none());
        out.push(series_of(split, rounds, None));
        if broken {
            break;
        }
    }
    out
}

fn report_partition(provider: &str, flush: u8, spec: &partition::RoundSpec, r: &partition::Round) {
    let v = &r.verdict;
    let lost: Vec<String> = v.lost.iter().map(|(_, n)| n.to_string()).collect();
    let back = r.back.map_or("not whole".to_string(), |d| format!("whole {:.1}s after the heal{}", d.as_secs_f64(), if r.healed_within(spec.heal_within) { "" } else { " (too late)" }));
    eprintln!(
        "{provider} flush={flush} split={} ({} cut off {:.1}s) round {}: {} acknowledged ({} in doubt, {} refused), lost per node {}, {back}{}{}",
        spec.split.label(),
        r.cut_off.iter().map(|n| format!("node{n}")).collect::<Vec<_>>().join(","),
        r.cut.as_secs_f64(),
        r.number,
        v.acked.ids.len(),
        v.acked.in_doubt,
        v.acked.refused,
        if lost.is_empty() { "-".into() } else { lost.join("/") },
        v.error.as_ref().map_or(String::new(), |e| format!("; {e}")),
        v.diverged_text(),
    );
}

fn partition_summary(all: &[PartitionSeries], bound: Duration) -> String {
    let mut out = format!(
        "| provider | flush | split | rounds | healed within {} s | after the heal (median, max) | lost (all rounds) | rounds diverged |\n|---|---|---|---|---|---|---|---|\n",
        bound.as_secs()
    );
    for s in all {
        if let Some(why) = &s.failed {
            out.push_str(&format!("| {} | {} | {} | 0 | n/a: {} | | | |\n", s.provider, s.flush, s.split.label(), why.lines().next().unwrap_or("")));
            continue;
        }
        let mut back: Vec<f64> = s.rounds.iter().filter_map(|r| r.back).map(|d| d.as_secs_f64()).collect();
        back.sort_by(f64::total_cmp);
        let times = match back.len() {
            0 => "never".to_string(),
            k => format!("{:.1} s, {:.1} s", back[k / 2], back[k - 1]),
        };
        let healed = s.rounds.iter().filter(|r| r.healed_within(bound)).count();
        let lost: usize = s.rounds.iter().map(|r| r.verdict.lost_total()).sum();
        let diverged = s.rounds.iter().filter(|r| r.verdict.divergences.iter().any(|d| d.kind() != "lost")).count();
        out.push_str(&format!("| {} | {} | {} | {} | {healed} | {times} | {lost} | {diverged} |\n", s.provider, s.flush, s.split.label(), s.rounds.len()));
    }
    out
}

/// One cluster setting of `check list-append`: its label and its runs.
struct Setting {
    label: String,
    runs: Vec<list_append::Run>,
    failed: Option<String>,
}

fn run_list_append(args: &ListAppendArgs) -> ExitCode {
    let seed = args.seed.unwrap_or_else(crate::workload::Rng::seed_from_clock);
    eprintln!("list-append seed {seed}");
    let mut settings = Vec::new();
    for provider in &args.common.providers {
        for &flush in &args.common.flush {
            for &sync_wait in &args.sync_wait {
                for &si in &args.snapshot_isolation {
                    settings.push(list_append_setting(args, provider, flush, sync_wait, si, seed));
                }
            }
        }
    }
    let clean = settings.iter().all(|s| s.failed.is_none() && s.runs.iter().all(|r| r.error.is_none() && r.report.counts().keys().all(|k| !forbidden(&args.forbid, k)) && !cut_short(&args.forbid, &r.report)));
    args.common.finish(&list_append_table(args, &settings), clean)
}

/// Whether the search for a forbidden class stopped before it was done:
/// then "none found" promises nothing.
fn cut_short(forbid: &[String], report: &elle::Report) -> bool {
    report.stopped.iter().any(|(class, _)| forbidden(forbid, class.name()))
}

fn forbidden(forbid: &[String], kind: &str) -> bool {
    match forbid.is_empty() {
        true => !elle::STRONG_SNAPSHOT_ISOLATION_ALLOWS.contains(&kind),
        false => forbid.iter().any(|f| f == kind),
    }
}

fn run_history(args: &HistoryArgs) -> ExitCode {
    let history = match std::fs::read_to_string(&args.file).map_err(|e| e.to_string()).and_then(|t| elle::history::from_json_lines(&t)) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{}: {e}", args.file.display());
            return ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let report = elle::check(&history);
    println!("{} transactions checked in {:.1} s: {}", history.len(), started.elapsed().as_secs_f64(), report.summary());
    print!("{}", report.examples(&history, 5));
    match report.counts().keys().any(|k| forbidden(&args.forbid, k)) || cut_short(&args.forbid, &report) {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    }
}

fn list_append_setting(args: &ListAppendArgs, provider: &Provider, flush: u8, sync_wait: u32, si: bool, seed: u64) -> Setting {
    let label = format!("{} flush {flush} sync_wait {sync_wait} si {}", provider.label(), if si { "on" } else { "off" });
    let kind = format!("list-append-sw{sync_wait}-si{}-", u8::from(si));
    let spec = crate::fault::partition::own_addresses(args.common.spec(provider, flush, &kind))
        .mysqld_option(format!("innodb_snapshot_isolation={}", if si { "ON" } else { "OFF" }))
        .mysqld_option("innodb_lock_wait_timeout=1")
        .mysqld_option(format!("innodb_flush_log_at_trx_commit={flush}"));
    let spec = ClusterSpec { slave_threads: 4, ..spec };
    eprintln!("{label}: starting {} nodes in {}", args.common.nodes, spec.dir.display());
    let dir = spec.dir.clone();
    let cluster = match Cluster::up(spec).map_err(|e| e.to_string()).and_then(|c| crate::workload::list_append::setup(&c, 1).map(|_| c).map_err(|e| e.to_string())) {
        Ok(c) => c,
        Err(e) => return Setting { label, runs: Vec::new(), failed: Some(e) },
    };
    let config = crate::workload::list_append::Config { clients_per_node: args.clients, sync_wait, statement_timeout: Duration::from_secs(10), seed };
    let mut runs = Vec::new();
    for &fault in &args.faults {
        let spec = list_append::RunSpec { fault, time: Duration::from_secs(args.common.time), gap: Duration::from_secs(args.gap), recovery_timeout: Duration::from_secs(args.common.recovery_timeout) };
        let started = std::time::Instant::now();
        let history_file = dir.join(format!("{}.history", fault.label()));
        let run = list_append::run_then(&cluster, &spec, &config, |history| {
            let _ = std::fs::write(&history_file, elle::history::to_json_lines(history));
        });
        let checked = started.elapsed();
        let _ = std::fs::write(dir.join(format!("{}.anomalies", fault.label())), format!("{}\n{}", run.faults.join("\n"), run.report.examples(&run.history, 5)));
        eprintln!(
            "{label} {}: {} committed of {} transactions, {} faults, found: {}; {} stale reads on struck nodes{} ({:.0} s)",
            fault.label(),
            run.committed(),
            run.history.len(),
            run.faults.len(),
            run.report.summary(),
            run.stale_on_struck,
            run.error.as_ref().map_or(String::new(), |e| format!("; {e}")),
            checked.as_secs_f64()
        );
        runs.push(run);
    }
    Setting { label, runs, failed: None }
}

/// A row per fault class, a column per setting.
fn list_append_table(args: &ListAppendArgs, settings: &[Setting]) -> String {
    let mut out = format!("| fault | {} |\n|---|{}\n", settings.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(" | "), "---|".repeat(settings.len()));
    for &fault in &args.faults {
        let cells: Vec<String> = settings
            .iter()
            .map(|s| match (&s.failed, s.runs.iter().find(|r| r.fault == fault)) {
                (Some(why), _) => format!("n/a: {}", why.lines().next().unwrap_or("")),
                (None, None) => "not run".into(),
                (None, Some(r)) => format!("{} ({} committed, {} stale on struck nodes){}", r.report.summary(), r.committed(), r.stale_on_struck, if r.error.is_some() { ", not whole after" } else { "" }),
            })
            .collect();
        out.push_str(&format!("| {} | {} |\n", fault.label(), cells.join(" | ")));
    }
    out
}
