//! What a member hands to raft-rs of a raft message it received. Called by
//! the driver, which the simulator runs, so the simulator tests this rule.

use raft::prelude::{Message, MessageType};
use raft::{RawNode, Storage};

/// `m` as it may be stepped into a raft node whose log ends at
/// `last_index` and is committed up to `committed`; None: not at all.
///
/// A member removed and joining again starts an empty log under the same
/// raft id. Until that log reaches `vote_floor` (what its previous
/// incarnation knew committed, and its removal), it answers no vote
/// request: a member behind its removal still counts it as a voter, and
/// its previous incarnation acknowledged entries that helped commit them
/// (entries it acknowledged without learning they were committed are
/// not covered: a narrower window, left open). An empty log
/// voting for a candidate without them lost committed entries: the new
/// leader's appends then conflicted with a member's committed log and
/// raft-rs panicked (simulator seed 5557 with lag reports: a member
/// removed by a leader back from a freeze, elected leader itself before
/// it applied its removal, rejoined and voted at once).
///
/// A leader's heartbeat never commits past what it believes this member
/// holds. One that does was meant for this member's previous incarnation:
/// a member removed while frozen rejoins with an empty log, and either the
/// old leader's heartbeats still sit in a link it reads only now, or a
/// late answer of the old incarnation has set the leader's progress for
/// the new one (raft-rs's progress has no notion of incarnation). raft-rs
/// would panic on such a commit (beyond the log). Dropping the heartbeat
/// is not enough: in the second case every heartbeat is like this, the
/// member never answers, the leader never learns it must send a snapshot,
/// and the member stays a joiner for good (simulator seed 1799). So the
/// heartbeat is kept with a commit that advances nothing: the member
/// answers, and the leader's next append finds where its log really ends.
pub fn admit(mut m: Message, last_index: u64, committed: u64, vote_floor: u64) -> Option<Message> {
    let vote = matches!(m.get_msg_type(), MessageType::MsgRequestVote | MessageType::MsgRequestPreVote);
    if vote && last_index < vote_floor {
        return None;
    }
    if m.get_msg_type() == MessageType::MsgHeartbeat && m.commit > last_index {
        m.commit = committed;
    }
    Some(m)
}

/// Steps a peer's message into `raw`; a ReadIndex answer commits nothing.
///
/// raft-rs commits a follower up to a read answer's index, taking it for
/// the leader's commit index. Ours may be raised to the leader's last
/// index (see `reads.rs` `raise_read_answers`): entries no quorum may hold
/// yet. A follower of five voters committed and applied such an entry and
/// the next leader overwrote it (simulator seed 15017). Commits come from
/// appends and heartbeats.
pub fn step_peer<S: Storage>(raw: &mut RawNode<S>, m: Message) -> raft::Result<()> {
    let committed = raw.raft.raft_log.committed;
    let read_answer = m.get_msg_type() == MessageType::MsgReadIndexResp;
    let stepped = raw.step(m);
    if read_answer {
        raw.raft.raft_log.committed = committed;
    }
    stepped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heartbeat(commit: u64) -> Message {
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgHeartbeat);
        m.commit = commit;
        m
    }

    fn commit_of(m: Message, last_index: u64, committed: u64) -> u64 {
        admit(m, last_index, committed, 0).expect("admitted").commit
    }

    #[test]
    fn a_heartbeat_committing_beyond_the_log_commits_nothing_new() {
        assert_eq!(commit_of(heartbeat(11140), 0, 0), 0);
        assert_eq!(commit_of(heartbeat(11140), 30, 20), 20, "not even up to the log's end");
        assert_eq!(commit_of(heartbeat(10), 10, 5), 10);
        assert_eq!(commit_of(heartbeat(0), 0, 0), 0);
    }

    #[test]
    fn other_messages_pass_whatever_their_commit() {
        let mut m = heartbeat(50);
        m.set_msg_type(MessageType::MsgAppend);
        assert_eq!(commit_of(m, 0, 0), 50);
    }

    #[test]
    fn a_log_short_of_the_previous_incarnations_answers_no_vote_request() {
        for t in [MessageType::MsgRequestVote, MessageType::MsgRequestPreVote] {
            let mut m = Message::default();
            m.set_msg_type(t);
            assert!(admit(m.clone(), 812, 800, 856).is_none(), "{:?} before the log reached the floor", t);
            assert!(admit(m.clone(), 856, 850, 856).is_some());
            assert!(admit(m, 0, 0, 0).is_some(), "no floor: a member never removed votes");
        }
        let mut append = Message::default();
        append.set_msg_type(MessageType::MsgAppend);
        assert!(admit(append, 0, 0, 856).is_some(), "the log must be able to grow");
    }

    /// A follower of five voters (no commit-ahead) holding entries 1-3
    /// of which it knows 1 committed.
    fn five_voter_follower() -> RawNode<raft::storage::MemStorage> {
        let storage = raft::storage::MemStorage::new_with_conf_state((vec![1, 2, 3, 4, 5], vec![]));
        let cfg = raft::Config { id: 2, ..Default::default() };
        let logger = slog::Logger::root(slog::Discard, slog::o!());
        let mut raw = RawNode::new(&cfg, storage, &logger).expect("raft node");
        let mut append = Message::default();
        append.set_msg_type(MessageType::MsgAppend);
        (append.from, append.to, append.term, append.commit) = (1, 2, 1, 1);
        append.entries = (1..=3).map(|index| raft::prelude::Entry { index, term: 1, ..Default::default() }).collect::<Vec<_>>().into();
        step_peer(&mut raw, append).expect("append stepped");
        assert_eq!((raw.raft.raft_log.last_index(), raw.raft.raft_log.committed), (3, 1));
        raw
    }

    /// The leader's answer to this follower's read, raised to index 3.
    fn raised_read_answer() -> Message {
        let mut answer = Message::default();
        answer.set_msg_type(MessageType::MsgReadIndexResp);
        (answer.from, answer.to, answer.term, answer.index) = (1, 2, 1, 3);
        answer.entries = vec![raft::prelude::Entry { data: b"read".to_vec().into(), ..Default::default() }].into();
        answer
    }

    #[test]
    fn a_read_answer_raised_to_the_leaders_last_index_commits_nothing() {
        let mut raw = five_voter_follower();
        step_peer(&mut raw, raised_read_answer()).expect("answer stepped");
        assert_eq!(raw.raft.raft_log.committed, 1, "entries 2-3 may be on no quorum of five");
        assert_eq!(raw.raft.read_states.last().map(|r| r.index), Some(3), "the read itself is answered");
    }

    #[test]
    fn a_heartbeat_still_commits_after_a_read_answer() {
        let mut raw = five_voter_follower();
        step_peer(&mut raw, raised_read_answer()).expect("answer stepped");
        let mut beat = heartbeat(3);
        (beat.from, beat.to, beat.term) = (1, 2, 1);
        step_peer(&mut raw, beat).expect("heartbeat stepped");
        assert_eq!(raw.raft.raft_log.committed, 3);
    }
}
