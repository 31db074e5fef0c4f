//! Whether this member's side may order: a leader within the grace
//! (`quorum`), weighted quorum's rules (`weights`), a member that hears
//! no majority or not its leader (`cut_off`), a process that stood still
//! (`standstill`) and who spoke lately (`liveness`).

pub mod cut_off;
pub mod liveness;
pub mod quorum;
pub mod standstill;
pub mod weights;
