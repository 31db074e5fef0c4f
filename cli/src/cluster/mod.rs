//! `lockstep cluster`: local clusters of mariadbd processes on loopback.
//!
//! One launcher with two users: the `lockstep cluster` command (see [`cli`])
//! and the integration tests in `cli/tests/`, which start real clusters with
//! [`Cluster::up`], drive nodes ([`Node::stop`], [`Node::kill`],
//! [`Node::freeze`] ...) and talk SQL through [`Conn`], a small MySQL
//! text-protocol client over the node's unix socket.
//!
//! Layout of a cluster directory (`DIR`):
//!
//! ```text
//! DIR/cluster.state          the spec (ports, provider, options): see state.rs
//! DIR/nodeN/my.cnf           generated server configuration (--defaults-file)
//! DIR/nodeN/data/            datadir (mariadb-install-db, then SST for joiners)
//! DIR/nodeN/mysqld.sock      client socket: mariadb -S DIR/nodeN/mysqld.sock -uroot
//! DIR/nodeN/error.log        the server's error log
//! DIR/nodeN/lockstep.pid     pid of the mariadbd this cluster started
//! ```

mod client;
mod config;
mod launch;
mod node;
mod preflight;
mod process;
mod recovery;
mod seed;
mod spec;
mod state;

pub mod cli;

pub use client::{Conn, QueryResult};
pub use config::provider_setting;
pub use launch::{Cluster, StopReport};
pub use lockstep_config::{ServerVar, StatusVar};
pub use node::{tail_lines, Node, Phase, Status, VarName};
pub use preflight::find_program;
pub use spec::{ClusterSpec, ExtraOptions, NodePaths, Ports, Provider, DEFAULT_DIR};

use std::fmt;
use std::time::Duration;

/// MariaDB's ER_LOCK_DEADLOCK: what a client sees when its transaction lost
/// certification or was brute-force aborted by a replicated one.
pub const ER_LOCK_DEADLOCK: u16 = 1213;

/// Everything that can go wrong, as a sentence an operator can act on.
#[derive(Debug)]
pub enum Error {
    /// The server answered a statement with an error packet.
    Sql {
        code: u16,
        state: String,
        message: String,
    },
    /// A wait ran out of time; the text says what was awaited and what was seen.
    Timeout(String),
    /// An I/O error, with what was being done when it happened.
    Io {
        context: String,
        source: std::io::Error,
    },
    /// Anything else (missing tools, bad arguments, a node that died ...).
    Msg(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The MySQL error code when the server refused a statement.
    pub fn sql_code(&self) -> Option<u16> {
        match self {
            Error::Sql { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// ER_LOCK_DEADLOCK (1213): the transaction must be retried.
    pub fn is_deadlock(&self) -> bool {
        self.sql_code() == Some(ER_LOCK_DEADLOCK)
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn msg(text: impl Into<String>) -> Error {
        Error::Msg(text.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Same shape as the mariadb client, so errors read familiar.
            Error::Sql {
                code,
                state,
                message,
            } => write!(f, "ERROR {code} ({state}): {message}"),
            Error::Timeout(text) | Error::Msg(text) => f.write_str(text),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {}

/// Formats a duration the way progress lines show it: `8.1s`.
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}
