//! The simulator's invariants, checked as the members report:
//!
//! * agreement: every member delivers the same thing at each seqno (the
//!   same writeset from the same origin, or the same view), with no gap;
//! * certification: every member reaches the same verdict, and the verdict
//!   is the one a plain reference model of Galera's rule gives;
//! * durability: every writeset acknowledged to its client as committed is
//!   in the final sequence that the surviving members reach;
//! * one primary component: once a partition has lasted past the quorum
//!   grace, the members that say they are primary are all on one side;
//! * votes: every member that sees a consistency vote decided sees the
//!   same result;
//! * causal reads: the seqno a member answers a causal read with covers
//!   every writeset acknowledged before the read was asked (`Reads`).

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::{Receiver, TryRecvError};

use bytes::Bytes;

use crate::group::sequence::Sequence;
use crate::gtid::{Seqno, Uuid};
use crate::writeset::{KeyKind, WriteSet};

/// What a member reports to the checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    Ordered { seqno: Seqno, origin: Uuid, token: u64, ws: Bytes, pass: bool },
    View { seqno: Seqno, conf_id: i64, members: Vec<Uuid> },
    /// The member's state jumped to `seqno` (a snapshot).
    Restored { seqno: Seqno },
    /// The member starts over as a joiner (its sequence restarts).
    Rejoining,
    NonPrimary,
    /// The member failed its client's writeset (`token`: the client's).
    Failed { token: u64 },
    /// The group's consistency vote on `seqno` ended with `result`.
    Voted { seqno: Seqno, result: u64 },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Slot {
    Ws { origin: Uuid, token: u64, pass: bool },
    View { conf_id: i64, members: Vec<Uuid> },
}

#[derive(Default)]
pub struct Checker {
    slots: BTreeMap<Seqno, Slot>,
    /// Per member: the seqnos it delivered (the driver's own rule).
    sequences: HashMap<usize, Sequence>,
    /// Writesets a client was told committed: seqno, origin, token.
    pub acked: Vec<(Seqno, Uuid, u64)>,
    /// Where each client writeset (origin, token) was ordered: once at
    /// most, whatever resends, fences and leader changes did to it.
    ordered_at: HashMap<(Uuid, u64), Seqno>,
    /// Reference certification: writesets that passed, by seqno.
    passed: BTreeMap<Seqno, WriteSet>,
    /// Seqnos whose verdict was checked against the reference.
    pub certified: u64,
    pub conflicts: u64,
    /// Consistency votes decided: seqno -> result, the same on every
    /// member.
    votes: BTreeMap<Seqno, u64>,
}

impl Checker {
    pub fn note(&mut self, member: usize, note: Note) -> Result<(), String> {
        match note {
            Note::Ordered { seqno, origin, token, ws, pass } => {
                self.sequence(member, seqno)?;
                self.agree(member, seqno, Slot::Ws { origin, token, pass }, Some(ws))
            }
            Note::View { seqno, conf_id, members } => {
                self.sequence(member, seqno)?;
                self.agree(member, seqno, Slot::View { conf_id, members }, None)
            }
            Note::Restored { seqno } => {
                self.sequences.entry(member).or_default().restart(Some(seqno));
                Ok(())
            }
            Note::Rejoining => {
                self.sequences.entry(member).or_default().restart(None);
                Ok(())
            }
            Note::Voted { seqno, result } => match *self.votes.entry(seqno).or_insert(result) {
                r if r == result => Ok(()),
                r => Err(format!("node{} decided {:x} on the vote over {}, another member {:x}", member + 1, result, seqno, r)),
            },
            Note::NonPrimary | Note::Failed { .. } => Ok(()),
        }
    }

    fn sequence(&mut self, member: usize, seqno: Seqno) -> Result<(), String> {
        self.sequences.entry(member).or_default().next(seqno).map_err(|e| format!("node{} delivered {}", member + 1, e))
    }

    fn agree(&mut self, member: usize, seqno: Seqno, slot: Slot, ws: Option<Bytes>) -> Result<(), String> {
        if let Some(first) = self.slots.get(&seqno) {
            if *first != slot {
                return Err(format!("node{} delivered {:?} at seqno {}, another member {:?}", member + 1, slot, seqno, first));
            }
            return Ok(());
        }
        if let Slot::Ws { origin, token, .. } = &slot {
            if let Some(before) = self.ordered_at.insert((*origin, *token), seqno) {
                return Err(format!("the writeset of client {} from {} was ordered twice: at seqno {} and {}", token, origin, before, seqno));
            }
        }
        if let (Slot::Ws { pass, .. }, Some(bytes)) = (&slot, ws) {
            self.reference(seqno, bytes, *pass)?;
        }
        self.slots.insert(seqno, slot);
        Ok(())
    }

    /// Galera's rule on the first delivery of each seqno: for each key of
    /// the writeset and each kind, the latest writeset that passed with
    /// that key of that kind is its reference (Galera keeps one per kind:
    /// a newer one shadows older ones); the writeset fails when such a
    /// reference came after its last_seen, from another origin, and the
    /// kinds conflict.
    fn reference(&mut self, seqno: Seqno, bytes: Bytes, pass: bool) -> Result<(), String> {
        let ws = WriteSet::decode(bytes).map_err(|e| format!("seqno {}: undecodable writeset: {}", seqno, e))?;
        let conflict = self.reference_conflict(&ws, seqno);
        self.certified += 1;
        match (conflict, pass) {
            (Some(with), true) => {
                return Err(format!(
                    "seqno {} ({}) passed certification but conflicts with seqno {} ({})",
                    seqno,
                    describe(&ws),
                    with,
                    self.passed.range(ws.last_seen + 1..seqno).map(|(s, w)| format!("{} {}", s, describe(w))).collect::<Vec<_>>().join("; ")
                ))
            }
            (None, false) => return Err(format!("seqno {} failed certification without a conflict (last_seen {})", seqno, ws.last_seen)),
            (Some(_), false) => self.conflicts += 1,
            (None, true) => {
                self.passed.insert(seqno, ws);
            }
        }
        Ok(())
    }

    fn reference_conflict(&self, ws: &WriteSet, seqno: Seqno) -> Option<Seqno> {
        let mut seen: Vec<(&[Bytes], KeyKind)> = Vec::new();
        for (s, old) in self.passed.range(ws.last_seen + 1..seqno).rev() {
            for a in &old.keys {
                if seen.contains(&(&a.parts[..], a.kind)) || !ws.keys.iter().any(|b| b.parts == a.parts) {
                    continue;
                }
                seen.push((&a.parts[..], a.kind));
                let clash = ws.keys.iter().any(|b| b.parts == a.parts && kinds_conflict(a.kind, b.kind));
                if clash && old.source != ws.source {
                    return Some(*s);
                }
            }
        }
        None
    }

    /// A power cut of every member: what their disks kept reaches
    /// `upto`, the seqnos after it are in no log and are ordered anew.
    /// Returns the acknowledged writesets among those (lost), and forgets
    /// the rest of them.
    pub fn power_cut(&mut self, upto: Seqno) -> Vec<(Seqno, Uuid, u64)> {
        let beyond: Vec<Seqno> = self.slots.range(upto + 1..).map(|(s, _)| *s).collect();
        for s in beyond {
            if let Some(Slot::Ws { origin, token, .. }) = self.slots.remove(&s) {
                self.ordered_at.remove(&(origin, token));
            }
            self.passed.remove(&s);
            self.votes.remove(&s);
        }
        let (lost, kept): (Vec<_>, Vec<_>) = self.acked.drain(..).partition(|(s, _, _)| *s > upto);
        self.acked = kept;
        lost
    }

    pub fn ack(&mut self, seqno: Seqno, origin: Uuid, token: u64) {
        self.acked.push((seqno, origin, token));
    }

    /// The highest seqno acknowledged so far: what a causal read asked
    /// now must cover.
    pub fn acked_floor(&self) -> Seqno {
        self.acked.iter().map(|a| a.0).max().unwrap_or(0)
    }

    pub fn last_seqno(&self) -> Seqno {
        self.slots.keys().next_back().copied().unwrap_or(0)
    }

    /// Every acknowledged writeset is at its seqno in the sequence `member`
    /// reached (`at`).
    pub fn durable(&self, reached: &[(usize, Seqno)]) -> Result<(), String> {
        for &(member, at) in reached {
            for (seqno, origin, token) in &self.acked {
                if *seqno > at {
                    return Err(format!("writeset acknowledged at seqno {} is beyond node{}'s {}", seqno, member + 1, at));
                }
                match self.slots.get(seqno) {
                    Some(Slot::Ws { origin: o, token: t, pass: true }) if o == origin && t == token => {}
                    other => return Err(format!("acknowledged writeset at {} is lost: the sequence holds {:?}", seqno, other)),
                }
            }
        }
        Ok(())
    }
}

/// Causal reads asked and not yet answered. A read is asked of any
/// member that acts (a node would refuse one outside a primary
/// component before asking, but whatever the group layer answers must
/// hold anyway).
#[derive(Default)]
pub struct Reads {
    pending: Vec<Pending>,
    /// Reads answered and checked.
    pub answered: u64,
}

struct Pending {
    member: usize,
    answer: Receiver<Seqno>,
    /// The highest seqno acknowledged when the read was asked.
    floor: Seqno,
    asked_ms: u64,
}

/// A read unanswered this long is forgotten: its caller would have
/// asked again (`Group::read_index` retries every second).
const READ_FORGOTTEN_MS: u64 = 5_000;

/// Reads in flight per member, at most.
pub const READS_PER_MEMBER: usize = 4;

impl Reads {
    pub fn asked(&mut self, member: usize, answer: Receiver<Seqno>, floor: Seqno, now_ms: u64) {
        self.pending.push(Pending { member, answer, floor, asked_ms: now_ms });
    }

    pub fn waiting(&self, member: usize) -> usize {
        self.pending.iter().filter(|p| p.member == member).count()
    }

    /// Checks the answers that came; forgets reads whose member dropped
    /// them (a new incarnation) or that waited too long.
    pub fn check(&mut self, now_ms: u64) -> Result<(), String> {
        let mut err = None;
        let answered = &mut self.answered;
        self.pending.retain(|p| match p.answer.try_recv() {
            Ok(seqno) => {
                *answered += 1;
                if seqno < p.floor && err.is_none() {
                    err = Some(format!("node{} answered a causal read asked at {} ms with seqno {}, but seqno {} was acknowledged before it", p.member + 1, p.asked_ms, seqno, p.floor));
                }
                false
            }
            Err(TryRecvError::Disconnected) => false,
            Err(TryRecvError::Empty) => now_ms < p.asked_ms + READ_FORGOTTEN_MS,
        });
        err.map_or(Ok(()), Err)
    }

    /// A power cut: what was acknowledged beyond the logs is ordered
    /// anew (and counted lost), so the reads asked before it prove nothing.
    pub fn forget(&mut self) {
        self.pending.clear();
    }
}

/// Galera's conflict matrix (existing key, new key) for the same key.
fn kinds_conflict(existing: KeyKind, new: KeyKind) -> bool {
    use KeyKind::*;
    matches!(
        (existing, new),
        (Reference, Exclusive) | (Update, Update) | (Update, Exclusive) | (Exclusive, _)
    )
}


fn describe(ws: &WriteSet) -> String {
    let keys: Vec<String> = ws.keys.iter().map(|k| format!("{:?} {}", k.kind, String::from_utf8_lossy(k.parts.last().map_or(&[][..], |p| p)))).collect();
    format!("from {} last_seen {} keys [{}]", &ws.source.to_string()[..8], ws.last_seen, keys.join(", "))
}
