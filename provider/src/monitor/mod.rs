//! monitor (work in progress)
