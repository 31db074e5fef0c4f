//! The Raft shell: the driver holds the Raft node and the rooms, takes
//! commands and frames, ticks, hands raft-rs's `Ready` off, and performs
//! what the rooms decide.

mod apply;
pub mod commands;
pub mod config;
pub mod commit_ahead;
pub mod driver;
pub mod incarnation;
pub mod io;
pub mod log;
mod net;
mod order;
mod primary;
mod reads;
pub mod raft_log;
pub mod ready;
mod reports;
pub mod runner;
pub mod snapshot_watch;
pub mod step;
mod membership;
mod weighted;
