//! `lockstep bench`: arguments in, report out. The work is in runner.rs.

use super::plan::{BenchSpec, Target};
use super::{report, runner};
use crate::cluster::Provider;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub const USAGE: &str = "usage: lockstep bench [options]

Runs sysbench on a fresh N-node cluster per provider, the same cells in the
same order for each, and prints tps, p95 latency, their ratios to the first
provider, and the server counters that say where the time goes. A provider
that cannot run (a cluster that does not form, a failing cell) shows n/a
with the reason; the run goes on.

options (lists are comma-separated):
  --providers LIST      galera, lockstep or library paths; the first is the
                        baseline of the ratios (default galera,lockstep)
  --nodes N             cluster size (default 3; 1 measures the provider's own
                        cost per commit, without replication)
  --tests LIST          sysbench tests (default oltp_update_index,oltp_write_only)
  --threads LIST        sysbench thread counts (default 8,32)
  --targets LIST        nodeK: every connection to node K; all: connections
                        round-robin over all nodes (default node1,all)
  --time SECS           measured seconds per cell (default 30)
  --warmup SECS         unmeasured sysbench run before each cell (default 5)
  --tables N            sysbench tables (default 8)
  --table-size N        rows per table (default 10000)
  --dir DIR             clusters, raw outputs, report (default /tmp/lockstep-bench)
  --keep-data           keep each cluster's data directories once measured
                        (they take 1-5 GB a provider; logs and my.cnf stay)
  --base-port P         provider i uses ports P+100*i and up (default 28000)
  --output FILE         also write the report to FILE
  --mysqld-option K=V   [mysqld] option for every node (repeatable; default
                        innodb_flush_log_at_trx_commit=2, overridable by key)
  --provider-option K=V wsrep_provider_options entry for every node (repeatable)
  --wan-delay-ms D      put the last node D ms away (one way) behind a
                        user-space proxy on its group links
  --segments N          put the nodes in N gmcast.segments of consecutive
                        nodes (node1 and node2 in 0, node3 and node4 in 1
                        for 4 nodes in 2); with --wan-delay-ms, the delay
                        is between segments instead, and the report gives
                        the bytes that crossed per transaction; with
                        --provider-option gmcast.segment=0 too, the same
                        delays without segments
  --scenario S          lan (or cells): the sysbench matrix above, the
                        default; with --repeat N above 1, N times on fresh
                        clusters, averaged, with lan.json and lan.svg.
                        wan: oltp_update_index on node 1 at 1, 4, 16 and
                        64 threads, the last node near (0 ms through the
                        delay proxy) then --wan-delay-ms away (default
                        100); tps and p95 per setting, far over near per
                        provider, and lockstep over Galera when far;
                        writes wan.json and wan.svg (against threads).
                        slow-node: oltp_read_write and oltp_update_index
                        on node 1 at 16 and 64 threads, the last node near,
                        --wan-delay-ms away (default 7), and that far with
                        evs.send_window and evs.user_send_window at 512;
                        writes slow-node.json and slow-node.svg.
                        Give wan and slow-node first: they set the tests,
                        threads, targets and delay, which later options
                        override.
                        big-trx: on a 2-node cluster (4 appliers), one
                        UPDATE of --rows rows on node 1 under sysbench
                        oltp_update_index (the first --threads value, 8)
                        per --fragments size; prints the UPDATE's time,
                        how much later node 2 applied it, the seconds the
                        load fell under a tenth of its baseline, each
                        node's resident-memory growth, and the share of
                        the UPDATE node 1 was paused by flow control.
                        Give it first: it sets --nodes 2.
                        freshness: on 3 nodes, node 2 with 1 applier and
                        wsrep_sync_wait readers, 64 writers on node 1; per
                        flow-control setting (gcs.fc_limit=16, and for
                        lockstep also lockstep.max_lag_ms=100 with
                        gcs.fc_limit=25000) two phases of --time seconds,
                        node 2 innodb_flush_log_at_trx_commit=2 then 1;
                        prints write tps, the reads' p99 and node 1's
                        flow-control pause per phase, and writes
                        freshness.json and freshness.svg (per second) in
                        --dir.
                        drain: on 3 nodes, oltp_write_only 16 threads on
                        node 1; node 2 desynced and locked (FTWRL) 15 s,
                        then its apply rate once unlocked with writes
                        going on, and again with writes stopped, beside
                        its wsrep_apply_capacity read under load; writes
                        drain.json and drain.svg in --dir
  --repeat N            lan: runs of the matrix (default 1)
  --rows N              big-trx: rows of the big table (default 500000)
  --fragments LIST      big-trx: wsrep_trx_fragment_size values in bytes, 0
                        for no streaming (default 0,10000,100000,1000000)

The default run is 2 providers x 8 cells of 5+30 s: about 12 minutes when
both providers run, about 6 while lockstep cannot form a 3-node cluster.
Exit status: 0 when at least one cell was measured, 1 when none was, 2 for
bad arguments.";

/// Entry point called by the `lockstep` binary with the arguments after `bench`.
pub fn main(args: &[String]) -> ExitCode {
    let spec = match parse(args) {
        Ok(Some(spec)) => spec,
        Ok(None) => {
            say(&format!("{USAGE}\n"));
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("lockstep bench: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut spec = spec;
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

fn run_drain(spec: &BenchSpec) -> ExitCode {
    use super::drain;
    run_scenario(spec, "drain", drain::run, |runs, took| {
        (drain::render(runs, took), drain::write_outputs(spec, runs), runs.iter().any(|(_, r)| r.is_ok()))
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

/// The spec, or None for --help. `--flag value` and `--flag=value` both work.
fn parse(args: &[String]) -> Result<Option<BenchSpec>, String> {
    let mut spec = BenchSpec::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        if matches!(flag, "-h" | "--help" | "help") {
            return Ok(None);
        }
        if !flag.starts_with("--") {
            return Err(format!("unexpected argument {flag:?}"));
        }
        if flag == "--keep-data" && inline.is_none() {
            spec.keep_data = true;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => rest
                .next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))?,
        };
        apply(&mut spec, flag, &value)?;
    }
    Ok(Some(spec))
}

fn apply(spec: &mut BenchSpec, flag: &str, value: &str) -> Result<(), String> {
    match flag {
        "--providers" => spec.providers = list(flag, value, |p| Ok(Provider::parse(p)))?,
        "--nodes" => spec.nodes = number(flag, value)?,
        "--tests" => spec.tests = list(flag, value, |t| Ok(t.to_string()))?,
        "--threads" => spec.threads = list(flag, value, |t| number(flag, t))?,
        "--targets" => spec.targets = list(flag, value, Target::parse)?,
        "--time" => spec.time = number(flag, value)?,
        "--warmup" => spec.warmup = number(flag, value)?,
        "--tables" => spec.tables = number(flag, value)?,
        "--table-size" => spec.table_size = number(flag, value)?,
        "--dir" => spec.dir = PathBuf::from(value),
        "--base-port" => spec.base_port = number(flag, value)?,
        "--output" => spec.output = Some(PathBuf::from(value)),
        "--mysqld-option" => spec.mysqld_options.push(value.to_string()),
        "--provider-option" => spec.provider_options.extend(
            value
                .split(';')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(String::from),
        ),
        "--wan-delay-ms" => spec.wan_delay_ms = Some(number(flag, value)?),
        "--segments" => spec.segments = number(flag, value)?,
        "--scenario" => {
            spec.scenario = super::plan::Scenario::parse(value)?;
            scenario_defaults(spec);
        }
        "--repeat" => spec.repeat = number(flag, value)?,
        "--rows" => spec.rows = number(flag, value)?,
        "--fragments" => spec.fragments = list(flag, value, |f| number(flag, f))?,
        _ => return Err(format!("unknown option {flag}")),
    }
    Ok(())
}

/// What a scenario runs unless later options say otherwise.
fn scenario_defaults(spec: &mut BenchSpec) {
    use super::plan::Scenario;
    match spec.scenario {
        Scenario::BigTrx => spec.nodes = 2,
        Scenario::Wan => {
            spec.tests = vec!["oltp_update_index".into()];
            spec.threads = vec![1, 4, 16, 64];
            spec.targets = vec![Target::Node(1)];
            spec.wan_delay_ms = Some(100);
        }
        Scenario::SlowNode => {
            spec.tests = vec!["oltp_read_write".into(), "oltp_update_index".into()];
            spec.threads = vec![16, 64];
            spec.targets = vec![Target::Node(1)];
            spec.wan_delay_ms = Some(7);
        }
        _ => {}
    }
}

fn list<T>(
    flag: &str,
    value: &str,
    item: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let items: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(format!("{flag} needs at least one value"));
    }
    items.into_iter().map(item).collect()
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag} needs a number, not {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn no_arguments_is_the_default_run() {
        assert_eq!(parse(&[]).unwrap(), Some(BenchSpec::default()));
    }

    #[test]
    fn every_option() {
        let spec = parse(&args(
            "--providers galera,/opt/x.so --nodes 5 --threads=1,4 --tests oltp_write_only \
             --targets node2,all --time 10 --warmup 0 --tables 2 --table-size 500 --dir /tmp/b \
             --base-port 29000 --output /tmp/r.txt --mysqld-option wsrep_slave_threads=4 \
             --provider-option gcs.fc_limit=64;evs.send_window=512 --keep-data --wan-delay-ms 7",
        ))
        .unwrap()
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
    fn the_big_transaction_scenario() {
        let spec = parse(&args("--scenario big-trx --rows 1000 --fragments 0,10000")).unwrap().unwrap();
        assert_eq!(spec.scenario, super::super::plan::Scenario::BigTrx);
        assert_eq!((spec.nodes, spec.rows), (2, 1000));
        assert_eq!(spec.fragments, [0, 10_000]);
        assert_eq!(parse(&args("--scenario huge")).unwrap_err(), "scenario must be lan (or cells), wan, slow-node, big-trx, freshness or drain, not \"huge\"");
    }

    #[test]
    fn wan_and_slow_node_set_their_matrix_and_later_options_override_it() {
        use super::super::plan::Scenario;
        let wan = parse(&args("--scenario wan --wan-delay-ms 50")).unwrap().unwrap();
        assert_eq!((wan.scenario, wan.threads.clone(), wan.wan_delay_ms), (Scenario::Wan, vec![1, 4, 16, 64], Some(50)));
        assert_eq!((wan.tests.clone(), wan.targets.clone()), (vec!["oltp_update_index".to_string()], vec![Target::Node(1)]));
        let slow = parse(&args("--scenario slow-node --threads 16")).unwrap().unwrap();
        assert_eq!((slow.threads.clone(), slow.wan_delay_ms, slow.tests.len()), (vec![16], Some(7), 2));
        let lan = parse(&args("--scenario lan --repeat 3")).unwrap().unwrap();
        assert_eq!((lan.scenario, lan.repeat), (Scenario::Cells, 3));
        assert!(parse(&args("--repeat 0")).unwrap().unwrap().validate().is_err());
        assert!(parse(&args("--scenario wan --nodes 1")).unwrap().unwrap().validate().is_err());
        let alone = parse(&args("--scenario big-trx --nodes 1")).unwrap().unwrap().validate().unwrap_err().to_string();
        assert!(alone.contains("--scenario big-trx needs --nodes 2"), "{alone}");
    }

    #[test]
    fn the_freshness_scenario_keeps_three_nodes() {
        let spec = parse(&args("--scenario freshness --time 20")).unwrap().unwrap();
        assert_eq!((spec.scenario, spec.nodes, spec.time), (super::super::plan::Scenario::Freshness, 3, 20));
    }

    #[test]
    fn mistakes_are_named() {
        let err = |text: &str| parse(&args(text)).unwrap_err();
        assert_eq!(err("--nodes"), "--nodes needs a value");
        assert_eq!(
            err("--nodes three"),
            "--nodes needs a number, not \"three\""
        );
        assert_eq!(err("--threads 8,x"), "--threads needs a number, not \"x\"");
        assert_eq!(err("--threads ,"), "--threads needs at least one value");
        assert_eq!(
            err("--targets node1,some"),
            "target must be nodeN or all, not \"some\""
        );
        assert_eq!(err("--frobnicate 1"), "unknown option --frobnicate");
        assert_eq!(err("stray"), "unexpected argument \"stray\"");
        assert_eq!(parse(&args("--time 5 --help")).unwrap(), None);
    }
}
