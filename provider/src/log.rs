//! Logging bridge (work in progress)
