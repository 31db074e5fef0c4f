//! A node's own log beyond its data: after a crash, the gcache can hold
//! seqnos that InnoDB lost (`innodb_flush_log_at_trx_commit` 0 or 2 flush
//! its log about once a second). They were ordered, committed in Raft,
//! and may have been acknowledged to their clients; so they are part of
//! the history and must be applied, never ordered anew.
//!
//! Such a node's history reaches the end of that tail: it says so when
//! the cluster recovers (the member whose log reaches furthest forms the
//! component again, `group::recovery`), and bootstraps after it. If it
//! forms the component, it applies the tail itself before the
//! component's first view, an IST from its own gcache; if it joins one,
//! its donor's IST brings the same seqnos and the tail is dropped.
//!
//! The server must hear a primary view before it applies anything (its
//! engines start at the first one). That view is the one its data was
//! last in, at the data's position (MariaDB records no new position for a
//! view at the provider's last committed seqno), with this member added:
//! the members of the old one stay in it, so that the server's streaming
//! transactions of theirs are not rolled back before the tail commits
//! them; the component's own first view, after the tail, then goes on as
//! on every other node.

use super::types::RecvCtx;
use super::wsrep_recover;
use super::Shared;
use crate::gcache::Gcache;
use crate::group::{MemberInfo, View};
use crate::gtid::{Gtid, Seqno};
use crate::log;

/// Seqnos read from the gcache at a time while the tail applies: a tail
/// can be hundreds of megabytes.
const CHUNK: Seqno = 256;

/// The seqnos after the data's position `after` up to `upto` that the
/// gcache holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Tail {
    pub after: Seqno,
    pub upto: Seqno,
}

impl Tail {
    /// The tail of `gcache` beyond `position`, when it continues the data
    /// (the same history, no gap).
    pub fn of(gcache: &Gcache, position: Gtid) -> Option<Tail> {
        let (first, last) = (gcache.first()?, gcache.last()?);
        let continues = gcache.history() == position.uuid && position.seqno >= 0 && first <= position.seqno + 1;
        (continues && last > position.seqno).then_some(Tail { after: position.seqno, upto: last })
    }
}

impl Shared {
    /// How far this node's history reaches: its data's position, or the
    /// end of the tail its gcache holds beyond it.
    pub(super) fn log_end(&self) -> Gtid {
        let committed = self.last_committed();
        match *self.tail.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(t) => Gtid::new(committed.uuid, t.upto),
            None => committed,
        }
    }

    /// Whether the data recovered after a crash holds `seqno` already,
    /// above a seqno crash recovery left out (see `wsrep_recover`).
    pub(super) fn recovered_holds(&self, seqno: Seqno) -> bool {
        self.holes.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|h| h.holds(seqno))
    }

    /// `seqno` of the recovered data's gap was applied or passed.
    pub(super) fn recovered_passed(&self, seqno: Seqno) {
        let mut holes = self.holes.lock().unwrap_or_else(|e| e.into_inner());
        if holes.as_mut().is_some_and(|h| h.passed(seqno)) {
            log::info!("the seqnos crash recovery left out are applied: the data holds everything up to {}", seqno);
            *holes = None;
        }
    }

    /// The state the server reports after a state transfer (`sst_received`):
    /// its own recovered data when the transfer was a bypass, which holds
    /// everything only up to the seqno before its first hole; else new
    /// data, and the holes are moot.
    pub(super) fn installed_state(&self, reported: Gtid) -> Gtid {
        let mut holes = self.holes.lock().unwrap_or_else(|e| e.into_inner());
        let Some(h) = holes.as_ref() else { return reported };
        if h.position() == reported {
            return Gtid::new(reported.uuid, h.contiguous());
        }
        log::info!("the state transfer replaced the recovered data ({} reported, {} recovered): the seqnos it lacked are moot", reported, h.position());
        *holes = None;
        wsrep_recover::forget(self.saved.lock().unwrap_or_else(|e| e.into_inner()).dir());
        reported
    }

    /// The node enters a component it did not form: its donor brings the
    /// tail again. Dropped from the gcache now, so that no record of it
    /// outlives a history the component may have ordered differently.
    pub(super) fn settle_tail(&self) {
        if self.status().bootstrapping {
            return; // the component's first view takes it (`tail_before`)
        }
        let Some(t) = self.tail.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
        log::info!("joining a running component: seqnos {}-{} of this node's gcache come again from the donor", t.after + 1, t.upto);
        self.gcache.lock().unwrap_or_else(|e| e.into_inner()).truncate_after(t.after);
    }

    /// The tail this node applies before `v`, the first view of the
    /// component it forms, when `v` continues it.
    pub(super) fn tail_before(&self, v: &View) -> Option<Tail> {
        let tail = self.tail.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        if v.history != self.history() || v.seqno != tail.upto + 1 {
            log::warning!("the component starts at {}:{}, not after this node's gcache tail {}-{}: the tail is dropped", v.history, v.seqno, tail.after + 1, tail.upto);
            self.gcache.lock().unwrap_or_else(|e| e.into_inner()).truncate_after(tail.after);
            return None;
        }
        Some(tail)
    }

    /// The view the server hears before the tail (see the module's
    /// comment): the last one cached at or before the data's position, or
    /// the members `gvwstate.dat` names when the cache no longer holds it.
    pub(super) fn restart_view(&self, tail: Tail, first: &View) -> View {
        let me = self.me.read().unwrap_or_else(|e| e.into_inner()).clone();
        let cached = self.gcache.lock().unwrap_or_else(|e| e.into_inner()).last_view(tail.after);
        let (conf_id, mut members) = match cached.and_then(|(_, conf)| View::decode(&conf, me.id).ok()) {
            Some(old) => (old.conf_id, old.members),
            None => (first.conf_id, self.previous_members()),
        };
        members.retain(|m| m.id != me.id);
        members.push(me);
        let my_idx = members.len() as i32 - 1;
        View { history: first.history, seqno: tail.after, conf_id, primary: true, members, my_idx }
    }

    /// The members of the last primary view `gvwstate.dat` recorded, by id.
    fn previous_members(&self) -> Vec<MemberInfo> {
        let dir = self.saved.lock().unwrap_or_else(|e| e.into_inner()).dir().to_path_buf();
        let ids = super::view_state::previous_member(&dir).map(|(_, ids)| ids).unwrap_or_default();
        let bare = |id| MemberInfo { id, name: String::new(), incoming: String::new(), address: String::new(), arbitrator: false, stateless: false };
        ids.into_iter().map(bare).collect()
    }

    /// On an applier: the server connects at the restart view, hears it,
    /// then applies the tail in order, as an IST from this node's own
    /// gcache. False when the tail could not be read: the node must not
    /// go on without it.
    pub(super) fn apply_tail(&self, ctx: RecvCtx, view: &View, tail: Tail) -> bool {
        if !self.app.connected(view) {
            log::error!("connected callback failed for view {}", view.conf_id);
        }
        // At the data's position, which the monitors have passed already:
        // the view takes no seqno of its own.
        if !self.app.view(ctx, view) {
            log::error!("View callback failed. This is unrecoverable, restart required.");
        }
        log::info!("applying seqnos {}-{} from this node's gcache: ordered before the crash, missing from its data", tail.after + 1, tail.upto);
        let mut next = tail.after + 1;
        while next <= tail.upto {
            let to = (next + CHUNK - 1).min(tail.upto);
            let Some(items) = self.cached(next, to) else {
                log::error!("the gcache no longer holds seqnos {}-{} of this node's tail: it cannot go on without them; restart it", next, to);
                return false;
            };
            for (seqno, item) in items {
                self.apply_ist_item(ctx, seqno, item, tail.upto + 1, -1);
            }
            next = to + 1;
        }
        log::info!("this node's gcache tail applied up to {}", self.apply.last_left());
        true
    }
}
