//! The config service (`wsrep_init_config_service_v1`): enumerates the
//! provider's parameters with their types, as Galera does. MariaDB 10.11
//! does not call it (11.x does); it reads the same registry as
//! `options_get`.

use std::ffi::{c_void, CString};

use lockstep_config::{Runtime, Value};

use super::provider::provider;
use super::sys::*;

/// # Safety
/// `w` is the table the provider filled; `cb` is NULL or callable with
/// `context`.
pub unsafe extern "C" fn get_parameters(w: *mut wsrep_t, cb: Option<wsrep_get_parameters_cb>, context: *mut c_void) -> wsrep_status_t {
    let (Some(p), Some(cb)) = (unsafe { provider(w) }, cb) else { return wsrep_status_t::NODE_FAIL };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for (opt, value, _text) in p.parameters() {
            let spec = opt.spec();
            let name = CString::new(spec.name).expect("option names have no NUL");
            let mut flags = if spec.runtime == Runtime::Static { WSREP_PARAM_READONLY } else { 0 };
            if spec.deprecated {
                flags |= WSREP_PARAM_DEPRECATED;
            }
            let text;
            let (type_flag, v) = match value {
                Value::Bool(b) => (WSREP_PARAM_TYPE_BOOL, wsrep_parameter_value { as_bool: b }),
                Value::Int(i) => (WSREP_PARAM_TYPE_INTEGER, wsrep_parameter_value { as_integer: i }),
                Value::Double(d) => (WSREP_PARAM_TYPE_DOUBLE, wsrep_parameter_value { as_double: d }),
                other => {
                    text = CString::new(display(&other).replace('\0', " ")).expect("NUL replaced");
                    (0, wsrep_parameter_value { as_string: text.as_ptr() })
                }
            };
            let param = wsrep_parameter_t { flags: flags | type_flag, name: name.as_ptr(), value: v };
            // SAFETY: the server's callback; param and its strings outlive it.
            if unsafe { cb(&param, context) } != wsrep_status_t::OK {
                return wsrep_status_t::FATAL;
            }
        }
        wsrep_status_t::OK
    }));
    result.unwrap_or(wsrep_status_t::FATAL)
}

fn display(v: &Value) -> String {
    match v {
        Value::Duration(d) => format!("PT{}S", d.as_secs_f64()),
        Value::Str(s) => s.clone(),
        Value::Unset => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Double(d) => d.to_string(),
    }
}
