//! `wrctl report`: a report of an event that outlives the controller. It
//! replays a saved log through the very control thread `wrctl control` runs
//! ([`Control`], driven on the log's own clock: [`Control::handle_at`],
//! [`Control::tick`], [`Control::views_at`]) and writes one self-contained HTML
//! file, its SVGs drawn with the simulator's setup ([`svg_plot`]). What it shows,
//! and why a replay rather than a history the live controller appends: the
//! manual's "A report of the event" (`docs/operate/wrctl.md`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read};
use std::process::ExitCode;

use clap::Parser;
use control::record::Record;
use svg_plot::{BLUE, Content, GREEN, GREY, Line, ORANGE, Panel, RED};
use waiting_room::admission::decision::{Session, Transition};
use waiting_room::pages::view::escape_html;

use crate::alerts::{self, ALERTS};
use crate::cli::{Cli, Command, ControlArgs, ReportArgs};
use crate::clock::utc;
use crate::control::{Control, choose, held};
use crate::ingest::{BATCH, Batch, MAX_LINE, Msg};
use crate::sink::DryRun;

/// A replayed room's figures over one minute of log time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoomMinute {
    /// New sessions started in the minute.
    pub new_sessions: u64,
    /// The target held at the minute's end.
    pub target: f64,
    /// Addresses waiting at the minute's end.
    pub waiting: u64,
    /// The percentage in effect at the edge, as the minute's last line said
    /// (millionths); `None`: no line said.
    pub percentage_micros: Option<u32>,
    /// In FIFO mode, the cutoff in effect as the minute's last line said (Unix ms).
    pub cutoff_ms: Option<u64>,
    /// The origin's p95 over its window at the minute's end, ms (with `--origin-healthy`).
    pub p95_ms: Option<u64>,
    /// `--origin-healthy`'s p95 bound, ms.
    pub p95_bound_ms: Option<u64>,
    /// The waits of the visitors admitted in the minute, seconds, sorted.
    pub waits: Vec<u64>,
}

impl RoomMinute {
    /// The `q` quantile (0–1) of the minute's waits, seconds (nearest rank).
    pub fn wait_quantile(&self, q: f64) -> Option<u64> {
        let n = self.waits.len();
        (n > 0).then(|| self.waits[((q * n as f64).ceil() as usize).clamp(1, n) - 1])
    }
}

/// An alert raised over a span of log time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raised {
    /// Its name (a row of [`ALERTS`], or [`EDGE_STALE`]).
    pub name: &'static str,
    /// When it was raised, Unix seconds.
    pub from: u64,
    /// When it cleared (the end of the log, if it never did).
    pub to: u64,
}

/// The timeline's row of the edge's own `ALERT=controller-stale` lines.
pub const EDGE_STALE: &str = "controller-stale (the edge's lines)";

/// What a replay found: a minute at a time, and the alerts.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Unix seconds of the first minute's start (a whole minute).
    pub start: u64,
    /// The rooms held ("the service room" or the room's name).
    pub rooms: Vec<String>,
    /// Each room's queueing: whether FIFO.
    pub fifo: Vec<bool>,
    /// Each minute's figures, a room each.
    pub minutes: Vec<Vec<RoomMinute>>,
    /// Every alert raised, in the order raised.
    pub alerts: Vec<Raised>,
    /// Lines read, and those that were not readable room lines.
    pub lines: u64,
    /// Of those, not readable room lines (other programs' included).
    pub bad_lines: u64,
}

/// The waits of admitted visitors: from an address's first waiting line to its
/// new session.
#[derive(Default)]
struct Waits {
    /// (room, address) → the second it started waiting.
    since: HashMap<(Option<String>, String), u64>,
}

impl Waits {
    /// The wait of the visitor this record admits, if it admits one whose wait is
    /// known: from its first waiting line, or 0 for a visitor let straight in
    /// (a new session with no draw and no cutoff behind it); a winner whose
    /// waiting began before the log did is left out.
    fn see(&mut self, r: &Record) -> Option<u64> {
        let key = (r.room.clone(), r.uid.clone());
        if r.session == Some(Session::New) {
            return match self.since.remove(&key) {
                Some(since) => Some(r.t.saturating_sub(since)),
                None if r.transition.is_none() && r.arr.is_none() => Some(0),
                None => None,
            };
        }
        if r.is_arrival() {
            self.since.entry(key).or_insert(r.t);
        } else if r.transition == Some(Transition::LeftLine) {
            self.since.remove(&key);
        }
        None
    }
}

/// A replay in progress: the control thread, its clock and what it found.
struct Replay {
    control: Control,
    tick: u64,
    history: History,
    pending: Batch,
    /// The newest record's time.
    newest: u64,
    next_tick: u64,
    next_minute: u64,
    /// Per room, the waits of the minute being counted.
    waits: Vec<Vec<u64>>,
    tracker: Waits,
    /// Alerts raised now, by name, since when.
    open: BTreeMap<&'static str, u64>,
    /// Seconds with the edge's `controller-stale` lines.
    edge_stale: Vec<u64>,
    started: bool,
}

impl Replay {
    fn room_index(&self, room: Option<&str>) -> Option<usize> {
        self.history.rooms.iter().position(|r| match room {
            Some(name) => r == name,
            None => r == SERVICE_ROOM,
        })
    }

    fn line(&mut self, line: &[u8]) {
        let mut one = Batch::default();
        one.push_line(line);
        if let Some(r) = one.records.first() {
            if !self.started {
                self.started = true;
                self.history.start = r.t - r.t % 60;
                self.next_minute = self.history.start + 60;
                self.next_tick = r.t + self.tick;
                self.newest = r.t;
                self.control.start_at(r.t);
            }
            self.until(r.t);
            self.newest = self.newest.max(r.t);
            if r.controller_stale && self.edge_stale.last() != Some(&r.t) {
                self.edge_stale.push(r.t);
            }
            if let Some(wait) = self.tracker.see(r)
                && let Some(i) = self.room_index(r.room.as_deref())
            {
                self.waits[i].push(wait);
            }
        }
        self.history.lines += 1;
        self.history.bad_lines += one.bad.total();
        self.pending.records.append(&mut one.records);
        self.pending.bad.merge(&one.bad);
        self.pending.bad_rooms.append(&mut one.bad_rooms);
        if self.pending.len() >= BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let batch = std::mem::take(&mut self.pending);
        if !batch.is_empty() {
            self.control.handle_at(Msg::Batch(batch), self.newest);
        }
    }

    /// Runs the ticks and the minutes' ends up to (and before) second `t`.
    fn until(&mut self, t: u64) {
        while self.started && self.next_tick.min(self.next_minute) <= t {
            self.flush();
            if self.next_minute <= self.next_tick {
                let end = self.next_minute;
                self.minute(end);
                self.next_minute += 60;
            } else {
                let now = self.next_tick;
                self.control.tick(now);
                self.alerts(now);
                self.next_tick += self.tick;
            }
        }
    }

    /// The figures of the minute that ends at `end`.
    fn minute(&mut self, end: u64) {
        let views = self.control.views_at(end);
        let rows = views
            .rooms
            .iter()
            .zip(&mut self.waits)
            .map(|(view, waits)| {
                let s = &view.snapshot;
                let inside = |t: u64| t + 60 >= end && t < end;
                let mut waits = std::mem::take(waits);
                waits.sort_unstable();
                let cutoffs = view.fifo.as_ref().map(|f| &f.cutoffs);
                RoomMinute {
                    new_sessions: s
                        .series
                        .iter()
                        .filter(|(t, _)| inside(*t))
                        .map(|(_, sec)| sec.admissions)
                        .sum(),
                    target: view.target_per_minute(),
                    waiting: s.waiting,
                    percentage_micros: s
                        .series
                        .iter()
                        .filter(|(t, _)| inside(*t))
                        .filter_map(|(_, sec)| sec.percentage_micros)
                        .next_back(),
                    cutoff_ms: cutoffs.and_then(|c| {
                        s.series
                            .iter()
                            .zip(c)
                            .filter(|((t, _), _)| inside(*t))
                            .filter_map(|(_, c)| *c)
                            .next_back()
                    }),
                    p95_ms: s.origin.as_ref().and_then(|o| o.reading.p95_ms),
                    p95_bound_ms: s.origin.as_ref().map(|o| o.healthy.p95_ms),
                    waits,
                }
            })
            .collect();
        self.history.minutes.push(rows);
    }

    /// Notes which alerts are raised at clock time `now`.
    fn alerts(&mut self, now: u64) {
        for (name, on) in self.control.views_at(now).alerts {
            match (on, self.open.contains_key(name)) {
                (true, false) => {
                    self.open.insert(name, now);
                }
                (false, true) => {
                    let from = self.open.remove(name).unwrap_or(now);
                    self.history.alerts.push(Raised {
                        name,
                        from,
                        to: now,
                    });
                }
                _ => {}
            }
        }
    }

    fn finish(mut self) -> History {
        if !self.started {
            return self.history;
        }
        // Through the end of the last minute with a line.
        let end = self.newest - self.newest % 60 + 60;
        self.until(end);
        self.flush();
        for (name, from) in std::mem::take(&mut self.open) {
            self.history.alerts.push(Raised {
                name,
                from,
                to: end,
            });
        }
        // The edge's lines: a span through seconds no more than a tick apart.
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for &t in &self.edge_stale {
            match spans.last_mut() {
                Some((_, to)) if t <= *to + self.tick => *to = t + 1,
                _ => spans.push((t, t + 1)),
            }
        }
        self.history
            .alerts
            .extend(spans.into_iter().map(|(from, to)| Raised {
                name: EDGE_STALE,
                from,
                to,
            }));
        self.history.alerts.sort_by_key(|a| (a.from, a.name));
        self.history
    }
}

/// How a report names the service room.
pub const SERVICE_ROOM: &str = "the service room";

/// Replays `input` through a control thread holding what `args` holds (the
/// options of `wrctl control`), ticking every `--tick` seconds of the log's
/// time: the history of the event.
pub fn replay(input: impl Read, args: &ControlArgs) -> Result<History, String> {
    let rooms = choose(args)?;
    let names: Vec<String> = rooms
        .iter()
        .map(|(name, _, _)| name.as_ref().map_or(SERVICE_ROOM.into(), |n| n.to_string()))
        .collect();
    let fifo = rooms.iter().map(|(_, a, _)| a.fifo()).collect();
    let count = names.len();
    let held = held(rooms, args, "nowhere (a replay)", true);
    let control = Control::of_rooms(held, Box::new(DryRun), true);
    let mut replay = Replay {
        control,
        tick: args.tick.max(1),
        history: History {
            rooms: names,
            fifo,
            ..History::default()
        },
        pending: Batch::default(),
        newest: 0,
        next_tick: 0,
        next_minute: 0,
        waits: vec![Vec::new(); count],
        tracker: Waits::default(),
        open: BTreeMap::new(),
        edge_stale: Vec::new(),
        started: false,
    };
    let mut reader = BufReader::with_capacity(256 * 1024, input);
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        let n = reader
            .by_ref()
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("reading the log: {e}"))?;
        if n == 0 {
            break;
        }
        if line.len() >= MAX_LINE && line.last() != Some(&b'\n') {
            // Longer than any room line: counted as bad, the rest skipped.
            replay.history.lines += 1;
            replay.history.bad_lines += 1;
            let mut rest = Vec::new();
            reader
                .read_until(b'\n', &mut rest)
                .map_err(|e| format!("reading the log: {e}"))?;
            continue;
        }
        replay.line(&line);
    }
    Ok(replay.finish())
}

/// `wrctl report`: says what [`run`] wrote, or why it could not.
pub fn report(args: &ReportArgs) -> ExitCode {
    match run(args) {
        Ok(said) => {
            eprintln!("wrctl: {said}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("wrctl: report: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Reads the log, replays it, writes the HTML.
pub fn run(args: &ReportArgs) -> Result<String, String> {
    let control = control_args(&args.controller)?;
    let history = if args.log.as_os_str() == "-" {
        replay(io::stdin().lock(), &control)?
    } else {
        let file =
            std::fs::File::open(&args.log).map_err(|e| format!("{}: {e}", args.log.display()))?;
        replay(file, &control)?
    };
    if history.minutes.is_empty() {
        return Err(format!(
            "{}: no room log line: nothing to report",
            args.log.display()
        ));
    }
    let source = format!(
        "{} replayed with wrctl control {}",
        args.log.display(),
        args.controller.join(" ")
    );
    let html = html(&history, &args.title, &source)?;
    std::fs::write(&args.out, html).map_err(|e| format!("{}: {e}", args.out.display()))?;
    Ok(format!(
        "wrote {} ({} minutes, {} alerts raised, {} lines of which {} not readable room lines)",
        args.out.display(),
        history.minutes.len(),
        history.alerts.len(),
        history.lines,
        history.bad_lines
    ))
}

/// The options of `wrctl control` from `words` (its sink made `--dry-run` when
/// none is given).
pub fn control_args(words: &[String]) -> Result<ControlArgs, String> {
    let sink = ["--config-file", "--fastly-store-id", "--dry-run"];
    let has_sink = words.iter().any(|w| {
        sink.iter()
            .any(|s| w == s || w.starts_with(&format!("{s}=")))
    });
    let mut argv = vec!["wrctl".to_string(), "control".to_string()];
    argv.extend(words.iter().cloned());
    if !has_sink {
        argv.push("--dry-run".into());
    }
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Control(args),
        }) => Ok(*args),
        Ok(_) => Err("the controller's options are not wrctl control's".into()),
        Err(e) => Err(format!(
            "the controller's options (after --): {}",
            e.to_string().trim_start_matches("error: ").trim_end()
        )),
    }
}

/// `x` minutes after the start, as `HH:MM` UTC.
fn clock_of(history: &History, minute: usize) -> String {
    let full = utc(history.start + 60 * minute as u64);
    full.get(11..16).unwrap_or(&full).to_string()
}

fn figure_of_room(history: &History, room: usize) -> Result<String, String> {
    let name = &history.rooms[room];
    let n = history.minutes.len();
    let span = (0.0, n as f64);
    let of = |f: &dyn Fn(&RoomMinute) -> f64| -> Vec<f64> {
        history.minutes.iter().map(|m| f(&m[room])).collect()
    };
    let sessions = of(&|m| m.new_sessions as f64);
    let targets: Vec<Option<f64>> = of(&|m| m.target).into_iter().map(Some).collect();
    let mut panels = vec![Panel {
        caption: "new sessions a minute, against the target".into(),
        y_desc: "per minute".into(),
        x_desc: None,
        content: Content::Lines {
            y: svg_plot::up_to(
                sessions
                    .iter()
                    .copied()
                    .chain(targets.iter().flatten().map(|t| t * 1.2)),
                1.0,
            ),
            log: false,
            lines: vec![
                Line::new("target", svg_plot::changes(&targets, 1.0), GREY, 2),
                Line::new("new sessions", svg_plot::steps(&sessions, 1.0), BLUE, 2),
            ],
        },
        height: 250,
    }];
    let waiting = of(&|m| m.waiting as f64);
    panels.push(Panel {
        caption: "people waiting at each minute's end".into(),
        y_desc: "addresses".into(),
        x_desc: None,
        content: Content::Lines {
            y: svg_plot::up_to(waiting.iter().copied(), 1.0),
            log: false,
            lines: vec![Line::new(
                "waiting",
                waiting
                    .iter()
                    .enumerate()
                    .map(|(i, &w)| (i as f64 + 1.0, w))
                    .collect(),
                BLUE,
                2,
            )],
        },
        height: 220,
    });
    let quantile = |q: f64, colour, label: &str| {
        let points = history
            .minutes
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                m[room]
                    .wait_quantile(q)
                    .map(|w| (i as f64 + 0.5, w as f64 / 60.0))
            })
            .collect::<Vec<_>>();
        Line::new(label, points, colour, 2)
    };
    let waits: Vec<Line> = vec![
        quantile(0.5, BLUE, "median"),
        quantile(0.9, ORANGE, "90th percentile"),
        quantile(0.99, RED, "99th percentile"),
    ];
    panels.push(Panel {
        caption: "waits of the people admitted each minute".into(),
        y_desc: "minutes".into(),
        x_desc: None,
        content: Content::Lines {
            y: svg_plot::up_to(waits.iter().flat_map(|l| l.points.iter().map(|p| p.1)), 0.5),
            log: false,
            lines: waits,
        },
        height: 220,
    });
    if history.fifo[room] {
        let cutoffs: Vec<Option<f64>> = history
            .minutes
            .iter()
            .map(|m| {
                m[room]
                    .cutoff_ms
                    .map(|c| (c as f64 / 1000.0 - history.start as f64) / 60.0)
            })
            .collect();
        let ys = cutoffs.iter().flatten().copied();
        let (low, high) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
        let (low, high) = if low <= high {
            (low.min(0.0), high.max(1.0) * 1.05)
        } else {
            (0.0, 1.0)
        };
        panels.push(Panel {
            caption: "the FIFO cutoff in effect: places that joined before it are let in".into(),
            y_desc: "place, minutes".into(),
            x_desc: None,
            content: Content::Lines {
                y: (low, high),
                log: false,
                lines: vec![Line::new(
                    "fifo_cutoff",
                    svg_plot::changes(&cutoffs, 1.0),
                    GREEN,
                    2,
                )],
            },
            height: 220,
        });
    } else {
        let percent: Vec<Option<f64>> = history
            .minutes
            .iter()
            .map(|m| {
                m[room]
                    .percentage_micros
                    .map(|p| f64::from(p.max(1)) / 10_000.0)
            })
            .collect();
        let known = percent.iter().flatten().copied();
        let (low, high) = known.fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p), b.max(p)));
        let (low, high) = if low <= high {
            (low / 1.5, (high * 1.5).min(150.0))
        } else {
            (0.01, 150.0)
        };
        panels.push(Panel {
            caption: "allow_percentage in effect at the edge (logarithmic)".into(),
            y_desc: "percent".into(),
            x_desc: None,
            content: Content::Lines {
                y: (low, high),
                log: true,
                lines: vec![Line::new(
                    "allow_percentage",
                    svg_plot::changes(&percent, 1.0),
                    GREEN,
                    2,
                )],
            },
            height: 220,
        });
    }
    if history
        .minutes
        .iter()
        .any(|m| m[room].p95_bound_ms.is_some())
    {
        let p95: Vec<(f64, f64)> = history
            .minutes
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m[room].p95_ms.map(|p| (i as f64 + 1.0, p as f64)))
            .collect();
        let bounds: Vec<Option<f64>> = history
            .minutes
            .iter()
            .map(|m| m[room].p95_bound_ms.map(|b| b as f64))
            .collect();
        panels.push(Panel {
            caption: "the origin's p95 at each minute's end, against its bound".into(),
            y_desc: "ms".into(),
            x_desc: None,
            content: Content::Lines {
                y: svg_plot::up_to(
                    p95.iter()
                        .map(|p| p.1)
                        .chain(bounds.iter().flatten().map(|b| b * 1.2)),
                    1.0,
                ),
                log: false,
                lines: vec![
                    Line::new("bound", svg_plot::changes(&bounds, 1.0), GREY, 2),
                    Line::new("p95", p95, RED, 2),
                ],
            },
            height: 220,
        });
    }
    if let Some(last) = panels.last_mut() {
        last.x_desc = Some(format!(
            "minutes since {} (UTC)",
            utc(history.start).trim_end_matches(" UTC")
        ));
        last.height += 10;
    }
    svg_plot::stacked(
        &format!("{name}: the event a minute at a time"),
        span,
        &panels,
    )
}

/// The timeline's rows: every alert the controller evaluates, and the edge's.
fn timeline_rows() -> Vec<&'static str> {
    ALERTS
        .iter()
        .filter(|a| a.condition.is_some())
        .map(|a| a.name)
        .chain([EDGE_STALE])
        .collect()
}

fn figure_of_alerts(history: &History) -> Result<String, String> {
    let minutes = |t: u64| (t.saturating_sub(history.start)) as f64 / 60.0;
    let rows = timeline_rows()
        .into_iter()
        .map(|name| {
            let spans = history
                .alerts
                .iter()
                .filter(|a| a.name == name)
                .map(|a| (minutes(a.from), minutes(a.to)))
                .collect();
            (name.to_string(), spans)
        })
        .collect::<Vec<_>>();
    let height = 60 + 26 * rows.len() as u32;
    svg_plot::stacked(
        "Alerts raised, on the event's timeline",
        (0.0, history.minutes.len() as f64),
        &[Panel {
            caption: "a bar while the alert was raised".into(),
            y_desc: String::new(),
            x_desc: Some(format!(
                "minutes since {} (UTC)",
                utc(history.start).trim_end_matches(" UTC")
            )),
            content: Content::Spans { rows, colour: RED },
            height,
        }],
    )
}

/// The report: one HTML document, its figures inline.
pub fn html(history: &History, title: &str, source: &str) -> Result<String, String> {
    let mut out = String::new();
    let title = escape_html(title);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <h1>{title}</h1>\n<p>From {} to {} (UTC): {} minutes of the log, {} lines read, {} of \
         them not readable room lines. Replayed through the controller's own code: {}.</p>\n",
        utc(history.start),
        utc(history.start + 60 * history.minutes.len() as u64),
        history.minutes.len(),
        history.lines,
        history.bad_lines,
        escape_html(source),
    );
    for (i, room) in history.rooms.iter().enumerate() {
        let _ = write!(
            out,
            "<section aria-labelledby=\"room-{i}\">\n<h2 id=\"room-{i}\">{}</h2>\n<figure>{}</figure>\n",
            escape_html(&capitalised(room)),
            figure_of_room(history, i)?
        );
        minute_table(&mut out, history, i);
        out.push_str("</section>\n");
    }
    let _ = write!(
        out,
        "<section aria-labelledby=\"alerts\">\n<h2 id=\"alerts\">Alerts</h2>\n<p>Every alert of \
         the controller's table that a log can show, as the controller raises it (evaluated at \
         each tick of the replay); the edge's own <code>ALERT=controller-stale</code> lines \
         below them. What a log cannot show is left out: whether writes failed or were \
         throttled, and Prometheus's own alerts (<code>down</code>, <code>absent</code>).</p>\n\
         <figure>{}</figure>\n",
        figure_of_alerts(history)?
    );
    alert_table(&mut out, history);
    out.push_str("</section>\n</main>\n</body>\n</html>\n");
    Ok(out)
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fff;\
line-height:1.45}main{max-width:1040px;margin:0 auto;padding:1rem}figure{margin:1rem 0}\
svg{max-width:100%;height:auto;display:block}.scroll{overflow-x:auto}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.5rem 0 1.5rem}\
caption{text-align:left;font-weight:600;padding:.25rem 0}\
th,td{border:1px solid #bbb;padding:.2rem .5rem;text-align:right}th{background:#f0f0f0}\
td.l,th.l{text-align:left}code{font-size:.95em}";

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or(String::new(), |c| {
        c.to_uppercase().collect::<String>() + chars.as_str()
    })
}

fn or_dash<T: ToString>(value: Option<T>) -> String {
    value.map_or("–".into(), |v| v.to_string())
}

/// The room's figures, a row a minute: what its plots were drawn from.
fn minute_table(out: &mut String, history: &History, room: usize) {
    let fifo = history.fifo[room];
    let origin = history
        .minutes
        .iter()
        .any(|m| m[room].p95_bound_ms.is_some());
    let _ = write!(
        out,
        "<div class=\"scroll\" role=\"region\" aria-labelledby=\"figures-{room}\" tabindex=\"0\">\
         <table class=\"minutes\" data-room=\"{}\"><caption id=\"figures-{room}\">{}: the \
         figures a minute at a time</caption>\n<thead><tr><th scope=\"col\" class=\"l\">minute \
         (UTC)</th><th scope=\"col\">new sessions</th><th scope=\"col\">target</th>\
         <th scope=\"col\">waiting</th><th scope=\"col\">admitted with a known wait</th>\
         <th scope=\"col\">median wait, s</th><th scope=\"col\">90th, s</th>\
         <th scope=\"col\">99th, s</th><th scope=\"col\">{}</th>{}</tr></thead>\n<tbody>\n",
        escape_html(&history.rooms[room]),
        escape_html(&capitalised(&history.rooms[room])),
        if fifo {
            "FIFO cutoff (UTC)"
        } else {
            "allow_percentage, %"
        },
        if origin {
            "<th scope=\"col\">origin p95, ms</th><th scope=\"col\">bound, ms</th>"
        } else {
            ""
        }
    );
    for (i, m) in history.minutes.iter().enumerate() {
        let m = &m[room];
        let setting = if fifo {
            m.cutoff_ms.map_or("–".into(), crate::clock::utc_millis)
        } else {
            or_dash(
                m.percentage_micros
                    .map(waiting_room::settings::percentage::Percentage::from_micros),
            )
        };
        let _ = write!(
            out,
            "<tr><th scope=\"row\" class=\"l\">{}</th><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            clock_of(history, i),
            m.new_sessions,
            format_target(m.target),
            m.waiting,
            m.waits.len(),
            or_dash(m.wait_quantile(0.5)),
            or_dash(m.wait_quantile(0.9)),
            or_dash(m.wait_quantile(0.99)),
            escape_html(&setting),
        );
        if origin {
            let _ = write!(
                out,
                "<td>{}</td><td>{}</td>",
                or_dash(m.p95_ms),
                or_dash(m.p95_bound_ms)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

fn format_target(target: f64) -> String {
    if target.fract() == 0.0 {
        format!("{target:.0}")
    } else {
        format!("{target:.1}")
    }
}

fn alert_table(out: &mut String, history: &History) {
    let _ = write!(
        out,
        "<div class=\"scroll\" role=\"region\" aria-labelledby=\"alert-table\" tabindex=\"0\">\
         <table class=\"alerts\"><caption id=\"alert-table\">Alerts raised ({})</caption>\n\
         <thead><tr><th scope=\"col\" class=\"l\">alert</th><th scope=\"col\" \
         class=\"l\">severity</th><th scope=\"col\">from (UTC)</th><th scope=\"col\">to \
         (UTC)</th><th scope=\"col\">minutes</th><th scope=\"col\" class=\"l\">raised \
         when</th></tr></thead>\n<tbody>\n",
        history.alerts.len()
    );
    if history.alerts.is_empty() {
        out.push_str("<tr><td class=\"l\" colspan=\"6\">None.</td></tr>\n");
    }
    for a in &history.alerts {
        let row = ALERTS.iter().find(|r| r.name == a.name);
        let (severity, summary) = match row {
            Some(r) => (r.severity.as_str(), r.summary),
            None => (
                alerts::Severity::Critical.as_str(),
                "the edge logged ALERT=controller-stale: it saw the heartbeat older than \
                 controller_timeout and ran on allow_percentage_fallback",
            ),
        };
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\" class=\"l\">{}</th><td class=\"l\">{severity}</td><td>{}</td>\
             <td>{}</td><td>{:.1}</td><td class=\"l\">{}</td></tr>",
            escape_html(a.name),
            utc(a.from).trim_end_matches(" UTC"),
            utc(a.to).trim_end_matches(" UTC"),
            (a.to - a.from) as f64 / 60.0,
            escape_html(summary),
        );
    }
    out.push_str("</tbody></table></div>\n");
}

/// Parses `wrctl report`'s own command line (for the tests).
pub fn parse(words: &[&str]) -> Result<ReportArgs, String> {
    let argv = ["wrctl", "report"].iter().chain(words);
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Report(args),
        }) => Ok(args),
        Ok(_) => Err("not wrctl report".into()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests;
