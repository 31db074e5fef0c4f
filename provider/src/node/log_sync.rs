//! `lockstep.log_sync=batch`: a local commit is acknowledged only once
//! the gcache, which holds its writeset, is on disk. A process crash keeps
//! what the gcache wrote (the page cache survives it); a power cut does
//! not, and then the acknowledged commits of the last moments are in no
//! node's log when every node lost power.
//!
//! As in etcd's and every Raft store's WAL, one sync serves a batch: the
//! group thread caches each ordered seqno as it always does and hands the
//! local outcomes to this thread instead of their clients; the thread
//! takes everything handed over so far, syncs once and wakes those
//! clients. Meanwhile the group goes on ordering, and the next batch
//! gathers behind the sync in progress. Remote writesets need no sync of
//! their own: no client of this node waits for them, and the next sync
//! covers them.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::delivery::{Outcome, Pending};
use crate::gcache::Medium;
use crate::log;

/// Outcomes waiting for a sync, and what it must cover. Bounded by the
/// clients in flight: each of them waits for its own outcome.
#[derive(Default)]
struct Batch {
    acks: Vec<(Arc<Pending>, Outcome)>,
    media: Vec<Arc<Medium>>,
    closed: bool,
}

#[derive(Default)]
struct Queue {
    batch: Mutex<Batch>,
    cv: Condvar,
}

pub(super) struct Syncer {
    queue: Arc<Queue>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Syncer {
    pub fn new() -> Syncer {
        Syncer { queue: Arc::default(), thread: Mutex::new(None) }
    }

    /// Hands `acks` over, to be given to their clients once `media` (the
    /// gcache's files as of now) are synced.
    pub fn submit(&self, acks: Vec<(Arc<Pending>, Outcome)>, media: Vec<Arc<Medium>>) {
        self.start();
        let mut b = self.queue.batch.lock().unwrap_or_else(|e| e.into_inner());
        b.acks.extend(acks);
        for m in media {
            if !b.media.iter().any(|have| Arc::ptr_eq(have, &m)) {
                b.media.push(m);
            }
        }
        drop(b);
        self.queue.cv.notify_one();
    }

    /// The thread starts with the first batch (a node with log_sync=none
    /// never needs it).
    fn start(&self) {
        let mut t = self.thread.lock().unwrap_or_else(|e| e.into_inner());
        if t.is_some() {
            return;
        }
        self.queue.batch.lock().unwrap_or_else(|e| e.into_inner()).closed = false;
        let queue = self.queue.clone();
        match std::thread::Builder::new().name("lockstep-log-sync".into()).spawn(move || run(&queue)) {
            Ok(h) => *t = Some(h),
            Err(e) => log::error!("cannot start the log sync thread: {}", e),
        }
    }

    /// Syncs and hands out what is queued, then ends the thread.
    pub fn close(&self) {
        self.queue.batch.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.queue.cv.notify_one();
        if let Some(h) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
    }
}

fn run(queue: &Queue) {
    // One line for a failing disk, not one per batch.
    let mut failing = false;
    loop {
        let (acks, media) = {
            let mut b = queue.batch.lock().unwrap_or_else(|e| e.into_inner());
            while b.acks.is_empty() && !b.closed {
                b = queue.cv.wait(b).unwrap_or_else(|e| e.into_inner());
            }
            if b.acks.is_empty() {
                return; // closed, and nothing left to hand out
            }
            (std::mem::take(&mut b.acks), std::mem::take(&mut b.media))
        };
        match media.iter().try_for_each(|m| m.sync()) {
            // The writesets are ordered: their clients must hear so, as
            // every other node commits them. Only their durability on this
            // node's disk is in doubt.
            Err(e) if !std::mem::replace(&mut failing, true) => log::error!("lockstep.log_sync: syncing the gcache failed ({}): commits are acknowledged without it until a sync succeeds", e),
            Err(_) => {}
            Ok(()) if std::mem::replace(&mut failing, false) => log::info!("lockstep.log_sync: the gcache syncs again"),
            Ok(()) => {}
        }
        for (pending, outcome) in acks {
            pending.complete(outcome);
        }
    }
}
