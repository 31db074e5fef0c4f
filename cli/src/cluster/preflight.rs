//! Checks made before anything starts, so that a missing tool or a busy
//! port is one clear sentence instead of a server that dies half-way.

use super::spec::ClusterSpec;
use super::{Error, Result};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Debian installs the server in /usr/sbin, which is not on every PATH.
const EXTRA_DIRS: &[&str] = &["/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"];

/// The programs a cluster needs.
#[derive(Clone, Debug)]
pub struct Tools {
    pub mariadbd: PathBuf,
    pub install_db: PathBuf,
}

/// Finds `name` on PATH or in the server directories.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(EXTRA_DIRS.iter().map(PathBuf::from));
    dirs.map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn require(name: &str, package: &str, why: &str) -> Result<PathBuf> {
    find_program(name).ok_or_else(|| {
        Error::msg(format!(
            "{name} not found on PATH or in /usr/sbin: {why}; install the {package} package"
        ))
    })
}

/// Every program the cluster will run. Joiners (and restarts of a node
/// while others run) use mariabackup SST, which streams through socat and
/// runs the wsrep_sst_mariabackup script; a one-node cluster never does.
pub fn tools(spec: &ClusterSpec) -> Result<Tools> {
    let mariadbd = require("mariadbd", "mariadb-server", "it is the server")?;
    let install_db = require(
        "mariadb-install-db",
        "mariadb-server",
        "it initialises datadirs",
    )?;
    if spec.nodes > 1 {
        require(
            "mariabackup",
            "mariadb-backup",
            "SST (wsrep_sst_method=mariabackup) needs it",
        )?;
        require(
            "mbstream",
            "mariadb-backup",
            "SST (wsrep_sst_method=mariabackup) needs it",
        )?;
        require(
            "wsrep_sst_mariabackup",
            "mariadb-server",
            "it is the SST script",
        )?;
        require("socat", "socat", "mariabackup SST streams through it")?;
    }
    Ok(Tools {
        mariadbd,
        install_db,
    })
}

/// A port is busy when we cannot listen on it on loopback (a server bound
/// to 0.0.0.0 on that port makes this fail too).
pub fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// What `ss` shows of the sockets on `port`, with their processes: which
/// process holds it, or that a connection of ours took it as its local
/// port, is what the next person needs (a busy port ended a CI run once).
fn holders(port: u16) -> String {
    let filter = format!("sport = :{port}");
    match std::process::Command::new("ss").args(["-tanp", &filter]).output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
        Err(e) => format!("(ss: {e})"),
    }
}

/// How long a port may stay busy before it counts as taken: a node killed
/// a moment ago frees its ports only once the kernel has closed every
/// socket of it (and of children that inherited one), which takes a
/// second or two under load (`cluster kill 2` then `cluster start 2`).
const PORT_GRACE: Duration = Duration::from_secs(5);

/// Checks the ports of `node`.
pub fn check_ports(spec: &ClusterSpec, node: usize) -> Result<()> {
    let deadline = Instant::now() + PORT_GRACE;
    for (role, port) in spec.ports(node).all() {
        while !port_is_free(port) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if !port_is_free(port) {
            return Err(Error::msg(format!(
                "port {port} (node{node} {role}) is busy: another server uses it; \
                 pick another --base-port. Its sockets now (`ss -tanp 'sport = :{port}'`):\n{}",
                holders(port)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::spec::Provider;

    #[test]
    fn finds_sh_not_nonsense() {
        assert!(find_program("sh").is_some());
        assert!(find_program("no-such-program-lockstep").is_none());
    }

    #[test]
    fn busy_port_is_reported_with_its_role() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(!port_is_free(port));
        // Make node1's gcomm port (base+1) the busy one.
        let spec = ClusterSpec::new(1, Provider::Galera, "/tmp/x").base_port(port - 1);
        let err = check_ports(&spec, 1).unwrap_err().to_string();
        assert!(
            err.contains(&format!("port {port} (node1 gcomm) is busy")),
            "{err}"
        );
    }
}
