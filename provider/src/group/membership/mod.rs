//! Who is in the group: joining and leaving (`joining`), where a member
//! is in its life (`phase`), the restarted members of the last primary
//! component (`recovery`), where the leader should be (`placement`) and
//! the log an arbitrator keeps for the data members (`arbitrator_hold`).

pub mod arbitrator_hold;
pub mod joining;
pub mod phase;
pub mod placement;
pub mod recovery;
