//! writeset (work in progress)
