//! `lockstep cluster up|status|sql|down`: argument parsing and output.
//! Everything real happens in the library ([`Cluster`]); this file only
//! turns arguments into a spec and results into text.

use super::node::Phase;
use super::spec::{ClusterSpec, Provider, DEFAULT_DIR, PORTS_PER_NODE};
use super::{secs, Cluster, QueryResult, Result};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

pub const USAGE: &str = "usage: lockstep cluster <command> [options]

commands:
  up      start a local cluster: node1 bootstraps, the others join by SST one at a time
  status  one line per node: process, wsrep state, queues, flow control
  sql     lockstep cluster sql NODE \"SQL\": run SQL on node NODE (1-based)
  down    stop every node of the cluster (SIGTERM, SIGKILL after a timeout)

options (all commands):
  --dir DIR                 cluster directory (default $LOCKSTEP_CLUSTER_DIR or /tmp/lockstep-cluster)

options (up):
  --nodes N                 number of nodes (default 1)
  --provider P              lockstep (liblockstep.so next to this binary), galera
                            (/usr/lib/galera/libgalera_smm.so), or a library path (default lockstep)
  --base-port P             node N uses P+10(N-1) (client), +1 (gcomm), +2 (IST), +3 (SST),
                            +4 (lockstep's metrics, http://127.0.0.1:PORT/metrics); default 24000
  --name NAME               wsrep_cluster_name (default lockstep)
  --slave-threads N         wsrep_slave_threads (default 2)
  --mysqld-option K=V       extra [mysqld] option for every node (repeatable)
  --provider-option K=V     extra wsrep_provider_options entry, `;` separates several (repeatable)
  --start-timeout SECS      per node, launch to Synced (default 180)

`status` exits 1 unless every node runs and is Synced.";

/// Entry point called by the `lockstep` binary with the arguments after `cluster`.
pub fn main(args: &[String]) -> ExitCode {
    let default_dir = std::env::var_os("LOCKSTEP_CLUSTER_DIR")
        .map(PathBuf::from)
        .unwrap_or(PathBuf::from(DEFAULT_DIR));
    let command = match parse(args, &default_dir) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("lockstep cluster: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lockstep cluster: {e}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Debug, PartialEq)]
enum Command {
    Up(ClusterSpec),
    Status {
        dir: PathBuf,
    },
    Sql {
        dir: PathBuf,
        node: usize,
        sql: String,
    },
    Down {
        dir: PathBuf,
    },
    Help,
}

/// Walks the arguments once; `--flag value` and `--flag=value` both work.
struct Args<'a> {
    rest: std::slice::Iter<'a, String>,
}

impl<'a> Args<'a> {
    /// The next argument, split into flag and inline value.
    fn next(&mut self) -> Option<(&'a str, Option<&'a str>)> {
        let arg = self.rest.next()?;
        match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => Some((flag, Some(value))),
            _ => Some((arg.as_str(), None)),
        }
    }

    fn value(
        &mut self,
        flag: &str,
        inline: Option<&'a str>,
    ) -> std::result::Result<&'a str, String> {
        match inline {
            Some(v) => Ok(v),
            None => self
                .rest
                .next()
                .map(String::as_str)
                .ok_or_else(|| format!("{flag} needs a value")),
        }
    }

    fn number<T: std::str::FromStr>(
        &mut self,
        flag: &str,
        inline: Option<&'a str>,
    ) -> std::result::Result<T, String> {
        let text = self.value(flag, inline)?;
        text.parse()
            .map_err(|_| format!("{flag} needs a number, not {text:?}"))
    }
}

fn parse(args: &[String], default_dir: &std::path::Path) -> std::result::Result<Command, String> {
    let Some((command, rest)) = args.split_first() else {
        return Err("missing command".into());
    };
    let mut spec = ClusterSpec::new(1, Provider::Lockstep, default_dir);
    let mut positional = Vec::new();
    let mut args = Args { rest: rest.iter() };
    while let Some((flag, inline)) = args.next() {
        match flag {
            "--dir" => spec.dir = PathBuf::from(args.value(flag, inline)?),
            "-h" | "--help" => return Ok(Command::Help),
            _ if command == "up" && flag.starts_with("--") => {
                parse_up_flag(&mut spec, &mut args, flag, inline)?
            }
            _ if flag.starts_with("--") => {
                return Err(format!("unknown option {flag} for `{command}`"))
            }
            _ => positional.push(flag.to_string()),
        }
    }
    let dir = spec.dir.clone();
    match (command.as_str(), positional.as_slice()) {
        ("up", []) => Ok(Command::Up(spec)),
        ("status", []) => Ok(Command::Status { dir }),
        ("down", []) => Ok(Command::Down { dir }),
        ("sql", [node, sql]) => Ok(Command::Sql {
            dir,
            node: parse_node(node)?,
            sql: sql.clone(),
        }),
        ("sql", _) => Err("sql needs NODE and \"SQL\"".into()),
        ("help" | "-h" | "--help", _) => Ok(Command::Help),
        ("up" | "status" | "down", extra) => Err(format!("unexpected argument {:?}", extra[0])),
        (other, _) => Err(format!("unknown command {other:?}")),
    }
}

fn parse_up_flag<'a>(
    spec: &mut ClusterSpec,
    args: &mut Args<'a>,
    flag: &str,
    inline: Option<&'a str>,
) -> std::result::Result<(), String> {
    match flag {
        "--nodes" => spec.nodes = args.number(flag, inline)?,
        "--provider" => spec.provider = Provider::parse(args.value(flag, inline)?),
        "--base-port" => spec.base_port = args.number(flag, inline)?,
        "--name" => spec.cluster_name = args.value(flag, inline)?.to_string(),
        "--slave-threads" => spec.slave_threads = args.number(flag, inline)?,
        "--mysqld-option" => spec
            .extra
            .mysqld
            .push(args.value(flag, inline)?.to_string()),
        "--provider-option" => {
            let options = args
                .value(flag, inline)?
                .split(';')
                .map(str::trim)
                .filter(|o| !o.is_empty());
            spec.extra.provider.extend(options.map(String::from));
        }
        "--start-timeout" => spec.start_timeout = Duration::from_secs(args.number(flag, inline)?),
        _ => return Err(format!("unknown option {flag} for `up`")),
    }
    Ok(())
}

fn parse_node(text: &str) -> std::result::Result<usize, String> {
    let digits = text.strip_prefix("node").unwrap_or(text);
    match digits.parse() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "NODE must be a node number (1, 2, ...), not {text:?}"
        )),
    }
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Up(spec) => up(spec),
        Command::Status { dir } => status(&Cluster::open(dir)?),
        Command::Sql { dir, node, sql } => run_sql(&Cluster::open(dir)?, node, &sql),
        Command::Down { dir } => down(&Cluster::open(dir)?),
        Command::Help => {
            say(&format!("{USAGE}\n"));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn up(spec: ClusterSpec) -> Result<ExitCode> {
    let last_port = spec.base_port + spec.nodes as u16 * PORTS_PER_NODE - 6;
    say(&format!(
        "starting {} node(s) in {} (provider {}, ports {}-{last_port})\n",
        spec.nodes,
        spec.dir.display(),
        spec.provider.label(),
        spec.base_port
    ));
    let mut line = ProgressLine::default();
    let cluster = Cluster::up_with_progress(spec, &mut |node, phase| line.show(node, phase));
    line.end();
    let cluster = cluster?;
    // Detach first: nothing after this point may stop the servers (a
    // closed stdout, say, when the output is piped into `head`).
    let text = ready_text(&cluster);
    cluster.detach();
    say(&text);
    Ok(ExitCode::SUCCESS)
}

/// Prints to stdout, ignoring errors: print! panics on a closed pipe.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// Prints `node2: initialising ... starting (pid 1234) ... joining ...
/// Synced in 8.1s` piece by piece, as the milestones happen.
#[derive(Default)]
struct ProgressLine {
    open: bool,
}

impl ProgressLine {
    fn show(&mut self, node: usize, phase: Phase) {
        let text = match phase {
            Phase::Initialising => format!("node{node}: initialising datadir"),
            Phase::Launched { pid } => format!(" ... starting (pid {pid})"),
            Phase::Bootstrapping => " ... bootstrapping".into(),
            Phase::Joining => " ... joining".into(),
            Phase::Synced { elapsed } => format!(" ... Synced in {}\n", secs(elapsed)),
        };
        self.open = !text.ends_with('\n');
        say(&text);
    }

    /// Ends a line an error interrupted.
    fn end(&mut self) {
        if self.open {
            say(" ... failed\n");
        }
        self.open = false;
    }
}

fn ready_text(cluster: &Cluster) -> String {
    let dir = cluster.dir().display();
    let mut text = format!(
        "cluster ready: {} node(s) Synced, provider {}\nconnect:\n",
        cluster.len(),
        cluster.provider_path().display()
    );
    for node in cluster.nodes() {
        let (socket, port) = (node.socket(), node.ports().client);
        text += &format!(
            "  {}  mariadb -S {} -uroot    (or -h127.0.0.1 -P{port})\n",
            node.name(),
            socket.display()
        );
    }
    text += &format!("status:  lockstep cluster status --dir {dir}\n");
    text += &format!("sql:     lockstep cluster sql 1 \"SELECT 1\" --dir {dir}\n");
    text + &format!("stop:    lockstep cluster down --dir {dir}\n")
}

const STATUS_COLUMNS: &[(&str, &str)] = &[
    ("state", "wsrep_local_state_comment"),
    ("cluster", "wsrep_cluster_status"),
    ("size", "wsrep_cluster_size"),
    ("last_committed", "wsrep_last_committed"),
    ("recv_q", "wsrep_local_recv_queue"),
    ("send_q", "wsrep_local_send_queue"),
    ("fc_paused", "wsrep_flow_control_paused"),
    ("ready", "wsrep_ready"),
];

fn status(cluster: &Cluster) -> Result<ExitCode> {
    let mut header = vec!["node".to_string(), "pid".into(), "process".into()];
    header.extend(STATUS_COLUMNS.iter().map(|(h, _)| h.to_string()));
    let mut rows = Vec::new();
    let mut all_synced = true;
    let mut problems = Vec::new();
    for node in cluster.nodes() {
        let pid = node.pid();
        let process = match pid {
            None => "down",
            Some(_) if node.is_frozen() => "frozen",
            Some(_) => "alive",
        };
        let mut row = vec![
            node.name(),
            pid.map_or("-".into(), |p| p.to_string()),
            process.into(),
        ];
        match node.status().ok().filter(|_| pid.is_some()) {
            Some(s) => {
                all_synced &= s.is_synced();
                row.extend(
                    STATUS_COLUMNS
                        .iter()
                        .map(|(_, var)| status_cell(s.get(var))),
                );
            }
            None => {
                all_synced = false;
                row.extend(STATUS_COLUMNS.iter().map(|_| "-".to_string()));
                if pid.is_some() {
                    problems.push(format!(
                        "{}: no answer on {}",
                        node.name(),
                        node.socket().display()
                    ));
                }
            }
        }
        rows.push(row);
    }
    say(&plain_table(&header, &rows));
    for problem in problems {
        say(&format!("{problem}\n"));
    }
    Ok(if all_synced {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Floats (wsrep_flow_control_paused) shortened to 4 decimals.
fn status_cell(value: Option<&str>) -> String {
    match value {
        None => "?".into(),
        Some(v) if v.contains('.') => v
            .parse::<f64>()
            .map(|f| format!("{f:.4}"))
            .unwrap_or_else(|_| v.into()),
        Some(v) => v.into(),
    }
}

fn run_sql(cluster: &Cluster, node: usize, sql: &str) -> Result<ExitCode> {
    if node > cluster.len() {
        return Err(super::Error::msg(format!(
            "node{node} does not exist: the cluster has {} node(s)",
            cluster.len()
        )));
    }
    let results = cluster.node(node).connect()?.query_results(sql)?;
    for result in &results {
        say(&render_result(result));
    }
    Ok(ExitCode::SUCCESS)
}

fn render_result(result: &QueryResult) -> String {
    if result.columns.is_empty() {
        return format!("Query OK, {} row(s) affected\n", result.affected_rows);
    }
    let rows = result.text_rows();
    format!(
        "{}{} row(s)\n",
        boxed_table(&result.columns, &rows),
        rows.len()
    )
}

fn down(cluster: &Cluster) -> Result<ExitCode> {
    let mut failed = false;
    for report in cluster.stop_all() {
        let pid = report.pid.map_or(String::new(), |p| format!(" (pid {p})"));
        match (report.pid, report.result) {
            (None, _) => say(&format!("node{}: not running\n", report.node)),
            (Some(_), Ok(took)) => say(&format!(
                "node{}: stopped{pid} in {}\n",
                report.node,
                secs(took)
            )),
            (Some(_), Err(e)) => {
                failed = true;
                say(&format!("node{}: {e}{pid}\n", report.node));
            }
        }
    }
    say(&format!(
        "data and logs kept in {} (the next `up` there starts afresh)\n",
        cluster.dir().display()
    ));
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn widths(header: &[String], rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths
}

/// Columns separated by two spaces: the status table.
fn plain_table(header: &[String], rows: &[Vec<String>]) -> String {
    let widths = widths(header, rows);
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    std::iter::once(line(header))
        .chain(rows.iter().map(|r| line(r)))
        .collect()
}

/// The mariadb client's boxed table: query results.
fn boxed_table(header: &[String], rows: &[Vec<String>]) -> String {
    let widths = widths(header, rows);
    let rule: String = widths
        .iter()
        .map(|w| format!("+{}", "-".repeat(w + 2)))
        .collect::<String>()
        + "+\n";
    let line = |cells: &[String]| {
        let padded: String = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("| {c:<w$} "))
            .collect();
        padded + "|\n"
    };
    let body: String = rows.iter().map(|r| line(r)).collect();
    format!("{rule}{}{rule}{body}{rule}", line(header))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    fn parse_ok(text: &str) -> Command {
        parse(&args(text), std::path::Path::new("/tmp/default")).unwrap()
    }

    #[test]
    fn up_defaults() {
        let Command::Up(spec) = parse_ok("up") else {
            panic!()
        };
        assert_eq!(
            spec,
            ClusterSpec::new(1, Provider::Lockstep, "/tmp/default")
        );
    }

    #[test]
    fn up_with_everything() {
        let Command::Up(spec) = parse_ok(
            "up --nodes 3 --provider=galera --dir /tmp/c --base-port 24100 --name t --slave-threads 4 \
             --mysqld-option wsrep_sync_wait=1 --provider-option evs.suspect_timeout=PT2S;gcache.size=64M \
             --provider-option=gmcast.segment=0 --start-timeout 30",
        ) else {
            panic!()
        };
        assert_eq!(spec.nodes, 3);
        assert_eq!(spec.provider, Provider::Galera);
        assert_eq!(spec.dir, PathBuf::from("/tmp/c"));
        assert_eq!(spec.base_port, 24100);
        assert_eq!(spec.cluster_name, "t");
        assert_eq!(spec.slave_threads, 4);
        assert_eq!(spec.extra.mysqld, ["wsrep_sync_wait=1"]);
        assert_eq!(
            spec.extra.provider,
            [
                "evs.suspect_timeout=PT2S",
                "gcache.size=64M",
                "gmcast.segment=0"
            ]
        );
        assert_eq!(spec.start_timeout, Duration::from_secs(30));
    }

    #[test]
    fn provider_path() {
        let Command::Up(spec) = parse_ok("up --provider /opt/lib/x.so") else {
            panic!()
        };
        assert_eq!(spec.provider, Provider::Path("/opt/lib/x.so".into()));
    }

    #[test]
    fn other_commands() {
        assert_eq!(
            parse_ok("status"),
            Command::Status {
                dir: "/tmp/default".into()
            }
        );
        assert_eq!(
            parse_ok("down --dir /x"),
            Command::Down { dir: "/x".into() }
        );
        let sql = vec![
            "sql".to_string(),
            "2".into(),
            "SELECT 1, 2".into(),
            "--dir=/x".into(),
        ];
        assert_eq!(
            parse(&sql, std::path::Path::new("/d")).unwrap(),
            Command::Sql {
                dir: "/x".into(),
                node: 2,
                sql: "SELECT 1, 2".into()
            }
        );
        let named = vec!["sql".to_string(), "node3".into(), "SELECT 1".into()];
        assert!(matches!(
            parse(&named, std::path::Path::new("/d")).unwrap(),
            Command::Sql { node: 3, .. }
        ));
        assert_eq!(parse_ok("up --help"), Command::Help);
    }

    #[test]
    fn mistakes_are_explained() {
        let err = |text: &str| parse(&args(text), std::path::Path::new("/d")).unwrap_err();
        assert_eq!(err(""), "missing command");
        assert_eq!(err("up --nodes"), "--nodes needs a value");
        assert_eq!(
            err("up --nodes three"),
            "--nodes needs a number, not \"three\""
        );
        assert_eq!(
            err("status --nodes 3"),
            "unknown option --nodes for `status`"
        );
        assert_eq!(
            err("up --frobnicate"),
            "unknown option --frobnicate for `up`"
        );
        assert_eq!(err("sql 1"), "sql needs NODE and \"SQL\"");
        assert!(err("sql 0 x").starts_with("NODE must be"));
        assert_eq!(err("start"), "unknown command \"start\"");
        assert_eq!(err("down now"), "unexpected argument \"now\"");
    }

    #[test]
    fn tables() {
        let header = vec!["id".to_string(), "name".into()];
        let rows = vec![
            vec!["1".to_string(), "alpha".into()],
            vec!["22".into(), "b".into()],
        ];
        assert_eq!(plain_table(&header, &rows), "id  name\n1   alpha\n22  b\n");
        assert_eq!(
            boxed_table(&header, &rows),
            "+----+-------+\n| id | name  |\n+----+-------+\n| 1  | alpha |\n| 22 | b     |\n+----+-------+\n"
        );
        assert_eq!(status_cell(Some("0.000000")), "0.0000");
        assert_eq!(status_cell(Some("Synced")), "Synced");
        let ok = QueryResult {
            affected_rows: 3,
            ..QueryResult::default()
        };
        assert_eq!(render_result(&ok), "Query OK, 3 row(s) affected\n");
    }
}
