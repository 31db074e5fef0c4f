//! A node cut off by a network that drops its packets comes back: three
//! nodes on addresses of their own, two writers per node inserting rows
//! of their own, an nftables rule drops every packet between one node and
//! the others for longer than `evs.suspect_timeout` (the others remove
//! it, it turns non-primary), then lets them through; within 30 s every
//! node is Synced in one component of three, every acknowledged insert
//! is on every node, and every node holds the same rows. Once with the
//! node that bootstrapped the cluster, whose log replays its own first
//! membership when it joins again, once with another.
//!
//! Needs root and nft (the nftables package).

mod common;

use common::*;
use lockstep_cli::check::partition::{self, RoundSpec, Split};
use lockstep_cli::fault::partition::own_addresses;
use lockstep_cli::workload::inserts::{self, InsertConfig};
use std::time::Duration;

#[test]
fn a_node_cut_off_by_dropped_packets_is_synced_again_within_30_s_of_the_heal() {
    let _turn = take_turn();
    let cluster = up(own_addresses(spec("partition", 24, 3)));
    inserts::setup(&cluster, 1).unwrap_or_else(|e| panic!("creating the table: {e}"));
    let writers = InsertConfig { writers_per_node: 2, ..InsertConfig::default() };
    let heal_within = Duration::from_secs(30);
    for (number, cut) in [(0, 8), (1, 10)] {
        let spec = RoundSpec { split: Split::One, load: Duration::from_secs(3), cut: (Duration::from_secs(cut), Duration::from_secs(cut)), heal_within, recovery_timeout: SYNC_TIMEOUT };
        let r = partition::round(&cluster, &spec, &writers, number);
        let what = format!("node{:?} cut off {} s", r.cut_off, cut);
        if let Some(e) = &r.verdict.error {
            panic!("{what}: {e}");
        }
        assert!(r.healed_within(heal_within), "{what}: Synced again only {:?} after the heal", r.back);
        assert!(r.verdict.acked.ids.len() > 100, "{what}: only {} inserts acknowledged: the load did not run", r.verdict.acked.ids.len());
        assert_eq!(r.verdict.lost_total(), 0, "{what}: acknowledged inserts missing per node {:?}", r.verdict.lost);
        assert!(r.verdict.divergences.is_empty(), "{what}: {}", lockstep_cli::workload::Error::Diverged(r.verdict.divergences.clone()));
        eprintln!("{what}: {} inserts acknowledged, none missing, Synced in one component {:.1}s after the heal", r.verdict.acked.ids.len(), r.back.map_or(0.0, |d| d.as_secs_f64()));
    }
}
