//! Running sysbench 1.0 and reading its report.
//!
//! sysbench is the load generator Galera users benchmark with, so numbers
//! from it compare with what they already know. Its report is text meant
//! for people; [`parse`] reads the few lines the benchmark needs and
//! ignores the rest (the periodic `[ 5s ] thds: ...` lines, banners).

use crate::cluster::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(100);

/// What one `sysbench ... run` reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SysbenchResult {
    /// Events per second. For oltp_* tests an event is one transaction
    /// (oltp_update_index: one autocommit UPDATE).
    pub tps: f64,
    pub transactions: u64,
    /// The percentile sysbench was asked for (95) in milliseconds.
    pub p95_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    /// Errors sysbench ignored and retried: 1213 deadlock (a lost
    /// certification or a brute-force abort), 1205, 1020.
    pub errors_per_s: f64,
    pub reconnects_per_s: f64,
    /// `total time:` as measured by sysbench.
    pub seconds: f64,
}

/// Reads sysbench's final report. The error says what was missing and
/// carries any `FATAL:` lines, which say why.
pub fn parse(text: &str) -> std::result::Result<SysbenchResult, String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        // Interim reports repeat labels like `lat (ms,95%)`: never read them.
        .filter(|l| !l.starts_with('['))
        .collect();
    let fatal: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("FATAL:"))
        .collect();
    let missing = |what: &str| {
        let mut message = format!("sysbench printed no {what}");
        if !fatal.is_empty() {
            message.push_str(": ");
            message.push_str(&fatal.join(" / "));
        }
        message
    };
    let line = |label: &str| lines.iter().find_map(|l| l.strip_prefix(label));
    let transactions = line("transactions:").ok_or_else(|| missing("transaction count"))?;
    let latency = |label: &str| line(label).and_then(first_number);
    Ok(SysbenchResult {
        tps: per_second(transactions).ok_or_else(|| missing("transaction rate"))?,
        transactions: first_number(transactions).unwrap_or(0.0) as u64,
        p95_ms: percentile(&lines).ok_or_else(|| missing("latency percentile"))?,
        avg_ms: latency("avg:").unwrap_or(f64::NAN),
        max_ms: latency("max:").unwrap_or(f64::NAN),
        errors_per_s: line("ignored errors:").and_then(per_second).unwrap_or(0.0),
        reconnects_per_s: line("reconnects:").and_then(per_second).unwrap_or(0.0),
        seconds: line("total time:")
            .and_then(|t| first_number(t.trim().trim_end_matches('s')))
            .unwrap_or(f64::NAN),
    })
}

/// `95th percentile:   6.21` (the ordinal follows --percentile).
fn percentile(lines: &[&str]) -> Option<f64> {
    lines
        .iter()
        .find_map(|l| l.split_once("th percentile:").map(|(_, v)| v))
        .and_then(first_number)
}

/// `23787  (2377.25 per sec.)` -> 2377.25
fn per_second(text: &str) -> Option<f64> {
    let (_, rest) = text.split_once('(')?;
    let (number, _) = rest.split_once("per sec")?;
    number.trim().parse().ok()
}

fn first_number(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// One sysbench command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// A test name sysbench resolves (`oltp_update_index`) or a .lua path.
    pub test: String,
    /// `prepare` or `run`.
    pub command: &'static str,
    /// sysbench spreads connections round-robin over this list: thread i
    /// talks to socket i mod len.
    pub sockets: Vec<PathBuf>,
    pub threads: u32,
    pub seconds: u32,
    pub tables: u32,
    pub table_size: u64,
}

impl Invocation {
    pub fn args(&self) -> Vec<String> {
        let sockets: Vec<String> = self
            .sockets
            .iter()
            .map(|s| s.display().to_string())
            .collect();
        let mut args = vec![
            self.test.clone(),
            "--db-driver=mysql".into(),
            format!("--mysql-socket={}", sockets.join(",")),
            // Root without password: how the launcher initialises nodes.
            "--mysql-user=root".into(),
            "--mysql-db=sbtest".into(),
            format!("--tables={}", self.tables),
            format!("--table-size={}", self.table_size),
            // Galera's wsrep_auto_increment_control makes AUTO_INCREMENT
            // step by the cluster size, so ids 1..N would be only a third
            // present and two thirds of the UPDATEs would match no row.
            "--auto-inc=off".into(),
            format!("--threads={}", self.threads),
        ];
        if self.command == "run" {
            args.extend([
                format!("--time={}", self.seconds),
                "--percentile=95".into(),
                // Kept in the raw output: shows stalls the average hides.
                "--report-interval=5".into(),
            ]);
        }
        args.push(self.command.into());
        args
    }

    /// `args()` with another percentile and interim-report interval (a
    /// run's shape over time, by the second).
    pub fn args_with(&self, percentile: u32, report_secs: u32) -> Vec<String> {
        self.args()
            .into_iter()
            .map(|a| match a {
                a if a.starts_with("--percentile=") => format!("--percentile={percentile}"),
                a if a.starts_with("--report-interval=") => format!("--report-interval={report_secs}"),
                a => a,
            })
            .collect()
    }

    /// Runs sysbench with stdout and stderr into `log`; kills it at
    /// `timeout`. Returns what it printed; fails when it exits non-zero.
    pub fn run(&self, log: &Path, timeout: Duration) -> Result<String> {
        self.run_args(&self.args(), log, timeout)
    }

    /// `run` with `args` (from `args` or `args_with`).
    pub fn run_args(&self, args: &[String], log: &Path, timeout: Duration) -> Result<String> {
        let mut child = spawn(args, log)?;
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| Error::io("waiting for sysbench", e))?
            {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Timeout(format!(
                    "sysbench {} {} did not finish within {}s (killed; output in {})",
                    self.test,
                    self.command,
                    timeout.as_secs(),
                    log.display()
                )));
            }
            std::thread::sleep(POLL);
        };
        let text = std::fs::read_to_string(log)
            .map_err(|e| Error::io(format!("reading {}", log.display()), e))?;
        if status.success() {
            return Ok(text);
        }
        Err(Error::msg(format!(
            "sysbench {} {} failed ({status}): {} (output in {})",
            self.test,
            self.command,
            fatal_summary(&text),
            log.display()
        )))
    }
}

/// Starts sysbench with `args`, stdout and stderr into `log`.
pub fn spawn(args: &[String], log: &Path) -> Result<std::process::Child> {
    let file = std::fs::File::create(log).map_err(|e| Error::io(format!("creating {}", log.display()), e))?;
    let file_err = file.try_clone().map_err(|e| Error::io("duplicating a log file handle", e))?;
    Command::new("sysbench")
        .args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(file_err)
        .spawn()
        .map_err(|e| Error::io("starting sysbench (is the sysbench package installed?)", e))
}

/// sysbench's interim `[ 12s ] thds: 8 tps: 7997.04 ... lat (ms,99%): 3.2
/// ...` lines: (second, tps, latency percentile in ms) by second.
pub fn interim(text: &str) -> Vec<(u64, f64, f64)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('[')?;
            let (secs, rest) = rest.split_once("s ]")?;
            let number = |label: &str| rest.split_once(label)?.1.split_whitespace().next()?.parse::<f64>().ok();
            let latency = rest.split_once("%):").and_then(|(_, v)| v.split_whitespace().next()?.parse().ok());
            Some((secs.trim().parse().ok()?, number("tps:")?, latency.unwrap_or(f64::NAN)))
        })
        .collect()
}

/// The first FATAL lines, or the last lines when there are none.
fn fatal_summary(text: &str) -> String {
    let fatal: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("FATAL:"))
        .take(3)
        .collect();
    if !fatal.is_empty() {
        return fatal.join(" / ");
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// `args` with the clients offering `rate` transactions a second in all
/// (sysbench --rate); 0 leaves them as fast as they go.
pub fn at_rate(mut args: Vec<String>, rate: u32) -> Vec<String> {
    if rate > 0 {
        // Before the command word, which sysbench wants last.
        args.insert(args.len() - 1, format!("--rate={rate}"));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real outputs of sysbench 1.0.20 (Debian) against a 3-node Galera
    // cluster on this machine.
    const UPDATE_INDEX: &str = include_str!("fixtures/update_index_node1_8.txt");
    const WRITE_ONLY_ALL: &str = include_str!("fixtures/write_only_all_32.txt");
    const INTERVALS: &str = include_str!("fixtures/update_index_node1_32_intervals.txt");
    const CONNECT_FAILURE: &str = include_str!("fixtures/connect_failure.txt");

    #[test]
    fn reads_a_single_node_report() {
        let r = parse(UPDATE_INDEX).unwrap();
        assert_eq!(r.tps, 2377.25);
        assert_eq!(r.transactions, 23787);
        assert_eq!(r.p95_ms, 6.21);
        assert_eq!(r.avg_ms, 3.36);
        assert_eq!(r.max_ms, 56.09);
        assert_eq!(r.errors_per_s, 0.0);
        assert_eq!(r.reconnects_per_s, 0.0);
        assert_eq!(r.seconds, 10.0049);
    }

    #[test]
    fn reads_ignored_errors_of_a_multi_node_run() {
        let r = parse(WRITE_ONLY_ALL).unwrap();
        assert_eq!(r.tps, 789.93);
        assert_eq!(r.transactions, 7946);
        assert_eq!(r.p95_ms, 112.67);
        assert_eq!(r.errors_per_s, 216.22);
    }

    #[test]
    fn interim_reports_do_not_confuse_it() {
        let r = parse(INTERVALS).unwrap();
        assert!(INTERVALS.contains("[ 2s ] thds: 32 tps: 2731.33"));
        assert!(r.tps > 2000.0 && r.tps < 3000.0, "{r:?}");
        assert!(r.p95_ms > 0.0);
    }

    #[test]
    fn a_failed_run_says_why() {
        let err = parse(CONNECT_FAILURE).unwrap_err();
        assert!(err.contains("no transaction count"), "{err}");
        assert!(err.contains("Can't connect to local server"), "{err}");
        assert!(fatal_summary(CONNECT_FAILURE).starts_with("FATAL: unable to connect"));
        assert!(parse("").is_err());
    }

    #[test]
    fn other_percentiles_and_odd_spacing() {
        let text = "    transactions: 10 (1.50 per sec.)\n   99th percentile:   7.5\n";
        let r = parse(text).unwrap();
        assert_eq!((r.tps, r.p95_ms), (1.5, 7.5));
        assert!(r.avg_ms.is_nan());
    }

    #[test]
    fn command_line() {
        let inv = Invocation {
            test: "oltp_write_only".into(),
            command: "run",
            sockets: vec!["/d/node1/s".into(), "/d/node2/s".into()],
            threads: 32,
            seconds: 30,
            tables: 8,
            table_size: 10000,
        };
        let args = inv.args();
        assert_eq!(args.first().unwrap(), "oltp_write_only");
        assert_eq!(args.last().unwrap(), "run");
        for expected in [
            "--mysql-socket=/d/node1/s,/d/node2/s",
            "--threads=32",
            "--time=30",
            "--tables=8",
            "--table-size=10000",
            "--auto-inc=off",
            "--percentile=95",
        ] {
            assert!(args.iter().any(|a| a == expected), "{expected} in {args:?}");
        }
        let prepare = Invocation {
            command: "prepare",
            ..inv
        }
        .args();
        assert!(!prepare.iter().any(|a| a.starts_with("--time")));
    }

    #[test]
    fn a_rate_goes_before_the_command_word() {
        let args = vec!["oltp_update_index".to_string(), "--threads=8".into(), "run".into()];
        assert_eq!(at_rate(args.clone(), 0), args);
        assert_eq!(at_rate(args, 1500), ["oltp_update_index", "--threads=8", "--rate=1500", "run"]);
    }
}
