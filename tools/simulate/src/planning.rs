//! Planning mode: before an event, for each candidate room, the origin load and the
//! waits to expect. Visitors are independent (the room keeps no shared state), so
//! a sample of them, scaled up, tells the whole crowd's story.

use serde::Serialize;
use waiting_room::settings::refresh_mode::RefreshMode;

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
    /// `room` with every combination of the candidate texts of each key (the
    /// first key's outermost; a key without any keeps the room's), or the first
    /// the room refuses.
    pub fn rooms(room: &Room, candidates: &[(&str, Vec<String>)]) -> Result<Vec<Room>, String> {
        let mut rooms = vec![room.clone()];
        for (key, texts) in candidates.iter().filter(|(_, texts)| !texts.is_empty()) {
            let mut next = Vec::new();
            for room in &rooms {
                for text in texts {
                    let mut room = room.clone();
                    room.set(key, text)?;
                    next.push(room);
                }
            }
            rooms = next;
        }
        Ok(rooms)
    }
}

/// What one candidate room would do.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    /// The candidate.
    pub room: Room,
    /// Minutes from the start until 90 % of the crowd was admitted (`None`: not in the run).
    pub minutes_to_admit_90_percent: Option<u64>,
    /// New sessions per minute over those minutes, on average.
    pub new_sessions_per_minute_mean: Option<f64>,
    /// The busiest minute.
    pub new_sessions_per_minute_peak: f64,
    /// Most visitors browsing at once.
    pub browsing_peak: f64,
    /// Most valid sessions at once (until `allow_period_timeout` after the last request).
    pub holding_peak: f64,
    /// Median wait, seconds (`None`: beyond the run).
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
        .map(|room| {
            let scenario = Scenario {
                visitors: sample,
                room: room.clone(),
                ..question.scenario.clone()
            };
            let population = Population::draw(&scenario);
            let s = room.settings();
            let label = format!(
                "p={} d={} t={}",
                s.allow_percentage, s.wait_period_duration, s.allow_period_timeout
            );
            let mut progress = Progress::new(label, verbose);
            let record = engine::run(&scenario, &population, question.mode, &mut progress);
            let report = summary::summarise(&scenario, &population, question.mode, &record);
            let minutes = &report.admissions.per_minute;
            let to_90 = minutes_to_admit(minutes, 0.9 * sample as f64);
            let waits = summary::waits(&population, &record, scenario.duration);
            Answer {
                room: room.clone(),
                minutes_to_admit_90_percent: to_90,
                new_sessions_per_minute_mean: to_90.map(|m| scale * 0.9 * sample as f64 / m as f64),
                new_sessions_per_minute_peak: scale
                    * minutes.iter().copied().max().unwrap_or(0) as f64,
                browsing_peak: scale * report.concurrency.browsing_peak as f64,
                holding_peak: scale * report.concurrency.holding_peak as f64,
                wait_p50: waits.realised.p50,
                wait_p90: waits.realised.p90,
                admitted_share: report.admissions.total as f64 / sample as f64,
            }
        })
        .collect()
}

/// Whole minutes until the running total of `per_minute` reaches `target`.
fn minutes_to_admit(per_minute: &[u64], target: f64) -> Option<u64> {
    let mut total = 0;
    per_minute
        .iter()
        .position(|&m| {
            total += m;
            total as f64 >= target
        })
        .map(|i| i as u64 + 1)
}

/// The answers as a Markdown table.
pub fn table(answers: &[Answer]) -> String {
    let mut out = String::from(
        "| allow_percentage | wait_period_duration | allow_period_timeout | minutes to admit 90 % | new sessions/min (mean over those) | new sessions/min (peak) | browsing (peak) | valid sessions (peak) | wait p50 | wait p90 | admitted |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let or_beyond = |v: Option<String>| v.unwrap_or_else(|| "beyond the run".to_string());
    let seconds = |w: Option<u64>| or_beyond(w.map(|w| format!("{w} s")));
    for a in answers {
        let s = a.room.settings();
        out.push_str(&format!(
            "| {} | {} s | {} s | {} | {} | {:.0} | {:.0} | {:.0} | {} | {} | {:.1} % |\n",
            s.allow_percentage,
            s.wait_period_duration,
            s.allow_period_timeout,
            or_beyond(a.minutes_to_admit_90_percent.map(|m| m.to_string())),
            or_beyond(a.new_sessions_per_minute_mean.map(|m| format!("{m:.0}"))),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Arrivals, Mix};

    #[test]
    fn minutes_to_admit_counts_whole_minutes() {
        assert_eq!(minutes_to_admit(&[5, 3, 2], 8.0), Some(2));
        assert_eq!(minutes_to_admit(&[5, 3, 2], 5.0), Some(1));
        assert_eq!(minutes_to_admit(&[5, 3, 2], 11.0), None);
    }

    #[test]
    fn a_sample_is_scaled_to_the_crowd() {
        let question = Question {
            scenario: Scenario {
                visitors: 20_000,
                arrivals: Arrivals::Flash { seconds: 10 },
                mix: Mix::plain(),
                duration: 900,
                ..Scenario::default()
            },
            candidates: Question::rooms(
                &Room::default(),
                &[
                    ("allow_percentage", vec!["50".into()]),
                    ("wait_period_duration", vec!["10".into()]),
                    ("allow_period_timeout", vec!["600".into()]),
                ],
            )
            .unwrap(),
            mode: RefreshMode::Eligible,
            sample: 2_000,
        };
        let answers = answer(&question, false);
        let a = &answers[0];
        // Everyone gets in within the run; 10 x 2,000 people hold a valid session at the end.
        assert!(a.admitted_share > 0.99, "{a:?}");
        assert!(
            a.holding_peak > 19_000.0 && a.holding_peak <= 20_000.0,
            "{a:?}"
        );
        assert!(a.wait_p50.is_some() && a.minutes_to_admit_90_percent.is_some());
        assert!(table(&answers).contains("| 50 | 10 s | 600 s |"));
    }
}
