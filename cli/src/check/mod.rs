//! `lockstep check`: what a cluster promises, checked against real
//! histories under the faults users meet, for either provider.
//!
//! - [`crash`]: acknowledged commits across SIGKILLs of one node, a
//!   majority or every node, restarted as systemd does or plainly.

pub mod cli;
pub mod crash;
