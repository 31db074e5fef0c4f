//! cert (work in progress)
