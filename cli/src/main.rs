//! `lockstep`: the operator's command.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("cluster") => lockstep_cli::cluster::cli::main(&args[1..]),
        Some("conformance") => lockstep_cli::conformance::cli::main(&args[1..]),
        _ => {
            eprintln!("{}", USAGE);
            ExitCode::from(2)
        }
    }
}

const USAGE: &str = "usage: lockstep <command> [args]

commands:
  cluster up|status|sql|down   a local cluster of mariadbd processes
  conformance                  run MariaDB's mtr galera/wsrep suites";
