//! What the group delivers, handled on the group thread in total order:
//! certification happens here, once per seqno, so every node certifies the
//! same stream in the same order. Local writesets go back to the client
//! thread waiting in `certify`; everything else is queued for appliers.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use bytes::Bytes;

use super::applier::Item;
use super::saved_state::Position;
use super::state::NodeState;
use super::Shared;
use crate::cert::Verdict;
use crate::group::{Delivery, GroupEvent, MemberState, Transition, View};
use crate::gtid::{Seqno, Uuid, SEQNO_UNDEFINED};
use crate::log;
use crate::writeset::{flags, WriteSet};

/// The outcome of a local proposal, handed from the group thread to the
/// client thread waiting for it.
#[derive(Clone, Debug)]
pub(super) enum Outcome {
    Ordered { seqno: Seqno, verdict: Verdict },
    /// Never ordered: no primary component took it, or the node closed.
    Failed,
}

pub(super) struct Pending {
    outcome: Mutex<Option<Outcome>>,
    cv: Condvar,
}

impl Pending {
    pub fn new() -> Arc<Pending> {
        Arc::new(Pending { outcome: Mutex::new(None), cv: Condvar::new() })
    }

    pub fn complete(&self, o: Outcome) {
        let mut g = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        g.get_or_insert(o);
        self.cv.notify_all();
    }

    /// Waits for the outcome. No timeout: once proposed, a writeset is
    /// either ordered or failed by the node, and the client must learn
    /// which (answering early could contradict what other nodes commit).
    pub fn wait(&self) -> Outcome {
        let mut g = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(o) = g.clone() {
                return o;
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The node's end of the group: owned by the group thread.
pub(super) struct NodeDelivery(pub Arc<Shared>);

impl Delivery for NodeDelivery {
    fn deliver(&mut self, events: &mut Vec<GroupEvent>) {
        for ev in events.drain(..) {
            self.0.on_event(ev);
        }
    }
}

impl Shared {
    fn on_event(&self, ev: GroupEvent) {
        match ev {
            GroupEvent::Ordered { seqno, origin, token, payload } => self.on_ordered(seqno, origin, token, payload),
            GroupEvent::View(v) => self.on_view(v),
            GroupEvent::MemberState { member, state, desync_count } if member == self.me.id => {
                self.on_member_state(state, desync_count)
            }
            GroupEvent::MemberState { .. } => {}
            GroupEvent::ProposalFailed { token } => {
                self.complete(token, Outcome::Failed);
            }
        }
    }

    fn on_ordered(&self, seqno: Seqno, origin: Uuid, token: u64, payload: Bytes) {
        self.counters.received.fetch_add(1, Ordering::Relaxed);
        self.counters.received_bytes.fetch_add(payload.len() as u64, Ordering::Relaxed);
        let (ws, verdict) = self.certify_ordered(seqno, payload);
        self.last_ordered.store(seqno, Ordering::SeqCst);
        if origin == self.me.id && token != 0 && self.complete(token, Outcome::Ordered { seqno, verdict }) {
            return;
        }
        // Remote, a local rollback fragment (applied here too), or a local
        // writeset whose client is gone: appliers take it.
        self.queue.push(Item::Apply { seqno, ws, verdict });
    }

    fn certify_ordered(&self, seqno: Seqno, payload: Bytes) -> (WriteSet, Verdict) {
        let mut cert = self.cert.lock().unwrap_or_else(|e| e.into_inner());
        match WriteSet::decode(payload) {
            Ok(ws) => {
                let v = cert.certify(&ws, seqno);
                (ws, v)
            }
            Err(e) => {
                // Every node received the same bytes and reaches the same
                // verdict: deliver an empty dummy so the seqno still
                // passes through the server in order.
                log::error!("writeset {} cannot be decoded ({}); applying it as a no-op", seqno, e);
                cert.skip(seqno);
                let ws = WriteSet::new(flags::TRX_START | flags::TRX_END, Uuid::NIL, u64::MAX, u64::MAX, seqno - 1, vec![], Bytes::new());
                (ws, Verdict::Fail(crate::cert::FailReason::BelowIndex))
            }
        }
    }

    /// Hands an outcome to the waiting client; false if nobody waits.
    pub(super) fn complete(&self, token: u64, o: Outcome) -> bool {
        let p = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&token);
        match p {
            Some(p) => {
                p.complete(o);
                true
            }
            None => false,
        }
    }

    /// Fails every proposal still waiting (the group stopped).
    pub(super) fn fail_pending(&self) {
        let all: Vec<_> = self.pending.lock().unwrap_or_else(|e| e.into_inner()).drain().collect();
        for (_, p) in all {
            p.complete(Outcome::Failed);
        }
    }

    fn on_view(&self, v: View) {
        if v.primary {
            self.adopt_history(&v);
            self.cert.lock().unwrap_or_else(|e| e.into_inner()).skip(v.seqno);
            self.last_ordered.store(v.seqno, Ordering::SeqCst);
            // Running: the position lives in InnoDB until a clean close.
            self.saved.lock().unwrap_or_else(|e| e.into_inner()).set(Position {
                uuid: v.history,
                seqno: SEQNO_UNDEFINED,
                safe_to_bootstrap: v.members.len() == 1,
            });
        }
        let first = {
            let mut st = self.status();
            let first = !st.connected_sent;
            st.connected_sent = true;
            st.history = v.history;
            st.view = Some(v.clone());
            if !v.primary {
                st.state = NodeState::Connected;
                st.member = None;
            }
            first
        };
        self.status_cv.notify_all();
        if first {
            self.queue.push(Item::Connected(v.clone()));
        }
        self.queue.push(Item::View(v));
    }

    /// A bootstrap that starts a new history (this node had no position)
    /// begins right before its first view.
    fn adopt_history(&self, v: &View) {
        let position = self.cert.lock().unwrap_or_else(|e| e.into_inner()).position();
        if v.history == self.history() && position == v.seqno - 1 {
            return;
        }
        log::info!("starting history {} at {} (was {}:{})", v.history, v.seqno - 1, self.history(), position);
        self.cert.lock().unwrap_or_else(|e| e.into_inner()).reset(v.seqno - 1);
        self.apply.reset(v.seqno - 1);
        self.commit.reset(v.seqno - 1);
        self.status().history = v.history;
    }

    fn on_member_state(&self, state: MemberState, desync_count: u32) {
        let was = {
            let mut st = self.status();
            let was = st.member;
            st.member = Some(state);
            st.desync_count = desync_count;
            st.member_epoch += 1;
            st.state = NodeState::in_primary(state);
            was
        };
        self.status_cv.notify_all();
        match state {
            MemberState::Synced if was != Some(MemberState::Synced) => {
                self.queue.push(Item::Synced);
            }
            MemberState::Joined => {
                // The backlog check belongs to flow control; a lone member
                // has no remote backlog and syncs at once.
                if let Some(g) = self.group() {
                    let _ = g.member_state(Transition::Sync, self.last_ordered.load(Ordering::SeqCst));
                }
            }
            _ => {}
        }
    }
}
