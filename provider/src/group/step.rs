//! Which raft messages a member hands to raft-rs. Shared by the driver and
//! the simulator, so that the simulator tests the rule the driver runs.

use raft::prelude::{Message, MessageType};

/// Whether `m` may be stepped into a raft node whose log ends at
/// `last_index`.
///
/// A leader's heartbeat never commits past what it knows this member
/// holds. One that does was sent to this member's previous incarnation: a
/// member removed while frozen rejoins with an empty log, and the old
/// leader's heartbeats may still sit in a link it reads only now. raft-rs
/// would panic on it (commit beyond the log); dropping it is safe, as the
/// leader's next heartbeat carries what it knows of the new incarnation.
pub fn accepts(m: &Message, last_index: u64) -> bool {
    !(m.get_msg_type() == MessageType::MsgHeartbeat && m.commit > last_index)
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
    fn a_heartbeat_committing_beyond_the_log_is_dropped() {
        assert!(!accepts(&heartbeat(11140), 0));
        assert!(accepts(&heartbeat(10), 10));
        assert!(accepts(&heartbeat(0), 0));
    }

    #[test]
    fn other_messages_pass_whatever_their_commit() {
        let mut m = heartbeat(50);
        m.set_msg_type(MessageType::MsgAppend);
        assert!(accepts(&m, 0));
    }
}
