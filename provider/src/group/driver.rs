//! The Raft node on its own thread: takes proposals, ticks, persists to the
//! in-memory log, applies committed entries to the group state and hands
//! the resulting events to the node, in order.
//!
//! Nothing of the Raft log survives a restart (DESIGN: every process start
//! is a new member that catches up by IST/SST), so the log lives in memory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use raft::prelude::{ConfState, Entry as RaftEntry, EntryType};
use raft::storage::MemStorage;
use raft::{RawNode, StateRole};

use super::entry::{Entry, MemberInfo};
use super::state::{GroupEvent, GroupState};
use crate::gtid::{Seqno, Uuid};
use crate::log;

/// Receives the group's events in total order, on the group thread. It must
/// not block for long: Raft heartbeats wait while it runs.
pub trait Delivery: Send + 'static {
    fn deliver(&mut self, events: &mut Vec<GroupEvent>);
}

pub(super) enum Command {
    /// A payload to order; `token` comes back with its delivery.
    Propose { token: u64, data: Vec<u8> },
    /// The seqno a causal read must wait for (Raft ReadIndex).
    ReadIndex(Sender<Seqno>),
    Stop,
}

/// How many commands one loop turn takes before handling a Ready: proposals
/// that arrive together are appended and sent together.
const BATCH: usize = 256;

/// Log entries kept behind the applied index for followers that lag.
const LOG_KEEP: u64 = 8192;

pub(super) struct Counters {
    /// Local proposals not yet delivered or failed (`wsrep_local_send_queue`).
    pub send_queue: AtomicU64,
    pub stopped: AtomicBool,
}

pub(super) struct Driver {
    raw: RawNode<MemStorage>,
    rx: Receiver<Command>,
    state: GroupState,
    delivery: Box<dyn Delivery>,
    me: MemberInfo,
    bootstrap: Option<(Uuid, Seqno)>,
    tick: Duration,
    next_tick: Instant,
    events: Vec<GroupEvent>,
    /// ReadIndex requests Raft has not answered yet, and answered ones
    /// waiting for the applied index to reach them.
    reads_asked: Vec<(u64, Sender<Seqno>)>,
    reads_ready: Vec<(u64, Sender<Seqno>)>,
    next_read: u64,
    counters: Arc<Counters>,
}

pub(super) struct DriverConfig {
    pub me: MemberInfo,
    pub bootstrap: Option<(Uuid, Seqno)>,
    pub tick: Duration,
}

impl Driver {
    pub fn new(cfg: DriverConfig, rx: Receiver<Command>, delivery: Box<dyn Delivery>, counters: Arc<Counters>) -> raft::Result<Driver> {
        let id = cfg.me.id.raft_id();
        let storage = MemStorage::new_with_conf_state(ConfState::from((vec![id], vec![])));
        let config = raft::Config {
            id,
            election_tick: 10,
            heartbeat_tick: 2,
            check_quorum: true,
            pre_vote: true,
            max_inflight_msgs: 256,
            max_size_per_msg: 1 << 20,
            ..Default::default()
        };
        config.validate()?;
        let logger = slog::Logger::root(slog::Discard, slog::o!());
        let raw = RawNode::new(&config, storage, &logger)?;
        Ok(Driver {
            raw,
            rx,
            state: GroupState::new(cfg.me.id),
            delivery,
            me: cfg.me,
            bootstrap: cfg.bootstrap,
            tick: cfg.tick,
            next_tick: Instant::now() + cfg.tick,
            events: Vec::new(),
            reads_asked: Vec::new(),
            reads_ready: Vec::new(),
            next_read: 1,
            counters,
        })
    }

    pub fn run(mut self) {
        if self.bootstrap.is_some() {
            // A sole voter wins its election at once.
            let _ = self.raw.campaign();
        }
        while self.turn() {}
        self.counters.stopped.store(true, AtomicOrdering::SeqCst);
    }

    /// One loop turn; false once stopped.
    fn turn(&mut self) -> bool {
        let wait = self.next_tick.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(wait) {
            Ok(cmd) => {
                if !self.handle(cmd) {
                    return false;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return false,
        }
        for _ in 0..BATCH {
            match self.rx.try_recv() {
                Ok(cmd) => {
                    if !self.handle(cmd) {
                        return false;
                    }
                }
                Err(_) => break,
            }
        }
        if Instant::now() >= self.next_tick {
            self.raw.tick();
            self.next_tick += self.tick;
        }
        self.maybe_bootstrap();
        self.on_ready();
        self.flush_events();
        true
    }

    fn handle(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Propose { token, data } => {
                if self.raw.propose(vec![], data).is_err() {
                    self.events.push(GroupEvent::ProposalFailed { token });
                }
            }
            Command::ReadIndex(reply) => {
                let id = self.next_read;
                self.next_read += 1;
                self.raw.read_index(id.to_le_bytes().to_vec());
                self.reads_asked.push((id, reply));
            }
            Command::Stop => return false,
        }
        true
    }

    /// The bootstrapping member proposes the first view once it leads.
    fn maybe_bootstrap(&mut self) {
        if self.raw.raft.state != StateRole::Leader {
            return;
        }
        if let Some((history, position)) = self.bootstrap.take() {
            let entry = Entry::Bootstrap { history, position, member: self.me.clone() };
            if self.raw.propose(vec![], entry.encode()).is_err() {
                log::error!("could not propose the bootstrap view");
            }
        }
    }

    fn on_ready(&mut self) {
        if !self.raw.has_ready() {
            return;
        }
        let mut ready = self.raw.ready();
        self.send(ready.take_messages());
        if !ready.snapshot().is_empty() {
            // Snapshots reach joiners only (next issue); a lone member never
            // receives one.
            log::warning!("ignoring a Raft snapshot: joining by snapshot is not supported yet");
        }
        self.apply(ready.take_committed_entries());
        self.take_read_states(ready.take_read_states());
        if !ready.entries().is_empty() {
            self.raw.mut_store().wl().append(ready.entries()).expect("append to the in-memory log");
        }
        if let Some(hs) = ready.hs() {
            self.raw.mut_store().wl().set_hardstate(hs.clone());
        }
        self.send(ready.take_persisted_messages());
        let mut light = self.raw.advance(ready);
        if let Some(commit) = light.commit_index() {
            self.raw.mut_store().wl().mut_hard_state().set_commit(commit);
        }
        self.send(light.take_messages());
        self.apply(light.take_committed_entries());
        self.raw.advance_apply();
        self.compact();
    }

    fn send(&mut self, msgs: Vec<raft::prelude::Message>) {
        // The transport between providers comes with multi-node clusters;
        // until then a lone voter has nobody to talk to.
        debug_assert!(msgs.is_empty(), "messages without a transport: {:?}", msgs);
    }

    fn apply(&mut self, entries: Vec<RaftEntry>) {
        for e in entries {
            if e.get_entry_type() != EntryType::EntryNormal || e.get_data().is_empty() {
                continue; // leader no-ops; membership changes come with the transport
            }
            let data: Bytes = e.data;
            match Entry::decode(&data) {
                Ok(entry) => self.apply_entry(entry),
                // The same bytes are committed on every member, so every
                // member skips the entry alike.
                Err(err) => log::error!("skipping group entry at index {}: {}", e.index, err),
            }
        }
        self.answer_reads();
    }

    fn apply_entry(&mut self, entry: Entry) {
        let before = self.events.len();
        self.state.apply(entry, &mut self.events);
        for ev in &self.events[before..] {
            if let GroupEvent::Ordered { origin, token, .. } = ev {
                if *origin == self.me.id && *token != 0 {
                    self.counters.send_queue.fetch_sub(1, AtomicOrdering::Relaxed);
                }
            }
        }
    }

    fn take_read_states(&mut self, states: Vec<raft::ReadState>) {
        for rs in states {
            let Ok(id) = <[u8; 8]>::try_from(rs.request_ctx.as_slice()).map(u64::from_le_bytes) else { continue };
            if let Some(i) = self.reads_asked.iter().position(|(r, _)| *r == id) {
                let (_, reply) = self.reads_asked.swap_remove(i);
                self.reads_ready.push((rs.index, reply));
            }
        }
        self.answer_reads();
    }

    /// A read is answered with the seqno assigned when the applied index
    /// reached the read index: everything ordered before the read.
    fn answer_reads(&mut self) {
        let applied = self.raw.raft.raft_log.applied;
        let seqno = self.state.seqno();
        self.reads_ready.retain(|(index, reply)| {
            if *index > applied {
                return true;
            }
            let _ = reply.send(seqno);
            false
        });
    }

    fn compact(&mut self) {
        let applied = self.raw.raft.raft_log.applied;
        let first = raft::Storage::first_index(self.raw.store()).unwrap_or(0);
        if applied > first + 2 * LOG_KEEP {
            let _ = self.raw.mut_store().wl().compact(applied - LOG_KEEP);
        }
    }

    fn flush_events(&mut self) {
        for ev in &self.events {
            if let GroupEvent::ProposalFailed { .. } = ev {
                self.counters.send_queue.fetch_sub(1, AtomicOrdering::Relaxed);
            }
        }
        if !self.events.is_empty() {
            self.delivery.deliver(&mut self.events);
            self.events.clear();
        }
    }
}
