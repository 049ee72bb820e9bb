//! The waiting room's SVG figures, drawn with `plotters`: one setup (size, font,
//! colours, how a panel of lines over time is drawn, how an SVG says what it
//! shows) for the simulator's plots (`tools/simulate`) and `wrctl report`'s
//! report of an event, so that the two draw alike and neither keeps a copy.
//!
//! Every SVG comes out through [`draw`]: drawn into a string, then given
//! `role="img"` and a `<title>` (and `aria-labelledby` naming it), so that a page
//! that inlines it, or a browser that opens it, says what it shows.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use waiting_room::pages::view::escape_html;

pub use plotters;

/// Width of every figure, pixels.
pub const WIDTH: u32 = 1000;
/// The font of every text.
pub const FONT: &str = "sans-serif";
/// Blue: a figure's main series.
pub const BLUE: RGBColor = RGBColor(31, 119, 180);
/// Red: a second series, or the value the first is held to.
pub const RED: RGBColor = RGBColor(214, 39, 40);
/// Green.
pub const GREEN: RGBColor = RGBColor(44, 140, 44);
/// Orange.
pub const ORANGE: RGBColor = RGBColor(230, 120, 0);
/// Grey: a target or a bound.
pub const GREY: RGBColor = RGBColor(120, 120, 120);
/// Light grey: a band around a target.
pub const LIGHT_GREY: RGBColor = RGBColor(190, 190, 190);
/// Series colours in turn.
pub const SERIES_COLOURS: [RGBColor; 2] = [BLUE, RED];

/// A drawing area of an SVG being drawn.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A `plotters` error as text.
pub fn failed(err: impl std::fmt::Display) -> String {
    format!("plot: {err}")
}

/// Draws an SVG of `size` pixels: a white canvas titled `title`, handed to
/// `body` below the title; returns the SVG with `role="img"` and `title` as
/// its `<title>` ([`accessible`]).
pub fn draw(
    size: (u32, u32),
    title: &str,
    body: impl FnOnce(&Area<'_>) -> Result<(), String>,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        let area = root.titled(title, (FONT, 18)).map_err(failed)?;
        body(&area)?;
        root.present().map_err(failed)?;
    }
    Ok(accessible(&svg, title))
}

/// Writes `svg` to `path`.
pub fn write(path: &Path, svg: &str) -> Result<(), String> {
    std::fs::write(path, svg).map_err(|e| format!("{}: {e}", path.display()))
}

/// `svg` with `role="img"` and `aria-labelledby` on its root and `title` as its
/// first child, a `<title>` (escaped), so that assistive technology names it.
pub fn accessible(svg: &str, title: &str) -> String {
    let id = format!("t{:08x}", fnv(title));
    let Some(open) = svg.find("<svg") else {
        return svg.to_string();
    };
    let Some(end) = svg[open..].find('>').map(|i| open + i) else {
        return svg.to_string();
    };
    format!(
        "{} role=\"img\" aria-labelledby=\"{id}\"><title id=\"{id}\">{}</title>{}",
        &svg[..end],
        escape_html(title),
        &svg[end + 1..]
    )
}

/// A short hash of `text`: an id that stays the same from run to run.
fn fnv(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// One line of a panel: its points, colour and width, and the legend's label
/// (empty: none).
#[derive(Debug, Clone)]
pub struct Line {
    /// The legend's label; empty: not in the legend.
    pub label: String,
    /// The points, in the panel's units.
    pub points: Vec<(f64, f64)>,
    /// Its colour.
    pub colour: RGBColor,
    /// Its width, pixels.
    pub width: u32,
}

impl Line {
    /// A line of `points` in `colour`, `width` pixels wide, labelled `label`.
    pub fn new(label: &str, points: Vec<(f64, f64)>, colour: RGBColor, width: u32) -> Line {
        Line {
            label: label.to_string(),
            points,
            colour,
            width,
        }
    }

    /// A horizontal line at `y` from `x.0` to `x.1`.
    pub fn level(label: &str, y: f64, x: (f64, f64), colour: RGBColor, width: u32) -> Line {
        Line::new(label, vec![(x.0, y), (x.1, y)], colour, width)
    }
}

/// What a panel shows.
#[derive(Debug, Clone)]
pub enum Content {
    /// Lines over `y` (a logarithmic scale when `log`).
    Lines {
        /// The y axis's range.
        y: (f64, f64),
        /// A logarithmic y axis.
        log: bool,
        /// The lines, drawn in order.
        lines: Vec<Line>,
    },
    /// A row per name, with a bar over each of its spans of x (the alerts'
    /// timeline), in `colour`.
    Spans {
        /// Each row's name and spans, top row first.
        rows: Vec<(String, Vec<(f64, f64)>)>,
        /// The bars' colour.
        colour: RGBColor,
    },
}

/// One panel of a [`stacked`] figure.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Over the panel.
    pub caption: String,
    /// The y axis's label.
    pub y_desc: String,
    /// The x axis's label (`None`: no label).
    pub x_desc: Option<String>,
    /// What it shows.
    pub content: Content,
    /// Height, pixels.
    pub height: u32,
}

/// Panels one above the other over the x range `x`, under `title`: the SVG.
pub fn stacked(title: &str, x: (f64, f64), panels: &[Panel]) -> Result<String, String> {
    let height = 60 + panels.iter().map(|p| p.height).sum::<u32>();
    draw((WIDTH, height), title, |area| {
        let mut rest = area.clone();
        for panel in panels {
            let (top, bottom) = rest.split_vertically(panel.height);
            draw_panel(&top, x, panel)?;
            rest = bottom;
        }
        Ok(())
    })
}

fn draw_panel<'a>(area: &Area<'a>, x: (f64, f64), panel: &Panel) -> Result<(), String> {
    let x_area = if panel.x_desc.is_some() { 36 } else { 30 };
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.caption, (FONT, 15))
        .margin(10)
        .x_label_area_size(x_area);
    match &panel.content {
        Content::Lines {
            y,
            log: false,
            lines,
        } => {
            builder.y_label_area_size(64);
            let chart = builder
                .build_cartesian_2d(x.0..x.1, y.0..y.1)
                .map_err(failed)?;
            lines_on(chart, panel, lines)
        }
        Content::Lines {
            y,
            log: true,
            lines,
        } => {
            builder.y_label_area_size(64);
            let mut chart = builder
                .build_cartesian_2d(x.0..x.1, (y.0..y.1).log_scale())
                .map_err(failed)?;
            // Only 1, 2 and 5 of each power of ten: the rest crowd each other.
            let formatter = |v: &f64| {
                let lead = *v / 10f64.powf(v.log10().floor());
                if [1.0, 2.0, 5.0].iter().any(|l| (lead - l).abs() < 1e-6) {
                    format!("{}", (v * 1e4).round() / 1e4)
                } else {
                    String::new()
                }
            };
            chart
                .configure_mesh()
                .y_label_formatter(&formatter)
                .y_labels(40)
                .max_light_lines(0)
                .y_desc(panel.y_desc.as_str())
                .x_desc(panel.x_desc.as_deref().unwrap_or(""))
                .draw()
                .map_err(failed)?;
            draw_lines(chart, lines)
        }
        Content::Spans { rows, colour } => {
            let longest = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0) as u32;
            builder.y_label_area_size((longest * 8).clamp(64, 240));
            let n = rows.len().max(1) as f64;
            let chart = builder
                .build_cartesian_2d(x.0..x.1, 0.0..n)
                .map_err(failed)?;
            let names: Vec<&str> = rows.iter().map(|(name, _)| name.as_str()).collect();
            let mut chart = chart;
            let formatter = |y: &f64| {
                // Row i (from the top) is drawn over y in (n - i - 1, n - i).
                let i = (n - y - 0.5).round();
                if (y.fract() - 0.5).abs() < 1e-9 && i >= 0.0 && (i as usize) < names.len() {
                    names[i as usize].to_string()
                } else {
                    String::new()
                }
            };
            chart
                .configure_mesh()
                .disable_y_mesh()
                .max_light_lines(0)
                .y_labels(rows.len() * 2 + 1)
                .y_label_formatter(&formatter)
                .y_desc(panel.y_desc.as_str())
                .x_desc(panel.x_desc.as_deref().unwrap_or(""))
                .draw()
                .map_err(failed)?;
            for (i, (_, spans)) in rows.iter().enumerate() {
                let base = n - i as f64 - 1.0;
                let bars = spans.iter().map(|&(from, to)| {
                    Rectangle::new([(from, base + 0.2), (to, base + 0.8)], colour.filled())
                });
                chart.draw_series(bars).map_err(failed)?;
            }
            Ok(())
        }
    }
}

fn lines_on<'a, Y>(
    mut chart: ChartContext<
        'a,
        SVGBackend<'a>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    panel: &Panel,
    lines: &[Line],
) -> Result<(), String>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.max_light_lines(0).y_desc(panel.y_desc.as_str());
    if let Some(x_desc) = &panel.x_desc {
        mesh.x_desc(x_desc.as_str());
    }
    mesh.draw().map_err(failed)?;
    draw_lines(chart, lines)
}

fn draw_lines<'a, Y>(
    mut chart: ChartContext<
        'a,
        SVGBackend<'a>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    lines: &[Line],
) -> Result<(), String>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut labelled = false;
    for line in lines {
        let style = line.colour.stroke_width(line.width);
        let drawn = chart
            .draw_series(LineSeries::new(line.points.iter().copied(), style))
            .map_err(failed)?;
        if !line.label.is_empty() {
            labelled = true;
            let colour = line.colour;
            drawn.label(line.label.as_str()).legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(3))
            });
        }
    }
    if labelled {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(LIGHT_GREY)
            .label_font((FONT, 13))
            .draw()
            .map_err(failed)?;
    }
    Ok(())
}

/// Each value flat across its own unit of x (value `i` from `i` to `i + 1`,
/// times `unit`): a step line of counts over intervals.
pub fn steps(values: &[f64], unit: f64) -> Vec<(f64, f64)> {
    values
        .iter()
        .enumerate()
        .flat_map(|(i, &v)| [(i as f64 * unit, v), ((i + 1) as f64 * unit, v)])
        .collect()
}

/// A step line of a value held until it changes: only the changes, so that it
/// stays small however long the run (value `i` from `i` to `i + 1` times
/// `unit`; `None`: unknown there, the line held through it).
pub fn changes(values: &[Option<f64>], unit: f64) -> Vec<(f64, f64)> {
    let mut steps = Vec::new();
    let mut last: Option<f64> = None;
    for (i, value) in values.iter().enumerate() {
        let Some(v) = *value else { continue };
        if last != Some(v) {
            let x = i as f64 * unit;
            if let Some(previous) = last {
                steps.push((x, previous));
            }
            steps.push((x, v));
            last = Some(v);
        }
    }
    if let Some(v) = last {
        steps.push((values.len() as f64 * unit, v));
    }
    steps
}

/// A y range over `values` from 0 to a little above the largest (and at least
/// `least`).
pub fn up_to(values: impl IntoIterator<Item = f64>, least: f64) -> (f64, f64) {
    let most = values.into_iter().fold(least, f64::max);
    (0.0, if most > 0.0 { most * 1.05 } else { 1.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_svg_says_what_it_shows() {
        let svg = stacked(
            "New sessions <a minute> & the target",
            (0.0, 3.0),
            &[Panel {
                caption: "new sessions".into(),
                y_desc: "per minute".into(),
                x_desc: Some("minutes".into()),
                content: Content::Lines {
                    y: (0.0, 10.0),
                    log: false,
                    lines: vec![Line::new("new", steps(&[1.0, 5.0, 3.0], 1.0), BLUE, 2)],
                },
                height: 240,
            }],
        )
        .unwrap();
        let root = &svg[svg.find("<svg").unwrap()..];
        let open = &root[..root.find('>').unwrap()];
        assert!(open.contains(" role=\"img\""), "{open}");
        let id = open.split("aria-labelledby=\"").nth(1).unwrap();
        let id = &id[..id.find('"').unwrap()];
        assert!(
            root.contains(&format!(
                "<title id=\"{id}\">New sessions &lt;a minute&gt; &amp; the target</title>"
            )),
            "{}",
            &root[..300]
        );
        assert_eq!(svg.matches("<svg").count(), 1);
    }

    #[test]
    fn steps_and_changes_draw_what_was_held() {
        assert_eq!(
            steps(&[2.0, 4.0], 1.0),
            [(0.0, 2.0), (1.0, 2.0), (1.0, 4.0), (2.0, 4.0)]
        );
        assert_eq!(
            changes(&[Some(1.0), Some(1.0), None, Some(3.0)], 0.5),
            [(0.0, 1.0), (1.5, 1.0), (1.5, 3.0), (2.0, 3.0)]
        );
        assert_eq!(changes(&[None, None], 1.0), []);
    }
}
