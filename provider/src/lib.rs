//! lockstep: a wsrep provider (API v26) that MariaDB loads in place of
//! Galera's `libgalera_smm.so`.
//!
//! The modules follow the layers of DESIGN.md, top (C boundary) to bottom:
//!
//! * [`abi`]       the C ABI of wsrep v26: `wsrep_loader`, entry points, services
//! * `node`        the replicator: node state, local transactions, appliers
//! * `cert`        certification index and `depends_on` (deterministic)
//! * `monitor`     ordered sections: apply and commit monitors
//! * `writeset`    the versioned writeset encoding
//! * `group`       total order and membership (Raft), views, flow control
//! * `transport`   TCP between providers
//! * `gcache`      writeset cache for IST
//! * `transfer`    SST coordination and IST
//! * `sim`         deterministic simulation of several members' core
//! * [`arbitrator`] a voting member without data: what `garbd` runs
//! * `metrics`     the Prometheus endpoint (`lockstep.metrics_addr`)
//! * `wire`        the bounds-checked reader every binary format uses
//!
//! The one registry of provider options and status variables is its own
//! crate, `lockstep-config`, shared with the `lockstep` command.

pub mod abi;
pub mod arbitrator;
pub mod cert;
pub mod gtid;
pub mod writeset;
pub mod monitor;
pub mod group;
pub mod log;
pub mod metrics;
pub mod node;
pub mod transport;
pub mod gcache;
pub mod transfer;
pub mod sim;
pub mod wire;

#[cfg(test)]
mod decoders_fuzz;
