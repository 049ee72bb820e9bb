//! SVG plots, drawn with `plotters`: admissions over time, and waits against
//! arrival time as a heatmap.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;

const SIZE: (u32, u32) = (1000, 480);
const FONT: &str = "sans-serif";
const SERIES_COLOURS: [RGBColor; 2] = [RGBColor(31, 119, 180), RGBColor(214, 39, 40)];

/// New sessions per second over time: one panel per named series, on one scale,
/// under a `title`.
pub fn admissions(path: &Path, title: &str, series: &[(&str, &[u64])]) -> Result<(), String> {
    let seconds = series
        .iter()
        .map(|(_, s)| s.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let peak = series
        .iter()
        .flat_map(|(_, s)| s.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let panels = series.len().max(1);
    let root = SVGBackend::new(path, (SIZE.0, 60 + 280 * panels as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(failed)?;
    let root = root.titled(title, (FONT, 18)).map_err(failed)?;
    for (i, (area, (name, values))) in root
        .split_evenly((panels, 1))
        .iter()
        .zip(series)
        .enumerate()
    {
        let colour = SERIES_COLOURS[i % SERIES_COLOURS.len()];
        let mut chart = ChartBuilder::on(area)
            .caption(*name, (FONT, 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..seconds as f64 / 60.0, 0.0..peak as f64 * 1.05)
            .map_err(failed)?;
        chart
            .configure_mesh()
            .x_desc("minutes since the start")
            .y_desc("new sessions per second")
            .draw()
            .map_err(failed)?;
        let points = values
            .iter()
            .enumerate()
            .map(|(t, &v)| (t as f64 / 60.0, v as f64));
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(1)))
            .map_err(failed)?;
    }
    root.present().map_err(failed)
}

/// How many visitors arrived when and waited how long, in about sixty arrival
/// columns by `wait_bin` seconds, on a logarithmic colour scale; `title` over `subtitle`.
pub fn wait_heatmap(
    path: &Path,
    title: &str,
    subtitle: &str,
    points: &[(u64, u64)],
    wait_bin: u64,
) -> Result<(), String> {
    let span = points.iter().map(|p| p.0).max().unwrap_or(0) + 1;
    // About sixty columns across the arrivals, whatever their span.
    let arrival_bin = span.div_ceil(60).max(1);
    let wait_bin = wait_bin.max(1);
    let (x_seconds, x_desc) = if span <= 600 {
        (1.0, "arrival, seconds since the start")
    } else {
        (60.0, "arrival, minutes since the start")
    };
    let columns = points.iter().map(|p| p.0 / arrival_bin).max().unwrap_or(0) + 1;
    let rows = points.iter().map(|p| p.1 / wait_bin).max().unwrap_or(0) + 1;
    let mut counts = vec![0u64; (columns * rows) as usize];
    for &(arrival, wait) in points {
        counts[((arrival / arrival_bin) * rows + wait / wait_bin) as usize] += 1;
    }
    let most = counts.iter().copied().max().unwrap_or(0).max(1);
    let (x_unit, y_unit) = (arrival_bin as f64 / x_seconds, wait_bin as f64 / 60.0);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(failed)?;
    let root = root.titled(title, (FONT, 18)).map_err(failed)?;
    let subtitle = format!("{subtitle}; darkest cell: {most} visitors");
    let mut chart = ChartBuilder::on(&root)
        .caption(subtitle, (FONT, 13))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..columns as f64 * x_unit, 0.0..rows as f64 * y_unit)
        .map_err(failed)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(x_desc)
        .y_desc("wait, minutes")
        .draw()
        .map_err(failed)?;
    let cells = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, &c)| {
            let (column, row) = (i as u64 / rows, i as u64 % rows);
            let (x, y) = (column as f64 * x_unit, row as f64 * y_unit);
            // Logarithmic: one visitor is the palest colour, the fullest cell the darkest.
            let shade = (c as f64).ln_1p() / (most as f64).ln_1p();
            let colour = ViridisRGB::get_color_normalized(1.0 - shade, 0.0, 1.0);
            Rectangle::new([(x, y), (x + x_unit, y + y_unit)], colour.filled())
        });
    chart.draw_series(cells).map_err(failed)?;
    root.present().map_err(failed)
}

fn failed(err: impl std::fmt::Display) -> String {
    format!("plot: {err}")
}

/// The closed loop over time, under a `title`: new sessions per minute against
/// the target and its ±10 % band; the percentage in effect at the edge (a step
/// per change, logarithmic scale); the people waiting at each minute's end.
pub fn closed_loop(
    path: &Path,
    title: &str,
    target: f64,
    per_minute: &[u64],
    percentage_micros: &[u32],
    waiting: &[u64],
) -> Result<(), String> {
    let minutes = per_minute.len().max(1) as f64;
    let root = SVGBackend::new(path, (SIZE.0, 60 + 3 * 260)).into_drawing_area();
    root.fill(&WHITE).map_err(failed)?;
    let root = root.titled(title, (FONT, 18)).map_err(failed)?;
    let panels = root.split_evenly((3, 1));
    let [blue, red] = SERIES_COLOURS;
    let grey = RGBColor(120, 120, 120);

    let peak = per_minute.iter().copied().max().unwrap_or(0) as f64;
    let mut chart = ChartBuilder::on(&panels[0])
        .caption(
            format!("new sessions per minute; target {target:.0} (grey), ±10 % (light grey)"),
            (FONT, 15),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..minutes, 0.0..peak.max(target * 1.3) * 1.05)
        .map_err(failed)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .y_desc("new sessions / min")
        .draw()
        .map_err(failed)?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, target), (minutes, target)],
            grey.stroke_width(2),
        ))
        .map_err(failed)?;
    for bound in [0.9 * target, 1.1 * target] {
        chart
            .draw_series(LineSeries::new(
                [(0.0, bound), (minutes, bound)],
                RGBColor(190, 190, 190).stroke_width(1),
            ))
            .map_err(failed)?;
    }
    // Each minute drawn flat across its own width.
    let steps = per_minute
        .iter()
        .enumerate()
        .flat_map(|(m, &n)| [(m as f64, n as f64), (m as f64 + 1.0, n as f64)]);
    chart
        .draw_series(LineSeries::new(steps, blue.stroke_width(2)))
        .map_err(failed)?;

    let percent = |micros: u32| f64::from(micros.max(1)) / 10_000.0;
    let low = percentage_micros
        .iter()
        .copied()
        .min()
        .map_or(0.01, percent);
    let high = percentage_micros
        .iter()
        .copied()
        .max()
        .map_or(100.0, percent);
    let mut chart = ChartBuilder::on(&panels[1])
        .caption("percentage in effect at the edge", (FONT, 15))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(64)
        .build_cartesian_2d(
            0.0..minutes,
            (low / 1.5..(high * 1.5).min(150.0)).log_scale(),
        )
        .map_err(failed)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .y_desc("allow_percentage, %")
        .draw()
        .map_err(failed)?;
    // Only the changes: a step function stays small however long the run.
    let mut steps = Vec::new();
    let mut last = None;
    for (t, &p) in percentage_micros.iter().enumerate() {
        if last != Some(p) {
            if let Some(previous) = last {
                steps.push((t as f64 / 60.0, percent(previous)));
            }
            steps.push((t as f64 / 60.0, percent(p)));
            last = Some(p);
        }
    }
    if let Some(p) = last {
        steps.push((percentage_micros.len() as f64 / 60.0, percent(p)));
    }
    chart
        .draw_series(LineSeries::new(steps, red.stroke_width(2)))
        .map_err(failed)?;

    let most = waiting.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut chart = ChartBuilder::on(&panels[2])
        .caption("people waiting at the end of each minute", (FONT, 15))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..minutes, 0.0..most * 1.05)
        .map_err(failed)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc("minutes since the start")
        .y_desc("waiting")
        .draw()
        .map_err(failed)?;
    let points = waiting
        .iter()
        .enumerate()
        .map(|(m, &w)| (m as f64 + 1.0, w as f64));
    chart
        .draw_series(LineSeries::new(points, blue.stroke_width(2)))
        .map_err(failed)?;
    root.present().map_err(failed)
}
