//! transport (work in progress)
