//! The my.cnf of one node: pure text generation from the spec.

use super::spec::{ClusterSpec, ExtraOptions, Provider};
use std::fmt::Write;
use lockstep_config::{keys, TypedKey};
use std::path::Path;

/// Generated default for the provider; user options override by key.
/// gcache is small because three nodes share one small disk budget in
/// tests; raise it with `--provider-option gcache.size=...`.
const DEFAULT_GCACHE: &str = "32M";

/// A `wsrep_provider_options` entry `name=value`, the name taken from the
/// provider's option registry.
pub fn provider_setting(key: impl TypedKey, value: impl std::fmt::Display) -> String {
    format!("{}={value}", key.opt().name())
}

/// `gcomm://` with the gcomm address of every other node: where a node
/// looks for the cluster when it joins. A one-node cluster has nobody else,
/// so its address is the bootstrap address `gcomm://`.
pub fn join_address(spec: &ClusterSpec, node: usize) -> String {
    let peers: Vec<String> = (1..=spec.nodes)
        .filter(|n| *n != node)
        .map(|n| format!("127.0.0.1:{}", spec.ports(n).gcomm))
        .collect();
    format!("gcomm://{}", peers.join(","))
}

/// The address that makes a node start a new primary component.
pub const BOOTSTRAP_ADDRESS: &str = "gcomm://";

/// The full my.cnf. `user` is `Some("root")` when running as root, where
/// mariadbd refuses to start without `user=root`.
pub fn my_cnf(spec: &ClusterSpec, node: usize, provider: &Path, user: Option<&str>) -> String {
    let mut lines = base_options(spec, node, provider, user);
    let node_extra = spec.node_extra.get(&node).cloned().unwrap_or_default();
    for extra in [&spec.extra, &node_extra] {
        for option in &extra.mysqld {
            set_option(&mut lines, option);
        }
    }
    let provider_options = provider_options(spec, node, &node_extra);
    set_option(
        &mut lines,
        &format!("wsrep_provider_options='{provider_options}'"),
    );
    render(spec, node, &lines)
}

fn base_options(
    spec: &ClusterSpec,
    node: usize,
    provider: &Path,
    user: Option<&str>,
) -> Vec<String> {
    let ports = spec.ports(node);
    let paths = spec.paths(node);
    let mut lines = vec![
        format!("datadir={}", paths.datadir.display()),
        format!("tmpdir={}", paths.tmpdir.display()),
        format!("socket={}", paths.socket.display()),
        format!("port={}", ports.client),
        format!("pid-file={}", paths.pid_file.display()),
        format!("log-error={}", paths.error_log.display()),
    ];
    lines.extend(user.map(|u| format!("user={u}")));
    lines.extend(
        [
            "bind-address=127.0.0.1",
            // Loopback only: never wait on DNS for a client's host name.
            "skip-name-resolve",
            // Galera's requirements, as in the contract's trace setup.
            "binlog_format=ROW",
            "log_bin=binlog",
            "log_slave_updates=ON",
            "default_storage_engine=InnoDB",
            "innodb_autoinc_lock_mode=2",
            // Three or more servers share 2 cores: keep each one small.
            "innodb_buffer_pool_size=64M",
            "innodb_log_file_size=32M",
            "wsrep_on=ON",
        ]
        .map(String::from),
    );
    lines.extend([
        format!("wsrep_provider={}", provider.display()),
        format!("wsrep_cluster_name={}", spec.cluster_name),
        format!("wsrep_cluster_address={}", join_address(spec, node)),
        format!("wsrep_node_name=node{node}"),
        format!("wsrep_node_address=127.0.0.1:{}", ports.gcomm),
        format!("wsrep_node_incoming_address=127.0.0.1:{}", ports.client),
        // rsync SST fails on this kind of machine; mariabackup works.
        "wsrep_sst_method=mariabackup".into(),
        "wsrep_sst_auth=root:".into(),
        format!("wsrep_sst_receive_address=127.0.0.1:{}", ports.sst),
        format!("wsrep_slave_threads={}", spec.slave_threads),
    ]);
    lines
}

/// `base_port=..;ist.recv_addr=..;gcache.size=..` then the user's options,
/// each replacing a generated one with the same key.
pub fn provider_options(spec: &ClusterSpec, node: usize, node_extra: &ExtraOptions) -> String {
    let ports = spec.ports(node);
    let mut options = vec![
        provider_setting(keys::BASE_PORT, ports.gcomm),
        provider_setting(keys::IST_RECV_ADDR, format!("127.0.0.1:{}", ports.ist)),
        provider_setting(keys::GCACHE_SIZE, DEFAULT_GCACHE),
    ];
    if spec.provider == Provider::Lockstep {
        // Galera refuses options it does not know; a library given by path
        // may be an older lockstep that does not know this one either.
        options.push(provider_setting(keys::LOCKSTEP_METRICS_ADDR, format!("127.0.0.1:{}", ports.metrics)));
    }
    for option in spec.extra.provider.iter().chain(&node_extra.provider) {
        set_option(&mut options, option);
    }
    options.join(";")
}

/// Replaces the entry with the same key, or appends.
fn set_option(lines: &mut Vec<String>, option: &str) {
    let key = option_key(option);
    match lines.iter_mut().find(|line| option_key(line) == key) {
        Some(line) => *line = option.trim().to_string(),
        None => lines.push(option.trim().to_string()),
    }
}

/// mariadbd treats `-` and `_` in option names alike.
fn option_key(option: &str) -> String {
    let name = option.split('=').next().unwrap_or("");
    name.trim().replace('-', "_").to_ascii_lowercase()
}

fn render(spec: &ClusterSpec, node: usize, lines: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# node{node} of the lockstep cluster in {}",
        spec.dir.display()
    );
    let _ = writeln!(
        out,
        "# Generated by `lockstep cluster up`: edits are lost at the next up."
    );
    out.push_str("[mysqld]\n");
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    // The mariabackup SST script archives its logs in /tmp/sst_log_archive
    // by default, shared by every server on the machine: keep them per node.
    out.push_str("\n[sst]\n");
    let _ = writeln!(
        out,
        "sst-log-archive-dir={}",
        spec.paths(node).dir.join("sst_log_archive").display()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::spec::Provider;

    fn spec() -> ClusterSpec {
        ClusterSpec::new(3, Provider::Galera, "/tmp/c").base_port(24000)
    }

    fn value<'a>(cnf: &'a str, key: &str) -> Vec<&'a str> {
        cnf.lines()
            .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .collect()
    }

    #[test]
    fn node_two_of_three() {
        let cnf = my_cnf(&spec(), 2, Path::new("/p.so"), Some("root"));
        assert_eq!(value(&cnf, "port"), ["24010"]);
        assert_eq!(value(&cnf, "socket"), ["/tmp/c/node2/mysqld.sock"]);
        assert_eq!(value(&cnf, "datadir"), ["/tmp/c/node2/data"]);
        assert_eq!(value(&cnf, "user"), ["root"]);
        assert_eq!(value(&cnf, "wsrep_provider"), ["/p.so"]);
        assert_eq!(
            value(&cnf, "wsrep_cluster_address"),
            ["gcomm://127.0.0.1:24001,127.0.0.1:24021"]
        );
        assert_eq!(value(&cnf, "wsrep_node_name"), ["node2"]);
        assert_eq!(value(&cnf, "wsrep_node_address"), ["127.0.0.1:24011"]);
        assert_eq!(
            value(&cnf, "wsrep_node_incoming_address"),
            ["127.0.0.1:24010"]
        );
        assert_eq!(
            value(&cnf, "wsrep_sst_receive_address"),
            ["127.0.0.1:24013"]
        );
        assert_eq!(value(&cnf, "wsrep_sst_method"), ["mariabackup"]);
        assert_eq!(value(&cnf, "wsrep_sst_auth"), ["root:"]);
        assert_eq!(value(&cnf, "wsrep_slave_threads"), ["2"]);
        assert_eq!(
            value(&cnf, "wsrep_provider_options"),
            ["'base_port=24011;ist.recv_addr=127.0.0.1:24012;gcache.size=32M'"]
        );
        assert!(cnf.starts_with("# node2"));
        assert!(cnf.contains("\n[sst]\nsst-log-archive-dir=/tmp/c/node2/sst_log_archive\n"));
    }

    #[test]
    fn single_node_bootstraps_and_no_user_when_not_root() {
        let spec = ClusterSpec::new(1, Provider::Galera, "/tmp/c");
        let cnf = my_cnf(&spec, 1, Path::new("/p.so"), None);
        assert_eq!(value(&cnf, "wsrep_cluster_address"), ["gcomm://"]);
        assert!(value(&cnf, "user").is_empty());
    }

    #[test]
    fn extra_options_override_by_key() {
        let spec = spec()
            .mysqld_option("wsrep-slave-threads=8")
            .mysqld_option("wsrep_sync_wait=1")
            .mysqld_option("skip-log-bin")
            .provider_option("gcache.size=128M")
            .provider_option("evs.suspect_timeout=PT2S")
            .node_mysqld_option(3, "wsrep_slave_threads=4")
            .node_provider_option(3, "gmcast.segment=1");
        let cnf1 = my_cnf(&spec, 1, Path::new("/p.so"), None);
        assert_eq!(value(&cnf1, "wsrep-slave-threads"), ["8"]);
        assert!(value(&cnf1, "wsrep_slave_threads").is_empty());
        assert_eq!(value(&cnf1, "wsrep_sync_wait"), ["1"]);
        assert!(cnf1.contains("\nskip-log-bin\n"));
        assert_eq!(
            value(&cnf1, "wsrep_provider_options"),
            ["'base_port=24001;ist.recv_addr=127.0.0.1:24002;gcache.size=128M;evs.suspect_timeout=PT2S'"]
        );
        let cnf3 = my_cnf(&spec, 3, Path::new("/p.so"), None);
        assert_eq!(value(&cnf3, "wsrep_slave_threads"), ["4"]);
        assert!(value(&cnf3, "wsrep_provider_options")[0].ends_with(";gmcast.segment=1'"));
    }
}
