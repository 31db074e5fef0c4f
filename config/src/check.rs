//! Reading an option value according to its kind, with range checks, and
//! writing it back in the canonical form of the Galera module that owns it.

use crate::error::OptionError;
use crate::node;
use crate::options::{Kind, OptionSpec};
use crate::typed::Value;
use crate::value::{self, IntSyntax};
use std::time::Duration;

/// Why a value was refused, before the option name is attached.
enum Failure {
    /// Does not parse; says what was expected.
    Bad(String),
    /// Parses but lies outside this range.
    Range(String),
}

/// Parses and range-checks a value for an option.
pub fn check_value(spec: &OptionSpec, text: &str) -> Result<Value, OptionError> {
    let (key, value) = (spec.name.to_string(), text.to_string());
    parse_kind(spec.kind, text).map_err(|failure| match failure {
        Failure::Bad(expected) => OptionError::BadValue {
            key,
            value,
            expected,
        },
        Failure::Range(range) => OptionError::OutOfRange { key, value, range },
    })
}

fn parse_kind(kind: Kind, text: &str) -> Result<Value, Failure> {
    match kind {
        Kind::Bool => value::parse_bool(text)
            .map(Value::Bool)
            .ok_or_else(|| bad("a boolean (yes/no, on/off, true/false, 1/0)")),
        Kind::Int { syntax, min, max } => check_int(text, syntax, min, max).map(Value::Int),
        Kind::Double { min, max, max_open } => {
            check_double(text, min, max, max_open).map(Value::Double)
        }
        Kind::Duration { min } => check_duration(text, min).map(Value::Duration),
        _ => check_text(kind, text).map(|()| Value::Str(text.to_string())),
    }
}

fn bad(expected: &str) -> Failure {
    Failure::Bad(expected.to_string())
}

fn check_int(text: &str, syntax: IntSyntax, min: i64, max: i64) -> Result<i64, Failure> {
    let expected = match syntax {
        IntSyntax::Galera => "an integer (e.g. 16, 0x10, 1K, 128M)",
        IntSyntax::Decimal => "a decimal integer",
        IntSyntax::Hex => "a hexadecimal integer (e.g. 0x1f)",
    };
    let n = value::parse_int(text, syntax).ok_or_else(|| bad(expected))?;
    if n < min || n > max {
        return Err(Failure::Range(format!("[{min}, {max}]")));
    }
    Ok(n)
}

fn check_double(text: &str, min: f64, max: f64, max_open: bool) -> Result<f64, Failure> {
    let d = value::parse_double(text).ok_or_else(|| bad("a number (e.g. 0.5)"))?;
    let below_max = if max_open { d < max } else { d <= max };
    if !(d >= min && below_max) {
        let close = if max_open { ')' } else { ']' };
        return Err(Failure::Range(format!("[{min}, {max}{close}")));
    }
    Ok(d)
}

fn check_duration(text: &str, min: Duration) -> Result<Duration, Failure> {
    let d = value::parse_duration(text)
        .ok_or_else(|| bad("an ISO-8601 duration (e.g. PT30S, PT0.5S, P1D) or seconds"))?;
    if d < min {
        return Err(Failure::Range(format!(
            "(at least {})",
            value::format_duration(min)
        )));
    }
    Ok(d)
}

/// The text kinds: only the syntax is checked, the text is kept.
fn check_text(kind: Kind, text: &str) -> Result<(), Failure> {
    match kind {
        Kind::Choice(words) if !words.iter().any(|w| w.eq_ignore_ascii_case(text)) => {
            Err(Failure::Bad(format!("one of {}", words.join(", "))))
        }
        Kind::BufSize if !is_buf_size(text) => Err(bad("'auto' or a size in bytes (e.g. 1M)")),
        Kind::Addr => node::check_addr(text)
            .map_err(|why| Failure::Bad(format!("an address [scheme://]host[:port] ({why})"))),
        Kind::ThreadPrio if !is_thread_prio(text) => Err(bad(
            "empty or policy:priority with policy other, fifo or rr",
        )),
        _ => Ok(()),
    }
}

fn is_buf_size(text: &str) -> bool {
    text == "auto" || value::parse_int(text, IntSyntax::Galera).is_some_and(|n| n >= 0)
}

fn is_thread_prio(text: &str) -> bool {
    match text.split_once(':') {
        Some((policy, prio)) => {
            matches!(policy, "other" | "fifo" | "rr") && prio.parse::<u32>().is_ok()
        }
        None => text.is_empty(),
    }
}

/// The form the owning Galera module writes a value back in (`1K`, `0x3`,
/// `PT1M`, `true`, `0.5`); text kinds are kept as given.
pub fn canonical(spec: &OptionSpec, value: &Value, text: &str) -> String {
    match (spec.kind, value) {
        (Kind::Bool, Value::Bool(b)) => b.to_string(),
        (
            Kind::Int {
                syntax: IntSyntax::Galera,
                ..
            },
            Value::Int(n),
        ) => value::format_size(*n),
        (
            Kind::Int {
                syntax: IntSyntax::Decimal,
                ..
            },
            Value::Int(n),
        ) => n.to_string(),
        (
            Kind::Int {
                syntax: IntSyntax::Hex,
                ..
            },
            Value::Int(n),
        ) => value::format_hex(*n),
        (Kind::Double { .. }, Value::Double(d)) => value::format_double(*d),
        (Kind::Duration { .. }, Value::Duration(d)) => value::format_duration(*d),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Opt;

    fn check(name: &str, text: &str) -> Result<Value, String> {
        check_value(Opt::from_name(name).unwrap().spec(), text).map_err(|e| e.to_string())
    }

    #[test]
    fn errors_name_the_option_and_the_reason() {
        assert_eq!(
            check("gcs.fc_limit", "abc").unwrap_err(),
            "Bad value 'abc' for parameter 'gcs.fc_limit': expected an integer (e.g. 16, 0x10, 1K, 128M)"
        );
        assert_eq!(
            check("gcs.fc_factor", "1.5").unwrap_err(),
            "Value '1.5' for parameter 'gcs.fc_factor' is out of range [0, 1]"
        );
        assert_eq!(
            check("gcs.recv_q_soft_limit", "1.0").unwrap_err(),
            "Value '1.0' for parameter 'gcs.recv_q_soft_limit' is out of range [0, 1)"
        );
        assert_eq!(
            check("evs.suspect_timeout", "PT0.05S").unwrap_err(),
            "Value 'PT0.05S' for parameter 'evs.suspect_timeout' is out of range (at least PT0.1S)"
        );
    }

    #[test]
    fn text_kinds() {
        assert_eq!(
            check("repl.key_format", "flat16a"),
            Ok(Value::Str("flat16a".into()))
        );
        assert!(check("repl.key_format", "FLAT9").is_err());
        assert!(check("socket.recv_buf_size", "auto").is_ok());
        assert!(check("socket.recv_buf_size", "212992").is_ok());
        assert!(check("socket.recv_buf_size", "-1").is_err());
        assert!(check("gcomm.thread_prio", "").is_ok());
        assert!(check("gcomm.thread_prio", "rr:2").is_ok());
        assert!(check("gcomm.thread_prio", "batch:1").is_err());
        assert!(check("ist.recv_addr", "tcp://10.0.0.1:4568").is_ok());
        assert!(check("ist.recv_addr", "").is_err());
        assert_eq!(check("gcache.name", ""), Ok(Value::Str(String::new())));
    }

    #[test]
    fn canonical_forms() {
        let canon = |name: &str, text: &str| {
            let spec = Opt::from_name(name).unwrap().spec();
            canonical(spec, &check_value(spec, text).unwrap(), text)
        };
        assert_eq!(canon("gcs.fc_limit", "0x10"), "16");
        assert_eq!(canon("gcache.mem_size", "1048576"), "1M");
        assert_eq!(canon("evs.send_window", "010"), "10");
        assert_eq!(canon("evs.debug_log_mask", "3"), "0x3");
        assert_eq!(canon("evs.use_aggregate", "no"), "false");
        assert_eq!(canon("gcs.fc_factor", "0.50"), "0.5");
        assert_eq!(canon("evs.view_forget_timeout", "PT24H"), "P1D");
        assert_eq!(canon("gcache.name", "x"), "x");
    }
}
