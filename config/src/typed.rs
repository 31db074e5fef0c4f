//! Typed handles and values. A handle names an option and fixes the Rust
//! type its value is read as, so provider code cannot mistype a name or a
//! type: `cfg.get(keys::GCS_FC_LIMIT)` is an `i64`,
//! `cfg.duration(keys::EVS_SUSPECT_TIMEOUT)` a `Duration`.
//!
//! The constants themselves are generated with the registry
//! ([`crate::options::keys`], re-exported as `lockstep_config::keys`).

use crate::options::Opt;
use std::time::Duration;

/// A parsed option value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Double(f64),
    Duration(Duration),
    Str(String),
    /// A hidden option that is not set and has no implicit value.
    Unset,
}

/// A handle that reads an option as a Rust type.
pub trait TypedKey: Copy {
    type Out;
    fn opt(self) -> Opt;
    /// Converts the stored value; the registry guarantees the variant.
    fn extract(value: &Value) -> Self::Out;
}

macro_rules! handle {
    ($name:ident, $out:ty, $variant:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name(Opt);

        impl $name {
            pub const fn new(opt: Opt) -> Self {
                $name(opt)
            }

            pub fn name(self) -> &'static str {
                self.0.name()
            }

            pub const fn opt(self) -> Opt {
                self.0
            }
        }

        impl TypedKey for $name {
            type Out = $out;

            fn opt(self) -> Opt {
                self.0
            }

            fn extract(value: &Value) -> $out {
                match value {
                    Value::$variant(v) => v.clone(),
                    other => panic!(
                        "option stored as {other:?}, handle expects {}",
                        stringify!($variant)
                    ),
                }
            }
        }
    };
}

handle!(BoolKey, bool, Bool, "A boolean option.");
handle!(IntKey, i64, Int, "An integer option (sizes are in bytes).");
handle!(DoubleKey, f64, Double, "A floating point option.");
handle!(
    DurationKey,
    Duration,
    Duration,
    "An ISO-8601 duration option."
);

/// A text option (also addresses and word choices). Read with
/// `Config::str`, which borrows; `get` returns an owned copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrKey(Opt);

impl StrKey {
    pub const fn new(opt: Opt) -> Self {
        StrKey(opt)
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub const fn opt(self) -> Opt {
        self.0
    }
}

impl TypedKey for StrKey {
    /// `None` when the option has no value (hidden and unset, or a derived
    /// address the node could not provide).
    type Out = Option<String>;

    fn opt(self) -> Opt {
        self.0
    }

    fn extract(value: &Value) -> Option<String> {
        match value {
            Value::Str(s) => Some(s.clone()),
            Value::Unset => None,
            other => panic!("option stored as {other:?}, handle expects Str"),
        }
    }
}
