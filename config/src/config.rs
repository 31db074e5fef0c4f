//! The live configuration: built at `init` from the node and the option
//! list, changed by `options_set`, rendered by `options_get`.
//!
//! Galera behaviour copied here (26.4.23, observed with mariadbd):
//! * init applies every pair, reports every unknown key, then fails;
//! * runtime set applies pairs in order and stops at the first failure,
//!   earlier pairs staying applied (and visible in the server's
//!   `@@wsrep_provider_options`, which is refreshed even after an error);
//! * setting an option to the text it already has is a no-op success, even
//!   for options that can't change at runtime;
//! * `options_get` lists every option that has a value, sorted by name, as
//!   `k = v; ` including the trailing `"; "`; hidden options appear once
//!   they were set at startup.
//!
//! Deliberate differences: `debug` and `gcs.sync_donor` show the value set
//! at runtime (Galera applies it but keeps showing the old text); actions
//! (`pc.bootstrap`, `gmcast.isolate`, ...) are performed even when set to
//! the text they were given at startup; `evs.causal_keepalive_period` set
//! at startup is honoured (Galera overrides it with `evs.keepalive_period`);
//! `gcs.fc_debug` is an integer throughout (Galera parses it as an integer
//! at startup but as a boolean at runtime, then shows `YES`/`NO`).

use crate::address::ClusterAddress;
use crate::check::{canonical, check_value};
use crate::error::{InitError, OptionError};
use crate::node;
use crate::options::{keys, Default, Opt, OptionSpec, Render, Runtime, TABLE};
use crate::pairs::parse_pairs;
use crate::typed::{DurationKey, StrKey, TypedKey, Value};
use crate::value;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the server passes to `init` besides the option list.
#[derive(Clone, Copy, Debug)]
pub struct NodeInfo<'a> {
    /// `wsrep_node_address`: `host` or `host:port`, may be empty.
    pub node_address: &'a str,
    /// `wsrep_data_home_dir`, with its trailing `/`.
    pub data_dir: &'a str,
}

/// One option changed at runtime, for the provider to act on.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub opt: Opt,
    pub value: Value,
}

/// A runtime set that stopped at `error`; `applied` went through before it
/// and stays in effect, so the provider must still act on it.
#[derive(Clone, Debug, PartialEq)]
pub struct SetFailure {
    pub applied: Vec<Change>,
    pub error: OptionError,
}

impl fmt::Display for SetFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for SetFailure {}

/// Something the provider should log (as a warning) after init or a set.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// The option was set but lockstep does not implement it yet; reported
    /// once per option per process.
    NotYetEffective(Opt),
    /// Galera would warn the option is going away.
    Deprecated(Opt),
    /// An option in the cluster address that no module knows (ignored, as
    /// Galera does).
    IgnoredAddressOption(String),
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::NotYetEffective(opt) => write!(
                f,
                "Parameter '{}' is accepted but not yet effective in lockstep: {}",
                opt.name(),
                opt.spec().ignored_because().unwrap_or("not implemented")
            ),
            Notice::Deprecated(opt) => write!(
                f,
                "Parameter '{}' is deprecated and will be removed in future versions",
                opt.name()
            ),
            Notice::IgnoredAddressOption(key) => {
                write!(f, "Ignoring unknown option '{key}' in the cluster address")
            }
        }
    }
}

/// Options already reported as not effective in this process.
static REPORTED: [AtomicBool; Opt::ALL.len()] = [const { AtomicBool::new(false) }; Opt::ALL.len()];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Startup,
    Runtime,
}

#[derive(Clone, Debug)]
struct Entry {
    /// What `options_get` shows; `None`: not shown.
    text: Option<String>,
    /// Typed value for the provider (may exist without text: implicit
    /// values of hidden options).
    value: Value,
    /// Set by the user (options, cluster address or runtime).
    explicit: bool,
}

/// The provider's options. Cheap to read; `get` takes a typed handle.
#[derive(Clone, Debug)]
pub struct Config {
    entries: Vec<Entry>,
    notices: Vec<Notice>,
}

impl Config {
    /// Builds the configuration as Galera's `init` does: defaults, then the
    /// node's address and data dir, then `options` in order, then derived
    /// values. Every problem is reported; any problem fails.
    pub fn init(node: &NodeInfo<'_>, options: &str) -> Result<Config, InitError> {
        let fail = |e: OptionError| InitError { errors: vec![e] };
        let pairs = parse_pairs(options).map_err(fail)?;
        let mut cfg = Config::defaults();
        cfg.apply_node(node).map_err(fail)?;
        let errors: Vec<OptionError> = pairs
            .iter()
            .filter_map(|(k, v)| cfg.apply_startup(k, v).err())
            .collect();
        if !errors.is_empty() {
            return Err(InitError { errors });
        }
        cfg.derive().map_err(fail)?;
        cfg.check_startup_constraints().map_err(fail)?;
        cfg.canonicalize_startup();
        Ok(cfg)
    }

    fn defaults() -> Config {
        let entries = TABLE.iter().map(default_entry).collect();
        Config {
            entries,
            notices: Vec::new(),
        }
    }

    fn apply_node(&mut self, node: &NodeInfo<'_>) -> Result<(), OptionError> {
        self.put(
            Opt::BaseDir,
            node.data_dir.to_string(),
            Value::Str(node.data_dir.to_string()),
        );
        let port = match node::parse_node_address(node.node_address)? {
            Some((host, port)) => {
                self.put(Opt::BaseHost, host.clone(), Value::Str(host.clone()));
                self.put(Opt::IstRecvAddr, host.clone(), Value::Str(host));
                port.unwrap_or(node::DEFAULT_PORT)
            }
            None => node::DEFAULT_PORT,
        };
        self.put(Opt::BasePort, port.to_string(), Value::Int(port.into()));
        Ok(())
    }

    /// Applies one `key = value` from the startup list (or the cluster
    /// address): any option may be set, nothing is refused as static.
    fn apply_startup(&mut self, key: &str, text: &str) -> Result<Opt, OptionError> {
        let opt = Opt::from_name(key).ok_or_else(|| unknown(key))?;
        let value = check_value(opt.spec(), text)?;
        self.put(opt, text.to_string(), value);
        self.note_explicit(opt);
        Ok(opt)
    }

    /// Fills in values that depend on other options.
    fn derive(&mut self) -> Result<(), OptionError> {
        self.derive_listen_addr()?;
        if self.entry(Opt::GcacheDir).text.is_none() {
            let dir = self.str(keys::BASE_DIR).unwrap_or_default().to_string();
            self.put(Opt::GcacheDir, dir.clone(), Value::Str(dir));
        }
        let inactive = self.duration(keys::EVS_INACTIVE_TIMEOUT);
        self.derive_duration(keys::EVS_INSTALL_TIMEOUT, inactive / 2);
        let keepalive = self.duration(keys::EVS_KEEPALIVE_PERIOD);
        self.derive_duration(keys::EVS_CAUSAL_KEEPALIVE_PERIOD, keepalive);
        if !self.entry(Opt::GmcastMcastPort).explicit {
            let port = self.get(keys::BASE_PORT);
            self.entry_mut(Opt::GmcastMcastPort).value = Value::Int(port);
        }
        Ok(())
    }

    /// `gmcast.listen_addr` gets a scheme, a port and a resolved host; a
    /// port it names becomes `base_port`.
    fn derive_listen_addr(&mut self) -> Result<(), OptionError> {
        // Only a user-given address is re-read: a derived one is recomputed
        // so that a later base_port is followed.
        let given = match self.entry(Opt::GmcastListenAddr).explicit {
            true => self.str(keys::GMCAST_LISTEN_ADDR).map(str::to_string),
            false => None,
        };
        let base_port = u16::try_from(self.get(keys::BASE_PORT)).expect("base_port range is u16");
        let (addr, port) = node::listen_addr(given.as_deref(), base_port).map_err(|reason| {
            OptionError::BadValue {
                key: Opt::GmcastListenAddr.name().to_string(),
                value: given.clone().unwrap_or_default(),
                expected: reason,
            }
        })?;
        self.put(Opt::GmcastListenAddr, addr.clone(), Value::Str(addr));
        if port != base_port {
            self.put(Opt::BasePort, port.to_string(), Value::Int(port.into()));
        }
        Ok(())
    }

    fn derive_duration(&mut self, key: DurationKey, value: Duration) {
        if !self.entry(key.opt()).explicit {
            self.put(
                key.opt(),
                value::format_duration(value),
                Value::Duration(value),
            );
        }
    }

    /// Galera's startup range checks between EVS timers and windows.
    fn check_startup_constraints(&self) -> Result<(), OptionError> {
        let suspect = self.duration(keys::EVS_SUSPECT_TIMEOUT);
        let keepalive = self.duration(keys::EVS_KEEPALIVE_PERIOD);
        let inactive = self.duration(keys::EVS_INACTIVE_TIMEOUT);
        self.require(
            keys::EVS_INACTIVE_CHECK_PERIOD.opt(),
            self.duration(keys::EVS_INACTIVE_CHECK_PERIOD) <= suspect / 2,
            "must not exceed half of evs.suspect_timeout",
        )?;
        self.require(
            keys::EVS_KEEPALIVE_PERIOD.opt(),
            keepalive <= suspect / 3,
            "must not exceed a third of evs.suspect_timeout",
        )?;
        let install = self.duration(keys::EVS_INSTALL_TIMEOUT);
        self.require(
            keys::EVS_INSTALL_TIMEOUT.opt(),
            install >= keepalive && install <= inactive,
            "must lie between evs.keepalive_period and evs.inactive_timeout",
        )?;
        self.check_windows(Opt::EvsUserSendWindow)
    }

    /// Galera's runtime range checks, for the option just set.
    fn check_runtime_constraints(&self, opt: Opt) -> Result<(), OptionError> {
        match opt {
            Opt::EvsSendWindow | Opt::EvsUserSendWindow => self.check_windows(opt),
            Opt::EvsInstallTimeout => {
                let install = self.duration(keys::EVS_INSTALL_TIMEOUT);
                let ok = install >= self.duration(keys::EVS_KEEPALIVE_PERIOD) * 2
                    && install <= self.duration(keys::EVS_INACTIVE_TIMEOUT);
                let why = "must lie between 2 * evs.keepalive_period and evs.inactive_timeout";
                self.require(opt, ok, why)
            }
            _ => Ok(()),
        }
    }

    fn check_windows(&self, blame: Opt) -> Result<(), OptionError> {
        let ok = self.get(keys::EVS_USER_SEND_WINDOW) <= self.get(keys::EVS_SEND_WINDOW);
        self.require(
            blame,
            ok,
            "evs.user_send_window must not exceed evs.send_window",
        )
    }

    fn require(&self, opt: Opt, ok: bool, reason: &str) -> Result<(), OptionError> {
        if ok {
            return Ok(());
        }
        Err(OptionError::Conflict {
            key: opt.name().to_string(),
            value: self.entry(opt).text.clone().unwrap_or_default(),
            reason: reason.to_string(),
        })
    }

    /// The modules that normalise at startup rewrite their values (and
    /// defaults: `PT24H` is shown as `P1D`).
    fn canonicalize_startup(&mut self) {
        for (spec, entry) in TABLE.iter().zip(self.entries.iter_mut()) {
            if matches!(spec.render, Render::Canonical | Render::CanonicalAtInit) {
                if let Some(text) = &entry.text {
                    entry.text = Some(canonical(spec, &entry.value, text));
                }
            }
        }
    }

    /// `options_set`: applies the pairs in order, stopping at the first
    /// failure. Returns what changed, for the provider to act on.
    pub fn set(&mut self, options: &str) -> Result<Vec<Change>, SetFailure> {
        let pairs = parse_pairs(options).map_err(|error| SetFailure {
            applied: Vec::new(),
            error,
        })?;
        let mut applied = Vec::new();
        for (key, text) in &pairs {
            match self.set_one(key, text) {
                Ok(Some(change)) => applied.push(change),
                Ok(None) => {}
                Err(error) => return Err(SetFailure { applied, error }),
            }
        }
        Ok(applied)
    }

    fn set_one(&mut self, key: &str, text: &str) -> Result<Option<Change>, OptionError> {
        let opt = Opt::from_name(key).ok_or_else(|| unknown(key))?;
        let spec = opt.spec();
        if spec.runtime != Runtime::Action && self.entry(opt).text.as_deref() == Some(text) {
            return Ok(None);
        }
        if spec.runtime == Runtime::Static {
            return Err(OptionError::NotDynamic {
                key: key.to_string(),
            });
        }
        let value = check_value(spec, text)?;
        if spec.runtime != Runtime::Action {
            let previous = self.entry(opt).clone();
            let shown = render(spec, &value, text, Phase::Runtime);
            self.put(opt, shown, value.clone());
            if let Err(e) = self.check_runtime_constraints(opt) {
                *self.entry_mut(opt) = previous;
                return Err(e);
            }
        }
        self.note_explicit(opt);
        Ok(Some(Change { opt, value }))
    }

    /// Applies the options of a cluster address (`gcomm://h?k=v&...`) as
    /// startup options. Unknown keys are ignored with a notice (as Galera
    /// ignores them); a bad value fails the connect.
    pub fn apply_address_options(&mut self, address: &ClusterAddress) -> Result<(), OptionError> {
        for (key, text) in &address.options {
            if Opt::from_name(key).is_none() {
                self.notices.push(Notice::IgnoredAddressOption(key.clone()));
                continue;
            }
            let opt = self.apply_startup(key, text)?;
            let spec = opt.spec();
            if matches!(spec.render, Render::Canonical | Render::CanonicalAtInit) {
                let shown = canonical(spec, &self.entry(opt).value, text);
                self.entry_mut(opt).text = Some(shown);
            }
        }
        self.derive()?;
        self.check_startup_constraints()
    }

    /// `options_get`: every shown option, sorted, `k = v; ` each.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (spec, entry) in TABLE.iter().zip(&self.entries) {
            if let Some(text) = &entry.text {
                out.push_str(spec.name);
                out.push_str(" = ");
                out.push_str(text);
                out.push_str("; ");
            }
        }
        out
    }

    /// The value of an option through its typed handle.
    pub fn get<K: TypedKey>(&self, key: K) -> K::Out {
        K::extract(&self.entry(key.opt()).value)
    }

    /// Shorthand for `get` on a duration.
    pub fn duration(&self, key: DurationKey) -> Duration {
        self.get(key)
    }

    /// A text option without copying; `None` when it has no value.
    pub fn str(&self, key: StrKey) -> Option<&str> {
        match &self.entry(key.opt()).value {
            Value::Str(s) => Some(s),
            Value::Unset => None,
            other => panic!("{} is stored as {other:?}", key.name()),
        }
    }

    /// The typed value of any option.
    pub fn value(&self, opt: Opt) -> &Value {
        &self.entry(opt).value
    }

    /// The text `options_get` shows for the option, if any.
    pub fn text(&self, opt: Opt) -> Option<&str> {
        self.entry(opt).text.as_deref()
    }

    /// Whether the user set the option (startup, address or runtime).
    pub fn is_explicit(&self, opt: Opt) -> bool {
        self.entry(opt).explicit
    }

    /// Messages to log since the last call (not-yet-effective options,
    /// deprecations, ignored address options).
    pub fn drain_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Where joiners receive IST: `tcp://host:port`, from `ist.recv_addr`
    /// or `base_host`, port `base_port + 1` unless given.
    pub fn ist_recv_addr(&self) -> Option<String> {
        let addr = self
            .str(keys::IST_RECV_ADDR)
            .or(self.str(keys::BASE_HOST))?;
        let base_port = u16::try_from(self.get(keys::BASE_PORT)).expect("base_port is u16");
        node::ist_address(addr, base_port).ok()
    }

    /// Where the IST receiver binds when that is not where it is reached
    /// (`ist.recv_bind`, behind NAT): `tcp://host:port`, port as above.
    pub fn ist_recv_bind(&self) -> Option<String> {
        let bind = self.str(keys::IST_RECV_BIND)?;
        let base_port = u16::try_from(self.get(keys::BASE_PORT)).expect("base_port is u16");
        node::ist_address(bind, base_port).ok()
    }

    fn note_explicit(&mut self, opt: Opt) {
        self.entry_mut(opt).explicit = true;
        let spec = opt.spec();
        if spec.deprecated {
            self.notices.push(Notice::Deprecated(opt));
        }
        if !spec.effective && !REPORTED[opt as usize].swap(true, Ordering::Relaxed) {
            self.notices.push(Notice::NotYetEffective(opt));
        }
    }

    fn put(&mut self, opt: Opt, text: String, value: Value) {
        let entry = self.entry_mut(opt);
        entry.text = Some(text);
        entry.value = value;
    }

    fn entry(&self, opt: Opt) -> &Entry {
        &self.entries[opt as usize]
    }

    fn entry_mut(&mut self, opt: Opt) -> &mut Entry {
        &mut self.entries[opt as usize]
    }
}

fn default_entry(spec: &OptionSpec) -> Entry {
    let parsed = |text: &str| {
        check_value(spec, text).unwrap_or_else(|e| panic!("bad default for {}: {e}", spec.name))
    };
    let (text, value) = match spec.default {
        Default::Shown(t) => (Some(t.to_string()), parsed(t)),
        Default::Hidden(Some(t)) => (None, parsed(t)),
        Default::Hidden(None) | Default::Derived => (None, Value::Unset),
    };
    Entry {
        text,
        value,
        explicit: false,
    }
}

fn unknown(key: &str) -> OptionError {
    OptionError::Unknown {
        key: key.to_string(),
    }
}

/// The text shown for a value set in `phase`.
fn render(spec: &OptionSpec, value: &Value, text: &str, phase: Phase) -> String {
    let canonical_now = match spec.render {
        Render::Verbatim => false,
        Render::Canonical => true,
        Render::CanonicalAtInit => phase == Phase::Startup,
        Render::CanonicalAtRuntime => phase == Phase::Runtime,
    };
    if canonical_now {
        canonical(spec, value, text)
    } else {
        text.to_string()
    }
}
