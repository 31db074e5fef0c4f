//! What the config service declares (`wsrep_init_config_service_v1`):
//! MariaDB 11.x makes each parameter a server variable
//! (`wsrep_provider_<name>`, `.` as `_`, with `plugin-wsrep-provider=ON`),
//! typed and read-only as the provider declares it. A Galera user's
//! variables must keep their types (a duration is a DOUBLE of seconds, not
//! our ISO-8601 text) and refuse SET where Galera's do, so every parameter
//! Galera lists is declared as Galera declares it ([`GALERA`]); options only
//! lockstep has follow the registry.

use crate::config::Config;
use crate::options::{Opt, Runtime};
use crate::typed::Value;

/// A parameter's type, as the server's variable gets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    Bool,
    Integer,
    Double,
    Str,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Bool(bool),
    Integer(i64),
    Double(f64),
    /// Empty for an option without a value: Galera declares unset text
    /// options too, and wsrep-lib reads the text without a NULL check.
    Str(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: &'static str,
    pub read_only: bool,
    pub deprecated: bool,
    pub value: ParamValue,
}

use ParamType::*;

/// Galera 26.4.23's declarations (name, type, read-only), observed on
/// MariaDB 11.8.9 with `plugin-wsrep-provider=ON`: `SELECT variable_name,
/// variable_type, read_only FROM information_schema.system_variables
/// WHERE variable_name LIKE 'wsrep_provider\_%'` (tests/fixtures holds the
/// dump). Quirks kept on purpose: `evs.auto_evict` is a read-only boolean
/// there, version numbers are text, and several options Galera refuses
/// at runtime through `wsrep_provider_options` are declared writable (a SET
/// then reaches the provider, which refuses it as it refuses the option
/// string).
pub const GALERA: &[(&str, ParamType, bool)] = &[
    ("base_dir", Str, true),
    ("base_host", Str, true),
    ("base_port", Integer, true),
    ("cert.log_conflicts", Bool, false),
    ("cert.optimistic_pa", Bool, false),
    ("debug", Bool, false),
    ("evs.auto_evict", Bool, true),
    ("evs.causal_keepalive_period", Double, false),
    ("evs.debug_log_mask", Str, false),
    ("evs.delay_margin", Double, false),
    ("evs.delayed_keep_period", Double, false),
    ("evs.evict", Str, false),
    ("evs.inactive_check_period", Double, false),
    ("evs.inactive_timeout", Double, false),
    ("evs.info_log_mask", Str, false),
    ("evs.install_timeout", Double, false),
    ("evs.join_retrans_period", Double, false),
    ("evs.keepalive_period", Double, false),
    ("evs.max_install_timeouts", Integer, false),
    ("evs.send_window", Integer, false),
    ("evs.stats_report_period", Double, false),
    ("evs.suspect_timeout", Double, false),
    ("evs.use_aggregate", Bool, false),
    ("evs.user_send_window", Integer, false),
    ("evs.version", Str, true),
    ("evs.view_forget_timeout", Double, true),
    ("gcache.dir", Str, true),
    ("gcache.keep_pages_size", Integer, false),
    ("gcache.mem_size", Integer, false),
    ("gcache.name", Str, true),
    ("gcache.page_size", Integer, false),
    ("gcache.recover", Bool, true),
    ("gcache.size", Integer, true),
    ("gcomm.thread_prio", Str, false),
    ("gcs.fc_debug", Integer, false),
    ("gcs.fc_factor", Double, false),
    ("gcs.fc_limit", Integer, false),
    ("gcs.fc_master_slave", Bool, false),
    ("gcs.fc_single_primary", Bool, true),
    ("gcs.max_packet_size", Integer, false),
    ("gcs.max_throttle", Double, false),
    ("gcs.recv_q_hard_limit", Integer, false),
    ("gcs.recv_q_soft_limit", Double, false),
    ("gcs.stateless", Bool, true),
    ("gcs.sync_donor", Bool, false),
    ("gcs.vote_policy", Integer, true),
    ("gmcast.group", Str, true),
    ("gmcast.listen_addr", Str, true),
    ("gmcast.mcast_addr", Str, true),
    ("gmcast.mcast_ttl", Integer, true),
    ("gmcast.peer_addr", Str, false),
    ("gmcast.peer_timeout", Double, true),
    ("gmcast.segment", Integer, true),
    ("gmcast.time_wait", Double, true),
    ("gmcast.version", Str, true),
    ("ist.recv_addr", Str, true),
    ("ist.recv_bind", Str, true),
    ("pc.announce_timeout", Double, true),
    ("pc.bootstrap", Bool, false),
    ("pc.checksum", Bool, false),
    ("pc.ignore_quorum", Bool, false),
    ("pc.ignore_sb", Bool, false),
    ("pc.linger", Double, true),
    ("pc.npvo", Bool, false),
    ("pc.recovery", Bool, true),
    ("pc.version", Str, true),
    ("pc.wait_prim", Bool, true),
    ("pc.wait_prim_timeout", Double, true),
    ("pc.weight", Integer, false),
    ("protonet.backend", Str, true),
    ("protonet.version", Str, true),
    ("repl.causal_read_timeout", Double, false),
    ("repl.commit_order", Str, false),
    ("repl.key_format", Str, false),
    ("repl.max_ws_size", Integer, false),
    ("repl.proto_max", Str, false),
    ("socket.checksum", Integer, true),
    ("socket.dynamic", Bool, true),
    ("socket.recv_buf_size", Str, false),
    ("socket.send_buf_size", Str, false),
    ("socket.ssl", Bool, true),
    ("socket.ssl_ca", Str, true),
    ("socket.ssl_cert", Str, true),
    ("socket.ssl_cipher", Str, true),
    ("socket.ssl_compression", Bool, true),
    ("socket.ssl_key", Str, true),
    ("socket.ssl_password_file", Str, true),
    ("socket.ssl_reload", Bool, false),
];

/// Every parameter to declare, with its current value.
pub fn parameters(cfg: &Config) -> Vec<Param> {
    Opt::ALL.iter().filter_map(|&opt| declare(cfg, opt)).collect()
}

fn declare(cfg: &Config, opt: Opt) -> Option<Param> {
    let spec = opt.spec();
    let text = cfg.text(opt);
    let (ty, read_only) = match GALERA.iter().find(|(name, _, _)| *name == spec.name) {
        Some(&(_, ty, read_only)) => (ty, read_only),
        // Ours alone: declared when shown, typed by the registry.
        None if text.is_some() => (own_type(cfg.value(opt)), spec.runtime == Runtime::Static),
        None => return None,
    };
    Some(Param { name: spec.name, read_only, deprecated: spec.deprecated, value: convert(cfg.value(opt), text, ty) })
}

fn own_type(v: &Value) -> ParamType {
    match v {
        Value::Bool(_) => Bool,
        Value::Int(_) => Integer,
        Value::Double(_) | Value::Duration(_) => Double,
        Value::Str(_) | Value::Unset => Str,
    }
}

/// The value in the declared type: durations in seconds, numbers Galera
/// declares as text as the text `options_get` shows.
fn convert(v: &Value, text: Option<&str>, ty: ParamType) -> ParamValue {
    match (ty, v) {
        (Bool, Value::Bool(b)) => ParamValue::Bool(*b),
        (Bool, Value::Int(i)) => ParamValue::Bool(*i != 0),
        (Bool, _) => ParamValue::Bool(false),
        (Integer, Value::Int(i)) => ParamValue::Integer(*i),
        (Integer, _) => ParamValue::Integer(0),
        (Double, Value::Double(d)) => ParamValue::Double(*d),
        (Double, Value::Duration(d)) => ParamValue::Double(d.as_secs_f64()),
        (Double, _) => ParamValue::Double(0.0),
        (Str, _) => ParamValue::Str(text.unwrap_or_default().to_string()),
    }
}
