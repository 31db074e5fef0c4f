//! A follower that, with the leader, makes a quorum knows an entry of the
//! leader's term is committed as soon as it has stored it. Plain Raft
//! tells it one message later than the leader learns it: the leader
//! counts the follower's answer, then its next append carries the commit
//! index. That is half a round trip of apply lag on every follower, and
//! on every commit whose client waits on a follower; under CPU contention
//! the extra hop is scheduling delay too (issue 52).
//!
//! Why it is safe: Raft commits an entry of the current term once a
//! quorum of the configuration holds it, whoever observes that. The entry
//! at our last stored index, if its term is the current one, came from
//! the one leader of that term, which keeps every entry it made, and by
//! log matching the leader's log and ours agree up to it. So the leader
//! and we hold it; if that is a quorum (three voters or fewer, counted by
//! raft-rs on the configuration it applied), it is committed. That
//! configuration is the one the leader counts with as long as every
//! configuration change we stored has been applied here: a change the
//! leader applied beyond our index is committed, and so is our index.
//!
//! With more voters the rule never holds and commits come as in plain
//! Raft; the weighted-quorum gate (`weighted`) still holds back entries it
//! must, whatever raft-rs counts as committed.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use fxhash::FxHasher;
use raft::{Raft, StateRole, Storage, INVALID_ID};

/// Commits what this follower stored of its leader's term, when it and
/// the leader are a quorum; `conf_stored` is the highest index of a
/// configuration change it stored. Whether the commit index moved.
pub fn commit_ahead<T: Storage>(raft: &mut Raft<T>, conf_stored: u64) -> bool {
    if !with_leader_a_quorum(raft, conf_stored) {
        return false;
    }
    let (stored, term) = (raft.raft_log.persisted, raft.term);
    raft.raft_log.maybe_commit(stored, term)
}

/// Whether this member is a follower that, with its leader, makes a
/// quorum of the configuration it applied, and has stored no change it
/// has not applied (which may make the quorum another one). Then no
/// leader of a later term can be elected without this member's vote or
/// the leader's: what commit_ahead and `reads` rest on.
pub fn with_leader_a_quorum<T: Storage>(raft: &Raft<T>, conf_stored: u64) -> bool {
    if raft.state != StateRole::Follower || raft.leader_id == INVALID_ID {
        return false;
    }
    if conf_stored > raft.raft_log.applied {
        return false;
    }
    // raft-rs counts on its own set type (both halves of a joint
    // configuration, learners not at all).
    let pair: HashSet<u64, BuildHasherDefault<FxHasher>> = [raft.id, raft.leader_id].into_iter().collect();
    raft.prs().has_quorum(&pair)
}

/// Whether every follower learns what commits by [`commit_ahead`], so
/// the leader need not send each an append without entries whenever its
/// commit index moves (raft-rs's `skip_bcast_commit`): under a light load
/// those appends, and the answers to them, were two of every commit's
/// four messages per follower, for nothing. Only with at most three
/// voters, no joint configuration beyond them and no learners (a learner
/// never commits ahead); raft-rs still sends them while a configuration
/// change is pending. A follower that cannot commit ahead meanwhile (a
/// change it stored but has not applied) learns the index from the next
/// append or heartbeat.
pub fn followers_commit_ahead<T: Storage>(raft: &Raft<T>) -> bool {
    let conf = raft.prs().conf();
    conf.learners().is_empty() && conf.voters().ids().iter().count() <= 3
}

#[cfg(test)]
mod tests {
    use super::*;
    use raft::eraftpb::{ConfChange, ConfChangeType, EntryType, Message};
    use raft::storage::MemStorage;
    use raft::{Config, RawNode};

    /// raft-rs nodes on MemStorage, messages delivered by hand.
    struct Net {
        nodes: Vec<RawNode<MemStorage>>,
        queue: Vec<Message>,
        conf_stored: Vec<u64>,
    }

    impl Net {
        fn new(voters: u64) -> Net {
            let ids: Vec<u64> = (1..=voters).collect();
            let nodes = ids
                .iter()
                .map(|&id| {
                    let store = MemStorage::new_with_conf_state((ids.clone(), vec![]));
                    let config = Config { id, election_tick: 10, heartbeat_tick: 1, ..Default::default() };
                    RawNode::new(&config, store, &super::super::raft_log::logger()).expect("a raft node")
                })
                .collect();
            let mut net = Net { nodes, queue: Vec::new(), conf_stored: vec![0; voters as usize] };
            net.nodes[0].campaign().expect("node 1 campaigns");
            net.settle(|_| true);
            assert_eq!(net.nodes[0].raft.state, StateRole::Leader);
            net
        }

        fn node(&mut self, id: u64) -> &mut RawNode<MemStorage> {
            &mut self.nodes[id as usize - 1]
        }

        /// Every node's Ready handled as the driver does (send, store,
        /// apply), `follower_commit` after it; messages `pass` lets
        /// through delivered until none are left.
        fn settle(&mut self, pass: impl Fn(&Message) -> bool) {
            loop {
                for i in 0..self.nodes.len() {
                    self.ready(i);
                }
                let msgs: Vec<Message> = std::mem::take(&mut self.queue).into_iter().filter(|m| pass(m)).collect();
                if msgs.is_empty() {
                    return;
                }
                for m in msgs {
                    let _ = self.node(m.to).step(m);
                }
            }
        }

        fn ready(&mut self, i: usize) {
            let node = &mut self.nodes[i];
            if !node.has_ready() {
                return;
            }
            let mut ready = node.ready();
            self.queue.extend(ready.take_messages());
            apply(node, ready.take_committed_entries());
            for e in ready.entries() {
                if e.get_entry_type() == EntryType::EntryConfChange {
                    self.conf_stored[i] = e.index;
                }
            }
            node.store().wl().append(ready.entries()).expect("append");
            if let Some(hs) = ready.hs() {
                node.store().wl().set_hardstate(hs.clone());
            }
            self.queue.extend(ready.take_persisted_messages());
            let mut light = node.advance_append(ready);
            if let Some(commit) = light.commit_index() {
                node.store().wl().mut_hard_state().commit = commit;
            }
            self.queue.extend(light.take_messages());
            apply(node, light.take_committed_entries());
            node.advance_apply();
            if commit_ahead(&mut node.raft, self.conf_stored[i]) {
                self.ready(i);
            }
        }

        fn committed(&self, id: u64) -> u64 {
            self.nodes[id as usize - 1].raft.raft_log.committed
        }
    }

    fn apply(node: &mut RawNode<MemStorage>, entries: Vec<raft::eraftpb::Entry>) {
        for e in entries.iter().filter(|e| e.get_entry_type() == EntryType::EntryConfChange) {
            let cc: ConfChange = protobuf::Message::parse_from_bytes(&e.data).expect("a conf change");
            let cs = node.apply_conf_change(&cc).expect("applies");
            node.store().wl().set_conf_state(cs);
        }
    }

    /// Only the leader's appends go out; nothing comes back to it.
    fn appends_only(m: &Message) -> bool {
        m.from == 1
    }

    #[test]
    fn a_follower_of_three_commits_what_it_stored_before_the_leader_knows() {
        let mut net = Net::new(3);
        let before = net.committed(2);
        net.node(1).propose(vec![], b"w".to_vec()).expect("proposed");
        net.settle(appends_only);
        assert_eq!(net.committed(1), before, "the leader heard no answer");
        assert_eq!(net.committed(2), before + 1, "node 2 and the leader are a quorum");
        assert_eq!(net.committed(3), before + 1);
    }

    #[test]
    fn the_leader_spares_its_commit_appends_only_when_every_follower_commits_ahead() {
        assert!(followers_commit_ahead(&Net::new(3).node(1).raft));
        assert!(followers_commit_ahead(&Net::new(2).node(1).raft));
        assert!(!followers_commit_ahead(&Net::new(4).node(1).raft), "two of four are no quorum");
        let store = MemStorage::new_with_conf_state((vec![1, 2], vec![3]));
        let config = Config { id: 1, ..Default::default() };
        let with_learner = RawNode::new(&config, store, &super::super::raft_log::logger()).expect("a raft node");
        assert!(!followers_commit_ahead(&with_learner.raft), "a learner never commits ahead");
    }

    #[test]
    fn a_follower_of_five_waits_for_the_leader() {
        let mut net = Net::new(5);
        let before = net.committed(2);
        net.node(1).propose(vec![], b"w".to_vec()).expect("proposed");
        net.settle(appends_only);
        assert_eq!(net.committed(2), before, "two of five are no quorum");
        // The answers were dropped: a heartbeat brings them again.
        net.node(1).tick();
        net.settle(|_| true);
        assert_eq!(net.committed(2), before + 1);
    }

    #[test]
    fn a_stored_configuration_change_not_yet_applied_stops_it() {
        let mut net = Net::new(3);
        let mut cc = ConfChange::default();
        cc.set_change_type(ConfChangeType::AddNode);
        cc.node_id = 4;
        net.node(1).propose_conf_change(vec![], cc).expect("proposed");
        net.settle(appends_only);
        let before = net.committed(2);
        assert!(net.conf_stored[1] > net.nodes[1].raft.raft_log.applied, "the change is stored, not applied");
        net.node(1).propose(vec![], b"w".to_vec()).expect("proposed");
        net.settle(appends_only);
        assert_eq!(net.committed(2), before, "node 4 may count for the leader");
    }

    #[test]
    fn entries_of_an_earlier_term_are_not_counted() {
        let mut net = Net::new(3);
        let before = net.committed(2);
        // Node 2 stores the leader's entry without counting it (a stored
        // change stands in), then follows node 3 in a new term, of which
        // it has stored nothing yet.
        net.conf_stored[1] = u64::MAX;
        net.node(1).propose(vec![], b"w".to_vec()).expect("proposed");
        net.settle(|m| m.from == 1 && m.to == 2);
        assert_eq!(net.committed(2), before);
        let node = net.node(2);
        node.raft.become_follower(node.raft.term + 1, 3);
        assert!(!commit_ahead(&mut node.raft, 0), "the stored entry is of an earlier term");
        assert_eq!(net.committed(2), before);
    }
}
