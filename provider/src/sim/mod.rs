//! Deterministic simulation of a cluster: several members, each the
//! production group driver (`group::Driver`: Raft, the group state,
//! pieces, proposals and fences, quorum, weights, eviction, rejoin, flow
//! control) with certification behind it (`driven`), over a seeded
//! network of delays, drops and partitions, with members frozen (SIGSTOP),
//! killed and restarted with what their disk kept (`gvwstate.dat`'s
//! member and view, the position of their data), all killed at once and
//! recovering the component together (pc.recovery), or leaving
//! gracefully (a server's shutdown, through the driver's Leave and its
//! phases), a member whose data diverged (it fails a writeset, loses the
//! consistency vote and leaves), a conflicting client load, and the
//! invariants of `check`
//! after every step. Sockets, threads and clocks are the simulation's:
//! no rule of the group is written twice.
//!
//! Safety violations fail a run, and so do two liveness failures: a
//! writeset its member never answered, and a member up that is not a
//! primary member at the leader's position `SETTLE_MS` (30 s) after every
//! fault healed. While the last was only reported, 12 seeds of 10,000
//! ended so over two sessions' code; each was a bug of the driver, since
//! fixed.
//!
//! A run is a function of its seed: `run(seed)` either passes or says what
//! diverged, and the same seed replays the same schedule
//! (`LOCKSTEP_SIM_SEED=<seed> cargo test --release -p lockstep-provider
//! --test simulation -- --nocapture`).

mod check;
mod driven;
mod network;
mod rng;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::gtid::{Seqno, Uuid};
use crate::writeset::{flags, Key, KeyKind, WriteSet};
use check::{Checker, Note, Reads};
pub use driven::LogSync;
use driven::{Driven, Traits};
use network::{Envelope, Network};
use rng::Rng;

/// The history every simulated cluster starts.
const HISTORY: Uuid = Uuid([0xAB; 16]);

/// Member `index`'s id (the simulation numbers members from 0).
fn uuid(index: usize) -> Uuid {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(index as u64 + 1).to_le_bytes());
    b[8] = 0x5A;
    Uuid(b)
}

/// Odd seeds put members in two segments (`gmcast.segment`) by the
/// parity of their index, so that appends go through relays (see
/// `group::relay`), which crash, freeze and fall on either side of a
/// partition like any member. Drawn from the seed, not the seed's random
/// numbers, so that each seed's schedule stays what it was.
fn segmented(seed: u64) -> bool {
    seed % 2 == 1
}

fn raft_id(index: usize) -> u64 {
    uuid(index).raft_id()
}

/// The simulated time `ms` after the run's start.
fn at(base: Instant, ms: u64) -> Instant {
    base + Duration::from_millis(ms)
}

/// Raft's tick, as the driver's (elections take 10-20 ticks).
const TICK_MS: u64 = 50;
/// Load and faults last this long; then everything heals and the cluster
/// gets `SETTLE_MS` to converge.
const RUN_MS: u64 = 30_000;
const SETTLE_MS: u64 = 30_000;
/// A partition older than this (quorum grace 5 s, an election, a tick)
/// must have left at most one side primary.
const SPLIT_SETTLED_MS: u64 = 8_000;
/// The longest an arbitrator may lead: an election timeout or two for
/// raft-rs to bring a data member up to date and hand it leadership.
const ARBITRATOR_LEADS_MS: u64 = 3_000;
/// Client writesets waiting per member, at most (its client threads).
const CLIENTS: usize = 8;
/// A client gives up on a writeset after this (it is then not
/// acknowledged, whatever happens to it).
const CLIENT_TIMEOUT_MS: u64 = 3_000;
/// Rows the load writes: few, so writesets conflict.
const ROWS: u64 = 12;

/// What a passing run did.
#[derive(Debug)]
pub struct Summary {
    pub members: usize,
    pub seqnos: Seqno,
    pub acked: usize,
    pub certified: u64,
    pub conflicts: u64,
    pub faults: Vec<String>,
    pub messages: u64,
    /// Appends that went through a relay of another segment.
    pub relayed: u64,
    /// Appends sent to their entries' origin without its payloads.
    pub own: u64,
    /// Acknowledged writesets that a power cut of every member took with
    /// it (never under `LogSync::Batch`, where that fails the run).
    pub lost: usize,
    /// Members frozen while serving reads that went non-primary first
    /// thing when they thawed (see `group::standstill`).
    pub stood_still: u64,
    /// Causal reads answered, each checked against what was acknowledged
    /// before it was asked.
    pub reads: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    Partition,
    Freeze,
    Crash,
    /// A graceful leave (a server's shutdown): the member hands over
    /// leadership and proposes its own removal, then exits.
    Leave,
    /// The leader's links to a minority of the others are cut, and only
    /// those: each member still hears a majority (see `group::cut_off`).
    Ring,
    /// Every member is killed at once (a power cut); they restart
    /// together and recover the primary component from what each kept
    /// (`group::recovery`, Galera's pc.recovery).
    Outage,
    /// A member's data diverged: it fails the next writeset it applies,
    /// the group votes (`group::vote`), and it loses and leaves.
    Diverge,
}

struct Sim {
    rng: Rng,
    base: Instant,
    now: u64,
    members: Vec<Driven>,
    /// Per member: frozen until (ms), crashed.
    frozen_until: Vec<u64>,
    /// Per member frozen while it served reads: since when (ms), and the
    /// last seqno any member had delivered then. If the group went on
    /// meanwhile, it may deliver nothing until it goes non-primary (see
    /// `check_thaw`).
    frozen_serving: Vec<Option<(u64, Seqno)>>,
    stood_still: u64,
    crashed: Vec<bool>,
    net: Network,
    check: Checker,
    /// Per member: waiting client writesets (token -> when sent).
    waiting: Vec<HashMap<u64, u64>>,
    /// Per member: writesets its driver has not answered yet, ordered or
    /// failed (token -> when sent), whether or not their client still
    /// waits: every one must be answered (see `finish`).
    unanswered: Vec<BTreeMap<u64, u64>>,
    next_token: u64,
    partition_since: Option<u64>,
    /// A ring: since when, the leader cut off from some members, its term.
    ring_since: Option<(u64, usize, u64)>,
    /// The member asked to leave, until a new node takes its place.
    leaving: Option<usize>,
    /// The members the current crash or outage killed, and what each
    /// will know when it restarts.
    killed: Vec<(usize, Option<crate::group::recovery::Previous>)>,
    faults: Vec<String>,
    trace: bool,
    segmented: bool,
    /// Per arbitrator: since when it leads (now, while it does not).
    arbitrator_led_since: BTreeMap<usize, u64>,
    log_sync: LogSync,
    /// Acknowledged writesets lost to power cuts.
    lost: usize,
    reads: Reads,
}

/// Runs the simulation of `seed`; `trace` prints the schedule and the
/// driver's log lines.
pub fn run(seed: u64, trace: bool) -> Result<Summary, String> {
    run_with(seed, trace, LogSync::Batch)
}

/// [`run`] with members whose logs sync as `log_sync` says.
pub fn run_with(seed: u64, trace: bool, log_sync: LogSync) -> Result<Summary, String> {
    if !trace {
        // The driver's log lines, thousands per run, say nothing here.
        crate::log::set_sink(Some(std::sync::Arc::new(|_, _| {})));
    }
    let mut sim = Sim::new(seed, trace, log_sync);
    sim.run().map_err(|e| format!("at {} ms: {}", sim.now, e))?;
    Ok(Summary {
        members: sim.members.len(),
        seqnos: sim.check.last_seqno(),
        acked: sim.check.acked.len(),
        certified: sim.check.certified,
        conflicts: sim.check.conflicts,
        faults: sim.faults,
        messages: sim.net.sent(),
        relayed: sim.net.relayed,
        own: sim.net.own,
        lost: sim.lost,
        stood_still: sim.stood_still,
        reads: sim.reads.answered,
    })
}

/// An election timeout (10-19 ticks) no other member up has: two
/// members with the same fixed timeout that start campaigning on the same
/// tick split the vote again on every term, which real raft-rs's random
/// timeouts never keep doing.
fn distinct_election(rng: &mut Rng, taken: &[usize]) -> usize {
    assert!(taken.len() < 10, "more members than distinct election timeouts");
    loop {
        let election = 10 + rng.below(10) as usize;
        if !taken.contains(&election) {
            return election;
        }
    }
}

/// With LOCKSTEP_SIM_DEBUG set, a liveness finding prints the member's
/// Raft state (and the leader's view of it), to see where it is stuck.
fn debug_state(index: usize, m: &Driven, leader: Option<&Driven>) {
    if std::env::var_os("LOCKSTEP_SIM_DEBUG").is_none() {
        return;
    }
    let r = &m.raft().raft;
    eprintln!(
        "node{}: term {} {:?}, leader {:x}, commit {} of {}, joining {}, primary {}",
        index + 1, r.term, r.state, r.leader_id, r.raft_log.committed, r.raft_log.last_index(), m.joining(), m.is_primary()
    );
    if let Some(l) = leader {
        let lr = l.raft();
        eprintln!("  the leader's progress for it: {:?}; the leader assembles {} bytes, snapshot at {} wanted {}, first index {}", lr.raft.prs().get(r.id), l.state().assembling_bytes(), lr.store().snapshot_index(), lr.store().snapshot_wanted(), lr.raft.raft_log.first_index());
        for (origin, token, bytes) in l.state().assembling() {
            eprintln!("  assembling {} bytes of token {} from {} (a member: {})", bytes, token, origin, l.state().member(origin).is_some());
        }
    }
}

/// With LOCKSTEP_SIM_DEBUG set: the group as member `m` (a leader) has
/// it, weights and votes, which decide what it may deliver.
fn debug_group(m: &Driven) {
    if std::env::var_os("LOCKSTEP_SIM_DEBUG").is_none() {
        return;
    }
    for g in m.state().members() {
        eprintln!("  member {}: voter {}, weight {}, {:?}", g.info.name, g.voter, g.weight, g.state);
    }
    eprintln!("  raft configuration: {:?}", m.raft().raft.prs().conf());
}

/// The leader's Raft configuration counts as voters exactly the members
/// its group state calls voters: quorum, flow control and the views all
/// go by the group state, elections and commits by Raft's.
fn voters_agree(leader: &Driven) -> Result<(), String> {
    let mut raft: Vec<u64> = leader.raft().raft.prs().conf().to_conf_state().voters;
    let mut group: Vec<u64> = leader.state().members().iter().filter(|m| m.voter).map(|m| m.info.id.raft_id()).collect();
    raft.sort_unstable();
    group.sort_unstable();
    match raft == group {
        true => Ok(()),
        false => Err(format!("the leader's Raft voters {raft:x?} are not its group's voters {group:x?}")),
    }
}

/// A primary member that serves reads in a group with another data
/// member: the cut-off rules apply to it (an arbitrator commits nothing
/// alone, so a member whose only peer is one is left to the grace).
fn answers_with_data(m: &Driven) -> bool {
    let with_data = m.state().members().iter().any(|x| x.info.id != m.id() && !x.info.arbitrator);
    m.serves_reads() && m.is_primary() && with_data
}

impl Sim {
    fn new(seed: u64, trace: bool, log_sync: LogSync) -> Sim {
        let mut rng = Rng::new(seed);
        let n = if rng.chance(50) { 3 } else { 5 };
        let delay = (1, rng.between(2, 40));
        let net = Network::new(rng.below(3), delay, rng.below(3), rng.below(3));
        // Half the runs weigh members differently (pc.weight 1-3).
        let weighted = rng.chance(50);
        let base = Instant::now();
        let mut members: Vec<Driven> = Vec::new();
        for i in 0..n {
            let taken: Vec<usize> = members.iter().map(|m| m.election_tick()).collect();
            let election = distinct_election(&mut rng, &taken);
            let rate = if rng.chance(20) { 1 } else { rng.between(2, 8) as usize };
            let weight = if weighted { rng.between(1, 3) as u32 } else { 1 };
            // Seeds divisible by 3 end with an arbitrator (garbd), weighed
            // like the rest: one that alone outweighs the data members
            // leaves nobody primary while it is cut off (the README
            // advises against it), but must still never order twice.
            let arbitrator = seed % 3 == 0 && i == n - 1;
            let traits = Traits { weight, segmented: segmented(seed), arbitrator, log_sync };
            members.push(Driven::new(i, election, rate, i == 0, traits, None, base));
        }
        let mut sim = Sim {
            rng,
            base,
            now: 0,
            frozen_until: vec![0; n],
            frozen_serving: vec![None; n],
            stood_still: 0,
            crashed: vec![false; n],
            waiting: vec![HashMap::new(); n],
            unanswered: vec![BTreeMap::new(); n],
            net,
            check: Checker::default(),
            members,
            next_token: 1,
            partition_since: None,
            ring_since: None,
            leaving: None,
            killed: Vec::new(),
            faults: Vec::new(),
            trace,
            segmented: segmented(seed),
            arbitrator_led_since: BTreeMap::new(),
            log_sync,
            lost: 0,
            reads: Reads::default(),
        };
        sim.net.side = vec![0; n];
        if trace {
            eprintln!("weights: {:?}", sim.members.iter().map(|m| m.weight()).collect::<Vec<_>>());
        }
        sim
    }

    fn run(&mut self) -> Result<(), String> {
        let mut next_fault = 8_000;
        let mut heal_at = 0;
        let mut fault = Fault::None;
        while self.now < RUN_MS + SETTLE_MS {
            if self.now < RUN_MS && self.now >= next_fault && fault == Fault::None {
                let (f, lasts) = self.inject()?;
                fault = f;
                heal_at = self.now + lasts;
            }
            if fault != Fault::None && (self.now >= heal_at || self.now >= RUN_MS) {
                self.heal(fault);
                fault = Fault::None;
                next_fault = self.now + self.rng.between(3_000, 8_000);
            }
            self.step()?;
        }
        self.finish()
    }

    /// One tick: messages due, ticks, client load, checks.
    fn step(&mut self) -> Result<(), String> {
        let end = self.now + TICK_MS;
        while let Some(t) = self.net.next_at().filter(|t| *t < end) {
            self.now = self.now.max(t);
            while let Some(env) = self.net.pop_due(self.now) {
                self.deliver(env)?;
            }
        }
        self.now = end;
        for i in 0..self.members.len() {
            if self.acting(i) {
                self.members[i].tick(at(self.base, self.now), self.now);
                self.flush(i)?;
            }
        }
        // A member that left exits: it sends and hears nothing more.
        if let Some(i) = self.leaving.filter(|i| self.members[*i].has_left()) {
            self.crashed[i] = true;
        }
        self.expire_clients();
        if self.now < RUN_MS {
            self.load()?;
            self.ask_reads()?;
        }
        self.reads.check(self.now)?;
        self.check_synced_votes()?;
        self.check_arbitrators_follow()?;
        self.check_cut_off()?;
        self.check_cut_from_leader()?;
        self.check_one_primary()
    }

    /// Whether member `i`'s links reach group member `x`, up and acting.
    fn reaches(&self, i: usize, x: &crate::group::state::Member) -> bool {
        (0..self.members.len()).any(|j| self.members[j].id() == x.info.id && self.acting(j) && self.net.connected(i, j))
    }

    /// A member serving reads on a side of a partition that weighs less
    /// than half of its view is non-primary a tick after the cut-off
    /// window (see `group::cut_off`): the other side may be committing,
    /// and its reads would grow stale. Only where its group has another
    /// data member, as the rule says (an arbitrator commits nothing alone).
    fn check_cut_off(&self) -> Result<(), String> {
        let Some(since) = self.partition_since else { return Ok(()) };
        let bound = crate::group::cut_off::window(Duration::from_millis(TICK_MS)).as_millis() as u64 + 2 * TICK_MS;
        if self.now < since + bound {
            return Ok(());
        }
        for i in (0..self.members.len()).filter(|i| self.acting(*i) && answers_with_data(&self.members[*i])) {
            let m = &self.members[i];
            if crate::group::cut_off::hears_a_minority(m.state(), |x| self.reaches(i, x)) {
                return Err(format!("node{} serves reads {} ms into a partition on a side that weighs less than half", i + 1, self.now - since));
            }
        }
        Ok(())
    }

    /// A member serving reads whose links to the leader are cut, while
    /// that leader goes on in its term with a majority, is non-primary
    /// once the window has passed and another member's word on the
    /// leader has come (see `group::cut_off`): the leader commits
    /// without it.
    fn check_cut_from_leader(&self) -> Result<(), String> {
        let Some((since, leader, term)) = self.ring_since else { return Ok(()) };
        let window = crate::group::cut_off::window(Duration::from_millis(TICK_MS)).as_millis() as u64;
        let bound = window + 2 * crate::group::cluster_lag::REPORT_EVERY.as_millis() as u64 + 4 * TICK_MS;
        let l = &self.members[leader];
        let leads = self.acting(leader) && l.is_leader() && l.is_primary() && l.raft().raft.term == term;
        if self.now < since + bound || !leads {
            return Ok(());
        }
        if crate::group::weights::side_standing(l.state(), |x| self.reaches(leader, x)) != crate::group::weights::Standing::Majority {
            return Ok(());
        }
        // In a segmented run the leader's appends reach a member of the
        // other segment through a relay over links that are not cut: it
        // hears the leader that way (`Driver::leader_heard_elsewhere`).
        let relayed = |i: usize| self.segmented && i % 2 != leader % 2;
        for i in (0..self.members.len()).filter(|i| self.acting(*i) && !self.net.connected(*i, leader) && !relayed(*i)) {
            if answers_with_data(&self.members[i]) {
                return Err(format!("node{} serves reads {} ms after its links to the leader, node{}, were cut", i + 1, self.now - since, leader + 1));
            }
        }
        Ok(())
    }

    /// An arbitrator holds no data: it leads only when no data member
    /// could win an election, and then only until it handed leadership to
    /// one (see `group::campaigns_last`). Unless no data voter can be
    /// caught up from its log (seed 4851: a joiner's answer to its
    /// snapshot was lost, then the leader was cut off): no data member
    /// could lead then either, until one that holds the log is back.
    fn check_arbitrators_follow(&mut self) -> Result<(), String> {
        for i in 0..self.members.len() {
            let m = &self.members[i];
            let reachable = |j: usize| j != i && self.acting(j) && self.net.connected(i, j) && m.can_catch_up(self.members[j].id());
            let leads = self.acting(i) && m.is_arbitrator() && m.is_leader() && (0..self.members.len()).any(reachable);
            let since = *self.arbitrator_led_since.entry(i).or_insert(self.now);
            if !leads {
                self.arbitrator_led_since.insert(i, self.now);
            } else if self.now - since > ARBITRATOR_LEADS_MS {
                return Err(format!("node{}, an arbitrator, has led for {} ms", i + 1, self.now - since));
            }
        }
        Ok(())
    }

    /// A member synced in the group's state is a voter in it: a synced
    /// node that did not vote could not keep its component Primary when a
    /// voter dies (see `Driver::hold_sync`).
    fn check_synced_votes(&self) -> Result<(), String> {
        for (i, m) in self.members.iter().enumerate().filter(|(i, _)| !self.crashed[*i]) {
            if let Some(s) = m.state().members().iter().find(|s| s.state == crate::group::MemberState::Synced && !s.voter) {
                return Err(format!("node{} sees {} ({}) synced and not a voter", i + 1, s.info.id, s.info.name));
            }
        }
        Ok(())
    }

    fn acting(&self, i: usize) -> bool {
        !self.crashed[i] && self.frozen_until[i] <= self.now
    }

    fn deliver(&mut self, env: Envelope) -> Result<(), String> {
        if self.crashed[env.to] {
            return Ok(());
        }
        assert!(self.frozen_until[env.to] <= self.now, "a message reached node{} while it was frozen", env.to + 1);
        let from = raft_id(env.from);
        self.members[env.to].receive(from, env.msg, at(self.base, self.now));
        self.flush(env.to)
    }

    /// Sends what member `i` queued and checks what it reported.
    fn flush(&mut self, i: usize) -> Result<(), String> {
        let out = self.members[i].take_outbox();
        for (to, msg) in out {
            let targets: Vec<usize> = if to == 0 {
                (0..self.members.len()).filter(|j| *j != i).collect()
            } else {
                (0..self.members.len()).filter(|j| raft_id(*j) == to).collect()
            };
            for j in targets {
                let held = self.frozen_until[j];
                self.net.send(&mut self.rng, self.now, Envelope { from: i, to: j, msg: msg.clone() }, held)?;
            }
        }
        for note in self.members[i].take_notes()? {
            self.on_note(i, note)?;
        }
        let backlog = self.members[i].backlog();
        if backlog > driven::FC_UPPER + 4 * 256 {
            return Err(format!("node{}'s backlog {} is past what flow control bounds", i + 1, backlog));
        }
        Ok(())
    }

    fn on_note(&mut self, i: usize, note: Note) -> Result<(), String> {
        self.check_thaw(i, &note)?;
        match &note {
            Note::Ordered { seqno, origin, token, pass, .. } if *origin == self.members[i].id() => {
                self.unanswered[i].remove(token);
                if self.waiting[i].remove(token).is_some() && *pass {
                    self.check.ack(*seqno, *origin, *token);
                }
            }
            Note::Failed { token } => {
                self.unanswered[i].remove(token);
                self.waiting[i].remove(token);
            }
            Note::Rejoining | Note::NonPrimary => self.waiting[i].clear(),
            _ => {}
        }
        if self.trace && !matches!(note, Note::Ordered { .. }) {
            eprintln!("{:>6} ms node{}: {:?}", self.now, i + 1, note);
        }
        self.check.note(i, note)
    }

    /// Clients that waited too long give up, and their member fences what
    /// they sent (also while the cluster settles: pieces of a writeset
    /// never completed would keep every member from taking a snapshot).
    fn expire_clients(&mut self) {
        let now = self.now;
        for i in 0..self.members.len() {
            let mut gone: Vec<u64> = self.waiting[i].iter().filter(|(_, sent)| now - **sent >= CLIENT_TIMEOUT_MS).map(|(t, _)| *t).collect();
            gone.sort_unstable(); // deterministic
            for token in gone {
                self.waiting[i].remove(&token);
                self.members[i].fence(token);
            }
        }
    }

    /// Clients on primary members send writesets of one to three rows.
    fn load(&mut self) -> Result<(), String> {
        for i in 0..self.members.len() {
            if !self.acting(i) || self.waiting[i].len() >= CLIENTS || !self.rng.chance(60) {
                continue;
            }
            // garbd takes no clients.
            if self.members[i].is_arbitrator() {
                continue;
            }
            let token = self.next_token;
            self.next_token += 1;
            let ws = self.writeset(i, token);
            if self.members[i].propose(token, &ws, at(self.base, self.now)) {
                self.waiting[i].insert(token, self.now);
                self.unanswered[i].insert(token, self.now);
            }
            self.flush(i)?;
        }
        Ok(())
    }

    /// Clients on members that act ask causal reads now and then.
    fn ask_reads(&mut self) -> Result<(), String> {
        for i in 0..self.members.len() {
            if !self.acting(i) || self.members[i].is_arbitrator() || self.reads.waiting(i) >= check::READS_PER_MEMBER || !self.rng.chance(10) {
                continue;
            }
            let floor = self.check.acked_floor();
            let answer = self.members[i].read(at(self.base, self.now));
            self.reads.asked(i, answer, floor, self.now);
            self.flush(i)?;
        }
        Ok(())
    }

    fn writeset(&mut self, i: usize, token: u64) -> WriteSet {
        let kinds = [KeyKind::Update, KeyKind::Exclusive, KeyKind::Shared, KeyKind::Reference];
        let mut rows: Vec<u64> = Vec::new();
        for _ in 0..self.rng.between(1, 3) {
            let r = self.rng.below(ROWS);
            if !rows.contains(&r) {
                rows.push(r);
            }
        }
        let keys = rows
            .iter()
            .map(|r| Key { kind: kinds[self.rng.below(4) as usize], parts: vec![Bytes::from_static(b"db"), Bytes::from_static(b"t"), r.to_string().into_bytes().into()] })
            .collect();
        let m = &self.members[i];
        WriteSet::new(flags::TRX_START | flags::TRX_END, m.id(), token, i as u64, m.position(), keys, Bytes::new())
    }

    /// Starts a fault; how long it lasts. At most one at a time, and never
    /// on more than a minority, so a majority always survives (but for an
    /// outage, after which they all restart).
    fn inject(&mut self) -> Result<(Fault, u64), String> {
        let n = self.members.len();
        let live: Vec<usize> = (0..n).filter(|i| !self.crashed[*i]).collect();
        let victim = live[self.rng.below(live.len() as u64) as usize];
        let lasts = self.rng.between(1_000, 10_000);
        // A member that weighed a majority of the view, crashed or gone,
        // leaves the rest non-primary until an operator bootstraps them
        // (Galera's rule too): not a fault the run recovers from.
        let may_go = live.len() == n && !self.decides_quorum(victim);
        let leader = live.iter().copied().find(|i| self.members[*i].is_leader());
        let fault = match self.rng.below(7) {
            // An arbitrator applies nothing, so it cannot diverge.
            0 if may_go && !self.members[victim].is_arbitrator() => Fault::Diverge,
            0 => Fault::None,
            1 => Fault::Partition,
            2 => Fault::Freeze,
            3 if may_go => Fault::Crash,
            4 if may_go => Fault::Leave,
            5 if live.len() == n && self.one_primary_view() => Fault::Outage,
            6 if leader.is_some() => Fault::Ring,
            _ => Fault::None,
        };
        match fault {
            Fault::Partition => {
                let minority = (n - 1) / 2;
                let cut = 1 + self.rng.below(minority as u64) as usize;
                let mut side = vec![0u8; n];
                for k in 0..cut {
                    side[(victim + k) % n] = 1;
                }
                self.net.side = side;
                self.partition_since = Some(self.now);
            }
            Fault::Ring => self.cut_ring(leader.expect("a leader"), &live),
            Fault::Freeze => {
                self.frozen_until[victim] = self.now + lasts;
                self.net.hold_for(victim, self.now + lasts);
                self.frozen_serving[victim] = self.members[victim].serves_reads().then_some((self.now, self.check.last_seqno()));
            }
            Fault::Crash => self.kill(victim),
            Fault::Outage => {
                live.iter().for_each(|i| self.kill(*i));
                self.power_cut()?;
            }
            Fault::Leave => {
                self.members[victim].leave();
                self.leaving = Some(victim);
            }
            Fault::Diverge => {
                self.members[victim].diverge(true);
                self.leaving = Some(victim);
            }
            Fault::None => {}
        }
        let what = format!("{} ms: {:?} node{} for {} ms", self.now, fault, victim + 1, lasts);
        if self.trace {
            eprintln!("{}", what);
        }
        self.faults.push(what);
        Ok((fault, lasts))
    }

    /// Every member died with what its disk had synced: the history goes
    /// on after the furthest any of them reaches (the member whose log
    /// reaches furthest forms the component again), and what was ordered
    /// beyond is in no log. An acknowledged writeset among that is lost:
    /// counted, and a failure where every log syncs before it acknowledges.
    fn power_cut(&mut self) -> Result<(), String> {
        let reaches = self.killed.iter().filter_map(|(_, p)| p.as_ref().map(|p| p.position.1)).max().unwrap_or(0);
        let lost = self.check.power_cut(reaches);
        self.reads.forget();
        if self.log_sync == LogSync::Batch && !lost.is_empty() {
            return Err(format!("a power cut of every member lost {} acknowledged writesets (the logs reach {}, the first lost at seqno {})", lost.len(), reaches, lost[0].0));
        }
        self.lost += lost.len();
        Ok(())
    }

    /// Cuts `leader`'s links to a minority of the others.
    fn cut_ring(&mut self, leader: usize, live: &[usize]) {
        let others: Vec<usize> = live.iter().copied().filter(|i| *i != leader).collect();
        let cut = 1 + self.rng.below(((self.members.len() - 1) / 2) as u64) as usize;
        let first = self.rng.below(others.len() as u64) as usize;
        self.net.cut = (0..cut.min(others.len())).map(|k| (leader, others[(first + k) % others.len()])).collect();
        self.ring_since = Some((self.now, leader, self.members[leader].raft().raft.term));
    }

    fn heal(&mut self, fault: Fault) {
        match fault {
            Fault::Ring => {
                self.net.cut.clear();
                self.ring_since = None;
            }
            Fault::Partition => {
                self.net.side = vec![0; self.members.len()];
                self.partition_since = None;
            }
            // A killed member restarts as a new node (a new id) that
            // says who it was (its old self is evicted meanwhile, unless
            // all of them restart: then they recover the component).
            Fault::Crash | Fault::Outage => {
                for (i, previous) in std::mem::take(&mut self.killed) {
                    self.start_node(self.members[i].weight(), previous);
                }
            }
            // One that left comes back as a new node with nothing to say
            // (a clean shutdown removes gvwstate.dat); one still leaving
            // is killed first.
            Fault::Leave => {
                if let Some(i) = self.leaving.take() {
                    self.crashed[i] = true;
                    self.start_node(self.members[i].weight(), None);
                }
            }
            Fault::Freeze => {
                for i in 0..self.frozen_until.len() {
                    if self.frozen_until[i] > self.now {
                        self.net.thaw(i, self.frozen_until[i], self.now);
                        self.frozen_until[i] = self.now;
                    }
                }
            }
            // One that failed a writeset is out or on its way: it comes
            // back as a new node, which a state transfer would give the
            // cluster's data. One that applied nothing meanwhile stays.
            Fault::Diverge => {
                if let Some(i) = self.leaving.take() {
                    match self.members[i].has_diverged() {
                        true => {
                            self.crashed[i] = true;
                            self.start_node(self.members[i].weight(), None);
                        }
                        false => self.members[i].diverge(false),
                    }
                }
            }
            Fault::None => {}
        }
        if self.trace {
            eprintln!("{} ms: healed {:?}", self.now, fault);
        }
    }

    /// Kills member `i`, keeping what its disk says for its restart.
    /// A member frozen while serving reads for longer than a standstill
    /// (with a tick's slack) must go non-primary before it delivers
    /// anything: what the group ordered meanwhile, delivered while its
    /// server still answered, would be read stale.
    fn check_thaw(&mut self, i: usize, note: &Note) -> Result<(), String> {
        let Some((since, top)) = self.frozen_serving[i] else { return Ok(()) };
        let stood = self.frozen_until[i].saturating_sub(since);
        // A member that alone outweighs the rest (seed 38) stood still
        // with the whole group: nothing was delivered without it.
        let moved_on = self.check.last_seqno() > top;
        if stood < crate::group::STOOD_STILL.as_millis() as u64 + 2 * TICK_MS || !moved_on {
            self.frozen_serving[i] = None;
            return Ok(());
        }
        match note {
            Note::NonPrimary | Note::Rejoining => {
                self.frozen_serving[i] = None;
                self.stood_still += 1;
                Ok(())
            }
            Note::Ordered { seqno, .. } | Note::View { seqno, .. } => Err(format!("node{} stood still {} ms while serving reads and delivered seqno {} before going non-primary", i + 1, stood, seqno)),
            _ => Ok(()),
        }
    }

    fn kill(&mut self, i: usize) {
        self.frozen_serving[i] = None;
        self.crashed[i] = true;
        self.killed.push((i, self.members[i].previous()));
    }

    /// Starts a node that joins the cluster, as member `members.len()`.
    fn start_node(&mut self, weight: u32, previous: Option<crate::group::recovery::Previous>) {
        let i = self.members.len();
        let taken: Vec<usize> = (0..i).filter(|j| !self.crashed[*j]).map(|j| self.members[j].election_tick()).collect();
        let election = distinct_election(&mut self.rng, &taken);
        let now = at(self.base, self.now);
        let traits = Traits { weight, segmented: self.segmented, arbitrator: false, log_sync: self.log_sync };
        self.members.push(Driven::new(i, election, self.rng.between(2, 8) as usize, false, traits, previous, now));
        self.frozen_until.push(0);
        self.frozen_serving.push(None);
        self.crashed.push(false);
        self.waiting.push(HashMap::new());
        self.unanswered.push(BTreeMap::new());
        self.net.side.push(0);
    }

    /// Every member is a primary member of one view that lists exactly
    /// them: a whole-cluster restart must then recover it (a view that
    /// still lists a dead member waits for it, as Galera's pc.recovery
    /// does, and is not a fault the run recovers from).
    fn one_primary_view(&self) -> bool {
        let live: Vec<usize> = (0..self.members.len()).filter(|i| !self.crashed[*i]).collect();
        let mut ids: Vec<Uuid> = live.iter().map(|i| self.members[*i].id()).collect();
        ids.sort();
        live.iter().all(|i| {
            let m = &self.members[*i];
            let mut view = m.last_view().unwrap_or_default();
            view.sort();
            m.is_primary() && !m.joining() && view == ids
        })
    }

    /// Whether the other voters weigh no majority of the voters without
    /// member `i` (as `weights::leader_standing` weighs them), in the
    /// group as member `i` last saw it.
    fn decides_quorum(&self, i: usize) -> bool {
        let id = self.members[i].id();
        let rest = crate::group::weights::voters_standing(self.members[i].state(), |m| m.info.id != id);
        rest != crate::group::weights::Standing::Majority
    }

    /// No two primary components once a partition has settled.
    fn check_one_primary(&self) -> Result<(), String> {
        let Some(since) = self.partition_since else { return Ok(()) };
        if self.now < since + SPLIT_SETTLED_MS {
            return Ok(());
        }
        let sides: Vec<u8> = (0..self.members.len())
            .filter(|i| self.acting(*i) && self.members[*i].is_primary())
            .map(|i| self.net.side[i])
            .collect();
        if sides.windows(2).any(|w| w[0] != w[1]) {
            for i in 0..self.members.len() {
                debug_state(i, &self.members[i], None);
            }
            return Err(format!("two primary components {} ms into a partition", self.now - since));
        }
        Ok(())
    }

    /// After the settle time. Safety: the leader's sequence holds every
    /// acknowledged writeset. Liveness, failing the run: every member up
    /// answered every writeset of its clients, ordered or failed (the
    /// driver fails one that made no progress for its give-up time, 15 s,
    /// and all of them when it leaves the primary component; the load
    /// stops `SETTLE_MS` before the end); every node up is a synced
    /// primary member of the final view at the leader's position.
    fn finish(&mut self) -> Result<(), String> {
        let survivors: Vec<usize> = (0..self.members.len()).filter(|i| !self.crashed[*i]).collect();
        for &i in &survivors {
            if let Some((token, sent)) = self.unanswered[i].iter().next() {
                let leader = survivors.iter().copied().find(|j| self.members[*j].is_leader());
                for &j in &survivors {
                    debug_state(j, &self.members[j], leader.map(|l| &self.members[l]));
                }
                if let Some(l) = leader {
                    debug_group(&self.members[l]);
                }
                return Err(format!("node{} never answered the writeset of token {} its client sent at {} ms", i + 1, token, sent));
            }
        }
        let leader = survivors.iter().copied().find(|i| self.members[*i].is_leader() && self.members[*i].is_primary());
        let Some(leader) = leader else {
            for i in &survivors {
                debug_state(*i, &self.members[*i], None);
                debug_group(&self.members[*i]);
            }
            return Err("no primary leader after the cluster settled".into());
        };
        let top = self.members[leader].position();
        self.check.durable(&[(leader, top)])?;
        voters_agree(&self.members[leader])?;
        if self.members[leader].state().voting() {
            return Err("a consistency vote is still open after the cluster settled".into());
        }
        let view: Vec<Uuid> = self.members[leader].state().members().iter().map(|m| m.info.id).collect();
        let mut stuck = Vec::new();
        for i in survivors {
            let m = &self.members[i];
            if !view.contains(&m.id()) {
                stuck.push(format!("node{} is up but not in the final view", i + 1));
            } else if let Some(s) = self.members[leader].state().member(m.id()).map(|s| s.state).filter(|s| *s != crate::group::MemberState::Synced) {
                // Its Join or Sync was lost and never sent again: a
                // server that is never ready.
                stuck.push(format!("node{} is {:?} in the leader's group state, not Synced", i + 1, s));
                debug_state(i, m, Some(&self.members[leader]));
                debug_group(&self.members[leader]);
            } else if !m.is_primary() || m.position() != top {
                stuck.push(format!("node{} is at {} (primary: {}), the leader at {}", i + 1, m.position(), m.is_primary(), top));
                debug_state(i, m, Some(&self.members[leader]));
                debug_group(&self.members[leader]);
            }
        }
        if stuck.is_empty() {
            return Ok(());
        }
        Err(format!("after the cluster settled: {}", stuck.join("; ")))
    }
}
