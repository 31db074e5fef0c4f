//! Flow control: the members' STOP and CONT (`flow_control`), the gate
//! the replicating threads wait at (`gate`), the cluster's apply lag
//! (`cluster_lag`) and how busy the driver's thread is (`load`).

pub mod cluster_lag;
pub mod flow_control;
pub mod gate;
pub mod load;

use std::sync::Arc;
use std::time::Instant;

use flow_control::{FlowControl, Signal};
use gate::FlowGate;

/// What the flow room holds for the driver.
pub(crate) struct Flow {
    fc: FlowControl,
    cluster_lag: cluster_lag::ClusterLag,
    /// How busy this thread is (see `load`).
    load: load::Load,
    gate: Arc<FlowGate>,
}

impl Flow {
    pub(in crate::group) fn new(gate: Arc<FlowGate>, now: Instant) -> Flow {
        Flow {
            fc: FlowControl::default(),
            cluster_lag: Default::default(),
            load: load::Load::new(now),
            gate,
        }
    }
}

impl Flow {
    /// This member's backlog crossed a limit: the signal to send the
    /// others, if any (see `FlowControl::local`).
    pub(in crate::group) fn local(&mut self, me: u64, signal: Signal, now: Instant) -> Option<Signal> {
        self.fc.local(me, signal, now)
    }

    /// Member `from`'s signal; a CONT this member held back while another
    /// member's STOP held (Galera's rule) may go now: the signal to send.
    pub(in crate::group) fn on_signal(&mut self, from: u64, signal: Signal, me: u64, now: Instant) -> Option<Signal> {
        self.fc.on_message(from, signal, now);
        self.fc.resume_deferred(me, now)
    }

    /// Once a tick: the signal to send, if any (see `FlowControl::tick`).
    pub(in crate::group) fn tick(&mut self, me: u64, now: Instant) -> Option<Signal> {
        self.fc.tick(me, now)
    }

    /// FLUSH STATUS: the STOP counters start again.
    pub(in crate::group) fn reset_counters(&mut self) {
        self.fc.reset_counters();
    }

    /// Whether this member's apply lag is due to the others; if so, it
    /// counts as sent.
    pub(in crate::group) fn lag_due(&mut self, now: Instant) -> bool {
        self.cluster_lag.due(now)
    }

    /// Member `from`'s apply lag (this member's own among them).
    pub(in crate::group) fn on_lag(&mut self, from: u64, ms: u32, now: Instant) {
        self.cluster_lag.on_report(from, ms, now);
    }

    /// The driver's thread worked from `woke` to `now` (see `load`).
    pub(in crate::group) fn worked(&mut self, woke: Instant, now: Instant) {
        self.load.worked(woke, now);
    }

    /// Whether the driver's thread has time to spare for eager sends.
    pub(in crate::group) fn has_spare_time(&self) -> bool {
        self.load.has_spare_time()
    }

    pub(in crate::group) fn retain_members(&mut self, ids: &[u64]) {
        self.fc.retain_members(ids);
        self.cluster_lag.retain_members(ids);
    }

    /// The replicating threads see flow control as it is now.
    pub(in crate::group) fn publish(&self, now: Instant) {
        self.gate.publish(self.fc.paused(now), self.fc.requested(), self.fc.counters(), now);
    }

    /// `wsrep_cluster_apply_lag_ms` as of now (see `cluster_lag`).
    pub(in crate::group) fn publish_lag(&self, now: Instant) {
        self.gate.publish_lag(self.cluster_lag.worst(now));
    }

    /// The driver stops: no writer waits for it any more.
    pub(in crate::group) fn open_for_good(&self, now: Instant) {
        self.gate.publish(false, false, self.fc.counters(), now);
    }
}
