//! The cluster address (`wsrep_cluster_address`) passed to `connect`:
//! `gcomm://host1:port1,host2?key=value&key2=value2`.
//!
//! Galera (observed): `gcomm://` with no host bootstraps a new cluster; a
//! peer without a port uses 4567; options after `?` are provider options
//! that apply from connect on, unknown ones are ignored and a bad value
//! fails the connect ("Bad value 'abc' for parameter 'gmcast.segment'");
//! any other scheme fails ("Backend not supported: foo://").

use crate::error::OptionError;
use crate::node::{self, DEFAULT_PORT};

/// One peer of the cluster address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// As written (IPv6 in brackets).
    pub host: String,
    pub port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterAddress {
    pub scheme: String,
    /// Empty for `gcomm://`: bootstrap a new cluster.
    pub peers: Vec<Peer>,
    /// `key=value` pairs after `?`, in order.
    pub options: Vec<(String, String)>,
}

impl Peer {
    /// `host:port`, as the group transport dials it.
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl ClusterAddress {
    /// `gcomm://` with no peer starts a new cluster.
    pub fn is_bootstrap(&self) -> bool {
        self.peers.is_empty()
    }
}

/// Parses a cluster address; only the `gcomm` scheme is supported.
pub fn parse_cluster_address(address: &str) -> Result<ClusterAddress, OptionError> {
    let bad = |reason: String| OptionError::ClusterAddress {
        address: address.to_string(),
        reason,
    };
    let (scheme, rest) = match node::split_scheme(address.trim()) {
        (Some(s), rest) => (s, rest),
        // Galera's words first: mtr tests suppress its lines by them.
        (None, _) => return Err(bad("Invalid backend URI (expected gcomm://host[:port],...)".to_string())),
    };
    if scheme != "gcomm" {
        return Err(bad(format!("Backend not supported: {scheme} (only gcomm://)")));
    }
    let (hosts, query) = rest.split_once('?').unwrap_or((rest, ""));
    Ok(ClusterAddress {
        scheme: scheme.to_string(),
        peers: parse_peers(hosts).map_err(bad)?,
        options: parse_query(query).map_err(bad)?,
    })
}

/// Comma-separated `host[:port]`; empty entries (`a,,b`, trailing comma)
/// are skipped.
fn parse_peers(hosts: &str) -> Result<Vec<Peer>, String> {
    let mut peers = Vec::new();
    for entry in hosts.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (host, port) = node::split_host_port(entry)?;
        peers.push(Peer {
            host: host.to_string(),
            port: port.unwrap_or(DEFAULT_PORT),
        });
    }
    Ok(peers)
}

/// `k=v&k2=v2`; every entry needs a non-empty key and one `=`.
fn parse_query(query: &str) -> Result<Vec<(String, String)>, String> {
    let mut options = Vec::new();
    for entry in query.split('&').filter(|e| !e.is_empty()) {
        match entry.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.contains('=') => {
                options.push((k.trim().to_string(), v.trim().to_string()))
            }
            _ => return Err(format!("option '{entry}' is not key=value")),
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(host: &str, port: u16) -> Peer {
        Peer {
            host: host.to_string(),
            port,
        }
    }

    #[test]
    fn bootstrap_address() {
        let a = parse_cluster_address("gcomm://").unwrap();
        assert!(a.is_bootstrap());
        assert_eq!(a.scheme, "gcomm");
        assert!(a.options.is_empty());
    }

    #[test]
    fn peers_options_and_default_port() {
        let a =
            parse_cluster_address("gcomm://h1:27010,h2?gmcast.segment=1&pc.wait_prim=no").unwrap();
        assert_eq!(a.peers, vec![peer("h1", 27010), peer("h2", 4567)]);
        assert_eq!(
            a.options,
            vec![
                ("gmcast.segment".to_string(), "1".to_string()),
                ("pc.wait_prim".to_string(), "no".to_string())
            ]
        );
        assert!(!a.is_bootstrap());
    }

    #[test]
    fn ipv6_and_blank_entries() {
        let a = parse_cluster_address("gcomm://[::1]:27010, 10.0.0.2 ,").unwrap();
        assert_eq!(a.peers, vec![peer("[::1]", 27010), peer("10.0.0.2", 4567)]);
        let only_options = parse_cluster_address("gcomm://?pc.wait_prim=no").unwrap();
        assert!(only_options.is_bootstrap());
    }

    #[test]
    fn malformed_addresses_are_refused_clearly() {
        for (bad, why) in [
            ("foo://", "Backend not supported: foo"),
            ("127.0.0.1:4567", "Invalid backend URI (expected gcomm://"),
            ("NULL", "Invalid backend URI"),
            ("gcomm://h:abc", "Can't parse port number from 'abc'"),
            ("gcomm://h?novalue", "is not key=value"),
            ("gcomm://h?=1", "is not key=value"),
        ] {
            let e = parse_cluster_address(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(
                e.starts_with(&format!("Bad cluster address '{bad}'")),
                "{e}"
            );
        }
    }
}
