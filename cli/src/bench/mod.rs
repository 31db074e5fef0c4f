//! `lockstep bench`: lockstep against Galera, side by side, with sysbench.
//!
//! ```text
//! cargo build --release            # lockstep and liblockstep.so side by side
//! target/release/lockstep bench    # galera then lockstep, 3 nodes, 16 cells
//! target/release/lockstep bench --providers galera --time 10   # a quick look
//! ```
//!
//! For each provider, in order: a fresh cluster from the launcher
//! ([`crate::cluster`]) in `DIR/<provider>/cluster`, `sysbench prepare` on
//! node 1, a wait until every node has all of it (equal
//! `wsrep_last_committed`, then a causal `wsrep_sync_wait=1` row count on
//! each node), then every cell, then the cluster goes down. A cell is one
//! test at one thread count against one target:
//!
//! - `node1`: every connection to node 1 (one writer, the others apply);
//! - `all`: one sysbench process with `--mysql-socket=s1,s2,s3`; sysbench
//!   1.0 hands out connections round-robin over that list (8 threads on 3
//!   nodes: 3/3/2), so every node writes. Its p95 is sysbench's own over
//!   every transaction of every node: exact, nothing is merged.
//!
//! Each cell: wait for a quiet cluster, an unmeasured warm-up run, `FLUSH
//! STATUS` and a counter snapshot on every node, the measured run, another
//! snapshot. The report prints tps and p95 per provider with the ratios to
//! the first provider, then the server counters (flow control, cert
//! failures, BF aborts, receive queue, apply window, deps distance, CPU per
//! transaction) and, for each cell a provider loses, which counters say
//! why. A provider that cannot run gets "n/a (reason)" and the run goes on.
//!
//! Files: `DIR/report.txt` (what was printed), `DIR/results.tsv` (one line
//! per provider and cell), `DIR/<provider>/<cell>.txt` (raw sysbench
//! output, with 5 s interim lines), `DIR/<provider>/counters.tsv` (every
//! node's counters before and after each cell), `DIR/<provider>/error.txt`
//! (why a provider could not start).
//!
//! Comparability: both providers get the same my.cnf from the launcher plus
//! `innodb_flush_log_at_trx_commit=2` (durability comes from replication,
//! not from an fsync per commit), `--auto-inc=off` (Galera's
//! auto_increment_increment would leave two thirds of sysbench's ids
//! absent), the same data and the same cell order. sysbench shares the
//! machine's cores with the servers, as it does for both providers.

mod big_trx;
mod bound;
mod chart;
pub mod cli;
mod counters;
mod drain;
mod durability;
mod follower_delay;
mod freshness;
mod plan;
mod report;
mod runner;
mod sweep;
mod sysbench;
mod threads;
mod wan;

pub use counters::Summary;
pub use plan::{BenchSpec, Cell, Target};
pub use runner::{run, CellOutcome, ProviderRun};
pub use sysbench::SysbenchResult;
