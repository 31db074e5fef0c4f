//! Scenarios that run the cells matrix once per setting, every provider
//! one after the other within a setting, and compare across settings:
//!
//! - `wan`: the last node near (through the delay proxy at 0 ms, so both
//!   settings pay the proxy's cost), then `--wan-delay-ms` away (default
//!   100): tps and p95 against concurrency;
//! - `slow-node`: near, `--wan-delay-ms` away (default 7), and that far
//!   with larger send windows (`evs.send_window` and
//!   `evs.user_send_window` 512, what operators set for a Galera WAN);
//! - `lan` (or `cells`) with `--repeat N` above 1: the same matrix N
//!   times, each on fresh clusters, averaged.
//!
//! Each setting's raw outputs go to `DIR/<setting>/` as the plain matrix's
//! do. The report prints every cell's tps and p95 per setting and the
//! ratios that scenario is judged by; `NAME.json` holds every figure and
//! `NAME.svg` charts tps and p95 against threads, a line per provider and
//! setting, a pair of panels per test (the first target's cells).

use super::chart::{self, Panel, Series};
use super::plan::{BenchSpec, Cell, Scenario};
use super::counters::Summary;
use super::runner::{self, CellOutcome, ProviderRun};
use super::sysbench::SysbenchResult;
use crate::cluster::{provider_setting, Error, Result};
use crate::workload::Latency;
use lockstep_config::keys;
use std::path::PathBuf;
use std::time::Duration;

/// Galera's send windows for a WAN (its defaults are 4 and 2).
fn wan_windows() -> [String; 2] {
    [provider_setting(keys::EVS_SEND_WINDOW, 512), provider_setting(keys::EVS_USER_SEND_WINDOW, 512)]
}

/// One run of the matrix: what differs from the others.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    pub label: String,
    pub delay_ms: Option<u32>,
    pub provider_options: Vec<String>,
}

/// The settings a scenario compares, in run order; the first is the
/// baseline of the across-setting ratios.
pub fn settings(spec: &BenchSpec) -> Vec<Setting> {
    let far = spec.wan_delay_ms.unwrap_or(0);
    let at = |label: String, delay_ms, options: &[String]| Setting { label, delay_ms, provider_options: options.to_vec() };
    match spec.scenario {
        Scenario::Wan => vec![at("near".into(), Some(0), &[]), at(format!("{far}ms"), Some(far), &[])],
        Scenario::SlowNode => vec![
            at("near".into(), Some(0), &[]),
            at(format!("{far}ms"), Some(far), &[]),
            at(format!("{far}ms-windows"), Some(far), &wan_windows()),
        ],
        _ => (1..=spec.repeat).map(|i| at(format!("rep{i}"), spec.wan_delay_ms, &[])).collect(),
    }
}

pub struct SettingRun {
    pub setting: Setting,
    pub runs: Vec<ProviderRun>,
}

/// Runs every setting; wan and slow-node with `--repeat N` run N rounds
/// of all their settings (round after round, so that a drift of the
/// machine weighs on every setting alike) and keep each cell's mean.
pub fn run(spec: &BenchSpec, log: &mut dyn FnMut(&str)) -> Vec<SettingRun> {
    let all = settings(spec);
    let rounds = rounds(spec);
    let mut measured: Vec<Vec<Vec<ProviderRun>>> = all.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        for (i, setting) in all.iter().enumerate() {
            let of = if rounds > 1 { format!(", round {round} of {rounds}") } else { String::new() };
            log(&format!("setting {} of {}: {}{of}", i + 1, all.len(), setting.label));
            let mut one = spec.clone();
            one.wan_delay_ms = setting.delay_ms;
            one.provider_options.extend(setting.provider_options.iter().cloned());
            one.dir = if rounds > 1 { spec.dir.join(&setting.label).join(format!("round{round}")) } else { spec.dir.join(&setting.label) };
            measured[i].push(runner::run(&one, log));
        }
    }
    all.into_iter().zip(measured).map(|(setting, rounds)| SettingRun { setting, runs: mean_of_rounds(rounds) }).collect()
}

/// One run per provider whose cells hold the mean tps and p95 of the
/// rounds that measured them (the first such round's other figures).
fn mean_of_rounds(mut rounds: Vec<Vec<ProviderRun>>) -> Vec<ProviderRun> {
    if rounds.len() == 1 {
        return rounds.pop().expect("one round");
    }
    let mut merged = rounds.remove(0);
    for (p, run) in merged.iter_mut().enumerate() {
        for (c, cell) in run.cells.iter_mut().enumerate() {
            let same_cell = rounds.iter().filter_map(|r| r.get(p)?.cells.get(c));
            *cell = mean_cell(std::mem::replace(cell, CellOutcome::Failed(String::new())), same_cell);
        }
        for other in rounds.iter().filter_map(|r| r.get(p)) {
            run.notes.extend(other.notes.iter().cloned());
            run.setup_error = run.setup_error.take().or_else(|| other.setup_error.clone());
        }
        // A round that could not start says so in the notes; the setting
        // has figures if another round measured some.
        if run.cells.iter().any(|c| matches!(c, CellOutcome::Measured { .. })) {
            if let Some(e) = run.setup_error.take() {
                run.notes.push(format!("a round did not run: {e}"));
            }
        }
    }
    merged
}

/// `first` with the mean tps and p95 of it and `others` that were
/// measured; `first`'s failure if none was.
fn mean_cell<'a>(first: CellOutcome, others: impl Iterator<Item = &'a CellOutcome>) -> CellOutcome {
    let mut got: Vec<(SysbenchResult, Box<Summary>)> = others
        .filter_map(|c| match c {
            CellOutcome::Measured { sysbench, counters } => Some((sysbench.clone(), counters.clone())),
            CellOutcome::Failed(_) => None,
        })
        .collect();
    match first {
        CellOutcome::Measured { sysbench, counters } => got.insert(0, (sysbench, counters)),
        failed if got.is_empty() => return failed,
        CellOutcome::Failed(_) => {}
    }
    let of = |pick: fn(&SysbenchResult) -> f64| mean(&got.iter().map(|g| pick(&g.0)).collect::<Vec<_>>()).expect("a measured round");
    let (tps, p95_ms) = (of(|s| s.tps), of(|s| s.p95_ms));
    let (sysbench, counters) = got.swap_remove(0);
    CellOutcome::Measured { sysbench: SysbenchResult { tps, p95_ms, ..sysbench }, counters }
}

/// (tps, p95 ms) of provider `p`'s cell `c` in setting `s`, if measured.
fn figures(runs: &[SettingRun], s: usize, p: usize, c: usize) -> Option<(f64, f64)> {
    match runs.get(s)?.runs.get(p)?.cells.get(c)? {
        CellOutcome::Measured { sysbench, .. } => Some((sysbench.tps, sysbench.p95_ms)),
        CellOutcome::Failed(_) => None,
    }
}

/// What provider `p`'s cell `c` in setting `s` cost: (CPU ms per
/// transaction of the whole cluster with sysbench, context switches per
/// transaction of the servers), if measured.
fn cost(runs: &[SettingRun], s: usize, p: usize, c: usize) -> Option<(f64, f64)> {
    match runs.get(s)?.runs.get(p)?.cells.get(c)? {
        CellOutcome::Measured { counters, .. } => Some((counters.cluster_cpu_ms_per_txn?, counters.switches_per_txn?)),
        CellOutcome::Failed(_) => None,
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn geomean(ratios: &[f64]) -> Option<f64> {
    (!ratios.is_empty()).then(|| (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp())
}

/// The scenario's name, which its report, JSON and chart files carry.
pub fn name(spec: &BenchSpec) -> &'static str {
    match spec.scenario {
        Scenario::Wan => "wan",
        Scenario::SlowNode => "slow-node",
        _ => "lan",
    }
}

fn cell_label(c: &Cell) -> String {
    format!("{} {}t {}", c.test, c.threads, c.target.label())
}

pub fn render(spec: &BenchSpec, runs: &[SettingRun], took: Duration) -> String {
    let cells = spec.cells();
    let labels: Vec<&str> = runs.iter().map(|r| r.setting.label.as_str()).collect();
    let mut out = format!("lockstep bench --scenario {}: {} settings x {} providers x {} cells{}, {:.0} min\n\n", name(spec), runs.len(), spec.providers.len(), cells.len(), rounds_note(spec), took.as_secs_f64() / 60.0);
    out.push_str(&format!("{:<34} {:<10} {}\n", "cell", "provider", labels.iter().map(|l| format!(" {:>23}", format!("{l} tps / p95 ms"))).collect::<String>()));
    for (c, cell) in cells.iter().enumerate() {
        for p in 0..spec.providers.len() {
            let row: String = (0..runs.len())
                .map(|s| match figures(runs, s, p, c) {
                    Some((tps, p95)) => format!(" {:>23}", format!("{tps:.0} / {p95:.2}")),
                    None => format!(" {:>23}", "n/a"),
                })
                .collect();
            out.push_str(&format!("{:<34} {:<10} {row}\n", if p == 0 { cell_label(cell) } else { String::new() }, spec.provider_slug(p)));
        }
    }
    for p in 0..spec.providers.len() {
        failures(spec, runs, p, &mut out);
    }
    match spec.scenario {
        Scenario::Wan | Scenario::SlowNode => against_first_setting(spec, runs, &mut out),
        _ => averaged(spec, runs, &mut out),
    }
    out
}

/// How many rounds of its settings a run makes: --repeat for wan and
/// slow-node; lan repeats as settings of its own (see `settings`).
fn rounds(spec: &BenchSpec) -> u32 {
    match spec.scenario {
        Scenario::Wan | Scenario::SlowNode => spec.repeat.max(1),
        _ => 1,
    }
}

/// How many rounds each figure averages, for the report's first line.
fn rounds_note(spec: &BenchSpec) -> String {
    match rounds(spec) {
        1 => String::new(),
        n => format!(" x {n} rounds (each figure their mean)"),
    }
}

/// Why a provider has no figures, once per setting.
fn failures(spec: &BenchSpec, runs: &[SettingRun], p: usize, out: &mut String) {
    for r in runs {
        if let Some(e) = r.runs.get(p).and_then(|run| run.setup_error.as_ref()) {
            out.push_str(&format!("{} in {}: n/a ({e})\n", spec.provider_slug(p), r.setting.label));
        }
    }
}

/// wan, slow-node: each setting's tps over the first's, per provider and
/// cell (how much a far node costs each), and at the last setting each
/// provider over the first provider.
fn against_first_setting(spec: &BenchSpec, runs: &[SettingRun], out: &mut String) {
    let cells = spec.cells();
    out.push_str(&format!("\ntps against {} (1.00 = no loss):\n", runs[0].setting.label));
    for (c, cell) in cells.iter().enumerate() {
        for p in 0..spec.providers.len() {
            let base = figures(runs, 0, p, c);
            let ratios: String = (1..runs.len())
                .map(|s| match (base, figures(runs, s, p, c)) {
                    (Some((b, _)), Some((t, _))) if b > 0.0 => format!("  {}: {:.2}", runs[s].setting.label, t / b),
                    _ => format!("  {}: n/a", runs[s].setting.label),
                })
                .collect();
            out.push_str(&format!("  {:<34} {:<10}{ratios}\n", cell_label(cell), spec.provider_slug(p)));
        }
    }
    // One provider: nothing to compare it with.
    if spec.providers.len() < 2 {
        return;
    }
    let last = runs.len() - 1;
    out.push_str(&format!("\nat {}, tps over {}'s:\n", runs[last].setting.label, spec.provider_slug(0)));
    for (c, cell) in cells.iter().enumerate() {
        let base = figures(runs, last, 0, c);
        let ratios: String = (1..spec.providers.len())
            .map(|p| match (base, figures(runs, last, p, c)) {
                (Some((b, _)), Some((t, _))) if b > 0.0 => format!("  {}: {:.2}", spec.provider_slug(p), t / b),
                _ => format!("  {}: n/a", spec.provider_slug(p)),
            })
            .collect();
        out.push_str(&format!("  {:<34}{ratios}\n", cell_label(cell)));
    }
}

/// lan --repeat: the mean of the repetitions per provider and cell, its
/// ratio to the first provider's, their geometric mean and the lowest,
/// and whether the mean p95 is worse.
fn averaged(spec: &BenchSpec, runs: &[SettingRun], out: &mut String) {
    let cells = spec.cells();
    let over_settings = |p: usize, c: usize, of: fn(&[SettingRun], usize, usize, usize) -> Option<(f64, f64)>| -> Option<(f64, f64)> {
        let got: Vec<(f64, f64)> = (0..runs.len()).filter_map(|s| of(runs, s, p, c)).collect();
        Some((mean(&got.iter().map(|f| f.0).collect::<Vec<_>>())?, mean(&got.iter().map(|f| f.1).collect::<Vec<_>>())?))
    };
    let means = |p: usize, c: usize| over_settings(p, c, figures);
    out.push_str(&format!("\nmean of {} repetitions, ratio to {}:\n", runs.len(), spec.provider_slug(0)));
    for p in 1..spec.providers.len() {
        let mut ratios = Vec::new();
        for (c, cell) in cells.iter().enumerate() {
            let line = match (means(0, c), means(p, c)) {
                (Some((bt, bp)), Some((t, p95))) if bt > 0.0 => {
                    ratios.push(t / bt);
                    format!("tps {:.0} vs {:.0} ({:.2}), p95 {:.2} vs {:.2} ms{}", t, bt, t / bt, p95, bp, if p95 > bp { " (worse)" } else { "" })
                }
                _ => "n/a".into(),
            };
            out.push_str(&format!("  {:<34} {}: {line}\n", cell_label(cell), spec.provider_slug(p)));
        }
        if let (Some(g), Some(low)) = (geomean(&ratios), ratios.iter().copied().reduce(f64::min)) {
            out.push_str(&format!("  {}: geometric mean {:.2}, lowest cell {:.2}, over {} cells\n", spec.provider_slug(p), g, low, ratios.len()));
        }
        cpu_per_commit(spec, p, |p, c| over_settings(p, c, cost), out);
        follower_delay(spec, runs, p, out);
    }
}

/// Issue 52's measure of a follower's freshness: per cell with one writer
/// node, each follower's delays pooled over the repetitions (one p99 of
/// all rows, not a mean of p99s, which a single slow round would sway),
/// provider `p` against the first, and the highest p99 ratio.
fn follower_delay(spec: &BenchSpec, runs: &[SettingRun], p: usize, out: &mut String) {
    let mut ratios = Vec::new();
    for (c, cell) in spec.cells().iter().enumerate() {
        let (base, other) = (pooled_delays(runs, 0, c), pooled_delays(runs, p, c));
        for (node, base_seen) in &base {
            let Some((_, seen)) = other.iter().find(|(n, _)| n == node) else { continue };
            if base_seen.is_empty() || seen.is_empty() {
                continue;
            }
            let (b, l) = (Latency::of(base_seen.clone()), Latency::of(seen.clone()));
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            let ratio = ms(l.p99) / ms(b.p99).max(1e-3);
            ratios.push(ratio);
            out.push_str(&format!(
                "  {:<34} {}: node{node} seen after node1's commit p50 {:.2} vs {:.2} ms, p99 {:.2} vs {:.2} ms ({ratio:.2}; {} and {} rows)\n",
                cell_label(cell),
                spec.provider_slug(p),
                ms(l.p50),
                ms(b.p50),
                ms(l.p99),
                ms(b.p99),
                seen.len(),
                base_seen.len()
            ));
        }
    }
    if let Some(high) = ratios.iter().copied().reduce(f64::max) {
        out.push_str(&format!("  {}: follower delay p99, highest {:.2} of {}'s, over {} followers and cells\n", spec.provider_slug(p), high, spec.provider_slug(0), ratios.len()));
    }
}

/// Provider `p`'s probe delays in cell `c`, per follower, over every
/// repetition that measured it.
fn pooled_delays(runs: &[SettingRun], p: usize, c: usize) -> Vec<(usize, Vec<Duration>)> {
    let mut pooled: Vec<(usize, Vec<Duration>)> = Vec::new();
    let measured = runs.iter().filter_map(|r| match r.runs.get(p)?.cells.get(c)? {
        CellOutcome::Measured { counters, .. } => Some(&counters.follower_delays),
        CellOutcome::Failed(_) => None,
    });
    for d in measured.flatten() {
        match pooled.iter_mut().find(|(n, _)| *n == d.node) {
            Some((_, seen)) => seen.extend_from_slice(&d.seen),
            None => pooled.push((d.node, d.seen.clone())),
        }
    }
    pooled
}

/// Issue 52's measure of a commit's cost: CPU of the whole cluster with
/// sysbench and the servers' context switches per transaction, provider
/// `p` against the first, and the highest ratio over the cells.
fn cpu_per_commit(spec: &BenchSpec, p: usize, means: impl Fn(usize, usize) -> Option<(f64, f64)>, out: &mut String) {
    let mut ratios = Vec::new();
    for (c, cell) in spec.cells().iter().enumerate() {
        let line = match (means(0, c), means(p, c)) {
            (Some((bcpu, bsw)), Some((cpu, sw))) if bcpu > 0.0 => {
                ratios.push(cpu / bcpu);
                format!("cpu {cpu:.3} vs {bcpu:.3} ms/txn ({:.2}), context switches {sw:.1} vs {bsw:.1} per txn", cpu / bcpu)
            }
            _ => "cpu n/a".into(),
        };
        out.push_str(&format!("  {:<34} {}: {line}\n", cell_label(cell), spec.provider_slug(p)));
    }
    if let Some(high) = ratios.iter().copied().reduce(f64::max) {
        out.push_str(&format!("  {}: CPU per transaction, highest cell {:.2} of {}'s, over {} cells\n", spec.provider_slug(p), high, spec.provider_slug(0), ratios.len()));
    }
}

pub fn write_outputs(spec: &BenchSpec, runs: &[SettingRun]) -> Result<Vec<PathBuf>> {
    let json_path = spec.dir.join(format!("{}.json", name(spec)));
    let text = serde_json::to_string_pretty(&to_json(spec, runs)).map_err(|e| Error::msg(e.to_string()))?;
    std::fs::write(&json_path, text).map_err(|e| Error::io(format!("writing {}", json_path.display()), e))?;
    let svg_path = spec.dir.join(format!("{}.svg", name(spec)));
    let title = format!("{}: tps and p95 against threads, per provider and setting", name(spec));
    chart::lines(&svg_path, &title, "threads", &panels(spec, runs), &[])?;
    Ok(vec![json_path, svg_path])
}

fn to_json(spec: &BenchSpec, runs: &[SettingRun]) -> serde_json::Value {
    use serde_json::json;
    let cells = spec.cells();
    json!({
        "scenario": name(spec),
        "time_s": spec.time,
        "rounds": rounds(spec),
        "settings": runs.iter().enumerate().map(|(s, r)| json!({
            "label": r.setting.label,
            "delay_ms": r.setting.delay_ms,
            "provider_options": r.setting.provider_options,
            "providers": (0..spec.providers.len()).map(|p| json!({
                "provider": spec.provider_slug(p),
                "cells": cells.iter().enumerate().map(|(c, cell)| match (figures(runs, s, p, c), cost(runs, s, p, c)) {
                    (Some((tps, p95)), cost) => json!({ "test": cell.test, "threads": cell.threads, "target": cell.target.label(), "tps": tps, "p95_ms": p95,
                        "cpu_ms_per_txn": cost.map(|c| c.0), "switches_per_txn": cost.map(|c| c.1) }),
                    (None, _) => json!({ "test": cell.test, "threads": cell.threads, "target": cell.target.label(), "error": "not measured" }),
                }).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// A tps panel and a p95 panel per test, over the first target's cells.
fn panels(spec: &BenchSpec, runs: &[SettingRun]) -> Vec<Panel> {
    let cells = spec.cells();
    let first = spec.targets[0];
    let mut panels = Vec::new();
    for test in &spec.tests {
        for (quantity, pick) in [("tps", 0usize), ("p95 ms", 1)] {
            let mut series = Vec::new();
            for (s, r) in runs.iter().enumerate() {
                for p in 0..spec.providers.len() {
                    let points = cells
                        .iter()
                        .enumerate()
                        .filter(|(_, cell)| &cell.test == test && cell.target == first)
                        .filter_map(|(c, cell)| figures(runs, s, p, c).map(|f| (cell.threads as f64, if pick == 0 { f.0 } else { f.1 })))
                        .collect();
                    series.push(Series { label: format!("{} {}", spec.provider_slug(p), r.setting.label), points });
                }
            }
            panels.push(Panel { y_label: format!("{test} {quantity}"), series });
        }
    }
    panels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_for(scenario: Scenario) -> BenchSpec {
        BenchSpec { scenario, ..BenchSpec::default() }
    }

    #[test]
    fn wan_compares_near_with_far_and_slow_node_adds_the_windows() {
        let mut wan = spec_for(Scenario::Wan);
        wan.wan_delay_ms = Some(100);
        let s = settings(&wan);
        assert_eq!(s.iter().map(|s| (s.label.as_str(), s.delay_ms)).collect::<Vec<_>>(), [("near", Some(0)), ("100ms", Some(100))]);
        let mut slow = spec_for(Scenario::SlowNode);
        slow.wan_delay_ms = Some(7);
        let s = settings(&slow);
        assert_eq!(s.len(), 3);
        assert_eq!(s[2].provider_options, ["evs.send_window=512", "evs.user_send_window=512"]);
        assert_eq!(s[2].delay_ms, Some(7));
    }

    #[test]
    fn lan_repeats_the_same_setting() {
        let mut lan = spec_for(Scenario::Cells);
        lan.repeat = 3;
        let s = settings(&lan);
        assert_eq!(s.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(), ["rep1", "rep2", "rep3"]);
        assert!(s.iter().all(|s| s.delay_ms.is_none() && s.provider_options.is_empty()));
    }

    fn cell(tps: f64, p95_ms: f64) -> CellOutcome {
        let sysbench = SysbenchResult { tps, p95_ms, ..Default::default() };
        CellOutcome::Measured { sysbench, counters: Box::default() }
    }

    fn provider_run(cells: Vec<CellOutcome>, setup_error: Option<&str>) -> ProviderRun {
        ProviderRun { label: "lockstep".into(), setup_error: setup_error.map(String::from), cells, notes: vec![] }
    }

    #[test]
    fn rounds_average_each_cell_over_the_rounds_that_measured_it() {
        let rounds = vec![
            vec![provider_run(vec![cell(100.0, 2.0), CellOutcome::Failed("lost".into())], None)],
            vec![provider_run(vec![cell(200.0, 4.0), cell(50.0, 1.0)], None)],
            vec![provider_run(vec![], Some("cluster did not start"))],
        ];
        let merged = mean_of_rounds(rounds);
        let figures: Vec<_> = merged[0].cells.iter().map(|c| match c {
            CellOutcome::Measured { sysbench, .. } => Some((sysbench.tps, sysbench.p95_ms)),
            CellOutcome::Failed(_) => None,
        }).collect();
        assert_eq!(figures, [Some((150.0, 3.0)), Some((50.0, 1.0))]);
        assert_eq!(merged[0].setup_error, None, "other rounds measured");
        assert!(merged[0].notes.iter().any(|n| n.contains("cluster did not start")));
    }

    #[test]
    fn a_sweep_of_one_provider_compares_settings_and_no_providers() {
        let mut slow = spec_for(Scenario::SlowNode);
        (slow.wan_delay_ms, slow.tests, slow.threads, slow.targets) = (Some(7), vec!["oltp_update_index".into()], vec![16], vec![slow.targets[0]]);
        let report = |spec: &BenchSpec| {
            let runs: Vec<SettingRun> = settings(spec)
                .into_iter()
                .map(|setting| SettingRun { setting, runs: spec.providers.iter().map(|_| provider_run(vec![cell(100.0, 2.0)], None)).collect() })
                .collect();
            render(spec, &runs, Duration::from_secs(60))
        };
        assert!(report(&slow).contains("tps over"), "two providers");
        slow.providers.truncate(1);
        let text = report(&slow);
        assert!(text.contains("tps against near"), "{text}");
        assert!(!text.contains("tps over"), "nothing to compare one provider with: {text}");
    }

    #[test]
    fn lan_repetitions_report_cpu_per_transaction_against_the_first_provider() {
        let mut lan = spec_for(Scenario::Cells);
        (lan.repeat, lan.tests, lan.threads, lan.targets) = (2, vec!["oltp_update_index".into()], vec![8], vec![lan.targets[0]]);
        let costing = |cpu: f64, switches: f64| {
            let counters = Summary { cluster_cpu_ms_per_txn: Some(cpu), switches_per_txn: Some(switches), ..Summary::default() };
            CellOutcome::Measured { sysbench: SysbenchResult { tps: 100.0, p95_ms: 2.0, ..Default::default() }, counters: Box::new(counters) }
        };
        // Two repetitions: the first provider at 0.5 and 0.7 ms, the other
        // at 0.4 and 0.5: means 0.6 against 0.45, a ratio of 0.75.
        let runs: Vec<SettingRun> = settings(&lan)
            .into_iter()
            .zip([(0.5, 0.4), (0.7, 0.5)])
            .map(|(setting, (first, other))| SettingRun { setting, runs: vec![provider_run(vec![costing(first, 20.0)], None), provider_run(vec![costing(other, 10.0)], None)] })
            .collect();
        let text = render(&lan, &runs, Duration::from_secs(60));
        assert!(text.contains("cpu 0.450 vs 0.600 ms/txn (0.75), context switches 10.0 vs 20.0 per txn"), "{text}");
        assert!(text.contains("highest cell 0.75"), "{text}");
    }

    #[test]
    fn lan_repetitions_pool_each_followers_delays_before_taking_the_p99() {
        let mut lan = spec_for(Scenario::Cells);
        (lan.repeat, lan.tests, lan.threads, lan.targets) = (2, vec!["oltp_update_index".into()], vec![8], vec![lan.targets[0]]);
        let probed = |ms: std::ops::RangeInclusive<u64>| {
            let seen = ms.map(Duration::from_millis).collect();
            let delays = vec![super::super::follower_delay::Delays { node: 2, seen, missed: 0 }];
            let counters = Summary { follower_delays: delays, ..Summary::default() };
            CellOutcome::Measured { sysbench: SysbenchResult { tps: 100.0, p95_ms: 2.0, ..Default::default() }, counters: Box::new(counters) }
        };
        // The first provider saw 1..=100 ms, then 1..=100 again; the other
        // 1..=100, then 101..=200: pooled, its p99 is 198 ms against 99
        // (the mean of its two p99s would be 149).
        let runs: Vec<SettingRun> = settings(&lan)
            .into_iter()
            .zip([(1..=100, 1..=100), (1..=100, 101..=200)])
            .map(|(setting, (first, other))| SettingRun { setting, runs: vec![provider_run(vec![probed(first)], None), provider_run(vec![probed(other)], None)] })
            .collect();
        let text = render(&lan, &runs, Duration::from_secs(60));
        assert!(text.contains("node2 seen after node1's commit p50 101.00 vs 51.00 ms, p99 198.00 vs 99.00 ms (2.00; 200 and 200 rows)"), "{text}");
        assert!(text.contains("follower delay p99, highest 2.00 of"), "{text}");
    }

    #[test]
    fn geometric_mean_of_ratios() {
        assert!((geomean(&[2.0, 0.5]).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(geomean(&[]), None);
    }
}
