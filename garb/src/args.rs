//! garbd's command line and `--cfg` file, as Galera's garbd reads them:
//! the command line wins over the file, and the file holds the long option
//! names (`address = gcomm://...`). The file may also be Debian's
//! `/etc/default/garb` (GALERA_NODES, GALERA_GROUP, GALERA_OPTIONS,
//! LOG_FILE, WORK_DIR), which garb.service otherwise turns into options.

use clap::Parser;
use lockstep::arbitrator::ArbitratorConfig;

#[derive(Parser, Debug, Default)]
#[command(name = "garbd", about = "lockstep's arbitrator: a voting member of the cluster that keeps no data", disable_version_flag = true)]
struct Cli {
    /// Become a daemon
    #[arg(short = 'd', long)]
    daemon: bool,
    /// Node name (default: garb)
    #[arg(short = 'n', long)]
    name: Option<String>,
    /// Group address: gcomm://host[:port],...
    #[arg(short = 'a', long)]
    address: Option<String>,
    /// Group name (the members' wsrep_cluster_name)
    #[arg(short = 'g', long)]
    group: Option<String>,
    /// SST request string (only the default, trivial, is supported)
    #[arg(long)]
    sst: Option<String>,
    /// SST donor name
    #[arg(long)]
    donor: Option<String>,
    /// Provider option list (gmcast.listen_addr, base_port, socket.ssl_*, pc.weight, ...)
    #[arg(short = 'o', long)]
    options: Option<String>,
    /// Log file (default: standard error, syslog for a daemon)
    #[arg(short = 'l', long)]
    log: Option<String>,
    /// Daemon working directory
    #[arg(short = 'w', long)]
    workdir: Option<String>,
    /// Configuration file
    #[arg(short = 'c', long)]
    cfg: Option<String>,
    /// Print version & exit
    #[arg(short = 'v', long)]
    version: bool,
    /// Group address, as --address
    #[arg(value_name = "group address")]
    positional: Option<String>,
}

/// What the process runs with.
#[derive(Debug, Default)]
pub struct Args {
    pub arbitrator: ArbitratorConfig,
    pub daemon: bool,
    pub log: Option<String>,
    pub workdir: Option<String>,
}

impl Args {
    /// The process's arguments; None when it only printed help or version.
    pub fn parse_all() -> Result<Option<Args>, String> {
        let cli = match Cli::try_parse() {
            Ok(c) => c,
            Err(e) if !e.use_stderr() => {
                let _ = e.print();
                return Ok(None);
            }
            Err(e) => return Err(e.to_string().trim_end().to_string()),
        };
        if cli.version {
            println!("garbd (lockstep) {}", env!("CARGO_PKG_VERSION"));
            return Ok(None);
        }
        let file = match &cli.cfg {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("Failed to open configuration file '{}' for reading: {}", path, e))?;
                from_file(&text).map_err(|e| format!("{}: {}", path, e))?
            }
            None => Cli::default(),
        };
        merge(cli, file).map(Some)
    }
}

/// The command line first, the file for what it leaves out.
fn merge(cli: Cli, file: Cli) -> Result<Args, String> {
    let address = cli.address.or(cli.positional).or(file.address).ok_or("Group address not specified")?;
    let group = cli.group.or(file.group).ok_or("Group name not specified")?;
    let sst = cli.sst.or(file.sst).unwrap_or_else(|| "trivial".into());
    if sst != "trivial" {
        return Err(format!("--sst '{}': this garbd joins with the trivial state transfer only; take backups with mariabackup on a data node", sst));
    }
    Ok(Args {
        arbitrator: ArbitratorConfig {
            name: cli.name.or(file.name).unwrap_or_else(|| "garb".into()),
            address,
            group,
            options: cli.options.or(file.options).unwrap_or_default(),
        },
        daemon: cli.daemon || file.daemon,
        log: cli.log.or(file.log),
        workdir: cli.workdir.or(file.workdir),
    })
}

/// `key = value` lines; `#` starts a comment line; one pair of quotes
/// around a value is dropped (as garbd does, and as the shell does for
/// /etc/default/garb).
fn from_file(text: &str) -> Result<Cli, String> {
    let mut c = Cli::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').ok_or_else(|| format!("line {}: expected key = value", n + 1))?;
        let value = unquote(value.trim()).to_string();
        let slot = match key.trim() {
            "address" | "a" => &mut c.address,
            "GALERA_NODES" => {
                c.address = Some(nodes_address(&value));
                continue;
            }
            "group" | "g" | "GALERA_GROUP" => &mut c.group,
            "name" | "n" => &mut c.name,
            "sst" => &mut c.sst,
            "donor" => &mut c.donor,
            "options" | "o" | "GALERA_OPTIONS" => &mut c.options,
            "log" | "l" | "LOG_FILE" => &mut c.log,
            "workdir" | "w" | "WORK_DIR" => &mut c.workdir,
            "daemon" | "d" => {
                c.daemon = matches!(value.to_ascii_lowercase().as_str(), "" | "1" | "yes" | "true" | "on");
                continue;
            }
            // garb-systemd reads it and never passes it on.
            "GALERA_PORT" => continue,
            other => return Err(format!("line {}: unknown option '{}'", n + 1, other)),
        };
        *slot = Some(value);
    }
    Ok(c)
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// GALERA_NODES: `host[:port]` separated by spaces or commas, as
/// garb-systemd makes `gcomm://a,b` of it.
fn nodes_address(nodes: &str) -> String {
    let list: Vec<&str> = nodes.split([' ', ',']).filter(|s| !s.is_empty()).collect();
    match list.first() {
        Some(first) if first.contains("://") => list.join(","),
        _ => format!("gcomm://{}", list.join(",")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str], file: &str) -> Result<Args, String> {
        let cli = Cli::try_parse_from(std::iter::once("garbd").chain(argv.iter().copied())).map_err(|e| e.to_string())?;
        merge(cli, from_file(file)?)
    }

    #[test]
    fn the_mtr_command_line_is_understood() {
        let a = parse(&["--address", "gcomm://127.0.0.1:16000", "--group", "my_wsrep_cluster", "--options", "base_port=16012"], "").unwrap();
        assert_eq!(a.arbitrator.address, "gcomm://127.0.0.1:16000");
        assert_eq!(a.arbitrator.group, "my_wsrep_cluster");
        assert_eq!(a.arbitrator.options, "base_port=16012");
        assert_eq!(a.arbitrator.name, "garb");
        assert!(!a.daemon);
    }

    #[test]
    fn the_command_line_wins_over_the_file() {
        let file = "# garbd.cfg\naddress = \"gcomm://10.0.0.1:4567\"\ngroup=prod\nname = arb1\ndaemon = yes\n";
        let a = parse(&["-g", "test", "-l", "/var/log/garbd.log"], file).unwrap();
        assert_eq!((a.arbitrator.address.as_str(), a.arbitrator.group.as_str(), a.arbitrator.name.as_str()), ("gcomm://10.0.0.1:4567", "test", "arb1"));
        assert_eq!(a.log.as_deref(), Some("/var/log/garbd.log"));
        assert!(a.daemon);
        let positional = parse(&["gcomm://10.0.0.9"], file).unwrap();
        assert_eq!(positional.arbitrator.address, "gcomm://10.0.0.9");
    }

    #[test]
    fn debians_default_file_is_understood() {
        let file = "GALERA_NODES=\"10.0.0.1:4567 10.0.0.2:4567\"\nGALERA_GROUP=\"prod\"\nGALERA_OPTIONS='pc.weight=2'\nLOG_FILE=/var/log/garbd.log\nWORK_DIR=/var/lib/garb\n# GALERA_PORT=\"\"\nGALERA_PORT=4567\n";
        let a = parse(&[], file).unwrap();
        assert_eq!(a.arbitrator.address, "gcomm://10.0.0.1:4567,10.0.0.2:4567");
        assert_eq!((a.arbitrator.group.as_str(), a.arbitrator.options.as_str()), ("prod", "pc.weight=2"));
        assert_eq!((a.log.as_deref(), a.workdir.as_deref()), (Some("/var/log/garbd.log"), Some("/var/lib/garb")));
    }

    #[test]
    fn what_is_missing_or_unknown_is_named() {
        assert_eq!(parse(&["-g", "x"], "").unwrap_err(), "Group address not specified");
        assert_eq!(parse(&["-a", "gcomm://h"], "").unwrap_err(), "Group name not specified");
        assert!(parse(&[], "adress = gcomm://h\n").unwrap_err().contains("unknown option 'adress'"));
        assert!(parse(&["-a", "gcomm://h", "-g", "x", "--sst", "mariabackup:10.0.0.3:4444"], "").unwrap_err().contains("trivial"));
        assert!(parse(&["-a", "gcomm://h", "-g", "x", "--sst", "trivial"], "").is_ok());
    }
}
