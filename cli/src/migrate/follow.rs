//! The lockstep cluster following the Galera cluster by MariaDB's own GTID
//! replication: one lockstep node (the replica) replicates from one Galera
//! node (the source); wsrep carries what it applies to the other lockstep
//! nodes. When either end fails, replication resumes between two others
//! at the position the lockstep cluster holds, so that nothing is applied
//! twice or skipped.

use super::gtid::Position;
use super::preflight::Replication;
use super::source::Source;
use super::Migration;
use crate::cluster::{Cluster, Conn, Error, Node, Result};
use std::collections::BTreeMap;

/// Where the replica stands.
#[derive(Clone, Debug, Default)]
pub struct Lag {
    /// Transactions the source wrote that the lockstep side has not applied.
    pub behind: u64,
    /// `Seconds_Behind_Master`, while the replica's threads run.
    pub seconds: Option<u64>,
    pub applied: Position,
    pub source: Position,
    pub io_running: String,
    pub sql_running: String,
    /// The replica's last error, if any.
    pub error: String,
}

impl std::fmt::Display for Lag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seconds = self.seconds.map_or("-".into(), |s| format!("{s}s"));
        write!(f, "{} transactions behind ({seconds}), applied {} of {}, io {} sql {}", self.behind, self.applied, self.source, self.io_running, self.sql_running)?;
        if !self.error.is_empty() {
            write!(f, ", last error: {}", self.error)?;
        }
        Ok(())
    }
}

/// Starts `replica` replicating from `source` after `from`.
pub fn start(replica: Node, source: &Source, repl: &Replication, from: &Position) -> Result<()> {
    let mut conn = replica.connect()?;
    conn.execute(&format!("SET GLOBAL gtid_slave_pos = {}", quote(&from.to_string())))?;
    conn.execute(&change_master(source, repl))?;
    conn.execute("START SLAVE")?;
    Ok(())
}

/// The replica's `CHANGE MASTER`: by GTID, from where its own position
/// says, retrying a lost connection every second.
fn change_master(source: &Source, repl: &Replication) -> String {
    format!(
        "CHANGE MASTER TO MASTER_HOST={}, MASTER_PORT={}, MASTER_USER={}, MASTER_PASSWORD={}, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
        quote(&source.host),
        source.port,
        quote(&repl.user),
        quote(&repl.password)
    )
}

/// An SQL string literal.
pub(super) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The lag of the migration's replica behind its source.
pub fn lag(m: &Migration, cluster: &Cluster) -> Result<Lag> {
    let mut replica = cluster.node(m.replica).connect()?;
    let status = slave_status(&mut replica)?;
    let applied = applied(&mut replica, m)?;
    let source = binlog_position(&mut m.source().connect()?)?.only(&m.domains);
    let field = |name: &str| status.get(name).cloned().unwrap_or_default();
    Ok(Lag {
        behind: applied.behind(&source),
        seconds: field("Seconds_Behind_Master").parse().ok(),
        applied,
        source,
        io_running: field("Slave_IO_Running"),
        sql_running: field("Slave_SQL_Running"),
        error: [field("Last_IO_Error"), field("Last_SQL_Error")].into_iter().filter(|e| !e.is_empty()).collect::<Vec<_>>().join("; "),
    })
}

/// `SHOW SLAVE STATUS` by column name (empty: no replication here).
fn slave_status(conn: &mut Conn) -> Result<BTreeMap<String, String>> {
    let result = conn.query_results("SHOW SLAVE STATUS")?.pop().unwrap_or_default();
    let Some(row) = result.text_rows().into_iter().next() else { return Ok(BTreeMap::new()) };
    Ok(result.columns.into_iter().zip(row).collect())
}

/// What a lockstep node holds of the source's writes, read after it has
/// applied everything the cluster committed before the read
/// (`wsrep_sync_wait`). Two records of it, the furthest counts: the rows
/// of `mysql.gtid_slave_pos`, which the replica writes in the same
/// transaction as each replicated one and wsrep carries to every node
/// (seen here: 57 rows on node 2 while node 1 replicated), and the
/// node's binary log, where the replicated transactions keep the
/// source's GTIDs. A domain that neither shows has not moved since the
/// copy, which every node of the lockstep cluster descends from.
pub fn applied(conn: &mut Conn, m: &Migration) -> Result<Position> {
    let rows = conn.query(
        "SET SESSION wsrep_sync_wait = 1; \
         SELECT p.domain_id, p.server_id, p.seq_no FROM mysql.gtid_slave_pos p \
         JOIN (SELECT domain_id, MAX(sub_id) AS sub_id FROM mysql.gtid_slave_pos GROUP BY domain_id) last \
         ON p.domain_id = last.domain_id AND p.sub_id = last.sub_id",
    )?;
    let text: Vec<String> = rows.iter().map(|r| r.join("-")).collect();
    let recorded = Position::parse(&text.join(",")).map_err(Error::msg)?;
    let binlog = binlog_position(conn)?;
    Ok(m.copied.furthest(&recorded).furthest(&binlog).only(&m.domains))
}

/// Where a server's binary log ends (`@@gtid_binlog_pos`).
pub(super) fn binlog_position(conn: &mut Conn) -> Result<Position> {
    let text = conn.query_value("SELECT @@gtid_binlog_pos")?.unwrap_or_default();
    Position::parse(&text).map_err(Error::msg)
}

/// One look at both ends, and what was done about a failed one: the
/// replica's node gone (replication resumes on another lockstep node),
/// or the source gone (the replica follows another Galera node). Also
/// takes replication off a former replica that came back, so that only
/// one node replicates.
pub fn keep_following(m: &mut Migration, cluster: &Cluster) -> Result<Vec<String>> {
    let mut done = Vec::new();
    if cluster.node(m.replica).connect().is_err() {
        let from = m.replica;
        let (node, position) = new_replica(m, cluster)?;
        m.replica = node;
        start(cluster.node(node), &m.source(), &m.replication, &position)?;
        done.push(format!("node{from} does not answer: replication resumes on node{node} after {position}"));
    }
    if !synced(&m.source()) {
        let gone = m.source().name();
        let next = (1..m.sources.len()).map(|i| (m.following + i) % m.sources.len()).find(|i| synced(&m.sources[*i]));
        let next = next.ok_or_else(|| Error::msg(format!("the source {gone} does not answer, and no other source is Synced")))?;
        m.following = next;
        let mut replica = cluster.node(m.replica).connect()?;
        replica.execute("STOP SLAVE")?;
        replica.execute(&change_master(&m.source(), &m.replication))?;
        replica.execute("START SLAVE")?;
        done.push(format!("the source {gone} is gone: following {} from the replica's position", m.source().name()));
    }
    for node in cluster.nodes().filter(|n| n.index() != m.replica) {
        let Ok(mut conn) = node.connect() else { continue };
        if !slave_status(&mut conn)?.is_empty() {
            conn.execute("STOP SLAVE; RESET SLAVE ALL")?;
            done.push(format!("{}: replication left from when it was the replica removed", node.name()));
        }
    }
    Ok(done)
}

/// A running lockstep node to replicate on, and what it holds.
fn new_replica(m: &Migration, cluster: &Cluster) -> Result<(usize, Position)> {
    for node in cluster.nodes().filter(|n| n.index() != m.replica) {
        let Ok(mut conn) = node.connect() else { continue };
        if !super::preflight::is_synced(&mut conn) {
            log_skip(node, "it is not Synced");
            continue;
        }
        match applied(&mut conn, m) {
            Ok(position) => return Ok((node.index(), position)),
            Err(e) => log_skip(node, &e.to_string()),
        }
    }
    Err(Error::msg(format!("node{} does not answer, and no other lockstep node does", m.replica)))
}

fn log_skip(node: Node, why: &str) {
    eprintln!("lockstep migrate: {} cannot take over replication: {why}", node.name());
}

/// The source answers and is Synced.
fn synced(source: &Source) -> bool {
    source.connect().is_ok_and(|mut conn| super::preflight::is_synced(&mut conn))
}
