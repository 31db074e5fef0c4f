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
        let outcome = match t.outcome {
            Outcome::Committed => "committed",
            Outcome::Aborted => "aborted",
            Outcome::Unknown => "unknown",
        };
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
