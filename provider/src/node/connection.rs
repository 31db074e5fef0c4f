//! connect and disconnect: entering the group (bootstrapping a component
//! or joining one) and leaving it (contract §2).

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockstep_config::ClusterAddress;

use super::applier::Item;
use super::delivery::NodeDelivery;
use super::saved_state::Position;
use super::state::NodeState;
use super::types::Status;
use super::Shared;
use crate::group::{Group, GroupConfig, Mode};
use crate::gtid::{Seqno, Uuid, SEQNO_UNDEFINED};
use crate::log;

/// How long `disconnect` waits for an applier to deliver the final view.
const CLOSE_WAIT: Duration = Duration::from_secs(120);

impl Shared {
    pub fn connect(self: &Arc<Self>, cluster_name: &str, address: &ClusterAddress, donor: &str, bootstrap: bool) -> Status {
        if self.group().is_some() {
            log::warning!("connect: already connected");
            return Status::ConnFail;
        }
        let bootstrap = bootstrap || address.is_bootstrap();
        if bootstrap && !self.saved.lock().unwrap_or_else(|e| e.into_inner()).get().safe_to_bootstrap {
            log::error!(
                "It may not be safe to bootstrap the cluster from this node. It was not the last one to leave the cluster and may not contain all the updates. To force cluster bootstrap with this node, edit the grastate.dat file manually and set safe_to_bootstrap to 1 ."
            );
            return Status::NodeFail;
        }
        let mode = if bootstrap {
            let (history, position) = self.bootstrap_position();
            Mode::Bootstrap { history, position }
        } else {
            Mode::Join { peers: address.peers.iter().map(lockstep_config::Peer::addr).collect() }
        };
        self.start_group(cluster_name, mode, bootstrap, donor)
    }

    /// A new primary component continues this node's history (after the
    /// tail its gcache holds, see `replay`) when its position is known;
    /// otherwise it starts a new history.
    fn bootstrap_position(&self) -> (Uuid, Seqno) {
        let end = self.log_end();
        let (history, position) = (end.uuid, end.seqno);
        if history.is_nil() || position < 0 {
            (Uuid::random(), SEQNO_UNDEFINED)
        } else {
            (history, position)
        }
    }

    fn start_group(self: &Arc<Self>, cluster_name: &str, mode: Mode, bootstrap: bool, donor: &str) -> Status {
        self.queue.open();
        self.ballots.reset();
        self.local.reopen();
        self.local.reset(0);
        self.apply.reopen();
        self.commit.reopen();
        {
            let mut st = self.status();
            st.state = NodeState::Connected;
            st.connected_sent = false;
            st.closed = false;
            st.view = None;
            st.member = None;
            st.bootstrapping = bootstrap;
            st.donors = donor.to_string();
            st.sst = super::sst::Sst::None;
            st.join = None;
            st.rejoining = false;
        }
        self.in_view.store(false, std::sync::atomic::Ordering::SeqCst);
        let from = if self.inconsistent.load(std::sync::atomic::Ordering::SeqCst) { crate::gtid::Gtid::UNDEFINED } else { self.last_committed() };
        *self.joined_from.lock().unwrap_or_else(|e| e.into_inner()) = from;
        self.drain_to.store(SEQNO_UNDEFINED, std::sync::atomic::Ordering::SeqCst);
        let me = {
            let mut me = self.me.write().unwrap_or_else(|e| e.into_inner());
            me.id = Uuid::time_ordered();
            me.clone()
        };
        let settings = self.settings();
        let previous = match &mode {
            Mode::Join { .. } => super::view_state::previous_member(self.saved.lock().unwrap_or_else(|e| e.into_inner()).dir()),
            Mode::Bootstrap { .. } => None,
        };
        let previous = previous.map(|(member, view)| {
            let position = self.log_end();
            log::info!("this node was member {} of a {}-member primary view when it stopped without leaving, at {}; telling the cluster", member, view.len(), position);
            crate::group::recovery::Previous { member, view, position: (position.uuid, position.seqno) }
        });
        let what = match &mode {
            Mode::Bootstrap { history, position } => format!("bootstrapping {}:{}", history, position),
            Mode::Join { peers } => format!("joining the cluster at {}", peers.join(",")),
        };
        let tls = match settings.tls.as_ref().map(crate::transport::tls::Tls::load).transpose() {
            Ok(t) => t.map(Arc::new),
            Err(e) => {
                log::error!("cannot start group communication: {}", e);
                self.status().state = NodeState::Closed;
                self.queue.close();
                return Status::NodeFail;
            }
        };
        let cfg = GroupConfig {
            tls,
            me,
            mode,
            listen: settings.group_listen.clone(),
            segment: settings.segment,
            compress_segments: settings.compress_segments,
            cluster_name: cluster_name.to_string(),
            allow: self.allow.clone(),
            isolation: self.isolation,
            tick: crate::group::TICK,
            timeouts: settings.timeouts,
            previous,
        };
        match Group::start(cfg, Box::new(NodeDelivery(self.clone()))) {
            Ok(g) => {
                g.set_policy(settings.quorum_policy);
                g.set_send_window(settings.send_window);
                log::info!("connected as {} ({}) on {}, {}", g.me().id, g.me().name, g.me().address, what);
                *self.group.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(g));
                Status::Ok
            }
            Err(e) => {
                log::error!("cannot start group communication: {}", e);
                self.status().state = NodeState::Closed;
                self.queue.close();
                Status::NodeFail // as Galera's failed gcs connect
            }
        }
    }

    /// Leaves the group: the others see a view without this node, appliers
    /// finish what was ordered, the final view goes to the server, and the
    /// position is saved.
    pub fn disconnect(&self) -> Status {
        let Some(group) = self.group() else { return Status::Ok };
        group.leave();
        *self.group.write().unwrap_or_else(|e| e.into_inner()) = None;
        group.stop();
        self.fail_pending();
        self.deliver_final_view();
        let last = self.last_committed();
        let members = self.status().last_primary_members;
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        super::view_state::remove(saved.dir());
        saved.set(Position {
            uuid: last.uuid,
            seqno: last.seqno,
            // The last member of a primary component holds every commit.
            safe_to_bootstrap: members <= 1,
        });
        {
            let mut st = self.status();
            st.state = NodeState::Closed;
            st.member = None;
        }
        self.syncer.close();
        log::info!("closed at {}", last);
        Status::Ok
    }

    /// This node's data may differ from the cluster's (see
    /// `applier::inconsistent`): it leaves the group, as Galera's does, so
    /// the others go on without it; its saved position becomes unknown, so
    /// that a restart takes a full state transfer, not an IST on top of
    /// the divergence; the server hears the final view after what is
    /// queued (wsrep_cluster_status Disconnected) and keeps running, as
    /// with Galera, until the operator restarts it. Runs on the applier
    /// that found the failure; another one (or this one, once back in
    /// `recv`) delivers the final view.
    pub(super) fn leave_inconsistent(&self) {
        self.inconsistent.store(true, std::sync::atomic::Ordering::SeqCst);
        let left = self.leave_group(|| {
            let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
            super::view_state::remove(saved.dir());
            saved.set(Position { uuid: Uuid::NIL, seqno: SEQNO_UNDEFINED, safe_to_bootstrap: false });
        });
        if left {
            log::info!("left the cluster: this node's state is marked unknown until a state transfer");
        }
    }

    /// This node's appliers hung (see `stall`): it leaves the group so
    /// that the others stop waiting for it. Its data is a prefix of the
    /// cluster's, so its position stays: a restart joins by IST.
    pub(super) fn leave_stalled(&self) {
        if self.leave_group(|| {}) {
            log::info!("left the cluster: what was ordered before applies if the appliers resume; restart the node to rejoin");
        }
    }

    /// Leaves the group and queues the final view behind what is queued;
    /// `then` runs between the two. False when already out.
    fn leave_group(&self, then: impl FnOnce()) -> bool {
        let Some(group) = self.group() else { return false };
        group.leave();
        *self.group.write().unwrap_or_else(|e| e.into_inner()) = None;
        group.stop();
        self.fail_pending();
        then();
        self.status().member = None;
        if !self.queue.push(Item::Final) {
            self.queue.close();
        }
        true
    }

    /// Queues the final view behind everything delivered and waits for an
    /// applier to deliver it. With no applier inside `recv` there is nobody
    /// to call back: the queue just closes.
    fn deliver_final_view(&self) {
        if self.receivers.load(std::sync::atomic::Ordering::SeqCst) == 0 || !self.queue.push(Item::Final) {
            self.queue.close();
            self.status().closed = true;
            return;
        }
        let deadline = Instant::now() + CLOSE_WAIT;
        let mut st = self.status();
        while !st.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                log::warning!("no applier delivered the final view within {:?}; closing anyway", CLOSE_WAIT);
                st.closed = true;
                drop(st);
                self.status_cv.notify_all();
                self.queue.close();
                return;
            }
            st = self.status_cv.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}
