//! DIR/cluster.state: how `status`, `sql` and `down` (separate processes)
//! find the cluster `up` made. Plain `key=value` lines, one option per line,
//! so no serialisation crate is needed and a human can read it.
//! Pids are not here but in DIR/nodeN/lockstep.pid: nodes are started and
//! stopped concurrently (tests do), and one file per node needs no lock.

use super::spec::{ClusterSpec, ExtraOptions, Provider};
use super::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const STATE_FILE: &str = "cluster.state";
const VERSION: &str = "1";

/// The spec plus the provider path it resolved to at `up`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub spec: ClusterSpec,
    pub provider_path: PathBuf,
}

pub fn render(state: &State) -> String {
    let spec = &state.spec;
    let mut lines = vec![
        "# lockstep cluster state: written by `lockstep cluster up`, read by status/sql/down"
            .to_string(),
        format!("version={VERSION}"),
        format!("nodes={}", spec.nodes),
        format!("provider={}", spec.provider.label()),
        format!("provider_path={}", state.provider_path.display()),
        format!("base_port={}", spec.base_port),
        format!("cluster_name={}", spec.cluster_name),
        format!("slave_threads={}", spec.slave_threads),
        format!("start_timeout_ms={}", spec.start_timeout.as_millis()),
        format!("stop_timeout_ms={}", spec.stop_timeout.as_millis()),
    ];
    push_extra(&mut lines, "", &spec.extra);
    for (node, extra) in &spec.node_extra {
        push_extra(&mut lines, &format!("node{node}."), extra);
    }
    lines.extend((1..=spec.nodes).map(|node| describe_node(spec, node)));
    lines.join("\n") + "\n"
}

/// A comment for people: everything above determines ports and paths.
fn describe_node(spec: &ClusterSpec, node: usize) -> String {
    let (p, paths) = (spec.ports(node), spec.paths(node));
    format!(
        "# node{node}: client {} gcomm {} IST {} SST {}; socket {}; pid in {}",
        p.client,
        p.gcomm,
        p.ist,
        p.sst,
        paths.socket.display(),
        paths.our_pid_file.display()
    )
}

fn push_extra(lines: &mut Vec<String>, prefix: &str, extra: &ExtraOptions) {
    lines.extend(
        extra
            .mysqld
            .iter()
            .map(|o| format!("{prefix}mysqld_option={o}")),
    );
    lines.extend(
        extra
            .provider
            .iter()
            .map(|o| format!("{prefix}provider_option={o}")),
    );
}

/// Parses what `render` wrote; `dir` is where the file was found (the
/// directory may have been moved since).
pub fn parse(text: &str, dir: &Path) -> Result<State> {
    let mut spec = ClusterSpec {
        dir: dir.to_path_buf(),
        ..ClusterSpec::default()
    };
    let mut provider_path = None;
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (key, value) = line.split_once('=').ok_or_else(|| bad(line))?;
        if key == "provider_path" {
            provider_path = Some(PathBuf::from(value));
        } else {
            apply(&mut spec, key, value).ok_or_else(|| bad(line))?;
        }
    }
    let provider_path = provider_path.ok_or_else(|| bad("provider_path missing"))?;
    Ok(State {
        spec,
        provider_path,
    })
}

fn apply(spec: &mut ClusterSpec, key: &str, value: &str) -> Option<()> {
    match key {
        "version" => (value == VERSION).then_some(())?,
        "nodes" => spec.nodes = value.parse().ok()?,
        "provider" => spec.provider = Provider::parse(value),
        "base_port" => spec.base_port = value.parse().ok()?,
        "cluster_name" => spec.cluster_name = value.to_string(),
        "slave_threads" => spec.slave_threads = value.parse().ok()?,
        "start_timeout_ms" => spec.start_timeout = Duration::from_millis(value.parse().ok()?),
        "stop_timeout_ms" => spec.stop_timeout = Duration::from_millis(value.parse().ok()?),
        _ => apply_extra(spec, key, value)?,
    }
    Some(())
}

/// `mysqld_option`, `provider_option`, and their `nodeN.` forms.
fn apply_extra(spec: &mut ClusterSpec, key: &str, value: &str) -> Option<()> {
    let (extra, kind) = match key.split_once('.') {
        Some((node, kind)) => {
            let node: usize = node.strip_prefix("node")?.parse().ok()?;
            (spec.node_extra.entry(node).or_default(), kind)
        }
        None => (&mut spec.extra, key),
    };
    match kind {
        "mysqld_option" => extra.mysqld.push(value.to_string()),
        "provider_option" => extra.provider.push(value.to_string()),
        _ => return None,
    }
    Some(())
}

fn bad(line: &str) -> Error {
    Error::msg(format!(
        "unreadable cluster state line {line:?} (written by another lockstep version?)"
    ))
}

pub fn write(state: &State) -> Result<()> {
    let path = state.spec.state_file();
    std::fs::write(&path, render(state))
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

pub fn read(dir: &Path) -> Result<State> {
    let path = dir.join(STATE_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::msg(format!(
                "no cluster in {} ({} not found): start one with `lockstep cluster up --dir {}`",
                dir.display(),
                STATE_FILE,
                dir.display()
            ))
        } else {
            Error::io(format!("reading {}", path.display()), e)
        }
    })?;
    parse(&text, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let spec = ClusterSpec::new(3, Provider::Galera, "/tmp/c")
            .base_port(24100)
            .mysqld_option("wsrep_sync_wait=1")
            .mysqld_option("skip-log-bin")
            .provider_option("evs.suspect_timeout=PT2S")
            .node_provider_option(2, "gmcast.segment=1")
            .node_mysqld_option(3, "wsrep_sst_donor=node2,");
        let state = State {
            spec,
            provider_path: "/usr/lib/galera/libgalera_smm.so".into(),
        };
        let text = render(&state);
        assert_eq!(parse(&text, Path::new("/tmp/c")).unwrap(), state);
    }

    #[test]
    fn path_provider_roundtrips_and_dir_comes_from_location() {
        let spec = ClusterSpec::new(1, Provider::Path("/opt/x.so".into()), "/old");
        let state = State {
            spec,
            provider_path: "/opt/x.so".into(),
        };
        let parsed = parse(&render(&state), Path::new("/new")).unwrap();
        assert_eq!(parsed.spec.provider, Provider::Path("/opt/x.so".into()));
        assert_eq!(parsed.spec.dir, PathBuf::from("/new"));
    }

    #[test]
    fn garbage_is_refused() {
        assert!(parse("nodes=x\nprovider_path=/a\n", Path::new("/d")).is_err());
        assert!(parse("version=99\nprovider_path=/a\n", Path::new("/d")).is_err());
        assert!(parse("nodes=1\n", Path::new("/d")).is_err());
        assert!(parse("what=1\nprovider_path=/a\n", Path::new("/d")).is_err());
    }
}
