//! `garbd`: lockstep's arbitrator, with Galera's garbd command line and
//! configuration files, so that a deployment (and Debian's garb.service,
//! which runs `garbd -a gcomm://... -g ... -o ... -l ... -w ...`) changes
//! the binary and nothing else. The member itself is
//! `lockstep::arbitrator`; this is its process: arguments, log, daemon,
//! signals.

mod args;
mod logfile;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use lockstep::arbitrator::{Arbitrator, Ended};

/// Set by SIGTERM and SIGINT: leave the group and exit, as garbd does.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

fn main() -> ExitCode {
    let cfg = match args::Args::parse_all() {
        Ok(Some(cfg)) => cfg,
        Ok(None) => return ExitCode::SUCCESS, // --help, --version
        Err(e) => {
            eprintln!("garbd: {}", e);
            return ExitCode::from(1);
        }
    };
    if let Err(e) = logfile::install(cfg.log.as_deref(), cfg.daemon) {
        eprintln!("garbd: {}", e);
        return ExitCode::from(1);
    }
    // Before any thread starts: daemon(3) forks, and only the calling
    // thread survives a fork.
    if cfg.daemon {
        // SAFETY: no other thread exists yet.
        if unsafe { libc::daemon(1, 0) } != 0 {
            eprintln!("garbd: cannot become a daemon: {}", std::io::Error::last_os_error());
            return ExitCode::from(1);
        }
    }
    if let Some(dir) = cfg.workdir.as_deref().filter(|d| !d.is_empty()) {
        if let Err(e) = std::env::set_current_dir(dir) {
            logfile::fatal(&format!("cannot enter the working directory {}: {}", dir, e));
            return ExitCode::from(1);
        }
    }
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
    run(&cfg.arbitrator)
}

fn run(cfg: &lockstep::arbitrator::ArbitratorConfig) -> ExitCode {
    let garb = match Arbitrator::start(cfg) {
        Ok(g) => g,
        Err(e) => {
            logfile::fatal(&format!("cannot start the arbitrator: {}", e));
            return ExitCode::from(1);
        }
    };
    let ended = garb.run(|| STOP.load(Ordering::SeqCst));
    if ended == Ended::Stopped {
        logfile::info("received a signal: leaving the group");
    }
    garb.leave();
    match ended {
        Ended::Stopped => ExitCode::SUCCESS,
        Ended::Halted => ExitCode::from(1),
    }
}
