//! Planning mode: before an event, for each candidate room, the origin load and the
//! waits to expect. Visitors are independent (the room keeps no shared state), so
//! a sample of them, scaled up, tells the whole crowd's story.

use serde::Serialize;
use waiting_room::refresh::RefreshMode;

use crate::engine;
use crate::population::Population;
use crate::progress::Progress;
use crate::scenario::{Room, Scenario};
use crate::summary;

/// The question: a crowd, and the candidate settings.
#[derive(Debug, Clone)]
pub struct Question {
    /// The crowd (its room is replaced by each candidate).
    pub scenario: Scenario,
    /// Candidate rooms.
    pub candidates: Vec<Room>,
    /// Refresh mode.
    pub mode: RefreshMode,
    /// People simulated; figures are scaled to `scenario.visitors`.
    pub sample: u64,
}

impl Question {
    /// Every combination of the candidate values.
    pub fn rooms(percentages: &[u8], wait_periods: &[u64], allow_timeouts: &[u64]) -> Vec<Room> {
        let mut rooms = Vec::new();
        for &allow_percentage in percentages {
            for &wait_period in wait_periods {
                for &allow_timeout in allow_timeouts {
                    rooms.push(Room {
                        allow_percentage,
                        wait_period,
                        allow_timeout,
                    });
                }
            }
        }
        rooms
    }
}

/// What one candidate room would do.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    /// The candidate.
    pub room: Room,
    /// New sessions per minute: mean over the minutes with any, and the peak.
    pub new_sessions_per_minute_mean: f64,
    /// The busiest minute.
    pub new_sessions_per_minute_peak: f64,
    /// Most visitors browsing at once.
    pub browsing_peak: f64,
    /// Most valid sessions at once (until `allow_period_timeout` after the last request).
    pub holding_peak: f64,
    /// Median wait of visitors admitted, seconds.
    pub wait_p50: Option<u64>,
    /// 90th percentile wait, seconds.
    pub wait_p90: Option<u64>,
    /// Share of the crowd admitted by the end of the run.
    pub admitted_share: f64,
}

/// Answers `question`, one candidate after the other.
pub fn answer(question: &Question, verbose: bool) -> Vec<Answer> {
    let sample = question.sample.clamp(1, question.scenario.visitors.max(1));
    let scale = question.scenario.visitors as f64 / sample as f64;
    question
        .candidates
        .iter()
        .map(|&room| {
            let scenario = Scenario {
                visitors: sample,
                room,
                ..question.scenario
            };
            let population = Population::draw(&scenario);
            let label = format!(
                "p={} d={} t={}",
                room.allow_percentage, room.wait_period, room.allow_timeout
            );
            let mut progress = Progress::new(label, verbose);
            let record = engine::run(&scenario, &population, question.mode, &mut progress);
            let report = summary::summarise(&scenario, &population, question.mode, &record);
            let minutes = &report.admissions.per_minute;
            let busy: Vec<u64> = minutes.iter().copied().filter(|&m| m > 0).collect();
            Answer {
                room,
                new_sessions_per_minute_mean: scale * busy.iter().sum::<u64>() as f64
                    / busy.len().max(1) as f64,
                new_sessions_per_minute_peak: scale
                    * busy.iter().copied().max().unwrap_or(0) as f64,
                browsing_peak: scale * report.concurrency.browsing_peak as f64,
                holding_peak: scale * report.concurrency.holding_peak as f64,
                wait_p50: report.waits.realised.p50,
                wait_p90: report.waits.realised.p90,
                admitted_share: report.admissions.total as f64 / sample as f64,
            }
        })
        .collect()
}

/// The answers as a Markdown table.
pub fn table(answers: &[Answer]) -> String {
    let mut out = String::from(
        "| allow_percentage | wait_period_duration | allow_period_timeout | new sessions/min (mean) | new sessions/min (peak) | browsing (peak) | valid sessions (peak) | wait p50 | wait p90 | admitted |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let seconds = |w: Option<u64>| w.map_or("beyond the run".to_string(), |w| format!("{w} s"));
    for a in answers {
        out.push_str(&format!(
            "| {} | {} s | {} s | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {:.1} % |\n",
            a.room.allow_percentage,
            a.room.wait_period,
            a.room.allow_timeout,
            a.new_sessions_per_minute_mean,
            a.new_sessions_per_minute_peak,
            a.browsing_peak,
            a.holding_peak,
            seconds(a.wait_p50),
            seconds(a.wait_p90),
            100.0 * a.admitted_share
        ));
    }
    out
}
