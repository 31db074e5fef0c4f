//! One node of a cluster: start, stop, kill, freeze, SQL, status, waits.

use super::client::Conn;
use super::config::BOOTSTRAP_ADDRESS;
use super::launch::Cluster;
use super::process;
use super::spec::{ExtraOptions, NodePaths, Ports};
use super::{preflight, secs, Error, Result};
use lockstep_config::{ServerVar, Shown, StatusVar};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(100);
/// Status queries are local reads: a node that does not answer in this
/// time is frozen or wedged, and a status table must not hang on it.
const STATUS_TIMEOUT: Duration = Duration::from_secs(3);
/// Lines of the error log shown when a node fails.
const LOG_TAIL_LINES: usize = 25;

/// Start-up milestones, reported while [`Node::start_with_progress`] waits.
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// mariadb-install-db is creating the datadir (only at `up`).
    Initialising,
    /// Node 1 was stopped for its datadir to be copied to the other
    /// nodes `up` starts, and starts again (only at `up`).
    Reseeding,
    /// The datadir is a copy of node 1's (only at `up`).
    Seeded,
    /// mariadbd runs with this pid.
    Launched { pid: u32 },
    /// No other node runs: this one starts a new primary component.
    Bootstrapping,
    /// The server became a joiner (state transfer under way).
    Joining,
    /// Synced and ready, this long after launch.
    Synced { elapsed: Duration },
}

/// `SHOW GLOBAL STATUS LIKE 'wsrep%'` of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub vars: BTreeMap<String, String>,
}

/// How a status variable is named to [`Status`]: by its registry entry in
/// the command's own code, or spelled out in tests, which check the
/// server's names independently of the registry.
pub trait VarName: Copy {
    /// The name as `SHOW GLOBAL STATUS` lists it (`wsrep_...`).
    fn key(&self) -> Cow<'_, str>;
}

impl VarName for StatusVar {
    fn key(&self) -> Cow<'_, str> {
        self.shown().into()
    }
}

impl VarName for ServerVar {
    fn key(&self) -> Cow<'_, str> {
        self.shown().into()
    }
}

impl VarName for &str {
    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

impl Status {
    /// A variable by its registry entry ([`StatusVar`] or [`ServerVar`]).
    pub fn get(&self, var: impl VarName) -> Option<&str> {
        self.vars.get(var.key().as_ref()).map(String::as_str)
    }

    /// A numeric variable (`wsrep_last_committed`, `wsrep_cluster_size` ...).
    pub fn int(&self, var: impl VarName) -> Option<i64> {
        self.get(var)?.parse().ok()
    }

    /// A numeric variable that may have a fraction (`wsrep_apply_capacity`).
    pub fn float(&self, var: impl VarName) -> Option<f64> {
        self.get(var)?.parse().ok()
    }

    /// Synced, in the primary component, and accepting queries.
    pub fn is_synced(&self) -> bool {
        self.get(StatusVar::LocalStateComment) == Some("Synced")
            && self.get(ServerVar::ClusterStatus) == Some("Primary")
            && self.get(ServerVar::Ready) == Some("ON")
    }

    /// The variables that tell where a node is, for error messages.
    pub fn summary(&self) -> String {
        [
            self.pair(StatusVar::LocalStateComment),
            self.pair(ServerVar::ClusterStatus),
            self.pair(ServerVar::ClusterSize),
            self.pair(ServerVar::Ready),
        ]
        .join(" ")
    }

    /// `wsrep_name=value`, `?` for a value missing.
    fn pair(&self, var: impl VarName) -> String {
        format!("{}={}", var.key(), self.get(var).unwrap_or("?"))
    }
}

/// A handle on node `index` (1-based) of a [`Cluster`]. Cheap to copy; all
/// methods take `&self`, so threads can share a cluster by reference.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    pub(super) cluster: &'a Cluster,
    pub(super) index: usize,
}

impl<'a> Node<'a> {
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn name(&self) -> String {
        format!("node{}", self.index)
    }

    pub fn ports(&self) -> Ports {
        self.cluster.spec().ports(self.index)
    }

    pub fn paths(&self) -> NodePaths {
        self.cluster.spec().paths(self.index)
    }

    pub fn socket(&self) -> std::path::PathBuf {
        self.paths().socket
    }

    /// The server's pid while it runs.
    pub fn pid(&self) -> Option<u32> {
        let mut slot = self.cluster.slot(self.index);
        let process = slot.as_mut()?;
        process.alive().then_some(process.pid)
    }

    pub fn is_running(&self) -> bool {
        self.pid().is_some()
    }

    /// Stopped by [`Node::freeze`] and not yet thawed.
    pub fn is_frozen(&self) -> bool {
        self.pid().is_some_and(process::all_threads_stopped)
    }

    /// Starts the server and waits until it is Synced (spec.start_timeout).
    /// It bootstraps a new primary component when no other node of the
    /// cluster runs, and joins the others otherwise.
    pub fn start(&self) -> Result<()> {
        self.start_with_progress(&mut |_| {})
    }

    pub fn start_with_progress(&self, progress: &mut dyn FnMut(Phase)) -> Result<()> {
        self.start_as(Start::BootstrapIfAlone, progress)
    }

    /// Starts the server with its cluster address whatever else runs, and
    /// waits until it is Synced: how every node of a cluster that went
    /// down at once starts again (they find each other and recover).
    pub fn start_member(&self) -> Result<()> {
        self.start_as(Start::Member, &mut |_| {})
    }

    /// [`Node::start_member`] without the recovery step Debian's
    /// `mariadb.service` runs first (`galera_recovery`): mariadbd with its
    /// configuration only, as an operator who starts it by hand does.
    pub fn start_member_plainly(&self) -> Result<()> {
        self.start_as(Start::Plain, &mut |_| {})
    }

    fn start_as(&self, how: Start, progress: &mut dyn FnMut(Phase)) -> Result<()> {
        let started = Instant::now();
        // From before the launch: the error log is appended to across restarts.
        let log_path = self.paths().error_log;
        let mut log = LogWatch::from_end(&log_path);
        let (pid, bootstrap) = self.spawn(how)?;
        progress(Phase::Launched { pid });
        if bootstrap {
            progress(Phase::Bootstrapping);
        }
        // A bootstrapping server passes through "joiner" too: only a real
        // joiner's is worth reporting.
        let watch = (!bootstrap).then_some(&mut log);
        self.wait_started(started, watch, progress)?;
        progress(Phase::Synced {
            elapsed: started.elapsed(),
        });
        Ok(())
    }

    /// Writes this node's my.cnf again with `extra` on top of the cluster's
    /// options, for its next start: how one node at a time gets a new
    /// build (`wsrep_provider=...` among the mysqld options) or changed
    /// provider options in a rolling upgrade or restart. The spec and the
    /// other nodes keep theirs; an earlier call's `extra` is replaced.
    pub fn reconfigure(&self, extra: &ExtraOptions) -> Result<()> {
        let mut spec = self.cluster.spec().clone();
        let own = spec.node_extra.entry(self.index).or_default();
        own.mysqld.extend(extra.mysqld.iter().cloned());
        own.provider.extend(extra.provider.iter().cloned());
        super::launch::write_cnf(&spec, self.index, self.cluster.provider_path())
    }

    /// Starts the server without waiting; returns its pid. For tests that
    /// watch a start that is not expected to reach Synced.
    pub fn launch(&self) -> Result<u32> {
        Ok(self.spawn(Start::BootstrapIfAlone)?.0)
    }

    /// Spawns mariadbd; returns its pid and whether it bootstraps.
    fn spawn(&self, how: Start) -> Result<(u32, bool)> {
        // Decided before taking our own slot's lock: running_nodes() locks
        // every slot, ours included.
        let alone = self
            .cluster
            .running_nodes()
            .iter()
            .all(|n| *n == self.index);
        let bootstrap = alone && matches!(how, Start::BootstrapIfAlone);
        let recover = !matches!(how, Start::Plain);
        let mut slot = self.cluster.slot(self.index);
        if let Some(p) = slot.as_mut() {
            if p.alive() {
                return Err(Error::msg(format!(
                    "{} is already running (pid {})",
                    self.name(),
                    p.pid
                )));
            }
        }
        preflight::check_ports(self.cluster.spec(), self.index)?;
        let paths = self.paths();
        // --defaults-file must come first: mariadbd ignores it elsewhere.
        let mut args = vec![format!("--defaults-file={}", paths.cnf.display())];
        if bootstrap {
            args.push(format!("--wsrep_cluster_address={BOOTSTRAP_ADDRESS}"));
        }
        let mariadbd = &self.cluster.tools()?.mariadbd;
        if recover {
            let ours = self.cluster.spec().provider == super::spec::Provider::Lockstep;
            args.extend(super::recovery::start_position(mariadbd, &paths, ours));
        }
        let process = process::spawn(mariadbd, &args, &paths.stdout_log)?;
        let pid = process.pid;
        *slot = Some(process);
        std::fs::write(&paths.our_pid_file, format!("{pid}\n"))
            .map_err(|e| Error::io(format!("writing {}", paths.our_pid_file.display()), e))?;
        Ok((pid, bootstrap))
    }

    /// Waits for Synced, reporting Joining when the error log says so.
    fn wait_started(
        &self,
        started: Instant,
        mut log: Option<&mut LogWatch>,
        progress: &mut dyn FnMut(Phase),
    ) -> Result<()> {
        let deadline = started + self.cluster.spec().start_timeout;
        let mut joining_seen = false;
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            if !self.is_running() {
                return Err(self.failure(&format!(
                    "exited {} after it was started",
                    secs(started.elapsed())
                )));
            }
            if let Some(watch) = log.as_mut().filter(|_| !joining_seen) {
                if watch.saw("Server status change connected -> joiner") {
                    joining_seen = true;
                    progress(Phase::Joining);
                }
            }
            match self.status() {
                Ok(status) if status.is_synced() => return Ok(()),
                Ok(status) => last = status.summary(),
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(POLL);
        }
        Err(self.failure(&format!(
            "did not become Synced within {} (last: {last})",
            secs(self.cluster.spec().start_timeout)
        )))
    }

    /// An error naming the node and showing the end of its error log.
    pub(super) fn failure(&self, what: &str) -> Error {
        let log = &self.paths().error_log;
        Error::msg(format!(
            "{} {what}; last lines of {}:\n{}",
            self.name(),
            log.display(),
            tail_lines(log, LOG_TAIL_LINES)
        ))
    }

    /// SIGTERM and wait for exit (spec.stop_timeout); SIGKILL after that,
    /// which is reported as an error (the node is gone either way).
    pub fn stop(&self) -> Result<()> {
        let Some(mut process) = self.cluster.slot(self.index).take() else {
            return Ok(());
        };
        let timeout = self.cluster.spec().stop_timeout;
        let exited = process.terminate(timeout);
        self.forget_pid();
        match exited? {
            true => Ok(()),
            false => Err(Error::Timeout(format!(
                "{} ignored SIGTERM for {}: killed it",
                self.name(),
                secs(timeout)
            ))),
        }
    }

    /// SIGKILL: a crash, as far as the cluster can tell.
    pub fn kill(&self) -> Result<()> {
        let Some(mut process) = self.cluster.slot(self.index).take() else {
            return Ok(());
        };
        process.signal(process::SIGKILL)?;
        let gone = process.wait_exit(Duration::from_secs(10));
        self.forget_pid();
        if gone {
            Ok(())
        } else {
            Err(Error::Timeout(format!(
                "{} (pid {}) survived SIGKILL for 10s",
                self.name(),
                process.pid
            )))
        }
    }

    /// SIGSTOP: the node hangs (no heartbeats, no answers) but keeps its
    /// sockets open, like a long GC pause or a stalled VM.
    pub fn freeze(&self) -> Result<()> {
        self.with_process(|p| p.set_stopped(true))
    }

    /// SIGCONT after [`Node::freeze`].
    pub fn thaw(&self) -> Result<()> {
        self.with_process(|p| p.set_stopped(false))
    }

    fn with_process(&self, f: impl FnOnce(&mut process::Process) -> Result<()>) -> Result<()> {
        let mut slot = self.cluster.slot(self.index);
        let process = slot
            .as_mut()
            .ok_or_else(|| Error::msg(format!("{} is not running", self.name())))?;
        f(process)
    }

    fn forget_pid(&self) {
        let _ = std::fs::remove_file(self.paths().our_pid_file);
    }

    /// A new client connection (root, unix socket, default timeout).
    pub fn connect(&self) -> Result<Conn> {
        Conn::connect(&self.socket()).map_err(|e| self.not_running_or(e))
    }

    /// A new client connection whose reads and writes give up after `timeout`.
    pub fn connect_timeout(&self, timeout: Duration) -> Result<Conn> {
        Conn::connect_timeout(&self.socket(), timeout).map_err(|e| self.not_running_or(e))
    }

    /// Runs SQL on a fresh connection; rows of the last statement.
    pub fn sql(&self, sql: &str) -> Result<Vec<Vec<String>>> {
        self.connect()?.query(sql)
    }

    /// Sets one provider option (`name=value`) at runtime. MariaDB 11.x
    /// with its wsrep_provider plugin loaded, as Debian 13's 11.8 starts
    /// by default, refuses `wsrep_provider_options` at runtime (error
    /// 1210, Galera's as ours); there each declared option is a variable
    /// of its own, `wsrep_provider_<name>` with `.` as `_`, typed.
    pub fn set_provider_option(&self, option: &str) -> Result<()> {
        match self.sql(&format!("SET GLOBAL wsrep_provider_options = '{option}'")) {
            Err(Error::Sql { code: 1210, .. }) => {
                let (name, value) = option.split_once('=').ok_or_else(|| Error::Msg(format!("{option}: not name=value")))?;
                let variable = format!("wsrep_provider_{}", name.trim().replace('.', "_"));
                let kind = self.sql(&format!("SELECT variable_type FROM information_schema.system_variables WHERE variable_name = '{variable}'"))?.concat().concat();
                self.sql(&format!("SET GLOBAL {variable} = {}", as_variable_value(value.trim(), &kind)))
            }
            other => other,
        }
        .map(|_| ())
    }

    /// `SHOW GLOBAL STATUS LIKE 'wsrep%'`, on a fresh connection with a
    /// short timeout.
    pub fn status(&self) -> Result<Status> {
        let mut conn = Conn::connect_timeout(&self.socket(), STATUS_TIMEOUT)
            .map_err(|e| self.not_running_or(e))?;
        let rows = conn.query("SHOW GLOBAL STATUS LIKE 'wsrep%'")?;
        let pair = |row: Vec<String>| match <[String; 2]>::try_from(row) {
            Ok([name, value]) => Some((name, value)),
            Err(_) => None,
        };
        let vars = rows.into_iter().filter_map(pair).collect();
        Ok(Status { vars })
    }

    /// One status variable.
    pub fn status_var(&self, var: impl VarName) -> Result<String> {
        let status = self.status()?;
        status
            .get(var)
            .map(String::from)
            .ok_or_else(|| Error::msg(format!("{} has no status variable {}", self.name(), var.key())))
    }

    /// One numeric status variable; the error names it when it is
    /// missing or not a number.
    pub fn status_int(&self, var: impl VarName) -> Result<i64> {
        let text = self.status_var(var)?;
        text.parse()
            .map_err(|_| Error::msg(format!("{}: {} is {text:?}, not a number", self.name(), var.key())))
    }

    fn not_running_or(&self, e: Error) -> Error {
        if self.is_running() {
            e
        } else {
            Error::msg(format!("{} is not running ({e})", self.name()))
        }
    }

    /// Polls status until `pred` holds; fails at `timeout` saying `what`
    /// was awaited, or at once if the server exits.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut pred: impl FnMut(&Status) -> bool,
    ) -> Result<Status> {
        let deadline = Instant::now() + timeout;
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            if !self.is_running() {
                return Err(self.failure(&format!("exited while waiting for {what}")));
            }
            match self.status() {
                Ok(status) if pred(&status) => return Ok(status),
                Ok(status) => last = status.summary(),
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(POLL);
        }
        Err(Error::Timeout(format!(
            "{}: {what} not reached within {} (last: {last})",
            self.name(),
            secs(timeout)
        )))
    }

    /// Waits for Synced + Primary + wsrep_ready=ON.
    pub fn wait_synced(&self, timeout: Duration) -> Result<Status> {
        self.wait_until("Synced", timeout, Status::is_synced)
    }

    /// The last `n` lines of the error log.
    pub fn error_log_tail(&self, n: usize) -> String {
        tail_lines(&self.paths().error_log, n)
    }
}

/// Whether a node started alone bootstraps a new primary component.
#[derive(Clone, Copy)]
enum Start {
    BootstrapIfAlone,
    /// Never: it joins (or, after a whole-cluster crash, recovers with)
    /// the others.
    Member,
    /// As `Member`, without `galera_recovery`'s `--wsrep-recover` first.
    Plain,
}

/// Reads what a log file gained since the watch began (the error log is
/// appended to across restarts, so old text must not count).
struct LogWatch<'p> {
    path: &'p Path,
    offset: u64,
}

impl<'p> LogWatch<'p> {
    fn from_end(path: &'p Path) -> Self {
        let offset = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        LogWatch { path, offset }
    }

    /// Whether `needle` appeared since the start of the watch. Reads at
    /// most 1 MiB per call; a line split across two reads may be missed,
    /// which only delays a progress message.
    fn saw(&mut self, needle: &str) -> bool {
        let Ok(mut file) = std::fs::File::open(self.path) else {
            return false;
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return false;
        }
        let mut chunk = Vec::new();
        let read = file.take(1 << 20).read_to_end(&mut chunk).unwrap_or(0);
        self.offset += read as u64;
        String::from_utf8_lossy(&chunk).contains(needle)
    }
}

/// The last `n` lines of a text file (reads at most its last 64 KiB).
pub fn tail_lines(path: &Path, n: usize) -> String {
    let Ok(mut file) = std::fs::File::open(path) else {
        return format!("  ({} does not exist)", path.display());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines = fold_repeats(text.lines());
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Log lines, indented, with a run of lines that differ only in their
/// timestamp shown once and counted: a node retrying a peer every half
/// second would otherwise fill the whole tail and hide what came before.
fn fold_repeats<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    // MariaDB's error log opens each line with "YYYY-MM-DD HH:MM:SS "
    // (the hour space-padded).
    let message = |l: &'a str| -> &'a str {
        let after_date = l.split_once(' ').filter(|_| l.starts_with(|c: char| c.is_ascii_digit()));
        after_date.and_then(|(_, rest)| rest.trim_start().split_once(' ')).map_or(l, |(_, m)| m)
    };
    let mut out: Vec<(String, &str, usize)> = Vec::new();
    for line in lines {
        let text = message(line);
        match out.last_mut() {
            Some((_, last, count)) if *last == text => *count += 1,
            _ => out.push((format!("  {line}"), text, 1)),
        }
    }
    out.into_iter()
        .map(|(line, _, count)| if count > 1 { format!("{line}  (and {} more times)", count - 1) } else { line })
        .collect()
}

/// An option's text as the SQL value of a variable of type `kind` (as
/// information_schema names it): booleans as ON/OFF, durations and numbers
/// of DOUBLE variables in seconds, integers bare, the rest quoted (Galera
/// declares some numbers as text, e.g. `repl.commit_order`).
fn as_variable_value(text: &str, kind: &str) -> String {
    let quoted = || format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"));
    match kind {
        "BOOLEAN" => lockstep_config::value::parse_bool(text).map_or_else(quoted, |b| if b { "ON" } else { "OFF" }.into()),
        "DOUBLE" => lockstep_config::value::parse_duration(text).map_or_else(quoted, |d| format!("{:.6}", d.as_secs_f64())),
        "BIGINT" if text.parse::<i64>().is_ok() => text.to_string(),
        _ => quoted(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_helpers() {
        let mut status = Status::default();
        for (k, v) in [
            ("wsrep_local_state_comment", "Synced"),
            ("wsrep_cluster_status", "Primary"),
            ("wsrep_ready", "ON"),
            ("wsrep_last_committed", "42"),
        ] {
            status.vars.insert(k.into(), v.into());
        }
        assert!(status.is_synced());
        assert_eq!(status.int(StatusVar::LastCommitted), Some(42));
        status.vars.insert("wsrep_ready".into(), "OFF".into());
        assert!(!status.is_synced());
        assert!(status.summary().contains("wsrep_ready=OFF"));
    }

    #[test]
    fn a_run_of_lines_that_differ_in_their_timestamp_only_is_shown_once() {
        let log = "2026-12-07  4:00:43 0 [Note] WSREP: starting\n\
                   2026-12-07  4:00:44 0 [Note] WSREP: cannot contact 127.0.0.1:26401\n\
                   2026-12-07  4:00:45 0 [Note] WSREP: cannot contact 127.0.0.1:26401\n\
                   2026-12-07 14:00:45 0 [Note] WSREP: cannot contact 127.0.0.1:26401\n\
                   no timestamp\nno timestamp";
        assert_eq!(
            fold_repeats(log.lines()),
            [
                "  2026-12-07  4:00:43 0 [Note] WSREP: starting",
                "  2026-12-07  4:00:44 0 [Note] WSREP: cannot contact 127.0.0.1:26401  (and 2 more times)",
                "  no timestamp  (and 1 more times)",
            ]
        );
    }

    #[test]
    fn tail_and_watch() {
        let path = std::env::temp_dir().join(format!("lockstep-tail-{}.log", std::process::id()));
        std::fs::write(&path, "old joiner line\n").unwrap();
        let mut watch = LogWatch::from_end(&path);
        assert!(!watch.saw("joiner"));
        let lines: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, format!("old joiner line\n{lines}-> joiner\n")).unwrap();
        assert!(watch.saw("-> joiner"));
        let tail = tail_lines(&path, 2);
        assert_eq!(tail, "  line 30\n  -> joiner");
        let _ = std::fs::remove_file(path);
        assert!(tail_lines(Path::new("/nonexistent/x"), 3).contains("does not exist"));
    }

    #[test]
    fn options_become_values_of_their_variables_type() {
        assert_eq!(as_variable_value("yes", "BOOLEAN"), "ON");
        assert_eq!(as_variable_value("no", "BOOLEAN"), "OFF");
        assert_eq!(as_variable_value("100", "BIGINT"), "100");
        assert_eq!(as_variable_value("PT1.5S", "DOUBLE"), "1.500000");
        assert_eq!(as_variable_value("5", "DOUBLE"), "5.000000");
        assert_eq!(as_variable_value("3", "VARCHAR"), "'3'", "Galera's repl.commit_order is text");
        assert_eq!(as_variable_value("none", "VARCHAR"), "'none'", "lockstep.log_sync=none is a word, not false");
        assert_eq!(as_variable_value("tcp://0.0.0.0:4567", "VARCHAR"), "'tcp://0.0.0.0:4567'");
        assert_eq!(as_variable_value("it's", "VARCHAR"), "'it\\'s'");
    }
}
