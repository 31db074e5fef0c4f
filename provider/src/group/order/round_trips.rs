//! Whom the commits wait for. A leader commits an entry once a majority
//! has it: with three members, its own copy and the first follower's
//! answer. So a commit takes the faster of two round trips, until one
//! member is far (or busy): then every commit waits for the other one's
//! answer alone, and pays each of its slow moments in full. `lockstep
//! bench --scenario slow-node` loses throughput that way, flow control
//! aside. The leader measures, per follower, how long its appends take to
//! be answered, and counts whose answer moved the commit index; the
//! metrics endpoint shows both, per member name, so an operator sees which
//! member the cluster's commits wait on and how long.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// Appends remembered per follower until answered. A follower answers
/// each append (or a later one, which covers it), so this fills only when
/// one stops answering; its oldest sends are then forgotten.
const PENDING: usize = 1024;

/// The appends sent in this member's current term as leader, per follower.
#[derive(Debug, Default)]
pub struct RoundTrips {
    term: u64,
    /// Per follower (raft id): the last index of each append and when it
    /// went, oldest first.
    sent: BTreeMap<u64, VecDeque<(u64, Instant)>>,
}

impl RoundTrips {
    /// An append of term `term` carrying entries up to `last` went to
    /// `to`. A resend of what is outstanding keeps the first send's time:
    /// the commit waited from then. A new term forgets the old one's.
    pub fn sent(&mut self, to: u64, term: u64, last: u64, now: Instant) {
        if term != self.term {
            (self.term, self.sent) = (term, BTreeMap::new());
        }
        let q = self.sent.entry(to).or_default();
        if q.back().is_some_and(|(i, _)| *i >= last) {
            return;
        }
        if q.len() == PENDING {
            q.pop_front();
        }
        q.push_back((last, now));
    }

    /// `from` accepted everything up to `index` in `term`: the round trip
    /// of the latest append that answer covers, if this member sent it.
    pub fn answered(&mut self, from: u64, term: u64, index: u64, now: Instant) -> Option<Duration> {
        if term != self.term {
            return None;
        }
        let q = self.sent.get_mut(&from)?;
        let mut covered = None;
        while let Some(&(i, at)) = q.front().filter(|(i, _)| *i <= index) {
            debug_assert!(covered.is_none_or(|(j, _)| j < i), "sends are kept in index order");
            covered = Some((i, at));
            q.pop_front();
        }
        covered.map(|(_, at)| now.saturating_duration_since(at))
    }

    #[cfg(test)]
    fn outstanding(&self, to: u64) -> usize {
        self.sent.get(&to).map_or(0, VecDeque::len)
    }
}

type Labels = Vec<(String, String)>;

/// The two metrics, shared with the metrics endpoint (each series is a
/// handle on atomics: the group thread records, the endpoint reads).
#[derive(Clone)]
pub struct Shown {
    pub round_trip: Family<Labels, Histogram, fn() -> Histogram>,
    pub commit_answers: Family<Labels, Counter>,
}

impl Default for Shown {
    fn default() -> Shown {
        Shown { round_trip: Family::new_with_constructor(latency_histogram), commit_answers: Family::default() }
    }
}

/// The buckets of lockstep's latency histograms (these round trips and
/// `lockstep_repl_latency_seconds`): 100 us, a commit on loopback, to
/// 6.5 s, a WAN round trip behind flow control or a far member behind a
/// full window.
pub fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 17))
}

/// One member's series, looked up once: an answer comes with every
/// commit, and a lookup by label would build the label each time.
#[derive(Clone)]
pub struct Series {
    round_trip: Histogram,
    commit_answers: Counter,
}

impl Shown {
    pub fn series(&self, member: &str) -> Series {
        let labels = labels(member);
        Series { round_trip: self.round_trip.get_or_create(&labels).clone(), commit_answers: self.commit_answers.get_or_create(&labels).clone() }
    }

    /// `member` left the group: its series go from the page, or a removed
    /// member would be shown for as long as this process runs. One that
    /// joins again starts from zero, which Prometheus reads as a reset.
    pub fn forget(&self, member: &str) {
        let labels = labels(member);
        self.round_trip.remove(&labels);
        self.commit_answers.remove(&labels);
    }
}

fn labels(member: &str) -> Labels {
    vec![("member".to_string(), member.to_string())]
}

impl Series {
    /// An answer arrived after `round_trip` (None: not one this member
    /// timed); `committed`: it moved the commit index.
    pub fn record(&self, round_trip: Option<Duration>, committed: bool) {
        if let Some(d) = round_trip {
            self.round_trip.observe(d.as_secs_f64());
        }
        if committed {
            self.commit_answers.inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_times_the_latest_append_it_covers_and_settles_the_earlier_ones() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut rt = RoundTrips::default();
        rt.sent(2, 1, 10, t0);
        rt.sent(2, 1, 12, t0 + ms(1));
        rt.sent(2, 1, 15, t0 + ms(2));
        rt.sent(3, 1, 15, t0 + ms(2));
        assert_eq!(rt.answered(2, 1, 12, t0 + ms(5)), Some(ms(4)), "12 was sent at 1 ms");
        assert_eq!(rt.outstanding(2), 1, "10 settled with it");
        assert_eq!(rt.answered(2, 1, 12, t0 + ms(6)), None, "a repeated answer times nothing");
        assert_eq!(rt.answered(2, 1, 20, t0 + ms(9)), Some(ms(7)), "an answer past every send covers the last");
        assert_eq!(rt.outstanding(3), 1, "each follower on its own");
        assert_eq!(rt.answered(4, 1, 15, t0 + ms(9)), None, "nothing sent to 4");
    }

    #[test]
    fn a_resend_keeps_the_first_send_and_a_new_term_forgets_the_old_one() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut rt = RoundTrips::default();
        rt.sent(2, 1, 10, t0);
        rt.sent(2, 1, 10, t0 + ms(50));
        rt.sent(2, 1, 8, t0 + ms(60));
        assert_eq!(rt.answered(2, 1, 10, t0 + ms(70)), Some(ms(70)));
        rt.sent(2, 1, 11, t0);
        rt.sent(3, 2, 12, t0 + ms(1));
        assert_eq!(rt.outstanding(2), 0, "term 1's sends are gone");
        assert_eq!(rt.answered(3, 1, 12, t0 + ms(2)), None, "an answer from an older term");
        assert_eq!(rt.answered(3, 2, 12, t0 + ms(2)), Some(ms(1)));
    }

    #[test]
    fn a_follower_that_never_answers_costs_a_bounded_queue() {
        let t0 = Instant::now();
        let mut rt = RoundTrips::default();
        for i in 1..=(PENDING as u64 + 100) {
            rt.sent(2, 1, i, t0);
        }
        assert_eq!(rt.outstanding(2), PENDING);
    }

    #[test]
    fn each_member_has_its_series_and_records_what_it_is_told() {
        let shown = Shown::default();
        let (a, b) = (shown.series("node2"), shown.series("node3"));
        a.record(Some(Duration::from_micros(300)), true);
        a.record(None, true);
        b.record(Some(Duration::from_millis(15)), false);
        let mut reg = prometheus_client::registry::Registry::default();
        reg.register("lockstep_append_round_trip_seconds", "x", shown.round_trip.clone());
        reg.register("lockstep_commit_answers", "x", shown.commit_answers.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
        assert!(text.contains("lockstep_commit_answers_total{member=\"node2\"} 2"), "{text}");
        assert!(text.contains("lockstep_append_round_trip_seconds_count{member=\"node3\"} 1"), "{text}");
        assert!(!text.contains("lockstep_commit_answers_total{member=\"node3\"} 1"), "{text}");
        shown.forget("node3");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
        assert!(!text.contains("node3"), "a member that left is not shown: {text}");
        assert!(text.contains("lockstep_commit_answers_total{member=\"node2\"} 2"), "{text}");
    }
}
