//! What the reads say about each key. A list-append history shows the
//! order of a key's versions: every read returns a prefix of the one
//! list the key goes through, so the longest read is the order, and a
//! read that is not a prefix of it is an anomaly on its own. Reads also
//! say which transaction each one saw last (the writer of its last
//! value), and whether what they saw may be seen at all: a value of an
//! aborted transaction (G1a), a value its writer went on to overwrite
//! (G1b), a value nobody appended, one appended twice.

use super::history::{Key, Mop, Outcome, Txn, TxnId, Value};
use super::Anomaly;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A transaction saw the first `len` versions of `key` (its own appends
/// left out): the dependency graph's wr and rw edges come from it.
#[derive(Clone, Copy, Debug)]
pub struct Observation {
    pub txn: TxnId,
    pub key: Key,
    pub len: usize,
}

pub struct Versions {
    /// Per key, its values in the order they were appended.
    pub order: HashMap<Key, Vec<Value>>,
    /// Who appended each value.
    pub writer: HashMap<(Key, Value), TxnId>,
    pub observations: Vec<Observation>,
}

/// One committed read, and what it saw of others (its own appends to
/// the key taken off its end).
struct Read<'h> {
    txn: TxnId,
    key: Key,
    list: &'h [Value],
    external: usize,
}

pub fn infer(history: &[Txn], found: &mut Vec<Anomaly>) -> Versions {
    let mut writer = HashMap::new();
    for (id, t) in history.iter().enumerate() {
        for (k, v) in t.appends() {
            writer.entry((k, v)).or_insert(id);
        }
    }
    let reads = committed_reads(history, found);
    let order = orders(&reads, found);
    let mut observations = Vec::new();
    for r in &reads {
        let fits = order.get(&r.key).is_some_and(|o| o.starts_with(r.list));
        if fits {
            observations.push(Observation { txn: r.txn, key: r.key, len: r.external });
        }
        what_was_seen(history, &writer, r, found);
    }
    lost_updates(history, &observations, found);
    lost_appends(history, &reads, found);
    Versions { order, writer, observations }
}

/// Every read of a committed transaction, checked against the
/// transaction's own earlier reads and appends of the key (a read after
/// an append of its own must show it: else `internal`).
fn committed_reads<'h>(history: &'h [Txn], found: &mut Vec<Anomaly>) -> Vec<Read<'h>> {
    let mut reads = Vec::new();
    for (id, t) in history.iter().enumerate().filter(|(_, t)| t.outcome == Outcome::Committed) {
        let mut own: HashMap<Key, Vec<Value>> = HashMap::new();
        let mut last: HashMap<Key, Vec<Value>> = HashMap::new();
        for m in &t.mops {
            match m {
                Mop::Append(k, v) => {
                    own.entry(*k).or_default().push(*v);
                    last.entry(*k).and_modify(|l| l.push(*v));
                }
                Mop::Read(_, None) => {}
                Mop::Read(k, Some(list)) => {
                    let mine = own.get(k).map_or(&[][..], |v| v.as_slice());
                    let consistent = match last.get(k) {
                        Some(expected) => expected == list,
                        None => list.ends_with(mine),
                    };
                    if !consistent {
                        found.push(Anomaly::Internal { txn: id, key: *k, read: list.clone(), own: mine.to_vec() });
                    }
                    let external = list.len() - list.iter().rev().take_while(|v| mine.contains(v)).count();
                    reads.push(Read { txn: id, key: *k, list, external });
                    last.insert(*k, list.clone());
                }
            }
        }
    }
    reads
}

/// The longest read of each key, and every read that is not a prefix of
/// it (once per key) or holds a value twice.
fn orders(reads: &[Read], found: &mut Vec<Anomaly>) -> HashMap<Key, Vec<Value>> {
    let mut longest: HashMap<Key, &Read> = HashMap::new();
    for r in reads {
        let seen: HashSet<&Value> = r.list.iter().collect();
        if seen.len() < r.list.len() {
            let twice = r.list.iter().enumerate().find(|(i, v)| r.list[..*i].contains(v)).map(|(_, v)| *v).unwrap_or_default();
            found.push(Anomaly::DuplicateAppend { key: r.key, value: twice, reader: r.txn });
        }
        let l = longest.entry(r.key).or_insert(r);
        if r.list.len() > l.list.len() {
            *l = r;
        }
    }
    let mut reported = HashSet::new();
    for r in reads {
        let l = longest[&r.key];
        if !l.list.starts_with(r.list) && reported.insert(r.key) {
            found.push(Anomaly::IncompatibleOrder { key: r.key, reader: r.txn, read: r.list.to_vec(), longest: l.list.to_vec() });
        }
    }
    longest.into_iter().map(|(k, r)| (k, r.list.to_vec())).collect()
}

/// G1a, G1b and values nobody appended, in what one read saw.
fn what_was_seen(history: &[Txn], writer: &HashMap<(Key, Value), TxnId>, r: &Read, found: &mut Vec<Anomaly>) {
    let mut aborted_seen = HashSet::new();
    for &v in &r.list[..r.external] {
        match writer.get(&(r.key, v)) {
            None => found.push(Anomaly::GarbageRead { key: r.key, value: v, reader: r.txn }),
            Some(&w) if history[w].outcome == Outcome::Aborted && aborted_seen.insert(w) => {
                found.push(Anomaly::AbortedRead { reader: r.txn, writer: w, key: r.key, value: v })
            }
            Some(_) => {}
        }
    }
    let Some(&v) = r.list[..r.external].last() else { return };
    let Some(&w) = writer.get(&(r.key, v)) else { return };
    let later: Vec<Value> = history[w].appends().filter(|(k, _)| *k == r.key).map(|(_, x)| x).skip_while(|x| *x != v).skip(1).collect();
    if w != r.txn && !later.is_empty() && history[w].outcome != Outcome::Aborted {
        found.push(Anomaly::IntermediateRead { reader: r.txn, writer: w, key: r.key, value: v });
    }
}

/// Two committed transactions that read the same version of a key and
/// both append to it: one's append is made without the other's (P4).
fn lost_updates(history: &[Txn], observations: &[Observation], found: &mut Vec<Anomaly>) {
    let mut by_version: BTreeMap<(Key, usize), Vec<TxnId>> = BTreeMap::new();
    let mut counted = HashSet::new();
    for o in observations {
        let appends = history[o.txn].appends().any(|(k, _)| k == o.key);
        if appends && counted.insert((o.txn, o.key)) {
            by_version.entry((o.key, o.len)).or_default().push(o.txn);
        }
    }
    for ((key, len), txns) in by_version {
        if txns.len() > 1 {
            found.push(Anomaly::LostUpdate { key, read_len: len, txns });
        }
    }
}

/// A final read (after the faults healed) that lacks a value a committed
/// transaction appended before the read began.
fn lost_appends(history: &[Txn], reads: &[Read], found: &mut Vec<Anomaly>) {
    let mut appended: HashMap<Key, Vec<(Value, TxnId)>> = HashMap::new();
    for (id, t) in history.iter().enumerate().filter(|(_, t)| t.outcome == Outcome::Committed) {
        for (k, v) in t.appends() {
            appended.entry(k).or_default().push((v, id));
        }
    }
    for r in reads.iter().filter(|r| history[r.txn].final_read) {
        let began = history[r.txn].invoked;
        let held: HashSet<&Value> = r.list.iter().collect();
        for &(v, w) in appended.get(&r.key).map_or(&[][..], |a| a.as_slice()) {
            if history[w].completed.is_some_and(|c| c < began) && !held.contains(&v) {
                found.push(Anomaly::LostAppend { key: r.key, value: v, writer: w, reader: r.txn });
            }
        }
    }
}
