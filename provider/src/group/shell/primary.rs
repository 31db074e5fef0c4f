//! What the primary room decides, done on the driver's thread: the
//! quorum watch, a member cut off or stood still going non-primary, a
//! component formed again alone (see `primary`).

use std::time::{Duration, Instant};

use raft::StateRole;

use super::driver::Driver;
use crate::group::membership::phase::Phase;
use crate::group::primary::quorum::{Change, Quorum, Seen};
use crate::group::state::{GroupEvent, Member};
use crate::group::wire::entry::{Entry, MemberInfo, Transition};
use crate::group::wire::frame::Frame;
use crate::gtid::Uuid;
use crate::log;

impl Driver {
    /// Tells the server when this member leaves the primary component (no
    /// leader past the grace) and asks the group for a new primary view
    /// once a leader is back (see `quorum`).
    pub(super) fn watch_quorum(&mut self) {
        if !self.watches_quorum() {
            return;
        }
        let now = self.clock.now();
        if self.cut_off(now) {
            return;
        }
        let leader = self.leader_seen(now);
        if self.incarnation.quorum.probe_due(now) {
            self.send_frame(self.peers.iter().copied(), &Frame::Probe);
            self.relay_commit_index();
            self.call_restarted_members();
        }
        self.incarnation.quorum.note_leader(self.incarnation.raw.raft.leader_id);
        match self.incarnation.quorum.observe(leader, now, self.primary.timeouts().suspect) {
            Some(Change::Lost) => self.lose_primary_or_ignore(),
            Some(Change::AskRejoin) => self.ask_rejoin(),
            None => {}
        }
    }

    /// A member as the log names it: `<uuid> (<wsrep_node_name>)`, the
    /// Raft id alone for one this member's group does not list.
    pub(super) fn described(&self, raft_id: u64) -> String {
        match self.state.member_by_raft_id(raft_id) {
            Some(m) => format!("{} ({})", m.info.id, m.info.name),
            None => format!("{:x}", raft_id),
        }
    }

    /// A member that serves reads and has heard from no weighted majority
    /// for `cut_off::window`, or nothing from its leader that long while
    /// another member hears it, leaves the primary component now instead
    /// of after the grace: the others may be committing without it (see
    /// `cut_off`). Its writesets in flight fail as at the grace's end;
    /// members kept primary by configuration or weight wait out the grace
    /// as before (`lose_primary_or_ignore`).
    pub(super) fn cut_off(&mut self, now: Instant) -> bool {
        let window = crate::group::primary::cut_off::window(self.tick);
        let listening = self.inbox_drained && self.primary.ran_throughout(now, window);
        if !self.incarnation.quorum.is_primary() || !listening || !self.could_go_on_without_me() {
            return false;
        }
        let ids: Vec<u64> = self.state.members().iter().map(|m| m.info.id.raft_id()).collect();
        self.primary.list(&ids, now);
        let heard = |m: &Member| self.primary.spoke_within(m, self.me.id, now, window);
        let why = if crate::group::primary::cut_off::hears_a_minority(&self.state, heard) {
            format!("heard from no majority of the cluster for {:?} (cut off, or the others are down)", window)
        } else if let Some((reporter, leader)) = self.leader_heard_elsewhere(window, now) {
            format!("heard nothing from leader {} for {:?} while member {} hears it (the links to the leader are cut)", self.described(leader), window, self.described(reporter))
        } else {
            return false;
        };
        let side: Vec<MemberInfo> = self.state.members().iter().filter(|m| heard(m)).map(|m| m.info.clone()).collect();
        log::info!("this node {}: it is non-Primary with {} of {} members until it hears a leader again", why, side.len(), self.state.members().len());
        self.incarnation.quorum.fell_behind();
        self.non_primary_view(side);
        true
    }

    /// See `Primary::leader_heard_elsewhere`; a leader hears itself.
    fn leader_heard_elsewhere(&self, window: Duration, now: Instant) -> Option<(u64, u64)> {
        let raft = &self.incarnation.raw.raft;
        if raft.state == StateRole::Leader {
            return None;
        }
        self.primary.leader_heard_elsewhere(&self.state, self.me.id.raft_id(), raft.term, now, window)
    }

    /// A non-primary member asks for its primary view in the turn that
    /// brings a leader, not at the next tick: its server may already have
    /// heard a primary view with it (another member's rejoin), and is not
    /// ready for clients until its own rejoin gives it its state again
    /// (galera.MDEV-35946 read in that window, 1 run in 10).
    pub(super) fn rejoin_once_led(&mut self) {
        if self.incarnation.quorum.is_primary() || !self.watches_quorum() {
            return;
        }
        let now = self.clock.now();
        let leader = self.leader_seen(now);
        self.incarnation.quorum.note_leader(self.incarnation.raw.raft.leader_id);
        if let Some(Change::AskRejoin) = self.incarnation.quorum.observe(leader, now, self.primary.timeouts().suspect) {
            self.ask_rejoin();
        }
    }

    pub(super) fn watches_quorum(&self) -> bool {
        let member = self.state.member(self.me.id).is_some();
        member && !matches!(self.members.phase, Phase::Joining(_) | Phase::Leaving(_)) && !self.members.removed
    }

    /// The leader as `quorum` needs it: none, this member, or another
    /// with when it last spoke as leader.
    pub(super) fn leader_seen(&self, now: Instant) -> Seen {
        self.primary.leader_seen(self.leader_known(now), self.incarnation.raw.raft.leader_id, self.me.id.raft_id())
    }

    /// A leader that spoke as one lately, and that the weights allow.
    pub(super) fn leader_known(&self, now: Instant) -> bool {
        self.primary.leader_spoke(self.incarnation.raw.raft.leader_id, self.me.id.raft_id(), now) && self.weight_allows_leader(now)
    }

    pub(super) fn ask_rejoin(&mut self) {
        log::info!("leader {:x} is known and this node is non-Primary: asking the group for a primary view", self.incarnation.raw.raft.leader_id);
        let entry = Entry::MemberState { member: self.me.id, transition: Transition::Rejoin, seqno: self.state.seqno() };
        let _ = self.incarnation.raw.propose(vec![], entry.encode());
    }

    /// A non-primary arbitrator calls its last view's addresses as a first
    /// contact: a data node restarted there is a new member the links to
    /// the old one refuse, and the data nodes' cluster address seldom
    /// names the arbitrator, so without the call they would never tell it
    /// they restarted (see `rejoin_restarted_view`).
    pub(super) fn call_restarted_members(&self) {
        if !self.me.arbitrator {
            return;
        }
        for m in self.state.members().iter().filter(|m| m.info.id != self.me.id && !m.info.address.is_empty()) {
            self.net.connect_addr(&m.info.address);
        }
    }

    /// Forms a new primary component of this member alone, continuing the
    /// history and seqnos (`pc.bootstrap=YES`). The old Raft group stays
    /// behind with its log: nothing it had not committed is ordered here
    /// (those writesets' clients failed with the non-primary view).
    /// `keep_alone_view`: see `GroupState::reform`.
    pub(super) fn reform(&mut self, keep_alone_view: bool) {
        if self.incarnation.quorum.is_primary() || self.state.member(self.me.id).is_none() {
            // A note: on a primary node it is a no-op, which mtr tests
            // use as a precaution (galera_3nodes.galera-features#115).
            return log::info!("pc.bootstrap ignored: this node is not in a non-primary component");
        }
        if self.me.arbitrator {
            // A component of the arbitrator alone would order writes no
            // data node holds.
            return log::info!("an arbitrator never forms a primary component: it waits for a data member");
        }
        // The new log numbers on from everything this member holds of the
        // old one (see GroupLog::continuing).
        let (last, term) = (self.incarnation.raw.raft.raft_log.last_index(), self.incarnation.raw.raft.term);
        match super::config::raft_node_continuing(&self.raft_config, last.max(self.applying), term) {
            Ok(raw) => self.next_incarnation(raw),
            Err(e) => return log::error!("pc.bootstrap: cannot start a new raft group: {}", e),
        }
        log::info!("forming a primary component of this node alone at {}:{}", self.state.history(), self.state.seqno());
        // The others are out of this component: told so if they call, they
        // join it again.
        let others: Vec<Uuid> = self.state.members().iter().map(|m| m.info.id).filter(|id| *id != self.me.id).collect();
        let at = self.incarnation.raw.raft.raft_log.last_index();
        for id in others {
            self.members.remember_removed(id, at);
        }
        self.members.bootstrap = Some((self.state.history(), self.state.seqno()));
        self.state.reform(keep_alone_view);
        self.refresh_peers();
        self.forget_answers_of_the_gone();
        let _ = self.incarnation.raw.campaign();
    }

    /// No leader past the grace: non-primary, unless this member alone
    /// weighs more than half (`pc.weight`) or the configuration says to go
    /// on; then it delivers its whole log and forms the primary component
    /// again, the writesets waiting proposed again there.
    pub(super) fn lose_primary_or_ignore(&mut self) {
        let now = self.clock.now();
        let standing = self.primary.side_standing(&self.state, self.me.id, now);
        let forced = self.primary.policy().forces_primary(standing);
        // An arbitrator never forms a component (see `reform`), so it must
        // not deliver its log's tail either: the group's leader sends it
        // those entries again once the partition heals, and each would be
        // ordered twice here, one seqno apart from every data node (the
        // simulator found it with a garbd outweighing both data nodes).
        if self.me.arbitrator || (!forced && !self.reforms_by_weight()) {
            return self.lose_primary();
        }
        if forced && self.primary.policy().ignore_sb && standing == crate::group::primary::weights::Standing::Split {
            // Galera's wording (mtr suppresses it): the operator chose this.
            log::warning!("Ignoring possible split-brain (allowed by configuration) from view: this side stands {:?} in the last primary view", standing);
        } else if forced {
            // pc.ignore_quorum, in Galera's words too (galera_allowlist
            // suppresses exactly this).
            log::warning!("Ignoring lack of quorum (allowed by configuration) from view: this side stands {:?} in the last primary view", standing);
        } else {
            log::info!("this node alone weighs more than half of the last primary view: it forms the primary component");
        }
        self.deliver_own_log();
        self.order.proposals.unsend_all(now);
        // No non-primary view was delivered on this path.
        self.reform(true);
    }

    /// A non-primary view of this node's side of the partition: itself and
    /// the members it still hears from. It consumes no seqno.
    pub(super) fn lose_primary(&mut self) {
        let now = self.clock.now();
        let members: Vec<MemberInfo> = self
            .state
            .members()
            .iter()
            .filter(|m| self.primary.hears(m, self.me.id, now))
            .map(|m| m.info.clone())
            .collect();
        // Info, as Galera logs its non-primary views: the operator's
        // signal is wsrep_cluster_status, and mtr tests count warnings.
        log::info!(
            "no leader for longer than {:?}: this node is non-Primary with {} of {} members of the last primary view",
            self.primary.timeouts().suspect.max(Quorum::MIN_GRACE),
            members.len(),
            self.state.members().len()
        );
        self.non_primary_view(members);
    }

    /// Nothing of this member ran for `gap` (see `standstill`): unless the
    /// group could not have gone on without it, it goes non-primary now
    /// and rejoins once a leader speaks (`quorum`). Its writesets in
    /// flight stay: sent before it stopped, most are ordered by now, and
    /// their clients hear so once it reads the log; the rest are fenced
    /// and sent again as after any stall (`maybe_fence`).
    pub(super) fn stood_still(&mut self, gap: Duration) {
        if !self.primary.stood_still_anew(self.clock.now()) || !self.could_go_on_without_me() {
            return;
        }
        log::info!("this node stood still for {:.1} s (paused or starved of CPU) while the group went on: it is non-Primary until it has caught up", gap.as_secs_f64());
        self.incarnation.quorum.fell_behind();
        let me: Vec<MemberInfo> = self.state.members().iter().filter(|m| m.info.id == self.me.id).map(|m| m.info.clone()).collect();
        self.deliver_non_primary(me);
    }

    /// Whether this member serves reads (synced in a primary view with
    /// other data members) that the group may have overtaken while it
    /// stood still. Not when the configuration keeps it primary whatever
    /// happens (`pc.ignore_quorum`, `pc.ignore_sb`), nor when it alone
    /// outweighs the rest: nothing was committed without it then. Not
    /// only when its quorum watch says primary: a member asking to rejoin
    /// may already have been delivered another's primary view with it
    /// in, and its server answers reads (simulator seed 344).
    pub(super) fn could_go_on_without_me(&self) -> bool {
        let synced = self.state.member(self.me.id).is_some_and(|m| m.state == crate::group::state::MemberState::Synced);
        let other_data = self.state.members().iter().any(|m| m.info.id != self.me.id && !m.info.arbitrator);
        let kept_primary = self.primary.policy().ignore_quorum || self.primary.policy().ignore_sb || self.reforms_by_weight();
        synced && other_data && !kept_primary && !self.me.arbitrator && self.watches_quorum() && !self.members.is_halted() && !self.members.is_leaving_or_left()
    }

    /// The non-primary view of `members` (this member's side): what this
    /// member proposed and is not yet ordered fails.
    pub(super) fn non_primary_view(&mut self, members: Vec<MemberInfo>) {
        // What of them may be in the log is fenced once a leader is known
        // again (see `owed_fence`).
        self.order.abandon(&mut self.events);
        self.deliver_non_primary(members);
    }

    pub(super) fn deliver_non_primary(&mut self, members: Vec<MemberInfo>) {
        let my_idx = members.iter().position(|m| m.id == self.me.id).map_or(-1, |i| i as i32);
        let view = crate::group::state::View { history: self.state.history(), seqno: self.state.seqno(), conf_id: -1, primary: false, members, my_idx };
        self.events.push(GroupEvent::View(view));
        self.flush_events();
    }
}
