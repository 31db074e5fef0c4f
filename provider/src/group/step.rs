//! What a member hands to raft-rs of a raft message it received. Called by
//! the driver, which the simulator runs, so the simulator tests this rule.

use raft::prelude::{Message, MessageType};

/// `m` as it may be stepped into a raft node whose log ends at
/// `last_index` and is committed up to `committed`.
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
pub fn admit(mut m: Message, last_index: u64, committed: u64) -> Message {
    if m.get_msg_type() == MessageType::MsgHeartbeat && m.commit > last_index {
        m.commit = committed;
    }
    m
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

    #[test]
    fn a_heartbeat_committing_beyond_the_log_commits_nothing_new() {
        assert_eq!(admit(heartbeat(11140), 0, 0).commit, 0);
        assert_eq!(admit(heartbeat(11140), 30, 20).commit, 20, "not even up to the log's end");
        assert_eq!(admit(heartbeat(10), 10, 5).commit, 10);
        assert_eq!(admit(heartbeat(0), 0, 0).commit, 0);
    }

    #[test]
    fn other_messages_pass_whatever_their_commit() {
        let mut m = heartbeat(50);
        m.set_msg_type(MessageType::MsgAppend);
        assert_eq!(admit(m, 0, 0).commit, 50);
    }
}
