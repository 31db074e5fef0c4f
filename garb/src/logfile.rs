//! Where garbd's lines go: `--log FILE` (appended), syslog for a daemon
//! without one, standard error otherwise; Galera's garbd does the same,
//! with a timestamp on every line but syslog's.

use std::io::Write;
use std::sync::{Arc, Mutex};

use lockstep::log::{self, Level};

/// Routes the provider's log (and this program's) to its destination.
pub fn install(file: Option<&str>, daemon: bool) -> Result<(), String> {
    let sink: log::Sink = match file {
        Some(path) => {
            let f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| format!("cannot open the log file {}: {}", path, e))?;
            let f = Mutex::new(f);
            Arc::new(move |level, msg| {
                let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
                let _ = writeln!(f, "{} {:>5}: {}", timestamp(), name(level), msg);
            })
        }
        None if daemon => {
            // SAFETY: a static, NUL-terminated identifier.
            unsafe { libc::openlog(c"garbd".as_ptr(), libc::LOG_PID, libc::LOG_DAEMON) };
            Arc::new(syslog)
        }
        None => Arc::new(|level, msg| eprintln!("{} {:>5}: {}", timestamp(), name(level), msg)),
    };
    log::set_sink(Some(sink));
    Ok(())
}

pub fn info(msg: &str) {
    log::write(Level::Info, msg);
}

pub fn fatal(msg: &str) {
    log::write(Level::Fatal, msg);
}

fn name(level: Level) -> &'static str {
    match level {
        Level::Fatal => "FATAL",
        Level::Error => "ERROR",
        Level::Warn => "WARN",
        Level::Info => "INFO",
        Level::Debug => "DEBUG",
    }
}

fn syslog(level: Level, msg: &str) {
    let priority = match level {
        Level::Fatal => libc::LOG_CRIT,
        Level::Error => libc::LOG_ERR,
        Level::Warn => libc::LOG_WARNING,
        Level::Info => libc::LOG_INFO,
        Level::Debug => libc::LOG_DEBUG,
    };
    let Ok(text) = std::ffi::CString::new(msg.replace('\0', " ")) else { return };
    // SAFETY: a constant format and a NUL-terminated argument.
    unsafe { libc::syslog(priority, c"%s".as_ptr(), text.as_ptr()) };
}

/// Local time, to the millisecond: `2026-11-26 17:05:09.123`.
fn timestamp() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes the zeroed struct it is given.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&secs, &mut tm) };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis()
    )
}
