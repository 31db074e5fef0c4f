//! One reading of a node's `wsrep_%` status through the `mysql` crate, and
//! the row `lockstep top` shows for it, rates from two readings.

use mysql::prelude::Queryable;
use crate::cluster::{ServerVar, Status, StatusVar};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a node's server listens.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Socket(PathBuf),
    Tcp { host: String, port: u16 },
}

/// A watched node: its label, how to reach it, its connection once made.
pub struct Source {
    pub label: String,
    target: Target,
    user: String,
    password: Option<String>,
    conn: Option<mysql::Conn>,
}

/// A node's status at one instant (empty: unreachable, with why).
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub at: Option<Instant>,
    pub status: Status,
    pub error: Option<String>,
}

/// How long a node may take to answer before its row says so: one slow
/// node must not freeze the view of the others for long.
const TIMEOUT: Duration = Duration::from_secs(2);

impl Source {
    pub fn new(label: String, target: Target, user: &str, password: Option<&str>) -> Source {
        Source { label, target, user: user.into(), password: password.map(Into::into), conn: None }
    }

    fn opts(&self) -> mysql::Opts {
        let b = mysql::OptsBuilder::new()
            .user(Some(self.user.clone()))
            .pass(self.password.clone())
            .read_timeout(Some(TIMEOUT))
            .write_timeout(Some(TIMEOUT))
            .tcp_connect_timeout(Some(TIMEOUT));
        let b = match &self.target {
            Target::Socket(p) => b.socket(Some(p.to_string_lossy().into_owned())),
            Target::Tcp { host, port } => b.ip_or_hostname(Some(host.clone())).tcp_port(*port).prefer_socket(false),
        };
        b.into()
    }

    /// Reads the status; a failed read drops the connection, to be made
    /// again at the next one (a restarted server).
    pub fn sample(&mut self) -> Sample {
        let at = Some(Instant::now());
        if self.conn.is_none() {
            match mysql::Conn::new(self.opts()) {
                Ok(c) => self.conn = Some(c),
                Err(e) => return Sample { at, status: Status::default(), error: Some(short(&e.to_string())) },
            }
        }
        let conn = self.conn.as_mut().expect("connected above");
        match conn.query::<(String, String), _>("SHOW GLOBAL STATUS LIKE 'wsrep%'") {
            Ok(rows) => Sample { at, status: Status { vars: rows.into_iter().collect() }, error: None },
            Err(e) => {
                self.conn = None;
                Sample { at, status: Status::default(), error: Some(short(&e.to_string())) }
            }
        }
    }
}

fn short(e: &str) -> String {
    e.chars().take(120).collect()
}

pub const HEADER: [&str; 12] =
    ["node", "state", "cluster", "leader", "recv q", "send q", "fc paused", "fc sent/s", "commits/s", "local/s", "lag ms", "capacity/s"];

/// The row of `cur`; rates over the time since `prev` (the same node's
/// previous reading). `leader`: the name of the node that leads, when
/// known. What the node does not report (Galera has no lag, no leader)
/// shows as "-".
pub fn row(label: &str, prev: Option<&Sample>, cur: &Sample, leader: Option<String>) -> [String; 12] {
    if cur.error.is_some() {
        // The reason is too long for a cell: the view prints it below.
        let mut r: [String; 12] = std::array::from_fn(|_| "-".to_string());
        r[0] = label.into();
        r[1] = "unreachable".into();
        return r;
    }
    let st = &cur.status;
    let rate = |k: StatusVar| rate_of(prev, cur, k).map_or("-".into(), |r| format!("{r:.0}"));
    let paused = rate_of(prev, cur, StatusVar::FlowControlPausedNs).map_or("-".into(), |ns| format!("{:.0}%", ns / 1e7));
    let cluster = format!("{}/{}", dash(st.get(ServerVar::ClusterStatus)), dash(st.get(ServerVar::ClusterSize)));
    let capacity = st.float(StatusVar::ApplyCapacity).map_or("-".into(), |c| format!("{c:.0}"));
    [
        label.into(),
        dash(st.get(StatusVar::LocalStateComment)),
        cluster,
        leader.unwrap_or_else(|| "-".into()),
        dash(st.get(StatusVar::LocalRecvQueue)),
        dash(st.get(StatusVar::LocalSendQueue)),
        paused,
        rate(StatusVar::FlowControlSent),
        rate(StatusVar::LastCommitted),
        rate(StatusVar::LocalCommits),
        dash(st.get(StatusVar::ApplyLagMs)),
        capacity,
    ]
}

/// A value as a cell: "-" where the node does not report it.
fn dash(value: Option<&str>) -> String {
    value.unwrap_or("-").into()
}

/// Per second, from two readings of counter `key`.
fn rate_of(prev: Option<&Sample>, cur: &Sample, key: StatusVar) -> Option<f64> {
    let prev = prev?;
    let secs = cur.at?.checked_duration_since(prev.at?)?.as_secs_f64();
    let (a, b) = (prev.status.float(key)?, cur.status.float(key)?);
    (secs > 0.0 && b >= a).then(|| (b - a) / secs)
}

/// Which watched node leads: the one whose `wsrep_local_index` is the
/// `wsrep_leader_index` its members report (lockstep only).
pub fn leader(samples: &[(&str, &Sample)]) -> Option<String> {
    let index = samples.iter().find_map(|(_, s)| s.status.int(StatusVar::LeaderIndex).filter(|i| *i >= 0))?;
    let found = samples.iter().find(|(_, s)| s.status.int(ServerVar::LocalIndex) == Some(index));
    Some(found.map_or_else(|| format!("#{index}"), |(name, _)| name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: Instant, vars: &[(&str, &str)]) -> Sample {
        Sample { at: Some(at), status: Status { vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }, error: None }
    }

    #[test]
    fn rates_come_from_two_readings_and_what_galera_lacks_is_a_dash() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(2);
        let base = [("wsrep_local_state_comment", "Synced"), ("wsrep_cluster_status", "Primary"), ("wsrep_cluster_size", "3")];
        let mut a = base.to_vec();
        a.extend([("wsrep_last_committed", "100"), ("wsrep_flow_control_paused_ns", "0"), ("wsrep_local_index", "1")]);
        let mut b = base.to_vec();
        b.extend([("wsrep_last_committed", "300"), ("wsrep_flow_control_paused_ns", "500000000"), ("wsrep_local_index", "1")]);
        let (prev, cur) = (sample(t0, &a), sample(t1, &b));
        let r = row("node2", Some(&prev), &cur, None);
        assert_eq!(r[1], "Synced");
        assert_eq!(r[2], "Primary/3");
        assert_eq!(r[3], "-");
        assert_eq!(r[6], "25%");
        assert_eq!(r[8], "100");
        assert_eq!(r[10], "-", "Galera has no apply lag");
        assert_eq!(row("node2", None, &cur, None)[8], "-", "no rate from one reading");
    }

    #[test]
    fn the_leader_is_the_watched_node_at_the_reported_index() {
        let t = Instant::now();
        let n1 = sample(t, &[("wsrep_local_index", "0"), ("wsrep_leader_index", "1")]);
        let n2 = sample(t, &[("wsrep_local_index", "1"), ("wsrep_leader_index", "1")]);
        assert_eq!(leader(&[("node1", &n1), ("node2", &n2)]), Some("node2".into()));
        assert_eq!(leader(&[("node1", &n1)]), Some("#1".into()));
        let galera = sample(t, &[("wsrep_local_index", "0")]);
        assert_eq!(leader(&[("node1", &galera)]), None);
    }

    #[test]
    fn an_unreachable_node_is_a_row_of_its_own() {
        let s = Sample { at: Some(Instant::now()), status: Status::default(), error: Some("connection refused".into()) };
        let r = row("node3", None, &s, None);
        assert_eq!((r[0].as_str(), r[1].as_str(), r[2].as_str()), ("node3", "unreachable", "-"));
    }
}
