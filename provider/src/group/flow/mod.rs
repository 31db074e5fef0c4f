//! Flow control: the members' STOP and CONT (`flow_control`), the gate
//! the replicating threads wait at (`gate`), the cluster's apply lag
//! (`cluster_lag`) and how busy the driver's thread is (`load`).

pub mod cluster_lag;
pub mod flow_control;
pub mod gate;
pub mod load;

use std::sync::Arc;
use std::time::Instant;

use flow_control::FlowControl;
use gate::FlowGate;

/// What the flow room holds for the driver.
pub(crate) struct Flow {
    pub(in crate::group) fc: FlowControl,
    pub(in crate::group) cluster_lag: cluster_lag::ClusterLag,
    /// How busy this thread is (see `load`).
    pub(in crate::group) load: load::Load,
    pub(in crate::group) gate: Arc<FlowGate>,
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
