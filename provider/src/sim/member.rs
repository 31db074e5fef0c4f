//! One simulated member: the group's deterministic core (Raft, the group
//! state, certification, quorum, liveness, flow control) driven the way
//! the driver drives it, with the driver's I/O replaced by an outbox.
//!
//! What the driver does with threads and sockets is mirrored here in a few
//! lines each: the `Ready` hand-off, joining, promotion, eviction, the
//! removal notice and rejoin, the quorum watch, weighted quorum (the gate,
//! the leader's notices, a heavy side forming the component again).
//! Proposal resending and fences, leaving, `pc.bootstrap` and
//! whole-cluster recovery are not simulated.

use std::time::{Duration, Instant};

use bytes::Bytes;
use protobuf::Message as _;
use raft::prelude::{ConfChange, ConfChangeType, EntryType, Message, Snapshot};
use raft::{RawNode, StateRole};

use super::network::Msg;
use crate::cert::{Certification, Verdict};
use crate::group::entry::{Entry, MemberInfo, Membership, Transition};
use crate::group::flow_control::FlowControl;
use crate::group::liveness::{Liveness, Timeouts};
use crate::group::pieces;
use crate::group::quorum::{Change, Quorum};
use crate::group::weights::{self, CommitNotice, Gate, Standing};
use crate::group::{self, GroupEvent, GroupLog, GroupState, MemberState, Signal};
use crate::gtid::{Seqno, Uuid, SEQNO_UNDEFINED};
use crate::writeset::WriteSet;

/// The history every simulated cluster starts.
pub const HISTORY: Uuid = Uuid([0xAB; 16]);
/// Snapshot and compaction as the driver's test build does them (often,
/// so that joiners and lagging members meet snapshots).
const SNAPSHOT_EVERY: u64 = 64;
const LOG_KEEP: u64 = 16;
/// Flow-control limits of the simulated appliers.
pub const FC_UPPER: usize = 16;
const FC_LOWER: usize = 8;
/// How often a joiner repeats its join request (the driver's JOIN_RETRY).
const JOIN_RETRY_MS: u64 = 500;

/// What a member reports to the checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    Ordered { seqno: Seqno, origin: Uuid, token: u64, ws: Bytes, pass: bool },
    View { seqno: Seqno, conf_id: i64, members: Vec<Uuid> },
    /// The member's state jumped to `seqno` (a snapshot).
    Restored { seqno: Seqno },
    /// The member starts over as a joiner (its sequence restarts).
    Rejoining,
    NonPrimary,
}

pub struct Member {
    pub index: usize,
    pub info: MemberInfo,
    pub(super) raw: RawNode<GroupLog>,
    pub state: GroupState,
    cert: Certification,
    quorum: Quorum,
    snapshots: crate::group::snapshot_watch::SnapshotWatch,
    liveness: Liveness,
    pub fc: FlowControl,
    pub joining: bool,
    /// The component this member forms once it leads (history, position).
    bootstrap_at: Option<(Uuid, Seqno)>,
    /// Its `pc.weight`, and when it may next tell the group.
    weight: u32,
    next_weight: u64,
    /// A fence owed until ordered (the driver's `owed_fence`).
    owed_fence: Option<u64>,
    gate: Gate,
    leader_says: Option<(u64, bool, Instant)>,
    stale_until: u64,
    applying: u64,
    removed_seen: Vec<(u64, u64)>,
    removed_at: Option<u64>,
    was_leader: bool,
    next_join: u64,
    /// Delivered writesets the simulated appliers have yet to apply.
    pub backlog: usize,
    /// Writesets applied per tick (a slow member is one with a low rate).
    pub apply_rate: usize,
    election_tick: usize,
    pub outbox: Vec<(u64, Msg)>,
    pub notes: Vec<Note>,
}

pub fn raft_id(index: usize) -> u64 {
    uuid(index).raft_id()
}

pub fn uuid(index: usize) -> Uuid {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(index as u64 + 1).to_le_bytes());
    b[8] = 0x5A;
    Uuid(b)
}

fn raw_node(index: usize, election_tick: usize, voters: Vec<u64>) -> RawNode<GroupLog> {
    group::raft_node_with(&config(index, election_tick), voters).expect("a valid raft configuration")
}

fn config(index: usize, election_tick: usize) -> raft::Config {
    let mut config = group::raft_config(raft_id(index));
    // raft-rs draws the election timeout from thread_rng in
    // [min, max): a range of one value keeps the run deterministic, and the
    // per-member value (from the seed) keeps elections from tying forever.
    config.election_tick = election_tick;
    config.min_election_tick = election_tick;
    config.max_election_tick = election_tick + 1;
    config
}

impl Member {
    /// Member `index`: the first bootstraps the cluster, the others join.
    pub fn new(index: usize, election_tick: usize, apply_rate: usize, bootstrap: bool, weight: u32) -> Member {
        let id = uuid(index);
        let info = MemberInfo { id, name: format!("node{}", index + 1), incoming: String::new(), address: format!("sim:{}", index) };
        let voters = if bootstrap { vec![raft_id(index)] } else { vec![] };
        let mut raw = raw_node(index, election_tick, voters);
        if bootstrap {
            let _ = raw.campaign();
        }
        Member {
            index,
            info,
            raw,
            state: GroupState::new(id),
            cert: Certification::new(if bootstrap { 0 } else { SEQNO_UNDEFINED }),
            quorum: Quorum::default(),
            snapshots: Default::default(),
            liveness: Liveness::new(Timeouts::default()),
            fc: FlowControl::default(),
            joining: !bootstrap,
            bootstrap_at: bootstrap.then_some((HISTORY, 0)),
            weight,
            next_weight: 0,
            owed_fence: None,
            gate: Gate::default(),
            leader_says: None,
            stale_until: 0,
            applying: 0,
            removed_seen: Vec::new(),
            removed_at: None,
            was_leader: false,
            next_join: 0,
            backlog: 0,
            apply_rate,
            election_tick,
            outbox: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn election_tick(&self) -> usize {
        self.election_tick
    }

    pub fn id(&self) -> u64 {
        self.raw.raft.id
    }

    pub fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    /// In the primary component as the server would be told.
    pub fn is_primary(&self) -> bool {
        !self.joining && self.state.member(self.info.id).is_some() && self.quorum.is_primary() && self.state.is_primary()
    }

    pub fn weight(&self) -> u32 {
        self.weight
    }

    pub fn position(&self) -> Seqno {
        self.cert.position()
    }

    fn peers(&self) -> Vec<u64> {
        self.state.members().iter().map(|m| m.info.id.raft_id()).filter(|id| *id != self.id()).collect()
    }

    /// Proposes a client's writeset, in pieces of `piece` bytes (see
    /// `group::pieces`); false when it cannot be (no leader known, flow
    /// control). A writeset whose pieces Raft took only in part is fenced,
    /// as the driver does, so that no member keeps them.
    pub fn propose(&mut self, token: u64, ws: &WriteSet, piece: usize, now: Instant) -> bool {
        if !self.is_primary() || self.fc.paused(now) {
            return false;
        }
        let body = Bytes::from(ws.encode());
        for i in 0..pieces::count_of(body.len(), piece) {
            if self.raw.propose(vec![], pieces::entry_of(self.info.id, token, &body, i, piece)).is_err() {
                if i > 0 {
                    self.fence(token);
                }
                return false;
            }
        }
        true
    }

    /// The client of `token` gave up: as the driver, fence what it could
    /// not get ordered (its pieces may linger half assembled otherwise),
    /// every tick until the fence is ordered.
    pub fn fence(&mut self, token: u64) {
        self.owed_fence = self.owed_fence.max(Some(token));
    }

    fn propose_owed_fence(&mut self) {
        if let Some(token) = self.owed_fence.filter(|_| self.is_primary()) {
            let _ = self.raw.propose(vec![], Entry::Fence { origin: self.info.id, token }.encode());
        }
    }

    pub fn tick(&mut self, now: Instant, now_ms: u64) {
        self.raw.tick();
        self.join_tick(now_ms);
        self.maybe_bootstrap();
        self.leader_duties(now);
        self.watch_quorum(now);
        self.weigh(now, now_ms);
        self.apply_backlog(now);
        self.propose_owed_fence();
        if let Some(sig) = self.fc.tick(self.id(), now) {
            self.broadcast(Msg::Flow(sig));
        }
        self.on_ready();
    }

    fn join_tick(&mut self, now_ms: u64) {
        if !self.joining || now_ms < self.next_join {
            return;
        }
        self.next_join = now_ms + JOIN_RETRY_MS;
        // The join request goes to every member it knows of (all the
        // cluster's addresses), like wsrep_cluster_address.
        self.outbox.push((0, Msg::Join(self.info.clone())));
    }

    fn maybe_bootstrap(&mut self) {
        let Some((history, position)) = self.bootstrap_at else { return };
        if !self.is_leader() || self.raw.raft.has_pending_conf() {
            return;
        }
        if self.state.member(self.info.id).is_some() {
            self.bootstrap_at = None;
            return;
        }
        let m = Membership::Bootstrap { history, position, member: self.info.clone() };
        self.propose_membership(m, ConfChangeType::AddNode);
    }

    fn leader_duties(&mut self, now: Instant) {
        let leader = self.is_leader();
        if leader {
            self.snapshots.check(&mut self.raw, now);
        }
        if leader && !self.was_leader {
            self.liveness.restart(now);
        }
        self.was_leader = leader;
        if !leader || self.raw.raft.has_pending_conf() || !self.state.is_primary() {
            return;
        }
        let ready = self.state.members().iter().find(|m| !m.voter && matches!(m.state, MemberState::Joined | MemberState::Synced));
        if let Some(m) = ready {
            let id = m.info.id;
            return self.propose_membership(Membership::Promote { member: id }, ConfChangeType::AddNode);
        }
        let others = self.peers();
        if let Some((id, _)) = self.liveness.overdue(&others, now) {
            if let Some(m) = self.state.members().iter().find(|m| m.info.id.raft_id() == id) {
                let member = m.info.id;
                if weights::may_remove(&self.state, member) {
                    self.propose_membership(Membership::Remove { member }, ConfChangeType::RemoveNode);
                }
            }
        }
    }

    fn watch_quorum(&mut self, now: Instant) {
        if self.joining || self.state.member(self.info.id).is_none() {
            return;
        }
        let leader = group::quorum::has_leader(self.raw.raft.leader_id, self.id(), |id| self.liveness.is_recent(id, now)) && self.weight_allows_leader(now);
        if self.quorum.probe_due(now) {
            self.broadcast(Msg::Probe);
        }
        match self.quorum.observe(leader, now, Timeouts::default().suspect) {
            Some(Change::Lost) if weights::decides_alone(&self.state, self.info.id) => self.reform(),
            Some(Change::Lost) => self.notes.push(Note::NonPrimary),
            Some(Change::AskRejoin) => {
                let e = Entry::MemberState { member: self.info.id, transition: Transition::Rejoin, seqno: self.state.seqno() };
                let _ = self.raw.propose(vec![], e.encode());
            }
            None => {}
        }
    }

    /// The simulated appliers work through the backlog; the member asks
    /// for flow control past the upper limit and releases it under the
    /// lower one. A joined member then reports itself Synced.
    fn apply_backlog(&mut self, now: Instant) {
        self.backlog = self.backlog.saturating_sub(self.apply_rate);
        let signal = if self.backlog > FC_UPPER {
            Some(Signal::Stop)
        } else if self.backlog < FC_LOWER {
            Some(Signal::Cont)
        } else {
            None
        };
        if let Some(sig) = signal.and_then(|s| self.fc.local(self.id(), s, now)) {
            self.broadcast(Msg::Flow(sig));
        }
        let me = self.state.member(self.info.id).map(|m| m.state);
        let step = match me {
            Some(MemberState::Joiner) if !self.joining => Some(Transition::Join),
            Some(MemberState::Joined) if self.backlog == 0 => Some(Transition::Sync),
            _ => None,
        };
        if let Some(t) = step {
            let e = Entry::MemberState { member: self.info.id, transition: t, seqno: self.state.seqno() };
            let _ = self.raw.propose(vec![], e.encode());
        }
    }

    fn broadcast(&mut self, msg: Msg) {
        for id in self.peers() {
            self.outbox.push((id, msg.clone()));
        }
    }

    fn propose_membership(&mut self, m: Membership, kind: ConfChangeType) {
        let mut cc = ConfChange::default();
        cc.set_change_type(kind);
        cc.node_id = m.member().raft_id();
        cc.set_context(Bytes::from(m.encode()));
        let _ = self.raw.propose_conf_change(vec![], cc);
    }

    pub fn receive(&mut self, from: u64, msg: Msg, now: Instant) {
        self.liveness.heard(from, now);
        match msg {
            Msg::Raft(m) => self.on_raft(from, m),
            Msg::Join(info) => self.on_join_request(info),
            Msg::Left(index) => self.on_removed_notice(index),
            Msg::Probe => self.tell_if_removed(from),
            Msg::Commit(notice) => self.on_commit_notice(from, notice, now),
            Msg::Flow(signal) => {
                if self.peers().contains(&from) {
                    self.fc.on_message(from, signal, now);
                }
            }
            // The production driver's (see `driven`); never sent here.
            Msg::Frame { .. } | Msg::Contact | Msg::Up => {}
        }
        self.on_ready();
    }

    /// A removed member that calls us is told it is out (the driver's
    /// `tell_if_removed`).
    fn tell_if_removed(&mut self, from: u64) {
        if self.peers().contains(&from) {
            return;
        }
        if let Some((_, index)) = self.removed_seen.iter().rev().find(|(id, _)| *id == from) {
            let index = *index;
            self.outbox.push((from, Msg::Left(index)));
        }
    }

    fn on_raft(&mut self, from: u64, m: Message) {
        self.tell_if_removed(from);
        if !self.peers().contains(&from) {
            if self.state.member(self.info.id).is_some() {
                return;
            }
        }
        if group::step::accepts(&m, self.raw.raft.raft_log.last_index()) {
            let _ = self.raw.step(m);
        }
    }

    fn on_join_request(&mut self, info: MemberInfo) {
        if !self.state.is_primary() || self.state.member(info.id).is_some() || self.state.member(self.info.id).is_none() {
            return;
        }
        self.propose_membership(Membership::Add { member: info }, ConfChangeType::AddLearnerNode);
    }

    /// Removed while cut off: start over as a learner with the same id
    /// (the driver's rejoin).
    fn on_removed_notice(&mut self, index: u64) {
        if self.joining || self.state.member(self.info.id).is_none() || index <= self.stale_until {
            return;
        }
        self.raw = raw_node(self.index, self.election_tick, vec![]);
        self.state = GroupState::new(self.info.id);
        self.cert.reset(SEQNO_UNDEFINED);
        self.quorum = Quorum::default();
        self.gate.restart(None);
        self.leader_says = None;
        self.removed_seen.clear();
        self.fc = FlowControl::default();
        self.joining = true;
        self.next_join = 0;
        self.stale_until = index;
        self.applying = 0;
        self.notes.push(Note::Rejoining);
    }

    fn on_ready(&mut self) {
        group::ready::hand_off(self);
        self.advance_weighted_commit();
        self.maybe_snapshot();
        if let Some(index) = self.removed_at.take() {
            self.on_removed_notice(index);
        }
    }

    fn send(&mut self, msgs: Vec<Message>) {
        for m in msgs {
            self.outbox.push((m.to, Msg::Raft(m)));
        }
    }

    fn apply(&mut self, entries: Vec<raft::prelude::Entry>) {
        self.gate.push(entries);
        self.deliver_gated();
    }

    /// The driver's `deliver_gated`: an entry that changes a weight may
    /// switch the gate for the very next one.
    fn deliver_gated(&mut self) {
        if self.removed_at.is_some() {
            return;
        }
        let mut gate = std::mem::take(&mut self.gate);
        gate.deliver(|e| {
            self.apply_entry(e);
            self.removed_at.is_none().then(|| (self.state.weighted(), self.applying))
        });
        self.gate = gate;
    }

    fn apply_entry(&mut self, e: raft::prelude::Entry) {
        self.applying = e.index;
        let mut events = Vec::new();
        match e.get_entry_type() {
            EntryType::EntryNormal if e.get_data().is_empty() => {}
            EntryType::EntryNormal => {
                if let Ok(entry) = Entry::decode(&e.data) {
                    if matches!(entry, Entry::MemberState { member, transition: Transition::Rejoin, .. } if member == self.info.id) {
                        self.quorum.rejoined();
                    }
                    self.state.apply(entry, &mut events);
                }
            }
            EntryType::EntryConfChange => self.apply_conf_change(e.index, e.get_data(), &mut events),
            EntryType::EntryConfChangeV2 => {}
        }
        self.deliver(e.index, events);
    }

    fn apply_conf_change(&mut self, index: u64, data: &[u8], events: &mut Vec<GroupEvent>) {
        let Ok(cc) = ConfChange::parse_from_bytes(data) else { return };
        if let Ok(cs) = self.raw.apply_conf_change(&cc) {
            self.raw.store().set_conf_state(cs);
        }
        let Ok(m) = Membership::decode(cc.get_context()) else { return };
        match &m {
            Membership::Add { member } => self.raw.store().note_added(member.id.raft_id(), index),
            Membership::Remove { member } if *member != self.info.id => {
                self.outbox.push((member.raft_id(), Msg::Left(index)));
                self.removed_seen.push((member.raft_id(), index));
            }
            Membership::Remove { .. } if index > self.stale_until => {
                self.removed_at = Some(index);
                return;
            }
            _ => {}
        }
        self.state.apply_membership(m, events);
        let ids: Vec<u64> = self.state.members().iter().map(|m| m.info.id.raft_id()).collect();
        self.fc.retain_members(&ids);
        if self.state.member(self.info.id).is_some() && index > self.stale_until {
            self.joining = false;
        }
    }

    /// The node layer's part: certification of every writeset, the
    /// checker's notes, the appliers' backlog. Events of the previous
    /// incarnation's log are dropped as the driver does.
    fn deliver(&mut self, index: u64, events: Vec<GroupEvent>) {
        let stale = index <= self.stale_until;
        for ev in events {
            match ev {
                GroupEvent::Ordered { seqno, origin, token, payload } => {
                    let pass = match WriteSet::decode(payload.clone()) {
                        Ok(ws) => matches!(self.cert.certify(&ws, seqno), Verdict::Pass { .. }),
                        Err(_) => {
                            self.cert.skip(seqno);
                            false
                        }
                    };
                    if !self.joining && !stale {
                        self.backlog += 1;
                    }
                    self.notes.push(Note::Ordered { seqno, origin, token, ws: payload, pass });
                }
                // Its own removal replayed from the log: the others' view
                // (the state numbers on as they do).
                GroupEvent::View(v) if !v.primary && stale => {
                    let v = self.state.view();
                    self.cert.skip(v.seqno);
                    self.notes.push(Note::View { seqno: v.seqno, conf_id: v.conf_id, members: v.members.iter().map(|m| m.id).collect() });
                }
                GroupEvent::Fenced { origin, token } if origin == self.info.id && self.owed_fence.is_some_and(|owed| token >= owed) => {
                    self.owed_fence = None;
                }
                GroupEvent::View(v) if v.primary => {
                    // A replayed (stale) view is still the same view
                    // everywhere: the checker compares it whole.
                    self.cert.skip(v.seqno);
                    let members = v.members.iter().map(|m| m.id).collect();
                    self.notes.push(Note::View { seqno: v.seqno, conf_id: v.conf_id, members });
                }
                _ => {}
            }
        }
    }

    fn maybe_snapshot(&mut self) {
        let applied = self.raw.raft.raft_log.applied;
        let store = self.raw.store();
        let due = applied >= store.snapshot_index() + SNAPSHOT_EVERY;
        if !(store.snapshot_wanted() || due) || !self.state.is_primary() || applied == 0 || !self.state.may_snapshot() {
            return;
        }
        let mut snap = Snapshot::default();
        snap.set_data(Bytes::from(group::join_snapshot(&self.state.encode(), &self.cert.encode())));
        let md = snap.mut_metadata();
        md.index = applied;
        md.term = self.raw.raft.raft_log.term(applied).unwrap_or(0);
        md.set_conf_state(self.raw.raft.prs().conf().to_conf_state());
        self.raw.store().set_snapshot(snap, applied.saturating_sub(LOG_KEEP));
    }

    fn restore(&mut self, snap: Snapshot) {
        let index = snap.get_metadata().index;
        let Some((group, node)) = group::split_snapshot(snap.get_data()) else { return };
        let Ok(state) = GroupState::decode(self.info.id, group) else { return };
        if self.raw.store().apply_snapshot(snap.clone()).is_err() {
            return;
        }
        self.cert.restore(node).expect("a snapshot's certification index restores");
        self.state = state;
        self.applying = index;
        self.gate.restart(self.state.weighted().then_some(index));
        self.notes.push(Note::Restored { seqno: self.state.seqno() });
        if self.state.member(self.info.id).is_some() && index > self.stale_until {
            self.joining = false;
        }
    }
}

pub fn at(base: Instant, ms: u64) -> Instant {
    base + Duration::from_millis(ms)
}

impl group::ready::ReadyHandler for Member {
    fn raw(&mut self) -> &mut RawNode<GroupLog> {
        &mut self.raw
    }

    fn send(&mut self, msgs: Vec<Message>) {
        Member::send(self, msgs)
    }

    fn restore(&mut self, snap: Snapshot) {
        Member::restore(self, snap)
    }

    fn apply(&mut self, entries: Vec<raft::prelude::Entry>) {
        Member::apply(self, entries)
    }

    fn applied(&self) -> Option<u64> {
        self.gate.applied_for_raft(self.applying, self.raw.raft.raft_log.applied)
    }
}

/// Weighted quorum, as the driver's `weighted` does it.
impl Member {
    /// Tells the group this member's weight; the leader tells every member
    /// the weighted commit index and its verdict.
    fn weigh(&mut self, now: Instant, now_ms: u64) {
        let mine = self.state.member(self.info.id).map(|m| m.weight);
        if mine.is_some_and(|w| w != self.weight) && self.is_primary() && now_ms >= self.next_weight {
            self.next_weight = now_ms + 1000;
            let _ = self.raw.propose(vec![], Entry::Weight { member: self.info.id, weight: self.weight }.encode());
        }
        if self.gate.ever_active() && self.is_leader() {
            let index = self.gate.open_to().unwrap_or(self.raw.raft.raft_log.committed);
            let notice = CommitNotice { term: self.raw.raft.term, index, primary: self.verdict(now) };
            self.broadcast(Msg::Commit(notice));
        }
    }

    fn verdict(&self, now: Instant) -> bool {
        let heard = |id| self.liveness.heard_within(id, now, weights::VERDICT_WINDOW);
        weights::leader_standing(&self.state, self.info.id, heard) == Standing::Majority
    }

    fn weight_allows_leader(&self, now: Instant) -> bool {
        if !self.gate.is_active() {
            return true;
        }
        if self.is_leader() {
            return self.verdict(now);
        }
        let suspect = Timeouts::default().suspect;
        self.leader_says.is_some_and(|(from, primary, at)| primary && from == self.raw.raft.leader_id && now.saturating_duration_since(at) < suspect)
    }

    fn on_commit_notice(&mut self, from: u64, n: CommitNotice, now: Instant) {
        if !self.peers().contains(&from) {
            return;
        }
        if from == self.raw.raft.leader_id && n.term == self.raw.raft.term {
            self.leader_says = Some((from, n.primary, now));
        }
        self.open_gate(n.index);
    }

    fn advance_weighted_commit(&mut self) {
        if !self.gate.is_active() || !self.is_leader() {
            return;
        }
        let prs = self.raw.raft.prs();
        let index = weights::commit_index(&self.state, |id| prs.get(id).map_or(0, |p| p.matched), self.raw.raft.raft_log.committed);
        self.open_gate(index);
    }

    fn open_gate(&mut self, index: u64) {
        self.gate.open(index);
        if self.gate.held() == 0 {
            return;
        }
        self.deliver_gated();
        let applied = self.applying.max(self.raw.raft.raft_log.applied);
        self.raw.advance_apply_to(applied);
    }

    /// The driver's `deliver_own_log` and `reform`: every entry of its log
    /// delivered, a new Raft group of its own numbering on, the others
    /// told they are out when they call.
    fn reform(&mut self) {
        let from = self.applying.max(self.raw.raft.raft_log.applied) + 1;
        let entries = self.raw.raft.raft_log.entries(from, None, raft::GetEntriesContext::empty(false)).unwrap_or_default();
        self.gate.restart(None);
        for e in entries {
            if self.removed_at.is_some() {
                return;
            }
            self.apply_entry(e);
        }
        let (last, term) = (self.raw.raft.raft_log.last_index().max(self.applying), self.raw.raft.term);
        self.raw = group::raft_node_continuing(&config(self.index, self.election_tick), last, term).expect("a valid raft configuration");
        for id in self.peers() {
            self.removed_seen.push((id, last));
        }
        self.bootstrap_at = Some((self.state.history(), self.state.seqno()));
        self.state.reform();
        self.quorum = Quorum::default();
        self.leader_says = None;
        let _ = self.raw.campaign();
    }
}

impl super::SimMember for Member {
    fn create(index: usize, election_tick: usize, apply_rate: usize, bootstrap: bool, weight: u32, _now: Instant) -> Member {
        Member::new(index, election_tick, apply_rate, bootstrap, weight)
    }
    fn tick(&mut self, now: Instant, now_ms: u64) {
        Member::tick(self, now, now_ms)
    }
    fn receive(&mut self, from: u64, msg: Msg, now: Instant) {
        Member::receive(self, from, msg, now)
    }
    fn propose(&mut self, token: u64, ws: &WriteSet, piece: usize, now: Instant) -> bool {
        Member::propose(self, token, ws, piece, now)
    }
    fn fence(&mut self, token: u64) {
        Member::fence(self, token)
    }
    fn is_primary(&self) -> bool {
        Member::is_primary(self)
    }
    fn is_leader(&self) -> bool {
        Member::is_leader(self)
    }
    fn position(&self) -> Seqno {
        Member::position(self)
    }
    fn id(&self) -> Uuid {
        self.info.id
    }
    fn weight(&self) -> u32 {
        Member::weight(self)
    }
    fn election_tick(&self) -> usize {
        Member::election_tick(self)
    }
    fn take_outbox(&mut self) -> Vec<(u64, Msg)> {
        std::mem::take(&mut self.outbox)
    }
    fn take_notes(&mut self) -> Result<Vec<Note>, String> {
        Ok(std::mem::take(&mut self.notes))
    }
    fn backlog(&self) -> usize {
        self.backlog
    }
    fn state(&self) -> &GroupState {
        &self.state
    }
    fn raft(&self) -> &RawNode<GroupLog> {
        &self.raw
    }
    fn joining(&self) -> bool {
        self.joining
    }
}
