//! Starting, signalling and watching mariadbd processes.
//!
//! Signals go through libc's `kill(2)` declared here: std links libc anyway,
//! and a whole crate for four signals is not worth a CI build step.

use super::{Error, Result};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn geteuid() -> u32;
}

// The same numbers on every Linux architecture Rust targets except
// mips/sparc/alpha, which this project does not run on.
pub const SIGKILL: i32 = 9;
pub const SIGTERM: i32 = 15;
pub const SIGCONT: i32 = 18;
pub const SIGSTOP: i32 = 19;

const POLL: Duration = Duration::from_millis(50);

pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { geteuid() == 0 }
}

/// Sends `sig` to `pid`. ESRCH (already gone) is not an error.
pub fn signal(pid: u32, sig: i32) -> Result<()> {
    // SAFETY: kill(2) only reads its integer arguments.
    if unsafe { kill(pid as i32, sig) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(3) {
        return Ok(()); // ESRCH
    }
    Err(Error::io(format!("sending signal {sig} to pid {pid}"), err))
}

/// The one-letter state from /proc/PID/stat (R, S, T, Z ...), None if gone.
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces.
    let after = &stat[stat.rfind(')')? + 1..];
    after.trim_start().chars().next()
}

/// Whether every thread of `pid` is stopped (SIGSTOP), per /proc.
pub fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let mut states = tasks
        .filter_map(|t| t.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .map(task_state_of(pid));
    states.all(|s| s == Some('T') || s == Some('t'))
}

fn task_state_of(pid: u32) -> impl Fn(u32) -> Option<char> {
    move |tid| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
        stat[stat.rfind(')')? + 1..].trim_start().chars().next()
    }
}

/// Alive = exists and is not a zombie. Orphaned servers may sit as zombies
/// when PID 1 does not reap, and kill(pid, 0) succeeds on zombies.
pub fn is_alive(pid: u32) -> bool {
    matches!(proc_state(pid), Some(s) if s != 'Z' && s != 'X')
}

/// Whether `pid` is a mariadbd started with this `--defaults-file`: a pid
/// read from a file may have been reused by an unrelated process, and we
/// signal only processes this cluster started.
pub fn is_our_server(pid: u32, cnf: &Path) -> bool {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let wanted = format!("--defaults-file={}", cnf.display());
    raw.split(|b| *b == 0).any(|arg| arg == wanted.as_bytes())
}

/// A server process: our child when this process started it (then we
/// reap it), or a pid read from a file (started by an earlier `lockstep`).
#[derive(Debug)]
pub struct Process {
    pub pid: u32,
    child: Option<Child>,
}

impl Process {
    pub fn adopt(pid: u32) -> Process {
        Process { pid, child: None }
    }

    pub fn alive(&mut self) -> bool {
        if let Some(child) = &mut self.child {
            // try_wait reaps: a finished child is gone for good.
            return matches!(child.try_wait(), Ok(None));
        }
        is_alive(self.pid)
    }

    /// Waits up to `timeout` for the process to exit; true if it did.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if !self.alive() {
                return true;
            }
            std::thread::sleep(POLL);
        }
        !self.alive()
    }

    /// SIGTERM, then SIGKILL after `timeout`. Ok(true) if it exited by itself.
    pub fn terminate(&mut self, timeout: Duration) -> Result<bool> {
        self.signal(SIGTERM)?;
        // A frozen (SIGSTOPped) server would never act on SIGTERM.
        self.signal(SIGCONT)?;
        if self.wait_exit(timeout) {
            return Ok(true);
        }
        self.signal(SIGKILL)?;
        if self.wait_exit(Duration::from_secs(10)) {
            return Ok(false);
        }
        Err(Error::Timeout(format!(
            "pid {} survived SIGKILL for 10s",
            self.pid
        )))
    }

    pub fn signal(&mut self, sig: i32) -> Result<()> {
        if self.alive() {
            signal(self.pid, sig)?;
        }
        Ok(())
    }

    /// SIGSTOP or SIGCONT, then waits until every thread is in the state
    /// asked for: signal delivery is asynchronous, and a test that freezes
    /// a node must be able to rely on it being frozen when this returns.
    pub fn set_stopped(&mut self, stopped: bool) -> Result<()> {
        self.signal(if stopped { SIGSTOP } else { SIGCONT })?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if !self.alive() || all_threads_stopped(self.pid) == stopped {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let what = if stopped { "stop" } else { "continue" };
        Err(Error::Timeout(format!(
            "pid {} did not {what} within 5s of the signal",
            self.pid
        )))
    }
}

/// Starts `program args` detached from our terminal: its own process group
/// (a Ctrl-C on `lockstep` or the test runner must not reach the servers),
/// stdin closed, stdout+stderr appended to `log`.
pub fn spawn(program: &Path, args: &[String], log: &Path) -> Result<Process> {
    use std::os::unix::process::CommandExt;
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| Error::io("duplicating a log file handle", e))?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| Error::io(format!("starting {}", program.display()), e))?;
    Ok(Process {
        pid: child.id(),
        child: Some(child),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_not_a_server() {
        let me = std::process::id();
        assert!(is_alive(me));
        assert!(!is_our_server(me, Path::new("/tmp/x/my.cnf")));
        assert!(!is_alive(u32::MAX / 2));
    }

    #[test]
    fn terminate_a_sleeping_child() {
        let log =
            std::env::temp_dir().join(format!("lockstep-proc-test-{}.log", std::process::id()));
        let mut p = spawn(Path::new("/bin/sleep"), &["30".into()], &log).unwrap();
        assert!(p.alive());
        p.signal(SIGSTOP).unwrap();
        assert!(
            !p.wait_exit(Duration::from_millis(100)),
            "a stopped process is still alive"
        );
        assert!(
            p.terminate(Duration::from_secs(5)).unwrap(),
            "exited on SIGTERM, not SIGKILL"
        );
        assert!(!p.alive());
        let _ = std::fs::remove_file(log);
    }
}
