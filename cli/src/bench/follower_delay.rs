//! How long after a commit returns to its client on node 1 the other
//! nodes show it (issue 52: followers as fresh as Galera's). Both
//! providers are measured alike, from outside: a probe commits one row on
//! node 1 every `EVERY` during the cell and notes when COMMIT returned;
//! on each other node a reader then asks for that row until it is there.
//! The delay is the reader's sighting minus the commit's return, so its
//! resolution is one SELECT round trip plus `POLL`, and a node that
//! applied the row before node 1's client heard back shows about that.
//!
//! The probe adds 20 commits a second to the cell's load, the same for
//! both providers; readers only ask between a commit and its sighting.

use crate::cluster::{Cluster, Conn, Error, Result};
use crate::workload::Latency;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const EVERY: Duration = Duration::from_millis(50);
/// Between two asks for a row not there yet: a reader that asked without
/// a pause would keep a core of this 2-core machine busy and slow the
/// cell it measures.
const POLL: Duration = Duration::from_millis(1);
/// A row not seen within this long counts as missed, not as a delay: the
/// reader goes on with the next one.
const GIVE_UP: Duration = Duration::from_secs(5);
const TABLE: &str = "lockstep_probe.commits";

/// Per follower: the delays, and rows missed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delays {
    pub node: usize,
    pub seen: Vec<Duration>,
    pub missed: usize,
}

impl Delays {
    pub fn describe(&self) -> String {
        let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1e3);
        let (p50, p99) = match self.seen.is_empty() {
            true => ("-".to_string(), "-".to_string()),
            false => {
                let l = Latency::of(self.seen.clone());
                (ms(l.p50), ms(l.p99))
            }
        };
        format!("node{} p50 {p50} p99 {p99} ms ({} rows, {} missed)", self.node, self.seen.len(), self.missed)
    }
}

pub struct Probe {
    stop: Arc<AtomicBool>,
    writer: JoinHandle<Result<()>>,
    readers: Vec<JoinHandle<Delays>>,
}

impl Probe {
    /// Creates the probe table on node 1 (replicated to the others) and
    /// starts the writer and one reader per other node.
    pub fn start(cluster: &Cluster) -> Result<Probe> {
        let mut origin = cluster.node(1).connect()?;
        origin.execute(&format!("CREATE DATABASE IF NOT EXISTS lockstep_probe; CREATE TABLE IF NOT EXISTS {TABLE} (id BIGINT PRIMARY KEY)"))?;
        let first: u64 = origin.query_value(&format!("SELECT COALESCE(MAX(id), 0) + 1 FROM {TABLE}"))?.and_then(|v| v.parse().ok()).unwrap_or(1);
        let stop = Arc::new(AtomicBool::new(false));
        let mut senders = Vec::new();
        let mut readers = Vec::new();
        for n in cluster.nodes().map(|n| n.index()).filter(|n| *n != 1) {
            let mut conn = cluster.node(n).connect()?;
            // The table must be there before the first row is asked for.
            conn.execute(&format!("SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM {TABLE}; SET SESSION wsrep_sync_wait = 0"))?;
            let (tx, rx) = channel();
            senders.push(tx);
            readers.push(std::thread::spawn(move || read(n, conn, rx)));
        }
        let flag = stop.clone();
        let writer = std::thread::spawn(move || write(origin, first, senders, flag));
        Ok(Probe { stop, writer, readers })
    }

    /// Stops the probe; each follower's delays.
    pub fn finish(self) -> Result<Vec<Delays>> {
        self.stop.store(true, Ordering::Relaxed);
        let written = self.writer.join().map_err(|_| Error::msg("the probe's writer panicked"))?;
        let delays = self.readers.into_iter().map(|r| r.join().unwrap_or_default()).collect();
        written.map(|_| delays)
    }
}

/// Commits row `id`, `id + 1`, ... every `EVERY` until stopped; tells the
/// readers each row and when its COMMIT returned. Dropping the senders
/// ends the readers.
fn write(mut origin: Conn, first: u64, readers: Vec<Sender<(u64, Instant)>>, stop: Arc<AtomicBool>) -> Result<()> {
    let mut id = first;
    while !stop.load(Ordering::Relaxed) {
        let next = Instant::now() + EVERY;
        origin.execute(&format!("INSERT INTO {TABLE} VALUES ({id})"))?;
        let acked = Instant::now();
        for r in &readers {
            let _ = r.send((id, acked));
        }
        id += 1;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    Ok(())
}

fn read(node: usize, mut conn: Conn, rows: Receiver<(u64, Instant)>) -> Delays {
    let mut delays = Delays { node, ..Delays::default() };
    for (id, acked) in rows {
        let sql = format!("SELECT 1 FROM {TABLE} WHERE id = {id}");
        loop {
            let seen = conn.query_value(&sql).ok().flatten().is_some();
            let now = Instant::now();
            if seen {
                delays.seen.push(now.saturating_duration_since(acked));
                break;
            }
            if now.duration_since(acked) > GIVE_UP {
                delays.missed += 1;
                break;
            }
            std::thread::sleep(POLL);
        }
    }
    delays
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn described_by_the_workloads_percentiles() {
        let seen = (1..=100).rev().map(Duration::from_millis).collect();
        let d = Delays { node: 2, seen, missed: 1 };
        assert_eq!(d.describe(), "node2 p50 51.00 p99 99.00 ms (100 rows, 1 missed)");
        let none = Delays { node: 3, ..Delays::default() };
        assert_eq!(none.describe(), "node3 p50 - p99 - ms (0 rows, 0 missed)");
    }
}
