//! The switch: the source's writes stop (the operator stops them, or the
//! source is made read-only), the replica catches up to the last of them,
//! replication stops, every table is compared on both sides, and the
//! clients are told where to go. Optionally the Galera side then follows
//! the lockstep side, so that the switch can be undone without losing
//! what was written after it.

use super::follow::{self, quote};
use super::gtid::Position;
use super::Migration;
use crate::cluster::{Cluster, Conn, Error, Result};
use std::time::{Duration, Instant};

/// How long the source's position must stand still to count as stopped.
const QUIET: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(200);

/// Schemas that are the server's own, not the application's.
const SYSTEM_SCHEMAS: &str = "'mysql', 'information_schema', 'performance_schema', 'sys'";

#[derive(Clone, Debug)]
pub struct Switched {
    /// Where the last of the source's writes left the position.
    pub position: Position,
    /// From the read-only step (or the start) to the end of the catch-up.
    pub waited: Duration,
    pub tables: usize,
    /// Where clients go now (`host:port` of every lockstep node).
    pub clients: Vec<String>,
    pub reversed: bool,
}

pub struct SwitchOptions {
    pub read_only: bool,
    pub reverse: bool,
    pub timeout: Duration,
}

pub fn switch(m: &Migration, cluster: &Cluster, options: &SwitchOptions, say: &mut dyn FnMut(&str)) -> Result<Switched> {
    let started = Instant::now();
    let deadline = started + options.timeout;
    if options.read_only {
        for source in &m.sources {
            match source.connect().and_then(|mut c| c.execute("SET GLOBAL read_only = ON")) {
                Ok(_) => say(&format!("{}: read_only=ON", source.name())),
                Err(e) => say(&format!("{}: not made read-only ({e})", source.name())),
            }
        }
    }
    let mut source = m.source().connect()?;
    let position = wait_quiet(&mut source, m, deadline)?;
    say(&format!("the source's writes stopped at {position}"));
    let mut replica = cluster.node(m.replica).connect()?;
    wait_applied(&mut replica, m, &position, deadline)?;
    replica.execute("STOP SLAVE; RESET SLAVE ALL")?;
    let waited = started.elapsed();
    say(&format!("node{} applied it and stopped replicating ({:.1}s after the switch began)", m.replica, waited.as_secs_f64()));
    let tables = compare(&mut source, cluster)?;
    say(&format!("{tables} tables: CHECKSUM TABLE equal on the source and every lockstep node"));
    if options.reverse {
        reverse(&mut source, m, cluster)?;
        say(&format!("{} now follows node{} (undo: point the clients back at the Galera cluster)", m.source().name(), m.replica));
    }
    let clients = cluster.nodes().map(|n| format!("127.0.0.1:{}", n.ports().client)).collect();
    Ok(Switched { position, waited, tables, clients, reversed: options.reverse })
}

/// The source's position once it has not moved for [`QUIET`].
fn wait_quiet(source: &mut Conn, m: &Migration, deadline: Instant) -> Result<Position> {
    let mut last = (source_position(source, m)?, Instant::now());
    loop {
        std::thread::sleep(POLL);
        let now = source_position(source, m)?;
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() >= QUIET {
            return Ok(now);
        }
        if Instant::now() > deadline {
            return Err(Error::msg(format!("the source still writes ({}): stop the writers, or switch with --read-only", last.0)));
        }
    }
}

fn source_position(source: &mut Conn, m: &Migration) -> Result<Position> {
    Ok(follow::binlog_position(source)?.only(&m.domains))
}

fn wait_applied(replica: &mut Conn, m: &Migration, position: &Position, deadline: Instant) -> Result<()> {
    loop {
        let applied = follow::applied(replica, m)?;
        if applied.behind(position) == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::msg(format!("the replica is still {} transactions behind {position} (at {applied})", applied.behind(position))));
        }
        std::thread::sleep(POLL);
    }
}

/// `CHECKSUM TABLE` of every application table on the source and on every
/// lockstep node; the number of tables, or the ones that differ.
fn compare(source: &mut Conn, cluster: &Cluster) -> Result<usize> {
    let tables = source.query(&format!(
        "SELECT CONCAT('`', table_schema, '`.`', table_name, '`') FROM information_schema.tables \
         WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ({SYSTEM_SCHEMAS}) ORDER BY 1"
    ))?;
    let names: Vec<String> = tables.into_iter().filter_map(|mut r| r.pop()).collect();
    let mut differ = Vec::new();
    for table in &names {
        let sql = format!("SET SESSION wsrep_sync_wait = 1; CHECKSUM TABLE {table}");
        let expected = source.query(&sql)?;
        for node in cluster.nodes() {
            let got = node.connect()?.query(&sql)?;
            if got != expected {
                differ.push(format!("{table} on {}: {got:?}, source {expected:?}", node.name()));
            }
        }
    }
    match differ.is_empty() {
        true => Ok(names.len()),
        false => Err(Error::msg(format!("tables differ after the switch:\n  {}", differ.join("\n  ")))),
    }
}

/// The followed source replicates from the replica, after everything the
/// lockstep side holds now.
fn reverse(source: &mut Conn, m: &Migration, cluster: &Cluster) -> Result<()> {
    let node = cluster.node(m.replica);
    let position = node.connect()?.query_value("SELECT @@gtid_binlog_pos")?.unwrap_or_default();
    source.execute(&format!("SET GLOBAL gtid_slave_pos = {}", quote(&position)))?;
    source.execute(&format!(
        "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, MASTER_USER={}, MASTER_PASSWORD={}, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
        node.ports().client,
        quote(&m.replication.user),
        quote(&m.replication.password)
    ))?;
    source.execute("START SLAVE")?;
    Ok(())
}
