//! Errors of option handling. Each renders as one line fit for the server
//! log, naming the option and saying why.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum OptionError {
    /// The `k=v; ...` list itself is malformed; nothing was applied.
    Syntax(String),
    /// No such option (Galera's wording, which MTR logs show).
    Unknown { key: String },
    /// The value does not parse as the option's type.
    BadValue {
        key: String,
        value: String,
        expected: String,
    },
    /// The value parses but lies outside the allowed range.
    OutOfRange {
        key: String,
        value: String,
        range: String,
    },
    /// The option only takes effect at startup.
    NotDynamic { key: String },
    /// The value conflicts with another option (e.g. window sizes).
    Conflict {
        key: String,
        value: String,
        reason: String,
    },
    /// `wsrep_node_address` (from the server) cannot be used.
    NodeAddress { address: String, reason: String },
    /// The cluster address (`gcomm://...`) is malformed.
    ClusterAddress { address: String, reason: String },
}

impl OptionError {
    /// The option the error is about, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            OptionError::Unknown { key }
            | OptionError::BadValue { key, .. }
            | OptionError::OutOfRange { key, .. }
            | OptionError::NotDynamic { key }
            | OptionError::Conflict { key, .. } => Some(key),
            _ => None,
        }
    }
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionError::Syntax(msg) => write!(f, "{msg}"),
            OptionError::Unknown { key } => write!(f, "Unknown parameter '{key}'"),
            OptionError::BadValue {
                key,
                value,
                expected,
            } => {
                write!(
                    f,
                    "Bad value '{value}' for parameter '{key}': expected {expected}"
                )
            }
            OptionError::OutOfRange { key, value, range } => {
                write!(
                    f,
                    "Value '{value}' for parameter '{key}' is out of range {range}"
                )
            }
            OptionError::NotDynamic { key } => {
                write!(
                    f,
                    "Parameter '{key}' can't be changed at runtime; set it at startup"
                )
            }
            OptionError::Conflict { key, value, reason } => {
                write!(
                    f,
                    "Value '{value}' for parameter '{key}' rejected: {reason}"
                )
            }
            OptionError::NodeAddress { address, reason } => {
                write!(f, "Bad value for 'node_address': '{address}': {reason}")
            }
            OptionError::ClusterAddress { address, reason } => {
                write!(f, "Bad cluster address '{address}': {reason}")
            }
        }
    }
}

impl std::error::Error for OptionError {}

/// Failure of `Config::init`: every problem found, in input order. Galera
/// logs each unknown key before failing; so can the provider.
#[derive(Clone, Debug, PartialEq)]
pub struct InitError {
    pub errors: Vec<OptionError>,
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        assert!(
            !self.errors.is_empty(),
            "an InitError always carries a cause"
        );
        let lines: Vec<String> = self.errors.iter().map(|e| e.to_string()).collect();
        write!(f, "{}", lines.join("; "))
    }
}

impl std::error::Error for InitError {}
