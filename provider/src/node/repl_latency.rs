//! `wsrep_evs_repl_latency`: how long this node's own writesets take from
//! being handed to the group until they come back ordered, the quantity
//! Galera's evs reports for its own messages. Shown as Galera shows it,
//! `min/avg/max/stddev/count` in seconds over the current period of
//! `evs.stats_report_period` (a minute by default), after which it starts
//! over: mysqld_exporter turns those five numbers into
//! `mysql_galera_evs_repl_latency_*`, which dashboards plot.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::Histogram;

pub(super) struct ReplLatency {
    period: Mutex<Period>,
    /// The same samples for the metrics endpoint (`metrics`), cumulative.
    histogram: Histogram,
}

impl Default for ReplLatency {
    fn default() -> ReplLatency {
        ReplLatency { period: Default::default(), histogram: crate::group::round_trips::latency_histogram() }
    }
}

/// Running min, max, mean and variance (Welford), as Galera keeps them.
#[derive(Clone, Copy, Debug, Default)]
struct Period {
    started: Option<Instant>,
    count: u64,
    mean: f64,
    /// Sum of squared deviations from the mean.
    m2: f64,
    min: f64,
    max: f64,
}

impl ReplLatency {
    /// One of our writesets was ordered `took` after it was proposed.
    pub fn record(&self, took: Duration, now: Instant, length: Duration) {
        self.histogram.observe(took.as_secs_f64());
        let mut p = self.period.lock().unwrap_or_else(|e| e.into_inner());
        if p.started.is_none_or(|s| now.saturating_duration_since(s) >= length) {
            *p = Period { started: Some(now), ..Period::default() };
        }
        let x = took.as_secs_f64();
        p.count += 1;
        let delta = x - p.mean;
        p.mean += delta / p.count as f64;
        p.m2 += delta * (x - p.mean);
        (p.min, p.max) = if p.count == 1 { (x, x) } else { (p.min.min(x), p.max.max(x)) };
    }

    pub fn histogram(&self) -> Histogram {
        self.histogram.clone()
    }

    /// The status value: zeros when nothing was ordered this period.
    pub fn show(&self, now: Instant, length: Duration) -> String {
        let p = *self.period.lock().unwrap_or_else(|e| e.into_inner());
        let current = p.started.is_some_and(|s| now.saturating_duration_since(s) < length);
        if !current || p.count == 0 {
            return "0/0/0/0/0".into();
        }
        let stddev = (p.m2 / p.count as f64).sqrt();
        format!("{}/{}/{}/{}/{}", g6(p.min), g6(p.mean), g6(p.max), g6(stddev), p.count)
    }
}

/// A number as C++ streams print a double by default (printf's `%g`: six
/// significant digits, trailing zeros dropped, exponent form below 1e-4
/// or from 1e6), so that the value reads as Galera's does.
fn g6(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{:.5e}", x);
        let (mantissa, e) = s.split_once('e').expect("exponent form");
        let e: i32 = e.parse().expect("exponent");
        return format!("{}e{}{:02}", trim(mantissa), if e < 0 { '-' } else { '+' }, e.abs());
    }
    trim(&format!("{:.*}", (5 - exp).max(0) as usize, x)).to_string()
}

fn trim(s: &str) -> &str {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_printf_g() {
        assert_eq!(g6(0.000836123456), "0.000836123");
        assert_eq!(g6(0.0005), "0.0005");
        assert_eq!(g6(0.00001234), "1.234e-05");
        assert_eq!(g6(1.5), "1.5");
        assert_eq!(g6(123456.7), "123457");
        assert_eq!(g6(2500000.0), "2.5e+06");
        assert_eq!(g6(0.0), "0");
    }

    #[test]
    fn five_numbers_over_the_period_then_afresh() {
        let t0 = Instant::now();
        let minute = Duration::from_secs(60);
        let r = ReplLatency::default();
        assert_eq!(r.show(t0, minute), "0/0/0/0/0");
        for ms in [1, 2, 3] {
            r.record(Duration::from_millis(ms), t0, minute);
        }
        // Population standard deviation of 1, 2, 3 ms: sqrt(2/3) ms.
        assert_eq!(r.show(t0 + Duration::from_secs(59), minute), "0.001/0.002/0.003/0.000816497/3");
        assert_eq!(r.show(t0 + minute, minute), "0/0/0/0/0", "the period is over");
        r.record(Duration::from_millis(5), t0 + minute, minute);
        assert_eq!(r.show(t0 + minute, minute), "0.005/0.005/0.005/0/1");
    }
}
