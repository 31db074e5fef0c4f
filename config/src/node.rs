//! Addresses: the node address the server passes to `init`, listen
//! addresses, and the defaults Galera derives from them.
//!
//! Observed on Galera 26.4.23 (wsrep_node_address → shown options):
//! * `127.0.0.1:27010` → `base_host = 127.0.0.1`, `base_port = 27010`,
//!   `ist.recv_addr = 127.0.0.1` (host only: the IST port, base_port + 1,
//!   is added when IST starts, not shown);
//! * `[::1]:27010` → `base_host = [::1]` (brackets kept);
//! * `0.0.0.0` and `::` are refused ("Bad value for 'node_address'");
//! * a `base_port` option overrides the node address port, and a port in
//!   `gmcast.listen_addr` overrides both;
//! * `gmcast.listen_addr` defaults to `tcp://0.0.0.0:<base_port>`; a
//!   missing scheme becomes `tcp://`, a missing port `base_port`, and a
//!   host name is resolved (`tcp://localhost` → `tcp://127.0.0.1:27010`);
//! * empty node address → `base_host` and `ist.recv_addr` not shown.

use crate::error::OptionError;
use std::net::{IpAddr, ToSocketAddrs};

/// Galera's group communication port when nothing says otherwise.
pub const DEFAULT_PORT: u16 = 4567;

/// Splits `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6
/// address. IPv6 hosts keep their brackets, as Galera shows them.
pub fn split_host_port(s: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if s.starts_with('[') {
        let close = s.find(']').ok_or_else(|| format!("missing ']' in '{s}'"))?;
        match &s[close + 1..] {
            "" => (&s[..=close], None),
            rest => match rest.strip_prefix(':') {
                Some(p) => (&s[..=close], Some(p)),
                None => return Err(format!("unexpected '{rest}' after ']'")),
            },
        }
    } else if s.matches(':').count() > 1 {
        (s, None) // bare IPv6 literal: no room for a port
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() {
        return Err(format!("no host in '{s}'"));
    }
    let port = port.map(parse_port).transpose()?;
    Ok((host, port))
}

fn parse_port(p: &str) -> Result<u16, String> {
    p.parse::<u16>()
        .map_err(|_| format!("Can't parse port number from '{p}'"))
}

/// The IP address of a host literal, brackets allowed.
fn ip_literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Host and port of the server's `wsrep_node_address`; `None` when empty.
/// The unspecified addresses are refused: peers could not reach us there.
pub fn parse_node_address(address: &str) -> Result<Option<(String, Option<u16>)>, OptionError> {
    let address = address.trim();
    if address.is_empty() {
        return Ok(None);
    }
    let bad = |reason: String| OptionError::NodeAddress {
        address: address.to_string(),
        reason,
    };
    let (host, port) = split_host_port(address).map_err(bad)?;
    if ip_literal(host).is_some_and(|ip| ip.is_unspecified()) {
        return Err(bad(
            "an unspecified address can't be reached by peers".to_string()
        ));
    }
    Ok(Some((host.to_string(), port)))
}

/// Splits `scheme://rest`; no scheme gives `None`.
pub fn split_scheme(addr: &str) -> (Option<&str>, &str) {
    match addr.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, addr),
    }
}

/// Checks `[scheme://]host[:port]` (the `Addr` option kind).
pub fn check_addr(addr: &str) -> Result<(), String> {
    let (scheme, rest) = split_scheme(addr);
    if let Some(s) = scheme {
        if s.is_empty() || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+') {
            return Err(format!("bad scheme '{s}'"));
        }
    }
    split_host_port(rest).map(|_| ())
}

/// The listen address Galera shows, and the port it implies for
/// `base_port`. `given` is the `gmcast.listen_addr` option, if set.
pub fn listen_addr(given: Option<&str>, base_port: u16) -> Result<(String, u16), String> {
    let given = given.unwrap_or("tcp://0.0.0.0");
    let (scheme, rest) = split_scheme(given);
    let scheme = scheme.unwrap_or("tcp");
    if scheme != "tcp" && scheme != "ssl" {
        return Err(format!(
            "listen address '{given}' does not specify a supported protocol"
        ));
    }
    let (host, port) = split_host_port(rest)?;
    let port = port.unwrap_or(base_port);
    Ok((format!("{scheme}://{}:{port}", resolve_host(host)?), port))
}

/// An IP literal in canonical form (IPv6 in brackets), or the first address
/// a host name resolves to (IPv4 preferred, as getaddrinfo orders it here).
pub fn resolve_host(host: &str) -> Result<String, String> {
    let ip = match ip_literal(host) {
        Some(ip) => ip,
        None => {
            let addrs: Vec<_> = (host, 0)
                .to_socket_addrs()
                .map_err(|e| format!("can't resolve '{host}': {e}"))?
                .map(|a| a.ip())
                .collect();
            *addrs
                .iter()
                .find(|ip| ip.is_ipv4())
                .or(addrs.first())
                .ok_or_else(|| format!("'{host}' resolves to no address"))?
        }
    };
    Ok(match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    })
}

/// The address the IST receiver is reached at: `recv_addr` (else
/// `base_host`) with `tcp://` and, when no port is given, `base_port + 1`.
/// A bare IPv6 host (`wsrep_node_address=::1`) gets its brackets, or the
/// port could not be told from the address.
pub fn ist_address(recv_addr: &str, base_port: u16) -> Result<String, String> {
    let (scheme, rest) = split_scheme(recv_addr);
    let (host, port) = split_host_port(rest)?;
    let port = port.unwrap_or(base_port.wrapping_add(1));
    let host = match host.contains(':') && !host.starts_with('[') {
        true => format!("[{host}]"),
        false => host.to_string(),
    };
    Ok(format!("{}://{host}:{port}", scheme.unwrap_or("tcp")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert_eq!(
            split_host_port("127.0.0.1:27010"),
            Ok(("127.0.0.1", Some(27010)))
        );
        assert_eq!(split_host_port("127.0.0.1"), Ok(("127.0.0.1", None)));
        assert_eq!(split_host_port("[::1]:27010"), Ok(("[::1]", Some(27010))));
        assert_eq!(split_host_port("[::1]"), Ok(("[::1]", None)));
        assert_eq!(split_host_port("fe80::1"), Ok(("fe80::1", None)));
        assert_eq!(split_host_port("node1:4567"), Ok(("node1", Some(4567))));
        assert_eq!(
            split_host_port("127.0.0.1:abc"),
            Err("Can't parse port number from 'abc'".to_string()) // Galera's wording
        );
        assert!(split_host_port(":4567").is_err());
        assert!(split_host_port("[::1]x").is_err());
        assert!(split_host_port("h:70000").is_err());
    }

    #[test]
    fn node_address_rejects_unspecified() {
        assert_eq!(
            parse_node_address("127.0.0.1:27010").unwrap(),
            Some(("127.0.0.1".to_string(), Some(27010)))
        );
        assert_eq!(parse_node_address("").unwrap(), None);
        for bad in [
            "0.0.0.0",
            "0.0.0.0:27010",
            "::",
            "[::]:27010",
            "0:0:0:0:0:0:0:0",
        ] {
            let e = parse_node_address(bad).unwrap_err().to_string();
            assert!(e.starts_with("Bad value for 'node_address'"), "{bad}: {e}");
        }
    }

    #[test]
    fn listen_address_derivation() {
        let l = |g: Option<&str>, p| listen_addr(g, p).unwrap();
        assert_eq!(l(None, 27010), ("tcp://0.0.0.0:27010".to_string(), 27010));
        assert_eq!(
            l(Some("tcp://127.0.0.1:27030"), 27010),
            ("tcp://127.0.0.1:27030".into(), 27030)
        );
        assert_eq!(
            l(Some("127.0.0.1"), 27010),
            ("tcp://127.0.0.1:27010".into(), 27010)
        );
        assert_eq!(
            l(Some("tcp://[::1]"), 27060),
            ("tcp://[::1]:27060".into(), 27060)
        );
        assert_eq!(
            l(Some("tcp://localhost"), 27010),
            ("tcp://127.0.0.1:27010".into(), 27010)
        );
        assert!(listen_addr(Some("udp://1.2.3.4"), 1).is_err());
    }

    #[test]
    fn ist_address_adds_scheme_and_next_port() {
        assert_eq!(
            ist_address("127.0.0.1", 27010).unwrap(),
            "tcp://127.0.0.1:27011"
        );
        assert_eq!(
            ist_address("127.0.0.1:27040", 27010).unwrap(),
            "tcp://127.0.0.1:27040"
        );
        assert_eq!(
            ist_address("ssl://[::1]", 4567).unwrap(),
            "ssl://[::1]:4568"
        );
        assert_eq!(ist_address("::1", 4567).unwrap(), "tcp://[::1]:4568");
    }

    #[test]
    fn addr_kind_check() {
        assert!(check_addr("tcp://127.0.0.1:1").is_ok());
        assert!(check_addr("10.0.0.1").is_ok());
        assert!(check_addr("").is_err());
        assert!(check_addr("://x").is_err());
    }
}
