//! Faults a check does to a cluster, besides SIGKILL and SIGSTOP (which
//! `cluster::Node` does): [`partition`]s of the network between nodes.

pub mod partition;
