//! What the membership room decides, done on the driver's thread: a
//! joiner's requests, a leave, a removal and the rejoin after it, the
//! recovery of a component whose members all restarted, the leader's
//! promotions, evictions and placement (see `membership`).

use std::sync::mpsc::Sender;
use std::time::Instant;

use raft::prelude::ConfChangeType;
use raft::{ProgressState, StateRole};

use super::driver::Driver;
use crate::group::membership::joining::{holds_state, Joining, LeaveStep, Leaving};
use crate::group::membership::phase::Phase;
use crate::group::membership::placement::Candidate;
use crate::group::wire::entry::{MemberInfo, Membership};
use crate::group::wire::frame::Frame;
use crate::gtid::{Seqno, Uuid};
use crate::log;

impl Driver {
    /// Contacts the addresses of `wsrep_cluster_address` until a member
    /// answers (its `PeerUp` triggers the join request).
    pub(super) fn joining_tick(&mut self) {
        let now = self.clock.now();
        let Phase::Joining(j) = &mut self.members.phase else { return };
        let Some((addresses, linked)) = j.due(now) else { return };
        for addr in addresses {
            self.net.connect_addr(&addr);
        }
        for id in linked {
            self.send_join_request(id);
        }
    }

    /// A link came up: a joiner asks that member to take it in.
    pub(super) fn on_peer_up(&mut self, id: u64, addr: &str) {
        let Phase::Joining(j) = &mut self.members.phase else { return };
        j.reached(id);
        log::debug!("reached member {:x} at {}; asking to join", id, addr);
        self.send_join_request(id);
    }

    fn send_join_request(&self, id: u64) {
        let previous = self.members.previous.as_ref().map(|p| (p.member, Some(p.position)));
        self.send_frame([id], &Frame::Join { member: self.me.clone(), previous });
    }

    /// We are in the group's member list: stop asking.
    pub(super) fn joined(&mut self) {
        if self.is_joining() {
            self.enter(Phase::Member);
            log::info!("joined the group as member {}", self.me.id);
        }
    }

    /// A member receives a join request: it proposes the learner (raft-rs
    /// forwards it to the leader); a repeated request for a member already
    /// in is ignored when applied.
    pub(super) fn on_join_request(&mut self, member: MemberInfo, previous: Option<(Uuid, Option<(Uuid, Seqno)>)>) {
        if let Some((previous, held)) = previous {
            self.on_restarted_member(previous, &member.address, held);
            if let Some(position) = held {
                self.on_restarted_joiner(previous, position);
            }
        }
        // An arbitrator that leads to hand over takes no joiner: it has no
        // state to give (the joiner asks again, of the next leader).
        let handing_over = self.me.arbitrator && self.incarnation.raw.raft.state == StateRole::Leader;
        if !self.state.is_primary() || self.state.member(member.id).is_some() || handing_over {
            return;
        }
        if previous.is_some_and(|(previous, _)| self.remove_former_self(previous, &member)) {
            return; // it asks again, and is let in once its former self is out
        }
        log::info!("member {} ({}) at {} asks to join", member.id, member.name, member.address);
        self.net.set_peer(member.id.raft_id(), &member.address);
        self.propose_membership(Membership::Add { member }, ConfChangeType::AddLearnerNode);
    }

    /// A joiner that says it was member `previous`, at the address that
    /// member has, is that server restarted after a crash: `previous` is
    /// dead, whatever the failure detector says yet (two processes cannot
    /// listen on one address). Left in, it would count for quorum and
    /// flow control, and it could be chosen as the joiner's donor, until
    /// `evs.suspect_timeout`. So it is removed first, as an eviction
    /// would (one conf change at a time). True while it is a member.
    fn remove_former_self(&mut self, previous: Uuid, joiner: &MemberInfo) -> bool {
        let Some(old) = self.state.member(previous) else { return false };
        if previous == self.me.id || old.info.address.is_empty() || old.info.address != joiner.address {
            return false;
        }
        if !crate::group::primary::weights::may_remove(&self.state, previous) {
            return false; // as for an eviction: this side turns non-primary instead
        }
        if !self.incarnation.raw.raft.has_pending_conf() {
            log::info!("member {} ({}) restarted as {}: removing its former self from the group", previous, old.info.name, joiner.id);
            self.propose_membership(Membership::Remove { member: previous }, ConfChangeType::RemoveNode);
        }
        true
    }

    /// A joiner says it was `previous` before it was killed, its log
    /// reaching `held`. A non-primary member whose every other member of
    /// the last primary view has come back that way is the only one left
    /// holding that component's state: no other primary can exist, so it
    /// forms one again on its own (what Galera's pc.recovery achieves when
    /// the killed members return). Unless a restarted member's log reaches
    /// further: the killed majority went on without this member for a
    /// moment, and what it committed then (acknowledged to its clients) is
    /// in their logs only. This member then joins their recovery, which
    /// the most advanced forms the component again in.
    fn on_restarted_member(&mut self, previous: Uuid, address: &str, held: Option<(Uuid, Seqno)>) {
        if self.incarnation.quorum.is_primary() || self.state.member(previous).is_none() || previous == self.me.id {
            return;
        }
        let reaches = held.filter(|(h, _)| *h == self.state.history()).map(|(_, s)| s);
        if self.incarnation.restarted.insert(previous, (address.to_string(), reaches)).is_none() {
            log::info!("member {} of the last primary view has restarted", previous);
        }
        let me = self.me.id;
        if !self.state.members().iter().all(|m| m.info.id == me || self.incarnation.restarted.contains_key(&m.info.id)) {
            return;
        }
        let mine = self.state.seqno();
        if self.me.arbitrator {
            return self.rejoin_restarted_view(crate::gtid::SEQNO_UNDEFINED);
        }
        if let Some(further) = self.incarnation.restarted.values().filter_map(|(_, s)| *s).max().filter(|s| *s > mine) {
            log::info!("every other member of the last primary view has restarted, and a log among theirs reaches {} where this node's ends at {}: this node joins their recovery", further, mine);
            return self.rejoin_restarted_view(mine);
        }
        log::info!("every other member of the last primary view has restarted: this node forms the primary component again");
        self.reform(false);
    }

    /// A member that cannot form the component (an arbitrator holds no
    /// state, a lagging survivor not all of it) joins the restarted
    /// members as one more restarted member of that view, at `position`,
    /// so that their recovery, which waits for every member of the view,
    /// has it and lets the most advanced data member form the component
    /// (Galera's garbd takes part in pc.recovery alike).
    fn rejoin_restarted_view(&mut self, position: Seqno) {
        let view = self.state.members().iter().map(|m| m.info.id).collect();
        let position = (self.state.history(), position);
        self.members.previous = Some(crate::group::membership::recovery::Previous { member: self.me.id, view, position });
        // Where they call from now: contacting them there is what sends
        // them its join request.
        let at: Vec<String> = self.incarnation.restarted.values().map(|(a, _)| a).filter(|a| !a.is_empty()).cloned().collect();
        log::info!("every other member of the last primary view has restarted: this node joins them at {} for their recovery", at.join(","));
        self.rejoin();
        if let Phase::Joining(j) = &mut self.members.phase {
            *j = Joining::new(at, self.clock.now());
        }
    }

    /// Another joiner was `previous`, holding `position`: when all of our
    /// last primary component is back, its most advanced member forms it
    /// again (see `recovery`).
    fn on_restarted_joiner(&mut self, previous: Uuid, position: (Uuid, Seqno)) {
        if !self.is_joining() {
            return;
        }
        let Some(r) = self.members.recovery.as_mut() else { return };
        if !r.heard(previous, position) {
            return;
        }
        let me = r.me().clone();
        self.members.recovery = None;
        let id = self.me.id.raft_id();
        match super::config::raft_node_with(&self.raft_config, vec![id]) {
            Ok(raw) => self.next_incarnation(raw),
            Err(e) => return log::error!("cannot start the raft node to recover the component: {}", e),
        }
        log::info!(
            "all {} members of the last primary view are back and this node holds the most ({}:{}): it forms the primary component again",
            me.view.len(),
            me.position.0,
            me.position.1
        );
        self.enter(Phase::Member);
        self.members.bootstrap = Some(me.position);
        self.events.push(crate::group::state::GroupEvent::Bootstrapping);
        self.flush_events();
        let _ = self.incarnation.raw.campaign();
    }

    /// The leader promotes learners that now hold the state, one conf
    /// change at a time, but not one with a snapshot in flight: promoted
    /// in the turn its JOIN was applied, a learner whose answer to its
    /// snapshot was lost became a voter stuck behind a log the leader no
    /// longer had (simulator seed 4212).
    pub(super) fn promote_learners(&mut self) {
        let raft = &self.incarnation.raw.raft;
        if raft.state != StateRole::Leader || raft.has_pending_conf() {
            return;
        }
        let no_snapshot_pending = |id: Uuid| raft.prs().get(id.raft_id()).is_some_and(|pr| pr.state != ProgressState::Snapshot);
        let ready = self
            .state
            .members()
            .iter()
            .find(|m| !m.voter && holds_state(m) && no_snapshot_pending(m.info.id))
            .map(|m| m.info.id);
        if let Some(id) = ready {
            self.propose_membership(Membership::Promote { member: id }, ConfChangeType::AddNode);
        }
    }

    pub(super) fn start_leaving(&mut self, reply: Sender<()>) {
        match &mut self.members.phase {
            Phase::Leaving(l) => return l.add(reply),
            Phase::Left => {
                let _ = reply.send(());
                return;
            }
            _ => {}
        }
        self.enter(Phase::Leaving(Leaving::new(reply, self.clock.now())));
        self.leaving_tick();
    }

    /// One step of a graceful leave: done once the group no longer lists
    /// us (or alone, or out of time); otherwise a leader hands leadership
    /// to another voter, a follower proposes its own removal.
    pub(super) fn leaving_tick(&mut self) {
        let alone = self.state.members().len() <= 1;
        let out = self.members.removed || self.state.member(self.me.id).is_none();
        let now = self.clock.now();
        let Phase::Leaving(l) = &mut self.members.phase else { return };
        match l.step(now, out || alone) {
            LeaveStep::Wait => return,
            LeaveStep::Act => {}
            LeaveStep::Done(replies) => {
                self.enter(Phase::Left);
                self.flush_events();
                for reply in replies {
                    let _ = reply.send(());
                }
                return;
            }
        }
        let leader = self.incarnation.raw.raft.state == StateRole::Leader;
        // Never to an arbitrator: it holds no data to serve joiners.
        let other_voter = self.state.members().iter().find(|m| m.voter && !m.info.arbitrator && m.info.id != self.me.id).map(|m| m.info.id.raft_id());
        if let Some(to) = other_voter.filter(|_| leader) {
            self.incarnation.raw.transfer_leader(to);
            return;
        }
        // The only voter: a learner that holds the state becomes one first,
        // then takes over. Removing ourselves now would leave no voter
        // (raft refuses it) and that learner without a leader, a node
        // stopped the moment another finished joining (galera_ssl_upgrade).
        if leader && other_voter.is_none() && self.state.members().iter().any(|m| m.info.id != self.me.id && !m.voter && !m.info.arbitrator && holds_state(m)) {
            return self.promote_learners();
        }
        self.propose_membership(Membership::Remove { member: self.me.id }, ConfChangeType::RemoveNode);
    }

    /// The leader removes the member silent the longest once it is past
    /// the eviction timeout (see `liveness`), one conf change at a time.
    pub(super) fn evict_silent(&mut self) {
        let now = self.clock.now();
        let leader = self.incarnation.raw.raft.state == StateRole::Leader;
        let free = !self.incarnation.raw.raft.has_pending_conf() && !self.members.is_leaving_or_left();
        let others: Vec<u64> = self.state.members().iter().map(|m| m.info.id.raft_id()).filter(|id| *id != self.me.id.raft_id()).collect();
        let Some((id, silent)) = self.primary.overdue(leader, free, &others, now) else { return };
        let Some(m) = self.state.member_by_raft_id(id) else { return };
        let (uuid, name) = (m.info.id, m.info.name.clone());
        if !crate::group::primary::weights::may_remove(&self.state, uuid) {
            return; // this side turns non-primary instead (see `weighted`)
        }
        // Info, as Galera logs its suspicions: the view change is the news.
        log::info!(
            "member {} ({}) silent for {:.1}s (evs.suspect_timeout {:?}, evs.inactive_timeout {:?}): removing it from the group",
            uuid,
            name,
            silent.as_secs_f64(),
            self.primary.timeouts().suspect,
            self.primary.timeouts().inactive
        );
        self.propose_membership(Membership::Remove { member: uuid }, ConfChangeType::RemoveNode);
    }

    /// A removed member that still speaks Raft to us (it was stopped while
    /// the group removed it) is told it is out.
    pub(super) fn tell_if_removed(&self, from: u64) {
        // Every Raft message passes here: members are answered at once.
        if self.peers.contains(&from) {
            return;
        }
        if let Some((uuid, index)) = self.members.removed_as(from) {
            if self.state.member(uuid).is_none() {
                self.send_frame([from], &Frame::Left { member: uuid, index });
            }
        }
    }

    /// The group removed this node. Leaving, that is the goal; otherwise
    /// the node was evicted: it shows a non-primary view (the server stops
    /// taking queries) until the operator reconnects or restarts it.
    pub(super) fn on_removed_notice(&mut self, index: u64) {
        if self.members.removed || self.is_joining() {
            return; // a notice still on its way when we rejoined
        }
        if self.members.is_halted() || matches!(self.members.phase, Phase::Left) {
            return; // it leaves anyway
        }
        if index != 0 && index <= self.members.stale_until {
            // About this node's previous incarnation (a member that saw it
            // removed then and has forgotten it rejoined since).
            return log::debug!("ignoring a removal notice for index {} (rejoined after {})", index, self.members.stale_until);
        }
        self.members.removed = true;
        if matches!(self.members.phase, Phase::Leaving(_)) {
            return self.leaving_tick();
        }
        if self.state.member(self.me.id).is_none() {
            return; // already saw its own removal in the log
        }
        // Info, as Galera logs its non-primary views (see watch_quorum).
        log::info!("this node ({}) was removed from the cluster while it did not answer; it is non-Primary and joins again", self.me.id);
        self.state.apply_membership(Membership::Remove { member: self.me.id }, &mut self.events);
        self.flush_events();
        self.rejoin();
        self.members.stale_until = index;
        self.members.vote_floor = self.members.vote_floor.max(index);
    }

    /// Joins the group again as a fresh learner at the members' addresses
    /// (same member id: the group removed it, so it is new there). The old
    /// Raft state is dropped with whatever it had not committed.
    pub(super) fn rejoin(&mut self) {
        let me = self.me.id;
        let peers: Vec<String> = self.state.members().iter().filter(|m| m.info.id != me && !m.info.address.is_empty()).map(|m| m.info.address.clone()).collect();
        let peers = if peers.is_empty() { self.members.last_peers.clone() } else { peers };
        // Committed, not the log's end: entries past what it knew committed
        // may never be (a leader cut off appends alone), and a floor past
        // anything the group will commit soon would keep it from voting
        // while an idle group needs its vote to elect a leader.
        let committed = self.incarnation.raw.raft.raft_log.committed.max(self.applying);
        self.members.vote_floor = self.members.vote_floor.max(committed);
        match super::config::raft_node_with(&self.raft_config, vec![]) {
            Ok(raw) => self.next_incarnation(raw),
            Err(e) => return log::error!("cannot restart the raft node to rejoin: {}", e),
        }
        for client in self.order.proposals.abandon() {
            self.events.push(crate::group::state::GroupEvent::ProposalFailed { token: client });
        }
        self.state = crate::group::state::GroupState::new(me);
        // Who was removed from the group it saw is stale once it starts
        // over: telling one of them "you are out" now could be about an
        // incarnation the group has since taken back.
        self.members.removed_members.clear();
        self.members.removed = false;
        self.enter(Phase::Joining(Joining::new(peers, self.clock.now())));
        self.members.stale_until = 0;
        self.applying = 0;
        self.events.push(crate::group::state::GroupEvent::Rejoining);
        self.flush_events();
        self.refresh_peers();
    }
}

impl Driver {
    /// Counts the writesets among the events from `from` on, while leading.
    /// Once a window: the leader hands over to the busiest segment's
    /// busiest writer, when that is another segment (see the module).
    pub(super) fn place_leader(&mut self) {
        let now = self.clock.now();
        let raft = &self.incarnation.raw.raft;
        let leader = raft.state == StateRole::Leader;
        if !self.members.placement.leading(leader, now) || raft.lead_transferee.is_some() || raft.has_pending_conf() || self.members.is_leaving_or_left() {
            return;
        }
        let counted = self.members.placement.counted();
        let members: Vec<Candidate> = self.state.members().iter().map(|m| self.candidate(m, now)).collect();
        let Some(to) = self.members.placement.decide(now, self.net.own_segment(), &members) else { return };
        let name = self.state.member(to).map_or_else(String::new, |m| m.info.name.clone());
        log::info!("handing leadership to {} ({}): most of the last {} writesets came from its segment, gmcast.segment {}", to, name, counted, members.iter().find(|m| m.id == to).and_then(|m| m.segment).unwrap_or(0));
        self.incarnation.raw.transfer_leader(to.raft_id());
    }

    /// An arbitrator that leads (see `driver::campaigns_last`) hands
    /// leadership to the data voter that holds most of the log; raft-rs
    /// brings it up to date first, and gives up after an election timeout,
    /// after which this asks again.
    pub(super) fn hand_over(&mut self) {
        let raft = &self.incarnation.raw.raft;
        if !self.me.arbitrator || raft.state != StateRole::Leader || raft.lead_transferee.is_some() {
            return;
        }
        let data_voters = self.state.members().iter().filter(|m| m.voter && !m.info.arbitrator && m.info.id != self.me.id);
        let best = data_voters.filter_map(|m| raft.prs().get(m.info.id.raft_id()).map(|pr| (pr.matched, m.info.id))).max();
        if let Some((matched, to)) = best {
            log::info!("this arbitrator leads (no data member could win an election): handing leadership to {}, which holds the log up to {}", to, matched);
            self.incarnation.raw.transfer_leader(to.raft_id());
        }
    }

    fn candidate(&self, m: &crate::group::state::Member, now: Instant) -> Candidate {
        let id = m.info.id.raft_id();
        if m.info.id == self.me.id {
            return Candidate { id: m.info.id, segment: Some(self.net.own_segment()), eligible: false };
        }
        let keeps_up = self.incarnation.raw.raft.prs().get(id).is_some_and(|pr| self.keeps_up(id, pr, now));
        Candidate { id: m.info.id, segment: self.net.segment(id), eligible: m.voter && !m.info.arbitrator && keeps_up }
    }
}

impl Driver {
    /// Moves to `next`. A move `allowed` does not list is a bug: it fails
    /// a debug build's test at once; elsewhere the member logs it and
    /// halts, so that its node leaves the cluster cleanly rather than go on
    /// in a state nobody designed (and the simulator, built for release,
    /// fails the run of a member that halted).
    pub(super) fn enter(&mut self, next: Phase) {
        if let Err(what) = self.members.enter(next, self.me.id) {
            debug_assert!(false, "{}", what);
            log::error!("{}; this node leaves the cluster", what);
            self.stop_applying(self.applying);
        }
    }
}
