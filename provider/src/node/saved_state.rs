//! `grastate.dat`: the node's position in its history, kept in Galera's
//! format because operators, `galera_recovery`, the SST scripts and mtr
//! tests read and edit this very file.
//!
//! While the node runs, `seqno` is -1 (the position lives in InnoDB and a
//! crash must send the server to `--wsrep-recover`); a clean close writes
//! the last committed seqno so that the next start continues from it.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::gtid::{Seqno, Uuid, SEQNO_UNDEFINED};
use crate::log;

pub const FILE_NAME: &str = "grastate.dat";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Position {
    pub uuid: Uuid,
    pub seqno: Seqno,
    pub safe_to_bootstrap: bool,
}

pub struct SavedState {
    path: PathBuf,
    current: Position,
}

impl SavedState {
    /// Reads the file in `dir`; a missing or unreadable file is an empty
    /// state (a new node), as with Galera.
    pub fn open(dir: &Path) -> SavedState {
        let path = dir.join(FILE_NAME);
        let current = match fs::read_to_string(&path) {
            Ok(text) => parse(&text),
            Err(e) => {
                log::warning!("Could not open state file for reading: '{}': {}", path.display(), e);
                Position { uuid: Uuid::NIL, seqno: SEQNO_UNDEFINED, safe_to_bootstrap: true }
            }
        };
        log::info!("Found saved state: {}:{}, safe_to_bootstrap: {}", current.uuid, current.seqno, current.safe_to_bootstrap as u8);
        SavedState { path, current }
    }

    pub fn get(&self) -> Position {
        self.current
    }

    /// The data directory (where the other state files live too).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Records a position; writes only when something changed.
    pub fn set(&mut self, p: Position) {
        if p == self.current {
            return;
        }
        self.current = p;
        if let Err(e) = self.write() {
            log::warning!("write file({}) failed({})", self.path.display(), e);
        }
    }

    fn write(&self) -> std::io::Result<()> {
        // Write a sibling and rename it over: a crash mid-write must never
        // leave a torn file that hides the history UUID.
        let tmp = self.path.with_extension("dat.tmp");
        let mut f = fs::File::create(&tmp)?;
        f.write_all(render(&self.current).as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &self.path)
    }
}

pub fn render(p: &Position) -> String {
    format!(
        "# GALERA saved state\nversion: 2.1\nuuid:    {}\nseqno:   {}\nsafe_to_bootstrap: {}\n",
        p.uuid, p.seqno, p.safe_to_bootstrap as u8
    )
}

/// Parses Galera's format leniently: unknown lines are ignored, a bad UUID
/// reads as undefined, as Galera does.
pub fn parse(text: &str) -> Position {
    let mut p = Position { uuid: Uuid::NIL, seqno: SEQNO_UNDEFINED, safe_to_bootstrap: true };
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(key), Some(value)) = (words.next(), words.next()) else { continue };
        match key {
            "uuid:" => p.uuid = Uuid::parse(value).unwrap_or(Uuid::NIL),
            "seqno:" => p.seqno = value.parse().unwrap_or(SEQNO_UNDEFINED),
            "safe_to_bootstrap:" => p.safe_to_bootstrap = value != "0",
            _ => {}
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn galeras_file_parses() {
        let text = "# GALERA saved state\nversion: 2.1\nuuid:    74f67236-0c4d-11ef-8e36-6a3e6c0b5a1c\nseqno:   234\nsafe_to_bootstrap: 0\n";
        let p = parse(text);
        assert_eq!(p.uuid.to_string(), "74f67236-0c4d-11ef-8e36-6a3e6c0b5a1c");
        assert_eq!(p.seqno, 234);
        assert!(!p.safe_to_bootstrap);
        assert_eq!(render(&p), text);
    }

    #[test]
    fn garbage_is_an_empty_state() {
        let p = parse("uuid: nonsense\nseqno: x\n");
        assert_eq!((p.uuid, p.seqno, p.safe_to_bootstrap), (Uuid::NIL, -1, true));
    }

    #[test]
    fn set_writes_and_open_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut s = SavedState::open(dir);
        let p = Position { uuid: Uuid::random(), seqno: 9, safe_to_bootstrap: true };
        s.set(p);
        assert_eq!(SavedState::open(dir).get(), p);
    }
}
