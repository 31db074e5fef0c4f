//! What systemd's `galera_recovery` does before it starts a node that
//! crashed: `grastate.dat` says seqno -1 (the server was running), so the
//! position lives only in InnoDB. `mariadbd --wsrep-recover` reads it
//! there and logs it; the node then starts with `--wsrep_start_position`,
//! and can rejoin by IST instead of a full SST. A lockstep node is
//! started as with lockstep's package: `lockstep recover` runs first (its
//! drop-in for `mariadb.service`), and records what InnoDB's crash
//! recovery left out (see `crate::recover`).

use std::path::Path;
use std::process::Command;

use super::spec::NodePaths;

/// The `--wsrep_start_position=uuid:seqno` argument for a node that
/// crashed, when InnoDB knows its position; None for a node that stopped
/// cleanly (grastate holds the position), a new node, or when recovery
/// fails (the node then joins by SST, as it would have anyway).
/// `lockstep_step`: run `lockstep recover` first.
pub fn start_position(mariadbd: &Path, paths: &NodePaths, lockstep_step: bool) -> Option<String> {
    let grastate = std::fs::read_to_string(paths.datadir.join("grastate.dat")).ok()?;
    if !crate::recover::crashed(&grastate) {
        return None;
    }
    if lockstep_step {
        crate::recover::recover(mariadbd, &[format!("--defaults-file={}", paths.cnf.display())], &paths.datadir);
    }
    let log = paths.dir.join("wsrep-recover.log");
    // Appended to, as the error log is: every recovery stays readable.
    let status = Command::new(mariadbd)
        .arg(format!("--defaults-file={}", paths.cnf.display()))
        .arg("--wsrep-recover")
        .arg(format!("--log-error={}", log.display()))
        .output()
        .ok()?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let position = recovered(&text);
    if position.is_none() {
        eprintln!("wsrep-recover found no position (exit {:?}); the node will join by SST", status.status.code());
    }
    position.map(|p| format!("--wsrep_start_position={p}"))
}

/// "WSREP: Recovered position: uuid:seqno" from the recovery's log, as
/// galera_recovery reads it.
fn recovered(log: &str) -> Option<String> {
    let line = log.lines().rev().find_map(|l| l.split_once("WSREP: Recovered position: ").map(|(_, p)| p.trim()))?;
    let (uuid, seqno) = line.rsplit_once(':')?;
    (seqno.parse::<i64>().ok()? >= 0 && uuid.len() == 36).then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recovered_position_is_read_from_the_log() {
        let log = "2026-11-22 11:28:06 0 [Note] InnoDB: x\n2026-11-22 11:28:06 0 [Note] WSREP: Recovered position: f232c645-c4b3-4f0e-956d-635e2f381c35:17\n";
        assert_eq!(recovered(log).as_deref(), Some("f232c645-c4b3-4f0e-956d-635e2f381c35:17"));
        assert_eq!(recovered("WSREP: Recovered position: 00000000-0000-0000-0000-000000000000:-1"), None);
        assert_eq!(recovered("nothing"), None);
    }
}
