//! `lockstep`: the operator's command.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => lockstep_cli::bench::cli::main(&args[1..]),
        Some("cluster") => lockstep_cli::cluster::cli::main(&args[1..]),
        Some("conformance") => lockstep_cli::conformance::cli::main(&args[1..]),
        Some("options") => lockstep_cli::options::main(&args[1..]),
        Some("top") => lockstep_cli::top::main(&args[1..]),
        _ => {
            eprintln!("{}", USAGE);
            ExitCode::from(2)
        }
    }
}

const USAGE: &str = "usage: lockstep <command> [args]

commands:
  bench                        sysbench on 3-node clusters: Galera vs lockstep, side by side
  cluster up|status|sql|down   a local cluster of mariadbd processes
  conformance                  run MariaDB's mtr galera/wsrep suites
  options                      the provider options, and which ones lockstep acts on
  top                          the nodes live: state, queues, flow control, commit rate, lag, leader";
