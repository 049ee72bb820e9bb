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

    /// Decoding a token (base64, fields, hex signature), without verifying it.
    #[divan::bench]
    fn decode(bencher: divan::Bencher) {
        let value = renewal().cookie().unwrap_or("").to_string();
        bencher.bench_local(|| token::decode(black_box(&value)).is_ok());
    }

    /// The text a signature covers.
    #[divan::bench]
    fn string_to_sign(bencher: divan::Bencher) {
        let value = renewal().cookie().unwrap_or("").to_string();
        let Ok(presented) = token::decode(&value) else {
            panic!("the case token decodes")
        };
        bencher.bench_local(|| black_box(&presented.claims).string_to_sign());
    }

    /// Looking a key up in the store (a copy of the secret).
    #[divan::bench]
    fn key_lookup(bencher: divan::Bencher) {
        let case = renewal();
        bencher.bench_local(|| case.keys().key(black_box("key1")).is_some());
    }

    /// Minting a token: one HMAC plus hex, text and base64.
    #[divan::bench]
    fn mint(bencher: divan::Bencher) {
        let case = renewal();
        let value = case.cookie().unwrap_or("").to_string();
        let Ok(presented) = token::decode(&value) else {
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
