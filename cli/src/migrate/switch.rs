//! The switch: the source's writes stop (the operator stops them, or the
//! source is made read-only), the replica catches up to the last of them,
//! replication stops, a read view is taken on the source and on every
//! lockstep node at that moment, and the clients are told where to go.
//! Only then is every table compared, in those views, so the writers wait
//! for the catch-up and not for the comparison. Optionally the Galera side
//! follows the lockstep side, so that the switch can be undone without
//! losing what was written after it.

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
    let mut snapshots = Snapshots::take(&mut source, m, cluster)?;
    if options.reverse {
        reverse(&mut source, m, cluster)?;
        say(&format!("{} now follows node{} (undo: point the clients back at the Galera cluster)", m.source().name(), m.replica));
    }
    let clients: Vec<String> = cluster.nodes().map(|n| format!("127.0.0.1:{}", n.ports().client)).collect();
    say(&format!("the lockstep cluster takes the writes now: point the clients at {}", clients.join(", ")));
    let tables = snapshots.compare()?;
    say(&format!("{tables} tables: CHECKSUM TABLE equal on the source and every lockstep node at {position}"));
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

/// A read view on the source and on every lockstep node, all of the same
/// moment: the one where the lockstep side holds everything the source
/// wrote and no client writes to it yet. The comparison runs in these
/// views, so the clients need not wait for it: a 9 GiB source took 2.5
/// minutes to compare, and the writes were stopped all along when it ran
/// first.
struct Snapshots {
    names: Vec<String>,
    /// `(server, session in its read view)`, the source first.
    views: Vec<(String, Conn)>,
}

impl Snapshots {
    fn take(source: &mut Conn, m: &Migration, cluster: &Cluster) -> Result<Snapshots> {
        let tables = source.query(&format!(
            "SELECT CONCAT('`', table_schema, '`.`', table_name, '`') FROM information_schema.tables \
             WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ({SYSTEM_SCHEMAS}) ORDER BY 1"
        ))?;
        let names = tables.into_iter().filter_map(|mut r| r.pop()).collect();
        // The source's view is a session of its own: `reverse` runs
        // CHANGE MASTER on `source`, which would end a transaction there.
        let mut views = vec![(m.source().name(), m.source().connect()?)];
        for node in cluster.nodes() {
            views.push((node.name(), node.connect()?));
        }
        for (_, conn) in &mut views {
            // wsrep_sync_wait makes START TRANSACTION wait until the node
            // has applied all its cluster ordered before it.
            conn.execute("SET SESSION wsrep_sync_wait = 1; SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")?;
            conn.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")?;
        }
        Ok(Snapshots { names, views })
    }

    /// The number of tables, or the ones that differ. Every server
    /// checksums at the same time.
    fn compare(&mut self) -> Result<usize> {
        let names = &self.names;
        let sums: Vec<Result<Vec<Vec<Vec<String>>>>> = std::thread::scope(|scope| {
            let threads: Vec<_> = self.views.iter_mut().map(|(_, conn)| scope.spawn(|| checksums(conn, names))).collect();
            threads.into_iter().map(|t| t.join().expect("a checksum thread does not panic")).collect()
        });
        let mut sums = sums.into_iter();
        let expected = sums.next().expect("the source's view is the first")?;
        let mut differ = Vec::new();
        for ((server, _), got) in self.views.iter().skip(1).zip(sums) {
            for ((table, want), have) in names.iter().zip(&expected).zip(got?) {
                if &have != want {
                    differ.push(format!("{table} on {server}: {have:?}, source {want:?}"));
                }
            }
        }
        match differ.is_empty() {
            true => Ok(names.len()),
            false => Err(Error::msg(format!("tables differ after the switch:\n  {}", differ.join("\n  ")))),
        }
    }
}

/// One server's `CHECKSUM TABLE` rows, table by table, read in the
/// session's read view.
fn checksums(conn: &mut Conn, tables: &[String]) -> Result<Vec<Vec<Vec<String>>>> {
    tables.iter().map(|table| conn.query(&format!("CHECKSUM TABLE {table}"))).collect()
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
