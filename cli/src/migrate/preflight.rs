//! What a migration needs of its source, checked before anything is
//! copied, and said all at once with the fix for each: a migration that
//! fails an hour into its copy because the binary log was off costs the
//! operator that hour.

use super::gtid::Position;
use super::source::Source;
use crate::cluster::{Conn, Error, Result, ServerVar, StatusVar};
use lockstep_config::Shown;
use std::collections::BTreeSet;

/// The account the lockstep side replicates with (on the source; the copy
/// brings it along, so reverse replication can use it too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replication {
    pub user: String,
    pub password: String,
}

/// What the lockstep side is called in replication: neither may be the
/// source's, or the source would take its events for its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub server_id: u32,
    pub domain_id: u32,
}

/// What the checks learned of the source.
#[derive(Clone, Debug)]
pub struct Facts {
    /// The GTID domains its cluster writes in.
    pub domains: BTreeSet<u32>,
    pub position: Position,
    pub version: String,
}

const VARIABLES: &str = "SELECT @@log_bin, @@log_slave_updates, @@binlog_format, @@wsrep_on, @@wsrep_gtid_mode, \
    @@wsrep_gtid_domain_id, @@gtid_domain_id, @@server_id, @@gtid_binlog_pos, @@version";

/// Every problem at once, or what the source is.
pub fn check(source: &Source, repl: &Replication, ours: Identity) -> Result<Facts> {
    let mut conn = source.connect()?;
    let row = conn.query(VARIABLES)?.into_iter().next().ok_or_else(|| Error::msg("the source returned no variables"))?;
    let [log_bin, log_slave_updates, binlog_format, wsrep_on, gtid_mode, wsrep_domain, domain, server_id, position, version] = &row[..] else {
        return Err(Error::msg(format!("the source's variables came back as {row:?}")));
    };
    let mut problems = Vec::new();
    let mut need = |ok: bool, problem: String| {
        if !ok {
            problems.push(problem)
        }
    };
    let cnf = source.cnf.display();
    need(log_bin == "1", format!("the binary log is off: add log_bin=binlog to [mysqld] in {cnf} and restart the node"));
    need(log_slave_updates == "1", format!("log_slave_updates is off, so the other Galera nodes' writes are not in this node's binary log: add log_slave_updates=ON to {cnf} and restart the node"));
    need(binlog_format == "ROW", format!("binlog_format is {binlog_format}: Galera needs ROW"));
    need(wsrep_on == "1", "wsrep_on is off: the source is not a Galera node".into());
    need(gtid_mode == "1", format!("wsrep_gtid_mode is off: without it each Galera node numbers the cluster's writes its own way, and replication could not move to another node; add wsrep_gtid_mode=ON to {cnf} on every node (rolling restart)"));
    let source_id: u32 = server_id.parse().unwrap_or(0);
    need(source_id != ours.server_id, format!("server_id {source_id} is the source's too: choose another for the lockstep cluster (--server-id)"));
    let domains: BTreeSet<u32> = [wsrep_domain, domain].iter().filter_map(|d| d.parse().ok()).collect();
    need(!domains.contains(&ours.domain_id), format!("GTID domain {} is one the source writes in ({domains:?}): choose another for the lockstep cluster (--domain-id)", ours.domain_id));
    need(status(&mut conn, &ServerVar::ClusterStatus.shown()).as_deref() == Some("Primary"), "the source is not in a Primary component".into());
    need(is_synced(&mut conn), "the source node is not Synced (a donor or joiner copies a moving target)".into());
    if let Err(problem) = replication_rights(source, repl) {
        problems.push(problem);
    }
    if crate::cluster::find_program("mariadb-backup").is_none() {
        problems.push("mariadb-backup is not installed: install the mariadb-backup package".into());
    }
    let position = Position::parse(position).map_err(Error::msg)?;
    match problems.is_empty() {
        true => Ok(Facts { domains, position, version: version.clone() }),
        false => Err(Error::msg(format!("the source {} is not ready to migrate from:\n  - {}", source.name(), problems.join("\n  - ")))),
    }
}

fn status(conn: &mut Conn, name: &str) -> Option<String> {
    conn.query(&format!("SHOW GLOBAL STATUS LIKE '{name}'")).ok()?.into_iter().next()?.pop()
}

/// `wsrep_local_state_comment` is Synced.
pub(super) fn is_synced(conn: &mut Conn) -> bool {
    status(conn, &StatusVar::LocalStateComment.shown()).as_deref() == Some("Synced")
}

/// Connects as the replication user, as the replica will, and reads its grants.
fn replication_rights(source: &Source, repl: &Replication) -> std::result::Result<(), String> {
    let create = format!(
        "create it on the source: CREATE USER '{u}'@'%' IDENTIFIED BY '...'; GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{u}'@'%'",
        u = repl.user
    );
    let mut conn = Conn::connect_tcp(&source.host, source.port, &repl.user, &repl.password)
        .map_err(|e| format!("the replication user cannot connect to {} ({e}): {create}", source.name()))?;
    let grants = conn.query("SHOW GRANTS").map_err(|e| format!("SHOW GRANTS as {}: {e}", repl.user))?.concat().join(" ");
    let may = ["REPLICATION SLAVE", "REPLICATION REPLICA", "ALL PRIVILEGES"].iter().any(|g| grants.contains(g));
    match may {
        true => Ok(()),
        false => Err(format!("{} may not replicate (its grants: {grants}): GRANT REPLICATION SLAVE ON *.* TO it", repl.user)),
    }
}
