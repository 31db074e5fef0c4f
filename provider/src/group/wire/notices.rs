//! The small messages members send beside Raft's, and the identity of a
//! primary component they carry: flow control's STOP and CONT, a
//! follower's word on its leader (see `cut_off`), the leader's weighted
//! commit index (see `weights`).

use crate::gtid::{Seqno, Uuid};

/// What the local member asks of the group.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Signal {
    Stop,
    Cont,
}

/// A follower's word on its leader, sent with each lag report
/// (`Frame::Leader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaderWord {
    /// The leader's raft id.
    pub leader: u64,
    pub term: u64,
    /// How long the sender had not heard the leader when it sent this.
    pub silent_ms: u32,
}

/// What the leader tells the members every tick while weights differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitNotice {
    pub term: u64,
    /// The weighted commit index.
    pub index: u64,
    /// Whether the leader hears members weighing more than half.
    pub primary: bool,
    /// The sender's component (None from an older build, or not known):
    /// an index means nothing in another component's log.
    pub component: Option<Component>,
}

impl CommitNotice {
    /// Whether this notice is about the log of component `ours`: both
    /// known and different means another group's log (a member of the
    /// group a heavy member left by reforming, or the reformed one).
    pub fn about(&self, ours: Option<Component>) -> bool {
        match (self.component, ours) {
            (Some(theirs), Some(ours)) => theirs == ours,
            _ => true,
        }
    }
}

/// A primary component's identity: who bootstrapped it (or formed it again
/// alone, `reform`) and at which seqno. No member bootstraps twice at one
/// seqno, since the bootstrap's view consumes the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Component {
    pub former: Uuid,
    pub from: Seqno,
}

impl Component {
    /// Its wire form (24 bytes), in snapshots and commit notices alike.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.former.0);
        out.extend_from_slice(&self.from.to_le_bytes());
    }

    pub fn decode(r: &mut crate::wire::Reader<'_>) -> Result<Component, crate::wire::WireError> {
        Ok(Component { former: r.uuid()?, from: r.u64()? as Seqno })
    }
}
