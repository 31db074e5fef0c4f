//! State transfer: SST is the server's scripts (coordinated in
//! `node::sst`); IST, the incremental transfer of the seqnos a joiner
//! misses, is ours and lives here: its wire format (`ist`), its connection
//! (`channel`) and the joiner's bounded queue between the two (`inbox`).

pub mod channel;
pub mod inbox;
pub mod ist;
