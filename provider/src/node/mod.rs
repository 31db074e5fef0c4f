//! node (work in progress)
