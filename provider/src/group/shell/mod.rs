//! The Raft shell: the driver holds the Raft node and the rooms, takes
//! commands and frames, ticks, hands raft-rs's `Ready` off, and performs
//! what the rooms decide.

pub mod commands;
pub mod commit_ahead;
pub mod driver;
pub mod incarnation;
pub mod io;
pub mod log;
pub mod raft_log;
pub mod ready;
pub mod runner;
pub mod snapshot_watch;
pub mod step;
mod membership;
mod weighted;
