//! The total order of this member's writesets: what it proposed until it
//! is ordered or failed (`proposals`, fenced when lost), others' big
//! writesets joined as their pieces are stored (`defrag`), payloads a
//! follower holds already and the answers and commit-only appends that
//! need not go (`own_payloads`, `answers`, `commit_only`), the followers'
//! answer times (`round_trips`) and the check that every seqno follows
//! the last (`sequence`).

pub mod answers;
pub mod commit_only;
pub mod defrag;
pub mod own_payloads;
pub mod proposals;
pub mod round_trips;
pub mod sequence;
pub mod unconfirmed;
