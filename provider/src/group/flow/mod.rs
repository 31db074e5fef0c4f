//! Flow control: the members' STOP and CONT (`flow_control`), the gate
//! the replicating threads wait at (`gate`), the cluster's apply lag
//! (`cluster_lag`) and how busy the driver's thread is (`load`).

pub mod cluster_lag;
pub mod flow_control;
pub mod gate;
pub mod load;
