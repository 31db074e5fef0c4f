//! The exported symbols: `wsrep_loader`, `wsrep_interface_version`, and
//! Galera's set of optional services (allowlist, event, config, node
//! isolation). Thread and TLS services are not exported (see sys.rs), nor
//! `wsrep_certify_v1`: without it wsrep-lib uses plain `certify`, as with
//! a Galera that lacks it, and we promise nothing we do not do.

use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use super::entry::*;
use super::sys::*;

/// `wsrep_provider_version`: MariaDB's mtr suites parse the
/// `<major>.<minor>(r...)` shape to gate tests on Galera's version, so we
/// report the Galera release whose behaviour we match, with our own
/// version inside the parentheses.
pub const PROVIDER_VERSION: &str = concat!("4.23(rlockstep-", env!("CARGO_PKG_VERSION"), ")\0");
pub const PROVIDER_NAME: &str = "lockstep\0";
pub const PROVIDER_VENDOR: &str = "lockstep developers\0";

/// A `const char*` data symbol, as the loader expects (`*sym` is read).
#[repr(transparent)]
pub struct CStrPtr(*const c_char);
// SAFETY: points to a static, immutable string.
unsafe impl Sync for CStrPtr {}

#[no_mangle]
pub static wsrep_interface_version: CStrPtr = CStrPtr(c"26".as_ptr());

fn table() -> wsrep_t {
    wsrep_t {
        version: WSREP_INTERFACE_VERSION.as_ptr(),
        init,
        capabilities,
        options_set,
        options_get,
        enc_set_key,
        connect,
        disconnect,
        recv,
        assign_read_view,
        certify,
        commit_order_enter,
        commit_order_leave,
        release,
        replay_trx,
        abort_certification,
        rollback,
        append_key,
        append_data,
        sync_wait,
        last_committed_id,
        free_connection,
        to_execute_start,
        to_execute_end,
        preordered_collect,
        preordered_commit,
        sst_sent,
        sst_received,
        snapshot,
        stats_get,
        stats_free,
        stats_reset,
        pause,
        resume,
        desync,
        resync,
        lock,
        unlock,
        is_locked,
        provider_name: PROVIDER_NAME.as_ptr().cast(),
        provider_version: PROVIDER_VERSION.as_ptr().cast(),
        provider_vendor: PROVIDER_VENDOR.as_ptr().cast(),
        free,
        dlh: ptr::null_mut(),
        ctx: ptr::null_mut(),
    }
}

/// Fills the server's (uninitialised, malloc'ed) table; 0 on success.
///
/// # Safety
/// `w` is NULL or valid for writing a `wsrep_t`.
#[no_mangle]
pub unsafe extern "C" fn wsrep_loader(w: *mut wsrep_t) -> c_int {
    if w.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: valid for writes per the caller; written whole, never read
    // before.
    unsafe { ptr::write(w, table()) };
    0
}

/// What the server's allowlist service gave us; consulted for inbound
/// group connections once nodes talk to each other.
struct Allowlist {
    cb: Option<wsrep_allowlist_cb_t>,
    ctx: *mut c_void,
}
// SAFETY: the server's callback and context are callable from any thread.
unsafe impl Send for Allowlist {}

static ALLOWLIST: Mutex<Option<Allowlist>> = Mutex::new(None);

/// # Safety
/// `s` is NULL or the server's service struct.
#[no_mangle]
pub unsafe extern "C" fn wsrep_init_allowlist_service_v1(s: *mut wsrep_allowlist_service_v1_t) -> c_int {
    // SAFETY: per the caller.
    let Some(s) = (unsafe { s.as_ref() }) else { return libc::EINVAL };
    *ALLOWLIST.lock().unwrap_or_else(|e| e.into_inner()) = Some(Allowlist { cb: s.allowlist_cb, ctx: s.context.cast() });
    0
}

#[no_mangle]
pub extern "C" fn wsrep_deinit_allowlist_service_v1() {
    *ALLOWLIST.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Whether the server's allowlist (`wsrep_allowlist`) admits a peer IP.
pub fn allowed(ip: &str) -> bool {
    let g = ALLOWLIST.lock().unwrap_or_else(|e| e.into_inner());
    let Some(Allowlist { cb: Some(cb), ctx }) = g.as_ref() else { return true };
    let buf = wsrep_buf_t::from_slice(ip.as_bytes());
    // SAFETY: the registered callback with its context; buf outlives it.
    unsafe { cb(ctx.cast(), wsrep_allowlist_key_t::IP, &buf) == wsrep_status_t::OK }
}

/// The event service is accepted and unused: Galera reports progress
/// through it, which MariaDB 10.11 does not ask for.
///
/// # Safety
/// `s` is NULL or the server's service struct.
#[no_mangle]
pub unsafe extern "C" fn wsrep_init_event_service_v1(_s: *mut wsrep_event_service_v1_t) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn wsrep_deinit_event_service_v1() {}

/// # Safety
/// `s` is NULL or the server's service struct, valid for writes.
#[no_mangle]
pub unsafe extern "C" fn wsrep_init_config_service_v1(s: *mut wsrep_config_service_v1_t) -> c_int {
    // SAFETY: per the caller.
    let Some(s) = (unsafe { s.as_mut() }) else { return libc::EINVAL };
    s.get_parameters = Some(super::config_service::get_parameters);
    0
}

#[no_mangle]
pub extern "C" fn wsrep_deinit_config_service_v1() {}

/// 0 not isolated, 1 isolated, 2 force disconnect. Read by the transport.
pub static ISOLATION: AtomicU8 = AtomicU8::new(0);

/// Called from MariaDB's fatal-signal handler: only an atomic store
/// (async-signal-safe).
#[no_mangle]
pub extern "C" fn wsrep_node_isolation_mode_set_v1(mode: wsrep_node_isolation_mode) -> wsrep_node_isolation_result {
    match mode.0 {
        m @ 0..=2 => {
            ISOLATION.store(m as u8, Ordering::SeqCst);
            wsrep_node_isolation_result::SUCCESS
        }
        _ => wsrep_node_isolation_result::INVALID_VALUE,
    }
}
