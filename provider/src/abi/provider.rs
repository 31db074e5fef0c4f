//! The provider instance behind `wsrep_t.ctx`: the node, the option
//! registry's live configuration, and the status arrays handed out by
//! `stats_get` until `stats_free` takes them back.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use lockstep_config::{keys, Change, Config, NodeInfo, Notice, VarKind};

use super::callbacks::{logger_sink, ServerCallbacks};
use super::sys::*;
use crate::gtid::{Gtid, Uuid};
use crate::log;
use crate::node::{InitArgs, Node, Settings, StatValue, Status};

pub struct Provider {
    pub node: Arc<Node>,
    config: Mutex<Config>,
    stats: Mutex<HashMap<usize, StatsArray>>,
    /// `lockstep.metrics_addr`'s endpoint, stopped with the provider.
    _metrics: Option<crate::metrics::MetricsServer>,
}

/// One `stats_get` result: the C array and the strings it points into.
struct StatsArray {
    /// Read by the server through the pointer `stats_get` returned.
    _vars: Vec<wsrep_stats_var>,
    _strings: Vec<CString>,
}

// SAFETY: the raw pointers in `vars` point into `_strings`, owned alongside
// and never shared mutably.
unsafe impl Send for StatsArray {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Provider {
    /// `init`: copies what the server passed, builds the configuration
    /// (every bad option is logged, then init fails) and the node.
    ///
    /// # Safety
    /// `args` is the server's valid `wsrep_init_args`.
    pub unsafe fn init(args: &wsrep_init_args) -> Result<Provider, Status> {
        if let Some(cb) = args.logger_cb {
            log::set_sink(Some(logger_sink(cb)));
        }
        // SAFETY: the strings are the server's NUL-terminated strings or NULL.
        let text = |p| unsafe { cstr_lossy(p) }.map(|s| s.into_owned()).unwrap_or_default();
        let (name, address, incoming, data_dir, options) =
            (text(args.node_name), text(args.node_address), text(args.node_incoming), text(args.data_dir), text(args.options));
        // Galera parses the node address as a URI authority: anything up
        // to an '@' is user info (mtr passes '127.0.0.1:@OPT.port' where a
        // port placeholder was not substituted, and Galera takes 'OPT.port'
        // as the host with the default port).
        let address = address.rsplit_once('@').map_or(address.clone(), |(_, host)| host.to_string());
        let mut config = Config::init(&NodeInfo { node_address: &address, data_dir: &data_dir }, &options).map_err(|e| {
            for err in &e.errors {
                log::error!("{}", err);
            }
            log::error!("wsrep provider options are invalid: provider not initialised");
            Status::NodeFail
        })?;
        log_notices(&mut config);
        // SAFETY: state_id is NULL or a valid gtid for the call.
        let state_id = unsafe { args.state_id.as_ref() }.map_or(Gtid::UNDEFINED, |g| Gtid::new(Uuid(g.uuid.data), g.seqno));
        let init = InitArgs {
            node_name: name,
            node_address: address,
            node_incoming: incoming,
            data_dir: PathBuf::from(if data_dir.is_empty() { ".".to_string() } else { data_dir }),
            state_id,
            settings: Settings::from_config(&config),
            allow: Arc::new(|ip: &str| super::loader::allowed(ip)),
            isolation: Some(&super::loader::ISOLATION),
        };
        let node = Arc::new(Node::new(init, Box::new(ServerCallbacks::new(args))));
        let metrics = start_metrics(&config, &node);
        Ok(Provider { node, config: Mutex::new(config), stats: Mutex::new(HashMap::new()), _metrics: metrics })
    }

    /// `options_set`: applies the pairs in order, acts on what changed, and
    /// fails (with one log line naming the option) at the first bad pair.
    pub fn options_set(&self, conf: &str) -> Status {
        let mut cfg = lock(&self.config);
        let result = cfg.set(conf);
        log_notices(&mut cfg);
        let (applied, error) = match result {
            Ok(applied) => (applied, None),
            Err(f) => (f.applied, Some(f.error)),
        };
        self.node.set_settings(Settings::from_config(&cfg));
        drop(cfg);
        self.act_on(&applied);
        match error {
            None => Status::Ok,
            Some(e) => {
                // Galera's opening words for a value it refused: MariaDB's
                // tests suppress them in the server log ("error setting
                // param"), and 11.x's per-option variables reach us here.
                match (&e, e.key()) {
                    (lockstep_config::OptionError::Unknown { .. }, _) | (_, None) => log::error!("{}", e),
                    (_, Some(key)) => log::error!("error setting param {key}: {e}"),
                }
                Status::NodeFail
            }
        }
    }

    /// Options that are actions rather than settings.
    fn act_on(&self, changes: &[Change]) {
        use lockstep_config::Value;
        for c in changes {
            match (c.opt, &c.value) {
                (o, Value::Bool(true)) if o == keys::PC_BOOTSTRAP.opt() => self.node.bootstrap_component(),
                (o, Value::Int(n)) if o == keys::GMCAST_ISOLATE.opt() => self.node.isolate(*n != 0),
                (o, Value::Bool(true)) if o == keys::SOCKET_SSL_RELOAD.opt() => self.node.reload_tls(),
                _ => {}
            }
        }
    }

    /// What the config service declares (see `lockstep_config::service`).
    pub fn parameters(&self) -> Vec<lockstep_config::service::Param> {
        lockstep_config::service::parameters(&lock(&self.config))
    }

    /// `options_get`: the full configuration, `malloc`ed for the server.
    pub fn options_get(&self) -> *mut std::ffi::c_char {
        let text = lock(&self.config).render();
        malloc_cstring(&text)
    }

    /// Applies the options carried by the cluster address (at connect).
    pub fn address_options(&self, address: &lockstep_config::ClusterAddress) -> Result<(), Status> {
        let mut cfg = lock(&self.config);
        let r = cfg.apply_address_options(address);
        log_notices(&mut cfg);
        r.map_err(|e| {
            log::error!("{}", e);
            Status::ConnFail
        })?;
        self.node.set_settings(Settings::from_config(&cfg));
        Ok(())
    }

    /// `stats_get`: a NULL-terminated array that stays valid until
    /// `stats_free` gets the same pointer back.
    pub fn stats_get(&self) -> *mut wsrep_stats_var {
        let values = self.node.stats();
        let mut strings = Vec::with_capacity(values.len() * 2);
        let mut vars = Vec::with_capacity(values.len() + 1);
        for (var, value) in values {
            debug_assert_eq!(kind_of(&value), var.kind(), "{} has the registry's type", var.name());
            let name = c_string(var.name());
            vars.push(stat_var(&name, value, &mut strings));
            strings.push(name);
        }
        vars.push(wsrep_stats_var::terminator());
        let ptr = vars.as_mut_ptr();
        lock(&self.stats).insert(ptr as usize, StatsArray { _vars: vars, _strings: strings });
        ptr
    }

    pub fn stats_free(&self, ptr: *mut wsrep_stats_var) {
        if lock(&self.stats).remove(&(ptr as usize)).is_none() && !ptr.is_null() {
            log::warning!("stats_free: unknown array {:p}", ptr);
        }
    }
}

/// The metrics endpoint, if `lockstep.metrics_addr` asks for one. An
/// address that cannot be served is logged and replication goes on
/// without it: the node matters more than its dashboard.
fn start_metrics(config: &Config, node: &Arc<Node>) -> Option<crate::metrics::MetricsServer> {
    let addr = config.str(keys::LOCKSTEP_METRICS_ADDR).filter(|a| !a.is_empty())?;
    match crate::metrics::MetricsServer::start(addr, Arc::downgrade(node)) {
        Ok(server) => Some(server),
        Err(e) => {
            log::error!("lockstep.metrics_addr={}: cannot serve metrics there: {}; going on without them", addr, e);
            None
        }
    }
}

fn kind_of(v: &StatValue) -> VarKind {
    match v {
        StatValue::Str(_) => VarKind::String,
        StatValue::Int(_) => VarKind::Int64,
        StatValue::Double(_) => VarKind::Double,
    }
}

/// One entry; a string value's CString goes to `strings` (moving a CString
/// does not move its heap buffer, so the pointer stays valid).
fn stat_var(name: &CString, value: StatValue, strings: &mut Vec<CString>) -> wsrep_stats_var {
    match value {
        StatValue::Int(i) => wsrep_stats_var::int64(name, i),
        StatValue::Double(d) => wsrep_stats_var::double(name, d),
        StatValue::Str(s) => {
            let c = c_string(&s);
            let v = wsrep_stats_var::string(name, &c);
            strings.push(c);
            v
        }
    }
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).expect("no interior NUL")
}

/// A `malloc`ed copy the server will `free()`.
pub fn malloc_cstring(s: &str) -> *mut std::ffi::c_char {
    let c = c_string(s);
    let bytes = c.as_bytes_with_nul();
    // SAFETY: a fresh allocation of the right size, filled before use.
    unsafe {
        let p = libc::malloc(bytes.len()) as *mut u8;
        if p.is_null() {
            return std::ptr::null_mut();
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        p as *mut std::ffi::c_char
    }
}

fn log_notices(cfg: &mut Config) {
    for n in cfg.drain_notices() {
        match n {
            // Galera warns of deprecations; the rest is information (an
            // accepted option we do not act on yet must not read as an
            // error in the server log).
            Notice::Deprecated(_) => log::warning!("{}", n),
            Notice::NotYetEffective(_) | Notice::IgnoredAddressOption(_) => log::info!("{}", n),
        }
    }
}

/// The provider behind a `wsrep_t`, or None before `init` / after `free`.
///
/// # Safety
/// `w` is NULL or the server's `wsrep_t` that `wsrep_loader` filled.
pub unsafe fn provider<'a>(w: *mut wsrep_t) -> Option<&'a Provider> {
    // SAFETY: per the caller; ctx is NULL or a leaked Box<Provider>.
    unsafe { w.as_ref().and_then(|w| (w.ctx as *const Provider).as_ref()) }
}

/// Hands ownership of the provider to `wsrep_t.ctx`.
pub fn into_ctx(p: Provider) -> *mut c_void {
    Box::into_raw(Box::new(p)) as *mut c_void
}

/// Takes the provider back from `wsrep_t.ctx` (at `free`).
///
/// # Safety
/// `ctx` came from `into_ctx` and is taken back once.
pub unsafe fn from_ctx(ctx: *mut c_void) -> Box<Provider> {
    // SAFETY: per the caller.
    unsafe { Box::from_raw(ctx as *mut Provider) }
}
