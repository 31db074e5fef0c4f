//! What this member tells the others on its own, besides Raft: flow
//! control's signals, its apply lag, its word on the leader, and a
//! leader's word to the arbitrators on the log they keep.

use std::time::Instant;

use raft::StateRole;

use super::driver::Driver;
use crate::group::flow::flow_control::Signal;
use crate::group::wire::frame::Frame;
use crate::transport::handshake::FEATURE_LEADER_WORDS;

impl Driver {
    /// A leader tells the arbitrators the lowest index a data voter has
    /// matched, which their logs keep (see `arbitrator_hold`).
    pub(super) fn tell_arbitrators(&mut self, now: Instant) {
        let raft = &self.incarnation.raw.raft;
        if raft.state != StateRole::Leader {
            return;
        }
        let members = self.state.members();
        let arbitrators: Vec<u64> = members.iter().filter(|m| m.info.arbitrator && m.info.id != self.me.id).map(|m| m.info.id.raft_id()).collect();
        if arbitrators.is_empty() {
            return;
        }
        let data_voters = members.iter().filter(|m| m.voter && !m.info.arbitrator);
        let Some(lowest) = data_voters.filter_map(|m| raft.prs().get(m.info.id.raft_id())).map(|pr| pr.matched).min() else { return };
        if self.members.arbitrator_hold.due(lowest, now) {
            self.send_frame(arbitrators, &Frame::Hold(lowest));
        }
    }

    /// Sends this member's apply lag to the others when due, and
    /// publishes the cluster's worst.
    pub(super) fn report_lag(&mut self, now: Instant) {
        if self.flow.lag_due(now) {
            let ms = self.delivery.apply_lag_ms();
            let me = self.me.id.raft_id();
            self.flow.on_lag(me, ms, now);
            let others = self.state.members().iter().filter(|m| m.info.id != self.me.id).map(|m| m.info.id.raft_id());
            self.send_frame(others, &Frame::Lag(ms));
            self.report_leader(now);
        }
        self.flow.publish_lag(now);
    }

    /// A follower that hears its leader says so to the other followers
    /// that read it (see `cut_off`); one that does not hear it says
    /// nothing.
    pub(super) fn report_leader(&self, now: Instant) {
        let raft = &self.incarnation.raw.raft;
        let me = self.me.id.raft_id();
        let Some((leader, at)) = self.primary.leader_contact().filter(|(l, _)| *l == raft.leader_id && *l != me) else { return };
        let silent = now.saturating_duration_since(at);
        // A word older than this counts for nobody (`LeaderWords`).
        if silent >= crate::group::primary::cut_off::heard_elsewhere_within(crate::group::primary::cut_off::window(self.tick)) {
            return;
        }
        let word = crate::group::primary::cut_off::LeaderWord { leader, term: raft.term, silent_ms: silent.as_millis() as u32 };
        let others = self.state.members().iter().map(|m| m.info.id.raft_id()).filter(|id| *id != leader && *id != me && self.net.has_feature(*id, FEATURE_LEADER_WORDS));
        self.send_frame(others, &Frame::Leader(word));
    }

    pub(super) fn broadcast_flow(&self, signal: Signal) {
        let others = self.state.members().iter().filter(|m| m.info.id != self.me.id).map(|m| m.info.id.raft_id());
        self.send_frame(others, &Frame::Flow(signal));
    }

    pub(super) fn publish_flow(&self) {
        self.flow.publish(self.clock.now());
    }
}
