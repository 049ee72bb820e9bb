//! The wait estimate the page shows, against a direct simulation: crowds of visitors
//! run through the real request plan with a virtual clock, each coming back exactly
//! when their page says, until admitted.

use std::collections::HashMap;

use waiting_room::admission::estimate::{Estimate, draws_for_quantile};
use waiting_room::settings::config::Settings;
use waiting_room::settings::percentage::Percentage;
use waiting_room::{Action, Visit, plan};

const ARRIVAL: u64 = 1_700_000_023;
const KEY: &str = "estimate-simulation-key-0123456789abcdef";

/// Runs one visitor from `ARRIVAL` until admitted: the first page's estimate and
/// the realised wait in seconds.
fn run_visitor(uid: &str, settings: &Settings, keys: &HashMap<String, String>) -> (Estimate, u64) {
    let mut now = ARRIVAL;
    let mut cookie: Option<String> = None;
    let mut first_estimate = None;
    for _ in 0..1_000 {
        let header = cookie.as_ref().map(|token| format!("waiting_room={token}"));
        let visit = Visit {
            now,
            millis: 0,
            uid,
            path: "/events",
            path_and_query: "/events",
            cookie_header: header.as_deref(),
            ..Visit::default()
        };
        let p = plan(&visit, &settings.clone().into(), keys);
        if p.action == Action::Forward {
            return (first_estimate.unwrap(), now - ARRIVAL);
        }
        first_estimate.get_or_insert(p.estimate.unwrap());
        if let Some(set) = p.set_cookie {
            let value = set.strip_prefix("waiting_room=").unwrap();
            cookie = Some(value.split(';').next().unwrap().to_string());
        }
        now += p.refresh_after.unwrap();
    }
    panic!("{uid} was never admitted");
}

/// Checks the realised waits of a crowd against the estimates shown to it.
fn check(percentage: u8) {
    let keys = HashMap::from([("key1".to_string(), KEY.to_string())]);
    let settings = Settings {
        enabled: true,
        allow_percentage: Percentage::whole(percentage),
        ..Settings::default()
    };
    let interval = 2 * settings.wait_period_duration;
    let runs: Vec<(Estimate, u64)> = (0..4_000)
        .map(|i| {
            run_visitor(
                &format!("10.{}.{}.{}", i / 65_536, i / 256 % 256, i % 256),
                &settings,
                &keys,
            )
        })
        .collect();
    let n = runs.len() as f64;
    let p = f64::from(percentage) / 100.0;

    // The number of draws each visitor needed: realised wait = first + (draws - 1) · 2d.
    let draws: Vec<u64> = runs
        .iter()
        .map(|(e, wait)| {
            assert_eq!(
                (wait - e.next_draw_in) % interval,
                0,
                "a draw off the 2d grid"
            );
            (wait - e.next_draw_in) / interval + 1
        })
        .collect();
    // For each displayed quantile, the share admitted by it matches q (3.5 sigma).
    for q in [0.25, 0.5, 0.75] {
        let k = draws_for_quantile(p, q).unwrap();
        let within = |k: u64| draws.iter().filter(|&&d| d <= k).count() as f64 / n;
        let cdf = |k: u64| 1.0 - (1.0 - p).powf(k as f64);
        let sigma = (cdf(k) * (1.0 - cdf(k)) / n).sqrt();
        assert!(
            (within(k) - cdf(k)).abs() <= 3.5 * sigma + 1e-9,
            "p={percentage} q={q}: {} admitted within {k} draws, expected {}",
            within(k),
            cdf(k)
        );
        assert!(within(k) >= q - 3.5 * sigma, "p={percentage} q={q}");
    }
    // Each visitor's displayed quantiles are where their own wait lands for that k.
    for (e, _) in &runs {
        let k50 = draws_for_quantile(p, 0.5).unwrap();
        assert_eq!(e.p50, e.next_draw_in + (k50 - 1) * interval);
    }
    // The displayed mean matches the realised mean (3.5 sigma of the geometric).
    let realised = runs.iter().map(|(_, w)| *w as f64).sum::<f64>() / n;
    let shown = runs.iter().map(|(e, _)| e.mean as f64).sum::<f64>() / n;
    let sigma = interval as f64 * ((1.0 - p).sqrt() / p) / n.sqrt();
    assert!(
        (realised - shown).abs() <= 3.5 * sigma + 1.0,
        "p={percentage}: realised mean {realised:.1}, shown {shown:.1}"
    );
}

#[test]
fn estimates_match_a_simulation_at_50_percent() {
    check(50);
}

#[test]
fn estimates_match_a_simulation_at_20_percent() {
    check(20);
}
