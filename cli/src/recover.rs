//! `lockstep recover`: InnoDB's crash recovery, run before the server
//! starts, as lockstep's provider runs it when nobody did (see
//! `provider/src/node/wsrep_recover.rs`): it records the seqnos crash
//! recovery left out below the position it reports, which a plain
//! `galera_recovery` cannot tell, and prints `--wsrep_start_position`
//! as `galera_recovery` does. The package's drop-in for
//! `mariadb.service` runs it first; for a server whose provider is not
//! lockstep's, or that stopped cleanly, it does nothing.

use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use lockstep::node::wsrep_recover;

#[derive(Parser, Debug)]
#[command(
    name = "lockstep recover",
    about = "InnoDB's crash recovery before a lockstep node starts: records what it left out, prints --wsrep_start_position",
    after_help = "The server's options after --, as mariadb.service passes $MYSQLD_OPTS. Prints nothing when the server's provider is not lockstep's, wsrep is off, or the last run stopped cleanly."
)]
pub struct Cli {
    /// The server binary
    #[arg(long, value_name = "PATH", default_value = "/usr/sbin/mariadbd")]
    mariadbd: PathBuf,
    /// Run the recovery as this user (mariadb.service's is mysql)
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// The server's options, as it is started with them
    #[arg(last = true, value_name = "OPTIONS")]
    options: Vec<String>,
}

pub fn run_cli(cli: Cli) -> ExitCode {
    let settings = server_settings(&cli.options);
    let get = |name: &str| settings.iter().rev().find_map(|(k, v)| (k.replace('-', "_") == name).then_some(v.as_str()));
    let wsrep_on = get("wsrep_on").is_some_and(|v| matches!(v.to_ascii_uppercase().as_str(), "ON" | "1" | ""));
    let ours = get("wsrep_provider").is_some_and(|p| p.contains("liblockstep"));
    if !wsrep_on || !ours {
        return ExitCode::SUCCESS;
    }
    let datadir = PathBuf::from(get("datadir").unwrap_or("/var/lib/mysql"));
    let mut args = cli.options.clone();
    args.extend(cli.user.iter().map(|u| format!("--user={u}")));
    if let Some(position) = recover(&cli.mariadbd, &args, &datadir) {
        println!("--wsrep_start_position={position}");
    }
    ExitCode::SUCCESS
}

/// The recovered position of a server that crashed (grastate.dat with a
/// history and seqno -1), what it left out recorded in `datadir`; None for
/// one that stopped cleanly, a new one, or when recovery found nothing.
pub fn recover(mariadbd: &Path, args: &[String], datadir: &Path) -> Option<String> {
    let grastate = std::fs::read_to_string(datadir.join("grastate.dat")).ok()?;
    crashed(&grastate).then_some(())?;
    wsrep_recover::recover(mariadbd, args, datadir).map(|r| r.position.to_string())
}

/// grastate.dat of a node that did not close cleanly: a history, seqno -1.
pub fn crashed(grastate: &str) -> bool {
    let field = |name: &str| grastate.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    let uuid = field("uuid:").unwrap_or("");
    field("seqno:") == Some("-1") && !uuid.is_empty() && uuid != "00000000-0000-0000-0000-000000000000"
}

/// `my_print_defaults --mysqld` with the server's options: its settings,
/// later ones winning.
fn server_settings(options: &[String]) -> Vec<(String, String)> {
    // --defaults-file and friends must come first, as for mariadbd.
    let (defaults, rest): (Vec<&String>, Vec<&String>) = options.iter().partition(|o| o.starts_with("--defaults") || o.starts_with("--no-defaults"));
    let out = Command::new("my_print_defaults").args(defaults).arg("--mysqld").output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    text.lines()
        .map(String::from)
        .chain(rest.into_iter().cloned())
        .filter_map(|l| {
            let l = l.strip_prefix("--")?.to_string();
            Some(match l.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (l, String::new()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_crashed_node_with_a_history_is_recovered() {
        let state = |uuid: &str, seqno: &str| format!("# GALERA saved state\nversion: 2.1\nuuid:    {uuid}\nseqno:   {seqno}\nsafe_to_bootstrap: 0\n");
        let u = "f232c645-c4b3-4f0e-956d-635e2f381c35";
        assert!(crashed(&state(u, "-1")));
        assert!(!crashed(&state(u, "42")), "a clean stop wrote its position");
        assert!(!crashed(&state("00000000-0000-0000-0000-000000000000", "-1")), "a new node");
    }
}
