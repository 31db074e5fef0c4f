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
use std::time::{Duration, Instant};

use bytes::Bytes;
use raft::prelude::{Message, MessageType};

use crate::group::state::GroupEvent;
use crate::group::wire::pieces;
use crate::gtid::Uuid;
use crate::log;
use defrag::Defrag;
use proposals::{Failed, Proposals};
use round_trips::Shown;

/// A local proposal still waiting this long is presumed lost with a
/// leader: fence it so the client learns its fate.
const FENCE_AFTER: Duration = Duration::from_secs(2);

/// How long a writeset may wait for a leader before its client gets an
/// error (`inactive`: `evs.inactive_timeout`): through an election and an
/// eviction, as Galera's clients wait through a configuration change.
pub(crate) fn give_up_after(inactive: Duration) -> Duration {
    inactive.max(2 * FENCE_AFTER)
}

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

impl Order {
    /// A writeset of ours failed: its client hears it, and what of it may
    /// be in the log is to be fenced so that no member keeps its pieces
    /// (the token to fence now).
    pub(in crate::group) fn fail(&mut self, failed: Failed, events: &mut Vec<GroupEvent>) -> Option<u64> {
        events.push(GroupEvent::ProposalFailed { token: failed.client });
        let token = failed.fence?;
        self.owe_fence(token);
        Some(token)
    }

    /// Our writesets up to `token` must be fenced: every tick until the
    /// fence is ordered (see `owed_fence`).
    pub(in crate::group) fn owe_fence(&mut self, token: u64) {
        self.owed_fence = self.owed_fence.max(Some(token));
    }

    /// Every writeset of ours in flight fails (a non-primary view, a
    /// snapshot that may hold them); what of them may be in the log is
    /// fenced once a leader is known again. How many failed.
    pub(in crate::group) fn abandon(&mut self, events: &mut Vec<GroupEvent>) -> usize {
        let fence = self.proposals.highest_sent();
        let failed = self.proposals.abandon();
        let n = failed.len();
        events.extend(failed.into_iter().map(|client| GroupEvent::ProposalFailed { token: client }));
        self.owed_fence = self.owed_fence.max(fence);
        n
    }

    /// A proposal of ours handed to Raft that has made no progress for
    /// long (nothing of it committed) was probably lost with a leader:
    /// everything up to the highest token is to be fenced, so that it can
    /// never be ordered later; it is sent again (or its client learns it
    /// failed). At most once every `FENCE_AFTER`; the token to fence.
    pub(in crate::group) fn fence_due(&mut self, now: Instant, member: bool) -> Option<u64> {
        let upto = self.proposals.highest_sent()?;
        let stalled = self.proposals.oldest_progress().is_some_and(|at| now.saturating_duration_since(at) >= FENCE_AFTER);
        if !stalled || now.saturating_duration_since(self.last_fence) < FENCE_AFTER || !member {
            return None;
        }
        self.last_fence = now;
        log::info!("fencing proposals up to token {} (no progress for {:?}); they will be sent again", upto, FENCE_AFTER);
        Some(upto)
    }

    /// A writeset ordered from pieces reaches the node as one payload. Our
    /// own is the buffer we sent, which its client holds anyway: joining
    /// the pieces would make a big writeset's second copy on its origin.
    /// Another's is the buffer its pieces were written into as they were
    /// stored, when they all were (see `defrag`); a fence lets go of the
    /// buffers of the writesets it drops.
    pub(in crate::group) fn join_assembled(&mut self, events: &mut [GroupEvent], me: Uuid) {
        for ev in events {
            if let GroupEvent::Fenced { origin, token } = ev {
                self.defrag.fence(*origin, *token);
            }
            let GroupEvent::Assembled { seqno, origin, token, pieces } = ev else { continue };
            let len: usize = pieces.iter().map(Bytes::len).sum();
            let ours = if *origin == me { self.proposals.body(*token).filter(|b| b.len() == len) } else { None };
            let payload = match ours {
                Some(body) => {
                    debug_assert!(pieces::join(pieces.clone()) == *body, "our writeset came back changed");
                    body.clone()
                }
                None => match self.defrag.take(*origin, *token, pieces) {
                    Some(whole) => whole,
                    None => pieces::join(std::mem::take(pieces)),
                },
            };
            *ev = GroupEvent::Ordered { seqno: *seqno, origin: *origin, token: *token, payload };
        }
    }

    /// Our writesets ordered in `events[from..]` get their client's token
    /// back, their pieces send more; our fences resend what they cover
    /// (the node never sees either). How many of ours were ordered.
    pub(in crate::group) fn note_own_deliveries(&mut self, events: &mut Vec<GroupEvent>, from: usize, me: Uuid, now: Instant, give_up: Duration) -> usize {
        let mut fenced = None;
        let mut progressed = false;
        let mut ordered = 0;
        for ev in &mut events[from..] {
            match ev {
                GroupEvent::Assembling { origin, token, bytes } if *origin == me => {
                    self.proposals.progressed(*token, *bytes, now);
                    progressed = true;
                }
                GroupEvent::Ordered { origin, token, .. } if *origin == me && *token != 0 => {
                    // None: a copy from before a fence cannot be ordered
                    // (the group drops it), so this is not expected.
                    *token = self.proposals.ordered(*token).unwrap_or(0);
                    ordered += 1;
                }
                GroupEvent::Fenced { origin, token } if *origin == me => {
                    fenced = Some(*token);
                    if self.owed_fence.is_some_and(|owed| *token >= owed) {
                        self.owed_fence = None;
                    }
                }
                _ => {}
            }
        }
        events.retain(|ev| !matches!(ev, GroupEvent::Fenced { origin, .. } if *origin == me) && !matches!(ev, GroupEvent::Assembling { .. }));
        if let Some(upto) = fenced {
            for client in self.proposals.fenced(upto, now, give_up) {
                events.push(GroupEvent::ProposalFailed { token: client });
            }
        }
        // Not now: this runs inside a Ready hand-off (see `Driver::turn`).
        self.pump_due |= progressed || fenced.is_some();
        ordered
    }

    /// Raft's messages as they go: less the answers that repeat (see
    /// `answers`) and the appends of a commit index alone that another
    /// append in the batch carries (see `commit_only`); each append's
    /// sending time noted for its answer (see `round_trips`).
    pub(in crate::group) fn outgoing(&mut self, msgs: &mut Vec<Message>, now: Instant) {
        msgs.retain(|m| !self.answers.repeats(m));
        commit_only::fold(msgs);
        for m in msgs.iter().filter(|m| m.get_msg_type() == MessageType::MsgAppend) {
            if let Some(last) = m.entries.last() {
                self.round_trips.sent(m.to, m.term, last.index, now);
            }
        }
    }

    /// A follower's acceptance (its append answer at `index`), for
    /// `round_trips`: how long it took, and whether it `moved` the commit
    /// index. `name`: the follower's, None if it is no member.
    pub(in crate::group) fn note_answer(&mut self, from: u64, term: u64, index: u64, moved: bool, now: Instant, name: impl FnOnce() -> Option<String>, shown: &Shown) {
        let took = self.round_trips.answered(from, term, index, now);
        if took.is_none() && !moved {
            return;
        }
        if !self.answer_series.contains_key(&from) {
            let Some(name) = name() else { return };
            let series = shown.series(&name);
            self.answer_series.insert(from, (name, series));
        }
        self.answer_series[&from].1.record(took, moved);
    }

    /// Members that left take their answer series off the metrics page.
    pub(in crate::group) fn forget_answers_of_the_gone(&mut self, is_member: impl Fn(u64) -> bool, shown: &Shown) {
        let gone: Vec<u64> = self.answer_series.keys().copied().filter(|id| !is_member(*id)).collect();
        for id in gone {
            if let Some((name, _)) = self.answer_series.remove(&id) {
                shown.forget(&name);
            }
        }
    }
}
