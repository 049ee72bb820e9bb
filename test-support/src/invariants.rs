//! What must hold for any input, checked by the fuzz targets (`fuzz/`) and by the
//! fixed-seed run in the normal test command (`tests/native/fuzz_invariants.rs`): one
//! piece of code for both. Each check takes raw bytes, builds a case from them
//! with [`Input`], runs the code under test, and panics on a violation.
//!
//! Facts about signatures are established independently of the code under test,
//! with the tests' own minter ([`mint`]), so a bug in the room's HMAC path cannot
//! hide itself.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use control::origin_rule::OriginAnswer;
use control::record::Record;
use waiting_room::admission::decision::{Decision, Session, Verdict};
use waiting_room::answer::OriginOutcome;
use waiting_room::credentials::cookie::{self, DELETE_COOKIE};
use waiting_room::credentials::cookie_names;
use waiting_room::credentials::keys::SigningKey;
use waiting_room::credentials::token::{self, Claims, TokenKind};
use waiting_room::log::Answered;
use waiting_room::pages::page::Page;
use waiting_room::settings::config::{self, QueueingMethod, Settings};
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::layout;
use waiting_room::settings::percentage::Percentage;
use waiting_room::settings::room_settings::Remembered;
use waiting_room::{Action, Plan, Visit};

use super::fuzz_input::{self, Input, KEYS};
use super::{logins, mint, origins};

/// `token::decode` on any cookie value; `decode(mint(claims))` round-trips.
pub fn token(data: &[u8]) {
    let mut input = Input::new(data);
    let (uid, now) = (input.ip(), input.now());
    if input.below(4) == 0 {
        minted_token_round_trips(&mut input, uid);
    } else {
        decoded_token_is_canonical(&input.cookie_value(&uid, now));
    }
}

/// A token decodes only from its one canonical text, and `verify` agrees with
/// an independent HMAC for every key of the store.
fn decoded_token_is_canonical(value: &str) {
    let Ok(token) = token::decode(value) else {
        return;
    };
    assert!(value.len() <= token::MAX_COOKIE_VALUE_LEN, "{value:?}");
    let text = mint::open(value);
    assert_eq!(
        STANDARD.encode(&text),
        value,
        "non-canonical base64 accepted"
    );
    let (signed, sig) = text.split_once("&sig=").expect("no sig field");
    assert_eq!(signed, token.claims.string_to_sign(), "{text:?}");
    assert!(is_canonical_sig(sig), "{text:?}");
    for (kid, secret) in KEYS {
        if let Some(key) = SigningKey::new(*secret) {
            let independent = mint::vcl_sig(secret, signed) == sig;
            assert_eq!(token.verify(&key), independent, "{kid}: {text:?}");
        }
    }
}

/// Claims the room can sign are exactly those it reads back.
fn minted_token_round_trips(input: &mut Input, uid: String) {
    let dec = input.pick(&[TokenKind::Wait, TokenKind::Allow]);
    let claims = Claims {
        dec,
        exp: input.arbitrary(),
        uid,
        kid: input.kid(),
        // Fixed sessions' allow tokens carry their admission time, FIFO wait
        // tokens their arrival.
        adm: (dec == TokenKind::Allow && input.below(2) == 0).then(|| input.arbitrary()),
        arr: (dec == TokenKind::Wait && input.below(2) == 0).then(|| input.arbitrary()),
        toll: None,
    };
    let secret = format!("s{}", input.text(40));
    let key = SigningKey::new(secret.as_str()).expect("non-empty");
    let value = claims.mint(&key);
    let independent = match (claims.adm, claims.arr) {
        (Some(adm), _) => mint::mint_fixed(&secret, claims.exp, &claims.uid, &claims.kid, adm),
        (_, Some(arr)) => mint::mint_fifo(&secret, claims.exp, &claims.uid, &claims.kid, arr),
        (None, None) => mint::mint(
            &secret,
            &claims.dec.to_string(),
            claims.exp,
            &claims.uid,
            &claims.kid,
        ),
    };
    assert_eq!(value, independent, "the room mints unlike the VCL");
    if !token::is_valid_kid(&claims.kid) {
        return; // the room refuses to sign under such a key id (decision.rs)
    }
    let token = token::decode(&value).unwrap_or_else(|why| panic!("{why:?}: {claims:?}"));
    assert_eq!(token.claims, claims);
    assert!(token.verify(&key));
    let other = SigningKey::new(format!("{secret}x")).expect("non-empty");
    assert!(!token.verify(&other));
}

/// `cookie::find` finds the first room cookie; `without_room_cookie` removes
/// every room cookie and nothing else.
pub fn cookie_header(data: &[u8]) {
    let mut input = Input::new(data);
    let (uid, now) = (input.ip(), input.now());
    if input.below(4) == 0 {
        let header = input.text(300);
        found_value_is_a_room_pair(&header);
        room_cookie_is_stripped(&header);
        return;
    }
    let built = input.cookie_header(&uid, now);
    found_value_is_a_room_pair(&built.header);
    room_cookie_is_stripped(&built.header);
    // The first room cookie counts, unquoted; an empty one is no cookie.
    let first = built.room_values.first().map(|v| unquoted(v));
    assert_eq!(
        cookie::find(&built.header, cookie_names::TOKEN),
        first.filter(|v| !v.is_empty()),
        "{:?}",
        built.header
    );
    let kept = cookie::without_room_cookie(&built.header, &[]).unwrap_or_default();
    let kept: Vec<&str> = kept.split("; ").filter(|p| !p.is_empty()).collect();
    assert_eq!(kept, built.others, "{:?}", built.header);
}

/// The name of one part of a `Cookie` header: up to its first `=`, or all of it.
fn name_of(part: &str) -> &str {
    part.split_once('=').map_or(part, |(name, _)| name).trim()
}

/// `value` without one pair of surrounding double quotes.
fn unquoted(value: &str) -> &str {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value)
}

/// `find` returns the value of the first part named `waiting_room`, trimmed, without
/// one pair of surrounding double quotes; an empty value is no cookie.
fn found_value_is_a_room_pair(header: &str) {
    let first_room_pair = header
        .split(';')
        .filter_map(|part| part.split_once('='))
        .find(|(name, _)| name.trim() == cookie_names::TOKEN)
        .map(|(_, value)| unquoted(value.trim()))
        .filter(|v| !v.is_empty());
    assert_eq!(
        cookie::find(header, cookie_names::TOKEN),
        first_room_pair,
        "{header:?}"
    );
}

/// `without_room_cookie` drops every room cookie and keeps every other part, in
/// order, trimmed; what it returns has no room cookie left to drop.
fn room_cookie_is_stripped(header: &str) {
    let others = header
        .split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty() && name_of(part) != cookie_names::TOKEN);
    let Some(kept) = cookie::without_room_cookie(header, &[]) else {
        assert_eq!(others.count(), 0, "a cookie was dropped from {header:?}");
        return;
    };
    assert!(!kept.is_empty());
    assert!(
        kept.split(';')
            .all(|part| name_of(part) != cookie_names::TOKEN),
        "{kept:?} from {header:?}"
    );
    assert_eq!(cookie::find(&kept, cookie_names::TOKEN), None);
    assert_eq!(
        cookie::without_room_cookie(&kept, &[]).as_deref(),
        Some(&*kept)
    );
    assert!(others.eq(kept.split("; ")), "{kept:?} from {header:?}");
}

/// `Settings::from_lookup` with any value for every key stays within the
/// documented ranges and follows the documented fallbacks.
pub fn settings(data: &[u8]) {
    let store = Input::new(data).settings_store();
    let raw = |key: &str| store.get(key).map(String::as_str);
    let (s, fallbacks) = Settings::read(&|key| raw(key).map(str::to_string));
    assert_eq!(s, Settings::from_lookup(|key| raw(key).map(str::to_string)));

    assert_eq!(
        s.enabled,
        raw(config::ENABLED).map(str::trim) == Some("true")
    );
    assert!(!s.protected_paths.is_empty());
    assert!(s.protected_paths.iter().all(|p| p.starts_with('/')));
    let percentage = raw(config::ALLOW_PERCENTAGE);
    // Missing or unreadable: 100 (fail open), but 50 in FIFO mode, where the
    // percentage keeps only its ends (the cutoff decides).
    let fifo = raw(config::QUEUEING_METHOD).is_some_and(|v| v.trim().eq_ignore_ascii_case("fifo"));
    let default = if fifo { 500_000 } else { 1_000_000 };
    let expected = percentage.map_or(Some(default), expected_percentage);
    assert_eq!(
        s.allow_percentage.micros(),
        expected.unwrap_or(default),
        "{percentage:?}"
    );
    let fell_back = fallbacks.contains(&config::ALLOW_PERCENTAGE);
    assert_eq!(fell_back, expected.is_none(), "{percentage:?}");
    for (key, value, default) in [
        (
            config::ALLOW_PERIOD_TIMEOUT,
            s.allow_period_timeout,
            Settings::default().allow_period_timeout,
        ),
        (
            config::WAIT_PERIOD_DURATION,
            s.wait_period_duration,
            Settings::default().wait_period_duration,
        ),
        (
            config::COOKIE_LIFETIME,
            s.cookie_lifetime,
            Settings::default().cookie_lifetime,
        ),
        (
            config::FIFO_HOLD,
            s.fifo_hold,
            Settings::default().fifo_hold,
        ),
    ] {
        let parsed = raw(key).and_then(|v| v.trim().parse::<u64>().ok());
        let usable = parsed.filter(|d| (1..=config::MAX_DURATION).contains(d));
        assert_eq!(value, usable.unwrap_or(default), "{key}={:?}", raw(key));
        let fell_back = raw(key).is_some() && usable.is_none();
        assert_eq!(fallbacks.contains(&key), fell_back, "{key}={:?}", raw(key));
    }
    // Words: the documented one, any case, surrounding spaces ignored; else the default.
    let word =
        |key: &str, want: &str| raw(key).is_some_and(|v| v.trim().eq_ignore_ascii_case(want));
    assert_eq!(
        s.draw_grid == DrawGrid::Global,
        word(config::DRAW_GRID, "global")
    );
    assert_eq!(
        s.queueing_method == QueueingMethod::Fifo,
        word(config::QUEUEING_METHOD, "fifo")
    );
    // The IPv6 prefix: 32–128 (a leading `/` allowed), else the whole address.
    let prefix = raw(config::UID_IPV6_PREFIX)
        .and_then(|v| {
            let v = v.trim();
            v.strip_prefix('/').unwrap_or(v).parse::<u8>().ok()
        })
        .filter(|bits| (32..=128).contains(bits));
    assert_eq!(s.uid_ipv6_prefix, prefix.unwrap_or(128));
    // Unix times: whole numbers only (an opening time in seconds, not
    // milliseconds), else none (and said).
    for (key, value, max) in [
        (config::FIFO_CUTOFF, s.fifo_cutoff, u64::MAX),
        (config::QUEUE_OPENS_AT, s.queue_opens_at, 99_999_999_999),
    ] {
        let parsed = raw(key)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&t| t <= max);
        assert_eq!(value, parsed, "{key}={:?}", raw(key));
        assert_eq!(
            fallbacks.contains(&key),
            raw(key).is_some() && parsed.is_none()
        );
    }
    match raw(config::ACTIVE_KEY) {
        None => assert_eq!(s.active_key, Settings::default().active_key),
        Some(kid) => assert_eq!(s.active_key, kid.trim()),
    }
    if let Some(logger) = &s.logger_name {
        assert!(!logger.is_empty() && logger.trim() == logger);
    }
    for (i, key) in fallbacks.iter().enumerate() {
        assert!(raw(key).is_some(), "fallback for missing {key}");
        assert!(!fallbacks[..i].contains(key), "{key} twice");
    }

    // The edge's read: every key when the room applies to the path; otherwise the
    // bypass keys, every other key as if missing.
    let stored = layout::store_entries(
        config::KEYS
            .iter()
            .filter_map(|&key| Some((key, raw(key)?))),
    );
    for path in ["/events/1", "/about"] {
        let edge = RequestContext::for_request(
            &Remembered::new(|key: &str| stored.get(key).cloned()),
            None,
            path,
            0,
        )
        .settings;
        let want = match s.protects(path) {
            true => s.clone(),
            false => Settings::from_lookup(|key| {
                raw(key)
                    .filter(|_| config::BYPASS_KEYS.contains(&key))
                    .map(str::to_string)
            }),
        };
        assert_eq!(edge, want, "{path}");
    }
}

/// The documented rule, in millionths: a number with up to four decimals kept
/// (more are cut), however long, clamped to 0–100; `None` for anything else
/// (which fails open to 100 and is reported as a fallback).
fn expected_percentage(raw: &str) -> Option<u32> {
    let text = raw.trim();
    let (negative, number) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    // Millionths: the whole part times 10,000 plus four fraction digits, cut.
    let four: String = fraction.chars().chain("0000".chars()).take(4).collect();
    let significant = whole.trim_start_matches('0');
    Some(match (negative, significant.len()) {
        (true, _) => 0,
        (false, 0..=3) => {
            let whole: u32 = significant.parse().unwrap_or(0);
            (whole * 10_000 + four.parse::<u32>().ok()?).min(1_000_000)
        }
        (false, _) => 1_000_000,
    })
}

/// The settings [`plan`] leaves unset: fixed sessions, holding everyone, the bypass
/// rules, the toll and the challenge change the verdicts its checks expect.
const PLAN_UNMODELLED: [&str; 6] = [
    config::SESSION_MODE,
    config::QUEUE_ALL,
    config::BYPASS_ADDRESSES,
    config::BYPASS_PATHS,
    config::BOT_TOLL_BITS,
    config::BOT_CHALLENGE,
];

/// One whole request through `plan()`, with a fixed key store and everything
/// else fuzzed. Returns the plan, so a caller can see which states were reached.
pub fn plan(data: &[u8]) -> Plan {
    let mut input = Input::new(data);
    let (uid, now) = (input.ip(), input.now());
    let path = input.path();
    let path_and_query = format!("{path}{}", input.pick(&["", "?id=7"]));
    let cookie_header = match input.below(5) {
        0 => None,
        1 => Some(input.text(300)),
        _ => Some(input.cookie_header(&uid, now).header),
    };
    let mut store = input.settings_store();
    // Settings whose rules this oracle does not model, held by other targets and
    // tests (the toll's, the decision table's, the rooms'): off, as when unset.
    for key in PLAN_UNMODELLED {
        store.remove(key);
    }
    if input.below(4) != 0 {
        // Mostly a running room with a lottery, where cookies matter.
        store.insert(config::ENABLED.to_string(), "true".to_string());
        let micros = 1 + input.below(999_999) as u32;
        let percentage = Percentage::from_micros(micros);
        store.insert(config::ALLOW_PERCENTAGE.to_string(), percentage.to_string());
    }
    let settings = Settings::from_lookup(|key| store.get(key).cloned());
    // Now and then a pass header of any text: never a bypass unless signed.
    let pass_header = (input.below(8) == 0).then(|| input.text(120));
    let visit = Visit {
        now,
        millis: input.below(1000) as u16,
        uid: &uid,
        path: &path,
        path_and_query: &path_and_query,
        cookie_header: cookie_header.as_deref(),
        tls: input.below(2) == 0,
        pass_header: pass_header.as_deref(),
        ..Visit::default()
    };
    // The store is asked only for ids it can hold: an odd one costs no read.
    let keys = &|kid: &str| {
        assert!(storable(kid), "the store was asked for {kid:?}");
        fuzz_input::key_store(kid)
    };
    let context = RequestContext::from(settings.clone());
    let mut plan = waiting_room::plan(&visit, &context, keys);
    assert_eq!(plan, waiting_room::plan(&visit, &context, keys));
    plan_holds(&visit, &settings, &plan);
    if plan.action == Action::Forward {
        origin_answer_reads_back(&mut input, &mut plan);
    }

    plan
}

/// What the origin answered a forwarded request (a time and a status, Fastly's
/// cache, or no answer) reads back, through the controller's parser, as exactly
/// that, whatever the path or cookie held.
fn origin_answer_reads_back(input: &mut Input<'_>, plan: &mut Plan) {
    let status = 100 + input.below(500) as u16;
    let ms: u64 = input.arbitrary();
    let (want, outcome) = match input.below(3) {
        0 => {
            plan.origin_unreachable(&input.text(40));
            (Some(OriginAnswer::Failed), None)
        }
        1 => {
            let outcome = plan.origin_answered(status, None, Answered::Cache);
            (None, Some(outcome))
        }
        _ => {
            let outcome = plan.origin_answered(status, None, Answered::Origin { ms });
            (Some(OriginAnswer::Answered { ms, status }), Some(outcome))
        }
    };
    let line = &plan.log_line();
    assert!(!line.chars().any(char::is_control), "log line {line:?}");
    let record: Record = line
        .parse()
        .unwrap_or_else(|e| panic!("the room's own line is unreadable ({e}): {line}"));
    assert_eq!(record.origin, want, "{line}");
    let unavailable = plan.verdict.is_some() && status >= 500;
    if let Some(outcome) = outcome {
        assert_eq!(outcome == OriginOutcome::Unavailable, unavailable, "{line}");
    }
}

/// The room's own log line reads back, through the controller's parser, as
/// exactly what the room decided, whatever the path or cookie held.
fn log_line_reads_back(visit: &Visit, settings: &Settings, plan: &Plan) {
    let line = &plan.log_line();
    let record: Record = line
        .parse()
        .unwrap_or_else(|e| panic!("the room's own line is unreadable ({e}): {line}"));
    assert_eq!(
        (record.t, record.uid.as_str()),
        (visit.now, visit.uid),
        "{line}"
    );
    assert!(!record.released, "{line}");
    assert_eq!(
        record.controller_stale,
        settings.controller_stale(visit.now)
    );
    match &plan.verdict {
        None => assert_eq!((record.decision, record.percentage), (None, None), "{line}"),
        Some(v) => {
            assert_eq!(record.decision, Some(v.decision), "{line}");
            assert_eq!(record.percentage, Some(settings.percentage_at(visit.now)));
            assert_eq!(
                (record.session, record.transition, record.exp),
                (v.session, v.transition, v.exp),
                "{line}"
            );
            let fifo = settings.queueing_method == QueueingMethod::Fifo;
            assert_eq!(record.arr, v.arr, "{line}");
            assert_eq!(record.fifo, fifo, "{line}");
            assert_eq!(
                record.cutoff,
                settings.fifo_cutoff.filter(|_| fifo),
                "{line}"
            );
        }
    }
}

/// Any text given to the controller as a log line, or to the settings as a
/// percentage: a documented outcome, never a panic, and a percentage exactly as
/// the documented rule reads it, whose text form reads back to itself.
pub fn log_line(data: &[u8]) {
    // Random bytes rarely look like a line or a number: the first byte picks raw
    // text, a room line with a fuzzed tail, or text made of number characters.
    let (&mode, rest) = data.split_first().unwrap_or((&0, &[]));
    let rest = String::from_utf8_lossy(rest);
    let text = match mode % 3 {
        0 => rest.into_owned(),
        1 => format!(
            "waitingroom_log :: waitingroom t=1700000000 decision=anon uid=192.0.2.1 p={rest}"
        ),
        _ => number_like(rest.as_bytes()),
    };
    if let Ok(record) = text.parse::<Record>() {
        assert!(text.contains("waitingroom"), "{text:?}");
        assert!(text.contains(&format!("t={}", record.t)), "{text:?}");
    }
    let parsed = text.parse::<Percentage>().ok();
    assert_eq!(
        parsed.map(Percentage::micros),
        expected_percentage(&text),
        "{text:?}"
    );
    if let Some(p) = parsed {
        assert_eq!(p.to_string().parse::<Percentage>(), Ok(p));
    }
}

/// Text shaped like a number from fuzz bytes: a sign, whole digits, a point,
/// fraction digits, and now and then a stray character, each maybe missing.
fn number_like(data: &[u8]) -> String {
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next().unwrap_or(0);
    let mut text = String::from(["", "+", "-", " "][usize::from(next() % 4)]);
    let digit = |b: u8| char::from(b'0' + b % 10);
    for _ in 0..next() % 6 {
        text.push(digit(next()));
    }
    if next() % 3 != 0 {
        text.push('.');
    }
    for _ in 0..next() % 8 {
        text.push(digit(next()));
    }
    if next() % 5 == 0 {
        text.push(char::from(b" x%.e"[usize::from(next() % 5)]));
    }
    text
}

/// The room cookie the visit presents, as the room finds it.
fn presented<'a>(visit: &Visit<'a>) -> Option<&'a str> {
    visit
        .cookie_header
        .and_then(|header| cookie::find(header, cookie_names::TOKEN))
}

/// Every invariant of one plan.
fn plan_holds(visit: &Visit, settings: &Settings, plan: &Plan) {
    let line = &plan.log_line();
    assert!(!line.chars().any(char::is_control), "log line {line:?}");
    let presented = presented(visit);
    if let Some(value) = presented {
        assert_cookie_not_logged(line, value, visit, settings);
    }

    log_line_reads_back(visit, settings, plan);

    let Some(verdict) = &plan.verdict else {
        assert_eq!((&plan.set_cookie, plan.refresh_after), (&None, None));
        if settings.protects(visit.path) {
            // Only a room for members refuses without a decision here (no login is
            // presented): to sign in, or 401; never forwarded.
            assert!(settings.who_may_wait.needs_login(), "{line}");
            assert!(
                line.contains(" decision=refused reason=login-required "),
                "{line}"
            );
            assert!(
                matches!(plan.action, Action::Redirect | Action::Refuse(401)),
                "{line}"
            );
        } else {
            assert_eq!(plan.action, Action::Forward);
        }
        return;
    };
    assert!(settings.protects(visit.path));
    let page = match verdict.decision {
        Decision::Allow => None,
        Decision::Anon => Some(Page::StartWaiting),
        Decision::Wait | Decision::ReWait => Some(Page::KeepWaiting),
        Decision::Deny => Some(Page::Deny),
    };
    assert_eq!(plan.action, page.map_or(Action::Forward, Action::Serve));
    assert_eq!(
        plan.refresh_after.is_some(),
        page.is_some_and(Page::refreshes)
    );
    assert!(plan.refresh_after.is_none_or(|secs| secs >= 1));

    honoured_only_if_vouched(visit, settings, verdict.decision, presented);
    issued_cookie_is_sound(visit, settings, verdict.decision, plan);
    let p = settings.percentage_at(visit.now);
    if let Some(value) = presented
        && let Some(token) = vouch(value, visit.uid)
        && !p.is_zero()
        && !p.is_hundred()
    {
        let expected = expected_decision(&token, visit, p, settings);
        assert_eq!(verdict.decision, expected, "{:?}", mint::open(value));
        assert_eq!(verdict.rejection, None);
    }
}

/// A cookie is honoured (admits, or keeps a visitor waiting) only when it is a
/// validly signed, unexpired-as-needed token for this very visitor: in random
/// mode a wait token admits only once expired; in FIFO mode only when its place
/// is at or before the cutoff.
fn honoured_only_if_vouched(
    visit: &Visit,
    settings: &Settings,
    decision: Decision,
    presented: Option<&str>,
) {
    let vouched = || presented.and_then(|value| vouch(value, visit.uid));
    let fifo = settings.queueing_method == QueueingMethod::Fifo;
    match decision {
        Decision::Allow if !settings.percentage_at(visit.now).is_hundred() => {
            let token = vouched().unwrap_or_else(|| panic!("admitted on {presented:?}"));
            let admits = match token.dec {
                TokenKind::Allow => visit.now <= token.exp,
                TokenKind::Wait if fifo => fifo_place(&token, visit, settings)
                    .zip(settings.fifo_cutoff)
                    .is_some_and(|(arr, cutoff)| arr <= cutoff),
                // A FIFO place never draws in random mode.
                TokenKind::Wait => visit.now > token.exp && token.arr.is_none(),
            };
            assert!(admits, "admitted on {token:?} at {}", visit.now);
        }
        Decision::Wait => {
            let token = vouched().unwrap_or_else(|| panic!("held on {presented:?}"));
            assert_eq!(token.dec, TokenKind::Wait);
            if fifo {
                assert!(fifo_place(&token, visit, settings).is_some(), "{token:?}");
            } else {
                assert!(visit.now <= token.exp, "{token:?}");
            }
        }
        _ => {}
    }
}

/// FIFO: the place a valid wait token holds at the visit: its `arr` while its
/// hold lasts; a lottery token's `(exp - 2d) · 1000` within its redeem window;
/// with a pre-queue, never before the line opens (an earlier place is the
/// address's pre-queue place).
fn fifo_place(token: &Vouched, visit: &Visit, settings: &Settings) -> Option<u64> {
    let now = visit.now;
    let place = match token.arr {
        Some(arr) => (now <= token.exp).then_some(arr),
        None => (now <= token.exp.saturating_add(settings.redeem_window())).then(|| {
            token
                .exp
                .saturating_sub(2 * settings.wait_period_duration)
                .saturating_mul(1000)
        }),
    }?;
    Some(match settings.queue_opens_at {
        Some(opens) if place < opens.saturating_mul(1000) => {
            prequeue_place(visit.uid, opens, settings)
        }
        _ => place,
    })
}

/// The pre-queue place of `uid` (docs/reference/fifo.md, "The pre-queue"): the opening second plus the
/// first four bytes of `HMAC(active key, "prequeue&uid=<uid or its /64>&opens=…")`
/// mod 1000, computed here independently (0 when the active key is unusable).
fn prequeue_place(uid: &str, opens: u64, settings: &Settings) -> u64 {
    let network = uid.parse::<std::net::Ipv6Addr>().ok().map(|ip| {
        let masked = u128::from(ip) & (u128::MAX << 64);
        format!("{}/64", std::net::Ipv6Addr::from(masked))
    });
    let offset = fuzz_input::key_secret(&settings.active_key)
        .filter(|secret| !secret.is_empty() && storable(&settings.active_key))
        .map_or(0, |secret| {
            let text = format!(
                "prequeue&uid={}&opens={opens}",
                network.as_deref().unwrap_or(uid)
            );
            let sig = mint::vcl_sig(secret, &text);
            u64::from(u32::from_str_radix(&sig[2..10], 16).unwrap()) % 1000
        });
    opens.saturating_mul(1000).saturating_add(offset)
}

/// What the decision table says for a valid token at a percentage strictly
/// between 0 and 100.
fn expected_decision(
    token: &Vouched,
    visit: &Visit,
    percentage: Percentage,
    settings: &Settings,
) -> Decision {
    let now = visit.now;
    let expired = now > token.exp;
    if settings.queueing_method == QueueingMethod::Fifo {
        return match (token.dec, fifo_place(token, visit, settings)) {
            (TokenKind::Allow, _) if expired => Decision::Anon,
            (TokenKind::Allow, _) => Decision::Allow,
            (TokenKind::Wait, None) => Decision::Anon,
            (TokenKind::Wait, Some(arr)) if settings.fifo_cutoff.is_some_and(|c| arr <= c) => {
                Decision::Allow
            }
            (TokenKind::Wait, Some(_)) => Decision::Wait,
        };
    }
    if token.dec == TokenKind::Wait && token.arr.is_some() {
        return Decision::ReWait; // a FIFO place waits for its address's next draw
    }
    match (token.dec, expired) {
        (TokenKind::Wait, false) => Decision::Wait,
        (TokenKind::Allow, false) => Decision::Allow,
        (TokenKind::Allow, true) => Decision::Anon,
        // A kept copy presented after its redeem window gets no draw.
        (TokenKind::Wait, true) if now > token.exp.saturating_add(settings.redeem_window()) => {
            Decision::ReWait
        }
        (TokenKind::Wait, true)
            if waiting_room::admission::lottery::wins(token.seed, percentage) =>
        {
            Decision::Allow
        }
        (TokenKind::Wait, true) => Decision::ReWait,
    }
}

/// The `Set-Cookie` matches the decision and carries a token the room would
/// accept from this visitor, signed with the active key.
fn issued_cookie_is_sound(visit: &Visit, settings: &Settings, decision: Decision, plan: &Plan) {
    let verdict = plan.verdict.as_ref().expect("decided");
    let set_cookie = plan.set_cookie.as_deref();
    let fifo = settings.queueing_method == QueueingMethod::Fifo
        && !settings.percentage_at(visit.now).is_zero()
        && !settings.percentage_at(visit.now).is_hundred();
    let dec = match decision {
        // In FIFO mode a held place is re-issued when half its hold has passed.
        Decision::Wait if fifo && set_cookie.is_some() => TokenKind::Wait,
        Decision::Wait => return assert_eq!(set_cookie, None),
        Decision::Deny => return assert_eq!(set_cookie, Some(DELETE_COOKIE)),
        Decision::Allow if verdict.session == Some(Session::Kept) => {
            return kept_token_is_young(visit, settings, set_cookie);
        }
        Decision::Allow => TokenKind::Allow,
        Decision::Anon | Decision::ReWait => TokenKind::Wait,
    };
    let active = fuzz_input::key_secret(&settings.active_key).filter(|s| !s.is_empty());
    let usable = active.is_some() && storable(&settings.active_key);
    assert_eq!(verdict.signing_key_missing, !usable);
    let Some(set_cookie) = set_cookie else {
        assert!(
            !usable,
            "no cookie although {:?} is usable",
            settings.active_key
        );
        assert!(plan.log_line().contains(" ALERT=active-key-unusable"));
        return;
    };
    // `waiting_room=<token>; path=/; max-age=<lifetime>`, then the attributes.
    let attributes = format!("; path=/; max-age={}", settings.cookie_lifetime);
    let value = set_cookie
        .strip_prefix("waiting_room=")
        .and_then(|rest| rest.split_once(';'))
        .filter(|(_, rest)| format!(";{rest}").starts_with(&attributes))
        .map(|(value, _)| value)
        .unwrap_or_else(|| panic!("{set_cookie:?}"));
    let token = vouch(value, visit.uid).unwrap_or_else(|| panic!("unsound {value:?}"));
    assert_eq!(token.dec, dec);
    assert_eq!(token.kid, settings.active_key);
    let now = visit.now;
    match dec {
        TokenKind::Allow => allow_token_is_sound(visit, settings, verdict, &token),
        TokenKind::Wait if fifo => fifo_token_is_sound(visit, settings, verdict, &token),
        TokenKind::Wait => {
            assert_eq!(token.arr, None, "{token:?}");
            let d = settings.wait_period_duration;
            assert!(
                token.exp > now || token.exp == u64::MAX,
                "{token:?} at {now}"
            );
            if token.exp == u64::MAX {
                return;
            }
            match settings.draw_grid {
                DrawGrid::Global => {
                    assert!(token.exp.is_multiple_of(d), "{token:?}");
                    assert!(token.exp - now <= 2 * d, "{token:?} at {now}");
                }
                // The first point of the address's grid at least `d` ahead.
                DrawGrid::Address => {
                    let offset = mint::fnv1a(visit.uid) % (2 * d);
                    assert_eq!(token.exp % (2 * d), offset, "{token:?} of {}", visit.uid);
                    let (now, d, exp) = (u128::from(now), u128::from(d), u128::from(token.exp));
                    assert!((now + d..now + 3 * d).contains(&exp), "{token:?} at {now}");
                }
            }
        }
    }
}

/// An allow token set ends `allow_period_timeout` after its session's start
/// (docs/reference/how-it-works.md, "Sessions"): `now` for a renewal or a session without a
/// drawn wait token; for one a wait token starts, a second of that token alone,
/// so every presentation of the win gets the same token: a won draw's `exp + 1`,
/// a FIFO place's `exp - fifo_hold`, a lottery ticket's place `exp - 2d` under a
/// FIFO cutoff; each only when not after `now` and leaving at least half the
/// timeout. Whatever the path, the end is never after `now + timeout` and at
/// most the path's bound before it.
fn allow_token_is_sound(visit: &Visit, settings: &Settings, verdict: &Verdict, token: &Vouched) {
    use waiting_room::admission::decision::Transition;
    let now = visit.now;
    let timeout = settings.allow_period_timeout;
    let presented = presented(visit)
        .and_then(|value| vouch(value, visit.uid))
        .filter(|held| held.dec == TokenKind::Wait);
    let d = settings.wait_period_duration;
    let derived = match (verdict.session, verdict.transition, &presented) {
        (Some(Session::New), Some(Transition::LotteryWon), Some(held)) => held.exp.checked_add(1),
        (Some(Session::New), Some(Transition::CutoffReached), Some(held)) => match held.arr {
            Some(_) => held.exp.checked_sub(settings.fifo_hold),
            None => held.exp.checked_sub(2 * d),
        },
        _ => None,
    };
    let start = derived
        .filter(|&start| start <= now && (now - start).saturating_mul(2) <= timeout)
        .unwrap_or(now);
    assert_eq!(
        token.exp,
        start.saturating_add(timeout),
        "{token:?} at {now}"
    );
    let today = now.saturating_add(timeout);
    let bound = settings
        .redeem_window()
        .max(settings.fifo_hold)
        .max(2 * d + settings.redeem_window());
    assert!(
        token.exp <= today && today - token.exp <= bound,
        "{token:?} at {now}"
    );
    assert_eq!(verdict.exp, Some(token.exp));
}

/// A FIFO wait token keeps the place the visitor held (or joined at), or for a
/// newcomer is their arrival (in the pre-queue: the opening second plus an
/// offset under a second); it is held `fifo_hold` after now, or after the line
/// opens.
fn fifo_token_is_sound(visit: &Visit, settings: &Settings, verdict: &Verdict, token: &Vouched) {
    let arr = token.arr.unwrap_or_else(|| panic!("no arr in {token:?}"));
    assert_eq!(verdict.arr, Some(arr));
    let now = visit.now;
    let opens = settings.queue_opens_at.unwrap_or(0);
    assert_eq!(
        token.exp,
        now.max(opens).saturating_add(settings.fifo_hold),
        "{token:?} at {now}"
    );
    let now_ms = now
        .saturating_mul(1000)
        .saturating_add(u64::from(visit.millis));
    let presented = presented(visit).and_then(|value| vouch(value, visit.uid));
    let opens_ms = opens.saturating_mul(1000);
    match (verdict.decision, presented) {
        (Decision::Wait, Some(held)) => {
            assert_eq!(Some(arr), fifo_place(&held, visit, settings), "{held:?}")
        }
        (Decision::Wait, None) => panic!("a place re-issued from nothing"),
        _ if settings.queue_opens_at.is_none() => assert_eq!(arr, now_ms),
        // Before the opening: the pre-queue place; after: behind the whole pre-queue.
        _ if now_ms < opens_ms => assert_eq!(arr, prequeue_place(visit.uid, opens, settings)),
        _ => assert_eq!(arr, now_ms.max(opens_ms.saturating_add(1000))),
    }
}

/// Lazy renewal: an admitted visitor keeps their token (no `Set-Cookie`) only when it
/// is a valid allow token for them, signed by the active key, with at least half of
/// `allow_period_timeout` left and not more than the whole of it.
fn kept_token_is_young(visit: &Visit, settings: &Settings, set_cookie: Option<&str>) {
    assert_eq!(set_cookie, None);
    let presented = presented(visit);
    let token = presented
        .and_then(|value| vouch(value, visit.uid))
        .unwrap_or_else(|| panic!("kept {presented:?}"));
    assert_eq!(
        (token.dec, token.kid.as_str()),
        (TokenKind::Allow, settings.active_key.as_str())
    );
    let left = token
        .exp
        .checked_sub(visit.now)
        .expect("kept an expired token");
    let timeout = settings.allow_period_timeout;
    assert!(
        left.saturating_mul(2) >= timeout && left <= timeout,
        "kept a token with {left} s of {timeout} left"
    );
}

/// The room never logs its cookie. Checked for values that could be a credential
/// (at least 16 characters of valid base64, so without spaces) that the request
/// does not also carry in a field the log line echoes (path, uid, active key).
/// Such a value cannot straddle two fields of the line, and no fixed part of the
/// line has 16 base64 characters in a row, so finding it means it leaked.
fn assert_cookie_not_logged(line: &str, value: &str, visit: &Visit, settings: &Settings) {
    let credential_like = value.len() >= 16 && STANDARD.decode(value).is_ok();
    let echoed = [visit.path, visit.uid, settings.active_key.as_str()]
        .iter()
        .any(|field| field.contains(value) || field.escape_debug().to_string().contains(value));
    if credential_like && !echoed {
        assert!(!line.contains(value), "cookie {value:?} logged: {line:?}");
    }
}

/// A token that an independent reading of the token format (docs/reference/token.md) accepts.
#[derive(Debug)]
struct Vouched {
    dec: TokenKind,
    exp: u64,
    kid: String,
    seed: u32,
    /// A FIFO wait token's arrival.
    arr: Option<u64>,
}

/// `value` read independently of `token::decode`: canonical base64 of
/// `dec=…&exp=…&uid=<uid>&kid=…&sig=0x…`, signed by a non-empty store key.
fn vouch(value: &str, uid: &str) -> Option<Vouched> {
    let text = String::from_utf8(STANDARD.decode(value).ok()?).ok()?;
    if STANDARD.encode(&text) != value || value.len() > token::MAX_COOKIE_VALUE_LEN {
        return None;
    }
    let (signed, sig) = text.split_once("&sig=")?;
    let (dec, rest) = signed.strip_prefix("dec=")?.split_once("&exp=")?;
    let (exp, rest) = rest.split_once("&uid=")?;
    let (token_uid, kid) = rest.split_once("&kid=")?;
    // A FIFO wait token's sixth field.
    let (kid, arr) = match kid.split_once("&arr=") {
        Some((kid, arr)) => {
            let value: u64 = arr.parse().ok()?;
            (value.to_string() == arr && dec == "wait").then_some((kid, Some(value)))?
        }
        None => (kid, None),
    };
    // A key id the store cannot hold names no key, whatever the store has under it.
    let secret = fuzz_input::key_secret(kid).filter(|s| !s.is_empty() && storable(kid))?;
    let dec = match dec {
        "wait" => TokenKind::Wait,
        "allow" => TokenKind::Allow,
        _ => return None,
    };
    let exp_value: u64 = exp.parse().ok()?;
    let canonical = exp_value.to_string() == exp && token_uid == uid && is_canonical_sig(sig);
    (canonical && mint::vcl_sig(secret, signed) == sig).then(|| Vouched {
        dec,
        exp: exp_value,
        kid: kid.to_string(),
        seed: mint::seed(sig),
        arr,
    })
}

/// Whether `kid` can name a stored key (docs/reference/token.md): 1 to 255 ASCII
/// letters, digits, `-`, `_` and `.`, no other byte.
fn storable(kid: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    !kid.is_empty() && kid.len() <= 255 && kid.chars().all(allowed)
}

/// `0x` and 64 lowercase hex digits.
fn is_canonical_sig(sig: &str) -> bool {
    sig.strip_prefix("0x").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The rooms' own parsers on any text: the `rooms` index, a room's value, the
/// `events` schedule, an address block, a signed pass and a pass link. No panic; an
/// index or schedule keeps only what holds together; a pass is accepted only when it
/// reads back to the same claims and its room's key signed it.
pub fn rooms(data: &[u8]) {
    use waiting_room::credentials::keys::{KeyStore, RoomKeys};
    use waiting_room::credentials::pass::{self, PassClaims};
    use waiting_room::settings::events::{Phase, Schedule};
    use waiting_room::settings::room::{Index, Room, RoomName};
    use waiting_room::settings::room_settings::Remembered;
    use waiting_room::settings::rules::Cidr;

    let (&mode, rest) = data.split_first().unwrap_or((&0, &[]));
    let text = String::from_utf8_lossy(rest).into_owned();
    let index = Index::parse(&text);
    for scope in &index.rooms {
        assert!(RoomName::new(scope.name.as_str()).is_some());
        assert!(!scope.paths.is_empty() && scope.paths.iter().all(|p| p.starts_with('/')));
    }
    let schedule = Schedule::parse(&text);
    for (i, e) in schedule.events.iter().enumerate() {
        assert!(e.prequeue_start <= e.start && e.start < e.end, "{e:?}");
        for other in &schedule.events[i + 1..] {
            assert!(e.end <= other.prequeue_start || other.end <= e.prequeue_start);
        }
        assert!(matches!(schedule.phase(e.start), Phase::Running(r) if r == e));
    }
    if let Ok(block) = text.parse::<Cidr>() {
        assert_eq!(block.to_string().parse::<Cidr>(), Ok(block));
    }
    let _ = pass::from_link(&text);
    // A room's settings from any value, and any index, through the edge's reader.
    let store = |key: &str| match key {
        "rooms" => Some(r#"{"r": {"paths": ["/"]}}"#.to_string()),
        "room.r" | "settings" => Some(text.clone()),
        _ => None,
    };
    let _ = RequestContext::for_request(&Remembered::new(store), None, "/x", 1_700_000_000);
    // Passes: any text is refused or reads back; a minted one is accepted.
    let room = match mode % 2 {
        0 => Room::Service,
        _ => Room::Named(RoomName::new("r").unwrap()),
    };
    let store: std::collections::HashMap<String, String> = fuzz_input::KEYS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let keys = RoomKeys::new(&store, room.name());
    if let Ok((claims, _)) = pass::check(&text, &room, &keys, 1_700_000_000, None) {
        let key = keys.key(&claims.kid).unwrap().unwrap();
        assert_eq!(claims.mint(&key), text.trim(), "{text:?}");
    }
    let claims = PassClaims {
        room: room.name().map_or(String::new(), ToString::to_string),
        iat: u64::from(mode),
        exp: 1_700_000_000 + u64::from(mode),
        kid: fuzz_input::KEYS[0].0.to_string(),
    };
    let minted = claims.mint(&keys.key(&claims.kid).unwrap().unwrap());
    assert!(pass::check(&minted, &room, &keys, 1_700_000_000, None).is_ok());
}

/// The bot toll on any input: bits and nonces parse only from their canonical
/// text; a due wait token that owes is drawn only with a nonce that pays what it
/// owes, by an independent check of the documented hash ([`mint::toll_pays`]).
/// Returns the transition and whether the request paid.
pub fn toll(data: &[u8]) -> (Option<waiting_room::admission::decision::Transition>, bool) {
    use waiting_room::admission::decision::{Context, Request, Transition, decide};
    use waiting_room::bots::toll;

    let mut input = Input::new(data);
    let raw = input.text(24);
    if let Some(nonce) = toll::parse_nonce(&raw) {
        assert_eq!(nonce.to_string(), raw);
    }
    if let Some(bits) = toll::parse_bits(&raw) {
        assert!(bits <= toll::MAX_BITS && bits.to_string() == raw, "{raw:?}");
    }

    let (uid, now) = (input.ip(), input.now());
    // Small difficulties: a solution costs the check at most a few dozen hashes.
    let owes = input.below(5) as u8;
    let room_bits = input.below(5) as u8;
    let exp = input.exp_near(now);
    let (kid, secret) = KEYS[0];
    let (value, challenge) = mint::mint_toll(secret, exp, &uid, kid, owes);
    let solution = || mint::toll_nonce(&challenge, u32::from(owes)).to_string();
    let nonce = match input.below(4) {
        0 => input.text(24),
        1 => input.mutate(&solution()),
        2 => solution(),
        _ => String::new(),
    };
    let store: std::collections::HashMap<&str, String> = [
        (config::ENABLED, "true".to_string()),
        (config::ALLOW_PERCENTAGE, (1 + input.below(99)).to_string()),
        (config::BOT_TOLL_BITS, room_bits.to_string()),
        (config::ACTIVE_KEY, kid.to_string()),
    ]
    .into();
    let settings = Settings::from_lookup(|key| store.get(key).cloned());
    let context = Context {
        toll_nonce: Some(&nonce).filter(|n| !n.is_empty()).map(|n| n.as_str()),
        ..Context::new(&settings)
    };
    let request = Request::new(now, &uid, Some(&value));
    let verdict = decide(&request, &context, &fuzz_input::key_store);
    let owed = u32::from(owes.min(room_bits));
    let canonical = toll::parse_nonce(&nonce).filter(|n| n.to_string() == nonce);
    let pays = owed == 0 || canonical.is_some_and(|n| mint::toll_pays(&challenge, n, owed));
    let drawn = matches!(
        verdict.transition,
        Some(Transition::LotteryWon | Transition::LotteryLost)
    );
    assert!(!drawn || pays, "drawn unpaid: {nonce:?} owed {owed}");
    if verdict.rejection.is_none() {
        assert_eq!(verdict.toll_paid, owed > 0 && pays && canonical.is_some());
    }
    if owed > 0 && !pays {
        assert_ne!(verdict.decision, Decision::Allow, "{nonce:?}");
    }
    (verdict.transition, verdict.toll_paid)
}

/// The settings of the hostile-path table (`tests/blackbox/hostile_paths.rs`) and of the
/// `path` target: the service room on `/events` and `/checkout`, `/events/static/`
/// bypassed, and the room `drops` on `/drops/`, open to all.
pub const PATH_STORE: [(&str, &str); 6] = [
    ("enabled", "true"),
    ("allow_percentage", "50"),
    ("protected_paths", "/events,/checkout"),
    ("bypass_paths", "/events/static/"),
    ("rooms", r#"{"drops": {"paths": ["/drops/"]}}"#),
    (
        "room.drops",
        r#"{"enabled": true, "allow_percentage": 100}"#,
    ),
];

/// Where the room sends a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// Refused: its readings fall in different rooms.
    Refused,
    /// Bypassed by `bypass_paths`.
    Bypassed,
    /// Outside every room.
    Outside,
    /// Into this room's decision (`service` or a room's name).
    Room(String),
}

/// What the room does with the request line's `target` under [`PATH_STORE`], and
/// the path it forwards: the SDK's parse of the target, as the edge writes it back.
pub fn route(target: &str) -> (String, Routed) {
    let path = origins::as_url(target);
    let store = waiting_room::settings::layout::store_entries(PATH_STORE);
    let lookup = Remembered::new(|key: &str| store.get(key).cloned());
    let context = RequestContext::for_request(&lookup, None, &path, 1_700_000_000);
    let visit = Visit {
        now: 1_700_000_000,
        uid: "192.0.2.10",
        path: &path,
        path_and_query: &path,
        ..Visit::default()
    };
    let plan = waiting_room::plan(&visit, &context, &fuzz_input::key_store);
    let routed = if matches!(plan.action, Action::Refuse(_)) {
        Routed::Refused
    } else if plan.log_line().contains(" scope=bypass-path ") {
        Routed::Bypassed
    } else if plan.log_line().contains(" scope=unprotected-path ") {
        Routed::Outside
    } else {
        Routed::Room(
            context
                .room
                .name()
                .map_or("service", |n| n.as_str())
                .to_string(),
        )
    };
    (path, routed)
}

/// The table's rooms, by the longest prefix, read apart from the room's code.
pub fn room_by_prefix(path: &str) -> Routed {
    [
        ("/events", "service"),
        ("/checkout", "service"),
        ("/drops/", "drops"),
    ]
    .into_iter()
    .filter(|(prefix, _)| path.starts_with(prefix))
    .max_by_key(|(prefix, _)| prefix.len())
    .map_or(Routed::Outside, |(_, room)| Routed::Room(room.to_string()))
}

/// A request target is bypassed only when every origin model reads the forwarded
/// path inside the bypass prefix, and is placed in a room (or outside every room)
/// only when every model reads it into that same one; refusing is always safe.
pub fn path_is_held(target: &str) -> Routed {
    let (forwarded, routed) = route(target);
    for origin in origins::ORIGINS {
        let Some(read) = origin.read(&forwarded) else {
            continue;
        };
        match &routed {
            Routed::Refused => {}
            Routed::Bypassed => assert!(
                read.starts_with("/events/static/"),
                "{target:?} is bypassed, but {origin:?} reads {forwarded:?} as {read:?}"
            ),
            placed => assert_eq!(
                &room_by_prefix(&read),
                placed,
                "{target:?} forwarded as {forwarded:?}: {origin:?} reads {read:?}"
            ),
        }
    }
    routed
}

/// [`path_is_held`] for a target built from `data`: pieces that origins read in
/// different ways (separators raw and encoded, dots, parameters, the table's
/// prefixes), joined in any order.
pub fn path(data: &[u8]) -> Routed {
    const PIECES: [&str; 24] = [
        "/",
        "//",
        ".",
        "..",
        "%2f",
        "%2F",
        "%2e",
        "%2E",
        "%5c",
        "\\",
        ";",
        ";x=1",
        "%25",
        "%63",
        "events",
        "static",
        "checkout",
        "drops",
        "x",
        "/events/static/",
        "/drops/",
        "%252f",
        "%252e",
        "/checkout",
    ];
    let target: String = data
        .iter()
        .take(24)
        .map(|b| PIECES[usize::from(*b) % PIECES.len()])
        .collect();
    let target = if target.starts_with('/') {
        target
    } else {
        format!("/{target}")
    };
    path_is_held(&target)
}

/// `login::verify` on a login token under the fixed keys of [`logins`]: minted (for
/// any subject, valid or expired), a byte away, or any text. A login is a person
/// only when the token's signed part is the minted one, its claims hold, and its uid is
/// the documented hash of its subject, computed independently.
pub fn login(data: &[u8]) -> Option<&'static str> {
    use waiting_room::credentials::login::{self, LEEWAY, Login};
    use waiting_room::credentials::login_mint::mint;

    let mut input = Input::new(data);
    let now = input.now();
    // The keys' PEM parse is slow: the settings are read once.
    static SETTINGS: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();
    let settings = SETTINGS.get_or_init(|| {
        let members = logins::settings_members();
        Settings::read(&|key| {
            members
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
        })
        .0
    });
    // Signing is slow in test builds: a few tokens each key, minted once.
    static MINTED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let minted = MINTED.get_or_init(|| {
        let keys = logins::keys();
        let subs = ["alice", "bob", "", "\u{1F600}\"'", "x"];
        let mut minted = Vec::new();
        for (i, sub) in subs.into_iter().enumerate() {
            for exp in [fuzz_input::EPOCH - 3600, fuzz_input::EPOCH + 3600] {
                let mut claims = logins::claims(sub, fuzz_input::EPOCH - 7200);
                claims["exp"] = serde_json::json!(exp);
                minted.push(mint(&claims, &keys[i % 3], logins::KIDS[i % 3]));
            }
        }
        minted
    });
    let minted = minted[input.below(minted.len())].as_str();
    let now = match input.below(2) {
        0 => fuzz_input::EPOCH,
        _ => now,
    };
    let presented = match input.below(4) {
        0 => input.text(600),
        1 | 2 => input.mutate(minted),
        _ => minted.to_string(),
    };
    let login = login::verify(Some(&presented), settings, "192.0.2.1", now, &mut |kid| {
        Ok((kid == logins::KIDS[2]).then(|| logins::HS256_SECRET.as_bytes().to_vec()))
    });
    match login {
        Login::Person { uid, claims } => {
            let signed = |token: &str| token.rsplit_once('.').map(|(m, _)| m.to_string());
            assert_eq!(signed(&presented), signed(minted), "{presented:?}");
            assert!(
                claims["exp"]
                    .as_u64()
                    .is_some_and(|exp| exp.saturating_add(LEEWAY) >= now)
            );
            assert_eq!(
                uid,
                logins::person_uid(claims["sub"].as_str().unwrap(), None)
            );
            Some("person")
        }
        Login::Refused(why) => Some(why.word()),
        Login::Absent | Login::Unread => panic!("{login:?} for a presented token"),
    }
}
