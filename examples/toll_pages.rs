//! Renders the built-in keep-waiting page (English) with a bot toll to pay, once per
//! difficulty and challenge, for `tests/browser/toll_speed.mjs` to time in Chromium:
//! `toll-bBB-iIII.html` in DIR, each with a fresh random 64-hex challenge.
//!
//!   cargo run --example toll_pages -- DIR [--count N] [--bits 8,10,12]
//!
//! `--count` is the number of pages (challenges) per difficulty (default 20);
//! `--bits` the difficulties, 1 to 32 (default 8,10,12,14,16,18,20).

use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use waiting_room::admission::decision::Decision;
use waiting_room::pages::page::Page;
use waiting_room::pages::view::{Status, TollChallenge};
use waiting_room::settings::config::QueueingMethod;
use waiting_room::settings::language::Language;
use waiting_room::settings::percentage::Percentage;

const USAGE: &str = "usage: toll_pages DIR [--count N] [--bits 8,10,...]";

fn main() {
    let (dir, count, bits) = parse_args().unwrap_or_else(|problem| {
        eprintln!("{problem}\n{USAGE}");
        std::process::exit(2);
    });
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {dir:?}: {e}"));
    let template = Page::KeepWaiting.default_html_in(Language::En);
    // Challenges from SHA-256 of a per-run seed and the page's place: unpredictable
    // and distinct, which is all the solve times need (the room's are signatures).
    let seed = run_seed();
    let mut written = 0;
    for &b in &bits {
        for i in 0..count {
            let challenge = hex::encode(Sha256::digest(format!("{seed}:{b}:{i}")));
            let status = Status {
                page: Page::KeepWaiting,
                decision: Some(Decision::Wait),
                now: 1_700_000_000,
                allow_percentage: Percentage::whole(12),
                wait_period_duration: 30,
                // Far off: nothing on the page reloads it, but keep it quiet anyway.
                refresh_after: Some(3600),
                estimate: None,
                queueing_method: QueueingMethod::Random,
                place: None,
                toll: Some(TollChallenge {
                    challenge,
                    bits: b,
                    cookie: "waiting_toll".into(),
                }),
                challenge: None,
            };
            let path = dir.join(format!("toll-b{b:02}-i{i:03}.html"));
            std::fs::write(&path, status.render(template.as_bytes()))
                .unwrap_or_else(|e| panic!("cannot write {path:?}: {e}"));
            written += 1;
        }
    }
    println!("{written} pages in {}", dir.display());
}

fn parse_args() -> Result<(PathBuf, u32, Vec<u8>), String> {
    let mut dir = None;
    let mut count = 20;
    let mut bits = vec![8, 10, 12, 14, 16, 18, 20];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--count" => {
                let value = args.next().ok_or("--count needs a number")?;
                count = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or(format!("--count must be 1 to 1000, not {value}"))?;
            }
            "--bits" => {
                let value = args.next().ok_or("--bits needs a list")?;
                bits = value
                    .split(',')
                    .map(|b| b.trim().parse().ok().filter(|b| (1..=32).contains(b)))
                    .collect::<Option<Vec<u8>>>()
                    .ok_or(format!("--bits must be numbers from 1 to 32, not {value}"))?;
            }
            _ if arg.starts_with('-') => return Err(format!("unknown option {arg}")),
            _ if dir.is_none() => dir = Some(PathBuf::from(arg)),
            _ => return Err(format!("one DIR only, not also {arg}")),
        }
    }
    Ok((dir.ok_or("DIR is missing")?, count, bits))
}

/// A seed no two runs share: the clock, the process and std's random hash keys.
fn run_seed() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let keyed = RandomState::new().hash_one(nanos);
    format!("{nanos}:{}:{keyed:016x}", std::process::id())
}
