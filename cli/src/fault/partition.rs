//! Network partitions between the nodes of a cluster on one machine.
//!
//! Every node listens for its group, IST and SST traffic on an address of
//! its own, 127.20.0.N, and the others reach it there
//! ([`own_addresses`]). Both providers bind their outgoing group
//! connections to the listen host (`gmcast.listen_addr`), so a packet's
//! addresses say which two nodes it runs between, and an nftables rule
//! that drops it is what a partition of dropped packets is: connections
//! stay open, nothing crosses, nobody is told (the half-open links a real
//! partition leaves, not the clean closes of a process that exits).
//!
//! A connection that does not bind its source (an IST or SST sender
//! leaves from 127.0.0.1) is not cut: the rules see only its destination.
//! Clients reach the nodes by their sockets and are never cut.
//!
//! The rules live in a table of their own, named after the cluster's
//! base port, so two clusters (and anything else on the machine) do not
//! touch each other's; dropping the [`Partition`] deletes it.

use crate::cluster::{provider_setting, ClusterSpec, Error, Result};
use lockstep_config::keys;
use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// Node N's own address.
pub fn host(node: usize) -> Ipv4Addr {
    assert!((1..=250).contains(&node), "node {node}: own addresses go up to 250 nodes");
    Ipv4Addr::new(127, 20, 0, node as u8)
}

/// `spec` with every node's group, IST and SST listeners on its own
/// address, and every node's cluster address naming the others' there.
pub fn own_addresses(mut spec: ClusterSpec) -> ClusterSpec {
    for node in 1..=spec.nodes {
        let ports = spec.ports(node);
        let peers: Vec<String> = (1..=spec.nodes).filter(|n| *n != node).map(|n| format!("{}:{}", host(n), spec.ports(n).gcomm)).collect();
        spec = spec
            .node_provider_option(node, provider_setting(keys::GMCAST_LISTEN_ADDR, format!("tcp://{}:{}", host(node), ports.gcomm)))
            .node_provider_option(node, provider_setting(keys::IST_RECV_ADDR, format!("{}:{}", host(node), ports.ist)))
            .node_mysqld_option(node, format!("wsrep_node_address={}:{}", host(node), ports.gcomm))
            .node_mysqld_option(node, format!("wsrep_sst_receive_address={}:{}", host(node), ports.sst))
            .node_mysqld_option(node, format!("wsrep_cluster_address=gcomm://{}", peers.join(",")));
    }
    spec
}

/// Rules in force; dropping it heals.
#[derive(Debug)]
pub struct Partition {
    table: String,
}

impl Partition {
    /// Drops every packet between two different `sides` (node numbers);
    /// a node in no side talks to everyone.
    pub fn cut(spec: &ClusterSpec, sides: &[Vec<usize>]) -> Result<Partition> {
        Partition::drop_between(spec, &side_pairs(sides))
    }

    /// Drops every packet between the two nodes of each pair, both ways;
    /// the other links stay (a ring, a bridge).
    pub fn cut_links(spec: &ClusterSpec, links: &[(usize, usize)]) -> Result<Partition> {
        let pairs: Vec<(Vec<usize>, Vec<usize>)> = links.iter().flat_map(|&(a, b)| [(vec![a], vec![b]), (vec![b], vec![a])]).collect();
        Partition::drop_between(spec, &pairs)
    }

    fn drop_between(spec: &ClusterSpec, pairs: &[(Vec<usize>, Vec<usize>)]) -> Result<Partition> {
        let table = format!("lockstep_partition_{}", spec.base_port);
        let _ = nft(&format!("delete table ip {table}\n")); // one a crashed run left behind
        nft(&ruleset(&table, pairs)).map_err(|e| Error::msg(format!("cutting the network ({e}); nft needs root and the nftables package")))?;
        Ok(Partition { table })
    }

    /// Lets everything through again.
    pub fn heal(self) {} // Drop does it
}

impl Drop for Partition {
    fn drop(&mut self) {
        if let Err(e) = nft(&format!("delete table ip {}\n", self.table)) {
            eprintln!("healing the partition: {e} (remove it with `nft delete table ip {}`)", self.table);
        }
    }
}

/// Every ordered pair of two different non-empty sides.
fn side_pairs(sides: &[Vec<usize>]) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut pairs = Vec::new();
    for (i, a) in sides.iter().enumerate() {
        for (j, b) in sides.iter().enumerate() {
            if i != j && !a.is_empty() && !b.is_empty() {
                pairs.push((a.clone(), b.clone()));
            }
        }
    }
    pairs
}

/// A majorities ring of round `round`: the links to cut so that every
/// node still sees a majority, and no two see the same one (Jepsen's
/// ring). Nodes sit in a ring, rotated each round, and keep only the
/// nearest on each side that make a majority with them (one each side
/// of five, two of seven); with three nodes, where that is every link,
/// one link goes (a bridge: the node between them sees both sides).
pub fn ring(nodes: usize, round: u32) -> Vec<(usize, usize)> {
    let at = |i: usize| (round as usize + i) % nodes + 1;
    if nodes <= 3 {
        return if nodes == 3 { vec![(at(0), at(2))] } else { Vec::new() };
    }
    let each_side = (nodes / 2).div_ceil(2);
    let mut links = Vec::new();
    for i in 0..nodes {
        for j in i + 1..nodes {
            let apart = (j - i).min(nodes - (j - i));
            if apart > each_side {
                links.push((at(i), at(j)));
            }
        }
    }
    links
}

/// The nft script: one table, one output chain (loopback packets pass
/// the output hook once, where they are dropped before any socket sees
/// them), one rule per pair: packets from the first set to the second.
fn ruleset(table: &str, pairs: &[(Vec<usize>, Vec<usize>)]) -> String {
    let set = |side: &[usize]| side.iter().map(|n| host(*n).to_string()).collect::<Vec<_>>().join(", ");
    let rules: String = pairs.iter().map(|(a, b)| format!("    ip saddr {{ {} }} ip daddr {{ {} }} drop\n", set(a), set(b))).collect();
    format!("table ip {table} {{\n  chain output {{\n    type filter hook output priority 0; policy accept;\n{rules}  }}\n}}\n")
}

fn nft(script: &str) -> std::result::Result<(), String> {
    let mut child = Command::new("nft").args(["-f", "-"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| format!("running nft: {e}"))?;
    child.stdin.take().expect("piped").write_all(script.as_bytes()).map_err(|e| format!("writing to nft: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("waiting for nft: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!("nft: {}", String::from_utf8_lossy(&out.stderr).trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ordered_pair_of_sides_gets_a_rule() {
        let text = ruleset("t", &side_pairs(&[vec![1], vec![2, 3]]));
        assert!(text.contains("ip saddr { 127.20.0.1 } ip daddr { 127.20.0.2, 127.20.0.3 } drop"));
        assert!(text.contains("ip saddr { 127.20.0.2, 127.20.0.3 } ip daddr { 127.20.0.1 } drop"));
        assert_eq!(text.matches(" drop").count(), 2);
        assert_eq!(ruleset("t", &side_pairs(&[vec![1], vec![2], vec![3]])).matches(" drop").count(), 6);
    }

    #[test]
    fn in_a_ring_every_node_sees_a_majority_and_no_two_the_same() {
        for nodes in [3, 5, 7] {
            for round in 0..nodes as u32 {
                let cut = ring(nodes, round);
                let sees = |n: usize| -> Vec<usize> { (1..=nodes).filter(|m| !cut.contains(&(n, *m)) && !cut.contains(&(*m, n))).collect() };
                let views: Vec<Vec<usize>> = (1..=nodes).map(sees).collect();
                assert!(views.iter().all(|v| v.len() > nodes / 2), "{nodes} nodes, round {round}: {views:?}");
                assert!(!cut.is_empty());
                if nodes > 3 {
                    let distinct: std::collections::HashSet<_> = views.iter().collect();
                    assert_eq!(distinct.len(), nodes, "{views:?}");
                }
            }
        }
    }

    #[test]
    fn own_addresses_point_every_node_at_the_others() {
        let spec = own_addresses(ClusterSpec::new(3, crate::cluster::Provider::Lockstep, "/nonexistent").base_port(30000));
        let two = &spec.node_extra[&2];
        assert!(two.mysqld.contains(&"wsrep_cluster_address=gcomm://127.20.0.1:30001,127.20.0.3:30021".to_string()));
        assert!(two.provider.contains(&"gmcast.listen_addr=tcp://127.20.0.2:30011".to_string()));
    }
}
