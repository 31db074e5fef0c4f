//! The C ABI of wsrep v26: what mariadbd loads. `loader` fills the
//! `wsrep_t` table and exports the optional services; `entry` holds the
//! table's functions (thin: copy C arguments, call the node, catch every
//! panic); `callbacks` turns the server's callbacks into the node's
//! `Application`; `provider` is the instance behind `wsrep_t.ctx`.

mod callbacks;
mod config_service;
mod entry;
pub mod loader;
mod provider;
pub mod sys;

#[cfg(test)]
mod layout_tests;
#[cfg(test)]
mod tests;
