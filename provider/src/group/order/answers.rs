//! A follower's answers to appends that tell the leader nothing new.
//!
//! When a commit advances, raft-rs sends every follower an append without
//! entries that carries the new commit index, and the follower answers it
//! as it answered the entries before: "I have up to index N". Under load
//! that is every other message a follower sends, and across segments
//! (`gmcast.segment`) every such answer crosses the slow link. The leader
//! learns nothing from it: it tracks what a follower has matched, which
//! the first answer told already, and frees no window slot the first did
//! not free.
//!
//! So a follower leaves out an acceptance that repeats the last one it
//! sent the same leader in the same term, once: the repeat after it goes.
//! To the leader that is a lost message, which Raft tolerates. Should the
//! first answer have been lost too, the leader asks again (a probe, at
//! the latest on the next heartbeat's answer) and gets that second
//! repeat. Rejections always go: they start the leader's backing up.

use raft::eraftpb::MessageType;
use raft::prelude::Message;

#[derive(Debug, Default)]
pub struct Answers {
    /// The last acceptance sent: to whom (raft id), in which term, up to
    /// which index. One suffices: a follower answers one leader at a time.
    last: Option<(u64, u64, u64)>,
}

impl Answers {
    /// Whether `m` may be left out; if it goes, it is remembered.
    pub fn repeats(&mut self, m: &Message) -> bool {
        if m.get_msg_type() != MessageType::MsgAppendResponse {
            return false;
        }
        if m.reject {
            self.last = None;
            return false;
        }
        let said = Some((m.to, m.term, m.index));
        if self.last == said {
            // The next repeat goes: the one before may have been lost,
            // and the leader may be asking again (a probe).
            self.last = None;
            return true;
        }
        self.last = said;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(to: u64, term: u64, index: u64, reject: bool) -> Message {
        let mut m = Message { to, term, index, reject, ..Default::default() };
        m.set_msg_type(MessageType::MsgAppendResponse);
        m
    }

    #[test]
    fn an_acceptance_repeating_the_last_one_to_that_leader_is_left_out() {
        let mut a = Answers::default();
        assert!(!a.repeats(&answer(1, 2, 10, false)));
        assert!(a.repeats(&answer(1, 2, 10, false)), "the commit-only append's answer");
        assert!(!a.repeats(&answer(1, 2, 10, false)), "once: the first may have been lost");
        assert!(a.repeats(&answer(1, 2, 10, false)));
        assert!(!a.repeats(&answer(1, 2, 11, false)), "new entries");
        assert!(!a.repeats(&answer(3, 2, 11, false)), "another leader");
        assert!(!a.repeats(&answer(1, 3, 11, false)), "a new term");
    }

    #[test]
    fn rejections_and_other_messages_always_go() {
        let mut a = Answers::default();
        assert!(!a.repeats(&answer(1, 2, 10, false)));
        assert!(!a.repeats(&answer(1, 2, 10, true)));
        assert!(!a.repeats(&answer(1, 2, 10, true)));
        assert!(!a.repeats(&answer(1, 2, 10, false)), "after a rejection the acceptance is news");
        let mut hb = Message { to: 1, term: 2, ..Default::default() };
        hb.set_msg_type(MessageType::MsgHeartbeatResponse);
        assert!(!a.repeats(&hb) && !a.repeats(&hb));
    }
}
