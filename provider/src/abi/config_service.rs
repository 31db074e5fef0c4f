//! The config service (`wsrep_init_config_service_v1`): enumerates the
//! provider's parameters with their types, as Galera declares them (see
//! `lockstep_config::service`). MariaDB 10.11 does not call it (11.x does,
//! and unloads a provider whose answer fails); it reads the same
//! configuration as `options_get`.

use std::ffi::{c_void, CString};

use lockstep_config::service::{Param, ParamValue};

use super::provider::provider;
use super::sys::*;

/// # Safety
/// `w` is the table the provider filled; `cb` is NULL or callable with
/// `context`.
pub unsafe extern "C" fn get_parameters(w: *mut wsrep_t, cb: Option<wsrep_get_parameters_cb>, context: *mut c_void) -> wsrep_status_t {
    let (Some(p), Some(cb)) = (unsafe { provider(w) }, cb) else { return wsrep_status_t::NODE_FAIL };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for param in p.parameters() {
            // SAFETY: the server's callback, with the context it gave.
            if unsafe { declare(&param, cb, context) } != wsrep_status_t::OK {
                return wsrep_status_t::FATAL;
            }
        }
        wsrep_status_t::OK
    }));
    result.unwrap_or(wsrep_status_t::FATAL)
}

/// One parameter through the server's callback; its strings live until
/// the callback returns.
unsafe fn declare(param: &Param, cb: wsrep_get_parameters_cb, context: *mut c_void) -> wsrep_status_t {
    let name = CString::new(param.name).expect("option names have no NUL");
    let mut flags = if param.read_only { WSREP_PARAM_READONLY } else { 0 };
    if param.deprecated {
        flags |= WSREP_PARAM_DEPRECATED;
    }
    let text;
    let (type_flag, value) = match &param.value {
        ParamValue::Bool(b) => (WSREP_PARAM_TYPE_BOOL, wsrep_parameter_value { as_bool: *b }),
        ParamValue::Integer(i) => (WSREP_PARAM_TYPE_INTEGER, wsrep_parameter_value { as_integer: *i }),
        ParamValue::Double(d) => (WSREP_PARAM_TYPE_DOUBLE, wsrep_parameter_value { as_double: *d }),
        ParamValue::Str(s) => {
            text = CString::new(s.replace('\0', " ")).expect("NUL replaced");
            (0, wsrep_parameter_value { as_string: text.as_ptr() })
        }
    };
    let param = wsrep_parameter_t { flags: flags | type_flag, name: name.as_ptr(), value };
    // SAFETY: see above.
    unsafe { cb(&param, context) }
}
