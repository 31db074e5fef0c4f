//! Whole-cluster recovery (Galera's `pc.recovery`): every member of a
//! primary component was killed, and they restart with their usual
//! configuration, each a joiner with nobody to join. Each knows from its
//! `gvwstate.dat` which member it was and who was in that last primary
//! view, and from its data how far it got; joiners tell each other both in
//! their join requests. Once a joiner has heard from every member of its
//! last primary view, the most advanced of them (ties: the lowest member
//! id) bootstraps the component again on its history and position, and
//! the others join it as usual. All of the old component is back, so no
//! other primary component can exist; and every seqno any node committed
//! is at or below the most advanced position, since seqnos commit in order
//! everywhere.
//!
//! Pure: the driver feeds it what join requests say.

use std::collections::BTreeMap;

use crate::gtid::{Seqno, Uuid};

/// What a killed node knows of its last primary component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Previous {
    /// The member it was.
    pub member: Uuid,
    /// The members of its last primary view (itself included).
    pub view: Vec<Uuid>,
    /// The history and seqno its data holds.
    pub position: (Uuid, Seqno),
}

#[derive(Debug)]
pub struct Recovery {
    me: Previous,
    /// Positions heard from restarted members of the same history.
    heard: BTreeMap<Uuid, Seqno>,
}

impl Recovery {
    pub fn new(me: Previous) -> Recovery {
        let heard = BTreeMap::from([(me.member, me.position.1)]);
        Recovery { me, heard }
    }

    pub fn me(&self) -> &Previous {
        &self.me
    }

    /// A joiner that was `member`, holding `position`. True when this node
    /// must now bootstrap the component.
    pub fn heard(&mut self, member: Uuid, position: (Uuid, Seqno)) -> bool {
        if position.0 == self.me.position.0 {
            self.heard.insert(member, position.1);
        }
        self.all_back() && self.most_advanced()
    }

    fn all_back(&self) -> bool {
        self.me.view.iter().all(|m| self.heard.contains_key(m))
    }

    fn most_advanced(&self) -> bool {
        let best = self.heard.iter().filter(|(m, _)| self.me.view.contains(m)).max_by_key(|(m, s)| (**s, std::cmp::Reverse(**m)));
        best.map(|(m, _)| *m) == Some(self.me.member)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<Uuid> {
        let mut v: Vec<Uuid> = (0..n).map(|_| Uuid::random()).collect();
        v.sort();
        v
    }

    fn node(view: &[Uuid], i: usize, history: Uuid, seqno: Seqno) -> Recovery {
        Recovery::new(Previous { member: view[i], view: view.to_vec(), position: (history, seqno) })
    }

    #[test]
    fn the_most_advanced_bootstraps_once_all_are_back() {
        let (v, h) = (ids(3), Uuid::random());
        let mut a = node(&v, 0, h, 10);
        let mut b = node(&v, 1, h, 12);
        assert!(!b.heard(v[0], (h, 10)), "node 3 is not back yet");
        assert!(b.heard(v[2], (h, 11)));
        assert!(!a.heard(v[1], (h, 12)) && !a.heard(v[2], (h, 11)), "a is behind b");
    }

    #[test]
    fn ties_go_to_the_lowest_member_and_other_histories_do_not_count() {
        let (v, h) = (ids(2), Uuid::random());
        let mut a = node(&v, 0, h, 5);
        let mut b = node(&v, 1, h, 5);
        assert!(!a.heard(v[1], (Uuid::random(), 9)), "another history is nobody we wait for");
        assert!(a.heard(v[1], (h, 5)));
        assert!(!b.heard(v[0], (h, 5)));
    }

    #[test]
    fn strangers_neither_complete_the_view_nor_outrank_it() {
        let (v, h) = (ids(2), Uuid::random());
        let mut a = node(&v, 0, h, 5);
        assert!(!a.heard(Uuid::random(), (h, 99)));
        assert!(a.heard(v[1], (h, 4)));
    }
}
