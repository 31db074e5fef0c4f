//! The server's callbacks (`init_args`), wrapped as the node's
//! [`Application`]: node types in, C types out.

use std::ffi::{c_char, c_void, CStr};
use std::ptr;

use super::sys::*;
use crate::group::View;
use crate::gtid::{Gtid, Uuid};
use crate::log;
use crate::node::{Application, Handle, Meta, RecvCtx, CAPABILITIES};

/// The application protocol we speak; MariaDB 10.11 offers 4.
pub const MAX_PROTO_VER: i32 = 4;

pub struct ServerCallbacks {
    app_ctx: *mut c_void,
    proto_ver: i32,
    connected: Option<wsrep_connected_cb_t>,
    view: Option<wsrep_view_cb_t>,
    sst_request: Option<wsrep_sst_request_cb_t>,
    apply: Option<wsrep_apply_cb_t>,
    sst_donate: Option<wsrep_sst_donate_cb_t>,
    synced: Option<wsrep_synced_cb_t>,
}

// SAFETY: app_ctx is the server's object (wsrep::server_state), made to be
// called from any provider thread; the callbacks are plain C functions.
unsafe impl Send for ServerCallbacks {}
// SAFETY: as above; nothing here is mutated after init.
unsafe impl Sync for ServerCallbacks {}

impl ServerCallbacks {
    pub fn new(args: &wsrep_init_args) -> ServerCallbacks {
        ServerCallbacks {
            app_ctx: args.app_ctx,
            proto_ver: args.proto_ver.clamp(0, MAX_PROTO_VER),
            connected: args.connected_cb,
            view: args.view_cb,
            sst_request: args.sst_request_cb,
            apply: args.apply_cb,
            sst_donate: args.sst_donate_cb,
            synced: args.synced_cb,
        }
    }

    fn view_info(&self, v: &View) -> OwnedViewInfo {
        let members: Vec<wsrep_member_info_t> = v
            .members
            .iter()
            .map(|m| wsrep_member_info_t::new(uuid(m.id), m.name.as_bytes(), m.incoming.as_bytes()))
            .collect();
        let head = ViewHead {
            state_id: gtid(Gtid::new(v.history, v.seqno)),
            view: if v.primary { v.conf_id } else { -1 },
            status: if v.primary { wsrep_view_status_t::PRIMARY } else { wsrep_view_status_t::NON_PRIMARY },
            capabilities: CAPABILITIES,
            my_idx: v.my_idx,
            proto_ver: self.proto_ver,
        };
        OwnedViewInfo::new(head, &members)
    }
}

pub fn uuid(u: Uuid) -> wsrep_uuid_t {
    wsrep_uuid_t::new(u.0)
}

pub fn gtid(g: Gtid) -> wsrep_gtid_t {
    wsrep_gtid_t::new(uuid(g.uuid), g.seqno)
}

pub fn meta_out(m: &Meta) -> wsrep_trx_meta_t {
    wsrep_trx_meta_t {
        gtid: gtid(m.gtid),
        stid: wsrep_stid_t { node: uuid(m.stid.node), trx: m.stid.trx, conn: m.stid.conn },
        depends_on: m.depends_on,
    }
}

fn ok(s: wsrep_cb_status_t) -> bool {
    s.is_success()
}

impl Application for ServerCallbacks {
    fn connected(&self, v: &View) -> bool {
        let Some(cb) = self.connected else { return true };
        let info = self.view_info(v);
        // SAFETY: the server registered this callback for this context; the
        // view lives until the call returns.
        ok(unsafe { cb(self.app_ctx, info.as_ptr()) })
    }

    fn view(&self, ctx: RecvCtx, v: &View) -> bool {
        let Some(cb) = self.view else { return true };
        let info = self.view_info(v);
        // SAFETY: as for connected; recv_ctx is the delivering thread's.
        ok(unsafe { cb(self.app_ctx, ctx.0 as *mut c_void, info.as_ptr(), ptr::null(), 0) })
    }

    fn sst_request(&self) -> Option<Vec<u8>> {
        let cb = self.sst_request?;
        let mut req: *mut c_void = ptr::null_mut();
        let mut len: usize = 0;
        // SAFETY: the server fills req with a malloc'ed buffer of len bytes.
        let status = unsafe { cb(self.app_ctx, &mut req, &mut len) };
        // SAFETY: req is NULL or the server's malloc'ed buffer of len bytes.
        let bytes = unsafe { c_array(req.cast::<u8>(), len) }.to_vec();
        if !req.is_null() {
            // SAFETY: ownership passes to the provider, which frees with free().
            unsafe { libc::free(req) };
        }
        ok(status).then_some(bytes)
    }

    fn apply(&self, ctx: RecvCtx, h: Handle, flags: u32, data: &[u8], meta: &Meta, exit: &mut bool) -> bool {
        let Some(cb) = self.apply else {
            log::error!("the server gave no apply callback");
            return false;
        };
        let handle = wsrep_ws_handle_t { trx_id: h.trx_id, opaque: h.opaque as *mut c_void };
        let buf = wsrep_buf_t::from_slice(data);
        let m = meta_out(meta);
        // SAFETY: every pointer refers to locals that outlive the call.
        ok(unsafe { cb(ctx.0 as *mut c_void, &handle, flags, &buf, &m, exit) })
    }

    fn sst_donate(&self, ctx: RecvCtx, request: &[u8], state: Gtid, bypass: bool) -> bool {
        let Some(cb) = self.sst_donate else { return false };
        let msg = wsrep_buf_t::from_slice(request);
        let g = gtid(state);
        // SAFETY: locals outlive the call; no state buffer (NULL).
        ok(unsafe { cb(self.app_ctx, ctx.0 as *mut c_void, &msg, &g, ptr::null(), bypass) })
    }

    fn synced(&self) -> bool {
        let Some(cb) = self.synced else { return true };
        // SAFETY: registered by the server for this context.
        ok(unsafe { cb(self.app_ctx) })
    }
}

/// Routes the provider log to the server's `logger_cb`.
pub fn logger_sink(cb: wsrep_log_cb_t) -> crate::log::Sink {
    std::sync::Arc::new(move |level, msg| {
        let lvl = match level {
            log::Level::Fatal => wsrep_log_level_t::FATAL,
            log::Level::Error => wsrep_log_level_t::ERROR,
            log::Level::Warn => wsrep_log_level_t::WARN,
            log::Level::Info => wsrep_log_level_t::INFO,
            log::Level::Debug => wsrep_log_level_t::DEBUG,
        };
        // Interior NULs would cut the line short: show them as spaces.
        let text: Vec<u8> = msg.bytes().map(|b| if b == 0 { b' ' } else { b }).chain([0]).collect();
        let c = CStr::from_bytes_with_nul(&text).expect("NUL-terminated without interior NUL");
        // SAFETY: the server's logger takes a NUL-terminated string for the
        // duration of the call.
        unsafe { cb(lvl, c.as_ptr() as *const c_char) }
    })
}
