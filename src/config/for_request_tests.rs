//! [`Settings::for_request`] against [`Settings::from_lookup`], through the whole
//! plan: for every combination below of stored settings, client and cookie, the
//! plan from the keys one request reads, and the page the edge would serve with
//! it, are those from every key (but for `config_fallback`, which names only the
//! unusable keys read).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;

use super::*;
use crate::decision::{Decision, Transition};
use crate::keys::SigningKey;
use crate::page::Page;
use crate::token::{Claims, TokenKind};
use crate::uid::uid_of;
use crate::{Action, Visit, plan};

const NOW: u64 = 1_700_000_023;
const MILLIS: u16 = 456;
const NOW_MS: u64 = NOW * 1000 + MILLIS as u64;
const K1: &str = "a-strong-test-key-of-at-least-32-bytes";
const K2: &str = "a-second-strong-test-key-of-32-bytes";
const FORGED: &str = "a-key-the-room-has-never-held-32-bytes";

fn keys() -> HashMap<String, String> {
    HashMap::from([
        ("key1".to_string(), K1.to_string()),
        ("key2".to_string(), K2.to_string()),
    ])
}

/// splitmix64: the choices for the keys the loops do not go through.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn pick<T: Clone>(&mut self, choices: &[T]) -> T {
        choices[(self.next() % choices.len() as u64) as usize].clone()
    }
}

/// The keys the loops below do not go through, and the values each may take:
/// missing (`None`) or usable, then unusable (the full read names the key in
/// `fallbacks`).
type Choices = (&'static str, Vec<Option<String>>, Vec<Option<String>>);

fn other_key_choices() -> Vec<Choices> {
    let s = |v: &str| Some(v.to_string());
    let n = |v: u64| Some(v.to_string());
    let key = |key, usable: &[Option<String>], unusable: &[Option<String>]| {
        (key, usable.to_vec(), unusable.to_vec())
    };
    vec![
        key(PROTECTED_PATHS, &[None, s("/about,/x")], &[s("events")]),
        key(
            ALLOW_PERCENTAGE,
            &[None, s("50"), s("12.5"), s("0"), s("100")],
            &[s("abc")],
        ),
        key(CONTROLLER_TIMEOUT, &[None, s("60"), s("600")], &[s("0")]),
        key(WAIT_PERIOD_DURATION, &[None, s("45"), s("10")], &[s("0")]),
        key(ALLOW_PERIOD_TIMEOUT, &[None, s("600")], &[s("soon")]),
        key(COOKIE_LIFETIME, &[None, s("100")], &[s("x")]),
        key(REDEEM_WINDOW, &[None, s("5"), s("600")], &[s("x")]),
        key(ACTIVE_KEY, &[None, s("key2"), s("key3"), s("")], &[]),
        key(LOGGER_NAME, &[None, s("log")], &[]),
        key(REFRESH_MODE, &[None, s("fixed")], &[s("x")]),
        key(WAITING_STATUS, &[None, s("429")], &[s("404")]),
        key(SESSION_MODE, &[None, s("fixed")], &[s("x")]),
        key(COOKIE_HTTPONLY, &[None, s("false")], &[s("x")]),
        key(COOKIE_SAMESITE, &[None, s("None")], &[s("x")]),
        key(COOKIE_SECURE, &[None, s("always")], &[s("x")]),
        key(DRAW_GRID, &[None, s("global")], &[s("x")]),
        key(UID_IPV6_PREFIX, &[None, s("64"), s("/48")], &[s("7")]),
        key(
            FIFO_CUTOFF,
            &[None, n(NOW_MS - 20_000), n(NOW_MS - 5_000)],
            &[s("x")],
        ),
        key(FIFO_RATE, &[None, s("12.5"), s("0")], &[s("x")]),
        key(FIFO_HOLD, &[None, s("60")], &[s("0")]),
        key(
            QUEUE_OPENS_AT,
            &[None, n(NOW + 100), n(NOW - 100)],
            &[s("x"), s("99999999999999")],
        ),
    ]
}

/// A store of the other keys drawn by `rng`: usable values only, or in a `messy`
/// store unusable ones too.
fn drawn_keys(rng: &mut Rng, messy: bool) -> HashMap<&'static str, String> {
    let mut store = HashMap::new();
    for (key, usable, unusable) in other_key_choices() {
        let mut choices = usable;
        if messy {
            choices.extend(unusable);
        }
        store.extend(rng.pick(&choices).map(|value| (key, value)));
    }
    store
}

/// The cookies a visitor `uid` may bring, by name.
fn cookies(uid: &str) -> Vec<(&'static str, Option<String>)> {
    let key = |secret: &str| SigningKey::new(secret).unwrap();
    let token = |secret: &str, dec, exp, uid: &str, kid: &str, adm, arr| {
        let claims = Claims {
            dec,
            exp,
            uid: uid.to_string(),
            kid: kid.to_string(),
            adm,
            arr,
        };
        Some(claims.mint(&key(secret)))
    };
    let wait = |exp| token(K1, TokenKind::Wait, exp, uid, "key1", None, None);
    let allow = |exp, adm| token(K1, TokenKind::Allow, exp, uid, "key1", adm, None);
    let place = |exp, arr| token(K1, TokenKind::Wait, exp, uid, "key1", None, Some(arr));
    vec![
        ("none", None),
        ("wait, young", wait(NOW + 20)),
        ("wait, in its redeem window", wait(NOW - 5)),
        ("wait, past its redeem window", wait(NOW - 500)),
        ("allow, young", allow(NOW + 3500, None)),
        ("allow, due for renewal", allow(NOW + 100, None)),
        ("allow, expired", allow(NOW - 1, None)),
        ("allow, fixed session", allow(NOW + 3000, Some(NOW - 600))),
        (
            "allow, fixed session over",
            allow(NOW + 3000, Some(NOW - 4000)),
        ),
        (
            "allow, signed by key2",
            token(K2, TokenKind::Allow, NOW + 3500, uid, "key2", None, None),
        ),
        ("fifo place, young", place(NOW + 200, NOW_MS - 10_000)),
        ("fifo place, short hold", place(NOW + 10, NOW_MS - 30_000)),
        ("fifo place, expired", place(NOW - 1, NOW_MS - 400_000)),
        (
            "fifo place, before the line opens",
            place(NOW + 200, (NOW - 50) * 1000),
        ),
        (
            "forged",
            token(
                FORGED,
                TokenKind::Allow,
                NOW + 3500,
                uid,
                "key1",
                None,
                None,
            ),
        ),
        (
            "another uid's",
            token(
                K1,
                TokenKind::Wait,
                NOW + 20,
                "192.0.2.99",
                "key1",
                None,
                None,
            ),
        ),
        (
            "unknown key",
            token(K1, TokenKind::Wait, NOW + 20, uid, "key3", None, None),
        ),
        ("garbage", Some("not-a-token".to_string())),
    ]
}

/// One stored configuration, and the request's path and client.
struct Case {
    store: HashMap<&'static str, String>,
    path: &'static str,
    client: Option<IpAddr>,
}

/// Every combination of the room on or off, a protected path or not, random or
/// FIFO mode (or an unusable word), each kind of heartbeat, a fallback
/// percentage or not, and an IPv4, IPv6 or unknown client; the other keys from
/// `others`.
fn cases(mut others: impl FnMut() -> HashMap<&'static str, String>) -> Vec<Case> {
    let heartbeats = [
        None,
        Some((NOW - 10).to_string()),
        // Fresh or stale as `controller_timeout` says.
        Some((NOW - 300).to_string()),
        Some((NOW - 1000).to_string()),
        Some("soon".to_string()),
    ];
    let clients: [Option<IpAddr>; 3] = [
        Some("192.0.2.10".parse().unwrap()),
        Some("2001:db8:1:2:3:4:5:6".parse().unwrap()),
        None,
    ];
    let mut cases = Vec::new();
    for enabled in [Some("true"), None] {
        for path in ["/events/launch", "/about"] {
            for method in [None, Some("fifo"), Some("lifo")] {
                for heartbeat in &heartbeats {
                    for fallback in [None, Some("5"), Some("lots")] {
                        for client in clients {
                            let mut store = others();
                            for (key, value) in [
                                (ENABLED, enabled),
                                (QUEUEING_METHOD, method),
                                (CONTROLLER_HEARTBEAT, heartbeat.as_deref()),
                                (ALLOW_PERCENTAGE_FALLBACK, fallback),
                            ] {
                                store.extend(value.map(|v| (key, v.to_string())));
                            }
                            cases.push(Case {
                                store,
                                path,
                                client,
                            });
                        }
                    }
                }
            }
        }
    }
    cases
}

/// What the cases came to, so that the test cannot pass by missing them.
#[derive(Default)]
struct Seen {
    plans: usize,
    /// Plans whose full read named no key the request left unread: equal to the
    /// letter, `config_fallback` included.
    exact: usize,
    bypasses: usize,
    decisions: BTreeSet<&'static str>,
    transitions: BTreeSet<&'static str>,
}

#[test]
fn a_plan_from_the_keys_a_request_reads_is_the_plan_from_every_key() {
    let mut draws = Rng(0xd1a7);
    let cases = cases(|| {
        let messy = draws.next().is_multiple_of(3);
        drawn_keys(&mut draws, messy)
    });
    let mut rng = Rng(0x5eed);
    let mut seen = Seen::default();
    for case in cases {
        check(&case, &mut rng, &mut seen);
    }
    assert_eq!(seen.plans, 2 * 2 * 3 * 5 * 3 * 3 * cookies("x").len());
    let (exact, plans) = (seen.exact, seen.plans);
    assert!(
        exact * 4 > plans && exact * 4 < plans * 3,
        "{exact} of {plans}"
    );
    assert!(seen.bypasses * 4 > plans, "{} of {plans}", seen.bypasses);
    assert_eq!(
        seen.decisions,
        Decision::ALL.iter().map(|d| d.name()).collect()
    );
    // Every transition but the POP's ceiling (these plans count no won draws).
    assert_eq!(
        seen.transitions,
        Transition::ALL
            .iter()
            .filter(|&&t| t != Transition::CeilingReached)
            .map(|t| t.name())
            .collect()
    );
}

/// Each of the other keys alone (the rest missing), through every value it may
/// take, in every combination of the looped keys: no key's effect on a plan
/// depends on a draw.
#[test]
fn each_key_alone_changes_a_plan_the_same_whether_read_lazily_or_not() {
    let mut rng = Rng(0x5eed);
    let mut seen = Seen::default();
    let mut values = 0;
    for (key, usable, unusable) in other_key_choices() {
        for value in usable.into_iter().chain(unusable).flatten() {
            values += 1;
            for case in cases(|| HashMap::from([(key, value.clone())])) {
                check(&case, &mut rng, &mut seen);
            }
        }
    }
    let per_value = 2 * 2 * 3 * 5 * 3 * 3 * cookies("x").len();
    assert_eq!(seen.plans, values * per_value);
    // Both kinds: plans equal to the letter, and plans whose full read named an
    // unread key.
    assert!(
        seen.exact > 0 && seen.exact < seen.plans,
        "{} of {}",
        seen.exact,
        seen.plans
    );
    assert_eq!(
        seen.decisions.len(),
        Decision::ALL.len(),
        "{:?}",
        seen.decisions
    );
}

/// One case with every cookie: the settings read, the plans and the pages.
fn check(case: &Case, rng: &mut Rng, seen: &mut Seen) {
    let Case {
        store,
        path,
        client,
    } = case;
    let about = format!("{store:?} client={client:?} path={path}");
    let full = Settings::from_lookup(|key| store.get(key).cloned());
    let read = RefCell::new(Vec::new());
    let lazy = Settings::for_request(
        |key| {
            read.borrow_mut().push(key.to_string());
            store.get(key).cloned()
        },
        path,
        client.is_some_and(|ip| ip.is_ipv6()),
    );
    let read = read.into_inner();
    let was_read = |key: &str| read.iter().any(|r| r == key);
    let unique: BTreeSet<&String> = read.iter().collect();
    assert_eq!(unique.len(), read.len(), "a key read twice: {about}");
    // A key not read is as if missing: its default, and no fallback.
    let as_if_missing =
        Settings::from_lookup(|key| store.get(key).filter(|_| was_read(key)).cloned());
    assert_eq!(lazy, as_if_missing, "{about}");
    // The full read but for the fallbacks of keys not read.
    let full_as_read = Settings {
        fallbacks: (full.fallbacks.iter().copied())
            .filter(|key| was_read(key))
            .collect(),
        ..full.clone()
    };
    assert_eq!(lazy.fallbacks, full_as_read.fallbacks, "{about}");

    let uid_with =
        |s: &Settings| client.map_or("unknown".to_string(), |ip| uid_of(ip, s.uid_ipv6_prefix));
    let uid = uid_with(&lazy);
    assert_eq!(uid, uid_with(&full), "{about}");
    let keys = keys();
    for (name, token) in cookies(&uid) {
        let header = token.map(|t| match rng.next().is_multiple_of(2) {
            true => format!("a=1; waiting_room={t}"),
            false => format!("waiting_room={t}"),
        });
        let visit = Visit {
            now: NOW,
            millis: MILLIS,
            uid: &uid,
            path,
            path_and_query: path,
            cookie_header: header.as_deref(),
            tls: rng.next().is_multiple_of(2),
            accept: Some(rng.pick(&["application/json", "text/html"])),
            accept_language: None,
            pop: None,
        };
        let want = plan(&visit, &full_as_read, &keys);
        let got = plan(&visit, &lazy, &keys);
        assert_eq!(got, want, "cookie {name}: {about}");

        // The pages the edge may serve for it, with the settings it serves them with.
        let page_settings = match got.page_reads_every_setting() {
            true => &full,
            false => &lazy,
        };
        let template = b"{{allow_percentage}} {{wait_period_duration}} {{refresh_after}} {{wait_p50}} {{entry_in}}";
        let mut pages = vec![Page::OriginUnavailable];
        pages.extend(match got.action {
            Action::Serve(page) => Some(page),
            Action::Forward => None,
        });
        for page in pages {
            assert_eq!(
                got.page(page, &visit, page_settings),
                want.page(page, &visit, &full),
                "{page:?}, cookie {name}: {about}"
            );
            assert_eq!(
                got.render(page, &visit, page_settings, template),
                want.render(page, &visit, &full, template),
                "{page:?}, cookie {name}: {about}"
            );
        }

        seen.plans += 1;
        seen.exact += usize::from(full_as_read == full);
        match &got.verdict {
            None => seen.bypasses += 1,
            Some(v) => {
                seen.decisions.insert(v.decision.name());
                seen.transitions.extend(v.transition.map(|t| t.name()));
            }
        }
    }
}

/// Without [`Plan::page_reads_every_setting`], the page for a request the room
/// did not apply to would show defaults instead of the stored settings.
#[test]
fn a_page_outside_the_room_shows_settings_its_plan_did_not_read() {
    let store = HashMap::from([
        (ENABLED, "true"),
        (ALLOW_PERCENTAGE, "12.5"),
        (WAIT_PERIOD_DURATION, "45"),
    ]);
    let lookup = |key: &str| store.get(key).map(|v| v.to_string());
    let lazy = Settings::for_request(lookup, "/about", false);
    let full = Settings::from_lookup(lookup);
    let visit = Visit {
        now: NOW,
        uid: "192.0.2.10",
        path: "/about",
        path_and_query: "/about",
        accept: Some("application/json"),
        ..Visit::default()
    };
    let p = plan(&visit, &lazy, &keys());
    assert!(p.page_reads_every_setting());
    let page = |s| p.page(Page::OriginUnavailable, &visit, s);
    assert_eq!(
        page(&full).headers,
        vec![
            ("Cache-Control", crate::page::NO_STORE.to_string()),
            ("Content-Type", "application/json".to_string()),
            ("Retry-After", "45".to_string()),
        ]
    );
    assert_ne!(page(&lazy), page(&full));
}
