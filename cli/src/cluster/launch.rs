//! A whole cluster: create it (`up`), find it again (`open`), stop it.

use super::config;
use super::node::{tail_lines, Node, Phase, Status};
use lockstep_config::{ServerVar, Shown};
use super::preflight::{self, Tools};
use super::process::{self, Process};
use super::spec::{absolute, ClusterSpec};
use super::state::{self, State};
use super::{secs, Error, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(100);
/// mariadb-install-db takes well under a second here; a minute means stuck.
const INSTALL_DB_TIMEOUT: Duration = Duration::from_secs(120);

/// A running (or stopped) local cluster.
///
/// A cluster made by [`Cluster::up`] owns its servers: dropping it stops
/// them, so a failing test leaves nothing behind. [`Cluster::detach`] lets
/// them run on (the `lockstep cluster up` command); [`Cluster::open`]
/// finds a cluster by its directory and does not own its servers.
pub struct Cluster {
    spec: ClusterSpec,
    provider_path: PathBuf,
    /// Slot N-1 holds node N's server while it runs.
    slots: Vec<Mutex<Option<Process>>>,
    tools: OnceLock<Tools>,
    owning: bool,
}

/// What happened to one node in [`Cluster::stop_all`].
#[derive(Debug)]
pub struct StopReport {
    pub node: usize,
    /// None when the node was not running.
    pub pid: Option<u32>,
    /// How long it took to exit, or why it had to be killed.
    pub result: Result<Duration>,
}

impl Cluster {
    /// Creates the directory, initialises datadirs, starts node 1 as the
    /// bootstrap node, then each other node in turn, each waited for until
    /// Synced. On failure every node started so far is stopped.
    pub fn up(spec: ClusterSpec) -> Result<Cluster> {
        Cluster::up_with_progress(spec, &mut |_, _| {})
    }

    /// [`Cluster::up`], reporting each node's milestones as they happen.
    pub fn up_with_progress(
        spec: ClusterSpec,
        progress: &mut dyn FnMut(usize, Phase),
    ) -> Result<Cluster> {
        let nodes = spec.nodes;
        Cluster::up_first(spec, nodes, progress)
    }

    /// [`Cluster::up_with_progress`], but only nodes 1..=`count` are
    /// started; the others get their datadir and my.cnf and stay down
    /// until [`Node::start`] (then they join the running ones by state
    /// transfer). For tests where a node joins a cluster that already
    /// runs, with ports and configuration known from the start.
    pub fn up_first(
        spec: ClusterSpec,
        count: usize,
        progress: &mut dyn FnMut(usize, Phase),
    ) -> Result<Cluster> {
        Cluster::up_seeded(spec, count, None, progress)
    }

    /// [`Cluster::up_with_progress`] with node 1's datadir made from
    /// `copy`, a prepared mariabackup copy of another server (moved, not
    /// copied): a cluster that starts with a Galera node's data.
    pub fn up_from_copy(
        spec: ClusterSpec,
        copy: &Path,
        progress: &mut dyn FnMut(usize, Phase),
    ) -> Result<Cluster> {
        let nodes = spec.nodes;
        Cluster::up_seeded(spec, nodes, Some(copy), progress)
    }

    fn up_seeded(
        mut spec: ClusterSpec,
        count: usize,
        copy: Option<&Path>,
        progress: &mut dyn FnMut(usize, Phase),
    ) -> Result<Cluster> {
        spec.dir = absolute(&spec.dir)?;
        spec.validate()?;
        if !(1..=spec.nodes).contains(&count) {
            return Err(Error::msg(format!(
                "cannot start {count} of the {} nodes of the cluster",
                spec.nodes
            )));
        }
        let tools = preflight::tools(&spec)?;
        let provider_path = spec.provider.resolve()?;
        prepare_dir(&spec)?;
        for node in 1..=spec.nodes {
            preflight::check_ports(&spec, node)?;
        }
        write_node_files(&spec, &provider_path)?;
        state::write(&State {
            spec: spec.clone(),
            provider_path: provider_path.clone(),
        })?;
        let cluster = Cluster::new(spec, provider_path, Some(tools), true);
        // On error `cluster` is dropped here, which stops what was started.
        cluster.start_first(count, copy, progress)?;
        Ok(cluster)
    }

    /// Finds the cluster in `dir` (its state file and pid files). The
    /// servers keep running when the returned value is dropped.
    pub fn open(dir: impl AsRef<Path>) -> Result<Cluster> {
        let dir = absolute(dir.as_ref())?;
        let State {
            spec,
            provider_path,
        } = state::read(&dir)?;
        let cluster = Cluster::new(spec, provider_path, None, false);
        for node in 1..=cluster.spec.nodes {
            *cluster.slot(node) = adopt(&cluster.spec, node);
        }
        Ok(cluster)
    }

    /// Leaves the servers running when this value is dropped.
    pub fn detach(mut self) {
        self.owning = false;
    }

    fn new(
        spec: ClusterSpec,
        provider_path: PathBuf,
        tools: Option<Tools>,
        owning: bool,
    ) -> Cluster {
        let slots = (0..spec.nodes).map(|_| Mutex::new(None)).collect();
        let tools = tools.map(OnceLock::from).unwrap_or_default();
        Cluster {
            spec,
            provider_path,
            slots,
            tools,
            owning,
        }
    }

    /// Initialises every datadir; starts nodes 1..=count in turn. Node 1
    /// bootstraps; nodes 2..=count start from a copy of its data, taken
    /// while it is stopped once after its first start, so they join at its
    /// position without a state transfer (see `seed`). Nodes after
    /// `count` get a datadir of their own: they join later by SST.
    fn start_first(&self, count: usize, copy: Option<&Path>, progress: &mut dyn FnMut(usize, Phase)) -> Result<()> {
        for node in (1..=self.spec.nodes).filter(|n| *n == 1 || *n > count) {
            progress(node, Phase::Initialising);
            match copy.filter(|_| node == 1) {
                Some(copy) => self.move_copy(copy)?,
                None => self.install_db(node)?,
            }
        }
        let first = self.node(1);
        first.start_with_progress(&mut |phase| progress(1, phase))?;
        if count > 1 {
            first.stop()?;
            for node in 2..=count {
                super::seed::copy_datadir(&self.spec.paths(1).datadir, &self.spec.paths(node).datadir)?;
            }
            progress(1, Phase::Reseeding);
            first.start_with_progress(&mut |phase| progress(1, phase))?;
        }
        for node in 2..=count {
            progress(node, Phase::Seeded);
            self.node(node)
                .start_with_progress(&mut |phase| progress(node, phase))?;
        }
        self.wait_synced(Duration::from_secs(30))
    }

    pub fn spec(&self) -> &ClusterSpec {
        &self.spec
    }

    pub fn dir(&self) -> &Path {
        &self.spec.dir
    }

    /// The wsrep provider library the nodes load.
    pub fn provider_path(&self) -> &Path {
        &self.provider_path
    }

    pub fn len(&self) -> usize {
        self.spec.nodes
    }

    pub fn is_empty(&self) -> bool {
        self.spec.nodes == 0
    }

    /// Node `index`, 1-based like the node names. Panics when out of range.
    pub fn node(&self, index: usize) -> Node<'_> {
        assert!(
            (1..=self.spec.nodes).contains(&index),
            "node{index} does not exist (cluster of {})",
            self.spec.nodes
        );
        Node {
            cluster: self,
            index,
        }
    }

    pub fn nodes(&self) -> impl Iterator<Item = Node<'_>> {
        (1..=self.spec.nodes).map(move |i| self.node(i))
    }

    /// Indexes of the nodes whose server runs.
    pub fn running_nodes(&self) -> Vec<usize> {
        self.nodes()
            .filter(|n| n.is_running())
            .map(|n| n.index())
            .collect()
    }

    /// Starts `nodes` at once, none bootstrapping (each with its cluster
    /// address, recovery first unless `plainly`), and waits until each is
    /// Synced: how the nodes of a cluster that went down together start
    /// again, since each alone would wait for the others. Why each that
    /// did not come back failed.
    pub fn start_members(&self, nodes: &[usize], plainly: bool) -> Vec<String> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = nodes
                .iter()
                .map(|&n| {
                    scope.spawn(move || {
                        let node = self.node(n);
                        let started = if plainly { node.start_member_plainly() } else { node.start_member() };
                        started.map_err(|e| format!("node{n} did not come back: {e}"))
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)).err()).collect()
        })
    }

    /// Every node's status (or why it has none).
    pub fn statuses(&self) -> Vec<(usize, Result<Status>)> {
        self.nodes().map(|n| (n.index(), n.status())).collect()
    }

    /// Polls `pred` until it holds; fails at `timeout` naming `what`.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut pred: impl FnMut(&Cluster) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if pred(self) {
                return Ok(());
            }
            std::thread::sleep(POLL);
        }
        if pred(self) {
            return Ok(());
        }
        Err(Error::Timeout(format!(
            "{what} not reached within {}",
            secs(timeout)
        )))
    }

    /// Waits until every running node is Synced and sees all running nodes
    /// in its primary component.
    pub fn wait_synced(&self, timeout: Duration) -> Result<()> {
        self.wait_synced_with_arbitrators(timeout, 0)
    }

    /// As `wait_synced`, with `arbitrators` garbd members (not nodes of
    /// this cluster) in the component too.
    pub fn wait_synced_with_arbitrators(&self, timeout: Duration, arbitrators: usize) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let running = self.running_nodes();
        let size = (running.len() + arbitrators) as i64;
        for index in running {
            let left = deadline.saturating_duration_since(Instant::now());
            let what = format!("Synced with {}={size}", ServerVar::ClusterSize.shown());
            self.node(index).wait_until(&what, left, |s| {
                s.is_synced() && s.int(ServerVar::ClusterSize) == Some(size)
            })?;
        }
        Ok(())
    }

    /// Stops every running node at once: SIGTERM to all, then waits for
    /// each (spec.stop_timeout in total), SIGKILL for stragglers.
    pub fn stop_all(&self) -> Vec<StopReport> {
        let started = Instant::now();
        let mut taken: Vec<(usize, Option<Process>)> = Vec::new();
        for node in 1..=self.spec.nodes {
            let mut process = self.slot(node).take();
            if let Some(p) = process.as_mut() {
                if p.alive() {
                    let _ = p.signal(process::SIGTERM);
                    let _ = p.signal(process::SIGCONT);
                } else {
                    process = None;
                }
            }
            taken.push((node, process));
        }
        taken
            .into_iter()
            .map(|(node, process)| self.finish_stop(node, process, started))
            .collect()
    }

    fn finish_stop(&self, node: usize, process: Option<Process>, started: Instant) -> StopReport {
        let _ = std::fs::remove_file(self.spec.paths(node).our_pid_file);
        let Some(mut process) = process else {
            return StopReport {
                node,
                pid: None,
                result: Ok(Duration::ZERO),
            };
        };
        let left = self.spec.stop_timeout.saturating_sub(started.elapsed());
        let result = match process.terminate(left) {
            Ok(true) => Ok(started.elapsed()),
            Ok(false) => Err(Error::Timeout(format!(
                "node{node} ignored SIGTERM for {}: killed it",
                secs(self.spec.stop_timeout)
            ))),
            Err(e) => Err(e),
        };
        StopReport {
            node,
            pid: Some(process.pid),
            result,
        }
    }

    /// Stops every node; the first failure, if any (all are stopped anyway).
    pub fn down(&self) -> Result<()> {
        self.stop_all()
            .into_iter()
            .try_for_each(|r| r.result.map(|_| ()))
    }

    pub(super) fn slot(&self, node: usize) -> MutexGuard<'_, Option<Process>> {
        // A test thread that panicked while holding the lock left the
        // process record intact: keep using it.
        self.slots[node - 1]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn tools(&self) -> Result<&Tools> {
        if let Some(tools) = self.tools.get() {
            return Ok(tools);
        }
        let found = preflight::tools(&self.spec)?;
        Ok(self.tools.get_or_init(|| found))
    }

    /// Node 1's datadir becomes `copy`.
    fn move_copy(&self, copy: &Path) -> Result<()> {
        let datadir = self.spec.paths(1).datadir;
        let _ = std::fs::remove_dir(&datadir);
        std::fs::rename(copy, &datadir)
            .map_err(|e| Error::io(format!("moving {} to {}", copy.display(), datadir.display()), e))
    }

    /// mariadb-install-db into node's datadir, root without password.
    fn install_db(&self, node: usize) -> Result<()> {
        let paths = self.spec.paths(node);
        let log = std::fs::File::create(&paths.install_log)
            .map_err(|e| Error::io(format!("creating {}", paths.install_log.display()), e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| Error::io("duplicating a log file handle", e))?;
        let mut args = vec![
            format!("--defaults-file={}", paths.cnf.display()),
            // Root with an empty password: what the built-in client and
            // wsrep_sst_auth=root: use, whatever user runs lockstep.
            "--auth-root-authentication-method=normal".into(),
            "--skip-test-db".into(),
        ];
        if process::running_as_root() {
            args.push("--user=root".into());
        }
        let mut child = Command::new(&self.tools()?.install_db)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| Error::io("starting mariadb-install-db", e))?;
        let deadline = Instant::now() + INSTALL_DB_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| Error::io("waiting for mariadb-install-db", e))?
            {
                return match status.success() {
                    true => Ok(()),
                    false => Err(install_failure(
                        &paths.error_log,
                        &format!("failed ({status})"),
                    )),
                };
            }
            std::thread::sleep(POLL);
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(install_failure(
            &paths.error_log,
            &format!("did not finish within {}", secs(INSTALL_DB_TIMEOUT)),
        ))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.owning {
            return;
        }
        for report in self.stop_all() {
            if let Err(e) = report.result {
                eprintln!("lockstep cluster: stopping node{}: {e}", report.node);
            }
        }
    }
}

/// The bootstrap server logs its reason to the error log (log-error in
/// my.cnf); the script's own output is mostly boilerplate advice.
fn install_failure(error_log: &Path, what: &str) -> Error {
    let install_log = error_log.with_file_name("install-db.log");
    Error::msg(format!(
        "mariadb-install-db {what} (its output: {}); last lines of {}:\n{}",
        install_log.display(),
        error_log.display(),
        tail_lines(error_log, 15)
    ))
}

/// The server recorded in node's pid file, if it still runs and is ours.
fn adopt(spec: &ClusterSpec, node: usize) -> Option<Process> {
    let paths = spec.paths(node);
    let pid: u32 = std::fs::read_to_string(&paths.our_pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let ours = process::is_alive(pid) && process::is_our_server(pid, &paths.cnf);
    ours.then(|| Process::adopt(pid))
}

/// Makes `spec.dir` ready for a new cluster: refuses a directory with a
/// running cluster or with files that are not a cluster's; removes the
/// node directories of a stopped one.
fn prepare_dir(spec: &ClusterSpec) -> Result<()> {
    let dir = &spec.dir;
    if spec.state_file().exists() {
        remove_stopped_cluster(dir)?;
    } else if std::fs::read_dir(dir)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
    {
        return Err(Error::msg(format!(
            "{} exists and is not a lockstep cluster directory (no {}): pick another --dir",
            dir.display(),
            state::STATE_FILE
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))
}

fn remove_stopped_cluster(dir: &Path) -> Result<()> {
    let old = Cluster::open(dir)?;
    let running = old.running_nodes();
    if !running.is_empty() {
        let names: Vec<String> = running.iter().map(|n| format!("node{n}")).collect();
        return Err(Error::msg(format!(
            "a cluster is already running in {} ({}): stop it with `lockstep cluster down --dir {}`",
            dir.display(),
            names.join(", "),
            dir.display()
        )));
    }
    for node in 1..=old.spec.nodes {
        let node_dir = old.spec.paths(node).dir;
        if node_dir.exists() {
            std::fs::remove_dir_all(&node_dir)
                .map_err(|e| Error::io(format!("removing {}", node_dir.display()), e))?;
        }
    }
    let state_file = old.spec.state_file();
    std::fs::remove_file(&state_file)
        .map_err(|e| Error::io(format!("removing {}", state_file.display()), e))
}

fn write_node_files(spec: &ClusterSpec, provider: &Path) -> Result<()> {
    for node in 1..=spec.nodes {
        let paths = spec.paths(node);
        for dir in [&paths.dir, &paths.tmpdir] {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        }
        write_cnf(spec, node, provider)?;
    }
    Ok(())
}

/// Node `node`'s my.cnf as `spec` makes it.
pub(super) fn write_cnf(spec: &ClusterSpec, node: usize, provider: &Path) -> Result<()> {
    let user = process::running_as_root().then_some("root");
    let path = spec.paths(node).cnf;
    std::fs::write(&path, config::my_cnf(spec, node, provider, user))
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workload tests share one cluster between threads and move
    /// connections into them.
    #[test]
    fn cluster_is_shareable_and_connections_movable() {
        fn shareable<T: Send + Sync>() {}
        fn movable<T: Send>() {}
        shareable::<Cluster>();
        movable::<super::super::Conn>();
    }

    #[test]
    fn up_refuses_a_foreign_directory() {
        let dir = std::env::temp_dir().join(format!("lockstep-foreign-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("precious.txt"), "keep me").unwrap();
        let spec = ClusterSpec::new(1, super::super::Provider::Galera, &dir);
        let err = prepare_dir(&spec).unwrap_err().to_string();
        assert!(err.contains("is not a lockstep cluster directory"), "{err}");
        assert!(dir.join("precious.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
