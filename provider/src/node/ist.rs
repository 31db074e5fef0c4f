//! Incremental state transfer, node side (the wire format and the joiner's
//! inbox are in `transfer::ist`): a donor whose gcache covers the joiner's
//! gap sends it and tells the server to skip the SST script's copy; the
//! joiner applies the gap, in order, before anything it received live.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::types::RecvCtx;
use super::Shared;
use crate::cert::{FailReason, Verdict};
use crate::gcache::Cached;
use crate::gtid::{Gtid, Seqno, Uuid};
use crate::log;
use crate::transfer::ist::{self, Chunk};
use crate::writeset::WriteSet;

/// A joiner gives up on an IST that makes no progress for this long (the
/// donor died, or its link did).
const STALL: Duration = Duration::from_secs(60);
/// How long a donor keeps retrying a chunk the link cannot take.
const SEND_WAIT: Duration = Duration::from_secs(60);

impl Shared {
    /// A joiner whose data has a position in this history can take IST.
    pub(super) fn expect_ist(&self, own: Gtid) {
        if !own.uuid.is_nil() && own.seqno >= 0 {
            self.ist.lock().unwrap_or_else(|e| e.into_inner()).expect((own.uuid, own.seqno));
        }
    }

    /// A chunk from the donor (group thread).
    pub(super) fn on_ist_chunk(&self, chunk: Bytes) {
        match ist::decode(&chunk) {
            Ok((history, c)) => self.ist.lock().unwrap_or_else(|e| e.into_inner()).take(history, c),
            Err(e) => log::warning!("ignoring an IST chunk: {}", e),
        }
        self.ist_cv.notify_all();
    }

    /// The donor's side: true when the joiner is served by IST (its gap
    /// is in our gcache), false when it needs a full SST.
    pub(super) fn donate_ist(&self, ctx: RecvCtx, request: &[u8], seqno: Seqno, joiner: Uuid, from: (Uuid, Seqno)) -> bool {
        if from.0 != self.history() || from.1 < 0 || from.1 > seqno {
            return false;
        }
        let items = if from.1 == seqno { Some(Vec::new()) } else { self.cached(from.1 + 1, seqno) };
        let Some(items) = items else {
            if request.iter().all(|b| *b == 0) {
                log::error!("{} rejoins a running server and needs IST from {}, but the gcache does not hold it: restart that node (it then joins by SST)", joiner, from.1 + 1);
                self.sst_sent(Gtid::new(from.0, from.1), -libc::ENODATA);
                return true;
            }
            log::info!("IST from {} impossible: gcache does not hold seqno {}; falling back to SST", from.1, from.1 + 1);
            return false;
        };
        // Galera's wording (mtr greps it, with the joiner's address); the
        // stream goes over the group link to the joiner's group address.
        log::info!(
            "async IST sender starting to serve tcp://{} sending {}-{} ({} items to {} over the group link)",
            self.member_address(joiner),
            from.1 + 1,
            seqno,
            items.len(),
            joiner
        );
        let Some(g) = self.group() else { return false };
        let history = self.history();
        let chunks = items.into_iter().map(|(s, item)| Chunk::Item { seqno: s, item }).chain([Chunk::End { last: seqno }]);
        for c in chunks {
            if !send_with_retry(&g, joiner, ist::encode(history, &c)) {
                log::warning!("IST to {} stopped: the link did not take a chunk for {:?}", joiner, SEND_WAIT);
                return true; // the joiner times out and fails; SST now would race it
            }
        }
        // The server's script only signals the joiner (bypass): the data
        // already holds everything up to `from`. A running joiner ran no
        // script (empty request): we are done.
        let state = Gtid::new(from.0, from.1);
        if request.iter().all(|b| *b == 0) {
            self.sst_sent(state, 0);
        } else if !self.app.sst_donate(ctx, request, state, true) {
            log::error!("the server could not start the IST bypass; rejoining");
            self.sst_sent(state, -libc::ECANCELED);
        }
        true
    }

    /// Seqnos `from..=to` from the gcache, read without holding its lock
    /// (the group thread caches every seqno under it).
    fn cached(&self, from: Seqno, to: Seqno) -> Option<Vec<(Seqno, Cached)>> {
        let plan = self.gcache.lock().unwrap_or_else(|e| e.into_inner()).plan(from, to)?;
        plan.read()
    }

    /// The joiner's side, once the server reported `gtid` (older than
    /// `entered`, where the live stream begins): applies the donor's
    /// seqnos up to `entered`. The position reached, or None on failure.
    pub(super) fn receive_ist(&self, ctx: RecvCtx, gtid: Gtid, entered: Seqno) -> Option<Seqno> {
        // Galera's wording: operators and mtr tests look for it.
        log::info!("Receiving IST: {} writesets, seqnos {}-{}", entered - gtid.seqno, gtid.seqno + 1, entered);
        let items = match self.wait_ist() {
            Ok(items) => items,
            Err(e) => {
                log::error!("IST failed: {}; the node must be restarted to join by SST", e);
                return None;
            }
        };
        for (seqno, item) in items.into_iter().take_while(|(s, _)| *s <= entered) {
            // What the group's order did not bring this node: a restarted
            // node's gcache goes on from what it had cached.
            self.gcache.lock().unwrap_or_else(|e| e.into_inner()).fill(seqno, item.clone());
            if seqno <= gtid.seqno {
                continue;
            }
            self.apply_ist_item(ctx, seqno, item);
        }
        self.skip_upto.store(entered, Ordering::SeqCst);
        log::info!("IST applied up to {}", self.apply.last_left());
        Some(self.apply.last_left())
    }

    fn wait_ist(&self) -> Result<Vec<(Seqno, Cached)>, String> {
        let mut inbox = self.ist.lock().unwrap_or_else(|e| e.into_inner());
        let mut deadline = Instant::now() + STALL;
        loop {
            if let Some(done) = inbox.finished() {
                return done;
            }
            if self.status().closed {
                return Err("the node is closing".into());
            }
            let before = inbox.received();
            inbox = self.ist_cv.wait_timeout(inbox, Duration::from_secs(1)).unwrap_or_else(|e| e.into_inner()).0;
            if inbox.received() != before {
                deadline = Instant::now() + STALL;
            } else if Instant::now() >= deadline {
                return Err(format!("no IST progress for {:?}", STALL));
            }
        }
    }

    /// One seqno of the gap, in order: a writeset the server applies (or
    /// a dummy for one that failed certification everywhere), or a
    /// configuration change that only moves the position.
    fn apply_ist_item(&self, ctx: RecvCtx, seqno: Seqno, item: Cached) {
        match item {
            Cached::View => {
                self.commit.finish(seqno);
                self.apply.finish(seqno);
            }
            Cached::Writeset { payload, certified } => {
                let verdict = if certified { Verdict::Pass { depends_on: seqno - 1 } } else { Verdict::Fail(FailReason::BelowIndex) };
                match WriteSet::decode(payload) {
                    Ok(ws) => {
                        self.apply_remote(ctx, seqno, &ws, verdict);
                    }
                    Err(e) => {
                        log::error!("IST writeset {} cannot be decoded ({}); skipping it", seqno, e);
                        self.commit.finish(seqno);
                        self.apply.finish(seqno);
                    }
                }
            }
        }
    }
}

/// Queues a chunk, waiting while the link's queue is full (the transport
/// never blocks; the donor's applier thread may).
fn send_with_retry(g: &crate::group::Group, to: Uuid, chunk: Bytes) -> bool {
    let deadline = Instant::now() + SEND_WAIT;
    while !g.send_ist(to, chunk.clone()) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}
