//! The simulator's SVG plots: admissions over time, waits against arrival time
//! as a heatmap, and the closed loop over time. Drawn with the setup `wrctl
//! report` draws with too ([`svg_plot`]: size, font, colours, panels, and an SVG
//! that says what it shows).

use std::path::Path;

use svg_plot::plotters::prelude::*;
use svg_plot::plotters::style::colors::colormaps::ViridisRGB;
use svg_plot::{
    Content, FONT, GREY, LIGHT_GREY, Line, Panel, SERIES_COLOURS, WIDTH, changes, failed, steps,
};

const SIZE: (u32, u32) = (WIDTH, 480);

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
    let svg = svg_plot::draw((SIZE.0, 60 + 280 * panels as u32), title, |root| {
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
        Ok(())
    })?;
    svg_plot::write(path, &svg)
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
    let subtitle = format!("{subtitle}; darkest cell: {most} visitors");
    let svg = svg_plot::draw(SIZE, title, |root| {
        let mut chart = ChartBuilder::on(root)
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
        Ok(())
    })?;
    svg_plot::write(path, &svg)
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
    let [blue, red] = SERIES_COLOURS;
    let counts: Vec<f64> = per_minute.iter().map(|&n| n as f64).collect();
    let peak = counts.iter().copied().fold(0.0, f64::max);
    let mut lines = vec![Line::level("", target, (0.0, minutes), GREY, 2)];
    for bound in [0.9 * target, 1.1 * target] {
        lines.push(Line::level("", bound, (0.0, minutes), LIGHT_GREY, 1));
    }
    // Each minute drawn flat across its own width.
    lines.push(Line::new("", steps(&counts, 1.0), blue, 2));
    let sessions = Panel {
        caption: format!("new sessions per minute; target {target:.0} (grey), ±10 % (light grey)"),
        y_desc: "new sessions / min".into(),
        x_desc: None,
        content: Content::Lines {
            y: (0.0, peak.max(target * 1.3) * 1.05),
            log: false,
            lines,
        },
        height: 260,
    };

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
    // Only the changes: a step function stays small however long the run.
    let held: Vec<Option<f64>> = percentage_micros
        .iter()
        .map(|&p| Some(percent(p)))
        .collect();
    let percentage = Panel {
        caption: "percentage in effect at the edge".into(),
        y_desc: "allow_percentage, %".into(),
        x_desc: None,
        content: Content::Lines {
            y: (low / 1.5, (high * 1.5).min(150.0)),
            log: true,
            lines: vec![Line::new("", changes(&held, 1.0 / 60.0), red, 2)],
        },
        height: 260,
    };

    let most = waiting.iter().copied().max().unwrap_or(0).max(1) as f64;
    let points = waiting
        .iter()
        .enumerate()
        .map(|(m, &w)| (m as f64 + 1.0, w as f64))
        .collect();
    let waiting = Panel {
        caption: "people waiting at the end of each minute".into(),
        y_desc: "waiting".into(),
        x_desc: Some("minutes since the start".into()),
        content: Content::Lines {
            y: (0.0, most * 1.05),
            log: false,
            lines: vec![Line::new("", points, blue, 2)],
        },
        height: 260,
    };
    let svg = svg_plot::stacked(title, (0.0, minutes), &[sessions, percentage, waiting])?;
    svg_plot::write(path, &svg)
}
