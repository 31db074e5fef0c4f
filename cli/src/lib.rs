//! The `lockstep` command's library: what the command and the integration
//! tests share (one launcher, two users).

pub mod bench;
pub mod check;
pub mod cluster;
pub mod conformance;
pub mod fault;
pub mod migrate;
pub mod options;
pub mod recover;
pub mod top;
pub mod workload;
