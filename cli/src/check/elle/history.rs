//! A list-append history: transactions of appends to and reads of lists,
//! each with the client that ran it, when it began and ended, and how it
//! ended. Times are microseconds since the history began.

use std::fmt;

pub type Key = u64;
pub type Value = u64;
/// A transaction's index in its history.
pub type TxnId = usize;

/// A micro-operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mop {
    /// Appends the value (unique per key) to the key's list.
    Append(Key, Value),
    /// Reads the key's list; `None` until the server answered.
    Read(Key, Option<Vec<Value>>),
}

impl Mop {
    pub fn key(&self) -> Key {
        match self {
            Mop::Append(k, _) | Mop::Read(k, _) => *k,
        }
    }
}

/// How a transaction ended, as its client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server said it committed.
    Committed,
    /// The server said it did not (a deadlock, a certification
    /// conflict, a lock wait timeout...): none of its effects may show.
    Aborted,
    /// The answer never came (the connection broke): it may or may not
    /// have committed.
    Unknown,
}

impl Outcome {
    /// As histories show and store it.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Committed => "committed",
            Outcome::Aborted => "aborted",
            Outcome::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Txn {
    /// The client (one connection) that ran it; a client runs one
    /// transaction at a time.
    pub process: usize,
    /// The node the client talks to.
    pub node: usize,
    pub invoked: u64,
    /// None when the outcome is unknown.
    pub completed: Option<u64>,
    pub outcome: Outcome,
    pub mops: Vec<Mop>,
    /// A read of every key after the faults healed: an acknowledged
    /// append missing from it is lost.
    pub final_read: bool,
}

impl Txn {
    pub fn committed(process: usize, invoked: u64, completed: u64, mops: Vec<Mop>) -> Txn {
        Txn { process, node: 0, invoked, completed: Some(completed), outcome: Outcome::Committed, mops, final_read: false }
    }

    pub fn appends(&self) -> impl Iterator<Item = (Key, Value)> + '_ {
        self.mops.iter().filter_map(|m| match m {
            Mop::Append(k, v) => Some((*k, *v)),
            Mop::Read(..) => None,
        })
    }
}

/// `T12 (node 2, client 5, committed) [r 3 [1 2], a 3 4]`.
pub struct Shown<'h>(pub TxnId, pub &'h Txn);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.1;
        let outcome = t.outcome.label();
        write!(f, "T{} (node {}, client {}, {outcome}, {:.3}-{} s) [", self.0, t.node, t.process, t.invoked as f64 / 1e6, t.completed.map_or("?".to_string(), |c| format!("{:.3}", c as f64 / 1e6)))?;
        for (i, m) in t.mops.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            match m {
                Mop::Append(k, v) => write!(f, "a {k} {v}")?,
                Mop::Read(k, None) => write!(f, "r {k} ?")?,
                Mop::Read(k, Some(vs)) => write!(f, "r {k} {vs:?}")?,
            }
        }
        write!(f, "]")
    }
}

/// A history on disk: a transaction per line, as JSON, so that a
/// history can be checked again (`lockstep check history`) by a later
/// checker, or read by another tool.
/// `{"process":5,"node":2,"invoked":12,"completed":40,"outcome":"committed","final":false,"mops":[["r",3,[1,2]],["a",3,4]]}`
pub fn to_json_lines(history: &[Txn]) -> String {
    use serde_json::{json, Value as Json};
    let mut out = String::new();
    for t in history {
        let mops: Vec<Json> = t
            .mops
            .iter()
            .map(|m| match m {
                Mop::Append(k, v) => json!(["a", k, v]),
                Mop::Read(k, vs) => json!(["r", k, vs]),
            })
            .collect();
        let outcome = t.outcome.label();
        let line = json!({"process": t.process, "node": t.node, "invoked": t.invoked, "completed": t.completed, "outcome": outcome, "final": t.final_read, "mops": mops});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// Reads what `to_json_lines` wrote; the error names the line.
pub fn from_json_lines(text: &str) -> Result<Vec<Txn>, String> {
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| txn_from_json(l).map_err(|e| format!("line {}: {e}", i + 1))).collect()
}

fn txn_from_json(line: &str) -> Result<Txn, String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let num = |name: &str| v[name].as_u64().ok_or_else(|| format!("{name}: expected a number"));
    let outcome = [Outcome::Committed, Outcome::Aborted, Outcome::Unknown]
        .into_iter()
        .find(|o| v["outcome"].as_str() == Some(o.label()))
        .ok_or("outcome: expected committed, aborted or unknown")?;
    let mops = v["mops"].as_array().ok_or("mops: expected a list")?.iter().map(mop_from_json).collect::<Result<_, _>>()?;
    Ok(Txn { process: num("process")? as usize, node: num("node")? as usize, invoked: num("invoked")?, completed: v["completed"].as_u64(), outcome, mops, final_read: v["final"].as_bool().unwrap_or(false) })
}

fn mop_from_json(m: &serde_json::Value) -> Result<Mop, String> {
    let bad = || format!("{m}: expected [\"a\", key, value] or [\"r\", key, [values] or null]");
    let key = m[1].as_u64().ok_or_else(bad)?;
    match m[0].as_str() {
        Some("a") => Ok(Mop::Append(key, m[2].as_u64().ok_or_else(bad)?)),
        Some("r") if m[2].is_null() => Ok(Mop::Read(key, None)),
        Some("r") => Ok(Mop::Read(key, Some(m[2].as_array().ok_or_else(bad)?.iter().map(|x| x.as_u64().ok_or_else(bad)).collect::<Result<_, _>>()?))),
        _ => Err(bad()),
    }
}
