//! Turning results into the printed report: the comparison table, the
//! server-side counters, and plain sentences on where the time goes.
//! Pure text from data, so it is tested without clusters.

use lockstep_config::keys;
use super::counters::Summary;
use super::plan::{BenchSpec, Cell};
use super::runner::{CellOutcome, ProviderRun};
use super::sysbench::SysbenchResult;
use std::fmt::Write;
use std::time::Duration;

/// The goal from the issue: lockstep at least as fast as Galera now.
const GOAL_NOW: f64 = 1.0;
const GOAL_LATER: f64 = 1.2;
/// Share of the CPU taken by processes outside the benchmark above which a
/// cell is called noisy.
const NOISE: f64 = 0.10;

/// The whole report as printed.
pub fn render(spec: &BenchSpec, runs: &[ProviderRun], wall: Duration) -> String {
    let cells = spec.cells();
    let mut footnotes = Footnotes::default();
    let mut out = header(spec, wall);
    out.push_str(&comparison_table(&cells, runs, &mut footnotes));
    out.push_str(&footnotes.render());
    out.push('\n');
    out.push_str(&counters_table(&cells, runs));
    out.push('\n');
    out.push_str(&verdict(&cells, runs));
    out.push_str(&noise(&cells, runs));
    out.push_str(&notes(spec, runs));
    out
}

fn header(spec: &BenchSpec, wall: Duration) -> String {
    let labels: Vec<String> = (0..spec.providers.len())
        .map(|i| spec.provider_slug(i))
        .collect();
    let mut out = format!(
        "lockstep bench: {} on {} nodes, sysbench {} x threads {} x targets {}\n",
        labels.join(" vs "),
        spec.nodes,
        spec.tests.join(","),
        join(&spec.threads),
        spec.targets
            .iter()
            .map(|t| t.label())
            .collect::<Vec<_>>()
            .join(","),
    );
    let _ = writeln!(
        out,
        "{} s measured per cell after {} s warm-up{}; {} tables x {} rows; mysqld: {}; wall time {}",
        spec.time,
        spec.warmup,
        match spec.rate {
            0 => String::new(),
            r => format!(", the clients offering {r} tps"),
        },
        spec.tables,
        spec.table_size,
        if spec.mysqld_options.is_empty() {
            "defaults".into()
        } else {
            spec.mysqld_options.join(" ")
        },
        minutes(wall)
    );
    match spec.wan_delay_ms {
        Some(ms) if spec.segments > 1 => {
            let _ = writeln!(out, "WAN: {} segments of consecutive nodes, {ms} ms apart one way (user-space proxy)", spec.segments);
        }
        Some(ms) => {
            let _ = writeln!(out, "WAN: node{} is {ms} ms away one way (user-space proxy)", spec.nodes);
        }
        None => {}
    }
    if spec.segments > 1 && spec.segment_option_given() {
        let _ = writeln!(out, "{} given for every node: the segments above are delays only", keys::GMCAST_SEGMENT.name());
    }
    let _ = writeln!(
        out,
        "\"all\": one sysbench, connections round-robin over every node's socket; p95 is sysbench's own over all of them.\n"
    );
    out
}

/// One row per cell: each provider's tps and p95, then each provider's
/// ratios to the first (the baseline).
fn comparison_table(cells: &[Cell], runs: &[ProviderRun], notes: &mut Footnotes) -> String {
    let mut head = vec!["test".to_string(), "threads".into(), "target".into()];
    for run in runs {
        head.push(format!("{} tps", run.label));
        head.push("p95 ms".into());
    }
    let base = runs.first().map(|r| r.label.clone()).unwrap_or_default();
    for run in runs.iter().skip(1) {
        head.push(format!("tps {}/{base}", run.label));
        head.push("p95 ratio".into());
    }
    let mut rows = vec![head];
    for (i, cell) in cells.iter().enumerate() {
        let mut row = cell_key(cell);
        for run in runs {
            match &run.cells[i] {
                CellOutcome::Measured { sysbench, .. } => {
                    row.push(format!("{:.1}", sysbench.tps));
                    row.push(format!("{:.2}", sysbench.p95_ms));
                }
                CellOutcome::Failed(reason) => {
                    row.push(format!("n/a[{}]", notes.mark(&run.label, reason)));
                    row.push("-".into());
                }
            }
        }
        for run in runs.iter().skip(1) {
            let (tps, p95) = ratios(measured(&runs[0], i), measured(run, i));
            row.push(tps.map_or("-".into(), |r| format!("{r:.2}")));
            row.push(p95.map_or("-".into(), |r| format!("{r:.2}")));
        }
        rows.push(row);
    }
    let mut out = table(&rows, 3);
    out.push_str("tps ratio > 1: faster than the baseline; p95 ratio < 1: lower latency.\n");
    out
}

fn cell_key(cell: &Cell) -> Vec<String> {
    vec![
        cell.test.clone(),
        cell.threads.to_string(),
        cell.target.label(),
    ]
}

fn measured(run: &ProviderRun, cell: usize) -> Option<(&SysbenchResult, &Summary)> {
    match run.cells.get(cell)? {
        CellOutcome::Measured { sysbench, counters } => Some((sysbench, counters.as_ref())),
        CellOutcome::Failed(_) => None,
    }
}

/// (tps other/base, p95 other/base), each when both sides have a number.
fn ratios(
    base: Option<(&SysbenchResult, &Summary)>,
    other: Option<(&SysbenchResult, &Summary)>,
) -> (Option<f64>, Option<f64>) {
    let (Some((b, _)), Some((o, _))) = (base, other) else {
        return (None, None);
    };
    let div = |x: f64, y: f64| (y > 0.0 && x.is_finite()).then(|| x / y);
    (div(o.tps, b.tps), div(o.p95_ms, b.p95_ms))
}

/// Server-side counters of every measured cell: the first place to look
/// when one provider is slower.
fn counters_table(cells: &[Cell], runs: &[ProviderRun]) -> String {
    let mut rows = vec![[
        "test",
        "threads",
        "target",
        "provider",
        "err/s",
        "fc paused",
        "fc sent",
        "cert/s",
        "bfa/s",
        "recvq avg",
        "apply win",
        "deps dist",
        "lag end",
        "cpu ms/txn",
        "all cpu",
        "csw/txn",
        "provider",
        "busy (other)",
    ]
    .map(String::from)
    .to_vec()];
    for (i, cell) in cells.iter().enumerate() {
        for run in runs {
            let Some((s, c)) = measured(run, i) else {
                continue;
            };
            let mut row = cell_key(cell);
            row.push(run.label.clone());
            row.extend(counter_columns(s, c));
            rows.push(row);
        }
    }
    let mut out = String::from(
        "Where the time goes (server counters over each measured run; fc paused: worst node; \
         fc sent: per node; recvq: worst node; lag end: writesets the \
         slowest node still had to apply when the run ended; cpu: all mariadbd per transaction; all cpu: with \
         sysbench's; csw: context switches of all mariadbd threads per transaction; provider: its own threads' share \
         of the servers' CPU (lockstep names them; Galera's are unnamed); busy: whole machine, (other): \
         processes outside the benchmark):\n",
    );
    if rows.len() == 1 {
        out.push_str("  (no measured cells)\n");
        return out;
    }
    out.push_str(&table(&rows, 4));
    out
}

fn counter_columns(s: &SysbenchResult, c: &Summary) -> Vec<String> {
    let per_s = |v: Option<f64>| match (v, c.seconds > 0.0) {
        (Some(v), true) => format!("{:.1}", v / c.seconds),
        _ => "-".into(),
    };
    let fc_sent: Vec<String> = c
        .fc_sent
        .iter()
        .map(|v| v.map_or("-".into(), |v| format!("{v:.0}")))
        .collect();
    vec![
        format!("{:.1}", s.errors_per_s),
        pct(c.fc_paused),
        fc_sent.join("/"),
        per_s(c.cert_failures),
        per_s(c.bf_aborts),
        c.recv_queue_avg
            .map_or("-".into(), |(v, n)| format!("{v:.1} n{n}")),
        num(c.apply_window, 2),
        num(c.deps_distance, 1),
        num(c.lag_at_end, 0),
        num(c.server_cpu_ms_per_txn, 3),
        num(c.cluster_cpu_ms_per_txn, 3),
        num(c.switches_per_txn, 1),
        pct(c.provider_share),
        format!("{} ({})", pct(c.machine_busy), pct(c.other_load)),
    ]
}

/// The goal check and, for every cell a provider loses, the counters that
/// differ most from the baseline, in words.
fn verdict(cells: &[Cell], runs: &[ProviderRun]) -> String {
    let mut out = String::new();
    let Some(base) = runs.first() else {
        return out;
    };
    for run in runs.iter().skip(1) {
        let ratios: Vec<(usize, f64)> = (0..cells.len())
            .filter_map(|i| Some((i, ratios(measured(base, i), measured(run, i)).0?)))
            .collect();
        let _ = writeln!(out, "{}/{}:", run.label, base.label);
        if ratios.is_empty() {
            let why = match (&base.setup_error, &run.setup_error) {
                (Some(e), _) => format!("{} (the baseline) did not run: {e}", base.label),
                (None, Some(e)) => e.clone(),
                (None, None) => "no cell measured on both providers".into(),
            };
            let _ = writeln!(out, "  no comparison: {why}");
            continue;
        }
        out.push_str(&goal_line(&ratios, cells.len()));
        for (i, ratio) in &ratios {
            let (b, o) = (measured(base, *i).unwrap(), measured(run, *i).unwrap());
            for lag in [backlog(&run.label, o), backlog(&base.label, b)]
                .into_iter()
                .flatten()
            {
                let _ = writeln!(
                    out,
                    "  caveat in {} ({ratio:.2}): {lag}",
                    cell_key(&cells[*i]).join(" ")
                );
            }
        }
        for (i, ratio) in ratios.iter().filter(|(_, r)| *r < GOAL_NOW) {
            let (b, o) = (measured(base, *i).unwrap(), measured(run, *i).unwrap());
            let reasons = explain(&base.label, b, o);
            let _ = writeln!(
                out,
                "  behind in {} ({ratio:.2}): {}",
                cell_key(&cells[*i]).join(" "),
                reasons.join("; ")
            );
        }
    }
    out
}

fn goal_line(ratios: &[(usize, f64)], cells: usize) -> String {
    let values: Vec<f64> = ratios.iter().map(|(_, r)| *r).collect();
    let geomean = (values.iter().map(|r| r.ln()).sum::<f64>() / values.len() as f64).exp();
    let worst = values.iter().copied().fold(f64::INFINITY, f64::min);
    let met_now = values.iter().filter(|r| **r >= GOAL_NOW).count();
    let met_later = values.iter().filter(|r| **r >= GOAL_LATER).count();
    format!(
        "  tps ratio geometric mean {geomean:.2}, worst {worst:.2} over {} of {cells} cells; \
         >= {GOAL_NOW} in {met_now}, >= {GOAL_LATER} in {met_later}\n",
        values.len()
    )
}

/// A provider whose replicas ended a run more than a second of work behind
/// was not holding its throughput: flow control let the backlog grow.
fn backlog(label: &str, (s, c): (&SysbenchResult, &Summary)) -> Option<String> {
    let lag = c.lag_at_end?;
    let seconds = lag / s.tps.max(1e-9);
    (seconds > 1.0).then(|| {
        format!(
            "{label}'s slowest node was {lag:.0} writesets ({seconds:.1} s of work) behind at the end \
             (recv queue avg {}, fc paused {}): part of its tps is backlog, not sustained throughput",
            c.recv_queue_avg.map_or("-".into(), |(q, n)| format!("{q:.0} on node{n}")),
            pct(c.fc_paused)
        )
    })
}

/// Why `other` is slower than `base` in one cell, from the counters.
fn explain(
    base_label: &str,
    (bs, bc): (&SysbenchResult, &Summary),
    (os, oc): (&SysbenchResult, &Summary),
) -> Vec<String> {
    let mut reasons = Vec::new();
    if let (Some(o), b) = (oc.fc_paused, bc.fc_paused.unwrap_or(0.0)) {
        if o - b > 0.05 {
            let queue = oc.recv_queue_avg.map_or(String::new(), |(q, n)| {
                format!(", recv queue avg {q:.1} on node{n}")
            });
            reasons.push(format!(
                "flow control paused it {} of the run ({base_label} {}){queue}: appliers fall behind",
                pct(Some(o)),
                pct(Some(b))
            ));
        }
    }
    if let (Some(o), Some(b)) = (oc.server_cpu_ms_per_txn, bc.server_cpu_ms_per_txn) {
        if o > b * 1.1 {
            reasons.push(format!(
                "servers spend {o:.3} ms CPU per transaction ({base_label} {b:.3}): \
                 on shared cores that caps tps"
            ));
        }
    }
    let conflicts = |s: &SysbenchResult| s.errors_per_s / s.tps.max(1e-9) * 1000.0;
    if conflicts(os) > conflicts(bs) * 1.5 && conflicts(os) > 5.0 {
        reasons.push(format!(
            "{:.0} aborted per 1000 transactions ({base_label} {:.0}): more lost certifications / BF aborts",
            conflicts(os),
            conflicts(bs)
        ));
    }
    if let (Some(o), Some(b)) = (oc.apply_window, bc.apply_window) {
        if o < b * 0.7 {
            reasons.push(format!(
                "apply window {o:.2} ({base_label} {b:.2}): less parallel applying"
            ));
        }
    }
    if let (Some(o), Some(b)) = (oc.machine_busy, bc.machine_busy) {
        if o < b - 0.1 {
            reasons.push(format!(
                "the machine was busy {} ({base_label} {}): commits wait instead of work, \
                 the time is in the ordering round trips",
                pct(Some(o)),
                pct(Some(b))
            ));
        }
    }
    if reasons.is_empty() {
        reasons.push(format!(
            "no counter stands out (p95 {:.2} ms vs {:.2}): profile the provider with perf",
            os.p95_ms, bs.p95_ms
        ));
    }
    reasons
}

/// Cells during which processes outside the benchmark took a noticeable
/// share of the CPU: their numbers understate the provider.
fn noise(cells: &[Cell], runs: &[ProviderRun]) -> String {
    let mut noisy = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        for run in runs {
            let other = measured(run, i).and_then(|(_, c)| c.other_load);
            if let Some(other) = other.filter(|o| *o > NOISE) {
                noisy.push(format!(
                    "{} {} ({})",
                    run.label,
                    cell_key(cell).join(" "),
                    pct(Some(other))
                ));
            }
        }
    }
    if noisy.is_empty() {
        return String::new();
    }
    format!(
        "Noise: other processes used over {} of the CPU during: {}; rerun on a quiet machine to trust those cells.\n",
        pct(Some(NOISE)),
        noisy.join(", ")
    )
}

fn notes(spec: &BenchSpec, runs: &[ProviderRun]) -> String {
    let mut out = String::from("\nNotes:\n");
    for (i, run) in runs.iter().enumerate() {
        for note in &run.notes {
            let _ = writeln!(out, "  {}: {note}", run.label);
        }
        let _ = writeln!(
            out,
            "  {}: raw sysbench outputs and per-node counters (counters.tsv) in {}",
            run.label,
            spec.provider_dir(i).display()
        );
    }
    out
}

/// Footnotes for n/a cells: one number per distinct reason.
#[derive(Default)]
struct Footnotes {
    reasons: Vec<String>,
}

impl Footnotes {
    fn mark(&mut self, label: &str, reason: &str) -> usize {
        let text = format!("{label}: {reason}");
        match self.reasons.iter().position(|r| *r == text) {
            Some(i) => i + 1,
            None => {
                self.reasons.push(text);
                self.reasons.len()
            }
        }
    }

    fn render(&self) -> String {
        self.reasons
            .iter()
            .enumerate()
            .map(|(i, r)| format!("[{}] n/a ({r})\n", i + 1))
            .collect()
    }
}

/// Machine-readable results: one line per provider and cell.
pub fn results_tsv(spec: &BenchSpec, runs: &[ProviderRun]) -> String {
    let mut out = String::from(
        "provider\ttest\tthreads\ttarget\ttps\tp95_ms\tavg_ms\terrors_per_s\treconnects_per_s\t\
         fc_paused\tcert_failures\tbf_aborts\trecv_queue_avg\tapply_window\tdeps_distance\tlag_at_end\t\
         cpu_ms_per_txn\tcluster_cpu_ms_per_txn\tswitches_per_txn\tprovider_share\tmachine_busy\tstatus\n",
    );
    for (i, cell) in spec.cells().iter().enumerate() {
        for run in runs {
            let key = format!(
                "{}\t{}\t{}\t{}",
                run.label,
                cell.test,
                cell.threads,
                cell.target.label()
            );
            let line = match &run.cells[i] {
                CellOutcome::Measured {
                    sysbench: s,
                    counters: c,
                } => format!(
                    "{key}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\tok",
                    s.tps,
                    s.p95_ms,
                    s.avg_ms,
                    s.errors_per_s,
                    s.reconnects_per_s,
                    num(c.fc_paused, 4),
                    num(c.cert_failures, 0),
                    num(c.bf_aborts, 0),
                    num(c.recv_queue_avg.map(|(v, _)| v), 2),
                    num(c.apply_window, 2),
                    num(c.deps_distance, 1),
                    num(c.lag_at_end, 0),
                    num(c.server_cpu_ms_per_txn, 3),
                    num(c.cluster_cpu_ms_per_txn, 3),
                    num(c.switches_per_txn, 2),
                    num(c.provider_share, 3),
                    num(c.machine_busy, 3),
                ),
                CellOutcome::Failed(reason) => {
                    format!(
                        "{key}{}\tn/a: {}",
                        "\t-".repeat(17),
                        reason.replace('\t', " ")
                    )
                }
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// Left-aligns the first `text_columns` columns, right-aligns the rest.
fn table(rows: &[Vec<String>], text_columns: usize) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, text)| match c < text_columns {
                true => format!("{text:<w$}", w = widths[c]),
                false => format!("{text:>w$}", w = widths[c]),
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

fn join(values: &[u32]) -> String {
    values
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}m{:02}s", s / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plan::Target;

    fn spec() -> BenchSpec {
        BenchSpec {
            tests: vec!["oltp_update_index".into()],
            threads: vec![8],
            targets: vec![Target::Node(1), Target::All],
            ..BenchSpec::default()
        }
    }

    fn measured_cell(tps: f64, p95: f64, paused: f64, cpu: f64) -> CellOutcome {
        CellOutcome::Measured {
            sysbench: SysbenchResult {
                tps,
                p95_ms: p95,
                transactions: (tps * 30.0) as u64,
                ..SysbenchResult::default()
            },
            counters: Box::new(Summary {
                seconds: 30.0,
                fc_paused: Some(paused),
                fc_sent: vec![Some(0.0), Some(3.0), Some(0.0)],
                cert_failures: Some(60.0),
                recv_queue_avg: Some((2.5, 2)),
                server_cpu_ms_per_txn: Some(cpu),
                machine_busy: Some(0.97),
                other_load: Some(paused / 2.0),
                lag_at_end: Some(tps * paused * 10.0),
                ..Summary::default()
            }),
        }
    }

    fn run(label: &str, cells: Vec<CellOutcome>) -> ProviderRun {
        ProviderRun {
            label: label.into(),
            setup_error: None,
            cells,
            notes: vec![],
        }
    }

    #[test]
    fn failed_provider_prints_na_and_keeps_the_baseline() {
        let reason = "node2 exited 0.1s after it was started: this lockstep build only runs one-node clusters";
        let runs = vec![
            run(
                "galera",
                vec![
                    measured_cell(2377.25, 6.21, 0.0, 0.4),
                    measured_cell(1500.0, 9.0, 0.1, 0.5),
                ],
            ),
            ProviderRun {
                setup_error: Some(reason.into()),
                ..run(
                    "lockstep",
                    vec![
                        CellOutcome::Failed(reason.into()),
                        CellOutcome::Failed(reason.into()),
                    ],
                )
            },
        ];
        let text = render(&spec(), &runs, Duration::from_secs(95));
        assert!(text.contains("2377.2"), "{text}");
        assert!(text.contains("n/a[1]"), "{text}");
        assert!(!text.contains("n/a[2]"), "one footnote per reason: {text}");
        assert!(
            text.contains(&format!("[1] n/a (lockstep: {reason})")),
            "{text}"
        );
        assert!(text.contains("no comparison: node2 exited"), "{text}");
        assert!(text.contains("wall time 1m35s"), "{text}");
        let tsv = results_tsv(&spec(), &runs);
        assert_eq!(tsv.lines().count(), 5);
        assert!(tsv.lines().all(|l| l.split('\t').count() == 22), "{tsv}");
    }

    #[test]
    fn ratios_and_explanations() {
        let runs = vec![
            run(
                "galera",
                vec![
                    measured_cell(2000.0, 6.0, 0.02, 0.40),
                    measured_cell(1000.0, 10.0, 0.0, 0.5),
                ],
            ),
            run(
                "lockstep",
                vec![
                    measured_cell(1500.0, 9.0, 0.30, 0.60),
                    measured_cell(1300.0, 8.0, 0.0, 0.5),
                ],
            ),
        ];
        let text = render(&spec(), &runs, Duration::from_secs(60));
        let row = text
            .lines()
            .find(|l| l.starts_with("oltp_update_index  8"))
            .unwrap();
        assert!(row.ends_with("0.75       1.50"), "{row}");
        assert!(text.contains("tps ratio geometric mean 0.99, worst 0.75 over 2 of 2 cells; >= 1 in 1, >= 1.2 in 1"), "{text}");
        assert!(text.contains("behind in oltp_update_index 8 node1 (0.75): flow control paused it 30.0% of the run (galera 2.0%)"), "{text}");
        assert!(
            text.contains("0.600 ms CPU per transaction (galera 0.400)"),
            "{text}"
        );
        assert!(
            !text.contains("behind in oltp_update_index 8 all"),
            "{text}"
        );
        assert!(text.contains("0/3/0"), "fc sent per node: {text}");
        assert!(text.contains("2.5 n2"), "{text}");
        assert!(
            text.contains("caveat in oltp_update_index 8 node1 (0.75): lockstep's slowest node was 4500 writesets (3.0 s of work) behind"),
            "{text}"
        );
        assert!(!text.contains("galera's slowest"), "{text}");
        assert!(
            text.contains("Noise: other processes used over 10.0% of the CPU during: lockstep oltp_update_index 8 node1 (15.0%);"),
            "{text}"
        );
    }

    #[test]
    fn tables_align() {
        let rows = vec![
            vec!["a".to_string(), "1".into()],
            vec!["long".to_string(), "100".into()],
        ];
        assert_eq!(table(&rows, 1), "a       1\nlong  100\n");
    }
}
