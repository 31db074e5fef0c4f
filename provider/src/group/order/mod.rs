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

use std::collections::BTreeMap;
use std::time::Instant;

use defrag::Defrag;
use proposals::Proposals;

/// What the order room holds for the driver.
pub(crate) struct Order {
    /// Our writesets until they are ordered.
    pub(in crate::group) proposals: Proposals,
    /// Other members' big writesets, written into one buffer each as
    /// their pieces are stored (see `defrag`).
    pub(in crate::group) defrag: Defrag,
    /// A piece of ours was committed or a fence resends: more to hand to
    /// Raft once the current Ready is done.
    pub(in crate::group) pump_due: bool,
    /// When we last fenced lost proposals.
    pub(in crate::group) last_fence: Instant,
    /// Our failed or abandoned writesets up to this token must be fenced:
    /// proposed every tick until the fence is ordered (a proposal
    /// forwarded to a leader that is gone is lost without a word, and the
    /// others would keep the pieces of a writeset never completed, and
    /// take no snapshot while they do).
    pub(in crate::group) owed_fence: Option<u64>,
    pub(in crate::group) answers: answers::Answers,
    pub(in crate::group) round_trips: round_trips::RoundTrips,
    /// What went to each follower, so that its own payloads go back to it
    /// only once (see `own_payloads`).
    pub(in crate::group) own_payloads: own_payloads::Sent,
    /// Each follower's name and metric series, by raft id (see
    /// `round_trips`).
    pub(in crate::group) answer_series: BTreeMap<u64, (String, round_trips::Series)>,
    /// The seqnos handed to the node so far (see `check_sequence`).
    pub(in crate::group) sequence: sequence::Sequence,
}

impl Order {
    pub(in crate::group) fn new(piece: usize, now: Instant) -> Order {
        Order {
            proposals: Proposals::with_piece(piece),
            defrag: Defrag::default(),
            pump_due: false,
            last_fence: now,
            owed_fence: None,
            answers: Default::default(),
            round_trips: Default::default(),
            own_payloads: Default::default(),
            answer_series: BTreeMap::new(),
            sequence: Default::default(),
        }
    }
}
