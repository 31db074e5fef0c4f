//! Hand-written Rust mirror of the wsrep API v26 C interface (`wsrep_api.h`
//! and the service headers Galera 26.4.23 implements), plus the few safe
//! conversions that belong with the raw types.
//!
//! Names follow the C header so that a reader can hold the two side by side;
//! `layout_tests.rs` pins every size and offset for x86_64 Linux.
//!
//! Enumerations are never Rust `enum`s: the server can hand us any integer
//! in an enum-typed argument, and an out-of-range discriminant would be
//! undefined behaviour before our code could reject it. They are
//! `#[repr(transparent)]` newtypes over `c_int` with associated constants,
//! which are ABI-identical to a C enum (4 bytes, passed in an integer
//! register) and can be matched on.
//!
//! Threads and TLS services (`wsrep_thread_service.h`, `wsrep_tls_service.h`)
//! are deliberately not mirrored: exporting `wsrep_init_thread_service_v1`
//! or `wsrep_init_tls_service_v1` tells the server we will create every
//! thread and mutex, and run every cluster TLS stream, through its
//! callbacks. Galera 26.4.23 exports neither, so the server already runs
//! without them; honouring them would constrain the whole provider for no
//! gain. Their symbol names are listed below only so tests can assert we
//! do not export them.

#![allow(non_camel_case_types)]

use std::alloc::{self, Layout};
use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::fmt;
use std::marker::{PhantomData, PhantomPinned};
use std::ptr::{self, NonNull};

// ---------------------------------------------------------------------------
// Scalars and enumerations
// ---------------------------------------------------------------------------

pub const WSREP_INTERFACE_VERSION: &CStr = c"26";
/// Provider spec that makes the loader use its built-in dummy provider.
pub const WSREP_NONE: &CStr = c"none";

pub type wsrep_trx_id_t = u64;
pub type wsrep_conn_id_t = u64;
pub type wsrep_seqno_t = i64;
/// C `_Bool`. Rust guarantees `bool` has the same size, alignment and ABI,
/// and C guarantees a `_Bool` object only ever holds 0 or 1.
pub type wsrep_bool_t = bool;
/// Capabilities bitmask: `uint32_t`, although the header spells the bits
/// as `1ULL << n`.
pub type wsrep_cap_t = u32;

pub const WSREP_SEQNO_UNDEFINED: wsrep_seqno_t = -1;

/// Declares a C enum as a transparent `c_int` newtype with one associated
/// constant per enumerator.
macro_rules! c_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $value:expr,)* }) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub c_int);

        impl $name {
            $(pub const $variant: Self = Self($value);)*

            /// The enumerator's name, or `None` for a value the header
            /// does not define.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(Self::$variant => Some(stringify!($variant)),)*
                    _ => None,
                }
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => write!(f, "{}::{}", stringify!($name), n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }
    };
}

c_enum! {
    /// Returned by most provider calls. Kept as an int newtype because some
    /// calls (`lock`, `unlock`) may return a negative errno in its place.
    wsrep_status_t {
        OK = 0,
        WARNING = 1,
        TRX_MISSING = 2,
        TRX_FAIL = 3,
        BF_ABORT = 4,
        SIZE_EXCEEDED = 5,
        CONN_FAIL = 6,
        NODE_FAIL = 7,
        FATAL = 8,
        NOT_IMPLEMENTED = 9,
        NOT_ALLOWED = 10,
    }
}

c_enum! {
    /// Returned by the server's callbacks; any non-zero value is a failure.
    wsrep_cb_status_t {
        SUCCESS = 0,
        FAILURE = 1,
    }
}

impl wsrep_cb_status_t {
    pub fn is_success(self) -> bool {
        self == Self::SUCCESS
    }
}

c_enum! {
    wsrep_log_level_t {
        FATAL = 0,
        ERROR = 1,
        WARN = 2,
        INFO = 3,
        DEBUG = 4,
    }
}

c_enum! {
    /// Argument of `append_key`, chosen by the server.
    wsrep_key_type_t {
        SHARED = 0,
        REFERENCE = 1,
        UPDATE = 2,
        EXCLUSIVE = 3,
    }
}

c_enum! {
    /// Argument of `append_data`, chosen by the server.
    wsrep_data_type_t {
        ORDERED = 0,
        UNORDERED = 1,
        ANNOTATION = 2,
    }
}

c_enum! {
    wsrep_member_status_t {
        UNDEFINED = 0,
        JOINER = 1,
        DONOR = 2,
        JOINED = 3,
        SYNCED = 4,
        ERROR = 5,
        MAX = 6,
    }
}

c_enum! {
    /// wsrep-lib throws on anything outside PRIMARY..=DISCONNECTED.
    wsrep_view_status_t {
        PRIMARY = 0,
        NON_PRIMARY = 1,
        DISCONNECTED = 2,
        MAX = 3,
    }
}

c_enum! {
    /// wsrep-lib asserts on an unknown type in a stats array.
    wsrep_var_type_t {
        STRING = 0,
        INT64 = 1,
        DOUBLE = 2,
    }
}

c_enum! {
    wsrep_enc_direction_t {
        ENC = 0,
        DEC = 1,
    }
}

pub const WSREP_CAP_MULTI_MASTER: wsrep_cap_t = 1 << 0;
pub const WSREP_CAP_CERTIFICATION: wsrep_cap_t = 1 << 1;
pub const WSREP_CAP_PARALLEL_APPLYING: wsrep_cap_t = 1 << 2;
pub const WSREP_CAP_TRX_REPLAY: wsrep_cap_t = 1 << 3;
pub const WSREP_CAP_ISOLATION: wsrep_cap_t = 1 << 4;
pub const WSREP_CAP_PAUSE: wsrep_cap_t = 1 << 5;
pub const WSREP_CAP_CAUSAL_READS: wsrep_cap_t = 1 << 6;
pub const WSREP_CAP_CAUSAL_TRX: wsrep_cap_t = 1 << 7;
pub const WSREP_CAP_INCREMENTAL_WRITESET: wsrep_cap_t = 1 << 8;
pub const WSREP_CAP_SESSION_LOCKS: wsrep_cap_t = 1 << 9;
pub const WSREP_CAP_DISTRIBUTED_LOCKS: wsrep_cap_t = 1 << 10;
pub const WSREP_CAP_CONSISTENCY_CHECK: wsrep_cap_t = 1 << 11;
pub const WSREP_CAP_UNORDERED: wsrep_cap_t = 1 << 12;
pub const WSREP_CAP_ANNOTATION: wsrep_cap_t = 1 << 13;
pub const WSREP_CAP_PREORDERED: wsrep_cap_t = 1 << 14;
pub const WSREP_CAP_STREAMING: wsrep_cap_t = 1 << 15;
pub const WSREP_CAP_SNAPSHOT: wsrep_cap_t = 1 << 16;
pub const WSREP_CAP_NBO: wsrep_cap_t = 1 << 17;

// Writeset flags travel as `uint32_t` (certify, apply_cb, to_execute_start,
// preordered_commit).
pub const WSREP_FLAG_TRX_END: u32 = 1 << 0;
pub const WSREP_FLAG_ROLLBACK: u32 = 1 << 1;
pub const WSREP_FLAG_ISOLATION: u32 = 1 << 2;
pub const WSREP_FLAG_PA_UNSAFE: u32 = 1 << 3;
pub const WSREP_FLAG_COMMUTATIVE: u32 = 1 << 4;
pub const WSREP_FLAG_NATIVE: u32 = 1 << 5;
pub const WSREP_FLAG_TRX_START: u32 = 1 << 6;
pub const WSREP_FLAG_TRX_PREPARE: u32 = 1 << 7;
pub const WSREP_FLAG_SNAPSHOT: u32 = 1 << 8;
pub const WSREP_FLAG_IMPLICIT_DEPS: u32 = 1 << 9;
pub const WSREP_FLAGS_LAST: u32 = WSREP_FLAG_IMPLICIT_DEPS;
pub const WSREP_FLAGS_MASK: u32 = (WSREP_FLAGS_LAST << 1) - 1;

pub const WSREP_UUID_STR_LEN: usize = 36;
pub const WSREP_GTID_STR_LEN: usize = 57;
pub const WSREP_MEMBER_NAME_LEN: usize = 32;
pub const WSREP_INCOMING_LEN: usize = 256;

/// `sst_request_cb` answers that mean "no data to transfer".
pub const WSREP_STATE_TRANSFER_TRIVIAL: &CStr = c"trivial";
pub const WSREP_STATE_TRANSFER_NONE: &CStr = c"none";

// ---------------------------------------------------------------------------
// Identifiers
// ---------------------------------------------------------------------------

/// C: `union { uint8_t data[16]; size_t alignment; }`. A struct with a
/// zero-length `usize` array has the same size and alignment on every
/// target, and lets the bytes be read without `unsafe`.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct wsrep_uuid_t {
    pub data: [u8; 16],
    pub _alignment: [usize; 0],
}

impl wsrep_uuid_t {
    pub const UNDEFINED: Self = Self::new([0; 16]);

    pub const fn new(data: [u8; 16]) -> Self {
        Self { data, _alignment: [] }
    }

    pub fn is_undefined(&self) -> bool {
        self.data == [0; 16]
    }
}

impl From<[u8; 16]> for wsrep_uuid_t {
    fn from(data: [u8; 16]) -> Self {
        Self::new(data)
    }
}

impl From<wsrep_uuid_t> for [u8; 16] {
    fn from(uuid: wsrep_uuid_t) -> Self {
        uuid.data
    }
}

/// Canonical 8-4-4-4-12 lowercase hex, as `wsrep_uuid_print` writes it.
impl fmt::Display for wsrep_uuid_t {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.data.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for wsrep_uuid_t {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct wsrep_gtid_t {
    pub uuid: wsrep_uuid_t,
    pub seqno: wsrep_seqno_t,
}

impl wsrep_gtid_t {
    pub const UNDEFINED: Self = Self::undefined();

    /// The header's `WSREP_GTID_UNDEFINED`: zero UUID, seqno -1.
    pub const fn undefined() -> Self {
        Self { uuid: wsrep_uuid_t::UNDEFINED, seqno: WSREP_SEQNO_UNDEFINED }
    }

    pub const fn new(uuid: wsrep_uuid_t, seqno: wsrep_seqno_t) -> Self {
        Self { uuid, seqno }
    }
}

/// `uuid:seqno`, as `wsrep_gtid_print` writes it.
impl fmt::Display for wsrep_gtid_t {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.uuid, self.seqno)
    }
}

/// Source transaction ID. Field order is node, trx, conn.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct wsrep_stid_t {
    pub node: wsrep_uuid_t,
    pub trx: wsrep_trx_id_t,
    pub conn: wsrep_conn_id_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct wsrep_trx_meta_t {
    pub gtid: wsrep_gtid_t,
    pub stid: wsrep_stid_t,
    pub depends_on: wsrep_seqno_t,
}

// ---------------------------------------------------------------------------
// Buffers, handles, keys
// ---------------------------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_buf_t {
    pub ptr: *const c_void,
    pub len: usize,
}

impl wsrep_buf_t {
    pub const EMPTY: Self = Self { ptr: ptr::null(), len: 0 };

    /// Borrows `bytes` for handing to the server; the caller keeps `bytes`
    /// alive for as long as the server may read the buffer.
    pub fn from_slice(bytes: &[u8]) -> Self {
        Self { ptr: bytes.as_ptr().cast(), len: bytes.len() }
    }

    /// The bytes the buffer describes; empty when `ptr` is NULL or `len`
    /// is 0 (a slice is never built from NULL).
    ///
    /// # Safety
    /// Unless `ptr` is NULL or `len` is 0, `ptr` must be valid for reads
    /// of `len` bytes, not written to while the returned slice lives.
    pub unsafe fn as_bytes(&self) -> &[u8] {
        // SAFETY: forwarded to the caller (this function's contract).
        unsafe { c_array(self.ptr.cast::<u8>(), self.len) }
    }
}

/// The bytes behind a possibly-NULL `*const wsrep_buf_t`; a NULL `buf`
/// reads as empty.
///
/// # Safety
/// `buf` is NULL or points to a valid `wsrep_buf_t` that satisfies
/// [`wsrep_buf_t::as_bytes`]'s contract, both for the chosen `'a`.
pub unsafe fn buf_bytes<'a>(buf: *const wsrep_buf_t) -> &'a [u8] {
    // SAFETY: `as_ref` needs `buf` NULL or valid, which the caller promises.
    match unsafe { buf.as_ref() } {
        // SAFETY: the pointee's own contract is the caller's promise too.
        Some(b) => unsafe { c_array(b.ptr.cast::<u8>(), b.len) },
        None => &[],
    }
}

/// A C array (`ptr`, `count`) as a slice; NULL or `count == 0` reads as
/// empty, so a slice is never built from NULL.
///
/// # Safety
/// Unless `ptr` is NULL or `count` is 0, `ptr` must be aligned and point
/// to `count` initialised `T`s that stay unmodified for `'a`.
pub unsafe fn c_array<'a, T>(ptr: *const T, count: usize) -> &'a [T] {
    if ptr.is_null() || count == 0 {
        return &[];
    }
    // SAFETY: non-NULL, and the caller promises validity of `count` items
    // (which also bounds the size by isize::MAX, as for any live object).
    unsafe { std::slice::from_raw_parts(ptr, count) }
}

/// Reads an optional C string, replacing invalid UTF-8; NULL is `None`.
///
/// # Safety
/// `s` is NULL or points to a NUL-terminated string that stays valid and
/// unmodified for `'a`.
pub unsafe fn cstr_lossy<'a>(s: *const c_char) -> Option<Cow<'a, str>> {
    if s.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's promise.
    Some(unsafe { CStr::from_ptr(s) }.to_string_lossy())
}

/// Per-transaction handle. The server stores `opaque` as the provider left
/// it and must not see it change during commit-order and replay calls.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_ws_handle_t {
    pub trx_id: wsrep_trx_id_t,
    pub opaque: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_key_t {
    pub key_parts: *const wsrep_buf_t,
    pub key_parts_num: usize,
}

impl wsrep_key_t {
    /// The key's parts; empty when `key_parts` is NULL.
    ///
    /// # Safety
    /// As for [`c_array`] over (`key_parts`, `key_parts_num`), for the
    /// lifetime of `&self`.
    pub unsafe fn parts(&self) -> &[wsrep_buf_t] {
        // SAFETY: forwarded to the caller.
        unsafe { c_array(self.key_parts, self.key_parts_num) }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_po_handle_t {
    pub opaque: *mut c_void,
}

impl wsrep_po_handle_t {
    pub const INITIALIZER: Self = Self { opaque: ptr::null_mut() };
}

// ---------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_member_info_t {
    pub id: wsrep_uuid_t,
    pub name: [c_char; WSREP_MEMBER_NAME_LEN],
    pub incoming: [c_char; WSREP_INCOMING_LEN],
}

impl wsrep_member_info_t {
    /// Copies `name` and `incoming`, truncated so that each stays
    /// NUL-terminated: wsrep-lib reads them with `strnlen`, but other C
    /// readers may use `strlen`.
    pub fn new(id: wsrep_uuid_t, name: &[u8], incoming: &[u8]) -> Self {
        Self {
            id,
            name: fixed_c_string(name),
            incoming: fixed_c_string(incoming),
        }
    }

    /// `name` up to its first NUL.
    pub fn name_bytes(&self) -> &[u8] {
        until_nul(&self.name)
    }

    /// `incoming` up to its first NUL.
    pub fn incoming_bytes(&self) -> &[u8] {
        until_nul(&self.incoming)
    }
}

fn fixed_c_string<const N: usize>(src: &[u8]) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    let n = src.len().min(N - 1);
    for (dst, &b) in out.iter_mut().zip(&src[..n]) {
        *dst = b as c_char;
    }
    out
}

fn until_nul(chars: &[c_char]) -> &[u8] {
    // SAFETY: c_char and u8 have the same size, alignment and validity.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(chars.as_ptr().cast(), chars.len()) };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// C flexible-array idiom: `members` is declared with one element and the
/// struct is allocated for `memb_num` of them (see [`Self::size_for`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_view_info_t {
    pub state_id: wsrep_gtid_t,
    pub view: wsrep_seqno_t,
    pub status: wsrep_view_status_t,
    pub capabilities: wsrep_cap_t,
    pub my_idx: c_int,
    pub memb_num: c_int,
    pub proto_ver: c_int,
    pub members: [wsrep_member_info_t; 1],
}

impl wsrep_view_info_t {
    /// Bytes to allocate for a view of `members` members. The declared
    /// `members[1]` is always allocated, so an empty view still has the
    /// full struct size.
    pub const fn size_for(members: usize) -> usize {
        let extra = members.saturating_sub(1);
        size_of::<Self>() + extra * size_of::<wsrep_member_info_t>()
    }
}

/// The fields of a view other than its members.
#[derive(Clone, Copy, Debug)]
pub struct ViewHead {
    pub state_id: wsrep_gtid_t,
    pub view: wsrep_seqno_t,
    pub status: wsrep_view_status_t,
    pub capabilities: wsrep_cap_t,
    pub my_idx: c_int,
    pub proto_ver: c_int,
}

/// A heap-allocated `wsrep_view_info_t` with its trailing members, ready
/// to pass to `connected_cb` / `view_cb` via [`Self::as_ptr`].
pub struct OwnedViewInfo {
    ptr: NonNull<wsrep_view_info_t>,
    members: usize,
}

// SAFETY: the allocation is owned exclusively and has no interior
// mutability; its raw pointers (none, besides our own) carry no thread
// affinity.
unsafe impl Send for OwnedViewInfo {}
// SAFETY: shared access only reads.
unsafe impl Sync for OwnedViewInfo {}

impl OwnedViewInfo {
    /// # Panics
    /// If `members.len()` does not fit a C `int`.
    pub fn new(head: ViewHead, members: &[wsrep_member_info_t]) -> Self {
        let memb_num = c_int::try_from(members.len()).expect("member count fits in C int");
        let layout = Self::layout(members.len());
        // SAFETY: the layout has a non-zero size (at least the struct).
        let raw = unsafe { alloc::alloc_zeroed(layout) }.cast::<wsrep_view_info_t>();
        let Some(ptr) = NonNull::new(raw) else { alloc::handle_alloc_error(layout) };
        // SAFETY: `raw` is a fresh, zeroed, suitably aligned allocation of
        // `size_for(members.len())` bytes, so the header and `members.len()`
        // trailing members fit; all-zero is a valid value of every field.
        unsafe {
            let v = ptr.as_ptr();
            (*v).state_id = head.state_id;
            (*v).view = head.view;
            (*v).status = head.status;
            (*v).capabilities = head.capabilities;
            (*v).my_idx = head.my_idx;
            (*v).memb_num = memb_num;
            (*v).proto_ver = head.proto_ver;
            let first = ptr::addr_of_mut!((*v).members).cast::<wsrep_member_info_t>();
            ptr::copy_nonoverlapping(members.as_ptr(), first, members.len());
        }
        Self { ptr, members: members.len() }
    }

    fn layout(members: usize) -> Layout {
        Layout::from_size_align(wsrep_view_info_t::size_for(members), align_of::<wsrep_view_info_t>())
            .expect("view layout")
    }

    /// Valid while `self` lives.
    pub fn as_ptr(&self) -> *const wsrep_view_info_t {
        self.ptr.as_ptr()
    }

    pub fn head(&self) -> &wsrep_view_info_t {
        // SAFETY: the allocation holds a fully initialised struct.
        unsafe { self.ptr.as_ref() }
    }

    pub fn members(&self) -> &[wsrep_member_info_t] {
        // SAFETY: `new` initialised `self.members` members starting at
        // `members[0]`, derived from the allocation's own pointer.
        unsafe {
            let first = ptr::addr_of!((*self.ptr.as_ptr()).members).cast::<wsrep_member_info_t>();
            std::slice::from_raw_parts(first, self.members)
        }
    }
}

impl Drop for OwnedViewInfo {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr().cast(), Self::layout(self.members)) }
    }
}

impl fmt::Debug for OwnedViewInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedViewInfo")
            .field("head", self.head())
            .field("members", &self.members())
            .finish()
    }
}

// ---------------------------------------------------------------------------
// Encryption
// ---------------------------------------------------------------------------

pub type wsrep_enc_key_t = wsrep_buf_t;
pub type wsrep_enc_iv_t = [c_char; 32];

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_enc_ctx_t {
    pub key: *const wsrep_enc_key_t,
    pub iv: *const wsrep_enc_iv_t,
    pub ctx: *mut c_void,
}

// ---------------------------------------------------------------------------
// Application callbacks (passed in `wsrep_init_args`)
// ---------------------------------------------------------------------------
//
// The types are non-null function pointers; the init_args fields that hold
// them are `Option<_>` because the server may leave any of them NULL.

pub type wsrep_log_cb_t = unsafe extern "C" fn(level: wsrep_log_level_t, msg: *const c_char);

pub type wsrep_connected_cb_t =
    unsafe extern "C" fn(app_ctx: *mut c_void, view: *const wsrep_view_info_t) -> wsrep_cb_status_t;

pub type wsrep_view_cb_t = unsafe extern "C" fn(
    app_ctx: *mut c_void,
    recv_ctx: *mut c_void,
    view: *const wsrep_view_info_t,
    state: *const c_char,
    state_len: usize,
) -> wsrep_cb_status_t;

/// The server `malloc`s `*sst_req`; the provider must `free()` it.
pub type wsrep_sst_request_cb_t = unsafe extern "C" fn(
    app_ctx: *mut c_void,
    sst_req: *mut *mut c_void,
    sst_req_len: *mut usize,
) -> wsrep_cb_status_t;

pub type wsrep_encrypt_cb_t = unsafe extern "C" fn(
    app_ctx: *mut c_void,
    enc_ctx: *mut wsrep_enc_ctx_t,
    input: *const wsrep_buf_t,
    output: *mut c_void,
    direction: wsrep_enc_direction_t,
    last: bool,
) -> c_int;

pub type wsrep_apply_cb_t = unsafe extern "C" fn(
    recv_ctx: *mut c_void,
    ws_handle: *const wsrep_ws_handle_t,
    flags: u32,
    data: *const wsrep_buf_t,
    meta: *const wsrep_trx_meta_t,
    exit_loop: *mut wsrep_bool_t,
) -> wsrep_cb_status_t;

pub type wsrep_unordered_cb_t =
    unsafe extern "C" fn(recv_ctx: *mut c_void, data: *const wsrep_buf_t) -> wsrep_cb_status_t;

pub type wsrep_sst_donate_cb_t = unsafe extern "C" fn(
    app_ctx: *mut c_void,
    recv_ctx: *mut c_void,
    str_msg: *const wsrep_buf_t,
    state_id: *const wsrep_gtid_t,
    state: *const wsrep_buf_t,
    bypass: wsrep_bool_t,
) -> wsrep_cb_status_t;

pub type wsrep_synced_cb_t = unsafe extern "C" fn(app_ctx: *mut c_void) -> wsrep_cb_status_t;

/// Owned by the server and valid only during `init`: copy what is kept.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_init_args {
    pub app_ctx: *mut c_void,
    pub node_name: *const c_char,
    pub node_address: *const c_char,
    pub node_incoming: *const c_char,
    pub data_dir: *const c_char,
    pub options: *const c_char,
    pub proto_ver: c_int,
    pub state_id: *const wsrep_gtid_t,
    pub state: *const wsrep_buf_t,
    pub logger_cb: Option<wsrep_log_cb_t>,
    pub connected_cb: Option<wsrep_connected_cb_t>,
    pub view_cb: Option<wsrep_view_cb_t>,
    pub sst_request_cb: Option<wsrep_sst_request_cb_t>,
    pub encrypt_cb: Option<wsrep_encrypt_cb_t>,
    pub apply_cb: Option<wsrep_apply_cb_t>,
    pub unordered_cb: Option<wsrep_unordered_cb_t>,
    pub sst_donate_cb: Option<wsrep_sst_donate_cb_t>,
    pub synced_cb: Option<wsrep_synced_cb_t>,
}

// ---------------------------------------------------------------------------
// Status variables
// ---------------------------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy)]
pub union wsrep_stats_value {
    pub _int64: i64,
    pub _double: f64,
    pub _string: *const c_char,
}

/// One entry of the array `stats_get` returns; the array ends with an
/// entry whose `name` is NULL. Names and strings must stay valid until
/// `stats_free` receives the array.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct wsrep_stats_var {
    pub name: *const c_char,
    pub type_: wsrep_var_type_t,
    pub value: wsrep_stats_value,
}

impl wsrep_stats_var {
    pub fn int64(name: &CStr, v: i64) -> Self {
        Self::with(name.as_ptr(), wsrep_var_type_t::INT64, wsrep_stats_value { _int64: v })
    }

    pub fn double(name: &CStr, v: f64) -> Self {
        Self::with(name.as_ptr(), wsrep_var_type_t::DOUBLE, wsrep_stats_value { _double: v })
    }

    pub fn string(name: &CStr, v: &CStr) -> Self {
        let value = wsrep_stats_value { _string: v.as_ptr() };
        Self::with(name.as_ptr(), wsrep_var_type_t::STRING, value)
    }

    /// The NULL-named entry that ends the array.
    pub fn terminator() -> Self {
        Self::with(ptr::null(), wsrep_var_type_t::INT64, wsrep_stats_value { _int64: 0 })
    }

    fn with(name: *const c_char, type_: wsrep_var_type_t, value: wsrep_stats_value) -> Self {
        Self { name, type_, value }
    }
}

// ---------------------------------------------------------------------------
// The provider table
// ---------------------------------------------------------------------------

/// `struct wsrep_st`. The server `malloc`s it and `wsrep_loader` fills it.
/// Function fields are non-nullable Rust function pointers, so a table
/// built in Rust cannot leave one NULL (the loader rejects NULLs and
/// wsrep-lib calls several unchecked). Build it whole and `ptr::write` it
/// into the uninitialised memory; never read it through a reference
/// before that.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct wsrep_t {
    pub version: *const c_char,
    pub init: unsafe extern "C" fn(wsrep: *mut wsrep_t, args: *const wsrep_init_args) -> wsrep_status_t,
    pub capabilities: unsafe extern "C" fn(wsrep: *mut wsrep_t) -> wsrep_cap_t,
    pub options_set: unsafe extern "C" fn(wsrep: *mut wsrep_t, conf: *const c_char) -> wsrep_status_t,
    /// The returned string is `free()`d by the server.
    pub options_get: unsafe extern "C" fn(wsrep: *mut wsrep_t) -> *mut c_char,
    pub enc_set_key: unsafe extern "C" fn(wsrep: *mut wsrep_t, key: *const wsrep_enc_key_t) -> wsrep_status_t,
    pub connect: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        cluster_name: *const c_char,
        cluster_url: *const c_char,
        state_donor: *const c_char,
        bootstrap: wsrep_bool_t,
    ) -> wsrep_status_t,
    pub disconnect: unsafe extern "C" fn(wsrep: *mut wsrep_t) -> wsrep_status_t,
    pub recv: unsafe extern "C" fn(wsrep: *mut wsrep_t, recv_ctx: *mut c_void) -> wsrep_status_t,
    pub assign_read_view: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        handle: *mut wsrep_ws_handle_t,
        rv: *const wsrep_gtid_t,
    ) -> wsrep_status_t,
    pub certify: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        conn_id: wsrep_conn_id_t,
        ws_handle: *mut wsrep_ws_handle_t,
        flags: u32,
        meta: *mut wsrep_trx_meta_t,
    ) -> wsrep_status_t,
    pub commit_order_enter: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        ws_handle: *const wsrep_ws_handle_t,
        meta: *const wsrep_trx_meta_t,
    ) -> wsrep_status_t,
    pub commit_order_leave: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        ws_handle: *const wsrep_ws_handle_t,
        meta: *const wsrep_trx_meta_t,
        error: *const wsrep_buf_t,
    ) -> wsrep_status_t,
    pub release: unsafe extern "C" fn(wsrep: *mut wsrep_t, ws_handle: *mut wsrep_ws_handle_t) -> wsrep_status_t,
    pub replay_trx: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        ws_handle: *const wsrep_ws_handle_t,
        trx_ctx: *mut c_void,
    ) -> wsrep_status_t,
    pub abort_certification: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        bf_seqno: wsrep_seqno_t,
        victim_trx: wsrep_trx_id_t,
        victim_seqno: *mut wsrep_seqno_t,
    ) -> wsrep_status_t,
    pub rollback: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        trx: wsrep_trx_id_t,
        data: *const wsrep_buf_t,
    ) -> wsrep_status_t,
    pub append_key: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        ws_handle: *mut wsrep_ws_handle_t,
        keys: *const wsrep_key_t,
        count: usize,
        key_type: wsrep_key_type_t,
        copy: wsrep_bool_t,
    ) -> wsrep_status_t,
    pub append_data: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        ws_handle: *mut wsrep_ws_handle_t,
        data: *const wsrep_buf_t,
        count: usize,
        data_type: wsrep_data_type_t,
        copy: wsrep_bool_t,
    ) -> wsrep_status_t,
    pub sync_wait: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        upto: *mut wsrep_gtid_t,
        tout: c_int,
        gtid: *mut wsrep_gtid_t,
    ) -> wsrep_status_t,
    pub last_committed_id: unsafe extern "C" fn(wsrep: *mut wsrep_t, gtid: *mut wsrep_gtid_t) -> wsrep_status_t,
    pub free_connection: unsafe extern "C" fn(wsrep: *mut wsrep_t, conn_id: wsrep_conn_id_t) -> wsrep_status_t,
    pub to_execute_start: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        conn_id: wsrep_conn_id_t,
        keys: *const wsrep_key_t,
        keys_num: usize,
        action: *const wsrep_buf_t,
        count: usize,
        flags: u32,
        meta: *mut wsrep_trx_meta_t,
    ) -> wsrep_status_t,
    pub to_execute_end: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        conn_id: wsrep_conn_id_t,
        error: *const wsrep_buf_t,
    ) -> wsrep_status_t,
    pub preordered_collect: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        handle: *mut wsrep_po_handle_t,
        data: *const wsrep_buf_t,
        count: usize,
        copy: wsrep_bool_t,
    ) -> wsrep_status_t,
    pub preordered_commit: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        handle: *mut wsrep_po_handle_t,
        source_id: *const wsrep_uuid_t,
        flags: u32,
        pa_range: c_int,
        commit: wsrep_bool_t,
    ) -> wsrep_status_t,
    pub sst_sent: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        state_id: *const wsrep_gtid_t,
        rcode: c_int,
    ) -> wsrep_status_t,
    pub sst_received: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        state_id: *const wsrep_gtid_t,
        state: *const wsrep_buf_t,
        rcode: c_int,
    ) -> wsrep_status_t,
    pub snapshot: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        msg: *const wsrep_buf_t,
        donor_spec: *const c_char,
    ) -> wsrep_status_t,
    pub stats_get: unsafe extern "C" fn(wsrep: *mut wsrep_t) -> *mut wsrep_stats_var,
    pub stats_free: unsafe extern "C" fn(wsrep: *mut wsrep_t, var_array: *mut wsrep_stats_var),
    pub stats_reset: unsafe extern "C" fn(wsrep: *mut wsrep_t),
    /// Returns the paused seqno, or exactly -1 on failure.
    pub pause: unsafe extern "C" fn(wsrep: *mut wsrep_t) -> wsrep_seqno_t,
    pub resume: unsafe extern "C" fn(wsrep: *mut wsrep_t) -> wsrep_status_t,
    pub desync: unsafe extern "C" fn(wsrep: *mut wsrep_t) -> wsrep_status_t,
    pub resync: unsafe extern "C" fn(wsrep: *mut wsrep_t) -> wsrep_status_t,
    pub lock: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        name: *const c_char,
        shared: wsrep_bool_t,
        owner: u64,
        tout: i64,
    ) -> wsrep_status_t,
    pub unlock: unsafe extern "C" fn(wsrep: *mut wsrep_t, name: *const c_char, owner: u64) -> wsrep_status_t,
    pub is_locked: unsafe extern "C" fn(
        wsrep: *mut wsrep_t,
        name: *const c_char,
        conn: *mut u64,
        node: *mut wsrep_uuid_t,
    ) -> wsrep_bool_t,
    pub provider_name: *const c_char,
    pub provider_version: *const c_char,
    pub provider_vendor: *const c_char,
    /// Called twice by the server; must be idempotent.
    pub free: unsafe extern "C" fn(wsrep: *mut wsrep_t),
    /// Overwritten by the loader after `wsrep_loader` returns.
    pub dlh: *mut c_void,
    pub ctx: *mut c_void,
}

/// Signature of the exported `wsrep_loader` symbol.
pub type wsrep_loader_fun = unsafe extern "C" fn(wsrep: *mut wsrep_t) -> c_int;

// ---------------------------------------------------------------------------
// certify_v1 extension
// ---------------------------------------------------------------------------

/// Callback the provider runs once sequential consistency of the write
/// set is guaranteed (in certification order).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_seq_cb_t {
    pub ctx: *mut c_void,
    pub fn_: Option<unsafe extern "C" fn(ctx: *mut c_void)>,
}

pub type wsrep_certify_fn_v1 = unsafe extern "C" fn(
    wsrep: *mut wsrep_t,
    conn_id: wsrep_conn_id_t,
    ws_handle: *mut wsrep_ws_handle_t,
    flags: u32,
    meta: *mut wsrep_trx_meta_t,
    seq_cb: *const wsrep_seq_cb_t,
) -> wsrep_status_t;

// ---------------------------------------------------------------------------
// Services
// ---------------------------------------------------------------------------

/// Declares a type only ever seen behind a pointer.
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

opaque!(wsrep_allowlist_context_t, wsrep_event_context_t);

/// Every service's `int wsrep_init_<service>_v1(<service struct>*)`.
pub type wsrep_service_init_fn_v1<S> = unsafe extern "C" fn(service: *mut S) -> c_int;
/// Every service's `void wsrep_deinit_<service>_v1(void)`.
pub type wsrep_service_deinit_fn_v1 = unsafe extern "C" fn();

c_enum! {
    wsrep_allowlist_key_t {
        IP = 0,
        SSL = 1,
    }
}

/// `WSREP_OK` allows the connection, `WSREP_NOT_ALLOWED` rejects it.
pub type wsrep_allowlist_cb_t = unsafe extern "C" fn(
    context: *mut wsrep_allowlist_context_t,
    key: wsrep_allowlist_key_t,
    value: *const wsrep_buf_t,
) -> wsrep_status_t;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_allowlist_service_v1_t {
    pub allowlist_cb: Option<wsrep_allowlist_cb_t>,
    pub context: *mut wsrep_allowlist_context_t,
}

/// `value` is a JSON document; both strings are NUL-terminated.
pub type wsrep_event_cb_t =
    unsafe extern "C" fn(context: *mut wsrep_event_context_t, name: *const c_char, value: *const c_char);

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_event_service_v1_t {
    pub event_cb: Option<wsrep_event_cb_t>,
    pub context: *mut wsrep_event_context_t,
}

pub const WSREP_PARAM_DEPRECATED: c_int = 1 << 0;
pub const WSREP_PARAM_READONLY: c_int = 1 << 1;
pub const WSREP_PARAM_TYPE_BOOL: c_int = 1 << 2;
pub const WSREP_PARAM_TYPE_INTEGER: c_int = 1 << 3;
pub const WSREP_PARAM_TYPE_DOUBLE: c_int = 1 << 4;
/// No type bit set means the value is a string.
pub const WSREP_PARAM_TYPE_MASK: c_int =
    WSREP_PARAM_TYPE_BOOL | WSREP_PARAM_TYPE_INTEGER | WSREP_PARAM_TYPE_DOUBLE;

#[repr(C)]
#[derive(Clone, Copy)]
pub union wsrep_parameter_value {
    pub as_bool: bool,
    pub as_integer: i64,
    pub as_double: f64,
    pub as_string: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct wsrep_parameter_t {
    pub flags: c_int,
    pub name: *const c_char,
    pub value: wsrep_parameter_value,
}

pub type wsrep_get_parameters_cb =
    unsafe extern "C" fn(p: *const wsrep_parameter_t, context: *mut c_void) -> wsrep_status_t;

pub type wsrep_get_parameters_fn = unsafe extern "C" fn(
    wsrep: *mut wsrep_t,
    cb: Option<wsrep_get_parameters_cb>,
    context: *mut c_void,
) -> wsrep_status_t;

/// Filled by the provider's `wsrep_init_config_service_v1`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct wsrep_config_service_v1_t {
    pub get_parameters: Option<wsrep_get_parameters_fn>,
}

c_enum! {
    /// Argument of `wsrep_node_isolation_mode_set_v1`, which the server
    /// calls from its fatal-signal handler.
    wsrep_node_isolation_mode {
        NOT_ISOLATED = 0,
        ISOLATED = 1,
        FORCE_DISCONNECT = 2,
    }
}

c_enum! {
    wsrep_node_isolation_result {
        SUCCESS = 0,
        INVALID_VALUE = 1,
    }
}

pub type wsrep_node_isolation_mode_set_fn_v1 =
    unsafe extern "C" fn(mode: wsrep_node_isolation_mode) -> wsrep_node_isolation_result;

// Symbol names the server looks up with dlsym.
pub const WSREP_LOADER_SYMBOL: &CStr = c"wsrep_loader";
pub const WSREP_INTERFACE_VERSION_SYMBOL: &CStr = c"wsrep_interface_version";
pub const WSREP_CERTIFY_V1: &CStr = c"wsrep_certify_v1";
pub const WSREP_NODE_ISOLATION_MODE_SET_V1: &CStr = c"wsrep_node_isolation_mode_set_v1";
pub const WSREP_ALLOWLIST_SERVICE_INIT_FUNC_V1: &CStr = c"wsrep_init_allowlist_service_v1";
pub const WSREP_ALLOWLIST_SERVICE_DEINIT_FUNC_V1: &CStr = c"wsrep_deinit_allowlist_service_v1";
pub const WSREP_EVENT_SERVICE_INIT_FUNC_V1: &CStr = c"wsrep_init_event_service_v1";
pub const WSREP_EVENT_SERVICE_DEINIT_FUNC_V1: &CStr = c"wsrep_deinit_event_service_v1";
pub const WSREP_CONFIG_SERVICE_INIT_FUNC_V1: &CStr = c"wsrep_init_config_service_v1";
pub const WSREP_CONFIG_SERVICE_DEINIT_FUNC_V1: &CStr = c"wsrep_deinit_config_service_v1";
/// Not to be exported (see the module comment).
pub const WSREP_THREAD_SERVICE_INIT_FUNC_V1: &CStr = c"wsrep_init_thread_service_v1";
pub const WSREP_THREAD_SERVICE_DEINIT_FUNC_V1: &CStr = c"wsrep_deinit_thread_service_v1";
pub const WSREP_TLS_SERVICE_INIT_FUNC_V1: &CStr = c"wsrep_init_tls_service_v1";
pub const WSREP_TLS_SERVICE_DEINIT_FUNC_V1: &CStr = c"wsrep_deinit_tls_service_v1";

#[cfg(test)]
mod tests {
    use super::*;

    fn uuid(seed: u8) -> wsrep_uuid_t {
        let mut b = [0u8; 16];
        for (i, x) in b.iter_mut().enumerate() {
            *x = seed.wrapping_add(i as u8);
        }
        b.into()
    }

    #[test]
    fn uuid_round_trips_bytes_and_prints_canonically() {
        let u = uuid(0xa0);
        let bytes: [u8; 16] = u.into();
        assert_eq!(wsrep_uuid_t::from(bytes), u);
        assert_eq!(u.to_string(), "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
        assert_eq!(u.to_string().len(), WSREP_UUID_STR_LEN);
        assert!(wsrep_uuid_t::UNDEFINED.is_undefined() && !u.is_undefined());
    }

    #[test]
    fn gtid_undefined_is_zero_uuid_and_minus_one() {
        let g = wsrep_gtid_t::undefined();
        assert!(g.uuid.is_undefined());
        assert_eq!(g.seqno, -1);
        assert_eq!(g.to_string(), "00000000-0000-0000-0000-000000000000:-1");
    }

    #[test]
    fn buf_views_never_touch_null() {
        // SAFETY: NULL buffer pointer is explicitly allowed.
        assert!(unsafe { buf_bytes(ptr::null()) }.is_empty());
        let null_ptr = wsrep_buf_t { ptr: ptr::null(), len: 5 };
        // SAFETY: NULL data pointer is explicitly allowed, whatever len says.
        assert!(unsafe { buf_bytes(&null_ptr) }.is_empty());
        let dangling = wsrep_buf_t { ptr: 8 as *const c_void, len: 0 };
        // SAFETY: len 0 is explicitly allowed, whatever ptr says.
        assert!(unsafe { dangling.as_bytes() }.is_empty());
        let data = *b"hello";
        let b = wsrep_buf_t::from_slice(&data);
        // SAFETY: `b` borrows `data`, alive for the whole test.
        assert_eq!(unsafe { buf_bytes(&b) }, b"hello");
    }

    #[test]
    fn key_parts_read_through_c_array() {
        let parts = [wsrep_buf_t::from_slice(b"db"), wsrep_buf_t::from_slice(b"t1")];
        let key = wsrep_key_t { key_parts: parts.as_ptr(), key_parts_num: 2 };
        // SAFETY: `key` points at `parts`, whose buffers point at statics.
        let got: Vec<&[u8]> = unsafe { key.parts().iter().map(|p| p.as_bytes()).collect() };
        assert_eq!(got, [b"db".as_slice(), b"t1"]);
        let empty = wsrep_key_t { key_parts: ptr::null(), key_parts_num: 3 };
        // SAFETY: NULL is explicitly allowed.
        assert!(unsafe { empty.parts() }.is_empty());
    }

    #[test]
    fn cstr_lossy_handles_null_and_bad_utf8() {
        // SAFETY: NULL is explicitly allowed.
        assert_eq!(unsafe { cstr_lossy(ptr::null()) }, None);
        let s = c"node1";
        // SAFETY: `s` is a NUL-terminated static.
        assert_eq!(unsafe { cstr_lossy(s.as_ptr()) }.as_deref(), Some("node1"));
        let bad = [b'a' as c_char, 0xff_u8 as c_char, 0];
        // SAFETY: `bad` is NUL-terminated and outlives the call.
        assert_eq!(unsafe { cstr_lossy(bad.as_ptr()) }.as_deref(), Some("a\u{fffd}"));
    }

    #[test]
    fn enum_newtypes_accept_any_value() {
        assert_eq!(wsrep_key_type_t(2), wsrep_key_type_t::UPDATE);
        assert_eq!(wsrep_key_type_t(2).name(), Some("UPDATE"));
        assert_eq!(wsrep_key_type_t(77).name(), None);
        assert_eq!(format!("{:?}", wsrep_status_t::TRX_FAIL), "wsrep_status_t::TRX_FAIL");
        assert_eq!(format!("{:?}", wsrep_data_type_t(-3)), "wsrep_data_type_t(-3)");
        assert!(wsrep_cb_status_t::SUCCESS.is_success());
        assert!(!wsrep_cb_status_t(7).is_success());
    }

    #[test]
    fn member_info_truncates_and_stays_nul_terminated() {
        let long = [b'x'; 40];
        let m = wsrep_member_info_t::new(uuid(1), &long, b"127.0.0.1:3306");
        assert_eq!(m.name_bytes(), &long[..WSREP_MEMBER_NAME_LEN - 1]);
        assert_eq!(m.name[WSREP_MEMBER_NAME_LEN - 1], 0);
        assert_eq!(m.incoming_bytes(), b"127.0.0.1:3306");
    }

    #[test]
    fn view_size_for_follows_the_one_element_array_idiom() {
        let base = size_of::<wsrep_view_info_t>();
        let member = size_of::<wsrep_member_info_t>();
        assert_eq!(wsrep_view_info_t::size_for(0), base);
        assert_eq!(wsrep_view_info_t::size_for(1), base);
        assert_eq!(wsrep_view_info_t::size_for(3), base + 2 * member);
    }

    fn head(my_idx: c_int) -> ViewHead {
        ViewHead {
            state_id: wsrep_gtid_t::new(uuid(9), 42),
            view: 3,
            status: wsrep_view_status_t::PRIMARY,
            capabilities: WSREP_CAP_MULTI_MASTER,
            my_idx,
            proto_ver: 4,
        }
    }

    #[test]
    fn owned_view_info_lays_out_trailing_members() {
        let members: Vec<_> = (0..3)
            .map(|i| wsrep_member_info_t::new(uuid(i * 16), format!("node{i}").as_bytes(), b"AUTO"))
            .collect();
        let v = OwnedViewInfo::new(head(1), &members);
        assert_eq!(v.head().memb_num, 3);
        assert_eq!(v.head().state_id.seqno, 42);
        assert_eq!(v.members().len(), 3);
        assert_eq!(v.members()[2].name_bytes(), b"node2");
        assert_eq!(v.members()[2].id, uuid(32));
        // The C reader indexes from `members` in the struct itself.
        // SAFETY: memb_num members were written starting at members[0].
        let third = unsafe { &*ptr::addr_of!((*v.as_ptr()).members).cast::<wsrep_member_info_t>().add(2) };
        assert_eq!(third.incoming_bytes(), b"AUTO");
    }

    #[test]
    fn owned_view_info_can_be_empty() {
        let v = OwnedViewInfo::new(ViewHead { status: wsrep_view_status_t::DISCONNECTED, ..head(-1) }, &[]);
        assert_eq!(v.head().memb_num, 0);
        assert_eq!(v.head().my_idx, -1);
        assert!(v.members().is_empty());
    }

    #[test]
    fn stats_var_constructors_set_type_and_value() {
        let name = c"local_commits";
        let i = wsrep_stats_var::int64(name, 7);
        assert_eq!(i.type_, wsrep_var_type_t::INT64);
        // SAFETY: `int64` wrote the `_int64` member.
        assert_eq!(unsafe { i.value._int64 }, 7);
        let d = wsrep_stats_var::double(name, 0.5);
        // SAFETY: `double` wrote the `_double` member.
        assert_eq!((d.type_, unsafe { d.value._double }), (wsrep_var_type_t::DOUBLE, 0.5));
        let s = wsrep_stats_var::string(name, c"Synced");
        assert_eq!(s.type_, wsrep_var_type_t::STRING);
        // SAFETY: `string` wrote `_string` from a static C string.
        assert_eq!(unsafe { cstr_lossy(s.value._string) }.as_deref(), Some("Synced"));
        assert!(wsrep_stats_var::terminator().name.is_null());
    }
}
