//! The simulated links: every message is delivered after a seeded delay,
//! in order per link (the transport is TCP), unless a partition separates
//! its ends or the link drops it (a reset). A frozen member's messages wait
//! in its links until it is thawed, as in a real socket buffer.
//!
//! Some runs also reorder and duplicate messages. The transport reorders
//! frames around a link switch (`transport/link.rs`: a retired link's
//! last frames may arrive after the new link's first); it never
//! duplicates one, but Raft's messages and the group's own frames are
//! meant to survive a copy. All but one: a follower forwards a proposal
//! to the leader (MsgPropose), and a copy of it is appended twice (Raft
//! leaves deduplication to its clients; with copies of those, 138 of 200
//! seeds ordered a writeset twice). The transport is what rules that out,
//! so those are never copied here.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use bytes::Bytes;

use super::rng::Rng;

/// Bounds the in-flight messages: a run that grows past this has a
/// runaway (a message storm), which is a finding in itself.
pub const MAX_IN_FLIGHT: usize = 200_000;

#[derive(Clone, Debug)]
pub enum Msg {
    /// A frame of the group driver: kind and payload as the transport
    /// carries them.
    Frame { kind: u8, payload: Bytes },
    /// The transport's handshake: `connect_addr` reached a member, which
    /// answers `Up`; both ends then hear `PeerUp`.
    Contact,
    Up,
}

#[derive(Clone)]
pub struct Envelope {
    pub from: usize,
    pub to: usize,
    pub msg: Msg,
}

pub struct Network {
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    in_flight: HashMap<u64, Envelope>,
    sent: u64,
    /// Relay frames sent (see `group::relay`).
    pub relayed: u64,
    /// Appends sent without their receiver's own payloads.
    pub own: u64,
    /// Last delivery time per link, to keep each link in order.
    link_clock: HashMap<(usize, usize), u64>,
    /// Side of the current partition per member (all 0: none).
    pub side: Vec<u8>,
    /// Links cut one by one (a ring of partial partitions), either way.
    pub cut: Vec<(usize, usize)>,
    /// Percent of messages a link drops.
    pub drop_percent: u64,
    /// Delay bounds in ms.
    pub delay: (u64, u64),
    /// Percent of messages that ignore their link's order (they may
    /// overtake the ones sent before them).
    pub reorder_percent: u64,
    /// Percent of messages delivered a second time, later.
    pub duplicate_percent: u64,
}

impl Network {
    pub fn new(drop_percent: u64, delay: (u64, u64), reorder_percent: u64, duplicate_percent: u64) -> Network {
        Network {
            queue: BinaryHeap::new(),
            in_flight: HashMap::new(),
            sent: 0,
            relayed: 0,
            own: 0,
            link_clock: HashMap::new(),
            side: Vec::new(),
            cut: Vec::new(),
            drop_percent,
            delay,
            reorder_percent,
            duplicate_percent,
        }
    }

    pub fn connected(&self, a: usize, b: usize) -> bool {
        let same_side = self.side.get(a).copied().unwrap_or(0) == self.side.get(b).copied().unwrap_or(0);
        same_side && !self.cut.contains(&(a, b)) && !self.cut.contains(&(b, a))
    }

    /// Queues `env` sent at `now`; `held_until` is when its recipient
    /// thaws (0: it is not frozen).
    pub fn send(&mut self, rng: &mut Rng, now: u64, env: Envelope, held_until: u64) -> Result<(), String> {
        if matches!(&env.msg, Msg::Frame { kind, .. } if crate::group::frame::is_relay(*kind)) {
            self.relayed += 1;
        }
        if matches!(&env.msg, Msg::Frame { kind, .. } if crate::group::frame::is_own(*kind)) {
            self.own += 1;
        }
        if !self.connected(env.from, env.to) || rng.chance(self.drop_percent) {
            return Ok(());
        }
        if self.in_flight.len() >= MAX_IN_FLIGHT {
            return Err(format!("more than {} messages in flight", MAX_IN_FLIGHT));
        }
        let link = self.link_clock.entry((env.from, env.to)).or_insert(0);
        let delayed = (now + rng.between(self.delay.0, self.delay.1)).max(held_until);
        let at = if rng.chance(self.reorder_percent) {
            delayed
        } else {
            *link = delayed.max(*link);
            *link
        };
        if rng.chance(self.duplicate_percent) && !is_forwarded_proposal(&env.msg) {
            let again = at + rng.between(self.delay.0, self.delay.1);
            self.queue_at(again, env.clone());
        }
        self.queue_at(at, env);
        Ok(())
    }

    /// Member `to` froze until `until`: what is on its way to it waits
    /// until then, as the kernel keeps what reaches a stopped process
    /// (messages sent during the freeze wait by `send`'s `held_until`).
    /// Each keeps its number, so the order of a link stays.
    pub fn hold_for(&mut self, to: usize, until: u64) {
        self.retime(to, |at| at.max(until));
    }

    /// Member `to`, frozen until `until`, thawed early at `now`: what
    /// waited for it is due now.
    pub fn thaw(&mut self, to: usize, until: u64, now: u64) {
        self.retime(to, |at| if at == until { now } else { at });
    }

    fn retime(&mut self, to: usize, new_at: impl Fn(u64) -> u64) {
        let in_flight = &self.in_flight;
        let queue = std::mem::take(&mut self.queue);
        self.queue = queue.into_iter().map(|Reverse((at, id))| Reverse((if in_flight[&id].to == to { new_at(at) } else { at }, id))).collect();
    }

    fn queue_at(&mut self, at: u64, env: Envelope) {
        self.sent += 1;
        self.queue.push(Reverse((at, self.sent)));
        self.in_flight.insert(self.sent, env);
    }

    /// When the next message is due.
    pub fn next_at(&self) -> Option<u64> {
        self.queue.peek().map(|Reverse((at, _))| *at)
    }

    /// The next message due by `now`, unless a partition now separates
    /// its ends (then it is lost, and the next one is looked at).
    pub fn pop_due(&mut self, now: u64) -> Option<Envelope> {
        while let Some(Reverse((at, id))) = self.queue.peek().copied() {
            if at > now {
                return None;
            }
            self.queue.pop();
            let env = self.in_flight.remove(&id).expect("queued messages are in flight");
            if self.connected(env.from, env.to) {
                return Some(env);
            }
        }
        None
    }

    pub fn sent(&self) -> u64 {
        self.sent
    }
}

/// A proposal a follower forwards to the leader (see the module's note on
/// copies).
fn is_forwarded_proposal(msg: &Msg) -> bool {
    use crate::group::frame::Frame;
    let Msg::Frame { kind, payload } = msg else { return false };
    matches!(Frame::decode(*kind, payload), Ok(Frame::Raft(m)) if m.get_msg_type() == raft::eraftpb::MessageType::MsgPropose)
}
