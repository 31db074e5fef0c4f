//! `--scenario durability`: what an acknowledged commit's survival costs.
//! Per setting (`innodb_flush_log_at_trx_commit` 0, 1 and 2 for every
//! provider, and lockstep's `lockstep.log_sync=batch` at 2), the cells'
//! write workloads on fresh clusters, then a whole-cluster SIGKILL under
//! an insert load (`check::crash`: every node killed 0.2 s apart while
//! two writers per node insert, restarted as systemd does) with the
//! acknowledged inserts missing afterwards and the time back to Synced.
//!
//! The report gives each cell's tps per provider and setting, the crash
//! figures, and the two ratios the durability work is judged by: lockstep
//! at flush 2 over Galera at flush 1 (the setting that loses nothing on
//! Galera against the one that loses nothing on lockstep), and lockstep
//! with `log_sync=batch` over lockstep without.

use super::plan::{BenchSpec, Cell};
use super::runner::{self, CellOutcome, ProviderRun};
use crate::check::crash::{self, Kill, Round, RoundSpec, Start};
use crate::cluster::{provider_setting, Provider};
use crate::workload::inserts::InsertConfig;
use lockstep_config::keys;
use std::time::Duration;

/// One server setting the scenario measures.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    pub label: String,
    pub flush: u8,
    /// `lockstep.log_sync=batch` (lockstep only).
    pub log_sync: bool,
}

impl Setting {
    fn applies_to(&self, p: &Provider) -> bool {
        !self.log_sync || *p != Provider::Galera
    }
}

pub fn settings() -> Vec<Setting> {
    let at = |flush: u8, log_sync: bool| Setting { label: format!("flush{flush}{}", if log_sync { "-batch" } else { "" }), flush, log_sync };
    vec![at(0, false), at(1, false), at(2, false), at(2, true)]
}

/// A setting's figures: the cells per provider (None where the setting
/// does not apply) and the crash round per provider.
pub struct SettingRun {
    pub setting: Setting,
    pub cells: Vec<Option<ProviderRun>>,
    pub crashes: Vec<Option<Result<Round, String>>>,
}

pub fn run(spec: &BenchSpec, log: &mut dyn FnMut(&str)) -> Vec<SettingRun> {
    let all = settings();
    let mut out = Vec::new();
    for (i, setting) in all.into_iter().enumerate() {
        log(&format!("setting {} of {}: {}", i + 1, settings().len(), setting.label));
        let one = setting_spec(spec, &setting);
        let (mut cells, mut crashes) = (Vec::new(), Vec::new());
        for (p, provider) in spec.providers.iter().enumerate() {
            if !setting.applies_to(provider) {
                cells.push(None);
                crashes.push(None);
                continue;
            }
            let mut alone = one.clone();
            alone.providers = vec![provider.clone()];
            alone.base_port = one.ports_base(p);
            cells.push(runner::run(&alone, log).pop());
            crashes.push(Some(crash_round(&alone, &setting, log)));
        }
        out.push(SettingRun { setting, cells, crashes });
    }
    out
}

/// The spec of one setting: its flush value replaces the default one.
fn setting_spec(spec: &BenchSpec, setting: &Setting) -> BenchSpec {
    let mut one = spec.clone();
    one.mysqld_options.retain(|o| !o.starts_with("innodb_flush_log_at_trx_commit"));
    one.mysqld_options.push(format!("innodb_flush_log_at_trx_commit={}", setting.flush));
    if setting.log_sync {
        one.provider_options.push(provider_setting(keys::LOCKSTEP_LOG_SYNC, "batch"));
    }
    one.dir = spec.dir.join(&setting.label);
    one
}

/// A whole-cluster SIGKILL under two inserting writers per node, on a
/// cluster of its own; restarted as systemd does.
fn crash_round(spec: &BenchSpec, setting: &Setting, log: &mut dyn FnMut(&str)) -> Result<Round, String> {
    let dir = spec.provider_dir(0).join("crash");
    let mut cluster_spec = spec.cluster_spec(0);
    cluster_spec.dir = dir.clone();
    let cluster = crash::cluster(cluster_spec, setting.flush).map_err(|e| format!("the crash cluster did not start: {e}"))?;
    let round = RoundSpec { kill: Kill::All, start: Start::Systemd, load: Duration::from_secs(10), kill_gap: Duration::from_millis(200), after_kill: Duration::from_secs(1), recovery_timeout: Duration::from_secs(300) };
    let r = crash::round(&cluster, &round, &InsertConfig::default(), 0);
    log(&format!("  {}: whole-cluster kill: {} acknowledged, {} missing, back in {}", setting.label, r.verdict.acked.ids.len(), r.verdict.lost_total(), back(&r)));
    drop(cluster);
    if !spec.keep_data {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(r)
}

fn back(r: &Round) -> String {
    r.recovery.map_or_else(|| format!("not back ({})", r.verdict.error.clone().unwrap_or_default()), |d| format!("{:.1} s", d.as_secs_f64()))
}

fn tps(run: &Option<ProviderRun>, c: usize) -> Option<f64> {
    match run.as_ref()?.cells.get(c)? {
        CellOutcome::Measured { sysbench, .. } => Some(sysbench.tps),
        CellOutcome::Failed(_) => None,
    }
}

fn cell_label(c: &Cell) -> String {
    format!("{} {}t {}", c.test, c.threads, c.target.label())
}

pub fn render(spec: &BenchSpec, runs: &[SettingRun], took: Duration) -> String {
    let cells = spec.cells();
    let mut out = format!("lockstep bench --scenario durability: {} settings x {} providers x {} cells, {:.0} min\n\n", runs.len(), spec.providers.len(), cells.len(), took.as_secs_f64() / 60.0);
    out.push_str(&format!("{:<34} {:<10}{}\n", "cell (tps)", "provider", runs.iter().map(|r| format!(" {:>12}", r.setting.label)).collect::<String>()));
    for (c, cell) in cells.iter().enumerate() {
        for p in 0..spec.providers.len() {
            let row: String = runs.iter().map(|r| format!(" {:>12}", tps(&r.cells[p], c).map_or("n/a".into(), |t| format!("{t:.0}")))).collect();
            out.push_str(&format!("{:<34} {:<10}{row}\n", if p == 0 { cell_label(cell) } else { String::new() }, spec.provider_slug(p)));
        }
    }
    out.push_str("\nwhole-cluster SIGKILL under 2 inserting writers per node, restarted as systemd does:\n");
    for r in runs {
        for (p, crash) in r.crashes.iter().enumerate() {
            let text = match crash {
                None => continue,
                Some(Err(e)) => format!("n/a ({e})"),
                Some(Ok(round)) => {
                    let lost: Vec<String> = round.verdict.lost.iter().map(|(_, n)| n.to_string()).collect();
                    format!("{} acknowledged, missing per node {}, back in {}", round.verdict.acked.ids.len(), if lost.is_empty() { "-".into() } else { lost.join(" / ") }, back(round))
                }
            };
            out.push_str(&format!("  {:<12} {:<10} {text}\n", r.setting.label, spec.provider_slug(p)));
        }
    }
    goals(spec, runs, &mut out);
    out
}

/// The ratios the scenario is judged by, per cell and as a geometric mean.
fn goals(spec: &BenchSpec, runs: &[SettingRun], out: &mut String) {
    let find = |label: &str, provider: &Provider| -> Option<&Option<ProviderRun>> {
        let p = spec.providers.iter().position(|q| q == provider)?;
        runs.iter().find(|r| r.setting.label == label).map(|r| &r.cells[p])
    };
    let pairs = [
        ("lockstep flush2 over galera flush1 (goal: 1.3 or more)", find("flush2", &Provider::Lockstep), find("flush1", &Provider::Galera)),
        ("lockstep flush2-batch over lockstep flush2 (goal: 0.9 or more)", find("flush2-batch", &Provider::Lockstep), find("flush2", &Provider::Lockstep)),
    ];
    for (what, top, bottom) in pairs {
        let (Some(top), Some(bottom)) = (top, bottom) else { continue };
        let ratios: Vec<(String, f64)> = spec.cells().iter().enumerate().filter_map(|(c, cell)| Some((cell_label(cell), tps(top, c)? / tps(bottom, c).filter(|b| *b > 0.0)?))).collect();
        if ratios.is_empty() {
            continue;
        }
        let geomean = (ratios.iter().map(|(_, r)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let lowest = ratios.iter().map(|(_, r)| *r).fold(f64::INFINITY, f64::min);
        out.push_str(&format!("\n{what}: geometric mean {geomean:.2}, lowest cell {lowest:.2}\n"));
        for (label, r) in ratios {
            out.push_str(&format!("  {label:<34} {r:.2}\n"));
        }
    }
}

pub fn write_outputs(spec: &BenchSpec, runs: &[SettingRun]) -> crate::cluster::Result<Vec<std::path::PathBuf>> {
    use serde_json::json;
    let cells = spec.cells();
    let value = json!({
        "scenario": "durability",
        "time_s": spec.time,
        "settings": runs.iter().map(|r| json!({
            "label": r.setting.label,
            "flush": r.setting.flush,
            "log_sync": if r.setting.log_sync { "batch" } else { "none" },
            "providers": (0..spec.providers.len()).map(|p| json!({
                "provider": spec.provider_slug(p),
                "cells": cells.iter().enumerate().map(|(c, cell)| json!({ "test": cell.test, "threads": cell.threads, "target": cell.target.label(), "tps": tps(&r.cells[p], c) })).collect::<Vec<_>>(),
                "crash": r.crashes[p].as_ref().map(|c| match c {
                    Ok(round) => json!({ "acknowledged": round.verdict.acked.ids.len(), "missing_per_node": round.verdict.lost.iter().map(|(_, n)| n).collect::<Vec<_>>(), "recovery_s": round.recovery.map(|d| d.as_secs_f64()), "error": round.verdict.error }),
                    Err(e) => json!({ "error": e }),
                }),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let path = spec.dir.join("durability.json");
    let text = serde_json::to_string_pretty(&value).map_err(|e| crate::cluster::Error::msg(e.to_string()))?;
    std::fs::write(&path, text).map_err(|e| crate::cluster::Error::io(format!("writing {}", path.display()), e))?;
    Ok(vec![path])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flush_value_then_batch_for_lockstep_only() {
        let s = settings();
        assert_eq!(s.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(), ["flush0", "flush1", "flush2", "flush2-batch"]);
        assert!(s[3].applies_to(&Provider::Lockstep) && !s[3].applies_to(&Provider::Galera));
        let one = setting_spec(&BenchSpec::default(), &s[3]);
        assert_eq!(one.mysqld_options, ["innodb_flush_log_at_trx_commit=2"]);
        assert_eq!(one.provider_options, ["lockstep.log_sync=batch"]);
        assert_eq!(setting_spec(&BenchSpec::default(), &s[0]).mysqld_options, ["innodb_flush_log_at_trx_commit=0"]);
    }
}
