//! The node's state as operators and mtr tests see it
//! (`wsrep_local_state`, `wsrep_local_state_comment`), derived from the
//! connection and from the group's record of this member.

use crate::group::MemberState;

/// Galera's replicator states (contract §10.1).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NodeState {
    /// Not connected (before `connect`, after `disconnect`).
    Closed,
    /// Connected but not in a primary component.
    Connected,
    /// In a primary component, waiting for (or receiving) a state transfer.
    Joining,
    Joined,
    Synced,
    /// Desynced: donor, `wsrep_desync`, FTWRL.
    Donor,
}

impl NodeState {
    /// The state when this node is in a primary component and the group
    /// records `member`.
    pub fn in_primary(member: MemberState) -> NodeState {
        match member {
            MemberState::Joiner => NodeState::Joining,
            MemberState::Donor => NodeState::Donor,
            MemberState::Joined => NodeState::Joined,
            MemberState::Synced => NodeState::Synced,
        }
    }

    /// `wsrep_local_state`: wsrep_member_status_t values.
    pub fn local_state(self) -> i64 {
        match self {
            NodeState::Closed | NodeState::Connected => 0,
            NodeState::Joining => 1,
            NodeState::Donor => 2,
            NodeState::Joined => 3,
            NodeState::Synced => 4,
        }
    }

    /// `wsrep_local_state_comment`: mtr tests match these strings exactly.
    pub fn comment(self, receiving_sst: bool) -> &'static str {
        match self {
            NodeState::Closed | NodeState::Connected => "Initialized",
            NodeState::Joining if receiving_sst => "Joining: receiving State Transfer",
            NodeState::Joining => "Joining",
            NodeState::Donor => "Donor/Desynced",
            NodeState::Joined => "Joined",
            NodeState::Synced => "Synced",
        }
    }

    /// Whether local transactions may replicate (Galera: state >= JOINED).
    pub fn can_replicate(self) -> bool {
        matches!(self, NodeState::Joined | NodeState::Synced | NodeState::Donor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_galeras() {
        assert_eq!(NodeState::in_primary(MemberState::Synced).comment(false), "Synced");
        assert_eq!(NodeState::in_primary(MemberState::Donor).comment(false), "Donor/Desynced");
        assert_eq!(NodeState::Connected.comment(false), "Initialized");
        assert_eq!(NodeState::Joining.comment(true), "Joining: receiving State Transfer");
        assert_eq!(NodeState::Donor.local_state(), 2);
        assert!(!NodeState::Joining.can_replicate());
    }
}
