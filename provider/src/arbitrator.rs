//! The arbitrator (`garbd`): a member that votes in the group's quorum and
//! keeps no data, so that two data nodes keep a majority when one of them
//! dies (two data centres and a third site with only the arbitrator).
//!
//! It joins as any member does, then moves itself from joiner to synced at
//! once: it needs no state transfer, as Galera's garbd joins with a trivial
//! one. The group knows it for what it is (`MemberInfo::arbitrator`): it
//! leads only when no data member can win an election, and then only to
//! hand leadership over (`group::campaigns_last`); it never donates, is
//! never handed leadership, and has no say in consistency votes. It receives
//! every ordered writeset, as Galera's does, and drops it.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use crate::group::{Delivery, Group, GroupConfig, GroupEvent, MemberInfo, MemberState, Mode, Transition};
use crate::gtid::{Seqno, Uuid};
use crate::log;
use crate::node::Settings;

/// A transition asked for and not seen ordered is asked again this often
/// (a request lost with a leader change). Asking twice is harmless: the
/// group ignores a Join of a joined member and a Sync of a synced one.
const RETRY: Duration = Duration::from_secs(1);

/// What `garbd`'s command line gives.
#[derive(Clone, Debug, Default)]
pub struct ArbitratorConfig {
    /// `--name` (Galera's default: `garb`).
    pub name: String,
    /// `--address`: `gcomm://host:port,...` of running members.
    pub address: String,
    /// `--group`: the cluster's `wsrep_cluster_name`.
    pub group: String,
    /// `--options`: provider options (`gmcast.listen_addr`, `base_port`,
    /// `socket.ssl_*`, `pc.weight`, `evs.*`).
    pub options: String,
}

/// Why `run` returned.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The caller asked it to stop (a signal).
    Stopped,
    /// The group thread stopped on its own (a committed entry it cannot
    /// read: a member of another version).
    Halted,
}

pub struct Arbitrator {
    group: Group,
    steps: Receiver<Step>,
}

enum Step {
    Ask(Transition, Seqno),
    Halted,
}

impl Arbitrator {
    /// Starts the transport and asks the members at `address` to take it
    /// in; the joining goes on in the background.
    pub fn start(cfg: &ArbitratorConfig) -> Result<Arbitrator, String> {
        let address = lockstep_config::parse_cluster_address(&cfg.address).map_err(|e| e.to_string())?;
        if address.is_bootstrap() {
            return Err(format!("'{}' names no member: an arbitrator joins a running cluster, it cannot start one", cfg.address));
        }
        if cfg.group.is_empty() {
            return Err("no group name (--group): it must be the members' wsrep_cluster_name".into());
        }
        let node = lockstep_config::NodeInfo { node_address: "", data_dir: "" };
        let mut options = lockstep_config::Config::init(&node, &cfg.options).map_err(|e| e.to_string())?;
        options.apply_address_options(&address).map_err(|e| e.to_string())?;
        let settings = Settings::from_config(&options);
        let peers: Vec<String> = address.peers.iter().map(lockstep_config::Peer::addr).collect();
        let tls = settings.tls.as_ref().map(crate::transport::tls::Tls::load).transpose()?.map(Arc::new);
        let me = MemberInfo {
            id: Uuid::time_ordered(),
            name: if cfg.name.is_empty() { "garb".into() } else { cfg.name.clone() },
            incoming: String::new(),
            address: advertised(&settings, &peers),
            arbitrator: true,
            stateless: false,
        };
        let (tx, steps) = channel();
        let group_cfg = GroupConfig {
            me: me.clone(),
            mode: Mode::Join { peers: peers.clone() },
            listen: settings.group_listen.clone(),
            segment: settings.segment,
            compress_segments: settings.compress_segments,
            cluster_name: cfg.group.clone(),
            allow: Arc::new(|_: &str| true),
            isolation: None,
            tick: crate::group::TICK,
            timeouts: settings.timeouts,
            previous: None,
            tls,
        };
        let group = Group::start(group_cfg, Box::new(Steps::new(me.id, tx))).map_err(|e| e.to_string())?;
        group.set_policy(settings.quorum_policy);
        log::info!("arbitrator {} ({}) listening on {}, joining group '{}' at {}", me.id, me.name, group.me().address, cfg.group, peers.join(","));
        Ok(Arbitrator { group, steps })
    }

    /// Runs until `stop` returns true (polled every 100 ms) or the group
    /// halts. Call `leave` after it.
    pub fn run(&self, stop: impl Fn() -> bool) -> Ended {
        loop {
            match self.steps.recv_timeout(Duration::from_millis(100)) {
                Ok(Step::Ask(t, seqno)) => {
                    let _ = self.group.member_state(t, seqno);
                }
                Ok(Step::Halted) | Err(RecvTimeoutError::Disconnected) => return Ended::Halted,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if stop() {
                return Ended::Stopped;
            }
        }
    }

    /// Leaves the group gracefully (the others see it go at once, as when
    /// garbd is stopped), then stops.
    pub fn leave(self) {
        self.group.leave();
        self.group.stop();
        log::info!("arbitrator left the group");
    }

    pub fn me(&self) -> &MemberInfo {
        self.group.me()
    }
}

/// What peers connect to: the listen address, or, when it binds every
/// interface, the one this host reaches the first peer through (a UDP
/// socket's route, nothing sent).
fn advertised(settings: &Settings, peers: &[String]) -> String {
    if !settings.group_address.is_empty() {
        return settings.group_address.clone();
    }
    let listen = &settings.group_listen;
    let Ok(addr) = listen.parse::<std::net::SocketAddr>() else { return listen.clone() };
    if addr.port() == 0 {
        return String::new(); // the group advertises the port it binds
    }
    if !addr.ip().is_unspecified() {
        return listen.clone();
    }
    let route = |peer: &String| {
        let sock = std::net::UdpSocket::bind((addr.ip(), 0)).ok()?;
        sock.connect(peer).ok()?;
        sock.local_addr().ok()
    };
    match peers.iter().find_map(route) {
        Some(local) => std::net::SocketAddr::new(local.ip(), addr.port()).to_string(),
        None => listen.clone(),
    }
}

/// The arbitrator's side of the group's events: it follows its own state
/// and asks for the next transition (joiner → joined → synced); the rest
/// is logged or dropped.
struct Steps {
    me: Uuid,
    out: Sender<Step>,
    state: Option<MemberState>,
    seqno: Seqno,
    asked: Option<(MemberState, std::time::Instant)>,
}

impl Steps {
    fn new(me: Uuid, out: Sender<Step>) -> Steps {
        Steps { me, out, state: None, seqno: -1, asked: None }
    }

    fn on(&mut self, e: GroupEvent) {
        match e {
            GroupEvent::View(v) => {
                self.seqno = v.seqno;
                let names: Vec<&str> = v.members.iter().map(|m| m.name.as_str()).collect();
                let kind = if v.primary { "primary" } else { "non-primary" };
                log::info!("view {}: {} with {} members ({})", v.conf_id, kind, v.members.len(), names.join(", "));
                if !v.primary || v.my_idx < 0 {
                    self.state = None;
                } else if self.state.is_none() {
                    // In a view it has not seen its own state in: a joiner
                    // (a snapshot brought the view, not the entry that
                    // added it).
                    self.state = Some(MemberState::Joiner);
                }
            }
            GroupEvent::MemberState { member, state, .. } if member == self.me => self.state = Some(state),
            GroupEvent::Rejoining => self.state = None,
            GroupEvent::Restored { view, .. } => self.on(GroupEvent::View(view)),
            GroupEvent::Halted { index } => {
                log::error!("the group's entry at index {} cannot be read (a member of another version?): the arbitrator stops", index);
                let _ = self.out.send(Step::Halted);
            }
            _ => {}
        }
    }

    /// Asks for the next transition, again after RETRY if it was not seen.
    fn step(&mut self) {
        let next = match self.state {
            Some(MemberState::Joiner) => Transition::Join,
            Some(MemberState::Joined) => Transition::Sync,
            _ => return,
        };
        let state = self.state.expect("matched above");
        let now = std::time::Instant::now();
        if matches!(self.asked, Some((s, at)) if s == state && now.saturating_duration_since(at) < RETRY) {
            return;
        }
        self.asked = Some((state, now));
        let _ = self.out.send(Step::Ask(next, self.seqno));
    }
}

impl Delivery for Steps {
    fn deliver(&mut self, events: &mut Vec<GroupEvent>) {
        for e in events.drain(..) {
            self.on(e);
        }
        self.step();
    }

    /// An arbitrator's log never gives raft-rs a snapshot to send (see
    /// `GroupLog::refuse_snapshots`), so this is kept for compaction only.
    fn snapshot(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn tick(&mut self) {
        self.step();
    }
}
