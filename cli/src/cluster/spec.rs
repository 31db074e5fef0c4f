//! What a cluster is: node count, provider, directory, ports, extra options.
//! Pure data and pure derivations (ports, paths), so it is unit-testable.

use super::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the Galera package installs its provider.
pub const GALERA_PATH: &str = "/usr/lib/galera/libgalera_smm.so";
/// Where a packaged lockstep would install (DESIGN.md's example).
pub const INSTALLED_LOCKSTEP_PATH: &str = "/usr/lib/lockstep/liblockstep.so";
/// Each node owns a block of this many ports starting at
/// `base_port + (N-1) * PORTS_PER_NODE`: client, gcomm, IST, SST.
pub const PORTS_PER_NODE: u16 = 10;
pub const DEFAULT_DIR: &str = "/tmp/lockstep-cluster";
/// Below Linux's ephemeral range (32768+), so outgoing connections never
/// squat on a node's port.
pub const DEFAULT_BASE_PORT: u16 = 24000;
/// sun_path is 108 bytes including the NUL.
const MAX_SOCKET_PATH: usize = 107;

/// Which wsrep provider library the nodes load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provider {
    /// liblockstep.so built next to the running executable.
    Lockstep,
    /// Galera 4 as packaged: /usr/lib/galera/libgalera_smm.so.
    Galera,
    /// Any library path.
    Path(PathBuf),
}

impl Provider {
    /// `lockstep`, `galera`, or anything else as a path.
    pub fn parse(text: &str) -> Provider {
        match text {
            "lockstep" => Provider::Lockstep,
            "galera" => Provider::Galera,
            path => Provider::Path(PathBuf::from(path)),
        }
    }

    pub fn label(&self) -> String {
        match self {
            Provider::Lockstep => "lockstep".into(),
            Provider::Galera => "galera".into(),
            Provider::Path(p) => p.display().to_string(),
        }
    }

    /// The library file, checked to exist.
    pub fn resolve(&self) -> Result<PathBuf> {
        match self {
            Provider::Galera => {
                existing(PathBuf::from(GALERA_PATH), "install the galera-4 package")
            }
            Provider::Path(p) => existing(absolute(p)?, "check the --provider path"),
            Provider::Lockstep => find_lockstep(),
        }
    }
}

fn existing(path: PathBuf, hint: &str) -> Result<PathBuf> {
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::msg(format!(
            "provider library {} not found: {hint}",
            path.display()
        )))
    }
}

/// `cargo build` puts liblockstep.so in target/<profile>/, next to the
/// `lockstep` binary; integration tests run from target/<profile>/deps/,
/// hence the parent too.
fn find_lockstep() -> Result<PathBuf> {
    let exe =
        std::env::current_exe().map_err(|e| Error::io("locating the running executable", e))?;
    let mut candidates = Vec::new();
    if let Some(dir) = exe.parent() {
        candidates.push(dir.join("liblockstep.so"));
        if let Some(up) = dir.parent() {
            candidates.push(up.join("liblockstep.so"));
        }
    }
    candidates.push(PathBuf::from(INSTALLED_LOCKSTEP_PATH));
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    Err(Error::msg(format!(
        "liblockstep.so not found (looked in {}): build it with `cargo build -p lockstep-provider` \
         (add --release for a release `lockstep`), or pass --provider galera|PATH",
        looked.join(", ")
    )))
}

pub(crate) fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|e| Error::io("reading the current directory", e))?;
    Ok(cwd.join(path))
}

/// Extra `[mysqld]` options (`key=value` or a bare flag) and extra
/// `wsrep_provider_options` entries (`key=value`). Later entries override
/// earlier ones and the generated defaults, key by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtraOptions {
    pub mysqld: Vec<String>,
    pub provider: Vec<String>,
}

/// Everything needed to create a cluster; also what the state file records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSpec {
    pub nodes: usize,
    pub provider: Provider,
    pub dir: PathBuf,
    pub base_port: u16,
    pub cluster_name: String,
    pub slave_threads: u32,
    /// Options for every node.
    pub extra: ExtraOptions,
    /// Options for one node (1-based), applied after `extra`.
    pub node_extra: BTreeMap<usize, ExtraOptions>,
    /// How long one node may take from launch to Synced (SST included).
    pub start_timeout: Duration,
    /// How long a node may take to exit after SIGTERM before it gets SIGKILL.
    pub stop_timeout: Duration,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            nodes: 1,
            provider: Provider::Lockstep,
            dir: PathBuf::from(DEFAULT_DIR),
            base_port: DEFAULT_BASE_PORT,
            cluster_name: "lockstep".into(),
            slave_threads: 2,
            extra: ExtraOptions::default(),
            node_extra: BTreeMap::new(),
            // mariabackup's donor script alone sleeps 10 s before streaming.
            start_timeout: Duration::from_secs(180),
            stop_timeout: Duration::from_secs(60),
        }
    }
}

/// The ports of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ports {
    pub client: u16,
    pub gcomm: u16,
    pub ist: u16,
    pub sst: u16,
    /// lockstep's metrics endpoint (`lockstep.metrics_addr`).
    pub metrics: u16,
}

impl Ports {
    pub fn all(&self) -> [(&'static str, u16); 5] {
        [
            ("client", self.client),
            ("gcomm", self.gcomm),
            ("IST", self.ist),
            ("SST", self.sst),
            ("metrics", self.metrics),
        ]
    }
}

/// Files of one node, all under DIR/nodeN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePaths {
    pub dir: PathBuf,
    pub cnf: PathBuf,
    pub datadir: PathBuf,
    pub tmpdir: PathBuf,
    pub socket: PathBuf,
    pub pid_file: PathBuf,
    pub error_log: PathBuf,
    /// mariadbd's stdout/stderr (the little it prints outside the error log).
    pub stdout_log: PathBuf,
    pub install_log: PathBuf,
    /// The pid this cluster started, written by us (mariadbd's own pid-file
    /// appears late and vanishes on shutdown).
    pub our_pid_file: PathBuf,
}

impl ClusterSpec {
    /// A spec with defaults for everything but these three.
    pub fn new(nodes: usize, provider: Provider, dir: impl Into<PathBuf>) -> ClusterSpec {
        ClusterSpec {
            nodes,
            provider,
            dir: dir.into(),
            ..ClusterSpec::default()
        }
    }

    pub fn base_port(mut self, port: u16) -> Self {
        self.base_port = port;
        self
    }

    /// Adds a `[mysqld]` option for every node, e.g. `wsrep_sync_wait=1`.
    pub fn mysqld_option(mut self, option: impl Into<String>) -> Self {
        self.extra.mysqld.push(option.into());
        self
    }

    /// Adds a provider option for every node, e.g. `evs.suspect_timeout=PT2S`.
    pub fn provider_option(mut self, option: impl Into<String>) -> Self {
        self.extra.provider.push(option.into());
        self
    }

    /// Adds a `[mysqld]` option for node `node` only (1-based).
    pub fn node_mysqld_option(mut self, node: usize, option: impl Into<String>) -> Self {
        self.node_extra
            .entry(node)
            .or_default()
            .mysqld
            .push(option.into());
        self
    }

    /// Adds a provider option for node `node` only, e.g. `gmcast.segment=1`.
    pub fn node_provider_option(mut self, node: usize, option: impl Into<String>) -> Self {
        self.node_extra
            .entry(node)
            .or_default()
            .provider
            .push(option.into());
        self
    }

    pub fn ports(&self, node: usize) -> Ports {
        let base = self.base_port + (node as u16 - 1) * PORTS_PER_NODE;
        Ports {
            client: base,
            gcomm: base + 1,
            ist: base + 2,
            sst: base + 3,
            metrics: base + 4,
        }
    }

    pub fn paths(&self, node: usize) -> NodePaths {
        let dir = self.dir.join(format!("node{node}"));
        NodePaths {
            cnf: dir.join("my.cnf"),
            datadir: dir.join("data"),
            tmpdir: dir.join("tmp"),
            socket: dir.join("mysqld.sock"),
            pid_file: dir.join("mysqld.pid"),
            error_log: dir.join("error.log"),
            stdout_log: dir.join("mariadbd.out"),
            install_log: dir.join("install-db.log"),
            our_pid_file: dir.join("lockstep.pid"),
            dir,
        }
    }

    pub fn state_file(&self) -> PathBuf {
        self.dir.join(super::state::STATE_FILE)
    }

    /// Catches what would otherwise fail later and obscurely.
    pub fn validate(&self) -> Result<()> {
        if self.nodes == 0 || self.nodes > 99 {
            return Err(Error::msg(format!(
                "--nodes must be 1..99, not {}",
                self.nodes
            )));
        }
        let last = self.base_port as u32 + self.nodes as u32 * PORTS_PER_NODE as u32;
        if self.base_port < 1024 || last > 65535 {
            return Err(Error::msg(format!(
                "ports {}..{last} do not fit in 1024..65535: pick another --base-port",
                self.base_port
            )));
        }
        if !self.dir.is_absolute() {
            return Err(Error::msg(format!(
                "cluster dir {} must be absolute",
                self.dir.display()
            )));
        }
        let socket = self.paths(self.nodes).socket;
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(Error::msg(format!(
                "socket path {} is longer than {MAX_SOCKET_PATH} bytes: use a shorter --dir",
                socket.display()
            )));
        }
        if let Some(node) = self
            .node_extra
            .keys()
            .find(|n| **n == 0 || **n > self.nodes)
        {
            return Err(Error::msg(format!(
                "options given for node{node}, but the cluster has {} nodes",
                self.nodes
            )));
        }
        self.validate_options()
    }

    fn validate_options(&self) -> Result<()> {
        let all = std::iter::once(&self.extra).chain(self.node_extra.values());
        for extra in all {
            if let Some(bad) = extra
                .provider
                .iter()
                .find(|o| !o.contains('=') || o.contains('\'') || o.contains(';'))
            {
                return Err(Error::msg(format!(
                    "provider option {bad:?} must be key=value, without ' or ;"
                )));
            }
            if let Some(bad) = extra
                .mysqld
                .iter()
                .find(|o| o.contains('\n') || o.trim().is_empty())
            {
                return Err(Error::msg(format!("bad mysqld option {bad:?}")));
            }
        }
        if self.cluster_name.is_empty() || self.cluster_name.contains(char::is_whitespace) {
            return Err(Error::msg(format!(
                "bad cluster name {:?}",
                self.cluster_name
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_blocks_of_ten() {
        let spec = ClusterSpec::new(3, Provider::Galera, "/tmp/x").base_port(24000);
        assert_eq!(
            spec.ports(1),
            Ports {
                client: 24000,
                gcomm: 24001,
                ist: 24002,
                sst: 24003,
                metrics: 24004
            }
        );
        assert_eq!(
            spec.ports(3),
            Ports {
                client: 24020,
                gcomm: 24021,
                ist: 24022,
                sst: 24023,
                metrics: 24024
            }
        );
    }

    #[test]
    fn paths_live_under_node_dirs() {
        let spec = ClusterSpec::new(2, Provider::Galera, "/tmp/x");
        let p = spec.paths(2);
        assert_eq!(p.socket, PathBuf::from("/tmp/x/node2/mysqld.sock"));
        assert_eq!(p.datadir, PathBuf::from("/tmp/x/node2/data"));
        assert_eq!(spec.state_file(), PathBuf::from("/tmp/x/cluster.state"));
    }

    #[test]
    fn provider_names() {
        assert_eq!(Provider::parse("galera"), Provider::Galera);
        assert_eq!(Provider::parse("lockstep"), Provider::Lockstep);
        assert_eq!(Provider::parse("/a/b.so"), Provider::Path("/a/b.so".into()));
        assert!(Provider::Path("/nonexistent/x.so".into())
            .resolve()
            .is_err());
    }

    #[test]
    fn validate_rejects_bad_specs() {
        let ok = ClusterSpec::new(3, Provider::Galera, "/tmp/x");
        assert!(ok.validate().is_ok());
        assert!(ClusterSpec {
            nodes: 0,
            ..ok.clone()
        }
        .validate()
        .is_err());
        assert!(ok.clone().base_port(65530).validate().is_err());
        assert!(ClusterSpec::new(1, Provider::Galera, "rel")
            .validate()
            .is_err());
        let long = format!("/tmp/{}", "d".repeat(100));
        assert!(ClusterSpec::new(1, Provider::Galera, long)
            .validate()
            .is_err());
        assert!(ok
            .clone()
            .provider_option("gcache.size")
            .validate()
            .is_err());
        assert!(ok.clone().provider_option("a=1;b=2").validate().is_err());
        assert!(ok.clone().node_mysqld_option(4, "x=1").validate().is_err());
        assert!(ok
            .node_provider_option(2, "gmcast.segment=1")
            .validate()
            .is_ok());
    }
}
