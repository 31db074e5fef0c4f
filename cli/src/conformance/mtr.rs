//! Running mariadb-test-run.pl: its command line, and a bounded run that
//! keeps every line of output in a log file while handing each to the caller.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

/// Where the mariadb-test package installs mtr and the suites: MariaDB
/// 10.11's place, then 11.8's (Debian 13 moved it).
const MTR_DIRS: [&str; 2] = ["/usr/share/mysql/mysql-test", "/usr/share/mariadb/mariadb-test"];

/// The first of [`MTR_DIRS`] that holds mtr (10.11's when none does, so
/// that errors name the usual place).
pub fn mtr_dir() -> &'static str {
    MTR_DIRS.into_iter().find(|d| std::path::Path::new(d).join("mariadb-test-run.pl").is_file()).unwrap_or(MTR_DIRS[0])
}

/// The reference provider (Debian package galera-4).
pub const GALERA_PROVIDER: &str = "/usr/lib/galera/libgalera_smm.so";

/// Ports mtr reserves per worker (its default --port-group-size). Galera
/// tests take several per server: client, galera, IST and SST ports.
const PORT_GROUP: u32 = 30;
/// mtr refuses ports above this.
const PORT_LIMIT: u32 = 32767;
/// After mtr's own suite timeout we give it this long before stopping it.
const DEADLINE_MARGIN: Duration = Duration::from_secs(600);
/// How long mtr gets to clean up after SIGINT before SIGKILL.
const INTERRUPT_GRACE: Duration = Duration::from_secs(60);

/// Everything that goes on mtr's command line.
pub struct Invocation {
    pub provider: PathBuf,
    /// Suite names or paths (one-node suites), for --suite.
    pub suites: Vec<String>,
    /// Test names (`suite.test` or `/path/suite.test`); empty = whole suites.
    pub tests: Vec<String>,
    pub vardir: PathBuf,
    pub parallel: u32,
    pub port_base: u32,
    pub testcase_timeout_min: u32,
    pub suite_timeout_min: u32,
    pub big_test: bool,
    /// Leave mariabackup's donor pause alone (see `DONOR_WAIT`).
    pub stock_sst: bool,
    pub extra: Vec<String>,
}

impl Invocation {
    /// mtr turns --port-base into a build-thread assuming 10 ports per
    /// worker while reserving 30, so we pass the build-thread ourselves:
    /// worker k uses ports 10000 + 30 * (build_thread + k - 1) onwards.
    pub fn ports(&self) -> Result<(u32, u32), String> {
        let build_thread = self.port_base.saturating_sub(10000).div_ceil(PORT_GROUP);
        let first = 10000 + build_thread * PORT_GROUP;
        let last = first + self.parallel * PORT_GROUP - 1;
        if last >= PORT_LIMIT {
            return Err(format!("ports {first}..{last} pass mtr's limit {PORT_LIMIT}: lower --port-base or --parallel"));
        }
        Ok((build_thread, first))
    }

    pub fn args(&self) -> Result<Vec<String>, String> {
        let (build_thread, _) = self.ports()?;
        let mut args = vec![
            "mariadb-test-run.pl".to_string(),
            format!("--vardir={}", self.vardir.display()),
            format!("--parallel={}", self.parallel),
            // Run everything, report every failure, never hide a flaky one.
            "--force".into(),
            "--retry=0".into(),
            "--max-test-fail=0".into(),
            format!("--testcase-timeout={}", self.testcase_timeout_min),
            format!("--suite-timeout={}", self.suite_timeout_min),
            format!("--build-thread={build_thread}"),
            format!("--suite={}", self.suites.join(",")),
            // rsync SST does not work on this machine (see the brief).
            "--mysqld=--wsrep_sst_method=mariabackup".into(),
        ];
        if self.big_test {
            args.push("--big-test".into());
        }
        args.extend(self.extra.iter().cloned());
        args.extend(self.tests.iter().cloned());
        Ok(args)
    }

    /// The command as a shell line, for the log and the summary.
    pub fn shell_line(&self) -> Result<String, String> {
        let args = self
            .args()?
            .iter()
            .map(|a| quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let bash_env = match self.donor_wait() {
            Some(path) => format!("BASH_ENV={} ", quote(&path.to_string_lossy())),
            None => String::new(),
        };
        Ok(format!(
            "cd {} && WSREP_PROVIDER={} MTR_BINDIR_FORCED={} {bash_env}perl {args}",
            mtr_dir(),
            quote(&self.provider.to_string_lossy()),
            quote(&self.mysqld_dir().to_string_lossy())
        ))
    }

    /// Where `DONOR_WAIT` is written, unless --stock-sst: beside the
    /// vardir, like the wrapper.
    pub fn donor_wait(&self) -> Option<PathBuf> {
        (!self.stock_sst).then(|| self.vardir.with_file_name("sst-donor-wait.bash"))
    }

    /// Where the `mariadbd` wrapper lives (see `install_mysqld_wrapper`):
    /// beside the vardir, which mtr wipes at start.
    pub fn mysqld_dir(&self) -> PathBuf {
        self.vardir.with_file_name("mysqld-bin")
    }

    /// Longest we wait for mtr: its own suite timeout plus a margin.
    pub fn deadline(&self) -> Duration {
        Duration::from_secs(u64::from(self.suite_timeout_min) * 60) + DEADLINE_MARGIN
    }
}

/// mtr starts its servers with --user=root when run as root, but tests
/// that run `$MYSQLD --wsrep-recover` themselves (galera_pc_recovery,
/// galera_gcache_recover, ...) do not, and mariadbd refuses to run as root
/// without it: the step fails with Galera as with lockstep. mtr finds
/// mariadbd under MTR_BINDIR_FORCED first (and exports that path as
/// $MYSQLD), so a wrapper there adds --user=root for root only. mtr drops
/// the variable at a test's first restart; $MYSQLD keeps the wrapper.
fn install_mysqld_wrapper(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let sbin = dir.join("sbin");
    std::fs::create_dir_all(&sbin)?;
    let path = sbin.join("mariadbd");
    let script = "#!/bin/sh\n\
        # Written by lockstep conformance: mariadbd refuses root without --user.\n\
        if [ \"$(id -u)\" = 0 ]; then exec /usr/sbin/mariadbd \"$@\" --user=root; fi\n\
        exec /usr/sbin/mariadbd \"$@\"\n";
    std::fs::write(&path, script)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
}

/// MariaDB's mariabackup SST donor script streams the GTID file to the
/// joiner, then sleeps a fixed 10 s so that the joiner can listen again
/// before the backup's own connection, whatever the data size: most of a
/// two-server mtr test's time, for Galera as for lockstep. Bash sources
/// BASH_ENV before it runs a script, and mtr's servers pass the variable
/// on to the SST scripts they start: in the donor script only, this ends
/// that sleep as soon as the joiner's second listener is up, and after
/// the same 10 s at most. mtr's servers share the loopback, so `ss` on
/// the donor sees the joiner's socket. The first listener (for the GTID
/// file) may still show for a moment after its transfer, so a listener
/// counts only if its process started after the donor script did: the
/// first one was listening before the joiner asked for a donor. Without
/// `ss`, or without a listener's pid, the sleep is unchanged.
const DONOR_WAIT: &str = r#"# Written by lockstep conformance (--stock-sst leaves it out).
if [ "${0##*/}" = wsrep_sst_mariabackup ] && command -v ss >/dev/null 2>&1; then
    # Field 22 of /proc/PID/stat, the start time; the name before it may hold spaces.
    lockstep_started() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
    lockstep_donor_started=$(lockstep_started $$)
    sleep() {
        if [ "$*" = 10 ] && [ -n "${SST_PORT:-}" ] && [ -n "$lockstep_donor_started" ]; then
            local tries=100 pid started
            while [ "$tries" -gt 0 ]; do
                for pid in $(ss -Hltnp "sport = :$SST_PORT" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2); do
                    started=$(lockstep_started "$pid")
                    if [ -n "$started" ] && [ "$started" -gt "$lockstep_donor_started" ]; then
                        return 0
                    fi
                done
                tries=$((tries - 1))
                command sleep 0.1
            done
            return 0
        fi
        command sleep "$@"
    }
fi
"#;

/// mtr looks for garbd at `garb/garbd` beside the provider library, then
/// at /usr/bin/garbd, which is Galera's. Cargo builds ours beside the
/// library (`garbd`): the link makes the garbd tests run ours.
fn link_garbd(provider: &Path) -> io::Result<()> {
    let Some(dir) = provider.parent() else { return Ok(()) };
    let (ours, link) = (dir.join("garbd"), dir.join("garb").join("garbd"));
    if !ours.is_file() || link.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir.join("garb"))?;
    std::os::unix::fs::symlink("../garbd", link)
}

fn quote(arg: &str) -> String {
    let plain = arg
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_=./,:+@%".contains(&b));
    if plain && !arg.is_empty() {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// How a run ended.
pub enum Ending {
    Exited(ExitStatus),
    /// We stopped mtr at the deadline.
    TimedOut,
}

/// Run mtr, writing its stdout and stderr to `log` and passing each line
/// to `on_line` as it arrives. Returns when mtr exits or at the deadline.
pub fn run(inv: &Invocation, log: &Path, mut on_line: impl FnMut(&str)) -> io::Result<Ending> {
    let mut log = File::create(log)?;
    writeln!(log, "# {}", inv.shell_line().map_err(io::Error::other)?)?;
    install_mysqld_wrapper(&inv.mysqld_dir())?;
    link_garbd(&inv.provider)?;
    let mut command = Command::new("perl");
    if let Some(path) = inv.donor_wait() {
        std::fs::write(&path, DONOR_WAIT)?;
        command.env("BASH_ENV", path);
    }
    let mut child = command
        .args(inv.args().map_err(io::Error::other)?)
        .current_dir(mtr_dir())
        .env("WSREP_PROVIDER", &inv.provider)
        .env("MTR_BINDIR_FORCED", inv.mysqld_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let lines = spawn_readers(&mut child);
    let deadline = Instant::now() + inv.deadline();
    loop {
        match lines.recv_timeout(Duration::from_secs(1)) {
            Ok(line) => {
                writeln!(log, "{line}")?;
                on_line(&line);
            }
            Err(RecvTimeoutError::Timeout) => {
                // A straggler (a server mtr left behind) may hold the pipes
                // open after mtr exited: mtr's exit is what ends the run.
                if let Some(status) = child.try_wait()? {
                    drain(&lines, &mut log, &mut on_line)?;
                    return Ok(Ending::Exited(status));
                }
                if Instant::now() >= deadline {
                    return stop(&mut child, &mut log);
                }
            }
            // Both pipes closed: mtr is exiting.
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    wait_until(&mut child, deadline.max(Instant::now() + INTERRUPT_GRACE))
        .map(Ending::Exited)
        .or_else(|_| stop(&mut child, &mut log))
}

/// The lines still buffered after mtr exited, for a few seconds at most.
fn drain(
    lines: &Receiver<String>,
    log: &mut File,
    on_line: &mut impl FnMut(&str),
) -> io::Result<()> {
    let until = Instant::now() + Duration::from_secs(5);
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                writeln!(log, "{line}")?;
                on_line(&line);
            }
            Err(_) => break,
        }
    }
    Ok(())
}

/// One thread per pipe, both feeding one channel of lines.
fn spawn_readers(child: &mut Child) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        forward_lines(out, tx.clone());
    }
    if let Some(err) = child.stderr.take() {
        forward_lines(err, tx);
    }
    rx
}

fn forward_lines(pipe: impl Read + Send + 'static, tx: Sender<String>) {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        // mtr echoes result diffs, which may hold any bytes: read bytes.
        while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            let line = String::from_utf8_lossy(&buf)
                .trim_end_matches(['\n', '\r'])
                .to_string();
            if tx.send(line).is_err() {
                return;
            }
            buf.clear();
        }
    });
}

/// Stop mtr: SIGINT first, which makes it stop its servers (they run under
/// my_safe_process, which also kills them when mtr dies); SIGKILL if it
/// has not exited after the grace period.
fn stop(child: &mut Child, log: &mut File) -> io::Result<Ending> {
    writeln!(
        log,
        "# lockstep conformance: deadline reached, interrupting mtr (pid {})",
        child.id()
    )?;
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    if wait_until(child, Instant::now() + INTERRUPT_GRACE).is_err() {
        child.kill()?;
        child.wait()?;
    }
    Ok(Ending::TimedOut)
}

/// Wait for the child, but not past `deadline`.
fn wait_until(child: &mut Child, deadline: Instant) -> io::Result<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "mtr did not exit"));
        }
        thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation() -> Invocation {
        Invocation {
            provider: PathBuf::from(GALERA_PROVIDER),
            suites: vec!["wsrep".into()],
            tests: vec![],
            vardir: PathBuf::from("/tmp/lockstep_conformance/mtr"),
            parallel: 2,
            port_base: 30000,
            testcase_timeout_min: 4,
            suite_timeout_min: 360,
            big_test: false,
            stock_sst: false,
            extra: vec![],
        }
    }

    #[test]
    fn port_base_becomes_a_build_thread() {
        // Seen in a real run: "Using MTR_BUILD_THREAD 667, with reserved ports 30010..30039".
        assert_eq!(invocation().ports().unwrap(), (667, 30010));
        let exact = Invocation {
            port_base: 31000,
            ..invocation()
        };
        assert_eq!(exact.ports().unwrap(), (700, 31000));
        let too_high = Invocation {
            port_base: 32700,
            ..invocation()
        };
        assert!(too_high.ports().is_err());
    }

    #[test]
    fn command_line_matches_the_reference_run() {
        let inv = Invocation {
            tests: vec!["wsrep.trans".into()],
            big_test: true,
            stock_sst: false,
            extra: vec!["--verbose".into()],
            ..invocation()
        };
        let args = inv.args().unwrap();
        for expected in [
            "--force",
            "--retry=0",
            "--max-test-fail=0",
            "--testcase-timeout=4",
            "--suite=wsrep",
            "--mysqld=--wsrep_sst_method=mariabackup",
            "--big-test",
            "--build-thread=667",
        ] {
            assert!(
                args.contains(&expected.to_string()),
                "{expected} missing from {args:?}"
            );
        }
        assert_eq!(args.last().unwrap(), "wsrep.trans");
        assert!(inv
            .shell_line()
            .unwrap()
            .starts_with(&format!("cd {} && WSREP_PROVIDER=/usr/lib/galera", mtr_dir())));
    }

    #[test]
    fn the_donor_wait_is_named_on_the_command_line_unless_stock_sst() {
        let line = invocation().shell_line().unwrap();
        assert!(line.contains(" BASH_ENV=/tmp/lockstep_conformance/sst-donor-wait.bash perl "));
        let stock = Invocation { stock_sst: true, ..invocation() };
        assert!(!stock.shell_line().unwrap().contains("BASH_ENV"));
        assert_eq!(stock.donor_wait(), None);
    }

    /// The donor script's `sleep 10` ends once a listener started after
    /// the script holds the joiner's port; one that was there before
    /// (the GTID file's) does not end it, nor does any other script's.
    /// (Start times count in clock ticks: the listener starts 0.1 s in.)
    #[test]
    fn the_donor_wait_ends_when_the_joiners_second_listener_is_up() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("lockstep-donor-wait-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let env = dir.join("env.bash");
        std::fs::write(&env, DONOR_WAIT).unwrap();
        let run = |name: &str, body: String| {
            let script = dir.join(name);
            std::fs::write(&script, format!("#!/usr/bin/env bash\nset -eu\n{body}")).unwrap();
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
            let status = Command::new("timeout").args(["3", &script.to_string_lossy()]).env("BASH_ENV", &env).status();
            status.unwrap().success()
        };
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let second = format!("SST_PORT={free}\nsleep 0.1\ntimeout 4 socat -u TCP-LISTEN:{free},reuseaddr - >/dev/null &\nsleep 10\nkill $!\n");
        assert!(run("wsrep_sst_mariabackup", second.clone()), "the donor slept on");
        assert!(!run("wsrep_sst_other", second), "another script's sleep is its own");
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        assert!(!run("wsrep_sst_mariabackup", format!("SST_PORT={port}\nsleep 10\n")), "a listener older than the donor");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(quote("galera.galera#505"), "'galera.galera#505'");
        assert_eq!(quote("--suite=wsrep"), "--suite=wsrep");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
