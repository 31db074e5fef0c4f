//! The deterministic simulation (src/sim) over many seeds.
//!
//! `LOCKSTEP_SIM_SEEDS=N` sets how many seeds run (default 2000, from
//! `LOCKSTEP_SIM_FIRST`, default 1); `LOCKSTEP_SIM_SEED=S` runs seed S
//! alone and prints its schedule, which is how a failing seed reproduces.
//! Liveness findings: `LOCKSTEP_SIM_SHOW=N` lists up to N (default 10),
//! `LOCKSTEP_SIM_DEBUG=1` prints each stuck member's Raft state.

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.parse().unwrap_or_else(|_| panic!("{name} must be a number")))
}

#[test]
fn seeded_schedules_keep_every_invariant() {
    if let Some(seed) = env_u64("LOCKSTEP_SIM_SEED") {
        match lockstep::sim::run(seed, true) {
            Ok(s) => return eprintln!("seed {seed}: {s:?}"),
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    let first = env_u64("LOCKSTEP_SIM_FIRST").unwrap_or(1);
    let count = env_u64("LOCKSTEP_SIM_SEEDS").unwrap_or(2000);
    let mut failed = Vec::new();
    let (mut seqnos, mut acked, mut conflicts, mut faults) = (0i64, 0usize, 0u64, 0usize);
    let mut stuck = Vec::new();
    for seed in first..first + count {
        match lockstep::sim::run(seed, false) {
            Ok(s) => {
                seqnos += s.seqnos;
                acked += s.acked;
                conflicts += s.conflicts;
                faults += s.faults.len();
                if !s.stuck.is_empty() {
                    stuck.push(format!("seed {seed}: {}", s.stuck.join("; ")));
                }
            }
            Err(e) => failed.push(format!("seed {seed}: {e}")),
        }
    }
    eprintln!(
        "simulation: {} seeds ({}..{}), {} passed; {} seqnos ordered, {} writesets acknowledged, {} certification conflicts, {} faults injected",
        count,
        first,
        first + count - 1,
        count as usize - failed.len(),
        seqnos,
        acked,
        conflicts,
        faults
    );
    // Liveness findings do not fail the run (see src/sim): they are
    // listed so that they are seen, and counted.
    eprintln!("simulation: {} seeds ended with a member not caught up (liveness){}", stuck.len(), if stuck.is_empty() { String::new() } else { format!(":\n  {}", stuck.iter().take(env_u64("LOCKSTEP_SIM_SHOW").unwrap_or(10) as usize).cloned().collect::<Vec<_>>().join("\n  ")) });
    assert!(
        failed.is_empty(),
        "{} of {} seeds failed; reproduce one with LOCKSTEP_SIM_SEED=<seed> cargo test --release -p lockstep-provider --test simulation -- --nocapture\n{}",
        failed.len(),
        count,
        failed.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// The same schedules with members that run the production group driver
/// (src/sim/driven.rs). `LOCKSTEP_SIM_DRIVEN_SEEDS` sets how many (default
/// 500); `LOCKSTEP_SIM_DRIVEN_SEED=S` replays one. Liveness findings are
/// listed, as above.
#[test]
fn the_production_driver_keeps_every_invariant() {
    if let Some(seed) = env_u64("LOCKSTEP_SIM_DRIVEN_SEED") {
        match lockstep::sim::run_driven(seed, true) {
            Ok(s) => return eprintln!("seed {seed}: {s:?}"),
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    let count = env_u64("LOCKSTEP_SIM_DRIVEN_SEEDS").unwrap_or(500);
    let mut failed = Vec::new();
    let mut stuck = Vec::new();
    let (mut seqnos, mut acked) = (0i64, 0usize);
    for seed in 1..=count {
        match lockstep::sim::run_driven(seed, false) {
            Ok(s) => {
                seqnos += s.seqnos;
                acked += s.acked;
                if !s.stuck.is_empty() {
                    stuck.push(format!("seed {seed}: {}", s.stuck.join("; ")));
                }
            }
            Err(e) => failed.push(format!("seed {seed}: {e}")),
        }
    }
    eprintln!("simulation with the production driver: {count} seeds, {} passed; {seqnos} seqnos ordered, {acked} writesets acknowledged; {} with a member not caught up", count as usize - failed.len(), stuck.len());
    for s in stuck.iter().take(env_u64("LOCKSTEP_SIM_SHOW").unwrap_or(10) as usize) {
        eprintln!("  {s}");
    }
    assert!(failed.is_empty(), "{} of {count} seeds failed; replay one with LOCKSTEP_SIM_DRIVEN_SEED=<seed>\n{}", failed.len(), failed.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
}
