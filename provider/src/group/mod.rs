//! Total order and membership: Galera's GCS, built on Raft.
//!
//! Every ordered action (writeset, TOI, fragment) and every primary
//! configuration change goes through the Raft log; once committed, each
//! member applies the log to the same [`GroupState`] and so assigns the same
//! global seqnos and sees the same views and member states. The node layer
//! receives the result as [`GroupEvent`]s through its [`Delivery`].

mod driver;
pub mod entry;
pub mod state;

use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use driver::Delivery;
pub use entry::{MemberInfo, Transition};
pub use state::{GroupEvent, GroupState, MemberState, View};

use driver::{Command, Counters, Driver, DriverConfig};
use entry::Entry;

use crate::gtid::{Seqno, Uuid};

#[derive(Debug, PartialEq, Eq)]
pub enum GroupError {
    /// The group thread has stopped (disconnect) or never started.
    Closed,
    /// Raft refused the configuration.
    Raft(String),
    Io(String),
}

impl std::fmt::Display for GroupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupError::Closed => write!(f, "group communication is closed"),
            GroupError::Raft(e) => write!(f, "raft: {}", e),
            GroupError::Io(e) => write!(f, "{}", e),
        }
    }
}

pub struct GroupConfig {
    pub me: MemberInfo,
    /// Start a new primary component continuing `history` after `position`
    /// (`gcomm://` or `--wsrep-new-cluster`).
    pub bootstrap: Option<(Uuid, Seqno)>,
    /// Raft's clock: heartbeats every 2 ticks, elections after 10-20.
    pub tick: Duration,
}

/// The handle the node holds; the Raft node runs on its own thread.
pub struct Group {
    me: Uuid,
    tx: Mutex<Sender<Command>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    counters: Arc<Counters>,
}

impl Group {
    pub fn start(cfg: GroupConfig, delivery: Box<dyn Delivery>) -> Result<Group, GroupError> {
        let (tx, rx) = channel();
        let counters = Arc::new(Counters { send_queue: AtomicU64::new(0), stopped: Default::default() });
        let me = cfg.me.id;
        let driver_cfg = DriverConfig { me: cfg.me, bootstrap: cfg.bootstrap, tick: cfg.tick };
        let driver = Driver::new(driver_cfg, rx, delivery, counters.clone()).map_err(|e| GroupError::Raft(e.to_string()))?;
        let thread = std::thread::Builder::new()
            .name("lockstep-group".into())
            .spawn(move || driver.run())
            .map_err(|e| GroupError::Io(format!("cannot start the group thread: {}", e)))?;
        Ok(Group { me, tx: Mutex::new(tx), thread: Mutex::new(Some(thread)), counters })
    }

    pub fn me(&self) -> Uuid {
        self.me
    }

    fn command(&self, cmd: Command) -> Result<(), GroupError> {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        tx.send(cmd).map_err(|_| GroupError::Closed)
    }

    /// Proposes an ordered payload. Its delivery comes back through the
    /// `Delivery` as `Ordered` with this `token`, or `ProposalFailed`.
    /// Bounded by the callers: each client thread has at most one proposal
    /// in flight, and waits for it.
    pub fn propose(&self, token: u64, build: impl FnOnce(&mut Vec<u8>), size_hint: usize) -> Result<(), GroupError> {
        let mut data = entry::ordered_header(self.me, token, size_hint);
        build(&mut data);
        if token != 0 {
            self.counters.send_queue.fetch_add(1, AtomicOrdering::Relaxed);
        }
        self.command(Command::Propose { token, data }).inspect_err(|_| {
            if token != 0 {
                self.counters.send_queue.fetch_sub(1, AtomicOrdering::Relaxed);
            }
        })
    }

    /// Orders a change of this member's state (desync, join, sync).
    pub fn member_state(&self, transition: Transition, seqno: Seqno) -> Result<(), GroupError> {
        let data = Entry::MemberState { member: self.me, transition, seqno }.encode();
        self.command(Command::Propose { token: 0, data })
    }

    /// The last seqno ordered before now, confirmed with a quorum (Raft
    /// ReadIndex): what a causal read waits for. None on timeout.
    pub fn read_index(&self, deadline: Instant) -> Option<Seqno> {
        let (tx, rx) = channel();
        self.command(Command::ReadIndex(tx)).ok()?;
        rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok()
    }

    pub fn send_queue(&self) -> u64 {
        self.counters.send_queue.load(AtomicOrdering::Relaxed)
    }

    /// Stops the group thread and waits for it. Idempotent.
    pub fn stop(&self) {
        let _ = self.command(Command::Stop);
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests;
