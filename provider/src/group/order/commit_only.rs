//! Appends that carry only a commit index, when the same batch holds an
//! append with entries to the same member.
//!
//! raft-rs sends a follower an append without entries each time the
//! commit index advances, and one with entries for new proposals. Under
//! load both often leave in one Ready: the empty one then tells the
//! follower nothing the other cannot, once the other carries the higher
//! commit index. That is always safe to send: a follower takes a commit
//! index only up to the entries it holds and the append proved to match
//! the leader's log. Across segments each empty append is a frame over
//! the slow link.
//!
//! raft-rs's own `batch_append` would do this and also merge appends
//! with entries, with no bound on the merged size: the pieces of a big
//! writeset are entries of 1 MiB, and a frame over the transport's limit
//! is never sent. So only the empty ones go, here.

use std::collections::BTreeMap;

use raft::eraftpb::MessageType;
use raft::prelude::Message;

/// Drops each append without entries to a member that `msgs` also sends
/// an append with entries in the same term, and gives the last of those
/// the highest commit index of them all.
pub fn fold(msgs: &mut Vec<Message>) {
    // Per member and term: the last append with entries (its position),
    // and the highest commit index of all its appends.
    let mut carriers: BTreeMap<(u64, u64), (Option<usize>, u64)> = BTreeMap::new();
    for (i, m) in msgs.iter().enumerate().filter(|(_, m)| m.get_msg_type() == MessageType::MsgAppend) {
        let (last, commit) = carriers.entry((m.to, m.term)).or_default();
        if !m.entries.is_empty() {
            *last = Some(i);
        }
        *commit = (*commit).max(m.commit);
    }
    for &(last, commit) in carriers.values() {
        if let Some(i) = last {
            msgs[i].commit = commit;
        }
    }
    msgs.retain(|m| {
        let empty = m.get_msg_type() == MessageType::MsgAppend && m.entries.is_empty();
        !(empty && carriers.get(&(m.to, m.term)).is_some_and(|(last, _)| last.is_some()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use raft::prelude::Entry;

    fn append(to: u64, index: u64, entries: u64, commit: u64) -> Message {
        let mut m = Message { to, from: 1, term: 2, index, commit, ..Default::default() };
        m.set_msg_type(MessageType::MsgAppend);
        m.entries = (index + 1..=index + entries).map(|index| Entry { index, term: 2, ..Default::default() }).collect();
        m
    }

    fn shape(msgs: &[Message]) -> Vec<(u64, usize, u64)> {
        msgs.iter().map(|m| (m.to, m.entries.len(), m.commit)).collect()
    }

    #[test]
    fn a_commit_only_append_goes_into_the_entries_to_the_same_member() {
        // To 2: entries, then the commit they brought. To 3: the commit
        // first, then new entries. To 4: the commit alone.
        let mut msgs = vec![append(2, 10, 3, 9), append(3, 13, 0, 11), append(2, 13, 0, 12), append(3, 13, 2, 12), append(4, 13, 0, 12)];
        fold(&mut msgs);
        assert_eq!(shape(&msgs), vec![(2, 3, 12), (3, 2, 12), (4, 0, 12)]);
    }

    #[test]
    fn other_messages_and_other_terms_stay() {
        let mut hb = Message { to: 2, term: 2, commit: 5, ..Default::default() };
        hb.set_msg_type(MessageType::MsgHeartbeat);
        let old_term = Message { term: 1, ..append(2, 13, 0, 12) };
        let mut msgs = vec![append(2, 10, 3, 9), hb.clone(), old_term.clone()];
        fold(&mut msgs);
        assert_eq!(msgs, vec![append(2, 10, 3, 9), hb, old_term]);
    }
}
