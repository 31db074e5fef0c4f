//! transfer (work in progress)
