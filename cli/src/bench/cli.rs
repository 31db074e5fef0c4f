//! `lockstep bench`: arguments in, report out. The work is in runner.rs.

use super::plan::{BenchSpec, Scenario, Target};
use super::{report, runner};
use crate::cluster::Provider;
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const LONG_ABOUT: &str = "\
Runs sysbench on a fresh N-node cluster per provider, the same cells in the
same order for each, and prints tps, p95 latency, their ratios to the first
provider, and the server counters that say where the time goes. A provider
that cannot run (a cluster that does not form, a failing cell) shows n/a
with the reason; the run goes on.";

const AFTER_HELP: &str = "\
Lists are comma-separated. Options go in any order: a run takes the
defaults, then what --scenario sets, then every option given.

The default run is 2 providers x 8 cells of 5+30 s: about 12 minutes when
both providers run, about 6 while lockstep cannot form a 3-node cluster.
Exit status: 0 when at least one cell was measured, 1 when none was, 2 for
bad arguments.";

/// The options as given: each one left out keeps what the scenario sets,
/// or the default (see `Cli::spec`).
#[derive(Parser, Debug)]
#[command(
    name = "lockstep bench",
    about = "sysbench on 3-node clusters: Galera vs lockstep, side by side",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    // As before clap, an option given twice keeps its last value (lists
    // too: their action is Set, not Append), except the repeatable ones.
    args_override_self = true
)]
pub struct Cli {
    /// galera, lockstep or library paths; the first is the baseline of
    /// the ratios (default galera,lockstep)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = provider, action = clap::ArgAction::Set)]
    providers: Option<Vec<Provider>>,
    /// Cluster size (default 3, big-trx 2; 1 measures the provider's own
    /// cost per commit, without replication)
    #[arg(long, value_name = "N")]
    nodes: Option<usize>,
    /// sysbench tests (default oltp_update_index,oltp_write_only)
    #[arg(long, value_name = "LIST", value_delimiter = ',', action = clap::ArgAction::Set)]
    tests: Option<Vec<String>>,
    /// sysbench thread counts (default 8,32)
    #[arg(long, value_name = "LIST", value_delimiter = ',', action = clap::ArgAction::Set)]
    threads: Option<Vec<u32>>,
    /// nodeK: every connection to node K; all: connections round-robin
    /// over all nodes (default node1,all)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = Target::parse, action = clap::ArgAction::Set)]
    targets: Option<Vec<Target>>,
    /// Measured seconds per cell (default 30)
    #[arg(long, value_name = "SECS")]
    time: Option<u32>,
    /// Seconds of unmeasured sysbench run before each cell (default 5)
    #[arg(long, value_name = "SECS")]
    warmup: Option<u32>,
    /// sysbench tables (default 8)
    #[arg(long, value_name = "N")]
    tables: Option<u32>,
    /// Rows per table (default 10000)
    #[arg(long, value_name = "N")]
    table_size: Option<u64>,
    /// Clusters, raw outputs, report (default /tmp/lockstep-bench)
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Keep each cluster's data directories once measured (they take
    /// 1-5 GB a provider; logs and my.cnf stay)
    #[arg(long)]
    keep_data: bool,
    /// Provider i uses ports P+100*i and up (default 28000)
    #[arg(long, value_name = "P")]
    base_port: Option<u16>,
    /// Also write the report to FILE
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// [mysqld] option for every node (repeatable; default
    /// innodb_flush_log_at_trx_commit=2, overridable by key)
    #[arg(long = "mysqld-option", value_name = "K=V")]
    mysqld_options: Vec<String>,
    /// wsrep_provider_options entry for every node (repeatable; `;`
    /// separates several in one)
    #[arg(long = "provider-option", value_name = "K=V")]
    provider_options: Vec<String>,
    /// Put the last node D ms away (one way) behind a user-space proxy on
    /// its group links (wan: 100, slow-node: 7)
    #[arg(long, value_name = "D")]
    wan_delay_ms: Option<u32>,
    /// Put the nodes in N gmcast.segments of consecutive nodes
    ///
    /// node1 and node2 in 0, node3 and node4 in 1 for 4 nodes in 2; with
    /// --wan-delay-ms, the delay is between segments instead, and the
    /// report gives the bytes that crossed per transaction; with
    /// --provider-option gmcast.segment=0 too, the same delays without
    /// segments.
    #[arg(long, value_name = "N", verbatim_doc_comment)]
    segments: Option<usize>,
    /// What to run: lan (or cells, the default), wan, slow-node, big-trx, freshness, bound, drain or durability
    ///
    /// lan (or cells): the sysbench matrix of the options above; with
    /// --repeat N above 1, N times on fresh clusters, averaged (tps, p95,
    /// CPU per transaction; the node1 cells' follower delays pooled), with
    /// lan.json and lan.svg.
    ///
    /// wan: oltp_update_index on node 1 at 1, 4, 16 and 64 threads, the
    /// last node near (0 ms through the delay proxy) then --wan-delay-ms
    /// away (default 100); tps and p95 per setting, far over near per
    /// provider, and lockstep over Galera when far; writes wan.json and
    /// wan.svg (against threads).
    ///
    /// slow-node: oltp_read_write and oltp_update_index on node 1 at 16
    /// and 64 threads, the last node near, --wan-delay-ms away (default
    /// 7), and that far with evs.send_window and evs.user_send_window at
    /// 512; writes slow-node.json and slow-node.svg.
    ///
    /// wan and slow-node set the tests, threads, targets and delay; the
    /// options given override them, wherever they stand.
    ///
    /// big-trx: on a 2-node cluster (4 appliers), one UPDATE of --rows
    /// rows on node 1 under sysbench oltp_update_index (the first
    /// --threads value, 8) per --fragments size; prints the UPDATE's
    /// time, how much later node 2 applied it, the seconds the load fell
    /// under a tenth of its baseline, each node's resident-memory growth,
    /// and the share of the UPDATE node 1 was paused by flow control. It
    /// sets --nodes 2 unless --nodes is given.
    ///
    /// freshness: on 3 nodes, node 2 with 1 applier and wsrep_sync_wait
    /// readers, 64 writers on node 1; per flow-control setting
    /// (gcs.fc_limit=16; for lockstep lockstep.max_lag_ms=100 with
    /// gcs.fc_limit=25000; gcs.fc_limit=16 with evs.send_window and
    /// evs.user_send_window at 512) two phases of --time seconds, node 2
    /// innodb_flush_log_at_trx_commit=2 then 1; prints write tps, the
    /// reads' p99, node 1's flow-control pause and node 2's mean receive
    /// queue per phase, and writes freshness.json and freshness.svg (per
    /// second) in --dir. With --rate, the writers offer that many tps.
    ///
    /// bound: on 3 nodes, node 2 with 1 applier and
    /// innodb_flush_log_at_trx_commit=1 reading SELECT SUM(k) over 45,000
    /// rows with wsrep_sync_wait=1 every 250 ms, oltp_update_index on
    /// node 1 (one table of 100,000 rows) at each --threads value (16, 64,
    /// 128) and gcs.fc_limit 16, 1000 and 25000, lockstep with
    /// lockstep.max_lag_ms=100 (Galera, if asked for, with the limit
    /// alone); per cell write tps, node 1's pause, node 2's queue and the
    /// reads' p50, p99 and worst, and whether every p99 stayed at most 150
    /// ms; writes bound.json in --dir. Providers: lockstep unless given.
    ///
    /// drain: on 3 nodes, oltp_write_only 16 threads on node 1; node 2
    /// desynced and locked (FTWRL) 15 s, then its apply rate once
    /// unlocked with writes going on, and again with writes stopped,
    /// beside its wsrep_apply_capacity read under load; writes
    /// drain.json and drain.svg in --dir.
    ///
    /// durability: the cells per setting, innodb_flush_log_at_trx_commit
    /// 0, 1 and 2 for every provider and lockstep.log_sync=batch at 2 for
    /// lockstep (--time 20 unless given), each followed by a whole-cluster
    /// SIGKILL under two inserting writers per node (restarted as systemd
    /// does); prints tps, the acknowledged inserts missing and the time
    /// back to Synced, lockstep flush 2 over Galera flush 1 and batch over
    /// none; writes durability.json in --dir.
    #[arg(long, value_name = "S", value_parser = Scenario::parse, verbatim_doc_comment)]
    scenario: Option<Scenario>,
    /// lan: runs of the matrix; wan and slow-node: rounds of all their settings, each figure the mean (default 1)
    #[arg(long, value_name = "N")]
    repeat: Option<u32>,
    /// freshness and the cells: the writers' offered rate in transactions
    /// per second, the same for every provider (sysbench --rate; default
    /// 0: as fast as they go), to compare pauses and staleness at one load
    #[arg(long, value_name = "TPS")]
    rate: Option<u32>,
    /// big-trx: rows of the big table (default 500000)
    #[arg(long, value_name = "N")]
    rows: Option<u64>,
    /// big-trx: wsrep_trx_fragment_size values in bytes, 0 for no
    /// streaming (default 0,10000,100000,1000000)
    #[arg(long, value_name = "LIST", value_delimiter = ',', action = clap::ArgAction::Set)]
    fragments: Option<Vec<u64>>,
}

/// A provider by name, or any other text as a library path.
fn provider(text: &str) -> Result<Provider, std::convert::Infallible> {
    Ok(Provider::parse(text))
}

impl Cli {
    /// The defaults, then what the scenario sets, then every option given.
    fn spec(self) -> BenchSpec {
        let mut spec = BenchSpec::for_scenario(self.scenario.unwrap_or(Scenario::Cells));
        set(&mut spec.providers, self.providers);
        set(&mut spec.nodes, self.nodes);
        set(&mut spec.tests, self.tests);
        set(&mut spec.threads, self.threads);
        set(&mut spec.targets, self.targets);
        set(&mut spec.time, self.time);
        set(&mut spec.warmup, self.warmup);
        set(&mut spec.tables, self.tables);
        set(&mut spec.table_size, self.table_size);
        set(&mut spec.dir, self.dir);
        set(&mut spec.base_port, self.base_port);
        spec.output = self.output;
        spec.mysqld_options.extend(self.mysqld_options);
        let entries = self.provider_options.iter().flat_map(|o| o.split(';')).map(str::trim);
        spec.provider_options.extend(entries.filter(|o| !o.is_empty()).map(String::from));
        spec.wan_delay_ms = self.wan_delay_ms.or(spec.wan_delay_ms);
        set(&mut spec.segments, self.segments);
        set(&mut spec.repeat, self.repeat);
        set(&mut spec.rows, self.rows);
        set(&mut spec.rate, self.rate);
        set(&mut spec.fragments, self.fragments);
        spec.keep_data = self.keep_data;
        spec
    }
}

fn set<T>(field: &mut T, given: Option<T>) {
    if let Some(value) = given {
        *field = value;
    }
}

pub fn run_cli(cli: Cli) -> ExitCode {
    let mut spec = cli.spec();
    if spec.dir.is_relative() {
        // The launcher wants absolute paths (sockets, my.cnf).
        spec.dir = std::env::current_dir().unwrap_or_default().join(&spec.dir);
    }
    if let Err(e) = spec.validate().and_then(|_| check_sysbench()) {
        eprintln!("lockstep bench: {e}");
        return ExitCode::from(2);
    }
    run(&spec)
}

/// What a scenario's report needs once it has run: the table, the chart
/// and JSON it wrote, and whether anything was measured.
type Reported = (String, crate::cluster::Result<Vec<PathBuf>>, bool);

/// One of the scenarios with a report of its own (big-trx, freshness,
/// drain): runs it, prints and writes `report-NAME.txt`.
fn run_scenario<R>(
    spec: &BenchSpec,
    name: &str,
    run: impl FnOnce(&BenchSpec, &mut dyn FnMut(&str)) -> R,
    report: impl FnOnce(&R, std::time::Duration) -> Reported,
) -> ExitCode {
    eprintln!("lockstep bench --scenario {name}: {} providers, outputs in {}", spec.providers.len(), spec.dir.display());
    if let Err(e) = std::fs::create_dir_all(&spec.dir) {
        eprintln!("lockstep bench: creating {}: {e}", spec.dir.display());
        return ExitCode::FAILURE;
    }
    let started = Instant::now();
    let runs = run(spec, &mut |line| eprintln!("{line}"));
    let (mut text, written, measured) = report(&runs, started.elapsed());
    name_outputs(written, &mut text);
    finish(spec, &format!("report-{name}.txt"), &text, measured)
}

fn run_big_trx(spec: &BenchSpec) -> ExitCode {
    use super::big_trx;
    run_scenario(spec, "big-trx", big_trx::run, |runs, took| {
        let any = runs.iter().filter_map(|(_, r)| r.as_ref().ok()).flatten().any(|s| s.outcome.is_ok());
        (big_trx::render(spec, runs, took), big_trx::write_outputs(spec, runs), any)
    })
}

fn run_freshness(spec: &BenchSpec) -> ExitCode {
    use super::freshness;
    run_scenario(spec, "freshness", freshness::run, |runs, took| {
        let any = runs.iter().any(|(_, r)| r.as_ref().is_ok_and(|l| !l.is_empty()));
        (freshness::render(spec, runs, took), freshness::write_outputs(spec, runs), any)
    })
}

fn run_bound(spec: &BenchSpec) -> ExitCode {
    use super::bound;
    run_scenario(spec, "bound", bound::run, |runs, took| {
        let any = runs.iter().any(|(_, r)| r.as_ref().is_ok_and(|(_, cells)| !cells.is_empty()));
        (bound::render(spec, runs, took), bound::write_outputs(spec, runs), any)
    })
}

fn run_drain(spec: &BenchSpec) -> ExitCode {
    use super::drain;
    run_scenario(spec, "drain", drain::run, |runs, took| {
        (drain::render(runs, took), drain::write_outputs(spec, runs), runs.iter().any(|(_, r)| r.is_ok()))
    })
}

fn run_durability(spec: &BenchSpec) -> ExitCode {
    use super::durability;
    run_scenario(spec, "durability", durability::run, |runs, took| {
        let any = runs.iter().flat_map(|r| r.cells.iter().flatten()).flat_map(|r| &r.cells).any(|c| matches!(c, runner::CellOutcome::Measured { .. }));
        (durability::render(spec, runs, took), durability::write_outputs(spec, runs), any)
    })
}

fn run_sweep(spec: &BenchSpec) -> ExitCode {
    use super::sweep;
    run_scenario(spec, sweep::name(spec), sweep::run, |runs, took| {
        let any = runs.iter().flat_map(|r| &r.runs).flat_map(|r| &r.cells).any(|c| matches!(c, runner::CellOutcome::Measured { .. }));
        (sweep::render(spec, runs, took), sweep::write_outputs(spec, runs), any)
    })
}

/// Adds the chart's and the JSON's paths to the report, or says why
/// they are missing.
fn name_outputs(written: crate::cluster::Result<Vec<PathBuf>>, text: &mut String) {
    match written {
        Ok(paths) => text.push_str(&format!("chart and figures: {}\n", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))),
        Err(e) => eprintln!("lockstep bench: {e}"),
    }
}

/// Prints the report, writes it to `DIR/name` (and --output), and says
/// whether anything was measured.
fn finish(spec: &BenchSpec, name: &str, text: &str, measured: bool) -> ExitCode {
    say(text);
    for path in std::iter::once(spec.dir.join(name)).chain(spec.output.clone()) {
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("lockstep bench: writing {}: {e}", path.display());
        }
    }
    match measured {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

fn run(spec: &BenchSpec) -> ExitCode {
    match spec.scenario {
        super::plan::Scenario::Drain => return run_drain(spec),
        super::plan::Scenario::BigTrx => return run_big_trx(spec),
        super::plan::Scenario::Freshness => return run_freshness(spec),
        super::plan::Scenario::Bound => return run_bound(spec),
        super::plan::Scenario::Durability => return run_durability(spec),
        super::plan::Scenario::Wan | super::plan::Scenario::SlowNode => return run_sweep(spec),
        super::plan::Scenario::Cells if spec.repeat > 1 => return run_sweep(spec),
        super::plan::Scenario::Cells => {}
    }
    eprintln!(
        "lockstep bench: {} cells x {} providers, about {} min if all run; outputs in {}",
        spec.cells().len(),
        spec.providers.len(),
        spec.estimate().as_secs().div_ceil(60),
        spec.dir.display()
    );
    let started = Instant::now();
    let runs = runner::run(spec, &mut |line| eprintln!("{line}"));
    let text = report::render(spec, &runs, started.elapsed());
    say(&text);
    let files = [
        (spec.dir.join("report.txt"), text.clone()),
        (
            spec.dir.join("results.tsv"),
            report::results_tsv(spec, &runs),
        ),
    ];
    let extra = spec.output.clone().map(|path| (path, text));
    for (path, content) in files.into_iter().chain(extra) {
        if let Err(e) = std::fs::write(&path, content) {
            eprintln!("lockstep bench: writing {}: {e}", path.display());
        }
    }
    let any = runs
        .iter()
        .flat_map(|r| &r.cells)
        .any(|c| matches!(c, runner::CellOutcome::Measured { .. }));
    if any {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn check_sysbench() -> crate::cluster::Result<()> {
    let ok = std::process::Command::new("sysbench")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    match ok {
        true => Ok(()),
        false => Err(crate::cluster::Error::Msg(
            "sysbench not found: install the sysbench package".into(),
        )),
    }
}

/// Prints to stdout, ignoring errors: print! panics on a closed pipe.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `lockstep bench ARGS` would run, or clap's error.
    fn parse(text: &str) -> Result<BenchSpec, clap::Error> {
        let args = std::iter::once("lockstep bench").chain(text.split_whitespace());
        Cli::try_parse_from(args).map(Cli::spec)
    }

    #[test]
    fn no_arguments_is_the_default_run() {
        assert_eq!(parse("").unwrap(), BenchSpec::default());
    }

    #[test]
    fn every_option() {
        let spec = parse(
            "--providers galera,/opt/x.so --nodes 5 --threads=1,4 --tests oltp_write_only \
             --targets node2,all --time 10 --warmup 0 --tables 2 --table-size 500 --dir /tmp/b \
             --base-port 29000 --output /tmp/r.txt --mysqld-option wsrep_slave_threads=4 \
             --provider-option gcs.fc_limit=64;evs.send_window=512 --keep-data --wan-delay-ms 7",
        )
        .unwrap();
        assert_eq!(
            spec.providers,
            [Provider::Galera, Provider::Path("/opt/x.so".into())]
        );
        assert_eq!(spec.nodes, 5);
        assert_eq!(spec.threads, [1, 4]);
        assert_eq!(spec.tests, ["oltp_write_only"]);
        assert_eq!(spec.targets, [Target::Node(2), Target::All]);
        assert_eq!(
            (spec.time, spec.warmup, spec.tables, spec.table_size),
            (10, 0, 2, 500)
        );
        assert_eq!(spec.dir, PathBuf::from("/tmp/b"));
        assert_eq!(spec.base_port, 29000);
        assert_eq!(spec.output, Some(PathBuf::from("/tmp/r.txt")));
        assert_eq!(
            spec.mysqld_options,
            ["innodb_flush_log_at_trx_commit=2", "wsrep_slave_threads=4"]
        );
        assert_eq!(
            spec.provider_options,
            ["gcs.fc_limit=64", "evs.send_window=512"]
        );
        assert_eq!(spec.wan_delay_ms, Some(7));
        assert!(spec.keep_data && !BenchSpec::default().keep_data);
        assert!(spec.validate().is_ok());
    }

    #[test]
    fn repeated_options_keep_the_last_value_or_add_up() {
        let spec = parse("--threads 1 --threads=2,3 --mysqld-option a=1 --mysqld-option b=2 --keep-data --keep-data").unwrap();
        assert_eq!(spec.threads, [2, 3]);
        assert_eq!(spec.mysqld_options, ["innodb_flush_log_at_trx_commit=2", "a=1", "b=2"]);
        assert!(spec.keep_data);
    }

    #[test]
    fn the_big_transaction_scenario() {
        let spec = parse("--scenario big-trx --rows 1000 --fragments 0,10000").unwrap();
        assert_eq!(spec.scenario, Scenario::BigTrx);
        assert_eq!((spec.nodes, spec.rows), (2, 1000));
        assert_eq!(spec.fragments, [0, 10_000]);
        let huge = parse("--scenario huge").unwrap_err().to_string();
        assert!(huge.contains("scenario must be lan (or cells), wan"), "{huge}");
    }

    #[test]
    fn options_override_the_scenario_wherever_they_stand() {
        let wan = parse("--scenario wan --wan-delay-ms 50").unwrap();
        assert_eq!((wan.scenario, wan.threads.clone(), wan.wan_delay_ms), (Scenario::Wan, vec![1, 4, 16, 64], Some(50)));
        assert_eq!((wan.tests.clone(), wan.targets.clone()), (vec!["oltp_update_index".to_string()], vec![Target::Node(1)]));
        assert_eq!(parse("--wan-delay-ms 50 --scenario wan").unwrap(), wan);
        let slow = parse("--threads 16 --scenario slow-node").unwrap();
        assert_eq!((slow.threads.clone(), slow.wan_delay_ms, slow.tests.len()), (vec![16], Some(7), 2));
        assert_eq!(parse("--scenario slow-node --threads 16").unwrap(), slow);
        let lan = parse("--scenario lan --repeat 3").unwrap();
        assert_eq!((lan.scenario, lan.repeat), (Scenario::Cells, 3));
        assert_eq!(parse("--scenario cells").unwrap().scenario, Scenario::Cells);
        assert_eq!(parse("--nodes 3 --scenario big-trx").unwrap().nodes, 3);
        assert!(parse("--repeat 0").unwrap().validate().is_err());
        assert!(parse("--scenario wan --nodes 1").unwrap().validate().is_err());
        let alone = parse("--scenario big-trx --nodes 1").unwrap().validate().unwrap_err().to_string();
        assert!(alone.contains("--scenario big-trx needs --nodes 2"), "{alone}");
    }

    #[test]
    fn the_freshness_scenario_keeps_three_nodes() {
        let spec = parse("--scenario freshness --time 20").unwrap();
        assert_eq!((spec.scenario, spec.nodes, spec.time, spec.rate), (Scenario::Freshness, 3, 20, 0));
        assert_eq!(parse("--rate 2500 --scenario freshness").unwrap().rate, 2500);
    }

    #[test]
    fn mistakes_are_errors() {
        for text in ["--nodes", "--nodes three", "--threads 8,x", "--threads ,", "--targets node1,some", "--frobnicate 1", "stray", "--keep-data=yes", "--base-port 70000"] {
            assert!(parse(text).is_err(), "{text}");
        }
        let target = parse("--targets node1,some").unwrap_err().to_string();
        assert!(target.contains("target must be nodeN or all, not \"some\""), "{target}");
        assert_eq!(parse("--time 5 --help").unwrap_err().kind(), clap::error::ErrorKind::DisplayHelp);
    }

    /// Every invocation in README.md, cli/src/bench/README.md and the
    /// module docs.
    #[test]
    fn the_documented_invocations_parse() {
        for text in [
            "",
            "--providers galera --time 10",
            "--wan-delay-ms 7",
            "--providers galera,lockstep --wan-delay-ms 7",
            "--scenario big-trx",
            "--scenario freshness --time 20",
            "--scenario drain",
            "--scenario wan --time 15",
            "--scenario slow-node --time 15",
            "--scenario lan --repeat 3",
        ] {
            let spec = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(spec.validate().is_ok(), "{text}");
        }
    }
}
