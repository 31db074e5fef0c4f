//! The group's deterministic state: applied to the committed log in order on
//! every member, it assigns global seqnos and tracks membership, member
//! states and state-transfer donors (Galera's GCS group). No clocks,
//! threads or I/O here: the simulator drives it directly.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::group::wire::entry::{Entry, IstRequest, MemberInfo, Membership, Transition};
use crate::group::wire::pieces::{Assembled, Assemblies};
use vote::{Tally, Votes};
use crate::gtid::{Seqno, Uuid};
pub use crate::group::wire::notices::Component;

mod snapshot;
pub mod vote;

/// A member's state as the group records it (Galera's member status).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MemberState {
    /// Waiting for a state transfer.
    Joiner,
    /// Desynced: donating state, `wsrep_desync`, FTWRL. Does not throttle
    /// the group.
    Donor,
    /// Has a complete state, catching up with its backlog.
    Joined,
    Synced,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub info: MemberInfo,
    pub state: MemberState,
    /// Desyncs stack (a donor can also be desynced by the user).
    pub desync_count: u32,
    /// Votes in Raft. A joiner enters as a learner and votes once it holds
    /// the state, so that a joining node never costs the cluster its
    /// quorum.
    pub voter: bool,
    /// `pc.weight` (see `group::weights`).
    pub weight: u32,
    /// A joiner whose state request was served (a donor was chosen; Galera's
    /// joiner leaves PRIM for JOINER then). A repeated request, which the
    /// joiner sends when no answer came (a forwarded proposal can be lost
    /// with a link), is not served twice.
    pub donor_chosen: bool,
}

/// A configuration as the server sees it in `view_cb`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct View {
    pub history: Uuid,
    /// The view's state id seqno: a primary view consumes a seqno; a
    /// non-primary one repeats the last one.
    pub seqno: Seqno,
    /// `wsrep_cluster_conf_id`; -1 for a non-primary view.
    pub conf_id: i64,
    pub primary: bool,
    pub members: Vec<MemberInfo>,
    /// This node's index in `members`, -1 when not in it.
    pub my_idx: i32,
}

/// Version of a view's encoding.
const VIEW_VERSION: u8 = 1;

impl View {
    /// A primary view as the gcache keeps it and IST carries it:
    /// `version u8 | history 16 | seqno i64 | conf_id i64 | count u32 |
    /// member*` (see `entry::encode_member`). Its own index is not kept:
    /// it depends on who reads it.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VIEW_VERSION];
        out.extend_from_slice(&self.history.0);
        out.extend_from_slice(&self.seqno.to_le_bytes());
        out.extend_from_slice(&self.conf_id.to_le_bytes());
        out.extend_from_slice(&(self.members.len() as u32).to_le_bytes());
        for m in &self.members {
            crate::group::wire::entry::encode_member(m, &mut out);
        }
        out
    }

    /// The view `encode` wrote, seen from member `me`.
    pub fn decode(buf: &[u8], me: Uuid) -> Result<View, crate::wire::WireError> {
        use crate::group::wire::entry::decode_member;
        use crate::wire::{Reader, WireError};
        let mut r = Reader::new(buf);
        match r.u8().map_err(|_| WireError::Empty)? {
            VIEW_VERSION => {}
            v => return Err(WireError::Version(v)),
        }
        let history = r.uuid()?;
        let (seqno, conf_id) = (r.u64()? as Seqno, r.u64()? as i64);
        let count = r.u32()?;
        let mut members = Vec::with_capacity(count.min(64) as usize);
        for _ in 0..count {
            members.push(decode_member(&mut r)?);
        }
        r.end()?;
        let my_idx = members.iter().position(|m| m.id == me).map_or(-1, |i| i as i32);
        Ok(View { history, seqno, conf_id, primary: true, members, my_idx })
    }
}

/// Why no donor could be chosen (Galera's errno values, which the server
/// logs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DonorError {
    /// No member can donate now (all busy or joining): retry later.
    Again,
    /// A donor was named, is not there, and no fallback was allowed.
    Unreachable,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum GroupEvent {
    Ordered { seqno: Seqno, origin: Uuid, token: u64, payload: Bytes },
    View(View),
    MemberState { member: Uuid, state: MemberState, desync_count: u32 },
    /// A joiner's state request, with the donor the group chose; `seqno` is
    /// the group position when it was ordered (the donor's state is at
    /// least this).
    StateTransfer { joiner: Uuid, donor: Result<Uuid, DonorError>, request: Bytes, ist: IstRequest, seqno: Seqno },
    /// A donor reported that its state transfer failed (its Join carried
    /// the server's error code, as Galera's does): its joiner will never
    /// receive the state.
    StateTransferFailed { donor: Uuid, code: i64 },
    /// The origin's unordered proposals up to `token` are dead.
    Fenced { origin: Uuid, token: u64 },
    /// A piece of the origin's writeset `token` was committed: `bytes` of
    /// it are assembled (the group layer's business: its proposer sends
    /// more; the node never sees it).
    Assembling { origin: Uuid, token: u64, bytes: u64 },
    /// A writeset of several pieces was ordered: `Ordered` once the
    /// driver has joined its pieces, or found its origin's own buffer (the
    /// node never sees it).
    Assembled { seqno: Seqno, origin: Uuid, token: u64, pieces: Vec<Bytes> },
    /// A local proposal will never be ordered (no leader would take it).
    ProposalFailed { token: u64 },
    /// A member voted on `seqno` (see `vote`), for the log.
    Vote { member: Uuid, seqno: Seqno, code: u64, message: String },
    /// Another member failed `seqno`: this one votes once it has applied it.
    VoteRequest { seqno: Seqno },
    /// The group's result on `seqno`: `vote::SUCCESS` or the winning
    /// digest.
    VoteResult { seqno: Seqno, result: u64 },
    /// This member's vote on `seqno` came after the group's result, or
    /// from a member without the state: the answer for it alone.
    VoteAnswer { seqno: Seqno, result: u64 },
    /// The Raft state was replaced by a snapshot: `node` carries the node
    /// layer's part (its certification index), `view` the configuration
    /// the snapshot holds (no seqno of its own: it is the current one).
    Restored { node: Bytes, view: View },
    /// This member joins the group again as a new learner (it was left
    /// behind): what follows is a joiner's stream.
    Rejoining,
    /// This joiner bootstraps the component instead (whole-cluster
    /// recovery): its first view needs no state transfer.
    Bootstrapping,
    /// The committed entry at this log index cannot be decoded (a peer of
    /// another version, or corrupt memory): this member delivers nothing
    /// more, and the node leaves the cluster. Skipping it could make this
    /// member decide differently from the others.
    Halted { index: u64 },
}

/// Galera's default `pc.weight`.
pub const DEFAULT: u32 = 1;

/// Whether weights differ among these members (only then does a head
/// count differ from a weighing).
pub fn unequal(weights: impl IntoIterator<Item = u32>) -> bool {
    let mut it = weights.into_iter();
    let Some(first) = it.next() else { return false };
    it.any(|w| w != first)
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupState {
    me: Uuid,
    history: Uuid,
    seqno: Seqno,
    conf_id: i64,
    /// Which component this state belongs to: the member that bootstrapped
    /// it and the seqno it started from (None: not known, a snapshot from
    /// an older build). A reform starts a new Raft group that reuses member
    /// ids, indexes and term numbers, so this is what tells its messages
    /// from the old group's.
    component: Option<Component>,
    members: Vec<Member>,
    /// Highest fenced token per origin.
    fenced: BTreeMap<Uuid, u64>,
    /// Writesets whose pieces are being committed (never in a snapshot:
    /// see `may_snapshot`).
    assembling: Assemblies,
    /// The consistency votes (no vote under way in a snapshot either).
    votes: Votes,
    /// A reform left this member alone in the primary view its server
    /// has already (`reform`): the new group's bootstrap names its
    /// component and delivers no view. Never in a snapshot: the bootstrap
    /// is the new group's first entry.
    quiet_bootstrap: bool,
}

impl GroupState {
    pub fn new(me: Uuid) -> GroupState {
        GroupState {
            me,
            history: Uuid::NIL,
            seqno: -1,
            conf_id: 0,
            component: None,
            members: Vec::new(),
            fenced: BTreeMap::new(),
            assembling: Assemblies::default(),
            votes: Votes::default(),
            quiet_bootstrap: false,
        }
    }

    /// Whether a snapshot may be taken now: not while a writeset is half
    /// assembled, so that a member restoring a snapshot never holds the
    /// last pieces of a writeset without its first (it could neither
    /// certify nor apply it). The wait is bounded by the writeset's own
    /// pieces, or its origin's fence or departure.
    ///
    /// Nor during a vote: the votes cast so far are not in a snapshot.
    /// That wait is bounded by the members' answers, or their departure.
    pub fn may_snapshot(&self) -> bool {
        self.assembling.is_empty() && !self.voting()
    }

    /// A consistency vote is under way.
    pub fn voting(&self) -> bool {
        self.votes.open()
    }

    /// Bytes of writesets being assembled.
    pub fn assembling_bytes(&self) -> usize {
        self.assembling.bytes()
    }

    /// The writesets being assembled: (origin, token, bytes so far).
    pub fn assembling(&self) -> Vec<(Uuid, u64, usize)> {
        self.assembling.open()
    }

    pub fn history(&self) -> Uuid {
        self.history
    }

    /// The member whose raft id is `id` (frames name their sender so).
    pub fn member_by_raft_id(&self, id: u64) -> Option<&Member> {
        self.members.iter().find(|m| m.info.id.raft_id() == id)
    }

    pub fn component(&self) -> Option<Component> {
        self.component
    }

    /// Last seqno assigned.
    pub fn seqno(&self) -> Seqno {
        self.seqno
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, id: Uuid) -> Option<&Member> {
        self.members.iter().find(|m| m.info.id == id)
    }

    /// Whether members weigh differently (then quorum is a weighing, see
    /// `weights`).
    pub fn weighted(&self) -> bool {
        unequal(self.members.iter().map(|m| m.weight))
    }

    /// The weight of the members that `counts`.
    pub fn weight_of(&self, counts: impl Fn(&Member) -> bool) -> u64 {
        self.members.iter().filter(|m| counts(m)).map(|m| u64::from(m.weight)).sum()
    }

    fn member_mut(&mut self, id: Uuid) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.info.id == id)
    }

    /// A component was bootstrapped and not reformed since (members are
    /// empty between `reform` and the new bootstrap entry, unless that
    /// keeps this member's view).
    pub fn is_primary(&self) -> bool {
        !self.history.is_nil() && !self.members.is_empty()
    }

    /// Whether a reform waits for its bootstrap entry.
    pub fn awaits_bootstrap(&self) -> bool {
        self.members.is_empty() || self.quiet_bootstrap
    }

    /// This member alone in the primary view.
    fn alone(&self) -> bool {
        matches!(self.members.as_slice(), [m] if m.info.id == self.me) && !self.history.is_nil()
    }

    /// Applies one committed normal entry.
    pub fn apply(&mut self, entry: Entry, out: &mut Vec<GroupEvent>) {
        match entry {
            Entry::Ordered { origin, token, payload } => self.order(origin, token, payload, out),
            Entry::MemberState { member, transition, seqno } => self.transition(member, transition, seqno, out),
            Entry::StateRequest { joiner, donors, ist, request } => self.state_request(joiner, &donors, ist, request, out),
            Entry::Fence { origin, token } => {
                let t = self.fenced.entry(origin).or_default();
                *t = (*t).max(token);
                self.assembling.fence(origin, token);
                out.push(GroupEvent::Fenced { origin, token });
            }
            Entry::Piece { origin, token, total, offset, data } => self.piece(origin, token, (total, offset), data, out),
            Entry::Weight { member, weight } => {
                if let Some(m) = self.member_mut(member) {
                    m.weight = weight;
                }
            }
            Entry::Vote { member, seqno, code, policy, message } => self.vote(member, (seqno, code, policy), &message, out),
        }
    }

    /// The members whose votes count: those that hold the state (Galera
    /// counts synced, joined and donor members alike). An arbitrator
    /// applies nothing, so it has no outcome to vote on.
    fn counted(&self) -> Vec<Uuid> {
        let holds = |m: &&Member| !m.info.arbitrator && matches!(m.state, MemberState::Synced | MemberState::Joined | MemberState::Donor);
        self.members.iter().filter(holds).map(|m| m.info.id).collect()
    }

    fn vote(&mut self, member: Uuid, (seqno, code, policy): (Seqno, u64, u8), message: &str, out: &mut Vec<GroupEvent>) {
        if !self.is_primary() || self.member(member).is_none() {
            return;
        }
        let counted = self.counted();
        let tallies = self.votes.cast((member, seqno, code, policy), &counted, self.me);
        out.push(GroupEvent::Vote { member, seqno, code, message: message.to_string() });
        self.push_tallies(tallies, out);
    }

    /// After members left or changed state: a vote may be decided now.
    fn recount_votes(&mut self, out: &mut Vec<GroupEvent>) {
        let counted = self.counted();
        let tallies = self.votes.members_changed(&counted, self.me);
        self.push_tallies(tallies, out);
    }

    fn push_tallies(&self, tallies: Vec<Tally>, out: &mut Vec<GroupEvent>) {
        for t in tallies {
            out.push(match t {
                Tally::Request(seqno) => GroupEvent::VoteRequest { seqno },
                Tally::Decided { seqno, result } => GroupEvent::VoteResult { seqno, result },
                Tally::Answer { seqno, result } => GroupEvent::VoteAnswer { seqno, result },
            });
        }
    }

    fn order(&mut self, origin: Uuid, token: u64, payload: Bytes, out: &mut Vec<GroupEvent>) {
        if let Some(seqno) = self.next_seqno(origin, token) {
            out.push(GroupEvent::Ordered { seqno, origin, token, payload });
        }
    }

    /// The seqno of a payload ordered now, if it may be.
    fn next_seqno(&mut self, origin: Uuid, token: u64) -> Option<Seqno> {
        if !self.may_order(origin, token) {
            return None;
        }
        self.seqno += 1;
        Some(self.seqno)
    }

    /// Nothing is ordered outside a primary component, nor for a node that
    /// is not a member (left or evicted), nor a fenced proposal.
    fn may_order(&self, origin: Uuid, token: u64) -> bool {
        let fenced = token != 0 && self.fenced.get(&origin).is_some_and(|&f| token <= f);
        self.is_primary() && self.member(origin).is_some() && !fenced
    }

    fn piece(&mut self, origin: Uuid, token: u64, (total, offset): (u64, u64), data: Bytes, out: &mut Vec<GroupEvent>) {
        // A piece of a writeset that could not be ordered is not kept
        // either.
        if !self.may_order(origin, token) {
            return;
        }
        match self.assembling.add(origin, token, total, offset, data) {
            Assembled::Progress(bytes) => out.push(GroupEvent::Assembling { origin, token, bytes }),
            Assembled::Complete(pieces) => {
                if let Some(seqno) = self.next_seqno(origin, token) {
                    out.push(GroupEvent::Assembled { seqno, origin, token, pieces });
                }
            }
            Assembled::Dropped => {}
        }
    }

    /// Applies the context of a committed conf-change entry.
    pub fn apply_membership(&mut self, m: Membership, out: &mut Vec<GroupEvent>) {
        match m {
            Membership::Bootstrap { history, position, member } => self.bootstrap(history, position, member, out),
            Membership::Add { member } => self.add(member, out),
            Membership::Promote { member } => {
                if let Some(m) = self.member_mut(member) {
                    m.voter = true;
                }
            }
            Membership::Remove { member } => self.remove(member, out),
        }
    }

    fn bootstrap(&mut self, history: Uuid, position: Seqno, member: MemberInfo, out: &mut Vec<GroupEvent>) {
        if std::mem::take(&mut self.quiet_bootstrap) && self.alone() && member.id == self.me && history == self.history {
            // No view consumes a seqno here, but one did since the last
            // bootstrap (the one that left this member alone): the
            // component's name is still new.
            self.component = Some(Component { former: member.id, from: position });
            return;
        }
        if !self.members.is_empty() {
            return; // a component is bootstrapped once
        }
        self.history = history;
        self.seqno = position.max(0);
        self.component = Some(Component { former: member.id, from: position });
        self.members = vec![Member { info: member, state: MemberState::Synced, desync_count: 0, voter: true, weight: DEFAULT, donor_chosen: false }];
        self.primary_view(out);
        let m = &self.members[0];
        out.push(GroupEvent::MemberState { member: m.info.id, state: m.state, desync_count: 0 });
    }

    /// Forgets the members before a new component is bootstrapped on the
    /// same history (`pc.bootstrap=YES` from non-primary): the seqno and
    /// configuration ids go on.
    ///
    /// `keep_alone_view`: the server's last view is this primary one (no
    /// non-primary view came between). When that view holds this member
    /// alone, the new component's bootstrap delivers no second view of
    /// it: two primary views in a row with the same members tell the
    /// server (wsrep-lib) that a non-primary spell may have come between,
    /// and it rolls back every streaming transaction of its own clients,
    /// which go on and commit without their first fragments
    /// (galera.galera_sequences_recovery, its -sr combinations: node 1
    /// weighs 2, its log delivered node 2's removal, then the reform).
    pub fn reform(&mut self, keep_alone_view: bool) {
        self.quiet_bootstrap = keep_alone_view && self.alone();
        if !self.quiet_bootstrap {
            self.members.clear();
        }
        // Their remaining pieces stay in the old group's log, and so do
        // their votes.
        self.assembling.clear();
        self.votes.members_changed(&[], self.me);
    }

    fn add(&mut self, member: MemberInfo, out: &mut Vec<GroupEvent>) {
        if !self.is_primary() || self.member(member.id).is_some() {
            return; // a retried join
        }
        let id = member.id;
        self.members.push(Member { info: member, state: MemberState::Joiner, desync_count: 0, voter: false, weight: DEFAULT, donor_chosen: false });
        self.primary_view(out);
        out.push(GroupEvent::MemberState { member: id, state: MemberState::Joiner, desync_count: 0 });
    }

    fn remove(&mut self, id: Uuid, out: &mut Vec<GroupEvent>) {
        let Some(i) = self.members.iter().position(|m| m.info.id == id) else { return };
        let gone = self.members.remove(i);
        self.assembling.forget(id);
        if id == self.me {
            // This node is out: from its own point of view it is alone and
            // not primary (Galera's view of a leaving node).
            let view = View {
                history: self.history,
                seqno: self.seqno,
                conf_id: -1,
                primary: false,
                members: vec![gone.info],
                my_idx: 0,
            };
            out.push(GroupEvent::View(view));
            // The others' view consumes a seqno: a member replaying its own
            // removal (a rejoin through the log) must number on alike.
            self.seqno += 1;
            self.conf_id += 1;
            return;
        }
        self.primary_view(out);
        self.recount_votes(out);
    }

    /// A primary configuration change: consumes a seqno.
    fn primary_view(&mut self, out: &mut Vec<GroupEvent>) {
        self.seqno += 1;
        self.conf_id += 1;
        out.push(GroupEvent::View(self.view()));
    }

    pub fn view(&self) -> View {
        let members: Vec<MemberInfo> = self.members.iter().map(|m| m.info.clone()).collect();
        let my_idx = members.iter().position(|m| m.id == self.me).map_or(-1, |i| i as i32);
        View { history: self.history, seqno: self.seqno, conf_id: self.conf_id, primary: true, members, my_idx }
    }

    /// `seqno`: where the member's state is; a donor's negative Join
    /// seqno is its transfer's error code instead (Galera's rule; members
    /// never join at a negative position otherwise).
    fn transition(&mut self, id: Uuid, t: Transition, seqno: Seqno, out: &mut Vec<GroupEvent>) {
        if t == Transition::Rejoin {
            return self.rejoin(id, out);
        }
        let Some(m) = self.member_mut(id) else {
            return; // a member that already left
        };
        let before = (m.state, m.desync_count);
        match t {
            Transition::Desync => {
                if m.state == MemberState::Joiner {
                    return; // nothing to desync from
                }
                m.desync_count += 1;
                m.state = MemberState::Donor;
            }
            Transition::Join => {
                if seqno < 0 && m.state == MemberState::Donor {
                    out.push(GroupEvent::StateTransferFailed { donor: id, code: seqno });
                }
                m.desync_count = m.desync_count.saturating_sub(1);
                if m.desync_count == 0 && matches!(m.state, MemberState::Donor | MemberState::Joiner) {
                    m.state = MemberState::Joined;
                    // Served and done: snapshots may be version 4 again.
                    m.donor_chosen = false;
                }
            }
            Transition::Sync => {
                if m.state == MemberState::Joined {
                    m.state = MemberState::Synced;
                }
            }
            Transition::Rejoin => unreachable!("handled above"),
        }
        if (m.state, m.desync_count) != before {
            out.push(GroupEvent::MemberState { member: id, state: m.state, desync_count: m.desync_count });
            self.recount_votes(out);
        }
    }

    /// A member back from a non-primary spell: a new primary view for all,
    /// and its own state again (the server forgot it with the non-primary
    /// view).
    fn rejoin(&mut self, id: Uuid, out: &mut Vec<GroupEvent>) {
        let Some(m) = self.member(id) else {
            return; // removed meanwhile: it must join anew
        };
        let (state, desync_count) = (m.state, m.desync_count);
        self.primary_view(out);
        out.push(GroupEvent::MemberState { member: id, state, desync_count });
    }

    fn state_request(&mut self, joiner: Uuid, donors: &str, ist: IstRequest, request: Bytes, out: &mut Vec<GroupEvent>) {
        if self.member(joiner).is_none_or(|m| m.state != MemberState::Joiner || m.donor_chosen) {
            return; // left, or already served by an earlier request
        }
        let donor = self.select_donor(joiner, donors);
        if let Ok(d) = donor {
            self.member_mut(joiner).expect("checked above").donor_chosen = true;
            let m = self.member_mut(d).expect("selected donors are members");
            m.desync_count += 1;
            m.state = MemberState::Donor;
            let (state, count) = (m.state, m.desync_count);
            out.push(GroupEvent::MemberState { member: d, state, desync_count: count });
        }
        out.push(GroupEvent::StateTransfer { joiner, donor, request, ist, seqno: self.seqno });
    }

    /// Galera's rule: the first synced member named in `wsrep_sst_donor`
    /// (comma-separated); a trailing comma, or no list, allows any synced
    /// member after that. An arbitrator has no data to give, and a
    /// `gcs.stateless` member gives none, even when named. Nor does a
    /// member at the joiner's own address: the joiner's former self, dead
    /// since that server restarted, but still a member until it is removed.
    fn select_donor(&self, joiner: Uuid, spec: &str) -> Result<Uuid, DonorError> {
        let at = self.member(joiner).map(|m| m.info.address.as_str()).filter(|a| !a.is_empty());
        let can_donate = |m: &&Member| {
            m.info.id != joiner && m.state == MemberState::Synced && !m.info.arbitrator && !m.info.stateless && Some(m.info.address.as_str()) != at
        };
        let names: Vec<&str> = spec.split(',').map(str::trim).collect();
        let mut named_present = false;
        for name in names.iter().filter(|n| !n.is_empty()) {
            if let Some(m) = self.members.iter().find(|m| m.info.name == *name) {
                named_present = true;
                if can_donate(&m) {
                    return Ok(m.info.id);
                }
            }
        }
        let any_allowed = spec.trim().is_empty() || names.last().is_some_and(|n| n.is_empty());
        if !any_allowed {
            return Err(if named_present { DonorError::Again } else { DonorError::Unreachable });
        }
        self.members.iter().find(can_donate).map(|m| m.info.id).ok_or(DonorError::Again)
    }
}

#[cfg(test)]
mod tests;
