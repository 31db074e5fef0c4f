//! A node whose last run did not close cleanly (`grastate.dat` has its
//! history and seqno -1) keeps its position in InnoDB only. Debian's
//! `mariadb.service` and `mysqld_safe` ask InnoDB first (`galera_recovery`:
//! `mariadbd --wsrep-recover`, then `--wsrep_start_position`); a server
//! started by hand does not, and Galera then takes the node for an empty
//! one (a full SST, or a component bootstrapped at seqno -1). Here an
//! unknown position means "ask InnoDB": the provider runs the same
//! recovery itself, with the server's own binary and arguments, before
//! the server opens InnoDB (the provider is loaded first with every SST
//! method but mysqldump).
//!
//! The position InnoDB reports is not always a prefix of the history.
//! With the binary log on and `innodb_flush_log_at_trx_commit=0`, a
//! transaction prepares (its XID, the seqno, is in InnoDB's log) before it
//! enters commit order, so after a crash InnoDB can hold seqno N+2
//! prepared and nothing of N+1; crash recovery then commits N+2 because
//! the binary log has it, and reports N+2 as the position: N+1 is missing
//! below it, for good if the node goes on from there (MariaDB says so in
//! handler.cc; Galera's nodes come back with such holes). Run with
//! `--log-warnings=3`, the recovery names every transaction it commits,
//! and logs the last seqno it holds without a gap: the seqnos in between
//! that it did not commit are missing. The node then takes its state from
//! the last seqno before the first hole, and skips what it holds above it
//! (see `Holes`).
//!
//! What a recovery found is kept in `lockstep_recovery.dat` until the
//! holes are filled: a second crash before that must not forget them
//! (that recovery sees them as history, not as prepared transactions),
//! and a recovery run before the server starts (the package's step
//! before `galera_recovery`, `lockstep recover`) leaves it for the
//! provider.
//!
//! The recovery is a child process, as galera_recovery's is: InnoDB's
//! crash recovery cannot run inside a server that has not initialised its
//! engines, and a server that has (mysqldump SST) already holds the files,
//! so there the position stays unknown, as before.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::gtid::{Gtid, Seqno, Uuid};
use crate::log;

/// Set in the child's environment: a provider that finds it never starts
/// another recovery (the child loads no provider, but one that did must
/// not recurse).
const GUARD: &str = "LOCKSTEP_WSREP_RECOVER";

/// How long InnoDB's crash recovery may take: a large redo log takes
/// minutes; a child that never ends must not keep the server from
/// starting (it then joins as a node of unknown position).
const RECOVERY_LIMIT: Duration = Duration::from_secs(30 * 60);

/// The record of a recovery, in the data directory.
pub const RECORD: &str = "lockstep_recovery.dat";

/// What InnoDB's crash recovery left: the position it reports, and the
/// seqnos at or below it that it does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub position: Gtid,
    pub missing: BTreeSet<Seqno>,
}

impl Recovered {
    /// The last seqno before which the data holds everything.
    pub fn contiguous(&self) -> Seqno {
        self.missing.first().map_or(self.position.seqno, |m| m - 1)
    }
}

/// The position InnoDB recovers in `data_dir`, by `mariadbd --wsrep-recover`
/// run as this server was started; None when it cannot be learned (logged).
/// What it found is recorded (see [`record`]).
pub fn ask_innodb(data_dir: &Path) -> Option<Recovered> {
    if std::env::var_os(GUARD).is_some() {
        return None;
    }
    if innodb_open_here(data_dir) {
        log::info!("the position is unknown and InnoDB is already open in this server (an SST method that starts it first): the node joins as one without a position");
        return None;
    }
    let (exe, args) = own_command()?;
    log::info!("grastate.dat has no position (the last run did not close cleanly): asking InnoDB, as galera_recovery does: {} --wsrep-recover", exe.display());
    recover(&exe, &args, data_dir)
}

/// Runs `exe args --wsrep-recover` on `data_dir`'s server, records and
/// returns what it found (None, logged, when it found no position).
pub fn recover(exe: &Path, args: &[String], data_dir: &Path) -> Option<Recovered> {
    let log_file = data_dir.join(format!("wsrep-recover.{}.log", std::process::id()));
    let started = Instant::now();
    let ran = run_recovery(exe, args, &log_file);
    let text = std::fs::read_to_string(&log_file).unwrap_or_default();
    let _ = std::fs::remove_file(&log_file);
    match ran.and_then(|()| parse(&text).ok_or_else(|| "no \"WSREP: Recovered position\" line".to_string())) {
        Ok(found) => {
            let found = record(data_dir, found);
            log::info!("InnoDB recovered position {} ({:.1}s){}", found.position, started.elapsed().as_secs_f64(), missing_note(&found));
            Some(found)
        }
        Err(why) => {
            let tail: Vec<&str> = text.lines().rev().take(5).collect();
            log::warning!("asking InnoDB for the position failed: {}; the node joins as one without a position. Last lines of the recovery's log: {}", why, tail.into_iter().rev().collect::<Vec<_>>().join(" | "));
            None
        }
    }
}

fn missing_note(r: &Recovered) -> String {
    if r.missing.is_empty() {
        return String::new();
    }
    let list: Vec<String> = r.missing.iter().map(|s| s.to_string()).collect();
    format!("; crash recovery committed prepared transactions out of order: seqnos {} are missing below it and come again from the cluster's log", list.join(", "))
}

/// Runs the recovery child to its end (within [`RECOVERY_LIMIT`]).
fn run_recovery(exe: &Path, args: &[String], log_file: &Path) -> Result<(), String> {
    let mut child = Command::new(exe)
        .args(args)
        .arg("--wsrep-recover")
        // Names each transaction crash recovery commits (see the module).
        .arg("--log-warnings=3")
        .arg(format!("--log-error={}", log_file.display()))
        .env(GUARD, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {}", exe.display(), e))?;
    let deadline = Instant::now() + RECOVERY_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("it exited with {}", status)),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("it did not finish within {:?}", RECOVERY_LIMIT));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for it: {}", e)),
        }
    }
}

/// This server's binary and arguments (its configuration: `--defaults-file`
/// first, as mariadbd requires), from /proc.
fn own_command() -> Option<(PathBuf, Vec<String>)> {
    let exe = std::fs::read_link("/proc/self/exe").ok()?;
    let raw = std::fs::read("/proc/self/cmdline").ok()?;
    let args = raw.split(|b| *b == 0).skip(1).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    Some((exe, args))
}

/// Whether this process holds InnoDB's files of `data_dir` open already.
fn innodb_open_here(data_dir: &Path) -> bool {
    let wanted = ["ibdata1", "ib_logfile0"].map(|f| std::fs::canonicalize(data_dir.join(f)).ok());
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else { return false };
    fds.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()).any(|target| wanted.iter().flatten().any(|w| *w == target))
}

/// The recovery's findings from its log: the position (the last
/// "Recovered position: uuid:seqno"), and below it the seqnos after the
/// last one held without a gap ("Last wsrep seqno to be recovered") that
/// were not committed ("Committed transaction with xid").
pub fn parse(log: &str) -> Option<Recovered> {
    let text = log.lines().rev().find_map(|l| after(l, "WSREP: Recovered position: "))?;
    let (uuid, seqno) = text.rsplit_once(':')?;
    let uuid = Uuid::parse(uuid).filter(|u| !u.is_nil())?;
    let position = seqno.trim().parse::<i64>().ok().filter(|s| *s >= 0)?;
    let mut missing = BTreeSet::new();
    if let Some(held) = log.lines().rev().find_map(|l| after(l, "WSREP: Last wsrep seqno to be recovered ")).and_then(|s| s.trim().parse::<Seqno>().ok()) {
        let committed: BTreeSet<Seqno> = log.lines().filter_map(|l| after(l, "Committed transaction with xid ")).filter_map(|s| s.trim().parse().ok()).collect();
        missing = (held.max(0) + 1..=position).filter(|s| !committed.contains(s)).collect();
    }
    Some(Recovered { position: Gtid::new(uuid, position), missing })
}

fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.split_once(marker).map(|(_, rest)| rest.trim())
}

/// Writes `found` to the record, with the holes of an earlier record of
/// the same history that are still missing (a crash before they were
/// filled); returns what it wrote.
pub fn record(dir: &Path, mut found: Recovered) -> Recovered {
    if let Some(old) = recorded(dir).filter(|o| o.position.uuid == found.position.uuid) {
        found.missing.extend(old.missing.into_iter().filter(|s| *s <= found.position.seqno));
    }
    write(dir, &found);
    found
}

fn write(dir: &Path, r: &Recovered) {
    let list: Vec<String> = r.missing.iter().map(|s| s.to_string()).collect();
    let text = format!(
        "# lockstep: what InnoDB's crash recovery left (mariadbd --wsrep-recover), until the missing seqnos are applied\nuuid:    {}\nseqno:   {}\nmissing: {}\n",
        r.position.uuid,
        r.position.seqno,
        list.join(" ")
    );
    let path = dir.join(RECORD);
    let tmp = path.with_extension("dat.tmp");
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::File::open(&tmp)?.sync_all()).and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        log::warning!("write file({}) failed({}): a second crash before the missing seqnos are applied would not find them", path.display(), e);
    }
}

/// The record in `dir`, if there is one that reads.
pub fn recorded(dir: &Path) -> Option<Recovered> {
    let text = std::fs::read_to_string(dir.join(RECORD)).ok()?;
    let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    let uuid = Uuid::parse(field("uuid:")?)?;
    let seqno = field("seqno:")?.parse().ok()?;
    let missing = field("missing:")?.split_whitespace().map(|s| s.parse()).collect::<Result<_, _>>().ok()?;
    Some(Recovered { position: Gtid::new(uuid, seqno), missing })
}

/// The data no longer lacks what the record names (the holes were
/// applied, or a state transfer replaced the data).
pub fn forget(dir: &Path) {
    match std::fs::remove_file(dir.join(RECORD)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => log::warning!("remove file({}) failed({})", dir.join(RECORD).display(), e),
    }
}

/// The recovered data's holes while the node fills them: seqnos after
/// `contiguous` up to the recovered position that the data holds are
/// passed, the missing ones applied. One applier takes them, in order.
#[derive(Debug)]
pub(super) struct Holes {
    dir: PathBuf,
    recovered: Recovered,
    /// The data held everything up to here (before the first hole, which
    /// stays where it was as the holes are filled).
    from: Seqno,
}

impl Holes {
    pub fn new(dir: &Path, recovered: Recovered) -> Holes {
        let from = recovered.contiguous();
        Holes { dir: dir.to_path_buf(), recovered, from }
    }

    /// Whether the data holds `seqno` already (it is skipped).
    pub fn holds(&self, seqno: Seqno) -> bool {
        seqno > self.from && seqno <= self.recovered.position.seqno && !self.recovered.missing.contains(&seqno)
    }

    /// `seqno` was applied or passed: the record follows, and goes once
    /// the data holds everything up to the recovered position. True then.
    pub fn passed(&mut self, seqno: Seqno) -> bool {
        if self.recovered.missing.remove(&seqno) {
            write(&self.dir, &self.recovered);
        }
        let done = seqno >= self.recovered.position.seqno && self.recovered.missing.is_empty();
        if done {
            forget(&self.dir);
        }
        done
    }

    pub fn position(&self) -> Gtid {
        self.recovered.position
    }

    pub fn contiguous(&self) -> Seqno {
        self.from
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "f232c645-c4b3-4f0e-956d-635e2f381c35";

    #[test]
    fn the_recovered_position_is_the_last_one_logged() {
        let log = format!("x [Note] InnoDB: y\nx [Note] WSREP: Recovered position: {U}:17\n");
        let r = parse(&log).unwrap();
        assert_eq!((r.position.seqno, r.missing.len()), (17, 0));
        assert_eq!(parse("WSREP: Recovered position: 00000000-0000-0000-0000-000000000000:-1"), None);
        assert_eq!(parse(&format!("WSREP: Recovered position: {U}:-1")), None);
        assert_eq!(parse("nothing"), None);
    }

    /// Two recoveries seen here: prepared 24257, 24258 and 24261 after
    /// 24256 committed; 24259 and 24260 never reached InnoDB's log.
    #[test]
    fn what_crash_recovery_did_not_commit_below_its_position_is_missing() {
        let log = format!(
            "WSREP: Discovered discontinuity in recovered wsrep transaction XIDs. Truncating the recovery list to 2 entries\n\
             WSREP: Last wsrep seqno to be recovered 24258\n\
             Committed transaction with xid 24257\nCommitted transaction with xid 24258\nCommitted transaction with xid 24261\n\
             WSREP: Recovered position: {U}:24261\n"
        );
        let r = parse(&log).unwrap();
        assert_eq!(r.missing, BTreeSet::from([24259, 24260]));
        assert_eq!(r.contiguous(), 24258);
        let contiguous = format!("WSREP: Last wsrep seqno to be recovered 26003\nCommitted transaction with xid 26002\nCommitted transaction with xid 26003\nWSREP: Recovered position: {U}:26003\n");
        assert!(parse(&contiguous).unwrap().missing.is_empty());
    }

    #[test]
    fn a_second_crash_keeps_the_first_ones_holes_until_they_are_filled() {
        let tmp = tempfile::tempdir().unwrap();
        let uuid = Uuid::parse(U).unwrap();
        let first = Recovered { position: Gtid::new(uuid, 10), missing: BTreeSet::from([8]) };
        assert_eq!(record(tmp.path(), first.clone()), first);
        let second = record(tmp.path(), Recovered { position: Gtid::new(uuid, 20), missing: BTreeSet::from([19]) });
        assert_eq!(second.missing, BTreeSet::from([8, 19]));
        assert_eq!(recorded(tmp.path()), Some(second.clone()));
        let mut holes = Holes::new(tmp.path(), second);
        assert!(!holes.holds(7) && !holes.holds(8) && holes.holds(9) && !holes.holds(19) && holes.holds(20) && !holes.holds(21));
        assert!(!holes.passed(8));
        assert!(holes.holds(9), "what the data holds stays so once the first hole is filled");
        assert_eq!(recorded(tmp.path()).unwrap().missing, BTreeSet::from([19]));
        assert!(!holes.passed(19) && holes.passed(20));
        assert_eq!(recorded(tmp.path()), None);
    }

    #[test]
    fn a_test_process_holds_no_innodb_files() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(!innodb_open_here(tmp.path()));
        std::fs::write(tmp.path().join("ibdata1"), b"").unwrap();
        let _held = std::fs::File::open(tmp.path().join("ibdata1")).unwrap();
        assert!(innodb_open_here(tmp.path()));
    }
}
