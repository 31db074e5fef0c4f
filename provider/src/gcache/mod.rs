//! gcache (work in progress)
