//! Per-thread counters of one mariadbd, from /proc/PID/task: context
//! switches (each a hand-off between threads or a wait) and the CPU of the
//! provider's own threads (issue 52: what a commit costs, and who pays).
//!
//! lockstep names every thread it starts `lockstep-...`; Galera leaves its
//! own unnamed (they show as `mariadbd`), so for Galera the provider's
//! share is unknown rather than zero. Work the provider does on the
//! server's threads (a client's replicate and commit calls, an applier's
//! receive loop) counts as the server's for both.

use std::path::Path;

/// The prefix of lockstep's thread names (Linux keeps 15 bytes of a
/// name). The dash matters: the test runner's threads are `lockstep_cli-...`.
const PROVIDER_PREFIX: &str = "lockstep-";

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Threads {
    /// Voluntary plus involuntary context switches of the live threads.
    pub switches: u64,
    /// utime + stime of the provider's named threads, in clock ticks;
    /// None when no thread carries the provider's name.
    pub provider_ticks: Option<u64>,
}

/// The counters of every live thread of `pid`. A thread that ended
/// between the listing and its read is left out: its switches are lost,
/// as they are for any thread that ended during a run (the long-lived
/// ones do the work).
pub fn read(pid: u32) -> Option<Threads> {
    let mut threads = Threads::default();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        if let Some((name, ticks, switches)) = thread(&entry.path()) {
            threads.switches += switches;
            if name.starts_with(PROVIDER_PREFIX) {
                *threads.provider_ticks.get_or_insert(0) += ticks;
            }
        }
    }
    Some(threads)
}

fn thread(dir: &Path) -> Option<(String, u64, u64)> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let (name, ticks) = name_and_ticks(&stat)?;
    Some((name, ticks, switches(&status)?))
}

/// The command name (between the first `(` and the last `)`: a name may
/// hold either) and utime + stime of a /proc stat line.
fn name_and_ticks(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    Some((name, super::counters::parse_proc_stat_cpu(stat)?))
}

fn switches(status: &str) -> Option<u64> {
    let value = |key: &str| -> Option<u64> {
        status.lines().find_map(|l| l.strip_prefix(key))?.trim().parse().ok()
    };
    Some(value("voluntary_ctxt_switches:")? + value("nonvoluntary_ctxt_switches:")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_line_gives_its_name_ticks_and_switches() {
        let stat = "4242 (lockstep-tx (1)) S 1 4242 4242 0 -1 4194624 100 0 0 0 70 30 0 0 20 0 1 0 5 0 0";
        assert_eq!(name_and_ticks(stat), Some(("lockstep-tx (1)".to_string(), 100)));
        let status = "Name:\tmariadbd\nvoluntary_ctxt_switches:\t341\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(switches(status), Some(344));
        assert_eq!(switches("Name:\tmariadbd\n"), None);
    }

    #[test]
    fn this_process_has_threads_and_none_of_the_providers() {
        let own = read(std::process::id()).expect("our own /proc/self/task");
        assert!(own.switches > 0, "{own:?}");
        assert_eq!(own.provider_ticks, None, "the test runner names no thread lockstep-...");
    }
}
