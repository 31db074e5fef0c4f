//! What a benchmark run is: providers, cluster shape, the matrix of cells,
//! and where each provider's cluster and outputs live. Pure data.

use crate::cluster::{provider_setting, ClusterSpec, Error, Provider, Result};
use lockstep_config::keys;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_DIR: &str = "/tmp/lockstep-bench";
/// Other users of this machine take 24000-27999 and 30000+.
pub const DEFAULT_BASE_PORT: u16 = 28000;
/// Each provider's cluster gets its own block of ports, so a cluster that
/// is still releasing its sockets never collides with the next one.
const PORT_BLOCK: u16 = 100;

/// Which node(s) sysbench's connections go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every connection to this node (1-based): one writer node.
    Node(usize),
    /// Connections round-robin over all nodes: every node writes.
    All,
}

impl Target {
    /// `node1`, `2`, `all`.
    pub fn parse(text: &str) -> std::result::Result<Target, String> {
        if text == "all" {
            return Ok(Target::All);
        }
        let digits = text.strip_prefix("node").unwrap_or(text);
        match digits.parse() {
            Ok(n) if n >= 1 => Ok(Target::Node(n)),
            _ => Err(format!("target must be nodeN or all, not {text:?}")),
        }
    }

    pub fn label(&self) -> String {
        match self {
            Target::Node(n) => format!("node{n}"),
            Target::All => "all".into(),
        }
    }

    /// The nodes (1-based) sysbench connects to.
    pub fn nodes(&self, cluster_size: usize) -> Vec<usize> {
        match self {
            Target::Node(n) => vec![*n],
            Target::All => (1..=cluster_size).collect(),
        }
    }
}

/// One measurement: a test at a thread count against a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub test: String,
    pub threads: u32,
    pub target: Target,
}

impl Cell {
    /// File-name stem for this cell's outputs.
    pub fn slug(&self) -> String {
        format!("{}-{}t-{}", self.test, self.threads, self.target.label())
    }
}

/// What `lockstep bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// The sysbench matrix (see `cells`).
    Cells,
    /// One big UPDATE under a write load (see `big_trx`).
    BigTrx,
    /// Replica staleness against flow control (see `freshness`).
    Freshness,
    /// `lockstep.max_lag_ms` against writer threads and `gcs.fc_limit`,
    /// read by a range query (see `bound`).
    Bound,
    /// Apply capacity: desync + FTWRL drains, and the live estimate
    /// (see `drain`).
    Drain,
    /// The cells with the last node near, then far (see `sweep`).
    Wan,
    /// The cells with the last node near, a few ms away, and that far with
    /// larger send windows (see `sweep`).
    SlowNode,
    /// The write cells per durability setting, and a whole-cluster kill
    /// (see `durability`).
    Durability,
}

impl Scenario {
    const ALL: [Scenario; 8] = [Scenario::Cells, Scenario::BigTrx, Scenario::Freshness, Scenario::Bound, Scenario::Drain, Scenario::Wan, Scenario::SlowNode, Scenario::Durability];

    pub fn parse(text: &str) -> std::result::Result<Scenario, String> {
        let name = if text == "cells" { "lan" } else { text };
        Scenario::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| format!("scenario must be lan (or cells), wan, slow-node, big-trx, freshness, bound, drain or durability, not {text:?}"))
    }

    /// As `--scenario` names it.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Cells => "lan",
            Scenario::BigTrx => "big-trx",
            Scenario::Freshness => "freshness",
            Scenario::Bound => "bound",
            Scenario::Drain => "drain",
            Scenario::Wan => "wan",
            Scenario::SlowNode => "slow-node",
            Scenario::Durability => "durability",
        }
    }
}

/// Everything `lockstep bench` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchSpec {
    /// In run order; the first is the baseline the ratios divide by.
    pub providers: Vec<Provider>,
    pub nodes: usize,
    pub threads: Vec<u32>,
    pub tests: Vec<String>,
    pub targets: Vec<Target>,
    /// Measured seconds per cell.
    pub time: u32,
    /// Unmeasured seconds before each cell (a separate sysbench run).
    pub warmup: u32,
    pub tables: u32,
    pub table_size: u64,
    pub dir: PathBuf,
    pub base_port: u16,
    /// The report is also written here.
    pub output: Option<PathBuf>,
    /// `[mysqld]` options for every node of every provider.
    pub mysqld_options: Vec<String>,
    /// wsrep_provider_options entries for every node of every provider.
    pub provider_options: Vec<String>,
    /// One-way delay added to every byte to and from the last node's group
    /// port, or between segments (see wan.rs); None: no proxy.
    pub wan_delay_ms: Option<u32>,
    /// Nodes in this many `gmcast.segment`s of consecutive nodes (1: the
    /// option is not set).
    pub segments: usize,
    pub scenario: Scenario,
    /// big-trx: rows of the big table, and the streaming fragment sizes
    /// in bytes to run (0: no streaming).
    pub rows: u64,
    pub fragments: Vec<u64>,
    /// freshness: the writers' offered tps (0: unthrottled).
    pub rate: u32,
    /// lan: how many times the matrix runs, each on fresh clusters.
    pub repeat: u32,
    /// Keep the clusters' data directories once measured (`--keep-data`).
    pub keep_data: bool,
}

impl Default for BenchSpec {
    fn default() -> Self {
        BenchSpec {
            providers: vec![Provider::Galera, Provider::Lockstep],
            nodes: 3,
            threads: vec![8, 32],
            tests: vec!["oltp_update_index".into(), "oltp_write_only".into()],
            targets: vec![Target::Node(1), Target::All],
            time: 30,
            warmup: 5,
            tables: 8,
            table_size: 10_000,
            dir: PathBuf::from(DEFAULT_DIR),
            base_port: DEFAULT_BASE_PORT,
            output: None,
            mysqld_options: default_mysqld_options(),
            provider_options: Vec::new(),
            wan_delay_ms: None,
            segments: 1,
            scenario: Scenario::Cells,
            rows: 500_000,
            fragments: vec![0, 10_000, 100_000, 1_000_000],
            rate: 0,
            repeat: 1,
            keep_data: false,
        }
    }
}

/// Server settings for both providers alike. Durability comes from
/// replication (DESIGN.md), so no fsync per commit: the benchmark measures
/// replication, not this machine's disk.
pub fn default_mysqld_options() -> Vec<String> {
    vec!["innodb_flush_log_at_trx_commit=2".into()]
}

impl BenchSpec {
    /// The defaults with what `scenario` runs unless options say otherwise.
    pub fn for_scenario(scenario: Scenario) -> BenchSpec {
        let mut spec = BenchSpec { scenario, ..BenchSpec::default() };
        match scenario {
            Scenario::BigTrx => spec.nodes = 2,
            Scenario::Wan => {
                spec.tests = vec!["oltp_update_index".into()];
                spec.threads = vec![1, 4, 16, 64];
                spec.targets = vec![Target::Node(1)];
                spec.wan_delay_ms = Some(100);
            }
            Scenario::SlowNode => {
                spec.tests = vec!["oltp_read_write".into(), "oltp_update_index".into()];
                spec.threads = vec![16, 64];
                spec.targets = vec![Target::Node(1)];
                spec.wan_delay_ms = Some(7);
            }
            Scenario::Durability => spec.time = 20,
            // Issue 52's grid: the threads here, gcs.fc_limit in `bound`;
            // one table of 100,000 rows, lockstep's bound alone.
            Scenario::Bound => {
                spec.threads = vec![16, 64, 128];
                spec.table_size = 100_000;
                spec.providers = vec![Provider::Lockstep];
            }
            Scenario::Cells | Scenario::Freshness | Scenario::Drain => {}
        }
        spec
    }

    /// The matrix in run order: test, then threads, then target. Every
    /// provider runs the same cells in the same order, so the data has
    /// aged the same way when both measure a cell.
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells = Vec::new();
        for test in &self.tests {
            for threads in &self.threads {
                for target in &self.targets {
                    cells.push(Cell {
                        test: test.clone(),
                        threads: *threads,
                        target: *target,
                    });
                }
            }
        }
        cells
    }

    /// Directory name of provider `index` (0-based): its label, made
    /// file-name safe, with the index when two providers share a name.
    pub fn provider_slug(&self, index: usize) -> String {
        let slug = slug(&self.providers[index]);
        let shared = self
            .providers
            .iter()
            .filter(|p| self::slug(p) == slug)
            .count()
            > 1;
        match shared {
            true => format!("{slug}-{}", index + 1),
            false => slug,
        }
    }

    /// Raw outputs of provider `index`: DIR/<provider>/.
    pub fn provider_dir(&self, index: usize) -> PathBuf {
        self.dir.join(self.provider_slug(index))
    }

    pub fn ports_base(&self, index: usize) -> u16 {
        self.base_port + index as u16 * self.port_block()
    }

    fn port_block(&self) -> u16 {
        // Node ports plus one spare node-sized block for the WAN proxy.
        let needed = (self.nodes as u16 + 1) * ports_per_node();
        needed.div_ceil(PORT_BLOCK) * PORT_BLOCK
    }

    /// The cluster of provider `index`, in DIR/<provider>/cluster.
    pub fn cluster_spec(&self, index: usize) -> ClusterSpec {
        let mut spec = ClusterSpec::new(
            self.nodes,
            self.providers[index].clone(),
            self.provider_dir(index).join("cluster"),
        )
        .base_port(self.ports_base(index));
        spec.cluster_name = format!("bench-{}", self.provider_slug(index));
        for option in &self.mysqld_options {
            spec = spec.mysqld_option(option.clone());
        }
        for option in &self.provider_options {
            spec = spec.provider_option(option.clone());
        }
        let given = self.segment_option_given();
        for node in (1..=self.nodes).filter(|n| !given && self.segment_of(*n) > 0) {
            spec = spec.node_provider_option(node, provider_setting(keys::GMCAST_SEGMENT, self.segment_of(node)));
        }
        spec
    }

    /// Node `node`'s segment (1-based nodes): consecutive nodes share one.
    pub fn segment_of(&self, node: usize) -> usize {
        (node - 1) * self.segments / self.nodes.max(1)
    }

    /// An explicit --provider-option gmcast.segment=K puts every node in
    /// K: the same delays without segments, to compare.
    pub fn segment_option_given(&self) -> bool {
        self.provider_options.iter().any(|o| o.trim_start().starts_with(keys::GMCAST_SEGMENT.name()))
    }

    /// Node `node`'s side for the WAN proxy (0: a caller it does not
    /// know): its segment, or, without segments, the last node alone.
    pub fn wan_side(&self, node: usize) -> usize {
        match (node, self.segments > 1) {
            (0, _) => 0,
            (n, true) => self.segment_of(n),
            (n, false) => usize::from(n == self.nodes),
        }
    }

    /// Catches mistakes before the first cluster starts.
    pub fn validate(&self) -> Result<()> {
        let fail = |text: String| Err(Error::Msg(text));
        if self.providers.is_empty() {
            return fail("--providers is empty".into());
        }
        // One node measures what the provider costs a commit by itself
        // (certification, ordering, commit order), without the network.
        if self.nodes == 0 {
            return fail("--nodes must be 1 or more".into());
        }
        // Those scenarios measure node 2 while node 1 writes.
        if self.nodes < 2 && matches!(self.scenario, Scenario::BigTrx | Scenario::Freshness | Scenario::Bound | Scenario::Drain) {
            return fail(format!("--scenario {} needs --nodes 2 or more: it measures node 2", self.scenario.name()));
        }
        if self.segments == 0 || self.segments > self.nodes {
            return fail(format!("--segments must be between 1 and the number of nodes ({})", self.nodes));
        }
        if self.nodes < 2 && self.wan_delay_ms.is_some() {
            return fail("--wan-delay-ms needs --nodes 2 or more: it delays the last node's links".into());
        }
        if self.tests.is_empty() || self.threads.is_empty() || self.targets.is_empty() {
            return fail("--tests, --threads and --targets need at least one value each".into());
        }
        if let Some(t) = self.threads.iter().find(|t| **t == 0) {
            return fail(format!("thread counts must be positive, not {t}"));
        }
        if let Some(Target::Node(n)) = self
            .targets
            .iter()
            .find(|t| matches!(t, Target::Node(n) if *n > self.nodes))
        {
            return fail(format!(
                "target node{n}, but the cluster has {} nodes",
                self.nodes
            ));
        }
        if let Some(bad) = self
            .tests
            .iter()
            .find(|t| t.is_empty() || t.contains([',', ' ']))
        {
            return fail(format!("bad test name {bad:?}"));
        }
        if self.repeat == 0 {
            return fail("--repeat must be 1 or more".into());
        }
        if matches!(self.scenario, Scenario::Wan | Scenario::SlowNode) && self.nodes < 2 {
            return fail("wan and slow-node need --nodes 2 or more: they delay the last node's links".into());
        }
        if self.time == 0 || self.tables == 0 || self.table_size == 0 {
            return fail("--time, --tables and --table-size must be positive".into());
        }
        let last = self.base_port as u32 + self.providers.len() as u32 * self.port_block() as u32;
        if self.base_port < 1024 || last > 65535 {
            return fail(format!(
                "ports {}..{last} do not fit in 1024..65535: pick another --base-port",
                self.base_port
            ));
        }
        (0..self.providers.len()).try_for_each(|i| self.cluster_spec(i).validate())
    }

    /// A rough wall time: start-up, prepare and every cell, per provider.
    pub fn estimate(&self) -> Duration {
        let per_cell = self.warmup as u64 + self.time as u64 + 4;
        // Measured here: 3 nodes up in 3-6 s (the joiners start from a
        // copy of node 1's datadir), the tables loaded, the cluster
        // stopped and its data removed in about 20 s in all.
        let setup = 4 * self.nodes as u64 + 10;
        let per_provider = setup + per_cell * self.cells().len() as u64;
        Duration::from_secs(per_provider * self.providers.len() as u64)
    }
}

/// The launcher's stride between nodes' port blocks.
pub fn ports_per_node() -> u16 {
    let spec = ClusterSpec::new(2, Provider::Galera, "/");
    spec.ports(2).client - spec.ports(1).client
}

fn slug(provider: &Provider) -> String {
    let label = match provider {
        Provider::Path(path) => Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "provider".into()),
        other => other.label(),
    };
    label
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_matrix_is_sixteen_cells_over_two_providers() {
        let spec = BenchSpec::default();
        let cells = spec.cells();
        assert_eq!(cells.len() * spec.providers.len(), 16);
        assert_eq!(cells[0].slug(), "oltp_update_index-8t-node1");
        assert_eq!(cells[1].slug(), "oltp_update_index-8t-all");
        assert_eq!(cells[7].slug(), "oltp_write_only-32t-all");
        assert!(spec.validate().is_ok());
        // 2 providers x (22 s setup + 8 x 39 s): about 11 minutes.
        assert_eq!(spec.estimate(), Duration::from_secs(2 * (22 + 8 * 39)));
    }

    #[test]
    fn providers_get_their_own_dirs_and_ports() {
        let spec = BenchSpec::default();
        assert_eq!(
            spec.provider_dir(0),
            PathBuf::from("/tmp/lockstep-bench/galera")
        );
        let galera = spec.cluster_spec(0);
        let lockstep = spec.cluster_spec(1);
        assert_eq!(
            galera.dir,
            PathBuf::from("/tmp/lockstep-bench/galera/cluster")
        );
        assert_eq!(galera.base_port, 28000);
        assert_eq!(lockstep.base_port, 28100);
        assert_eq!(lockstep.provider, Provider::Lockstep);
        assert_eq!(galera.extra.mysqld, ["innodb_flush_log_at_trx_commit=2"]);
        assert_eq!(galera.cluster_name, "bench-galera");
    }

    #[test]
    fn path_providers_get_file_safe_unique_names() {
        let spec = BenchSpec {
            providers: vec![
                Provider::Path("/a/libx.so".into()),
                Provider::Path("/b/libx.so".into()),
            ],
            ..BenchSpec::default()
        };
        assert_eq!(spec.provider_slug(0), "libx-1");
        assert_eq!(spec.provider_slug(1), "libx-2");
    }

    #[test]
    fn targets() {
        assert_eq!(Target::parse("node1"), Ok(Target::Node(1)));
        assert_eq!(Target::parse("3"), Ok(Target::Node(3)));
        assert_eq!(Target::parse("all"), Ok(Target::All));
        assert!(Target::parse("node0").is_err());
        assert!(Target::parse("every").is_err());
        assert_eq!(Target::All.nodes(3), [1, 2, 3]);
        assert_eq!(Target::Node(2).nodes(3), [2]);
    }

    #[test]
    fn segments_split_consecutive_nodes_and_set_the_wan_sides() {
        let mut spec = BenchSpec { nodes: 4, ..BenchSpec::default() };
        assert_eq!((0..=4).map(|n| spec.wan_side(n)).collect::<Vec<_>>(), [0, 0, 0, 0, 1], "the last node alone");
        spec.segments = 2;
        assert_eq!((0..=4).map(|n| spec.wan_side(n)).collect::<Vec<_>>(), [0, 0, 0, 1, 1]);
        assert_eq!(spec.cluster_spec(0).node_extra[&3].provider, ["gmcast.segment=1"]);
        assert!(!spec.cluster_spec(0).node_extra.contains_key(&2));
        spec.provider_options.push("gmcast.segment=0".into());
        assert!(spec.segment_option_given() && !spec.cluster_spec(0).node_extra.contains_key(&3), "the same delays without segments");
    }

    #[test]
    fn every_scenario_parses_from_its_name() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()), Ok(s));
        }
        // Every name the help text gives.
        for name in ["lan", "cells", "wan", "slow-node", "big-trx", "freshness", "drain", "durability"] {
            assert!(Scenario::parse(name).is_ok(), "{name}");
        }
        assert_eq!(Scenario::parse("cells"), Ok(Scenario::Cells));
    }

    #[test]
    fn validate_catches_mistakes() {
        let ok = BenchSpec::default();
        let bad = |f: &dyn Fn(&mut BenchSpec)| {
            let mut spec = ok.clone();
            f(&mut spec);
            spec.validate().unwrap_err().to_string()
        };
        assert!(bad(&|s| s.nodes = 0).contains("--nodes"));
        assert!(bad(&|s| {
            s.nodes = 1;
            s.wan_delay_ms = Some(7);
        })
        .contains("--wan-delay-ms"));
        assert!(bad(&|s| s.targets = vec![Target::Node(4)]).contains("node4"));
        assert!(bad(&|s| s.threads = vec![0]).contains("positive"));
        assert!(bad(&|s| s.tests = vec!["a,b".into()]).contains("bad test"));
        assert!(bad(&|s| s.base_port = 65500).contains("do not fit"));
        assert!(bad(&|s| s.providers.clear()).contains("empty"));
        assert!(bad(&|s| s.dir = "relative".into()).contains("absolute"));
    }
}
