//! Frames in and out: Raft's messages and the group's own, appends
//! through a relay to another segment, the links kept to the members.

use std::collections::BTreeMap;
use std::time::Duration;

use raft::StateRole;
use raft::prelude::{Message, MessageType};

use super::driver::Driver;
use crate::group::wire::frame::{Frame, FrameError};
use crate::group::wire::relay::Out;
use crate::log;
use crate::transport::Inbound;
use crate::transport::handshake::FEATURE_OWN_PAYLOADS;

/// How long a departed member stays reachable, so that the notice of its
/// removal gets through before its link is dropped.
const FORGET_AFTER: Duration = Duration::from_secs(2);
/// How often a message dropped from one non-member sender is said.
const NON_MEMBER_SAID_EVERY: Duration = Duration::from_secs(10);

impl Driver {
    pub(super) fn on_net(&mut self, inbound: Inbound) {
        if let Inbound::Frame { from, .. } = &inbound {
            self.primary.heard(*from, self.clock.now());
        }
        match inbound {
            Inbound::Frame { kind, payload, from } => match Frame::decode(kind, &payload) {
                Ok(frame) => self.on_frame(from, frame),
                // A newer member's message: it copes without our answer.
                Err(e @ FrameError::Kind(kind)) if self.unknown_kinds.insert(kind) => {
                    log::warning!("ignoring frames of a kind this build does not know from member {:x} (a newer lockstep build?): {}", from, e)
                }
                Err(FrameError::Kind(_)) => {}
                Err(e) => log::warning!("ignoring a frame from {:x}: {}", from, e),
            },
            Inbound::PeerUp { id, addr, .. } => self.on_peer_up(id, &addr),
            Inbound::PeerDown { .. } => {}
            Inbound::ContactFailed { addr, reason } => log::debug!("could not reach {}: {}", addr, reason),
        }
    }

    pub(super) fn on_frame(&mut self, from: u64, frame: Frame) {
        match frame {
            Frame::Raft(m) => {
                self.tell_if_removed(from);
                if matches!(m.get_msg_type(), MessageType::MsgAppend | MessageType::MsgHeartbeat | MessageType::MsgSnapshot) {
                    self.primary.led_by(m.from, self.clock.now());
                }
                // A member only hears its own group: after a reform the
                // old group's members must not pull it back into their
                // terms. Not while it replays its previous incarnation's
                // log: the group there is history (its leader may have
                // been removed then and be back since), not its own yet.
                // Its author counts, not its bearer: a relay (see `relay`)
                // this member's log does not list yet brings the leader's
                // appends that would list it (a joiner in another segment
                // than the leader's dropped them all, seed 5933).
                if self.is_member_now() && !self.peers.contains(&m.from) {
                    return self.drop_from_non_member(m.from, m.get_msg_type());
                }
                let log = &self.incarnation.raw.raft.raft_log;
                let Some(m) = super::step::admit(m, log.last_index(), log.committed, self.members.vote_floor) else {
                    return log::debug!("not answering a vote request from {:x}: this log is short of its previous incarnation's ({} < {})", from, log.last_index(), self.members.vote_floor);
                };
                if m.get_msg_type() == MessageType::MsgReadIndex {
                    if let Some(e) = m.entries.first() {
                        let ctx = e.data.clone();
                        self.note_read_floor(&ctx);
                    }
                }
                let answer = (m.get_msg_type() == MessageType::MsgAppendResponse && !m.reject).then_some((m.from, m.term, m.index));
                let committed = self.incarnation.raw.raft.raft_log.committed;
                let _ = super::step::step_peer(&mut self.incarnation.raw, m);
                // m.from, not the frame's sender: a relay (see `relay`) may have brought it.
                if let Some((follower, term, index)) = answer {
                    let moved = self.incarnation.raw.raft.raft_log.committed > committed;
                    let name = || self.state.member_by_raft_id(follower).map(|m| m.info.name.clone());
                    self.order.note_answer(follower, term, index, moved, self.clock.now(), name, &self.counters.round_trips);
                }
            }
            Frame::Relay(msgs) => match crate::group::wire::relay::unpack(msgs, from, self.me.id.raft_id()) {
                Ok((own, forwards)) => {
                    if self.peers.contains(&from) {
                        for m in forwards {
                            self.send_frame([m.to], &Frame::Raft(m));
                        }
                    }
                    if let Some(own) = own {
                        self.on_frame(from, Frame::Raft(own));
                    }
                }
                Err(why) => log::warning!("ignoring a relay frame from {:x}: {}", from, why),
            },
            Frame::Own(mut m, left_out) => {
                let proposals = &self.order.proposals;
                match crate::group::order::own_payloads::fill(&mut m, &left_out, self.me.id, |token| proposals.body(token).cloned()) {
                    Ok(()) => self.on_frame(from, Frame::Raft(m)),
                    // Raft sends it again, whole (see `own_payloads`).
                    Err(why) => log::debug!("dropping an append from {:x}: {}", from, why),
                }
            }
            Frame::Join { member, previous } => self.on_join_request(member, previous),
            Frame::Probe => self.tell_if_removed(from),
            Frame::Commit(notice) => self.on_commit_notice(from, notice),
            Frame::Left { member, index } if member == self.me.id => self.on_removed_notice(index),
            Frame::Left { .. } => {}
            Frame::Lag(ms) => {
                if self.state.member_by_raft_id(from).is_some() {
                    self.flow.on_lag(from, ms, self.clock.now());
                }
            }
            Frame::Leader(word) => {
                if self.state.member_by_raft_id(from).is_some() {
                    self.primary.on_leader_word(from, word, self.clock.now());
                }
            }
            Frame::ReadAsk { id, term } => {
                if self.state.member_by_raft_id(from).is_some() {
                    self.on_read_ask(from, id, term);
                }
            }
            Frame::ReadAnswer(answer) => self.on_read_answer(from, answer),
            Frame::Hold(index) => {
                if self.me.arbitrator && self.state.member_by_raft_id(from).is_some() {
                    self.members.arbitrator_hold.on_word(index);
                }
            }
            Frame::Flow(signal) => {
                // Only members may pause the group.
                if self.state.member_by_raft_id(from).is_some() {
                    let now = self.clock.now();
                    if let Some(sig) = self.flow.on_signal(from, signal, self.me.id.raft_id(), now) {
                        self.broadcast_flow(sig);
                    }
                    self.publish_flow();
                }
            }
        }
    }

    /// Sends `frame` to each of `to`, encoded once.
    pub(super) fn send_frame(&self, to: impl IntoIterator<Item = u64>, frame: &Frame) {
        let (kind, payload) = match frame.encode() {
            Ok(encoded) => encoded,
            Err(e) => return log::error!("cannot encode a group frame: {}", e),
        };
        for id in to {
            self.net.send(id, kind, payload.clone());
        }
    }

    /// Said at info once per sender every `NON_MEMBER_SAID_EVERY`: a
    /// member that drops its leader's every message as a non-member's
    /// never catches up, and at debug level nothing showed why (a
    /// rejoining member stranded for 29 s after a partition, issue 50).
    pub(super) fn drop_from_non_member(&mut self, from: u64, kind: MessageType) {
        let now = self.clock.now();
        let due = self.non_member_said.get(&from).is_none_or(|at| now.saturating_duration_since(*at) >= NON_MEMBER_SAID_EVERY);
        if !due {
            return;
        }
        // Bounded: senders that are not members are few, but not ours to count.
        if self.non_member_said.len() >= 64 {
            self.non_member_said.clear();
        }
        self.non_member_said.insert(from, now);
        log::info!(
            "dropping a {:?} from {:x}: not a member of this group as this node has it (applied index {}, previous incarnation's log up to {})",
            kind,
            from,
            self.applying,
            self.members.stale_until
        );
    }

    /// Raft's messages out: appends to another segment through one relay
    /// there (see `relay`), less the answers that repeat (see `answers`)
    /// and the appends of a commit index alone that another append in
    /// the batch carries (see `commit_only`).
    pub(super) fn send(&mut self, mut msgs: Vec<Message>) {
        self.raise_read_answers(&mut msgs);
        self.order.outgoing(&mut msgs, self.clock.now());
        let relays = self.relays();
        let net = self.net.clone();
        // One segment (the usual case): no lookups per message.
        let relay_of = |to| if relays.is_empty() { None } else { net.segment(to).and_then(|s| relays.get(&s).copied()) };
        for out in crate::group::wire::relay::route(msgs, relay_of) {
            match out {
                Out::Direct(mut m) => {
                    let to = m.to;
                    let net = &self.net;
                    let left_out = self.order.own_payloads.leave_out(&mut m, || net.has_feature(to, FEATURE_OWN_PAYLOADS));
                    let frame = if left_out.is_empty() { Frame::Raft(m) } else { Frame::Own(m, left_out) };
                    self.send_frame([to], &frame)
                }
                Out::Relay { via, msgs } => {
                    for m in &msgs {
                        let _ = self.order.own_payloads.note(m);
                    }
                    self.send_relayed(via, msgs)
                }
            }
        }
    }

    /// The relay of each other segment, while this member leads: its
    /// lowest member that keeps up and answers (one that stops answering
    /// would starve its segment; a change of relay costs a resend).
    pub(super) fn relays(&self) -> BTreeMap<u8, u64> {
        let raft = &self.incarnation.raw.raft;
        let (mine, now) = (self.net.own_segment(), self.clock.now());
        let mut relays = BTreeMap::new();
        if raft.state != StateRole::Leader {
            return relays;
        }
        for (&id, pr) in raft.prs().iter() {
            let Some(segment) = self.net.segment(id).filter(|s| *s != mine) else { continue };
            if id != self.me.id.raft_id() && self.keeps_up(id, pr, now) {
                relays.entry(segment).and_modify(|r: &mut u64| *r = (*r).min(id)).or_insert(id);
            }
        }
        relays
    }

    pub(super) fn send_relayed(&mut self, via: u64, msgs: Vec<Message>) {
        let frame = Frame::Relay(msgs);
        let sent = match frame.encode() {
            Ok((kind, payload)) => self.net.send(via, kind, payload),
            Err(e) => {
                log::error!("cannot encode a relay frame: {}", e);
                false
            }
        };
        let Frame::Relay(msgs) = frame else { unreachable!() };
        if !sent {
            // The relay's link went down: the others straight (Raft
            // resends what the relay missed once it is back).
            let (_, forwards) = crate::group::wire::relay::unpack(msgs, self.me.id.raft_id(), via).expect("routed as relayed");
            for m in forwards {
                self.send_frame([m.to], &Frame::Raft(m));
            }
        }
    }

    /// Tells the transport where every member listens, and to stop
    /// reaching members that left: a restarted node comes back at the same
    /// address as a new member, and a dialer still looking for its old id
    /// there would keep breaking the new member's link.
    pub(super) fn refresh_peers(&mut self) {
        let mut wanted = std::collections::BTreeSet::new();
        for m in self.state.members() {
            if m.info.id != self.me.id && !m.info.address.is_empty() {
                let id = m.info.id.raft_id();
                self.net.set_peer(id, &m.info.address);
                wanted.insert(id);
            }
        }
        let now = self.clock.now();
        for gone in self.peers.difference(&wanted) {
            // Its link stays for the notice of its removal, but no dial:
            // its address may hold its successor already (it left and
            // connected again), which would take each dial for a new link
            // and ask the server's allowlist (that a mysqldump SST may be
            // reloading: galera_vote_rejoin_mysqldump).
            self.net.stop_dialing(*gone);
            self.departed.push((*gone, now + FORGET_AFTER));
        }
        self.peers = wanted;
        if self.is_member_now() {
            self.joined();
        }
    }

    /// A member in its current incarnation: not before its Add, nor while
    /// it replays the log of its previous one (up to `stale_until`), where
    /// the group it sees is history.
    pub(super) fn is_member_now(&self) -> bool {
        self.state.member(self.me.id).is_some() && self.applying > self.members.stale_until
    }
}
