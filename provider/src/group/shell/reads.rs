//! Causal reads (`wsrep_sync_wait`): the seqno a read waits for covers
//! everything acknowledged anywhere before the read began.
//!
//! Not only what the leader knows committed: a follower that commits
//! ahead (`commit_ahead`) acknowledges an entry as soon as it has stored
//! it, before the leader has counted its answer. So what a read waits for
//! is the leader's last index when it took the question, which holds
//! every entry anyone may have acknowledged (the leader made them all, or,
//! of earlier terms, holds them: Raft's leader completeness). The
//! simulator's causal-read check found answers one seqno short of an
//! acknowledged writeset in 41 of 1,000 seeds when this was the commit
//! index (issue 52).
//!
//! Raft's ReadIndex confirms the leader: the asker's question goes to the
//! leader, which confirms with a heartbeat round to a quorum that it still
//! leads, then answers (with its commit index, which `raise_read_answers`
//! raises to the floor noted when the question came). That is four messages, and on a
//! loaded leader each waits for its threads to be scheduled: on node 2
//! of the freshness benchmark the round was 11-19 ms of the reads' p99
//! of 24-38 ms (issue 52).
//!
//! A follower that with its leader makes a quorum (three voters or
//! fewer, see `commit_ahead::with_leader_a_quorum`) needs no heartbeat
//! round: it asks the leader for its last index (`Frame::ReadAsk`) and
//! takes the answer if it is still in the term and under the leader it
//! asked in. Why that is enough: a writeset acknowledged before the read
//! began is in an entry of some term Tc. Tc above the asked term T is
//! impossible: a leader of Tc needs the vote of the asker or of the
//! leader of T, and neither ever was in Tc (the asker was in T when it
//! asked and when the answer came, the leader led T when it answered).
//! Tc equal to T: the leader of T made the entry, before it answered. Tc
//! below T: the entry was committed, so it is in the leader's log.
//! Both must have stored the same last configuration change, which the
//! asker has applied, so that the quorum counted is the leader's. A
//! leader of an older build does not announce `FEATURE_READ_ASK`:
//! ReadIndex, and it answers with its commit index alone.

use std::sync::mpsc::Sender;

use raft::eraftpb::{Message, MessageType};
use raft::StateRole;

use super::commit_ahead::with_leader_a_quorum;
use super::driver::Driver;
use crate::group::wire::frame::{Frame, ReadAnswer};
use crate::gtid::Seqno;
use crate::transport::handshake::FEATURE_READ_ASK;

/// Reads waiting for an answer, per list: beyond it the oldest half is
/// dropped, and their callers ask again (see `Group::read_index`).
const MAX_WAITING: usize = 4096;

/// A read's question to the leader, waiting for the answer.
pub(in crate::group) struct Asked {
    id: u64,
    term: u64,
    leader: u64,
    reply: Sender<Seqno>,
}

impl Driver {
    /// A causal read's question: to the leader, or through Raft's ReadIndex.
    pub(super) fn ask_read(&mut self, reply: Sender<Seqno>) {
        let id = self.next_read;
        self.next_read += 1;
        let raft = &self.incarnation.raw.raft;
        let (term, leader) = (raft.term, raft.leader_id);
        // A question of an earlier term gets no answer that counts: its
        // caller hears at once, and asks again.
        self.incarnation.reads_asked_leader.retain(|a| a.term == term);
        if with_leader_a_quorum(raft, self.incarnation.conf_stored) && self.net.has_feature(leader, FEATURE_READ_ASK) {
            bound(&mut self.incarnation.reads_asked_leader);
            self.incarnation.reads_asked_leader.push(Asked { id, term, leader, reply });
            return self.send_frame([leader], &Frame::ReadAsk { id, term });
        }
        self.ask_raft(id, reply);
    }

    fn ask_raft(&mut self, id: u64, reply: Sender<Seqno>) {
        let ctx = self.read_context(id);
        self.note_read_floor(&ctx);
        self.incarnation.raw.read_index(ctx);
        bound(&mut self.incarnation.reads_asked);
        self.incarnation.reads_asked.push((id, reply));
    }

    /// The leader's side: its last index, if it leads `term`; else 0.
    pub(super) fn on_read_ask(&mut self, from: u64, id: u64, term: u64) {
        let raft = &self.incarnation.raw.raft;
        let leads = raft.state == StateRole::Leader && raft.term == term;
        let index = if leads { raft.raft_log.last_index() } else { 0 };
        let answer = ReadAnswer { id, term: raft.term, index, conf_stored: self.incarnation.conf_stored };
        self.send_frame([from], &Frame::ReadAnswer(answer));
    }

    /// A leader takes a ReadIndex question (its own, or a follower's in
    /// `MsgReadIndex`): the answer must cover its last index now.
    pub(super) fn note_read_floor(&mut self, ctx: &[u8]) {
        let raft = &self.incarnation.raw.raft;
        if raft.state != StateRole::Leader {
            return;
        }
        let last = raft.raft_log.last_index();
        bound(&mut self.incarnation.read_floors);
        self.incarnation.read_floors.push((ctx.to_vec(), last));
    }

    fn take_read_floor(&mut self, ctx: &[u8]) -> u64 {
        let floors = &mut self.incarnation.read_floors;
        floors.iter().position(|(c, _)| c == ctx).map_or(0, |i| floors.swap_remove(i).1)
    }

    /// The leader's ReadIndex answers to followers, raised to the floor
    /// noted when each question came.
    pub(super) fn raise_read_answers(&mut self, msgs: &mut [Message]) {
        for m in msgs.iter_mut().filter(|m| m.get_msg_type() == MessageType::MsgReadIndexResp) {
            let Some(ctx) = m.entries.first().map(|e| e.data.clone()) else { continue };
            m.index = m.index.max(self.take_read_floor(&ctx));
        }
    }

    /// The asker's side: the read waits for the leader's last index if
    /// nothing it rests on moved meanwhile (see the module's head), else
    /// it goes through ReadIndex.
    pub(super) fn on_read_answer(&mut self, from: u64, a: ReadAnswer) {
        let asked = &mut self.incarnation.reads_asked_leader;
        let Some(i) = asked.iter().position(|q| q.id == a.id && q.leader == from) else { return };
        let q = asked.swap_remove(i);
        let raft = &self.incarnation.raw.raft;
        let conf_stored = self.incarnation.conf_stored;
        let holds = a.index > 0
            && a.term == q.term
            && (raft.term, raft.leader_id) == (q.term, q.leader)
            && a.conf_stored == conf_stored
            && with_leader_a_quorum(raft, conf_stored);
        if !holds {
            return self.ask_raft(q.id, q.reply);
        }
        self.counters.reads_by_leader.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.incarnation.reads_ready.push((a.index, q.reply));
        self.answer_reads();
    }

    /// A read's context must be unique in the whole group: the leader
    /// keeps pending reads by context and silently drops a duplicate, so a
    /// per-member counter alone would let two members' reads collide.
    fn read_context(&self, id: u64) -> Vec<u8> {
        let mut ctx = self.me.id.0.to_vec();
        ctx.extend_from_slice(&id.to_le_bytes());
        ctx
    }

    pub(super) fn take_read_states(&mut self, states: Vec<raft::ReadState>) {
        for rs in states {
            let ctx = rs.request_ctx.as_slice();
            if ctx.len() != 24 || ctx[..16] != self.me.id.0 {
                continue;
            }
            let id = u64::from_le_bytes(ctx[16..].try_into().expect("8 bytes"));
            // This member's own question, while it leads: its floor.
            let index = rs.index.max(self.take_read_floor(&rs.request_ctx));
            if let Some(i) = self.incarnation.reads_asked.iter().position(|(r, _)| *r == id) {
                let (_, reply) = self.incarnation.reads_asked.swap_remove(i);
                self.incarnation.reads_ready.push((index, reply));
            }
        }
        self.answer_reads();
    }

    /// A read is answered with the seqno assigned when the applied index
    /// reached the read index: everything ordered before the read.
    pub(super) fn answer_reads(&mut self) {
        let applied = self.incarnation.raw.raft.raft_log.applied;
        let seqno = self.state.seqno();
        self.incarnation.reads_ready.retain(|(index, reply)| {
            if *index > applied {
                return true;
            }
            let _ = reply.send(seqno);
            false
        });
    }
}

/// Keeps a list of waiting reads bounded: their callers time out and ask
/// again, so the oldest may go.
fn bound<T>(list: &mut Vec<T>) {
    if list.len() >= MAX_WAITING {
        list.drain(..MAX_WAITING / 2);
    }
}
