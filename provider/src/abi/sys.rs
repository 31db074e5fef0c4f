//! Rust mirror of wsrep_api.h v26 (work in progress)
