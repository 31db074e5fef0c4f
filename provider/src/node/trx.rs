//! Local transactions: the provider's side of a server transaction, from
//! the first `append_key` to `release`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::gtid::{Seqno, SEQNO_UNDEFINED};
use crate::writeset::{Builder, WriteSet};

/// Galera's local trx states, as far as the server can observe them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TrxState {
    /// Collecting keys and data (also between streaming fragments).
    Executing,
    /// In `certify`, waiting for the writeset's delivery.
    Replicating,
    /// Certified; holds its apply-monitor slot, has not asked for commit
    /// order yet (Galera's APPLYING).
    Certified,
    /// Waiting in, or inside, the commit monitor.
    Committing,
    /// Left the commit monitor; `release` ends it.
    Committed,
    /// `certify` returned TRX_FAIL: the seqno still passes the monitors.
    CertFailed,
    /// Brute-force aborted before it was ordered: it rolls back.
    MustAbort,
    /// Brute-force aborted after it was ordered and certified: the server
    /// rolls it back and calls `replay_trx`.
    MustReplay,
    Replaying,
    /// Replayed through `apply_cb`: committed, `release` ends it.
    Replayed,
}

/// A trx's place in one monitor for its current seqno.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Slot {
    Free,
    Inside,
    Done,
}

pub struct TrxInner {
    pub state: TrxState,
    pub builder: Builder,
    /// Seqno of the writeset (or current fragment) once ordered.
    pub seqno: Seqno,
    pub depends_on: Seqno,
    /// The last writeset replicated, kept for a replay.
    pub ws: Option<WriteSet>,
    /// Where this trx is in each monitor for `seqno`.
    pub apply: Slot,
    pub commit: Slot,
    /// Fragments of a streaming trx certified so far.
    pub fragments: u32,
    /// Seqno of the last fragment certified: the next one has seen it
    /// (Galera raises a fragment's last_seen alike), so rows it changed
    /// after that fragment cannot conflict with what came before.
    pub last_fragment: Seqno,
    /// The node's rejoin count when the first fragment was sent.
    pub rejoins: u64,
}

pub struct LocalTrx {
    /// The provider's id (what `opaque` encodes).
    pub id: u64,
    /// The server's transaction id.
    pub trx_id: u64,
    inner: Mutex<TrxInner>,
    /// Set with MustAbort: wakes the trx if it waits for flow control
    /// (read without the trx lock, so the wait holds no lock).
    pub aborted: std::sync::atomic::AtomicBool,
}

impl LocalTrx {
    pub fn lock(&self) -> MutexGuard<'_, TrxInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Default)]
struct Tables {
    by_id: HashMap<u64, Arc<LocalTrx>>,
    /// Server trx id -> provider id: `abort_certification` names its victim
    /// by the server's id.
    by_trx: HashMap<u64, u64>,
}

#[derive(Default)]
pub struct TrxTable {
    tables: Mutex<Tables>,
    next_id: AtomicU64,
}

impl TrxTable {
    fn lock(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn create(&self, trx_id: u64) -> Arc<LocalTrx> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let inner = TrxInner {
            state: TrxState::Executing,
            builder: Builder::new(),
            seqno: SEQNO_UNDEFINED,
            depends_on: SEQNO_UNDEFINED,
            ws: None,
            apply: Slot::Free,
            commit: Slot::Free,
            fragments: 0,
            last_fragment: SEQNO_UNDEFINED,
            rejoins: 0,
        };
        let trx = Arc::new(LocalTrx { id, trx_id, inner: Mutex::new(inner), aborted: Default::default() });
        let mut t = self.lock();
        t.by_id.insert(id, trx.clone());
        t.by_trx.insert(trx_id, id);
        trx
    }

    pub fn get(&self, id: u64) -> Option<Arc<LocalTrx>> {
        self.lock().by_id.get(&id).cloned()
    }

    pub fn by_trx_id(&self, trx_id: u64) -> Option<Arc<LocalTrx>> {
        let t = self.lock();
        t.by_trx.get(&trx_id).and_then(|id| t.by_id.get(id)).cloned()
    }

    pub fn remove(&self, trx: &LocalTrx) {
        let mut t = self.lock();
        t.by_id.remove(&trx.id);
        if t.by_trx.get(&trx.trx_id) == Some(&trx.id) {
            t.by_trx.remove(&trx.trx_id);
        }
    }

    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }
}
