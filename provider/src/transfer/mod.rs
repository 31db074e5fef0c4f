//! State transfer: SST is the server's scripts (coordinated in
//! `node::sst`); IST, the incremental transfer of the seqnos a joiner
//! misses, is ours and lives here.

pub mod ist;
