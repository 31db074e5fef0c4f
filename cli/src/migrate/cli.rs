//! `lockstep migrate check|start|follow|switch`: arguments and output; the
//! work is in the module ([`super::start`], [`super::lag`], ...).

use super::{Identity, Migration, Plan, Replication, Source, Step, SwitchOptions};
use crate::cluster::{Cluster, ClusterSpec, Phase, Provider, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    name = "lockstep migrate",
    about = "From a running Galera cluster to a lockstep cluster while the application writes: a mariabackup copy, GTID replication, a checked switch",
    subcommand_required = true,
    arg_required_else_help = true,
    after_help = "A migration: `check`, then `start` (copy, lockstep cluster, replication), `follow` (lag, failover) until the switch, `switch` (writes stop, catch-up, where clients go, then CHECKSUM TABLE of every table in read views of the switch moment). The lockstep cluster is in DIR/cluster: `lockstep cluster status --dir DIR/cluster`."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Say what the source lacks for a migration (binary log, log_slave_updates, wsrep_gtid_mode, ids, the replication user)
    Check(SourceArgs),
    /// Check, copy the first source node, start the lockstep cluster from the copy and replicate into it
    Start(StartArgs),
    /// The lag behind the source, once a second; replication moves when either end fails
    Follow(FollowArgs),
    /// Stop the source's writes (or wait for them to stop), catch up, compare every table, say where clients go
    Switch(SwitchArgs),
}

#[derive(Args, Debug)]
struct SourceArgs {
    /// A Galera node's option file (its my.cnf, as mariabackup reads it);
    /// repeat for the nodes replication may move to. The first is copied.
    #[arg(long = "source-cnf", value_name = "FILE")]
    source_cnf: Vec<PathBuf>,
    /// A `lockstep cluster` directory whose nodes are the sources (node1 first).
    #[arg(long, value_name = "DIR")]
    source_cluster: Option<PathBuf>,
    /// The replication account on the source (REPLICATION SLAVE).
    #[arg(long, value_name = "USER", default_value = "repl")]
    repl_user: String,
    #[arg(long, value_name = "PASSWORD", env = "LOCKSTEP_REPL_PASSWORD", default_value = "")]
    repl_password: String,
    /// The lockstep cluster's server_id: not the source's.
    #[arg(long, value_name = "N", default_value_t = 2)]
    server_id: u32,
    /// The lockstep cluster's GTID domain (wsrep_gtid_domain_id): none the source writes in.
    #[arg(long, value_name = "N", default_value_t = 2)]
    domain_id: u32,
}

impl SourceArgs {
    fn sources(&self) -> Result<Vec<Source>> {
        let mut files = self.source_cnf.clone();
        if let Some(dir) = &self.source_cluster {
            let cluster = Cluster::open(dir)?;
            files.extend(cluster.nodes().map(|n| n.paths().cnf));
        }
        files.iter().map(|f| Source::from_cnf(f)).collect()
    }

    fn replication(&self) -> Replication {
        Replication { user: self.repl_user.clone(), password: self.repl_password.clone() }
    }

    fn identity(&self) -> Identity {
        Identity { server_id: self.server_id, domain_id: self.domain_id }
    }
}

#[derive(Args, Debug)]
struct StartArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// The migration's directory: its state, the copy, the lockstep cluster (DIR/cluster).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Nodes of the lockstep cluster.
    #[arg(long, value_name = "N", default_value_t = 3)]
    nodes: usize,
    /// As `lockstep cluster up --base-port`.
    #[arg(long, value_name = "P", default_value_t = 25000)]
    base_port: u16,
    /// lockstep, or a library path.
    #[arg(long, value_name = "P", default_value = "lockstep")]
    provider: String,
    /// Extra [mysqld] option for every lockstep node (repeatable).
    #[arg(long = "mysqld-option", value_name = "K=V")]
    mysqld_options: Vec<String>,
    /// Extra wsrep_provider_options entry for every lockstep node (repeatable).
    #[arg(long = "provider-option", value_name = "K=V")]
    provider_options: Vec<String>,
}

#[derive(Args, Debug)]
struct FollowArgs {
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// One look, then exit (status 0 when caught up).
    #[arg(long)]
    once: bool,
    /// Exit once the lockstep side has applied everything the source wrote.
    #[arg(long)]
    until_caught_up: bool,
}

#[derive(Args, Debug)]
struct SwitchArgs {
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Make every source node read-only first (clients without READ_ONLY ADMIN cannot write there).
    #[arg(long)]
    read_only: bool,
    /// Afterwards the source follows the lockstep cluster, so that going back loses nothing.
    #[arg(long)]
    reverse: bool,
    /// Seconds to wait for the writes to stop and the catch-up.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    timeout: u64,
}

pub fn run_cli(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Check(args) => check(&args),
        Command::Start(args) => start(args),
        Command::Follow(args) => follow(&args),
        Command::Switch(args) => switch(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lockstep migrate: {e}");
            ExitCode::FAILURE
        }
    }
}

fn check(args: &SourceArgs) -> Result<ExitCode> {
    let sources = args.sources()?;
    let first = sources.first().ok_or_else(|| crate::cluster::Error::msg("name a source: --source-cnf FILE or --source-cluster DIR"))?;
    let facts = super::preflight::check(first, &args.replication(), args.identity())?;
    println!("{}: ready (MariaDB {}, GTID position {}, domains {:?})", first.name(), facts.version, facts.position, facts.domains);
    Ok(ExitCode::SUCCESS)
}

fn start(args: StartArgs) -> Result<ExitCode> {
    let mut spec = ClusterSpec::new(args.nodes, Provider::parse(&args.provider), Migration::cluster_dir(&args.dir)).base_port(args.base_port);
    spec.extra.mysqld = args.mysqld_options;
    spec.extra.provider = args.provider_options;
    let plan = Plan {
        dir: args.dir.clone(),
        sources: args.source.sources()?,
        replication: args.source.replication(),
        identity: args.source.identity(),
        cluster: spec,
    };
    let mut last_copy_line = Instant::now();
    let (_, cluster) = super::start(plan, &mut |step| match step {
        Step::Checked { version, position } => println!("source ready: MariaDB {version}, at {position}"),
        Step::Copying { bytes, of } if last_copy_line.elapsed() >= Duration::from_secs(5) => {
            last_copy_line = Instant::now();
            println!("copying: {} MiB of about {} MiB", bytes >> 20, of >> 20);
        }
        Step::Copying { .. } => {}
        Step::Copied { bytes, took, position } => println!("copied and prepared {} MiB in {:.1}s, at {position}", bytes >> 20, took.as_secs_f64()),
        Step::Node(node, Phase::Synced { elapsed }) => println!("lockstep node{node}: Synced in {:.1}s", elapsed.as_secs_f64()),
        Step::Node(node, Phase::Reseeding) => println!("lockstep node{node}: stopped, datadir copied for the others"),
        Step::Node(..) => {}
        Step::Following { node, source, from } => println!("lockstep node{node} replicates from {source} after {from}"),
    })?;
    cluster.detach();
    println!("follow the lag with `lockstep migrate follow --dir {}`; switch with `lockstep migrate switch --dir {} --read-only`", args.dir.display(), args.dir.display());
    Ok(ExitCode::SUCCESS)
}

fn follow(args: &FollowArgs) -> Result<ExitCode> {
    let mut m = Migration::open(&args.dir)?;
    let cluster = Cluster::open(Migration::cluster_dir(&args.dir))?;
    let mut last: Option<(u64, Instant)> = None;
    loop {
        for action in super::keep_following(&mut m, &cluster)? {
            println!("{action}");
            m.save()?;
        }
        let lag = super::lag(&m, &cluster)?;
        // Transactions applied since the start of the domains' numbering.
        let total = super::Position::default().behind(&lag.applied);
        let rate = last.map(|(n, at)| (total.saturating_sub(n)) as f64 / at.elapsed().as_secs_f64());
        last = Some((total, Instant::now()));
        println!("node{} from {}: {lag}{}", m.replica, m.source().name(), rate.map_or(String::new(), |r| format!(", applying {r:.0}/s")));
        if args.once || (args.until_caught_up && lag.behind == 0) {
            return Ok(if lag.behind == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE });
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn switch(args: &SwitchArgs) -> Result<ExitCode> {
    let m = Migration::open(&args.dir)?;
    let cluster = Cluster::open(Migration::cluster_dir(&args.dir))?;
    let options = SwitchOptions { read_only: args.read_only, reverse: args.reverse, timeout: Duration::from_secs(args.timeout) };
    let done = super::switch(&m, &cluster, &options, &mut |line| println!("{line}"))?;
    println!("switched at {} with the writes paused {:.1}s; clients at {}", done.position, done.waited.as_secs_f64(), done.clients.join(", "));
    Ok(ExitCode::SUCCESS)
}
