//! `lockstep check`: what a cluster promises, checked against real
//! histories under the faults users meet, for either provider.
//!
//! - [`crash`]: acknowledged commits across SIGKILLs of one node, a
//!   majority or every node, restarted as systemd does or plainly.
//! - [`elle`]: an Elle-style checker of list-append histories, and
//!   [`list_append`]: Jepsen's workload under one fault class at a time,
//!   its history checked.
//! - [`partition`]: healing after the network between one side and the
//!   rest dropped every packet for a few seconds.

pub mod cli;
pub mod crash;
pub mod elle;
pub mod list_append;
pub mod partition;

/// Rounds numbered `first..first + count`, each reported as it ends,
/// until one leaves the cluster `broken` (the rest could not run on it).
fn series<R>((first, count): (u32, u32), mut round: impl FnMut(u32) -> R, report: &mut dyn FnMut(&R), broken: impl Fn(&R) -> bool) -> Vec<R> {
    let mut all = Vec::new();
    for number in first..first + count {
        let r = round(number);
        report(&r);
        let stop = broken(&r);
        all.push(r);
        if stop {
            break;
        }
    }
    all
}
