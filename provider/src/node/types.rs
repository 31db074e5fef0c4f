//! The vocabulary between the node and the C boundary: status codes,
//! transaction handles and metadata, and the server callbacks. The `abi`
//! layer converts these to and from the wsrep C types; tests use them
//! directly with a fake server.

use crate::group::View;
use crate::gtid::{Gtid, Seqno, Uuid, SEQNO_UNDEFINED};

/// wsrep_status_t, as the node returns it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    Ok = 0,
    Warning = 1,
    TrxMissing = 2,
    TrxFail = 3,
    BfAbort = 4,
    SizeExceeded = 5,
    ConnFail = 6,
    NodeFail = 7,
    Fatal = 8,
    NotImplemented = 9,
    NotAllowed = 10,
}

/// A transaction handle (`wsrep_ws_handle_t`): the server's trx id and the
/// provider's opaque word, which the server stores and passes back.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Handle {
    pub trx_id: u64,
    pub opaque: usize,
}

/// "No transaction" (TOI, reads).
pub const TRX_NONE: u64 = u64::MAX;
pub const CONN_NONE: u64 = u64::MAX;

/// What `opaque` encodes. Local transactions get even values (an id in the
/// node's table), writesets handed to appliers odd ones (their seqno): the
/// server may pass any value back, so nothing here is ever a pointer the
/// provider would dereference.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Opaque {
    None,
    Local(u64),
    Applier(Seqno),
}

impl Opaque {
    pub fn decode(v: usize) -> Opaque {
        if v == 0 {
            Opaque::None
        } else if v & 1 == 0 {
            Opaque::Local((v >> 1) as u64)
        } else {
            Opaque::Applier((v >> 1) as Seqno)
        }
    }

    pub fn encode(self) -> usize {
        match self {
            Opaque::None => 0,
            Opaque::Local(id) => (id as usize) << 1,
            Opaque::Applier(seqno) => ((seqno as usize) << 1) | 1,
        }
    }
}

/// `wsrep_stid_t`: the transaction's origin.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Stid {
    pub node: Uuid,
    pub trx: u64,
    pub conn: u64,
}

/// `wsrep_trx_meta_t`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Meta {
    pub gtid: Gtid,
    pub stid: Stid,
    pub depends_on: Seqno,
}

impl Meta {
    pub fn undefined() -> Meta {
        Meta {
            gtid: Gtid::UNDEFINED,
            stid: Stid { node: Uuid::NIL, trx: TRX_NONE, conn: CONN_NONE },
            depends_on: SEQNO_UNDEFINED,
        }
    }
}

/// The server's `recv_ctx` (or a replayer's `trx_ctx`): opaque to the node,
/// passed back to the callbacks of the thread that gave it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RecvCtx(pub usize);

/// The server side of the API: the callbacks `init` registered. Each
/// returns false for a callback failure.
pub trait Application: Send + Sync {
    fn connected(&self, view: &View) -> bool;
    fn view(&self, ctx: RecvCtx, view: &View) -> bool;
    /// The SST request string (method and address, NUL-separated), or None
    /// when the callback failed.
    fn sst_request(&self) -> Option<Vec<u8>>;
    /// Applies one ordered writeset on the calling thread; `exit` asks this
    /// applier thread to leave `recv`.
    fn apply(&self, ctx: RecvCtx, handle: Handle, flags: u32, data: &[u8], meta: &Meta, exit: &mut bool) -> bool;
    fn sst_donate(&self, ctx: RecvCtx, request: &[u8], state: Gtid, bypass: bool) -> bool;
    fn synced(&self) -> bool;
}

/// Keys as the server appends them: parts of opaque bytes (see
/// `writeset::Key`).
pub type KeyParts = Vec<bytes::Bytes>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_round_trips_and_never_collides() {
        for o in [Opaque::None, Opaque::Local(1), Opaque::Local(77), Opaque::Applier(0), Opaque::Applier(1 << 40)] {
            assert_eq!(Opaque::decode(o.encode()), o);
        }
        assert_ne!(Opaque::Local(3).encode(), Opaque::Applier(3).encode());
    }
}
