//! The group state inside a Raft snapshot (what a joiner restores).
//!
//! ```text
//! version u8 (1) | history 16 | seqno i64 | conf_id i64 | member count u32
//! | (member | state u8 | desync u32 | roles u8 | weight u32)* | fenced count u32 | (uuid 16 | token u64)*
//! | known u8 | (former 16 | from i64 if known) | votes (see `vote`)
//! ```
//!
//! Version 3 added the component (optional: a state bootstrapped before it
//! existed has none), version 4 the last vote decided, version 5 the
//! arbitrator bit in `roles` (bit 0: voter, bit 1: arbitrator; before it,
//! any non-zero byte was a voter). Bit 2 of `roles`, in version 5 too: a
//! joiner's donor was chosen (builds before it ignore the bit). Version 2
//! snapshots still restore.

use super::{GroupState, Member, MemberState};
use crate::group::wire::entry::{decode_member, encode_member};
use crate::wire::{Reader, WireError};
use crate::gtid::Uuid;

// 2: members carry their weight. 3: the component. 4: votes. 5: arbitrators.
const VERSION: u8 = 5;
const VOTER: u8 = 1;
const ARBITRATOR: u8 = 2;
const DONOR_CHOSEN: u8 = 4;
const STATELESS: u8 = 8;
const OLDEST: u8 = 2;

fn state_byte(s: MemberState) -> u8 {
    match s {
        MemberState::Joiner => 1,
        MemberState::Donor => 2,
        MemberState::Joined => 3,
        MemberState::Synced => 4,
    }
}

fn state_of(b: u8) -> Result<MemberState, WireError> {
    Ok(match b {
        1 => MemberState::Joiner,
        2 => MemberState::Donor,
        3 => MemberState::Joined,
        4 => MemberState::Synced,
        t => return Err(WireError::Tag(t)),
    })
}

impl GroupState {
    pub fn encode(&self) -> Vec<u8> {
        assert!(self.may_snapshot(), "a snapshot with writesets half assembled");
        // Version 4 while no member is an arbitrator or a served joiner
        // (version 4 read any non-zero roles byte as a voter): members of
        // older builds restore it, so a rolling upgrade of a cluster
        // without garbd seldom meets a snapshot it cannot read.
        let v5 = self.members.iter().any(|m| m.info.arbitrator || m.info.stateless || m.donor_chosen);
        let mut out = vec![if v5 { VERSION } else { VERSION - 1 }];
        out.extend_from_slice(&self.history.0);
        out.extend_from_slice(&self.seqno.to_le_bytes());
        out.extend_from_slice(&self.conf_id.to_le_bytes());
        out.extend_from_slice(&(self.members.len() as u32).to_le_bytes());
        for m in &self.members {
            encode_member(&m.info, &mut out);
            out.push(state_byte(m.state));
            out.extend_from_slice(&m.desync_count.to_le_bytes());
            // Version 4 read any non-zero byte as a voter.
            let bit = |on: bool, bit: u8| if on { bit } else { 0 };
            out.push(bit(m.voter, VOTER) | bit(m.info.arbitrator, ARBITRATOR) | bit(m.donor_chosen, DONOR_CHOSEN) | bit(m.info.stateless, STATELESS));
            out.extend_from_slice(&m.weight.to_le_bytes());
        }
        out.extend_from_slice(&(self.fenced.len() as u32).to_le_bytes());
        for (origin, token) in &self.fenced {
            out.extend_from_slice(&origin.0);
            out.extend_from_slice(&token.to_le_bytes());
        }
        out.push(self.component.is_some() as u8);
        if let Some(c) = self.component {
            c.encode(&mut out);
        }
        self.votes.encode(&mut out);
        out
    }

    /// The state a snapshot carries, seen from member `me`.
    pub fn decode(me: Uuid, buf: &[u8]) -> Result<GroupState, WireError> {
        let mut r = Reader::new(buf);
        let version = r.u8()?;
        if !(OLDEST..=VERSION).contains(&version) {
            return Err(WireError::Version(version));
        }
        let mut g = GroupState::new(me);
        g.history = r.uuid()?;
        g.seqno = r.u64()? as i64;
        g.conf_id = r.u64()? as i64;
        for _ in 0..r.u32()? {
            let mut info = decode_member(&mut r)?;
            let state = state_of(r.u8()?)?;
            let desync_count = r.u32()?;
            let roles = r.u8()?;
            let voter = if version >= 5 { roles & VOTER != 0 } else { roles != 0 };
            info.arbitrator = version >= 5 && roles & ARBITRATOR != 0;
            info.stateless = version >= 5 && roles & STATELESS != 0;
            let donor_chosen = version >= 5 && roles & DONOR_CHOSEN != 0;
            let weight = r.u32()?;
            g.members.push(Member { info, state, desync_count, voter, weight, donor_chosen });
        }
        for _ in 0..r.u32()? {
            let origin = r.uuid()?;
            g.fenced.insert(origin, r.u64()?);
        }
        if version >= 3 && r.u8()? != 0 {
            g.component = Some(super::Component::decode(&mut r)?);
        }
        if version >= 4 {
            g.votes = super::vote::Votes::decode(&mut r)?;
        }
        r.end()?;
        Ok(g)
    }
}

