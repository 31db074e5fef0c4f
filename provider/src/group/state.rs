//! The group's deterministic state: applied to the committed log in order on
//! every member, it assigns global seqnos and tracks membership and member
//! states (Galera's GCS group). No clocks, threads or I/O here: the
//! simulator drives it directly.

use bytes::Bytes;

use super::entry::{Entry, MemberInfo, Transition};
use crate::gtid::{Seqno, Uuid};

/// A member's state as the group records it (Galera's member status).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MemberState {
    /// Waiting for a state transfer.
    Joiner,
    /// Desynced: donating state, `wsrep_desync`, FTWRL. Does not throttle
    /// the group.
    Donor,
    /// Has a complete state, catching up with its backlog.
    Joined,
    Synced,
}

#[derive(Clone, Debug)]
pub struct Member {
    pub info: MemberInfo,
    pub state: MemberState,
    /// Desyncs stack (a donor can also be desynced by the user).
    pub desync_count: u32,
}

/// A configuration as the server sees it in `view_cb`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct View {
    pub history: Uuid,
    /// The view's state id seqno: a primary view consumes a seqno; a
    /// non-primary one repeats the last one.
    pub seqno: Seqno,
    /// `wsrep_cluster_conf_id`; -1 for a non-primary view.
    pub conf_id: i64,
    pub primary: bool,
    pub members: Vec<MemberInfo>,
    /// This node's index in `members`, -1 when not in it.
    pub my_idx: i32,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum GroupEvent {
    Ordered { seqno: Seqno, origin: Uuid, token: u64, payload: Bytes },
    View(View),
    MemberState { member: Uuid, state: MemberState, desync_count: u32 },
    /// A local proposal will never be ordered (no leader would take it).
    ProposalFailed { token: u64 },
}

#[derive(Debug)]
pub struct GroupState {
    me: Uuid,
    history: Uuid,
    seqno: Seqno,
    conf_id: i64,
    members: Vec<Member>,
}

impl GroupState {
    pub fn new(me: Uuid) -> GroupState {
        GroupState { me, history: Uuid::NIL, seqno: -1, conf_id: 0, members: Vec::new() }
    }

    pub fn history(&self) -> Uuid {
        self.history
    }

    /// Last seqno assigned.
    pub fn seqno(&self) -> Seqno {
        self.seqno
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, id: Uuid) -> Option<&Member> {
        self.members.iter().find(|m| m.info.id == id)
    }

    pub fn is_primary(&self) -> bool {
        !self.history.is_nil()
    }

    /// Applies one committed entry; what the node must learn goes to `out`.
    pub fn apply(&mut self, entry: Entry, out: &mut Vec<GroupEvent>) {
        match entry {
            Entry::Ordered { origin, token, payload } => {
                if !self.is_primary() {
                    return; // nothing is ordered before a primary component exists
                }
                self.seqno += 1;
                out.push(GroupEvent::Ordered { seqno: self.seqno, origin, token, payload });
            }
            Entry::Bootstrap { history, position, member } => self.bootstrap(history, position, member, out),
            Entry::MemberState { member, transition, .. } => self.transition(member, transition, out),
        }
    }

    fn bootstrap(&mut self, history: Uuid, position: Seqno, member: MemberInfo, out: &mut Vec<GroupEvent>) {
        if self.is_primary() {
            return; // a component is bootstrapped once
        }
        self.history = history;
        self.seqno = position.max(0);
        self.members = vec![Member { info: member, state: MemberState::Synced, desync_count: 0 }];
        self.primary_view(out);
        let m = &self.members[0];
        out.push(GroupEvent::MemberState { member: m.info.id, state: m.state, desync_count: 0 });
    }

    /// A primary configuration change: consumes a seqno.
    fn primary_view(&mut self, out: &mut Vec<GroupEvent>) {
        self.seqno += 1;
        self.conf_id += 1;
        out.push(GroupEvent::View(self.view()));
    }

    pub fn view(&self) -> View {
        let members: Vec<MemberInfo> = self.members.iter().map(|m| m.info.clone()).collect();
        let my_idx = members.iter().position(|m| m.id == self.me).map_or(-1, |i| i as i32);
        View { history: self.history, seqno: self.seqno, conf_id: self.conf_id, primary: true, members, my_idx }
    }

    fn transition(&mut self, id: Uuid, t: Transition, out: &mut Vec<GroupEvent>) {
        let Some(m) = self.members.iter_mut().find(|m| m.info.id == id) else {
            return; // a member that already left
        };
        let before = (m.state, m.desync_count);
        match t {
            Transition::Desync => {
                m.desync_count += 1;
                m.state = MemberState::Donor;
            }
            Transition::Join => {
                m.desync_count = m.desync_count.saturating_sub(1);
                if m.desync_count == 0 && matches!(m.state, MemberState::Donor | MemberState::Joiner) {
                    m.state = MemberState::Joined;
                }
            }
            Transition::Sync => {
                if m.state == MemberState::Joined {
                    m.state = MemberState::Synced;
                }
            }
        }
        if (m.state, m.desync_count) != before {
            out.push(GroupEvent::MemberState { member: id, state: m.state, desync_count: m.desync_count });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: Uuid) -> MemberInfo {
        MemberInfo { id, name: "n".into(), incoming: "i".into(), address: "a".into() }
    }

    fn apply(g: &mut GroupState, e: Entry) -> Vec<GroupEvent> {
        let mut out = Vec::new();
        g.apply(e, &mut out);
        out
    }

    #[test]
    fn bootstrap_view_consumes_the_seqno_after_the_position() {
        let me = Uuid::random();
        let h = Uuid::random();
        let mut g = GroupState::new(me);
        let out = apply(&mut g, Entry::Bootstrap { history: h, position: 234, member: member(me) });
        match &out[0] {
            GroupEvent::View(v) => {
                assert_eq!((v.history, v.seqno, v.conf_id, v.primary, v.my_idx), (h, 235, 1, true, 0));
            }
            e => panic!("{:?}", e),
        }
        let out = apply(&mut g, Entry::Ordered { origin: me, token: 1, payload: Bytes::new() });
        assert!(matches!(out[0], GroupEvent::Ordered { seqno: 236, token: 1, .. }));
    }

    #[test]
    fn a_fresh_history_starts_its_first_view_at_one() {
        let me = Uuid::random();
        let mut g = GroupState::new(me);
        apply(&mut g, Entry::Bootstrap { history: Uuid::random(), position: -1, member: member(me) });
        assert_eq!(g.seqno(), 1);
    }

    #[test]
    fn nothing_is_ordered_before_bootstrap_and_bootstrap_happens_once() {
        let me = Uuid::random();
        let mut g = GroupState::new(me);
        assert!(apply(&mut g, Entry::Ordered { origin: me, token: 1, payload: Bytes::new() }).is_empty());
        apply(&mut g, Entry::Bootstrap { history: Uuid::random(), position: 0, member: member(me) });
        assert!(apply(&mut g, Entry::Bootstrap { history: Uuid::random(), position: 9, member: member(me) }).is_empty());
        assert_eq!(g.seqno(), 1);
    }

    #[test]
    fn desyncs_stack_and_join_sync_return_to_synced() {
        let me = Uuid::random();
        let mut g = GroupState::new(me);
        apply(&mut g, Entry::Bootstrap { history: Uuid::random(), position: 0, member: member(me) });
        let t = |g: &mut GroupState, t| apply(g, Entry::MemberState { member: me, transition: t, seqno: 0 });
        t(&mut g, Transition::Desync);
        t(&mut g, Transition::Desync);
        assert_eq!(g.member(me).unwrap().state, MemberState::Donor);
        t(&mut g, Transition::Join);
        assert_eq!(g.member(me).unwrap().state, MemberState::Donor);
        t(&mut g, Transition::Join);
        assert_eq!(g.member(me).unwrap().state, MemberState::Joined);
        // Member-state actions never consume seqnos.
        assert_eq!(g.seqno(), 1);
        let out = t(&mut g, Transition::Sync);
        assert_eq!(out, vec![GroupEvent::MemberState { member: me, state: MemberState::Synced, desync_count: 0 }]);
        assert!(t(&mut g, Transition::Sync).is_empty());
    }
}
