//! A Galera node to migrate from, named by its option file: mariabackup
//! reads the same file to find the data, and the file says where the
//! server listens (its socket for our own statements, its TCP address for
//! the replication connection).

use crate::cluster::{Conn, Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The groups mariadbd reads its options from.
const SERVER_GROUPS: [&str; 5] = ["mysqld", "mariadbd", "server", "galera", "mariadb"];

/// How deep `!include`s nest before we call it a loop.
const MAX_INCLUDE_DEPTH: usize = 8;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub cnf: PathBuf,
    pub socket: PathBuf,
    /// Where a replica connects.
    pub host: String,
    pub port: u16,
}

impl Source {
    /// Reads the server's options from `cnf` (following `!include` and
    /// `!includedir`, as the server does).
    pub fn from_cnf(cnf: &Path) -> Result<Source> {
        let mut options = BTreeMap::new();
        read_options(cnf, 0, &mut options)?;
        let port = match options.get("port") {
            Some(p) => p.parse().map_err(|_| Error::msg(format!("{}: port={p} is not a port number", cnf.display())))?,
            None => 3306,
        };
        let host = match options.get("bind_address").map(String::as_str) {
            None | Some("0.0.0.0" | "*" | "::") => "127.0.0.1".to_string(),
            Some(address) => address.to_string(),
        };
        let socket = options.get("socket").map_or_else(|| PathBuf::from("/run/mysqld/mysqld.sock"), PathBuf::from);
        Ok(Source { cnf: cnf.to_path_buf(), socket, host, port })
    }

    /// As root over the server's socket: the account the operator
    /// administers the node with (unix_socket authentication on Debian).
    pub fn connect(&self) -> Result<Conn> {
        Conn::connect(&self.socket).map_err(|e| Error::msg(format!("source {}: {e}", self.name())))
    }

    pub fn name(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The server groups' `key=value` lines of `path` into `options`, names
/// with `-` and `_` alike, later lines winning.
fn read_options(path: &Path, depth: usize, options: &mut BTreeMap<String, String>) -> Result<()> {
    if depth > MAX_INCLUDE_DEPTH {
        return Err(Error::msg(format!("{}: includes nest deeper than {MAX_INCLUDE_DEPTH}", path.display())));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let mut in_server_group = false;
    for line in text.lines().map(str::trim) {
        if let Some(file) = line.strip_prefix("!include ") {
            read_options(Path::new(file.trim()), depth + 1, options)?;
        } else if let Some(dir) = line.strip_prefix("!includedir ") {
            for file in cnf_files(Path::new(dir.trim()))? {
                read_options(&file, depth + 1, options)?;
            }
        } else if let Some(group) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_server_group = SERVER_GROUPS.contains(&group.trim());
        } else if in_server_group && !line.is_empty() && !line.starts_with(['#', ';']) {
            let (key, value) = line.split_once('=').unwrap_or((line, ""));
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            options.insert(key.trim().replace('-', "_"), value.to_string());
        }
    }
    Ok(())
}

/// The `.cnf` files of an `!includedir`, in name order as the server reads them.
fn cnf_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(format!("reading {}", dir.display()), e))?;
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "cnf")).collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_groups_and_includes_say_where_the_source_listens() {
        let dir = std::env::temp_dir().join(format!("lockstep-migrate-source-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("conf.d")).unwrap();
        std::fs::write(dir.join("conf.d/50-server.cnf"), "[mysqld]\nport = 3307\nbind-address=0.0.0.0\n[client]\nport=1\n").unwrap();
        std::fs::write(dir.join("conf.d/60-galera.cnf"), "[galera]\nsocket=\"/run/g.sock\"\n").unwrap();
        std::fs::write(dir.join("my.cnf"), format!("[client-server]\nport=2\n!includedir {}\n", dir.join("conf.d").display())).unwrap();
        let source = Source::from_cnf(&dir.join("my.cnf")).unwrap();
        assert_eq!((source.host.as_str(), source.port, source.socket.as_path()), ("127.0.0.1", 3307, Path::new("/run/g.sock")));
        std::fs::write(dir.join("bad.cnf"), "[mysqld]\nport=x\n").unwrap();
        assert!(Source::from_cnf(&dir.join("bad.cnf")).is_err());
        std::fs::write(dir.join("loop.cnf"), format!("!include {}\n", dir.join("loop.cnf").display())).unwrap();
        assert!(Source::from_cnf(&dir.join("loop.cnf")).unwrap_err().to_string().contains("nest"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
