//! raft-rs logs through slog: its records go to the provider's log, at
//! debug level (its warnings are about peers and timing, which the group
//! already reports in its own words), errors as errors.

use std::fmt::Write as _;

use crate::log;

pub struct RaftLog;

struct Pairs(String);

impl slog::Serializer for Pairs {
    fn emit_arguments(&mut self, key: slog::Key, val: &std::fmt::Arguments) -> slog::Result {
        let _ = write!(self.0, " {}={}", key, val);
        Ok(())
    }
}

impl slog::Drain for RaftLog {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &slog::Record, values: &slog::OwnedKVList) -> Result<(), slog::Never> {
        let is_error = matches!(record.level(), slog::Level::Critical | slog::Level::Error);
        if !is_error && !log::debug_enabled() {
            return Ok(());
        }
        let mut pairs = Pairs(String::new());
        let _ = slog::KV::serialize(&record.kv(), record, &mut pairs);
        let _ = slog::KV::serialize(values, record, &mut pairs);
        if is_error {
            log::error!("raft: {}{}", record.msg(), pairs.0);
        } else {
            log::debug!("raft: {}{}", record.msg(), pairs.0);
        }
        Ok(())
    }
}

pub fn logger() -> slog::Logger {
    slog::Logger::root(RaftLog, slog::o!())
}
