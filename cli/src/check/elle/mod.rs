//! An Elle-style checker for list-append histories, written here from
//! the published ideas (Kingsbury and Alvaro, "Elle: Inferring Isolation
//! Anomalies from Experimental Observations", VLDB 2020).
//!
//! Appends to lists make a history say more than reads of registers: a
//! read returns the whole list, so it shows the order of every version
//! before the one it saw, and that order must be one (`versions`). From
//! the orders come Adya's dependencies between transactions, plus real
//! time (`graph`); a cycle of dependencies is an anomaly, classified by
//! the edges it needs:
//!
//! | class | cycle | a system that forbids it |
//! |---|---|---|
//! | G0 | ww only | read uncommitted |
//! | G1c | ww and wr, one wr at least | read committed |
//! | G-single | exactly one rw | snapshot isolation |
//! | G-nonadjacent | two rw or more, never two in a row | snapshot isolation |
//! | G2-item | two rw or more | serializable |
//! | ...-realtime | the same with rt edges too | the strict (real-time) variant: a stale read |
//!
//! Besides cycles: G1a (a read of an aborted transaction's append), G1b
//! (a read of a value its writer went on to follow with another append
//! to the key), a lost update (two committed transactions read one
//! version of a key and both append to it), an incompatible order (a read
//! that is not a prefix of the key's order), a duplicated append, a
//! value nobody appended, a transaction that does not see its own
//! appends, and an acknowledged append missing from a final read.

pub mod graph;
pub mod history;
mod versions;
#[cfg(test)]
mod tests;

use graph::{Dep, Graph, Search, Step, Used};
use history::{Key, Shown, Txn, TxnId, Value};
use std::collections::BTreeMap;
use std::fmt::Write;

/// What snapshot isolation with real-time order across nodes (what
/// lockstep promises with `innodb_snapshot_isolation=ON` and
/// `wsrep_sync_wait=1`) allows: write skew, also where real time closes
/// the cycle. Every other kind the checker names is a broken promise.
pub const STRONG_SNAPSHOT_ISOLATION_ALLOWS: [&str; 2] = ["G2-item", "G2-item-realtime"];

/// The kinds of dependency cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    G0,
    G1c,
    GSingle,
    /// Snapshot isolation allows two rw edges in a row (write skew: each
    /// read what the other overwrote), not rw edges apart (a long fork).
    GNonadjacent,
    G2Item,
    G0Realtime,
    G1cRealtime,
    GSingleRealtime,
    GNonadjacentRealtime,
    G2ItemRealtime,
}

impl Class {
    pub const ALL: [Class; 10] = [
        Class::G0,
        Class::G1c,
        Class::GSingle,
        Class::GNonadjacent,
        Class::G2Item,
        Class::G0Realtime,
        Class::G1cRealtime,
        Class::GSingleRealtime,
        Class::GNonadjacentRealtime,
        Class::G2ItemRealtime,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::G0 => "G0",
            Class::G1c => "G1c",
            Class::GSingle => "G-single",
            Class::GNonadjacent => "G-nonadjacent",
            Class::G2Item => "G2-item",
            Class::G0Realtime => "G0-realtime",
            Class::G1cRealtime => "G1c-realtime",
            Class::GSingleRealtime => "G-single-realtime",
            Class::GNonadjacentRealtime => "G-nonadjacent-realtime",
            Class::G2ItemRealtime => "G2-item-realtime",
        }
    }

    pub fn is_realtime(self) -> bool {
        self >= Class::G0Realtime
    }

    /// rw edges the cycle has: exactly 0, exactly 1, or 2 (two or more).
    fn rw(self) -> u8 {
        match self {
            Class::G0 | Class::G1c | Class::G0Realtime | Class::G1cRealtime => 0,
            Class::GSingle | Class::GSingleRealtime => 1,
            Class::GNonadjacent | Class::GNonadjacentRealtime | Class::G2Item | Class::G2ItemRealtime => 2,
        }
    }

    /// The kinds of edge a cycle of the class may use.
    pub fn deps(self) -> &'static [Dep] {
        match self {
            Class::G0 => &[Dep::WW],
            Class::G1c => &[Dep::WW, Dep::WR],
            Class::GSingle | Class::GNonadjacent | Class::G2Item => &[Dep::WW, Dep::WR, Dep::RW],
            Class::G0Realtime => &[Dep::WW, Dep::RT],
            Class::G1cRealtime => &[Dep::WW, Dep::WR, Dep::RT],
            Class::GSingleRealtime | Class::GNonadjacentRealtime | Class::G2ItemRealtime => &[Dep::WW, Dep::WR, Dep::RW, Dep::RT],
        }
    }

    /// The edge every cycle of the class has, where its search starts.
    fn start(self) -> Dep {
        match self {
            _ if self.is_realtime() => Dep::RT,
            Class::G0 => Dep::WW,
            Class::G1c => Dep::WR,
            _ => Dep::RW,
        }
    }

    fn nonadjacent(self) -> bool {
        matches!(self, Class::GNonadjacent | Class::GNonadjacentRealtime)
    }

    /// What of a path's use the class looks at: where rw edges sit only
    /// matters to G-nonadjacent, and tracking it for the others would
    /// only multiply the states searched.
    fn project(self, u: Used) -> Used {
        match self.nonadjacent() {
            true => u,
            false => Used { rw: u.rw, wr: u.wr, rt: u.rt, ..Used::default() },
        }
    }

    /// Whether a path that used `u` can still become a cycle of the class.
    fn allows(self, u: Used) -> bool {
        let wr_allowed = !matches!(self, Class::G0 | Class::G0Realtime);
        u.rw <= self.rw() && (wr_allowed || !u.wr) && (self.is_realtime() || !u.rt) && (!self.nonadjacent() || !u.adjacent)
    }

    /// Whether a cycle that used `u` is of the class. The cycle closes
    /// from its last edge back to its first: two rw edges there are in a
    /// row too.
    fn satisfied(self, u: Used) -> bool {
        let needs_wr = matches!(self, Class::G1c | Class::G1cRealtime);
        let wraps_adjacent = self.nonadjacent() && u.first_rw && u.last_rw;
        self.allows(u) && u.rw == self.rw() && (!needs_wr || u.wr) && (!self.is_realtime() || u.rt) && !wraps_adjacent
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Anomaly {
    Cycle { class: Class, steps: Vec<Step> },
    /// G1a.
    AbortedRead { reader: TxnId, writer: TxnId, key: Key, value: Value },
    /// G1b.
    IntermediateRead { reader: TxnId, writer: TxnId, key: Key, value: Value },
    LostUpdate { key: Key, read_len: usize, txns: Vec<TxnId> },
    IncompatibleOrder { key: Key, reader: TxnId, read: Vec<Value>, longest: Vec<Value> },
    DuplicateAppend { key: Key, value: Value, reader: TxnId },
    GarbageRead { key: Key, value: Value, reader: TxnId },
    Internal { txn: TxnId, key: Key, read: Vec<Value>, own: Vec<Value> },
    LostAppend { key: Key, value: Value, writer: TxnId, reader: TxnId },
}

impl Anomaly {
    pub fn name(&self) -> &'static str {
        match self {
            Anomaly::Cycle { class, .. } => class.name(),
            Anomaly::AbortedRead { .. } => "G1a",
            Anomaly::IntermediateRead { .. } => "G1b",
            Anomaly::LostUpdate { .. } => "lost-update",
            Anomaly::IncompatibleOrder { .. } => "incompatible-order",
            Anomaly::DuplicateAppend { .. } => "duplicate-append",
            Anomaly::GarbageRead { .. } => "garbage-read",
            Anomaly::Internal { .. } => "internal",
            Anomaly::LostAppend { .. } => "lost-append",
        }
    }

    /// The transactions involved.
    pub fn txns(&self) -> Vec<TxnId> {
        match self {
            Anomaly::Cycle { steps, .. } => steps.iter().map(|s| s.0).collect(),
            Anomaly::AbortedRead { reader, writer, .. } | Anomaly::IntermediateRead { reader, writer, .. } => vec![*writer, *reader],
            Anomaly::LostAppend { writer, reader, .. } => vec![*writer, *reader],
            Anomaly::LostUpdate { txns, .. } => txns.clone(),
            Anomaly::IncompatibleOrder { reader, .. } | Anomaly::DuplicateAppend { reader, .. } | Anomaly::GarbageRead { reader, .. } => vec![*reader],
            Anomaly::Internal { txn, .. } => vec![*txn],
        }
    }

    /// What it is, in a line, then the transactions one per line.
    pub fn describe(&self, history: &[Txn]) -> String {
        let mut out = match self {
            Anomaly::Cycle { class, steps } => {
                let path: Vec<String> = steps.iter().map(|(a, d, _)| format!("T{a} -{}->", d.label())).collect();
                format!("{}: {} T{}", class.name(), path.join(" "), steps[0].0)
            }
            Anomaly::AbortedRead { reader, writer, key, value } => format!("G1a: T{reader} read {value} of key {key}, appended by T{writer}, which aborted"),
            Anomaly::IntermediateRead { reader, writer, key, value } => format!("G1b: T{reader} read key {key} ending at {value}, which T{writer} followed with another append"),
            Anomaly::LostUpdate { key, read_len, txns } => format!("lost-update: {} transactions read key {key} at its version {read_len} and appended to it", txns.len()),
            Anomaly::IncompatibleOrder { key, reader, read, longest } => format!("incompatible-order: T{reader} read key {key} as {read:?}, not a prefix of {longest:?}"),
            Anomaly::DuplicateAppend { key, value, reader } => format!("duplicate-append: T{reader} read {value} twice in key {key}"),
            Anomaly::GarbageRead { key, value, reader } => format!("garbage-read: T{reader} read {value} in key {key}, which nobody appended"),
            Anomaly::Internal { txn, key, read, own } => format!("internal: T{txn} read key {key} as {read:?} after appending {own:?} itself"),
            Anomaly::LostAppend { key, value, writer, reader } => format!("lost-append: T{writer}'s append of {value} to key {key} was acknowledged, and the final read T{reader} lacks it"),
        };
        for t in self.txns() {
            let _ = write!(out, "\n    {}", Shown(t, &history[t]));
        }
        out
    }
}

/// What the checker found: every anomaly, and how many of each kind.
#[derive(Debug, Default)]
pub struct Report {
    pub anomalies: Vec<Anomaly>,
    /// Classes whose search a component's size cut short, with that
    /// size: not found there, and not shown absent either.
    pub stopped: Vec<(Class, usize)>,
}

impl Report {
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for a in &self.anomalies {
            *counts.entry(a.name()).or_default() += 1;
        }
        counts
    }

    /// The kinds found, as `G-single 3, lost-update 1`, or `none`, then
    /// the searches cut short.
    pub fn summary(&self) -> String {
        let counts = self.counts();
        let found = match counts.is_empty() {
            true => "none".into(),
            false => counts.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", "),
        };
        let stopped: Vec<String> = self.stopped.iter().map(|(c, n)| format!("{} in {n} transactions", c.name())).collect();
        match stopped.is_empty() {
            true => found,
            false => format!("{found} (search cut short: {})", stopped.join(", ")),
        }
    }

    /// Up to `per_kind` examples of each kind, described.
    pub fn examples(&self, history: &[Txn], per_kind: usize) -> String {
        let mut shown: BTreeMap<&str, usize> = BTreeMap::new();
        let mut out = String::new();
        for a in &self.anomalies {
            let n = shown.entry(a.name()).or_default();
            if *n < per_kind {
                *n += 1;
                let _ = writeln!(out, "{}", a.describe(history));
            }
        }
        out
    }
}

/// Checks a history.
pub fn check(history: &[Txn]) -> Report {
    let mut anomalies = Vec::new();
    let versions = versions::infer(history, &mut anomalies);
    let graph = Graph::build(history, &versions);
    let mut stopped = Vec::new();
    for class in Class::ALL {
        for component in graph.components(class.deps()) {
            match graph.cycle(&component, class) {
                Search::Found(steps) => anomalies.push(Anomaly::Cycle { class, steps }),
                Search::None => {}
                Search::Stopped => stopped.push((class, component.len())),
            }
        }
    }
    Report { anomalies, stopped }
}
