//! `lockstep cluster up|status|sql|down`: argument parsing and output.
//! Everything real happens in the library ([`Cluster`]); this file only
//! turns arguments into a spec and results into text.

use super::node::Phase;
use super::spec::{ClusterSpec, ExtraOptions, Provider, DEFAULT_BASE_PORT, DEFAULT_DIR, PORTS_PER_NODE};
use super::{secs, Cluster, QueryResult, Result, ServerVar, StatusVar};
use lockstep_config::Shown;
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `lockstep cluster`'s arguments: a command, and the directory it acts on.
#[derive(Parser, Debug)]
#[command(
    name = "lockstep cluster",
    about = "A local cluster of mariadbd processes on loopback: up, status, sql, down; one node: stop, start, kill, pause, resume, restart",
    subcommand_required = true,
    arg_required_else_help = true,
    after_help = "`status` exits 1 unless every node runs and is Synced."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Cluster directory: its nodes' data, logs, sockets and state file.
    // Global, so that it comes after the command name (`cluster up --dir X`)
    // as it always has; listed first in every command's help.
    #[arg(
        long,
        global = true,
        env = "LOCKSTEP_CLUSTER_DIR",
        default_value = DEFAULT_DIR,
        display_order = 0
    )]
    dir: PathBuf,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start a local cluster: node1 bootstraps, the others join one at a time from a copy of its datadir (IST, no SST)
    Up(UpArgs),
    /// One line per node: process, wsrep state, queues, flow control.
    #[command(after_help = "Exits 1 unless every node runs and is Synced.")]
    Status,
    /// Run SQL on one node and print its results as the mariadb client does.
    Sql {
        /// The node: its number (1-based), or its name (node2).
        #[arg(value_name = "NODE", value_parser = parse_node)]
        node: usize,
        /// The statements, `;` between several.
        #[arg(value_name = "SQL")]
        sql: String,
    },
    /// Stop every node of the cluster (SIGTERM, SIGKILL after a timeout).
    Down,
    /// Stop one node (or all) cleanly (SIGTERM): it leaves the view at once.
    Stop(TargetArg),
    /// Start one stopped node and wait until it is Synced; a crashed one
    /// recovers first, as Debian's mariadb.service does. `all` starts
    /// every stopped node at once, none bootstrapping: how a cluster that
    /// went down together (killed, a power cut) forms its primary
    /// component again.
    Start(TargetArg),
    /// SIGKILL one node (or all), as a crash would.
    Kill(TargetArg),
    /// SIGSTOP one node (or all): a process that stands still (a VM paused, a long GC-like stall).
    Pause(TargetArg),
    /// SIGCONT a paused node (or all), and wait until it is Synced and has
    /// caught up with what the others committed meanwhile.
    Resume(TargetArg),
    /// Stop one node, give it other options (a new build: --mysqld-option
    /// wsrep_provider=PATH), start it and wait until it is Synced: one step
    /// of a rolling upgrade or restart.
    Restart(RestartArgs),
}

#[derive(Args, Debug)]
struct NodeArg {
    /// The node: its number (1-based), or its name (node2).
    #[arg(value_name = "NODE", value_parser = parse_node)]
    node: usize,
}

/// One node, or every node of the cluster.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    One(usize),
    All,
}

#[derive(Args, Debug)]
struct TargetArg {
    /// The node: its number (1-based), its name (node2), or `all`.
    #[arg(value_name = "NODE", value_parser = parse_target)]
    nodes: Target,
}

#[derive(Args, Debug)]
struct RestartArgs {
    #[command(flatten)]
    node: NodeArg,
    /// [mysqld] option for this node from now on (repeatable).
    #[arg(long = "mysqld-option", value_name = "K=V")]
    mysqld_options: Vec<String>,
    /// wsrep_provider_options entry for this node from now on, `;` separates several (repeatable).
    #[arg(long = "provider-option", value_name = "K=V")]
    provider_options: Vec<String>,
}

#[derive(Args, Debug)]
struct UpArgs {
    /// Number of nodes.
    #[arg(long, value_name = "N", default_value_t = 1)]
    nodes: usize,
    /// lockstep (liblockstep.so next to this binary), galera
    /// (/usr/lib/galera/libgalera_smm.so), or a library path.
    #[arg(long, value_name = "P", default_value = "lockstep", value_parser = parse_provider)]
    provider: Provider,
    /// Node N uses P+10(N-1) (client), +1 (gcomm), +2 (IST), +3 (SST),
    /// +4 (lockstep's metrics, http://127.0.0.1:PORT/metrics).
    #[arg(long, value_name = "P", default_value_t = DEFAULT_BASE_PORT)]
    base_port: u16,
    /// wsrep_cluster_name.
    #[arg(long, value_name = "NAME", default_value = "lockstep")]
    name: String,
    /// wsrep_slave_threads.
    #[arg(long, value_name = "N", default_value_t = 2)]
    slave_threads: u32,
    /// Extra [mysqld] option for every node (repeatable).
    #[arg(long = "mysqld-option", value_name = "K=V")]
    mysqld_options: Vec<String>,
    /// Extra wsrep_provider_options entry, `;` separates several (repeatable).
    #[arg(long = "provider-option", value_name = "K=V")]
    provider_options: Vec<String>,
    /// Seconds per node from launch to Synced.
    #[arg(long, value_name = "SECS", default_value_t = 180)]
    start_timeout: u64,
}

impl UpArgs {
    /// The cluster these arguments describe, in `dir`.
    fn spec(self, dir: PathBuf) -> ClusterSpec {
        let mut spec = ClusterSpec::new(self.nodes, self.provider, dir);
        spec.base_port = self.base_port;
        spec.cluster_name = self.name;
        spec.slave_threads = self.slave_threads;
        spec.extra.mysqld = self.mysqld_options;
        spec.extra.provider = split_provider_options(&self.provider_options);
        spec.start_timeout = Duration::from_secs(self.start_timeout);
        spec
    }
}

/// `a=1;b=2` given once is two entries, as in wsrep_provider_options itself.
fn split_provider_options(given: &[String]) -> Vec<String> {
    given
        .iter()
        .flat_map(|o| o.split(';'))
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(String::from)
        .collect()
}

fn parse_provider(text: &str) -> std::result::Result<Provider, String> {
    Ok(Provider::parse(text))
}

fn parse_target(text: &str) -> std::result::Result<Target, String> {
    match text {
        "all" => Ok(Target::All),
        _ => parse_node(text).map(Target::One).map_err(|e| format!("{e}, or all")),
    }
}

fn parse_node(text: &str) -> std::result::Result<usize, String> {
    let digits = text.strip_prefix("node").unwrap_or(text);
    match digits.parse() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("NODE must be a node number (1, 2, ...) or name (node2)".into()),
    }
}

pub fn run_cli(cli: Cli) -> ExitCode {
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lockstep cluster: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let dir = cli.dir;
    match cli.command {
        Command::Up(up_args) => up(up_args.spec(dir)),
        Command::Status => status(&Cluster::open(dir)?),
        Command::Sql { node, sql } => run_sql(&Cluster::open(dir)?, node, &sql),
        Command::Down => down(&Cluster::open(dir)?),
        Command::Stop(t) => each_node(&Cluster::open(dir)?, t.nodes, "stopped", |node| node.stop()),
        Command::Start(t) => start(&Cluster::open(dir)?, t.nodes),
        Command::Kill(t) => each_node(&Cluster::open(dir)?, t.nodes, "killed", |node| node.kill()),
        Command::Pause(t) => each_node(&Cluster::open(dir)?, t.nodes, "paused", |node| node.freeze()),
        Command::Resume(t) => resume(&Cluster::open(dir)?, t.nodes),
        Command::Restart(r) => {
            let extra = ExtraOptions { mysqld: r.mysqld_options, provider: split_provider_options(&r.provider_options) };
            one_node(&Cluster::open(dir)?, r.node.node, "restarted and Synced", |node| {
                node.stop()?;
                node.reconfigure(&extra)?;
                node.start()
            })
        }
    }
}

/// Runs `act` on each target node in turn, as [`one_node`] does.
fn each_node(cluster: &Cluster, target: Target, done: &str, act: impl Fn(super::Node) -> Result<()>) -> Result<ExitCode> {
    for index in targets(cluster, target)? {
        one_node(cluster, index, done, &act)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn targets(cluster: &Cluster, target: Target) -> Result<Vec<usize>> {
    match target {
        Target::One(index) => existing(cluster, index).map(|n| vec![n.index()]),
        Target::All => Ok((1..=cluster.len()).collect()),
    }
}

/// One node starts as `Node::start` does (it bootstraps when it is alone);
/// `all` starts every stopped node together as members, since each of a
/// cluster that went down at once waits for the others to recover.
fn start(cluster: &Cluster, target: Target) -> Result<ExitCode> {
    let Target::All = target else {
        return each_node(cluster, target, "Synced", |node| node.start());
    };
    let started = std::time::Instant::now();
    let running = cluster.running_nodes();
    let stopped: Vec<usize> = (1..=cluster.len()).filter(|n| !running.contains(n)).collect();
    if let Some(first) = cluster.start_members(&stopped, false).into_iter().next() {
        return Err(super::Error::msg(first));
    }
    for n in &stopped {
        say(&format!("node{n}: Synced ({})\n", secs(started.elapsed())));
    }
    Ok(ExitCode::SUCCESS)
}

/// SIGCONT to every target first (a node waiting while the others still
/// stand still may never see a majority), then waits until each is
/// Synced and has committed what the nodes that ran committed meanwhile:
/// before that its answers may be errors (a node paused for long goes
/// non-Primary, or was evicted and joins again) or stale.
fn resume(cluster: &Cluster, target: Target) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let nodes = targets(cluster, target)?;
    let committed = cluster
        .nodes()
        .filter(|n| !nodes.contains(&n.index()) && n.is_running() && !n.is_frozen())
        .filter_map(|n| n.status().ok()?.int(StatusVar::LastCommitted))
        .max();
    for &index in &nodes {
        cluster.node(index).thaw()?;
    }
    let deadline = started + cluster.spec().start_timeout;
    let what = format!("Synced, committed up to {}", committed.unwrap_or(0));
    for index in nodes {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        cluster.node(index).wait_until(&what, left, |s| s.is_synced() && s.int(StatusVar::LastCommitted) >= committed)?;
        say(&format!("node{index}: resumed, Synced and caught up ({})\n", secs(started.elapsed())));
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `act` on node `index`, saying `done` when it returns; the servers
/// keep running when this command exits.
fn one_node(cluster: &Cluster, index: usize, done: &str, act: impl Fn(super::Node) -> Result<()>) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    act(existing(cluster, index)?)?;
    say(&format!("node{index}: {done} ({})\n", secs(started.elapsed())));
    Ok(ExitCode::SUCCESS)
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
            Phase::Reseeding => format!("node{node}: stopped, datadir copied for the others"),
            Phase::Seeded => format!("node{node}: datadir copied from node1"),
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

/// The columns of `status`: a header and the variable, as `SHOW STATUS`
/// names it.
fn status_columns() -> [(&'static str, String); 8] {
    [
        ("state", StatusVar::LocalStateComment.shown()),
        ("cluster", ServerVar::ClusterStatus.shown()),
        ("size", ServerVar::ClusterSize.shown()),
        ("last_committed", StatusVar::LastCommitted.shown()),
        ("recv_q", StatusVar::LocalRecvQueue.shown()),
        ("send_q", StatusVar::LocalSendQueue.shown()),
        ("fc_paused", StatusVar::FlowControlPaused.shown()),
        ("ready", ServerVar::Ready.shown()),
    ]
}

fn status(cluster: &Cluster) -> Result<ExitCode> {
    let columns = status_columns();
    let mut header = vec!["node".to_string(), "pid".into(), "process".into()];
    header.extend(columns.iter().map(|(h, _)| h.to_string()));
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
                    columns
                        .iter()
                        .map(|(_, var)| status_cell(s.get(var.as_str()))),
                );
            }
            None => {
                all_synced = false;
                row.extend(columns.iter().map(|_| "-".to_string()));
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
    let results = existing(cluster, node)?.connect()?.query_results(sql)?;
    for result in &results {
        say(&render_result(result));
    }
    Ok(ExitCode::SUCCESS)
}

/// Node `index` of the cluster, or why there is none.
fn existing(cluster: &Cluster, index: usize) -> Result<super::Node<'_>> {
    if index > cluster.len() {
        return Err(super::Error::msg(format!(
            "node{index} does not exist: the cluster has {} node(s)",
            cluster.len()
        )));
    }
    Ok(cluster.node(index))
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

    fn try_parse(args: &[&str]) -> std::result::Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("lockstep cluster").chain(args.iter().copied()))
    }

    /// `args` split on spaces, with an explicit `--dir` unless it has one,
    /// so that LOCKSTEP_CLUSTER_DIR in the test's environment cannot matter.
    fn parse_ok(text: &str) -> Cli {
        let mut args: Vec<&str> = text.split_whitespace().collect();
        if !args.iter().any(|a| a.starts_with("--dir")) {
            args.extend(["--dir", "/tmp/default"]);
        }
        try_parse(&args).unwrap()
    }

    fn up_spec(text: &str) -> ClusterSpec {
        let cli = parse_ok(text);
        let Command::Up(up_args) = cli.command else {
            panic!("{cli:?}")
        };
        up_args.spec(cli.dir)
    }

    #[test]
    fn up_defaults() {
        assert_eq!(
            up_spec("up"),
            ClusterSpec::new(1, Provider::Lockstep, "/tmp/default")
        );
    }

    #[test]
    fn up_with_everything() {
        let spec = up_spec(
            "up --nodes 3 --provider=galera --dir /tmp/c --base-port 24100 --name t --slave-threads 4 \
             --mysqld-option wsrep_sync_wait=1 --provider-option evs.suspect_timeout=PT2S;gcache.size=64M \
             --provider-option=gmcast.segment=0 --start-timeout 30",
        );
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
        let spec = up_spec("up --provider /opt/lib/x.so");
        assert_eq!(spec.provider, Provider::Path("/opt/lib/x.so".into()));
    }

    #[test]
    fn other_commands() {
        let status = parse_ok("status");
        assert!(matches!(status.command, Command::Status));
        assert_eq!(status.dir, PathBuf::from("/tmp/default"));
        let down = parse_ok("down --dir /x");
        assert!(matches!(down.command, Command::Down));
        assert_eq!(down.dir, PathBuf::from("/x"));
        let sql = try_parse(&["sql", "2", "SELECT 1, 2", "--dir=/x"]).unwrap();
        assert_eq!(sql.dir, PathBuf::from("/x"));
        let Command::Sql { node, sql } = sql.command else {
            panic!()
        };
        assert_eq!((node, sql.as_str()), (2, "SELECT 1, 2"));
        let named = try_parse(&["sql", "node3", "SELECT 1", "--dir", "/x"]).unwrap();
        assert!(matches!(named.command, Command::Sql { node: 3, .. }));
        assert!(matches!(parse_ok("pause node2").command, Command::Pause(TargetArg { nodes: Target::One(2) })));
        assert!(matches!(parse_ok("kill 1").command, Command::Kill(TargetArg { nodes: Target::One(1) })));
        assert!(matches!(parse_ok("kill all").command, Command::Kill(TargetArg { nodes: Target::All })));
        assert!(matches!(parse_ok("start all").command, Command::Start(TargetArg { nodes: Target::All })));
        let every = try_parse(&["resume", "every"]).unwrap_err().to_string();
        assert!(every.contains("or all"), "{every}");
        let Command::Restart(restart) = parse_ok("restart 3 --mysqld-option wsrep_provider=/n.so --provider-option a=1;b=2").command else {
            panic!()
        };
        assert_eq!((restart.node.node, &restart.mysqld_options[..]), (3, &["wsrep_provider=/n.so".to_string()][..]));
        assert!(try_parse(&["stop", "0", "--dir", "/x"]).is_err());
        // Before the command works too, and the default does not undo it.
        assert_eq!(
            try_parse(&["--dir", "/y", "down"]).unwrap().dir,
            PathBuf::from("/y")
        );
    }

    #[test]
    fn help_is_not_an_error() {
        for args in [
            &["--help"][..],
            &["help"],
            &["up", "--help"],
            &["help", "sql"],
        ] {
            let e = try_parse(args).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "{args:?}");
        }
    }

    /// The argument lists scripts/, cli/tests/command.rs, README.md and the
    /// text `up` prints use (words split on spaces, SQL apart).
    #[test]
    fn callers_parse() {
        let calls = [
            "down --dir /d",
            "up --dir /d --nodes 3 --provider lockstep --base-port 26100 --slave-threads 4 \
             --mysqld-option innodb_flush_log_at_trx_commit=2 --provider-option gcs.fc_limit=16;lockstep.max_lag_ms=500",
            "up --dir /d --nodes 3 --slave-threads 4 --provider galera \
             --mysqld-option innodb_flush_log_at_trx_commit=2 --base-port 25000",
            "up --nodes 1 --provider lockstep --base-port 24005 --dir /d",
            "up --nodes 3 --provider galera --dir /d",
            "up --nodes 3",
            "up",
            "status --dir /d",
            "status",
            "down",
        ];
        for text in calls {
            let args: Vec<&str> = text.split_whitespace().collect();
            try_parse(&args).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
        let sql = "INSERT INTO d.t VALUES (7); SELECT a FROM d.t";
        try_parse(&["sql", "1", sql, "--dir", "/d"]).unwrap();
        try_parse(&["sql", "1", "SELECT 1"]).unwrap();
        let spec = up_spec("up --provider-option gcs.fc_limit=16;lockstep.max_lag_ms=500");
        assert_eq!(
            spec.extra.provider,
            ["gcs.fc_limit=16", "lockstep.max_lag_ms=500"]
        );
    }

    #[test]
    fn mistakes_are_errors() {
        for args in [
            &[][..],
            &["up", "--nodes"],
            &["up", "--nodes", "three"],
            &["status", "--nodes", "3"],
            &["up", "--frobnicate"],
            &["sql", "1"],
            &["sql", "0", "x"],
            &["sql", "nodex", "x"],
            &["start"],
            &["down", "now"],
            &["--dir"],
        ] {
            assert!(try_parse(args).is_err(), "{args:?} parsed");
        }
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
