//! Layout pins (work in progress)
