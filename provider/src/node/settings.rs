//! The option values the node acts on, read from the option registry when
//! the provider starts and after every successful `options_set`; the node
//! never parses option strings itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `repl.max_ws_size`: the largest writeset the node replicates.
    pub max_ws_size: usize,
    /// `repl.causal_read_timeout`: `sync_wait` with `tout = -1`.
    pub causal_read_timeout: Duration,
    /// `repl.commit_order`: 0 bypass, 1 any order, 2 local out of order,
    /// 3 strict (default).
    pub commit_order: u8,
    /// `cert.optimistic_pa`.
    pub optimistic_pa: bool,
    /// `cert.max_length`.
    pub cert_max_length: usize,
    /// `gcs.fc_limit` and `gcs.fc_factor`.
    pub fc_limit: i64,
    pub fc_factor: f64,
    /// `gcs.vote_policy` (see `group::vote`).
    pub vote_policy: u8,
    /// `gcs.fc_single_primary` (or the deprecated `gcs.fc_master_slave`).
    pub fc_single_primary: bool,
    /// `lockstep.max_lag_ms`: the staleness flow control holds each
    /// member to (0: off).
    pub max_lag_ms: u64,
    /// `lockstep.debug_hang_appliers`: a stuck disk, for tests.
    pub hang_appliers: bool,
    /// `lockstep.log_sync=batch`: the gcache is synced before a local
    /// commit is acknowledged (see `log_sync`).
    pub log_sync: bool,
    /// `evs.suspect_timeout` and `evs.inactive_timeout`: when the group
    /// removes a silent member.
    pub timeouts: crate::group::liveness::Timeouts,
    /// `evs.send_window`: messages in flight per follower (see
    /// `group::send_window`).
    pub send_window: usize,
    /// `evs.stats_report_period`: the span `wsrep_evs_repl_latency`
    /// covers before it starts over.
    pub stats_report_period: Duration,
    /// `pc.ignore_sb`, `pc.ignore_quorum`, `pc.weight`.
    pub quorum_policy: crate::group::quorum::Policy,
    /// `debug`.
    pub debug: bool,
    /// `gcache.size`: how many bytes of recent writesets a member keeps to
    /// serve IST.
    pub gcache_size: usize,
    /// `gcache.dir` (empty: the data directory) and `gcache.name`: the
    /// ring buffer file.
    pub gcache_dir: String,
    pub gcache_name: String,
    /// `gcache.recover`: a restarted node keeps what its gcache held.
    pub gcache_recover: bool,
    /// `gcache.page_size` and `gcache.keep_pages_size`: overflow pages
    /// for records larger than the ring (`gcache::page`).
    pub gcache_page_size: u64,
    pub gcache_keep_pages_size: u64,
    /// Where the group transport listens (`gmcast.listen_addr`, without
    /// its scheme).
    pub group_listen: String,
    /// `gmcast.segment`: entries cross to another segment once (see
    /// `group::relay`).
    pub segment: u8,
    /// `lockstep.segment_compression` (see `transport::deflate`).
    pub compress_segments: bool,
    /// `gcs.stateless`: this member is never chosen as a donor.
    pub stateless: bool,
    /// TLS between nodes: on with `socket.ssl=yes`, or, as Galera does,
    /// once a key and a certificate are given.
    pub tls: Option<crate::transport::tls::TlsSettings>,
    /// What peers connect to (`base_host:base_port`); empty: the address
    /// the transport binds.
    pub group_address: String,
    /// Where donors reach this node's IST receiver (`tcp://host:port`,
    /// from `ist.recv_addr` or the node address, port `base_port + 1`);
    /// None: derived from the group address.
    pub ist_recv_addr: Option<String>,
    /// `ist.recv_bind`: where the receiver binds when that differs (NAT).
    pub ist_recv_bind: Option<String>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_ws_size: 2147483647,
            causal_read_timeout: Duration::from_secs(30),
            commit_order: 3,
            optimistic_pa: true,
            cert_max_length: crate::cert::DEFAULT_MAX_LENGTH,
            fc_limit: 16,
            fc_factor: 1.0,
            vote_policy: 0,
            fc_single_primary: false,
            max_lag_ms: 0,
            log_sync: false,
            hang_appliers: false,
            timeouts: Default::default(),
            send_window: 4,
            stats_report_period: Duration::from_secs(60),
            debug: false,
            quorum_policy: Default::default(),
            gcache_size: 128 << 20,
            gcache_dir: String::new(),
            gcache_name: "galera.cache".into(),
            gcache_recover: true,
            gcache_page_size: 128 << 20,
            gcache_keep_pages_size: 0,
            group_listen: "127.0.0.1:0".into(),
            segment: 0,
            compress_segments: true,
            stateless: false,
            tls: None,
            group_address: String::new(),
            ist_recv_addr: None,
            ist_recv_bind: None,
        }
    }
}

impl Settings {
    /// What the node acts on, read from the option registry.
    pub fn from_config(cfg: &lockstep_config::Config) -> Settings {
        use lockstep_config::keys;
        Settings {
            max_ws_size: cfg.get(keys::REPL_MAX_WS_SIZE).max(0) as usize,
            causal_read_timeout: cfg.duration(keys::REPL_CAUSAL_READ_TIMEOUT),
            commit_order: cfg.get(keys::REPL_COMMIT_ORDER).clamp(0, 3) as u8,
            optimistic_pa: cfg.get(keys::CERT_OPTIMISTIC_PA),
            cert_max_length: cfg.get(keys::CERT_MAX_LENGTH).max(1) as usize,
            fc_limit: cfg.get(keys::GCS_FC_LIMIT),
            fc_factor: cfg.get(keys::GCS_FC_FACTOR),
            vote_policy: cfg.get(keys::GCS_VOTE_POLICY).clamp(0, 255) as u8,
            fc_single_primary: cfg.get(keys::GCS_FC_SINGLE_PRIMARY) || cfg.get(keys::GCS_FC_MASTER_SLAVE),
            max_lag_ms: cfg.get(keys::LOCKSTEP_MAX_LAG_MS).max(0) as u64,
            hang_appliers: cfg.get(keys::LOCKSTEP_DEBUG_HANG_APPLIERS),
            log_sync: cfg.str(keys::LOCKSTEP_LOG_SYNC) == Some("batch"),
            timeouts: crate::group::liveness::Timeouts {
                suspect: cfg.duration(keys::EVS_SUSPECT_TIMEOUT),
                inactive: cfg.duration(keys::EVS_INACTIVE_TIMEOUT),
            },
            send_window: cfg.get(keys::EVS_SEND_WINDOW).max(1) as usize,
            stats_report_period: cfg.duration(keys::EVS_STATS_REPORT_PERIOD),
            debug: cfg.get(keys::DEBUG),
            quorum_policy: crate::group::quorum::Policy {
                ignore_sb: cfg.get(keys::PC_IGNORE_SB),
                ignore_quorum: cfg.get(keys::PC_IGNORE_QUORUM),
                weight: cfg.get(keys::PC_WEIGHT).clamp(0, 255) as u32,
            },
            gcache_size: cfg.get(keys::GCACHE_SIZE).max(0) as usize,
            gcache_dir: cfg.str(keys::GCACHE_DIR).unwrap_or_default().to_string(),
            gcache_name: cfg.str(keys::GCACHE_NAME).unwrap_or_default().to_string(),
            gcache_recover: cfg.get(keys::GCACHE_RECOVER),
            gcache_page_size: cfg.get(keys::GCACHE_PAGE_SIZE).max(0) as u64,
            gcache_keep_pages_size: cfg.get(keys::GCACHE_KEEP_PAGES_SIZE).max(0) as u64,
            group_listen: cfg.str(keys::GMCAST_LISTEN_ADDR).map(strip_scheme).unwrap_or_default(),
            segment: cfg.get(keys::GMCAST_SEGMENT).clamp(0, 255) as u8,
            compress_segments: cfg.get(keys::LOCKSTEP_SEGMENT_COMPRESSION),
            stateless: cfg.get(keys::GCS_STATELESS),
            tls: tls(cfg),
            group_address: advertised(cfg),
            ist_recv_addr: cfg.ist_recv_addr(),
            ist_recv_bind: cfg.ist_recv_bind(),
        }
    }
}

impl Settings {
    /// The gcache file: `gcache.name` in `gcache.dir` (the data directory
    /// when unset), or `gcache.name` itself when it is an absolute path.
    pub fn gcache_path(&self, data_dir: &Path) -> PathBuf {
        let name = if self.gcache_name.is_empty() { "galera.cache" } else { &self.gcache_name };
        let dir = if self.gcache_dir.is_empty() { data_dir } else { Path::new(&self.gcache_dir) };
        dir.join(name)
    }
}

fn tls(cfg: &lockstep_config::Config) -> Option<crate::transport::tls::TlsSettings> {
    use lockstep_config::keys;
    let text = |k| cfg.str(k).unwrap_or_default().to_string();
    let (key, cert) = (text(keys::SOCKET_SSL_KEY), text(keys::SOCKET_SSL_CERT));
    let on = cfg.get(keys::SOCKET_SSL) || (!key.is_empty() && !cert.is_empty());
    on.then(|| crate::transport::tls::TlsSettings {
        cert,
        key,
        ca: text(keys::SOCKET_SSL_CA),
        cipher: text(keys::SOCKET_SSL_CIPHER),
        dynamic: cfg.get(keys::SOCKET_DYNAMIC),
        password_file: text(keys::SOCKET_SSL_PASSWORD_FILE),
    })
}

fn strip_scheme(addr: &str) -> String {
    addr.split_once("://").map_or(addr, |(_, rest)| rest).to_string()
}

/// `base_host:base_port`, or empty when the node gave no address (the
/// transport then advertises what it binds).
fn advertised(cfg: &lockstep_config::Config) -> String {
    use lockstep_config::keys;
    match cfg.str(keys::BASE_HOST) {
        // An IPv6 host (`wsrep_node_address=::1`) needs its brackets for
        // peers to parse `host:port`.
        Some(host) if host.contains(':') && !host.starts_with('[') => format!("[{}]:{}", host, cfg.get(keys::BASE_PORT)),
        Some(host) if !host.is_empty() => format!("{}:{}", host, cfg.get(keys::BASE_PORT)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advertised_for(node_address: &str) -> String {
        let cfg = lockstep_config::Config::init(&lockstep_config::NodeInfo { node_address, data_dir: "/tmp/" }, "base_port=4567").unwrap();
        Settings::from_config(&cfg).group_address
    }

    #[test]
    fn peers_get_an_address_they_can_parse() {
        assert_eq!(advertised_for("127.0.0.1"), "127.0.0.1:4567");
        assert_eq!(advertised_for("::1"), "[::1]:4567");
        assert_eq!(advertised_for(""), "");
    }

    #[test]
    fn the_gcache_file_is_in_the_data_directory_unless_told_otherwise() {
        let settings = |options: &str| {
            let cfg = lockstep_config::Config::init(&lockstep_config::NodeInfo { node_address: "", data_dir: "/var/lib/mysql/" }, options).unwrap();
            Settings::from_config(&cfg)
        };
        let data = Path::new("/var/lib/mysql/");
        assert_eq!(settings("").gcache_path(data), Path::new("/var/lib/mysql/galera.cache"));
        assert_eq!(settings("gcache.dir=/cache;gcache.name=x.cache").gcache_path(data), Path::new("/cache/x.cache"));
        assert_eq!(settings("gcache.name=/elsewhere/g.cache").gcache_path(data), Path::new("/elsewhere/g.cache"));
        assert!(settings("").gcache_recover && !settings("gcache.recover=no").gcache_recover);
    }
}
