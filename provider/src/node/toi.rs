//! Total order isolation (DDL): the statement is ordered like a writeset,
//! always passes certification, and runs on every node alone: after
//! everything before it has applied, before anything after it commits
//! (contract §6).

use super::delivery::Outcome;
use super::types::{KeyParts, Meta, Status, TRX_NONE};
use super::Shared;
use crate::cert::Verdict;
use crate::gtid::Gtid;
use crate::log;
use crate::monitor::Rule;
use crate::writeset::{flags, Builder, KeyKind, WriteSet};

impl Shared {
    pub fn to_execute_start(&self, conn_id: u64, keys: &[KeyParts], action: &[&[u8]], fl: u32, meta: &mut Meta) -> Status {
        meta.gtid = Gtid::UNDEFINED;
        meta.stid.node = self.my_id();
        meta.stid.trx = TRX_NONE;
        meta.stid.conn = conn_id;
        if let Err(s) = self.check_toi(conn_id, fl) {
            return s;
        }
        self.wait_flow(&Default::default());
        let mut ws = match self.toi_writeset(conn_id, keys, action, fl) {
            Ok(ws) => ws,
            Err(s) => return s,
        };
        self.count_replicated(&ws);
        let Outcome::Ordered { seqno, verdict } = self.replicate(&mut ws, None) else {
            return Status::ConnFail;
        };
        meta.gtid = Gtid::new(self.history(), seqno);
        // Alone: everything before has applied, and commits stay ordered.
        self.gate.pass(seqno);
        if self.apply.enter(seqno, Rule::After(seqno - 1)).is_err() {
            return Status::ConnFail;
        }
        if self.commit.enter(seqno, Rule::InOrder).is_err() {
            self.apply.leave(seqno);
            return Status::ConnFail;
        }
        self.toi.lock().unwrap_or_else(|e| e.into_inner()).insert(conn_id, seqno);
        match verdict {
            Verdict::Pass { depends_on } => {
                meta.depends_on = depends_on;
                Status::Ok
            }
            // Holding the monitors anyway: the server leaves through
            // to_execute_end for a failure that has a GTID.
            Verdict::Fail(_) => Status::TrxFail,
        }
    }

    fn check_toi(&self, conn_id: u64, fl: u32) -> Result<(), Status> {
        if fl & (flags::TRX_START | flags::TRX_END) != flags::TRX_START | flags::TRX_END {
            // Non-blocking operations (START or END alone) are not offered
            // (no NBO capability) and MariaDB 10.11 never asks for them.
            log::warning!("TOI with flags {:#x} (non-blocking operations) is not supported", fl);
            return Err(Status::ConnFail);
        }
        if fl & flags::ROLLBACK != 0 {
            return Err(Status::ConnFail);
        }
        if self.toi.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&conn_id) {
            log::warning!("connection {} starts a TOI while one is in progress", conn_id);
            return Err(Status::ConnFail);
        }
        if !self.node_state().can_replicate() {
            return Err(Status::ConnFail);
        }
        Ok(())
    }

    fn toi_writeset(&self, conn_id: u64, keys: &[KeyParts], action: &[&[u8]], fl: u32) -> Result<WriteSet, Status> {
        let mut b = Builder::new();
        for parts in keys {
            b.append_key(parts.clone(), KeyKind::Exclusive).map_err(|_| Status::SizeExceeded)?;
        }
        for a in action {
            b.append_data(a).map_err(|_| Status::SizeExceeded)?;
        }
        b.check(self.setting(|s| s.max_ws_size)).map_err(super::local::append_error)?;
        Ok(b.take((fl & flags::MASK) | flags::ISOLATION, self.my_id(), TRX_NONE, conn_id, self.apply.last_left()))
    }

    pub fn to_execute_end(&self, conn_id: u64, error: &[u8]) -> Status {
        let Some(seqno) = self.toi.lock().unwrap_or_else(|e| e.into_inner()).remove(&conn_id) else {
            log::warning!("to_execute_end for connection {} without a TOI", conn_id);
            return Status::Ok;
        };
        // As for apply errors: the group votes on a failed TOI, before
        // anything after it commits here.
        if !error.is_empty() {
            log::info!("TOI {} failed on this node: {}", seqno, String::from_utf8_lossy(error));
            self.apply_error(seqno, error);
        }
        self.commit.leave(seqno);
        self.apply.leave(seqno);
        if self.apply_failed.load(std::sync::atomic::Ordering::SeqCst) == seqno {
            log::error!("Inconsistency detected: Inconsistent by consensus on {}:{} (this node failed a TOI the others executed; it leaves the cluster)", self.history(), seqno);
            self.leave_inconsistent();
        }
        // Ok whatever the vote said, as Galera answers: the server logs
        // any other answer as a failure of its own.
        Status::Ok
    }
}
