//! Where the leader should be: in the segment most writesets come from
//! (`gmcast.segment`). A writeset from another segment crosses to the
//! leader and its ordering crosses back, a WAN round trip more than one
//! from the leader's segment, so the leader follows the writers. It
//! moves to the member that wrote most in that segment, which then
//! orders its own writesets without a hop.
//!
//! Moving costs a leadership transfer (proposals wait for the new
//! leader), so it needs a clear case: a window of writesets, a minimum
//! count, and the other segment at least twice as busy as the leader's.
//! A new leader starts counting afresh, so moves are a window apart.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::group::state::GroupEvent;
use crate::gtid::Uuid;

/// How long the leader counts before it decides.
pub const WINDOW: Duration = Duration::from_secs(10);
/// Fewer writesets than this in a window: too little traffic to pay for
/// a move.
pub const MIN_WRITESETS: u64 = 50;

/// One member as the decision sees it.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub id: Uuid,
    /// Its segment; None: unknown (no link, or a build that does not say).
    pub segment: Option<u8>,
    /// It may lead: a voter that keeps up, not an arbitrator.
    pub eligible: bool,
}

#[derive(Debug)]
pub struct Placement {
    since: Instant,
    writes: BTreeMap<Uuid, u64>,
    leading: bool,
}

impl Placement {
    pub fn new(now: Instant) -> Placement {
        Placement { since: now, writes: BTreeMap::new(), leading: false }
    }

    /// Whether this member leads now; counting starts over when it begins.
    pub fn leading(&mut self, leader: bool, now: Instant) -> bool {
        if leader && !self.leading {
            self.restart(now);
        }
        self.leading = leader;
        leader
    }

    /// A writeset of `origin` was ordered while this member led.
    pub fn ordered(&mut self, origin: Uuid) {
        *self.writes.entry(origin).or_default() += 1;
    }

    /// Forgets the counts (leadership began, or a move was asked).
    pub fn restart(&mut self, now: Instant) {
        self.since = now;
        self.writes.clear();
    }

    /// When a window has passed: the member to hand leadership to, if
    /// another segment wrote clearly more than `mine`. Starts a new window.
    pub fn decide(&mut self, now: Instant, mine: u8, members: &[Candidate]) -> Option<Uuid> {
        if now.saturating_duration_since(self.since) < WINDOW {
            return None;
        }
        let writes = std::mem::take(&mut self.writes);
        self.since = now;
        let of = |id: &Uuid| writes.get(id).copied().unwrap_or(0);
        let mut by_segment: BTreeMap<u8, u64> = BTreeMap::new();
        for m in members {
            *by_segment.entry(m.segment?).or_default() += of(&m.id);
        }
        let here = by_segment.get(&mine).copied().unwrap_or(0);
        let (&busiest, &most) = by_segment.iter().max_by_key(|(s, n)| (**n, std::cmp::Reverse(**s)))?;
        if busiest == mine || most < MIN_WRITESETS || most <= 2 * here {
            return None;
        }
        let eligible = members.iter().filter(|m| m.eligible && m.segment == Some(busiest));
        eligible.max_by_key(|m| (of(&m.id), std::cmp::Reverse(m.id))).map(|m| m.id)
    }

    /// The writesets counted in this window, by origin (for the log line).
    /// The writesets in `events` by origin, while this member leads.
    pub fn count(&mut self, leader: bool, events: &[GroupEvent]) {
        if !leader {
            return;
        }
        for ev in events {
            if let GroupEvent::Ordered { origin, .. } = ev {
                if *origin != Uuid::NIL {
                    self.ordered(*origin);
                }
            }
        }
    }

    pub fn counted(&self) -> u64 {
        self.writes.values().sum()
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> Uuid {
        Uuid([n; 16])
    }

    fn member(n: u8, segment: u8) -> Candidate {
        Candidate { id: id(n), segment: Some(segment), eligible: true }
    }

    fn writes(p: &mut Placement, n: u8, count: u64) {
        for _ in 0..count {
            p.ordered(id(n));
        }
    }

    #[test]
    fn leadership_follows_the_busiest_segment_to_its_busiest_writer() {
        let t0 = Instant::now();
        let members = [member(1, 0), member(2, 0), member(3, 1), member(4, 1)];
        let mut p = Placement::new(t0);
        writes(&mut p, 1, 10);
        writes(&mut p, 3, 30);
        writes(&mut p, 4, 60);
        assert_eq!(p.decide(t0 + WINDOW / 2, 0, &members), None, "not before a window");
        assert_eq!(p.decide(t0 + WINDOW, 0, &members), Some(id(4)));
        assert_eq!(p.counted(), 0, "a new window");
    }

    #[test]
    fn it_stays_without_a_clear_case() {
        let t0 = Instant::now();
        let members = [member(1, 0), member(2, 0), member(3, 1), Candidate { eligible: false, ..member(4, 1) }];
        let cases: [(&[(u8, u64)], &str); 4] = [
            (&[(1, 40), (3, 79)], "not twice as busy"),
            (&[(3, 49)], "too few writesets"),
            (&[(1, 100), (2, 10), (3, 20)], "the leader's segment is the busiest"),
            (&[(4, 500)], "its writer may not lead: another member of its segment takes it"),
        ];
        for (load, why) in cases {
            let mut p = Placement::new(t0);
            for &(n, count) in load {
                writes(&mut p, n, count);
            }
            let got = p.decide(t0 + WINDOW, 0, &members);
            let want = if why.starts_with("its writer") { Some(id(3)) } else { None };
            assert_eq!(got, want, "{}", why);
        }
    }

    #[test]
    fn members_of_unknown_segments_do_not_count() {
        let t0 = Instant::now();
        let members = [member(1, 0), Candidate { id: id(5), segment: None, eligible: true }];
        let mut p = Placement::new(t0);
        writes(&mut p, 5, 1000);
        assert_eq!(p.decide(t0 + WINDOW, 0, &members), None);
    }
}
