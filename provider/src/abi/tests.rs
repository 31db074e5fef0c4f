//! The provider through its C table, as mariadbd drives it: load, init,
//! connect, an applier in recv, a commit, stats, options, disconnect, free
//! twice. Also: bad input from the server never panics across the boundary.

use std::ffi::{c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use super::loader::wsrep_loader;
use super::sys::*;

/// Callbacks are process-wide C functions: tests that use them run one at
/// a time.
static SERIAL: Mutex<()> = Mutex::new(());
static VIEWS: AtomicUsize = AtomicUsize::new(0);
static SYNCED: AtomicUsize = AtomicUsize::new(0);
static FINAL_VIEWS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn connected_cb(_app: *mut c_void, v: *const wsrep_view_info_t) -> wsrep_cb_status_t {
    let v = unsafe { &*v };
    assert!(v.my_idx >= 0 && v.my_idx < v.memb_num);
    wsrep_cb_status_t::SUCCESS
}

unsafe extern "C" fn view_cb(_app: *mut c_void, recv_ctx: *mut c_void, v: *const wsrep_view_info_t, _s: *const std::ffi::c_char, _l: usize) -> wsrep_cb_status_t {
    assert!(!recv_ctx.is_null(), "views are delivered on applier threads");
    let v = unsafe { &*v };
    if v.memb_num == 0 && v.my_idx == -1 && v.status != wsrep_view_status_t::PRIMARY {
        FINAL_VIEWS.fetch_add(1, Ordering::SeqCst);
    } else {
        assert_eq!(v.status, wsrep_view_status_t::PRIMARY);
        VIEWS.fetch_add(1, Ordering::SeqCst);
    }
    wsrep_cb_status_t::SUCCESS
}

unsafe extern "C" fn synced_cb(_app: *mut c_void) -> wsrep_cb_status_t {
    SYNCED.fetch_add(1, Ordering::SeqCst);
    wsrep_cb_status_t::SUCCESS
}

unsafe extern "C" fn apply_cb(
    _ctx: *mut c_void,
    _h: *const wsrep_ws_handle_t,
    _flags: u32,
    _data: *const wsrep_buf_t,
    _meta: *const wsrep_trx_meta_t,
    _exit: *mut wsrep_bool_t,
) -> wsrep_cb_status_t {
    wsrep_cb_status_t::SUCCESS
}

struct Loaded {
    w: Box<wsrep_t>,
    /// The data directory of `init`, removed when the test ends.
    dir: Option<tempfile::TempDir>,
}

impl Loaded {
    fn new() -> Loaded {
        let mut mem = std::mem::MaybeUninit::<wsrep_t>::uninit();
        assert_eq!(unsafe { wsrep_loader(mem.as_mut_ptr()) }, 0);
        let w = Box::new(unsafe { mem.assume_init() });
        assert_eq!(unsafe { CStr::from_ptr(w.version) }, c"26");
        Loaded { w, dir: None }
    }

    fn ptr(&mut self) -> *mut wsrep_t {
        &mut *self.w
    }

    fn init(&mut self, options: &str) -> wsrep_status_t {
        let c = |s: &str| CString::new(s).unwrap();
        let tmp = tempfile::Builder::new().prefix("lockstep-abi-").tempdir().unwrap();
        let dir = format!("{}/", tmp.path().display());
        self.dir = Some(tmp);
        let (name, addr, inc, data, opts) = (c("node1"), c("127.0.0.1:4567"), c("127.0.0.1:3306"), c(&dir), c(options));
        let args = wsrep_init_args {
            app_ctx: ptr::null_mut(),
            node_name: name.as_ptr(),
            node_address: addr.as_ptr(),
            node_incoming: inc.as_ptr(),
            data_dir: data.as_ptr(),
            options: opts.as_ptr(),
            proto_ver: 4,
            state_id: ptr::null(),
            state: ptr::null(),
            logger_cb: None,
            connected_cb: Some(connected_cb),
            view_cb: Some(view_cb),
            sst_request_cb: None,
            encrypt_cb: None,
            apply_cb: Some(apply_cb),
            unordered_cb: None,
            sst_donate_cb: None,
            synced_cb: Some(synced_cb),
        };
        let w = self.ptr();
        unsafe { (self.w.init)(w, &args) }
    }
}

struct SendPtr(*mut wsrep_t);
unsafe impl Send for SendPtr {}

#[test]
fn a_server_lifecycle_through_the_c_table() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut l = Loaded::new();
    let w = l.ptr();
    let t = *l.w;
    assert_eq!(l.init("gcache.size=10M; repl.causal_read_timeout=PT90S"), wsrep_status_t::OK);
    unsafe {
        assert_ne!((t.capabilities)(w) & WSREP_CAP_STREAMING, 0);
        let url = CString::new("gcomm://").unwrap();
        assert_eq!((t.connect)(w, c"test".as_ptr(), url.as_ptr(), c"".as_ptr(), true), wsrep_status_t::OK);
    }
    let (synced0, final0) = (SYNCED.load(Ordering::SeqCst), FINAL_VIEWS.load(Ordering::SeqCst));
    let applier = {
        let p = SendPtr(w);
        thread::spawn(move || {
            let p = p;
            unsafe { (t.recv)(p.0, 1 as *mut c_void) }
        })
    };
    for _ in 0..200 {
        if SYNCED.load(Ordering::SeqCst) > synced0 {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert!(SYNCED.load(Ordering::SeqCst) > synced0, "synced_cb after the bootstrap view");

    unsafe {
        // One autocommit write, as wsrep-lib sends it.
        let mut h = wsrep_ws_handle_t { trx_id: 16, opaque: ptr::null_mut() };
        let parts = [wsrep_buf_t::from_slice(b"d"), wsrep_buf_t::from_slice(b"t"), wsrep_buf_t::from_slice(&[0, 4, 0, 0, 0])];
        let key = wsrep_key_t { key_parts: parts.as_ptr(), key_parts_num: 3 };
        assert_eq!((t.append_key)(w, &mut h, &key, 1, wsrep_key_type_t::EXCLUSIVE, true), wsrep_status_t::OK);
        assert!(!h.opaque.is_null(), "the provider writes its handle back");
        let data = wsrep_buf_t::from_slice(b"binlog events");
        assert_eq!((t.append_data)(w, &mut h, &data, 1, wsrep_data_type_t::ORDERED, true), wsrep_status_t::OK);
        let mut meta = wsrep_trx_meta_t {
            gtid: wsrep_gtid_t::UNDEFINED,
            stid: wsrep_stid_t { node: wsrep_uuid_t::UNDEFINED, trx: u64::MAX, conn: u64::MAX },
            depends_on: -1,
        };
        assert_eq!((t.certify)(w, 10, &mut h, WSREP_FLAG_TRX_START | WSREP_FLAG_TRX_END, &mut meta), wsrep_status_t::OK);
        assert_eq!(meta.gtid.seqno, 2);
        assert_eq!(meta.stid.trx, 16);
        assert_eq!(meta.stid.conn, u64::MAX, "conn is left as passed");
        assert_eq!((t.commit_order_enter)(w, &h, &meta), wsrep_status_t::OK);
        assert_eq!((t.commit_order_leave)(w, &h, &meta, ptr::null()), wsrep_status_t::OK);
        assert_eq!((t.release)(w, &mut h), wsrep_status_t::OK);
        assert!(h.opaque.is_null());
        let mut g = wsrep_gtid_t::UNDEFINED;
        assert_eq!((t.last_committed_id)(w, &mut g), wsrep_status_t::OK);
        assert_eq!(g.seqno, 2);

        // Stats: NULL-terminated, Galera's names first, then lockstep's.
        let stats = (t.stats_get)(w);
        let mut names = vec![];
        let mut i = 0;
        while !(*stats.add(i)).name.is_null() {
            names.push(CStr::from_ptr((*stats.add(i)).name).to_str().unwrap().to_string());
            i += 1;
        }
        (t.stats_free)(w, stats);
        assert_eq!(names.len(), lockstep_config::StatusVar::ALL.len());
        assert_eq!(names[0], "local_state_uuid");
        assert_eq!(names[lockstep_config::status::GALERA_STATUS_VARS - 1], "gmcast_segment");
        assert!(names.contains(&"apply_capacity".to_string()));
        assert!(names.contains(&"local_state_comment".to_string()));

        // Options: Galera's format; a bad set fails and keeps the provider.
        let opts = (t.options_get)(w);
        let text = CStr::from_ptr(opts).to_str().unwrap().to_string();
        libc::free(opts.cast());
        assert!(text.contains("gcache.size = 10M; ") && text.ends_with("; "), "{}", text);
        assert_eq!((t.options_set)(w, c"no.such.option=1".as_ptr()), wsrep_status_t::NODE_FAIL);
        assert_eq!((t.options_set)(w, c"gcs.fc_limit=abc".as_ptr()), wsrep_status_t::NODE_FAIL);
        assert_eq!((t.options_set)(w, c"gcs.fc_limit=100".as_ptr()), wsrep_status_t::OK);

        // pause/resume, desync/resync.
        assert_eq!((t.pause)(w), 2);
        assert_eq!((t.resume)(w), wsrep_status_t::OK);
        assert_eq!((t.desync)(w), wsrep_status_t::OK);
        assert_eq!((t.resync)(w), wsrep_status_t::OK);

        assert_eq!((t.disconnect)(w), wsrep_status_t::OK);
    }
    assert_eq!(applier.join().unwrap(), wsrep_status_t::OK);
    assert_eq!(FINAL_VIEWS.load(Ordering::SeqCst), final0 + 1);
    unsafe {
        (t.free)(w);
        (t.free)(w); // the server calls it twice
    }
    assert!(l.w.ctx.is_null());
}

#[test]
fn init_refuses_unknown_options() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut l = Loaded::new();
    assert_eq!(l.init("no.such.option=1; gcs.fc_limit=16"), wsrep_status_t::NODE_FAIL);
    assert!(l.w.ctx.is_null());
}

#[test]
fn garbage_from_the_server_is_an_error_not_a_crash() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut l = Loaded::new();
    let w = l.ptr();
    let t = *l.w;
    unsafe {
        // Before init: every call answers.
        assert_eq!((t.connect)(w, ptr::null(), ptr::null(), ptr::null(), false), wsrep_status_t::NODE_FAIL);
        assert_eq!((t.pause)(w), -1);
        assert!((t.stats_get)(w).is_null());
        (t.free)(w);
        (t.free)(ptr::null_mut());
    }
    assert_eq!(l.init(""), wsrep_status_t::OK);
    unsafe {
        // Not connected yet: replication is refused, not crashed.
        let mut h = wsrep_ws_handle_t { trx_id: 1, opaque: 12345 as *mut c_void };
        let key = wsrep_key_t { key_parts: ptr::null(), key_parts_num: 7 };
        assert_eq!((t.append_key)(w, &mut h, &key, 1, wsrep_key_type_t(99), true), wsrep_status_t::CONN_FAIL);
        assert_eq!((t.append_key)(w, &mut h, &key, 1, wsrep_key_type_t::SHARED, true), wsrep_status_t::OK);
        let mut meta = std::mem::zeroed::<wsrep_trx_meta_t>();
        assert_eq!((t.certify)(w, 1, &mut h, 0x41, &mut meta), wsrep_status_t::CONN_FAIL);
        assert_eq!((t.certify)(w, 1, ptr::null_mut(), 0x41, ptr::null_mut()), wsrep_status_t::TRX_MISSING);
        assert_eq!((t.commit_order_enter)(w, ptr::null(), ptr::null()), wsrep_status_t::TRX_MISSING);
        let bogus = wsrep_ws_handle_t { trx_id: 5, opaque: 0xdead_beef as *mut c_void };
        assert_eq!((t.commit_order_enter)(w, &bogus, ptr::null()), wsrep_status_t::TRX_MISSING);
        assert_eq!((t.replay_trx)(w, &bogus, ptr::null_mut()), wsrep_status_t::TRX_FAIL);
        let url = CString::new("udp://nowhere").unwrap();
        // NODE_FAIL, as Galera answers an address it cannot use.
        assert_eq!((t.connect)(w, c"x".as_ptr(), url.as_ptr(), c"".as_ptr(), false), wsrep_status_t::NODE_FAIL);
        assert_eq!((t.sync_wait)(w, ptr::null_mut(), 0, ptr::null_mut()), wsrep_status_t::TRX_FAIL);
        assert_eq!((t.options_set)(w, ptr::null()), wsrep_status_t::OK);
        (t.free)(w);
    }
}
