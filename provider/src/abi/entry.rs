//! The 45 entries of `wsrep_t`. Each is thin: it checks and copies the C
//! arguments, calls the node, writes results back, and catches every panic
//! (a panic must never unwind into mariadbd; it becomes an error code).

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::callbacks::{gtid, meta_out};
use super::provider::{from_ctx, into_ctx, provider, Provider};
use super::sys::*;
use crate::gtid::{Gtid, Uuid};
use crate::log;
use crate::node::{Handle, KeyParts, Meta, RecvCtx, Status, Stid, CAPABILITIES};
use crate::writeset::KeyKind;

/// Runs `f`, turning a panic into `on_panic` and an error log line.
fn guard<R>(name: &str, on_panic: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
            log::error!("internal error in {}: {}", name, what.unwrap_or_else(|| "panic".into()));
            on_panic
        }
    }
}

fn st(s: Status) -> wsrep_status_t {
    wsrep_status_t(s as c_int)
}

/// The common shape: find the provider, run `f` under the guard.
fn with(w: *mut wsrep_t, name: &str, f: impl FnOnce(&Provider) -> Status) -> wsrep_status_t {
    guard(name, wsrep_status_t::FATAL, || {
        // SAFETY: w is the table the server got from wsrep_loader.
        match unsafe { provider(w) } {
            Some(p) => st(f(p)),
            None => {
                log::error!("{} called on a provider that is not initialised", name);
                wsrep_status_t::NODE_FAIL
            }
        }
    })
}

/// # Safety
/// `h` is NULL or valid for reads.
unsafe fn handle_in(h: *const wsrep_ws_handle_t) -> Option<Handle> {
    // SAFETY: per the caller.
    unsafe { h.as_ref() }.map(|h| Handle { trx_id: h.trx_id, opaque: h.opaque as usize })
}

/// # Safety
/// `h` is NULL or valid for writes.
unsafe fn handle_out(h: *mut wsrep_ws_handle_t, v: Handle) {
    // SAFETY: per the caller.
    if let Some(h) = unsafe { h.as_mut() } {
        h.opaque = v.opaque as *mut c_void;
    }
}

fn uuid_in(u: &wsrep_uuid_t) -> Uuid {
    Uuid(u.data)
}

/// # Safety
/// `m` is NULL or valid for reads.
unsafe fn meta_in(m: *const wsrep_trx_meta_t) -> Meta {
    // SAFETY: per the caller.
    match unsafe { m.as_ref() } {
        None => Meta::undefined(),
        Some(m) => Meta {
            gtid: Gtid::new(uuid_in(&m.gtid.uuid), m.gtid.seqno),
            stid: Stid { node: uuid_in(&m.stid.node), trx: m.stid.trx, conn: m.stid.conn },
            depends_on: m.depends_on,
        },
    }
}

/// # Safety
/// `m` is NULL or valid for writes.
unsafe fn meta_write(m: *mut wsrep_trx_meta_t, v: &Meta) {
    // SAFETY: per the caller.
    if let Some(m) = unsafe { m.as_mut() } {
        *m = meta_out(v);
    }
}

/// Copies `count` keys of the server into parts: one buffer per key, its
/// parts slices of it (a row key has three parts, and a big UPDATE
/// appends a key per row).
///
/// # Safety
/// `keys` is valid for `count` keys whose parts are valid buffers.
unsafe fn keys_in(keys: *const wsrep_key_t, count: usize) -> Vec<KeyParts> {
    // SAFETY: per the caller.
    let keys = unsafe { c_array(keys, count) };
    keys.iter()
        .map(|k| {
            // SAFETY: each key's parts are valid buffers, per the caller.
            let parts = || unsafe { k.parts() }.iter().map(|b| unsafe { b.as_bytes() });
            let mut whole = Vec::with_capacity(parts().map(<[u8]>::len).sum());
            parts().for_each(|p| whole.extend_from_slice(p));
            let whole = bytes::Bytes::from(whole);
            let mut at = 0;
            let mut slice = |len: usize| {
                at += len;
                whole.slice(at - len..at)
            };
            parts().map(|p| slice(p.len())).collect()
        })
        .collect()
}

fn key_kind(t: wsrep_key_type_t) -> Option<KeyKind> {
    match t {
        wsrep_key_type_t::SHARED => Some(KeyKind::Shared),
        wsrep_key_type_t::REFERENCE => Some(KeyKind::Reference),
        wsrep_key_type_t::UPDATE => Some(KeyKind::Update),
        wsrep_key_type_t::EXCLUSIVE => Some(KeyKind::Exclusive),
        _ => None,
    }
}

pub unsafe extern "C" fn init(w: *mut wsrep_t, args: *const wsrep_init_args) -> wsrep_status_t {
    guard("init", wsrep_status_t::FATAL, || {
        // SAFETY: the server passes its table and valid init args.
        let (Some(w), Some(args)) = (unsafe { w.as_mut() }, unsafe { args.as_ref() }) else {
            return wsrep_status_t::NODE_FAIL;
        };
        if !w.ctx.is_null() {
            log::error!("init called twice");
            return wsrep_status_t::NODE_FAIL;
        }
        // SAFETY: args is valid for the call.
        match unsafe { Provider::init(args) } {
            Ok(p) => {
                w.ctx = into_ctx(p);
                wsrep_status_t::OK
            }
            Err(s) => st(s),
        }
    })
}

pub unsafe extern "C" fn capabilities(_w: *mut wsrep_t) -> wsrep_cap_t {
    CAPABILITIES
}

pub unsafe extern "C" fn options_set(w: *mut wsrep_t, conf: *const c_char) -> wsrep_status_t {
    // SAFETY: conf is NULL or the server's C string.
    let conf = unsafe { cstr_lossy(conf) }.map(|c| c.into_owned()).unwrap_or_default();
    with(w, "options_set", |p| p.options_set(&conf))
}

pub unsafe extern "C" fn options_get(w: *mut wsrep_t) -> *mut c_char {
    guard("options_get", std::ptr::null_mut(), || {
        // SAFETY: w is the server's table.
        match unsafe { provider(w) } {
            Some(p) => p.options_get(),
            None => super::provider::malloc_cstring(""),
        }
    })
}

pub unsafe extern "C" fn enc_set_key(_w: *mut wsrep_t, _key: *const wsrep_enc_key_t) -> wsrep_status_t {
    wsrep_status_t::NOT_IMPLEMENTED
}

pub unsafe extern "C" fn connect(
    w: *mut wsrep_t,
    cluster_name: *const c_char,
    cluster_url: *const c_char,
    state_donor: *const c_char,
    bootstrap: wsrep_bool_t,
) -> wsrep_status_t {
    // SAFETY: NULL or the server's C strings.
    let text = |s| unsafe { cstr_lossy(s) }.map(|c| c.into_owned()).unwrap_or_default();
    let (name, url, donor) = (text(cluster_name), text(cluster_url), text(state_donor));
    with(w, "connect", |p| {
        let address = match lockstep_config::parse_cluster_address(&url) {
            Ok(a) => a,
            // NODE_FAIL, as Galera answers a connect that fails: the
            // server logs "wsrep::connect(...) failed: 7", which the
            // galera suite expects.
            Err(e) => {
                log::error!("{}", e);
                return Status::NodeFail;
            }
        };
        if let Err(s) = p.address_options(&address) {
            return s;
        }
        p.node.connect(&name, &address, &donor, bootstrap)
    })
}

pub unsafe extern "C" fn disconnect(w: *mut wsrep_t) -> wsrep_status_t {
    with(w, "disconnect", |p| p.node.disconnect())
}

pub unsafe extern "C" fn recv(w: *mut wsrep_t, recv_ctx: *mut c_void) -> wsrep_status_t {
    with(w, "recv", |p| p.node.recv(RecvCtx(recv_ctx as usize)))
}

pub unsafe extern "C" fn assign_read_view(_w: *mut wsrep_t, _h: *mut wsrep_ws_handle_t, _rv: *const wsrep_gtid_t) -> wsrep_status_t {
    wsrep_status_t::NOT_IMPLEMENTED
}

pub unsafe extern "C" fn certify(
    w: *mut wsrep_t,
    conn_id: wsrep_conn_id_t,
    ws_handle: *mut wsrep_ws_handle_t,
    flags: u32,
    meta: *mut wsrep_trx_meta_t,
) -> wsrep_status_t {
    with(w, "certify", |p| {
        // SAFETY: the server's handle and meta, valid for the call.
        let Some(mut h) = (unsafe { handle_in(ws_handle) }) else { return Status::TrxMissing };
        let mut m = unsafe { meta_in(meta) };
        let s = p.node.certify(conn_id, &mut h, flags, &mut m);
        // SAFETY: as above.
        unsafe {
            handle_out(ws_handle, h);
            meta_write(meta, &m);
        }
        s
    })
}

pub unsafe extern "C" fn commit_order_enter(w: *mut wsrep_t, ws_handle: *const wsrep_ws_handle_t, _meta: *const wsrep_trx_meta_t) -> wsrep_status_t {
    with(w, "commit_order_enter", |p| match unsafe { handle_in(ws_handle) } {
        Some(h) => p.node.commit_order_enter(&h),
        None => Status::TrxMissing,
    })
}

pub unsafe extern "C" fn commit_order_leave(
    w: *mut wsrep_t,
    ws_handle: *const wsrep_ws_handle_t,
    _meta: *const wsrep_trx_meta_t,
    error: *const wsrep_buf_t,
) -> wsrep_status_t {
    with(w, "commit_order_leave", |p| {
        // SAFETY: the server's handle and error buffer, valid for the call.
        let err = unsafe { buf_bytes(error) };
        match unsafe { handle_in(ws_handle) } {
            Some(h) => p.node.commit_order_leave(&h, err),
            None => Status::TrxMissing,
        }
    })
}

pub unsafe extern "C" fn release(w: *mut wsrep_t, ws_handle: *mut wsrep_ws_handle_t) -> wsrep_status_t {
    with(w, "release", |p| {
        // SAFETY: the server's handle, valid for the call.
        let Some(mut h) = (unsafe { handle_in(ws_handle) }) else { return Status::Ok };
        let s = p.node.release(&mut h);
        unsafe { handle_out(ws_handle, h) };
        s
    })
}

pub unsafe extern "C" fn replay_trx(w: *mut wsrep_t, ws_handle: *const wsrep_ws_handle_t, trx_ctx: *mut c_void) -> wsrep_status_t {
    // wsrep-lib shuts the server down on anything but OK or TRX_FAIL: a
    // provider fault must surface as a failed replay (a deadlock error).
    let s = with(w, "replay_trx", |p| match unsafe { handle_in(ws_handle) } {
        Some(h) => p.node.replay(&h, RecvCtx(trx_ctx as usize)),
        None => Status::TrxFail,
    });
    if s == wsrep_status_t::FATAL { wsrep_status_t::TRX_FAIL } else { s }
}

pub unsafe extern "C" fn abort_certification(
    w: *mut wsrep_t,
    bf_seqno: wsrep_seqno_t,
    victim_trx: wsrep_trx_id_t,
    victim_seqno: *mut wsrep_seqno_t,
) -> wsrep_status_t {
    with(w, "abort_certification", |p| {
        let mut vs = -1;
        let s = p.node.abort_certification(bf_seqno, victim_trx, &mut vs);
        // SAFETY: NULL or the server's out-parameter.
        if let Some(out) = unsafe { victim_seqno.as_mut() } {
            *out = vs;
        }
        s
    })
}

pub unsafe extern "C" fn rollback(w: *mut wsrep_t, trx: wsrep_trx_id_t, data: *const wsrep_buf_t) -> wsrep_status_t {
    with(w, "rollback", |p| p.node.rollback(trx, unsafe { buf_bytes(data) }))
}

pub unsafe extern "C" fn append_key(
    w: *mut wsrep_t,
    ws_handle: *mut wsrep_ws_handle_t,
    keys: *const wsrep_key_t,
    count: usize,
    key_type: wsrep_key_type_t,
    _copy: wsrep_bool_t,
) -> wsrep_status_t {
    with(w, "append_key", |p| {
        let Some(kind) = key_kind(key_type) else {
            log::error!("append_key: unknown key type {}", key_type.0);
            return Status::ConnFail;
        };
        // SAFETY: the server's handle and key array, valid for the call.
        let Some(mut h) = (unsafe { handle_in(ws_handle) }) else { return Status::ConnFail };
        // No key at all is the server-wide (zero-level) key of that kind.
        let parts = if count == 0 { vec![vec![]] } else { unsafe { keys_in(keys, count) } };
        let s = p.node.append_key(&mut h, parts, kind);
        unsafe { handle_out(ws_handle, h) };
        s
    })
}

pub unsafe extern "C" fn append_data(
    w: *mut wsrep_t,
    ws_handle: *mut wsrep_ws_handle_t,
    data: *const wsrep_buf_t,
    count: usize,
    data_type: wsrep_data_type_t,
    _copy: wsrep_bool_t,
) -> wsrep_status_t {
    with(w, "append_data", |p| {
        // SAFETY: the server's handle and buffers, valid for the call.
        let Some(mut h) = (unsafe { handle_in(ws_handle) }) else { return Status::ConnFail };
        if data_type != wsrep_data_type_t::ORDERED {
            // Unordered and annotation data are not applied anywhere.
            return Status::Ok;
        }
        let bufs: Vec<&[u8]> = unsafe { c_array(data, count) }.iter().map(|b| unsafe { b.as_bytes() }).collect();
        let s = p.node.append_data(&mut h, &bufs);
        unsafe { handle_out(ws_handle, h) };
        s
    })
}

pub unsafe extern "C" fn sync_wait(w: *mut wsrep_t, upto: *mut wsrep_gtid_t, tout: c_int, out: *mut wsrep_gtid_t) -> wsrep_status_t {
    with(w, "sync_wait", |p| {
        // SAFETY: NULL or the server's gtids.
        let upto = unsafe { upto.as_ref() }.map(|g| Gtid::new(uuid_in(&g.uuid), g.seqno));
        let mut g = Gtid::UNDEFINED;
        let s = p.node.sync_wait(upto, tout, Some(&mut g));
        if let Some(out) = unsafe { out.as_mut() } {
            if s == Status::Ok {
                *out = gtid(g);
            }
        }
        s
    })
}

pub unsafe extern "C" fn last_committed_id(w: *mut wsrep_t, out: *mut wsrep_gtid_t) -> wsrep_status_t {
    with(w, "last_committed_id", |p| {
        // SAFETY: NULL or the server's gtid.
        if let Some(out) = unsafe { out.as_mut() } {
            *out = gtid(p.node.last_committed_id());
        }
        Status::Ok
    })
}

pub unsafe extern "C" fn free_connection(_w: *mut wsrep_t, _conn_id: wsrep_conn_id_t) -> wsrep_status_t {
    wsrep_status_t::OK
}

pub unsafe extern "C" fn to_execute_start(
    w: *mut wsrep_t,
    conn_id: wsrep_conn_id_t,
    keys: *const wsrep_key_t,
    keys_num: usize,
    action: *const wsrep_buf_t,
    count: usize,
    flags: u32,
    meta: *mut wsrep_trx_meta_t,
) -> wsrep_status_t {
    with(w, "to_execute_start", |p| {
        // SAFETY: the server's keys, buffers and meta, valid for the call.
        let keys = unsafe { keys_in(keys, keys_num) };
        let action: Vec<&[u8]> = unsafe { c_array(action, count) }.iter().map(|b| unsafe { b.as_bytes() }).collect();
        let mut m = unsafe { meta_in(meta) };
        let s = p.node.to_execute_start(conn_id, &keys, &action, flags, &mut m);
        unsafe { meta_write(meta, &m) };
        s
    })
}

pub unsafe extern "C" fn to_execute_end(w: *mut wsrep_t, conn_id: wsrep_conn_id_t, error: *const wsrep_buf_t) -> wsrep_status_t {
    with(w, "to_execute_end", |p| p.node.to_execute_end(conn_id, unsafe { buf_bytes(error) }))
}

pub unsafe extern "C" fn preordered_collect(
    _w: *mut wsrep_t,
    _h: *mut wsrep_po_handle_t,
    _data: *const wsrep_buf_t,
    _count: usize,
    _copy: wsrep_bool_t,
) -> wsrep_status_t {
    wsrep_status_t::NOT_IMPLEMENTED
}

pub unsafe extern "C" fn preordered_commit(
    _w: *mut wsrep_t,
    _h: *mut wsrep_po_handle_t,
    _source: *const wsrep_uuid_t,
    _flags: u32,
    _pa_range: c_int,
    _commit: wsrep_bool_t,
) -> wsrep_status_t {
    wsrep_status_t::NOT_IMPLEMENTED
}

pub unsafe extern "C" fn sst_sent(w: *mut wsrep_t, state_id: *const wsrep_gtid_t, rcode: c_int) -> wsrep_status_t {
    with(w, "sst_sent", |p| {
        // SAFETY: NULL or the server's gtid.
        let g = unsafe { state_id.as_ref() }.map_or(Gtid::UNDEFINED, |g| Gtid::new(uuid_in(&g.uuid), g.seqno));
        p.node.sst_sent(g, rcode)
    })
}

pub unsafe extern "C" fn sst_received(w: *mut wsrep_t, state_id: *const wsrep_gtid_t, _state: *const wsrep_buf_t, rcode: c_int) -> wsrep_status_t {
    with(w, "sst_received", |p| {
        // SAFETY: NULL or the server's gtid.
        let g = unsafe { state_id.as_ref() }.map_or(Gtid::UNDEFINED, |g| Gtid::new(uuid_in(&g.uuid), g.seqno));
        p.node.sst_received(g, rcode)
    })
}

pub unsafe extern "C" fn snapshot(_w: *mut wsrep_t, _msg: *const wsrep_buf_t, _donor: *const c_char) -> wsrep_status_t {
    wsrep_status_t::NOT_IMPLEMENTED
}

pub unsafe extern "C" fn stats_get(w: *mut wsrep_t) -> *mut wsrep_stats_var {
    guard("stats_get", std::ptr::null_mut(), || match unsafe { provider(w) } {
        Some(p) => p.stats_get(),
        None => std::ptr::null_mut(),
    })
}

pub unsafe extern "C" fn stats_free(w: *mut wsrep_t, vars: *mut wsrep_stats_var) {
    guard("stats_free", (), || {
        if let Some(p) = unsafe { provider(w) } {
            p.stats_free(vars)
        }
    })
}

pub unsafe extern "C" fn stats_reset(w: *mut wsrep_t) {
    guard("stats_reset", (), || {
        if let Some(p) = unsafe { provider(w) } {
            p.node.stats_reset()
        }
    })
}

pub unsafe extern "C" fn pause(w: *mut wsrep_t) -> wsrep_seqno_t {
    // Exactly -1 on any failure: wsrep-lib reads other negatives as seqnos.
    guard("pause", -1, || match unsafe { provider(w) } {
        Some(p) => p.node.pause(),
        None => -1,
    })
}

pub unsafe extern "C" fn resume(w: *mut wsrep_t) -> wsrep_status_t {
    with(w, "resume", |p| p.node.resume())
}

pub unsafe extern "C" fn desync(w: *mut wsrep_t) -> wsrep_status_t {
    with(w, "desync", |p| p.node.desync())
}

pub unsafe extern "C" fn resync(w: *mut wsrep_t) -> wsrep_status_t {
    with(w, "resync", |p| p.node.resync())
}

pub unsafe extern "C" fn lock(_w: *mut wsrep_t, _name: *const c_char, _shared: wsrep_bool_t, _owner: u64, _tout: i64) -> wsrep_status_t {
    wsrep_status_t::NOT_IMPLEMENTED
}

pub unsafe extern "C" fn unlock(_w: *mut wsrep_t, _name: *const c_char, _owner: u64) -> wsrep_status_t {
    wsrep_status_t::OK
}

pub unsafe extern "C" fn is_locked(_w: *mut wsrep_t, _name: *const c_char, _conn: *mut u64, _node: *mut wsrep_uuid_t) -> wsrep_bool_t {
    false
}

/// Called twice by the server (its provider object's destructor, then the
/// loader's unload): the second call finds ctx NULL and does nothing. All
/// provider threads are joined before the first call returns.
pub unsafe extern "C" fn free(w: *mut wsrep_t) {
    guard("free", (), || {
        // SAFETY: the server's table.
        let Some(w) = (unsafe { w.as_mut() }) else { return };
        if w.ctx.is_null() {
            return;
        }
        // SAFETY: ctx came from into_ctx in init and is cleared right here.
        let p = unsafe { from_ctx(w.ctx) };
        w.ctx = std::ptr::null_mut();
        p.node.disconnect();
        drop(p);
        log::set_sink(None);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_keeps_each_part_of_each_key() {
        let first = [wsrep_buf_t::from_slice(b"db"), wsrep_buf_t::from_slice(b"t1"), wsrep_buf_t::from_slice(&[0, 1, 2])];
        let second = [wsrep_buf_t::from_slice(b""), wsrep_buf_t::from_slice(b"x")];
        let keys = [wsrep_key_t { key_parts: first.as_ptr(), key_parts_num: 3 }, wsrep_key_t { key_parts: second.as_ptr(), key_parts_num: 2 }];
        // SAFETY: `keys` points at the arrays above, whose buffers point at statics.
        let got = unsafe { keys_in(keys.as_ptr(), keys.len()) };
        let got: Vec<Vec<&[u8]>> = got.iter().map(|k| k.iter().map(|p| &p[..]).collect()).collect();
        assert_eq!(got, [vec![b"db".as_slice(), b"t1", &[0, 1, 2]], vec![b"".as_slice(), b"x"]]);
    }
}
