//! The copy of the source node the lockstep cluster starts from:
//! mariabackup while the source keeps taking writes, then its prepare
//! step; the GTID position the copy holds is where replication starts.

use super::gtid::Position;
use super::source::Source;
use crate::cluster::{find_program, Error, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How often the copy's progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

#[derive(Clone, Debug)]
pub struct Copy {
    /// What the copy holds of the source's writes.
    pub position: Position,
    pub bytes: u64,
    pub took: Duration,
}

/// Copies `source` into `dir` (which must not exist) and prepares the copy.
/// `progress` hears the bytes copied so far and the source's data size.
pub fn take(source: &Source, dir: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Copy> {
    let started = Instant::now();
    let backup = find_program("mariadb-backup").ok_or_else(|| Error::msg("mariadb-backup is not installed"))?;
    let expected = data_size(source);
    // --defaults-file must come first; mariabackup finds the datadir there.
    let mut child = logged(&backup, dir, "backup")?
        .arg(format!("--defaults-file={}", source.cnf.display()))
        .args(["--backup", "--galera-info", "--user=root"])
        .arg(format!("--socket={}", source.socket.display()))
        .arg(format!("--target-dir={}", dir.display()))
        .spawn()
        .map_err(|e| Error::io("starting mariadb-backup", e))?;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::io("waiting for mariadb-backup", e))? {
            break status;
        }
        progress(tree_size(dir), expected);
        std::thread::sleep(PROGRESS_EVERY);
    };
    let bytes = tree_size(dir);
    progress(bytes, expected);
    if !status.success() {
        return Err(failed(dir, "backup", &format!("mariadb-backup --backup {status}")));
    }
    let prepared = logged(&backup, dir, "prepare")?
        .arg("--prepare")
        .arg(format!("--target-dir={}", dir.display()))
        .status()
        .map_err(|e| Error::io("starting mariadb-backup --prepare", e))?;
    if !prepared.success() {
        return Err(failed(dir, "prepare", &format!("mariadb-backup --prepare {prepared}")));
    }
    let position = binlog_position(dir)?;
    Ok(Copy { position, bytes, took: started.elapsed() })
}

/// mariabackup's record of the binary log position (file, offset, GTIDs):
/// MariaDB 11.x names it `mariadb_backup_binlog_info`, 10.11
/// `xtrabackup_binlog_info`.
const BINLOG_INFO: [&str; 2] = ["mariadb_backup_binlog_info", "xtrabackup_binlog_info"];

/// The GTID position the copy holds.
fn binlog_position(dir: &Path) -> Result<Position> {
    let path = BINLOG_INFO.iter().map(|name| dir.join(name)).find(|p| p.exists()).unwrap_or_else(|| dir.join(BINLOG_INFO[1]));
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(format!("reading {} (was the source's binary log on?)", path.display()), e))?;
    let gtids = text.split_whitespace().nth(2).unwrap_or("");
    Position::parse(gtids).map_err(|e| Error::msg(format!("{}: {e}", path.display())))
}

/// mariabackup for `step`, its output into a log beside the copy, not in
/// it (the copy becomes a datadir; its --defaults-file must stay first).
fn logged(backup: &Path, dir: &Path, step: &str) -> Result<Command> {
    let path = log_path(dir, step);
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let log_err = log.try_clone().map_err(|e| Error::io("duplicating a log file handle", e))?;
    let mut command = Command::new(backup);
    command.stdin(Stdio::null()).stdout(log).stderr(log_err);
    Ok(command)
}

fn log_path(dir: &Path, step: &str) -> PathBuf {
    dir.with_file_name(format!("mariadb-backup-{step}.log"))
}

fn failed(dir: &Path, step: &str, what: &str) -> Error {
    let log = log_path(dir, step);
    Error::msg(format!("{what}; last lines of {}:\n{}", log.display(), crate::cluster::tail_lines(&log, 15)))
}

/// The source's InnoDB data and index bytes: what the copy will about
/// come to (0 when it cannot say).
fn data_size(source: &Source) -> u64 {
    let sql = "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables";
    let value = source.connect().and_then(|mut c| c.query_value(sql));
    value.ok().flatten().and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn tree_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(|e| e.ok())
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_size(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_position_comes_from_either_name_of_the_binlog_record() {
        for name in BINLOG_INFO {
            let dir = std::env::temp_dir().join(format!("lockstep-copy-{}-{name}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), "binlog.000002\t1234\t0-1-5\n").unwrap();
            let position = binlog_position(&dir);
            std::fs::remove_dir_all(&dir).unwrap();
            assert_eq!(position.unwrap(), Position::parse("0-1-5").unwrap(), "{name}");
        }
    }
}
