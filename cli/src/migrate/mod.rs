//! `lockstep migrate`: from a running Galera cluster to a lockstep cluster
//! while the application keeps writing.
//!
//! 1. `check`: the source has what replication needs ([`preflight`]).
//! 2. `start`: a mariabackup copy of one Galera node ([`copy`]) becomes
//!    node 1 of a new lockstep cluster, the other nodes start from it as
//!    `lockstep cluster up` starts them, and node 1 replicates from the
//!    Galera node by GTID after the copy's position ([`follow`]).
//! 3. `follow`: the lag, and failover when either end fails.
//! 4. `switch`: the writes stop, the lockstep side catches up, the
//!    clients are told where to go, and every table is compared in read
//!    views of that moment ([`switch`]).
//!
//! Layout of a migration directory (`DIR`):
//!
//! ```text
//! DIR/migration.state     the sources, the replica, the replication account
//! DIR/copy/               the copy while it is taken and prepared
//! DIR/cluster/            the lockstep cluster (`lockstep cluster status --dir DIR/cluster`)
//! ```

mod copy;
mod follow;
mod gtid;
mod preflight;
mod source;
mod state;
mod switch;

pub mod cli;

pub use follow::{keep_following, lag, Lag};
pub use gtid::Position;
pub use preflight::{Identity, Replication};
pub use source::Source;
pub use switch::{switch, SwitchOptions, Switched};

use crate::cluster::{Cluster, ClusterSpec, Error, Phase, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A migration under way, as `DIR/migration.state` keeps it between
/// commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    pub dir: PathBuf,
    /// Galera nodes that may be followed, the copy's first.
    pub sources: Vec<Source>,
    /// Which of them the replica follows now.
    pub following: usize,
    /// The lockstep node that replicates (1-based).
    pub replica: usize,
    pub replication: Replication,
    /// The GTID domains the Galera cluster writes in.
    pub domains: BTreeSet<u32>,
    pub identity: Identity,
    /// The copy's position, which every lockstep node holds: the floor
    /// of a domain the source has not written in since.
    pub copied: Position,
}

impl Migration {
    pub fn source(&self) -> Source {
        self.sources[self.following].clone()
    }

    pub fn cluster_dir(dir: &Path) -> PathBuf {
        dir.join("cluster")
    }

    pub fn open(dir: &Path) -> Result<Migration> {
        state::read(dir)
    }

    pub fn save(&self) -> Result<()> {
        state::write(self)
    }
}

/// What `start` needs: the source nodes, the account, and the lockstep
/// cluster to make (its `dir` is replaced by `DIR/cluster`).
pub struct Plan {
    pub dir: PathBuf,
    pub sources: Vec<Source>,
    pub replication: Replication,
    pub identity: Identity,
    pub cluster: ClusterSpec,
}

/// What happened at the start, for the operator.
pub enum Step {
    Checked { version: String, position: Position },
    Copying { bytes: u64, of: u64 },
    Copied { bytes: u64, took: Duration, position: Position },
    Node(usize, Phase),
    Following { node: usize, source: String, from: Position },
}

/// Checks, copies, starts the lockstep cluster and its replication.
pub fn start(plan: Plan, progress: &mut dyn FnMut(Step)) -> Result<(Migration, Cluster)> {
    let first = plan.sources.first().ok_or_else(|| Error::msg("no source node given"))?;
    let facts = preflight::check(first, &plan.replication, plan.identity)?;
    progress(Step::Checked { version: facts.version.clone(), position: facts.position.clone() });
    let copy_dir = plan.dir.join("copy");
    if copy_dir.exists() {
        return Err(Error::msg(format!("{} exists: an earlier start stopped halfway; remove it", copy_dir.display())));
    }
    std::fs::create_dir_all(&plan.dir).map_err(|e| Error::io(format!("creating {}", plan.dir.display()), e))?;
    let copy = copy::take(first, &copy_dir, &mut |bytes, of| progress(Step::Copying { bytes, of }))?;
    progress(Step::Copied { bytes: copy.bytes, took: copy.took, position: copy.position.clone() });
    let mut spec = plan.cluster;
    spec.dir = Migration::cluster_dir(&plan.dir);
    spec.extra.mysqld.extend(identity_options(plan.identity));
    let cluster = Cluster::up_from_copy(spec, &copy_dir, &mut |node, phase| progress(Step::Node(node, phase)))?;
    let migration = Migration {
        dir: plan.dir,
        sources: plan.sources,
        following: 0,
        replica: 1,
        replication: plan.replication,
        copied: copy.position.only(&facts.domains),
        domains: facts.domains,
        identity: plan.identity,
    };
    migration.save()?;
    follow::start(cluster.node(1), &migration.source(), &migration.replication, &copy.position)?;
    progress(Step::Following { node: 1, source: migration.source().name(), from: copy.position });
    Ok((migration, cluster))
}

/// The lockstep nodes' replication identity. `skip_slave_start`: a
/// former replica that restarts must not replicate beside the new one
/// (`follow` moves replication, and only it starts it).
fn identity_options(ids: Identity) -> Vec<String> {
    vec![
        format!("server_id={}", ids.server_id),
        "wsrep_gtid_mode=ON".into(),
        format!("wsrep_gtid_domain_id={}", ids.domain_id),
        "skip_slave_start".into(),
    ]
}
