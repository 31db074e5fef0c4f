//! lockstep-config: the one registry of provider options and status
//! variables, with Galera 26.4.23's names, defaults, syntax and behaviour.
//!
//! * [`options`]: the option table ([`options::TABLE`], [`Opt`]) and the
//!   typed handles in [`keys`] (`keys::GCS_FC_LIMIT`, ...);
//! * [`Config`]: the live configuration — `init` from the node and the
//!   option string, `set` at runtime, `render` for `options_get`, typed
//!   `get`, and [`Notice`]s to log (options not yet effective, ...);
//! * [`address`]: the cluster address (`gcomm://...`);
//! * [`status`]: the status variables of `stats_get`, and those the
//!   server computes from the view ([`ServerVar`]).
//!
//! ```
//! use lockstep_config::{keys, Config, NodeInfo};
//! let node = NodeInfo { node_address: "127.0.0.1:27010", data_dir: "/var/lib/mysql/" };
//! let mut cfg = Config::init(&node, "gcache.size=10M; evs.suspect_timeout=PT10S").unwrap();
//! assert_eq!(cfg.get(keys::GCS_FC_LIMIT), 16);
//! assert_eq!(cfg.duration(keys::EVS_SUSPECT_TIMEOUT).as_secs(), 10);
//! let changes = cfg.set("gcs.fc_limit=100").unwrap();
//! assert_eq!(changes[0].opt, keys::GCS_FC_LIMIT.opt());
//! assert!(cfg.render().contains("gcs.fc_limit = 100; "));
//! ```

pub mod address;
pub mod check;
pub mod config;
pub mod error;
pub mod node;
pub mod options;
pub mod pairs;
pub mod service;
pub mod status;
pub mod typed;
pub mod value;

pub use address::{parse_cluster_address, ClusterAddress, Peer};
pub use check::check_value;
pub use config::{Change, Config, NodeInfo, Notice, SetFailure};
pub use error::{InitError, OptionError};
pub use options::{keys, Opt, OptionSpec, Runtime};
pub use status::{ServerVar, Shown, StatusVar, VarKind};
pub use typed::{BoolKey, DoubleKey, DurationKey, IntKey, StrKey, TypedKey, Value};
