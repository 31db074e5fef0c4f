//! Charts of a scenario's per-second figures, one SVG per scenario: panels
//! stacked over one time axis, one line per provider and setting, like
//! the graphs of the posts that describe the seed scenarios. plotters
//! draws them (SVG backend only: no system fonts or image libraries).

use crate::cluster::{Error, Result};
use plotters::prelude::*;
use std::path::Path;

/// One line: its legend and its (seconds, value) points.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// One panel: a quantity over time.
pub struct Panel {
    pub y_label: String,
    pub series: Vec<Series>,
}

/// Distinct on white, in legend order.
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// Draws `panels` under `title`; `marks` are times drawn as vertical
/// lines in every panel (a phase change).
pub fn time_series(path: &Path, title: &str, panels: &[Panel], marks: &[f64]) -> Result<()> {
    lines(path, title, "seconds", panels, marks)
}

/// Draws `panels` under `title` over an x axis named `x_label`; `marks`
/// are x values drawn as vertical lines in every panel.
pub fn lines(path: &Path, title: &str, x_label: &str, panels: &[Panel], marks: &[f64]) -> Result<()> {
    let height = 60 + 320 * panels.len() as u32;
    let root = SVGBackend::new(path, (960, height)).into_drawing_area();
    let failed = |e: &dyn std::fmt::Display| Error::msg(format!("drawing {}: {e}", path.display()));
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(|e| failed(&e))?;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        draw_panel(area, panel, x_label, marks).map_err(|e| failed(&e))?;
    }
    root.present().map_err(|e| failed(&e))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_panel(area: &Area<'_>, panel: &Panel, x_label: &str, marks: &[f64]) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let points = || panel.series.iter().flat_map(|s| s.points.iter());
    // Time may start before 0 (seconds before the event a scenario marks).
    let x_min = points().map(|p| p.0).fold(0.0, f64::min);
    let x_max = points().map(|p| p.0).fold(1.0, f64::max);
    let y_max = points().map(|p| p.1).filter(|y| y.is_finite()).fold(1.0, f64::max) * 1.05;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(x_min..x_max, 0.0..y_max)?;
    chart.configure_mesh().x_desc(x_label).y_desc(panel.y_label.as_str()).draw()?;
    for &x in marks {
        chart.draw_series(LineSeries::new([(x, 0.0), (x, y_max)], BLACK.mix(0.4)))?;
    }
    for (i, series) in panel.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(series.points.iter().copied(), color.stroke_width(2)))?
            .label(series.label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_an_svg_with_every_legend() {
        let dir = std::env::temp_dir().join(format!("lockstep-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.svg");
        let line = |label: &str, k: f64| Series { label: label.into(), points: (0..10).map(|s| (s as f64, k * s as f64)).collect() };
        let panels = [
            Panel { y_label: "tps".into(), series: vec![line("galera", 1.0), line("lockstep", 2.0)] },
            Panel { y_label: "p99 ms".into(), series: vec![line("galera", 3.0)] },
        ];
        time_series(&path, "freshness", &panels, &[5.0]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        for text in ["freshness", "galera", "lockstep", "p99 ms"] {
            assert!(svg.contains(text), "{text} missing");
        }
    }
}
