//! group (work in progress)
