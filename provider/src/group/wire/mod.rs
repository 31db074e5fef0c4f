//! What members say to each other: the entries of the log (`entry`),
//! the frames on the links (`frame`), appends routed through one member
//! of another segment (`relay`) and big writesets in pieces (`pieces`).
//! Values only: nothing here holds state or imports another room.

pub mod entry;
pub mod frame;
pub mod notices;
pub mod pieces;
pub mod relay;
