//! Divan benchmarks of each decision path beside its HMAC floor, then the ratio
//! table from the same run: `cargo bench -p path-bench`.

use path_bench::cases::{self, Case, NAMES};
use path_bench::timing::{self, Effort};

fn case(name: &str) -> Case {
    cases::build(name).unwrap_or_else(|message| panic!("{message}"))
}

/// The whole per-request core, `plan()`.
#[divan::bench(args = NAMES)]
fn plan(bencher: divan::Bencher, name: &str) {
    let case = case(name);
    bencher.bench_local(|| case.plan());
}

/// The decision alone, `decide()`.
#[divan::bench(args = NAMES)]
fn decide(bencher: divan::Bencher, name: &str) {
    let case = case(name);
    bencher.bench_local(|| case.decide());
}

/// The HMAC-SHA256 work the path cannot avoid.
#[divan::bench(args = NAMES)]
fn floor(bencher: divan::Bencher, name: &str) {
    let case = case(name);
    bencher.bench_local(|| case.floor());
}

fn main() {
    divan::main();
    let cases: Vec<Case> = NAMES.iter().map(|name| case(name)).collect();
    let figures = timing::measure(&cases, Effort::default());
    println!(
        "\nRatios from the same run (medians of {} rounds):",
        Effort::default().rounds
    );
    print!("{}", timing::table(&figures, 1.5));
}

/// The pieces of a request beyond the HMAC, on the allow-renewal path: where the
/// time between a path and its floor goes.
mod parts {
    use std::hint::black_box;

    use waiting_room::keys::KeyStore;
    use waiting_room::{cookie, log, lottery, token};

    use super::case;

    fn renewal() -> path_bench::cases::Case {
        case("allow-renewal")
    }

    /// Finding the room's cookie in the `Cookie` header.
    #[divan::bench]
    fn find_cookie(bencher: divan::Bencher) {
        let header = format!(
            "theme=dark; waiting_room={}",
            renewal().cookie().unwrap_or("")
        );
        bencher.bench_local(|| cookie::find(black_box(&header)).map(str::len));
    }

    /// Reading the `Cookie` header once: the room's cookie and the origin's header.
    #[divan::bench]
    fn split_cookie_header(bencher: divan::Bencher) {
        let header = format!(
            "theme=dark; waiting_room={}",
            renewal().cookie().unwrap_or("")
        );
        bencher.bench_local(|| cookie::split(black_box(&header)).room_cookie.map(str::len));
    }

    /// Decoding a token in place (base64, fields, hex signature), without verifying it.
    #[divan::bench]
    fn decode(bencher: divan::Bencher) {
        let value = renewal().cookie().unwrap_or("").to_string();
        bencher.bench_local(|| {
            let mut buf = [0u8; token::DECODE_BUF_LEN];
            token::decode_in(black_box(&value), &mut buf).is_ok()
        });
    }

    /// Looking a key up in the store and keying its HMAC state (the pads hashed).
    #[divan::bench]
    fn key_lookup(bencher: divan::Bencher) {
        let case = renewal();
        bencher.bench_local(|| case.keys().key(black_box("key1")).is_some());
    }

    /// Verifying the presented text with the keyed state (one HMAC, no keying).
    #[divan::bench]
    fn verify(bencher: divan::Bencher) {
        let case = renewal();
        let value = case.cookie().unwrap_or("").to_string();
        let mut buf = [0u8; token::DECODE_BUF_LEN];
        let Ok(presented) = token::decode_in(&value, &mut buf) else {
            panic!("the case token decodes")
        };
        let Some(key) = case.keys().key("key1") else {
            panic!("the case key exists")
        };
        bencher.bench_local(|| black_box(&presented).verify(&key));
    }

    /// Minting a token with the keyed state: one HMAC (no keying) plus text, hex
    /// and base64, in one buffer.
    #[divan::bench]
    fn mint(bencher: divan::Bencher) {
        let case = renewal();
        let value = case.cookie().unwrap_or("").to_string();
        let mut buf = [0u8; token::DECODE_BUF_LEN];
        let Ok(presented) = token::decode_in(&value, &mut buf) else {
            panic!("the case token decodes")
        };
        let Some(key) = case.keys().key("key1") else {
            panic!("the case key exists")
        };
        bencher.bench_local(|| black_box(&presented.claims).mint(&key));
    }

    /// The lottery: ChaCha20 seeded from the signature, one draw.
    #[divan::bench]
    fn lottery_draw(bencher: divan::Bencher) {
        bencher.bench_local(|| {
            lottery::wins(
                black_box(0x00ab_cdef),
                waiting_room::percentage::Percentage::whole(50),
            )
        });
    }

    /// A waiting visitor's outlook: refresh time and the estimate's quantiles.
    #[divan::bench]
    fn outlook(bencher: divan::Bencher) {
        let case = renewal();
        bencher.bench_local(|| {
            waiting_room::outlook(
                black_box(path_bench::cases::NOW),
                path_bench::cases::NOW + 47,
                None,
                path_bench::cases::UID,
                case.settings(),
            )
        });
    }

    /// The request's log line.
    #[divan::bench]
    fn log_line(bencher: divan::Bencher) {
        let case = renewal();
        let verdict = case.decide();
        bencher.bench_local(|| {
            log::decision_line(
                path_bench::cases::NOW,
                path_bench::cases::UID,
                "/events",
                &verdict,
                case.settings(),
            )
        });
    }

    /// The `Set-Cookie` value.
    #[divan::bench]
    fn set_cookie(bencher: divan::Bencher) {
        let value = renewal().cookie().unwrap_or("").to_string();
        let case = renewal();
        let attributes = cookie::Attributes::new(case.settings(), false);
        bencher.bench_local(|| cookie::set_cookie(black_box(&value), &attributes));
    }
}
