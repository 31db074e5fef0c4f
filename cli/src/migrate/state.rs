//! DIR/migration.state: what `start` set up, for `follow` and `switch`
//! (separate processes). `key=value` lines like the cluster's state file;
//! it holds the replication password, so only its owner may read it.

use super::preflight::{Identity, Replication};
use super::source::Source;
use super::Migration;
use crate::cluster::{Error, Result};
use std::collections::BTreeMap;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

const FILE: &str = "migration.state";
const VERSION: &str = "1";

pub fn write(m: &Migration) -> Result<()> {
    let domains: Vec<String> = m.domains.iter().map(u32::to_string).collect();
    let mut lines = vec![
        "# lockstep migration state: written by `lockstep migrate start` and `follow`".to_string(),
        format!("version={VERSION}"),
        format!("following={}", m.following),
        format!("replica={}", m.replica),
        format!("user={}", m.replication.user),
        format!("password={}", m.replication.password),
        format!("domains={}", domains.join(",")),
        format!("server_id={}", m.identity.server_id),
        format!("domain_id={}", m.identity.domain_id),
        format!("copied={}", m.copied),
    ];
    lines.extend(m.sources.iter().map(|s| format!("source={}", s.cnf.display())));
    let path = m.dir.join(FILE);
    let temp = path.with_extension("new");
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temp).map_err(|e| Error::io(format!("writing {}", temp.display()), e))?;
    std::io::Write::write_all(&mut file, (lines.join("\n") + "\n").as_bytes()).map_err(|e| Error::io(format!("writing {}", temp.display()), e))?;
    // Renamed into place: a crash mid-write leaves the old state whole.
    std::fs::rename(&temp, &path).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

pub fn read(dir: &Path) -> Result<Migration> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(format!("reading {} (no migration started in {}?)", path.display(), dir.display()), e))?;
    let mut values = BTreeMap::new();
    let mut sources = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (key, value) = line.split_once('=').ok_or_else(|| Error::msg(format!("{}: {line:?} is not key=value", path.display())))?;
        match key {
            "source" => sources.push(Source::from_cnf(&PathBuf::from(value))?),
            _ => drop(values.insert(key.to_string(), value.to_string())),
        }
    }
    let get = |key: &str| values.get(key).cloned().ok_or_else(|| Error::msg(format!("{}: no {key}", path.display())));
    let number = |key: &str| get(key)?.parse::<u64>().map_err(|_| Error::msg(format!("{}: {key} is not a number", path.display())));
    if get("version")? != VERSION {
        return Err(Error::msg(format!("{}: version {} (this lockstep writes {VERSION})", path.display(), get("version")?)));
    }
    let domains = get("domains")?.split(',').filter(|d| !d.is_empty()).map(|d| d.parse().map_err(|_| Error::msg(format!("{}: domain {d:?}", path.display())))).collect::<Result<_>>()?;
    let m = Migration {
        dir: dir.to_path_buf(),
        following: number("following")? as usize,
        replica: number("replica")? as usize,
        replication: Replication { user: get("user")?, password: get("password")? },
        domains,
        identity: Identity { server_id: number("server_id")? as u32, domain_id: number("domain_id")? as u32 },
        copied: super::gtid::Position::parse(&get("copied")?).map_err(|e| Error::msg(format!("{}: copied: {e}", path.display())))?,
        sources,
    };
    match m.following < m.sources.len() && m.replica >= 1 {
        true => Ok(m),
        false => Err(Error::msg(format!("{}: following {} of {} sources, replica node{}", path.display(), m.following, m.sources.len(), m.replica))),
    }
}
