//! What `GET /metrics` returns: every status variable under the name
//! mysqld_exporter gives it (`mysql_global_status_wsrep_<name>`, so that
//! a dashboard reads either source), text values as info metrics with the
//! text in a label (`..._<name>_text_info{value="Synced"}`; the exporter
//! drops them), the view-derived variables
//! the server computes itself, the replication latency as a histogram,
//! and on the leader each follower's answer times (`group::round_trips`).
//! Encoded by the Prometheus client's OpenMetrics encoder.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use crate::node::{Node, StatValue};
use lockstep_config::ServerVar;

const PREFIX: &str = "mysql_global_status_wsrep_";

/// The page for `node` now.
pub fn render(node: &Node) -> String {
    let mut reg = Registry::default();
    for (var, value) in node.stats() {
        let name = format!("{PREFIX}{}", var.name().to_ascii_lowercase());
        add(&mut reg, &name, var.doc(), &value);
    }
    let c = node.cluster_status();
    let server = [
        (ServerVar::ClusterStatus, StatValue::Str(c.status.into())),
        (ServerVar::ClusterSize, StatValue::Int(c.size)),
        (ServerVar::ClusterConfId, StatValue::Int(c.conf_id)),
        (ServerVar::LocalIndex, StatValue::Int(c.local_index)),
        (ServerVar::ClusterStateUuid, StatValue::Str(c.state_uuid)),
    ];
    for (var, value) in server {
        add(&mut reg, &format!("{PREFIX}{}", var.name()), var.doc(), &value);
    }
    reg.register(
        "lockstep_repl_latency_seconds",
        "Time from handing a local write set to the group until it is ordered",
        node.repl_latency_histogram(),
    );
    if let Some(shown) = node.round_trip_metrics() {
        reg.register(
            "lockstep_append_round_trip_seconds",
            "While this node leads: time from sending a member an append until it accepts it",
            shown.round_trip,
        );
        reg.register(
            "lockstep_commit_answers",
            "While this node leads: acceptances from a member that completed a majority and committed",
            shown.commit_answers,
        );
    }
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}

/// A gauge when the value reads as a number the way mysqld_exporter reads
/// it, and an info metric for every text value.
fn add(reg: &mut Registry, name: &str, help: &str, value: &StatValue) {
    match number(value) {
        // Whole numbers print as such ("4", not "4.0"), as the exporter's do.
        Some(x) if x.fract() == 0.0 && x.abs() < (1u64 << 53) as f64 => {
            let g = Gauge::<i64>::default();
            g.set(x as i64);
            reg.register(name, help, g);
        }
        Some(x) => {
            let g = Gauge::<f64, AtomicU64>::default();
            g.set(x);
            reg.register(name, help, g);
        }
        None => {}
    }
    if let StatValue::Str(text) = value {
        // Its own family: a gauge may already have `name`.
        reg.register(format!("{name}_text"), help, Info::new(vec![("value".to_string(), text.clone())]));
    }
}

/// mysqld_exporter's reading of a status value: numbers, and the words it
/// maps (on/off, yes/no, Primary/non-Primary/Disconnected, ...).
pub fn number(value: &StatValue) -> Option<f64> {
    match value {
        StatValue::Int(n) => Some(*n as f64),
        StatValue::Double(x) => Some(*x),
        StatValue::Str(s) => match s.to_ascii_lowercase().as_str() {
            "yes" | "on" | "primary" => Some(1.0),
            "no" | "off" | "disabled" | "connecting" | "non-primary" | "disconnected" => Some(0.0),
            other => other.parse().ok(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_as_the_exporter_reads_it() {
        let s = |t: &str| number(&StatValue::Str(t.into()));
        assert_eq!(s("Primary"), Some(1.0));
        assert_eq!(s("non-Primary"), Some(0.0));
        assert_eq!(s("ON"), Some(1.0));
        assert_eq!(s("3"), Some(3.0));
        assert_eq!(s("1.5e-05"), Some(1.5e-5));
        assert_eq!(s("Synced"), None);
        assert_eq!(s("0/0/0/0/0"), None);
        assert_eq!(s(""), None);
    }

    #[test]
    fn a_text_value_is_an_info_metric_and_a_mapped_one_a_gauge_too() {
        let mut reg = Registry::default();
        add(&mut reg, "mysql_global_status_wsrep_local_state_comment", "state", &StatValue::Str("Synced".into()));
        add(&mut reg, "mysql_global_status_wsrep_cluster_status", "status", &StatValue::Str("Primary".into()));
        add(&mut reg, "mysql_global_status_wsrep_local_state", "state", &StatValue::Int(4));
        let mut out = String::new();
        encode(&mut out, &reg).unwrap();
        assert!(out.contains("mysql_global_status_wsrep_local_state_comment_text_info{value=\"Synced\"} 1"), "{out}");
        assert!(out.contains("mysql_global_status_wsrep_cluster_status 1"), "{out}");
        assert!(out.contains("mysql_global_status_wsrep_cluster_status_text_info{value=\"Primary\"} 1"), "{out}");
        assert!(out.contains("mysql_global_status_wsrep_local_state 4"), "{out}");
        assert!(out.ends_with("# EOF\n"), "{out}");
    }
}
