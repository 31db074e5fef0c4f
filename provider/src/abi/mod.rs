//! The C ABI of wsrep v26 (work in progress).

pub mod sys;

#[cfg(test)]
mod layout_tests;
