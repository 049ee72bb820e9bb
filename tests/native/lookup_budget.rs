//! The room's reads against Fastly's limits (docs/operate/platform-limits.md): every path a
//! request can take, with every feature configured at once, walked the way the edge's
//! glue reads (the settings through [`Remembered`], one page-store key, signing keys
//! once each through [`ReadOnce`], passes sparing the reads the rest needs, the
//! challenge's secret), each read counted by the glue's own [`Counter`]s. Every path
//! stays within 16 config-store lookups and 3 secret reads; a failed read is named,
//! never taken for a missing key.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use test_support::{logins, mint};
use waiting_room::admission::ceiling::PopCounts;
use waiting_room::answer::BodySource;
use waiting_room::bots::challenge::{Outcome, Verifier};
use waiting_room::credentials::keys::{KeyRead, KeyStore, ReadOnce, SigningKey, Unread};
use waiting_room::credentials::login;
use waiting_room::credentials::login_mint::mint as mint_login;
use waiting_room::pages::page::Page;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::layout::store_entries;
use waiting_room::settings::limits::{
    CONFIG_LOOKUP_BUDGET, Counter, SECRET_READ_BUDGET, kept_from_passes,
};
use waiting_room::settings::room_settings::{Looked, LookupFailed, Remembered};
use waiting_room::{Action, Visit, plan};

const NOW: u64 = 1_700_000_023;
const UID: &str = "192.0.2.10";
/// The key tokens were signed with before the rotation, and the active one.
const OLD: (&str, &str) = ("key1", "an old secret of thirty-two bytes or more..");
const NEW: (&str, &str) = ("key2", "the new secret of thirty-two bytes or more.");
/// A third stored key, which only a pass names.
const THIRD: (&str, &str) = ("key3", "a third secret of thirty-two bytes or more..");
const TURNSTILE: &str = r#"{"provider":"turnstile","site_key":"1x00000000000000000000AA"}"#;

/// The store with every feature on: a controller, FIFO or the lottery, the POP's
/// ceiling, bypass rules, passes, the toll or the challenge, custom pages in three
/// languages for the service, its running event and the named room, an event
/// running in the service room, and a named room with its controller's keys.
fn full_store(fifo: bool, challenge: bool) -> BTreeMap<String, String> {
    full_store_with(fifo, challenge, false)
}

/// [`full_store`], and with `login` the service's identity the visitor's login, under
/// the three keys of [`logins`] (one of them HS256, a secret read).
fn full_store_with(fifo: bool, challenge: bool, login: bool) -> BTreeMap<String, String> {
    let login_members = logins::settings_members();
    let now = NOW.to_string();
    let event = format!(
        r#"[{{"name": "launch", "start": {}, "end": {}, "settings": {{"allow_percentage": 20}}}}]"#,
        NOW - 60,
        NOW + 3600
    );
    let pages: Vec<String> = ["startwaiting", "keepwaiting", "deny", "ended"]
        .iter()
        .flat_map(|page| {
            ["", ".fr", ".de"].iter().flat_map(move |lang| {
                [
                    format!("{page}{lang}"),
                    format!("event.launch.{page}{lang}"),
                    format!("room.drops.{page}{lang}"),
                ]
            })
        })
        .collect();
    let pages = pages.join(",");
    let mut pairs: Vec<(&str, &str)> = vec![
        ("enabled", "true"),
        ("protected_paths", "/events,/checkout"),
        ("allow_percentage", "50"),
        ("controller_heartbeat", &now),
        ("controller_timeout", "120"),
        ("allow_percentage_fallback", "5"),
        ("wait_period_duration", "30"),
        ("allow_period_timeout", "3600"),
        ("cookie_lifetime", "7200"),
        ("active_key", NEW.0),
        ("logger_name", "waitingroom_log"),
        ("redeem_window", "60"),
        ("pop_new_sessions_per_minute", "100"),
        ("bypass_addresses", "198.51.100.0/24"),
        ("bypass_paths", "/events/static/"),
        ("passes_not_before", "1600000000"),
        ("page_language", "auto"),
        ("custom_pages", &pages),
        ("events", &event),
        ("rooms", r#"{"drops": {"paths": ["/drops/"]}}"#),
        (
            "room.drops",
            r#"{"enabled": true, "allow_percentage": 10, "bot_toll_bits": 8, "queueing_method": "random"}"#,
        ),
        ("room.drops.allow_percentage", "25"),
        ("room.drops.controller_heartbeat", &now),
    ];
    if fifo {
        pairs.extend([
            ("queueing_method", "fifo"),
            ("fifo_cutoff", "1700000000000"),
            ("fifo_rate", "1000"),
            ("fifo_hold", "300"),
        ]);
    }
    pairs.push(match challenge {
        true => ("bot_challenge", TURNSTILE),
        false => ("bot_toll_bits", "8"),
    });
    if login {
        pairs.extend(login_members.iter().map(|(k, v)| (*k, v.as_str())));
    }
    store_entries(pairs)
}

/// One request's reads, counted as the glue counts them.
struct Reads {
    lookups: Counter,
    secrets: Counter,
    failed: RefCell<Vec<String>>,
    /// The key ids read.
    kids: RefCell<Vec<String>>,
}

impl Reads {
    fn new(lookups: u32) -> Reads {
        Reads {
            lookups: Counter::new(lookups),
            secrets: Counter::new(SECRET_READ_BUDGET),
            failed: RefCell::default(),
            kids: RefCell::default(),
        }
    }

    fn config(&self, store: &BTreeMap<String, String>, key: &str) -> Looked {
        self.lookups.take().map_err(|_| LookupFailed)?;
        Ok(store.get(key).cloned())
    }
}

/// The signing keys, in a Secret Store or (the fallback) a config store. As on
/// Fastly, a read of a name no store can hold fails (an invalid name).
struct Keys<'r> {
    reads: &'r Reads,
    in_secrets: bool,
    challenge: bool,
    keys: HashMap<&'static str, &'static str>,
}

impl Keys<'_> {
    fn counter(&self) -> &Counter {
        match self.in_secrets {
            true => &self.reads.secrets,
            false => &self.reads.lookups,
        }
    }
}

impl KeyStore for Keys<'_> {
    fn key(&self, kid: &str) -> KeyRead {
        let invalid_name = !kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if self.counter().take().is_err() || invalid_name {
            self.reads.failed.borrow_mut().push("signing-key".into());
            return Err(Unread::Failed);
        }
        self.reads.kids.borrow_mut().push(kid.to_string());
        Ok(self.keys.get(kid).and_then(SigningKey::new))
    }

    fn spare(&self, kid: &str) -> KeyRead {
        if self.counter().left() <= kept_from_passes(self.in_secrets, self.challenge) {
            return Err(Unread::NoReadsLeft);
        }
        self.key(kid)
    }
}

/// The provider, whose secret costs one secret read a verification.
struct Challenge<'r>(&'r Reads, std::cell::Cell<bool>);

impl std::fmt::Debug for Challenge<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Challenge")
    }
}

impl Verifier for Challenge<'_> {
    fn verify(&self, _token: &str, _signature: &[u8; 32]) -> Outcome {
        // As the edge: a secret read past the budget fails, and the draw waits.
        if self.0.secrets.take().is_err() {
            self.0.failed.borrow_mut().push("challenge-secret".into());
            return Outcome::Unread;
        }
        self.1.set(true);
        Outcome::Passed
    }
}

/// A POP that has counted nobody.
#[derive(Debug)]
struct Pop;

impl PopCounts for Pop {
    fn last_minute(&self, _now: u64) -> Option<u32> {
        Some(0)
    }

    fn counted(&self, _token: &str) -> bool {
        false
    }
}

/// One request and what the origin does.
struct Request {
    what: &'static str,
    path: &'static str,
    query: Option<String>,
    cookie: Option<String>,
    pass_header: Option<String>,
    origin_down: bool,
}

/// What the walk counted for one request.
#[derive(Debug)]
struct Counted {
    lookups: u32,
    secrets: u32,
    failed: Vec<String>,
    kids: Vec<String>,
    line: String,
    verified: bool,
}

/// Walks `request` through the room as the edge does.
fn walk(store: &BTreeMap<String, String>, in_secrets: bool, request: &Request) -> Counted {
    walk_with(store, in_secrets, request, CONFIG_LOOKUP_BUDGET)
}

/// [`walk`], with `lookups` allowed.
fn walk_with(
    store: &BTreeMap<String, String>,
    in_secrets: bool,
    request: &Request,
    lookups: u32,
) -> Counted {
    let reads = Reads::new(lookups);
    let pages: BTreeMap<String, String> = BTreeMap::new();
    let config = Remembered::fallible(|key: &str| reads.config(store, key));
    let settings = RequestContext::for_request(&config, None, request.path, NOW);
    // The visitor's login, as the edge reads it before the plan: an HS256 key's
    // secret is a secret read.
    let login = login::of_request(
        &settings.settings,
        request.path,
        || None,
        request.cookie.as_deref(),
        UID,
        NOW,
        &mut |kid| {
            if reads.secrets.take().is_err() {
                reads.failed.borrow_mut().push("login-key".into());
                return Err(Unread::Failed);
            }
            Ok((kid == logins::KIDS[2]).then(|| logins::HS256_SECRET.as_bytes().to_vec()))
        },
    );
    let keys = ReadOnce::new(Keys {
        reads: &reads,
        in_secrets,
        challenge: settings.settings.bot_challenge.is_on(),
        keys: HashMap::from([OLD, NEW, THIRD]),
    });
    let challenge = Challenge(&reads, std::cell::Cell::new(false));
    let path_and_query = match &request.query {
        Some(query) => format!("{}?{query}", request.path),
        None => request.path.to_string(),
    };
    let visit = Visit {
        now: NOW,
        uid: login.as_ref().map_or(UID, |login| login.uid(UID)),
        path: request.path,
        path_and_query: &path_and_query,
        login: login.as_ref(),
        cookie_header: request.cookie.as_deref(),
        accept: Some("text/html"),
        accept_language: Some("fr-CH, de;q=0.8, en;q=0.5"),
        pop: Some(&Pop),
        pass_header: request.pass_header.as_deref(),
        challenge: Some(&challenge),
        ..Visit::default()
    };
    let mut plan = plan(&visit, &settings, &keys);
    let shown = match plan.action {
        Action::Serve(page) => Some((page, settings.clone())),
        Action::Forward if request.origin_down => {
            plan.origin_unreachable("connection refused");
            let full = match settings.settings.protects(request.path) {
                true => settings.clone(),
                false => RequestContext::from_store(&config),
            };
            Some((Page::OriginUnavailable, full))
        }
        _ => None,
    };
    if let Some((page, shown_settings)) = shown
        && let BodySource::Store(Some(key)) = plan.page(page, &visit, &shown_settings).body
        && reads.config(&pages, &key).is_err()
    {
        reads.failed.borrow_mut().push(key);
    }
    let mut failed = config.failed();
    failed.extend(reads.failed.borrow().iter().cloned());
    Counted {
        lookups: reads.lookups.used(),
        secrets: reads.secrets.used(),
        failed,
        kids: reads.kids.take(),
        verified: challenge.1.get(),
        line: plan.log_line(),
    }
}

/// Every kind of request, in `room` (`""`: the service room, else `drops`).
fn requests(room: &str) -> Vec<Request> {
    requests_of(room, UID, None)
}

/// [`requests`] of the visitor `uid`, each with the cookie `login` beside its own.
fn requests_of(room: &str, uid: &str, login: Option<&str>) -> Vec<Request> {
    let mut requests = requests_by(room, uid);
    for request in requests.iter_mut().filter(|_| login.is_some()) {
        let cookies = request.cookie.iter().map(String::as_str).chain(login);
        request.cookie = Some(cookies.collect::<Vec<_>>().join("; "));
    }
    requests
}

fn requests_by(room: &str, uid: &str) -> Vec<Request> {
    let (token_cookie, pass_cookie, toll_cookie, path) = match room {
        "" => ("waiting_room", "waiting_pass", "waiting_toll", "/events/1"),
        _ => (
            "waiting_room_drops",
            "waiting_pass_drops",
            "waiting_toll_drops",
            "/drops/1",
        ),
    };
    let mint_in = |key: (&str, &str), dec: &str, exp: u64| match room {
        "" => mint::mint(key.1, dec, exp, uid, key.0),
        _ => mint::mint_in_room(key.1, room, dec, exp, uid, key.0),
    };
    // Signed with the old key, before the rotation: read, then the new key signs.
    let due_wait = mint_in(OLD, "wait", NOW - 5);
    let allowed = mint_in(OLD, "allow", NOW + 60);
    // A wait token of the room's toll (the challenge asks the most bits), due.
    let (tolled, _) = mint::mint_toll(OLD.1, NOW - 5, uid, OLD.0, 32);
    let pass =
        |key: (&str, &str), kid: &str| mint::mint_pass(key.1, room, NOW - 10, NOW + 600, kid);
    let request = |what, cookie: Option<String>| Request {
        what,
        path,
        query: None,
        cookie,
        pass_header: None,
        origin_down: false,
    };
    vec![
        request("a newcomer", None),
        request(
            "a due wait token with its toll or challenge token",
            Some(format!(
                "{token_cookie}={due_wait}; {toll_cookie}=XXXX.DUMMY.TOKEN.XXXX"
            )),
        ),
        request(
            "a due wait token of the toll, the provider's token beside it",
            Some(format!(
                "{token_cookie}={tolled}; {toll_cookie}=XXXX.DUMMY.TOKEN.XXXX"
            )),
        ),
        request(
            "an allow token to renew",
            Some(format!("{token_cookie}={allowed}")),
        ),
        Request {
            origin_down: true,
            ..request(
                "an allow token, the origin down",
                Some(format!("{token_cookie}={allowed}")),
            )
        },
        // Passes by link, header and cookie at once, each under another key id:
        // two refused (one an unknown key), one accepted.
        Request {
            query: Some(format!("{pass_cookie}={}", pass(OLD, "nokey"))),
            pass_header: Some(pass(OLD, OLD.0)),
            ..request(
                "three passes at once",
                Some(format!(
                    "{pass_cookie}={}; {token_cookie}={due_wait}",
                    pass(NEW, NEW.0)
                )),
            )
        },
        // Three passes under three more key ids than the token's and the active
        // one, while the token was signed before the rotation: the passes spend
        // only the reads left, and the one that holds takes the visitor to an
        // origin that is down.
        Request {
            query: Some(format!("{pass_cookie}={}", pass(OLD, "nokey"))),
            pass_header: Some(pass(THIRD, THIRD.0)),
            origin_down: true,
            ..request(
                "three passes under other keys, the origin down",
                Some(format!(
                    "{pass_cookie}={}; {token_cookie}={due_wait}",
                    pass(NEW, NEW.0)
                )),
            )
        },
        Request {
            path: "/events/static/app.js",
            ..request("a bypassed path", None)
        },
        Request {
            path: "/about",
            ..request(
                "outside every room",
                Some(format!("{token_cookie}={allowed}")),
            )
        },
        Request {
            path: "/about",
            origin_down: true,
            ..request("outside every room, the origin down", None)
        },
    ]
}

#[test]
fn every_path_keeps_within_16_lookups_and_3_secret_reads() {
    let mut worst = (0, 0);
    let mut verified = false;
    let logins = logins::keys();
    for fifo in [false, true] {
        for challenge in [false, true] {
            for in_secrets in [true, false] {
                // By address; by a login verified with a public key (no read); by an
                // HS256 login (a secret read), which `wrctl config check` refuses
                // beside keys in a Secret Store and the challenge.
                for login in [None, Some(0), Some(2)] {
                    if login == Some(2) && in_secrets && challenge {
                        continue;
                    }
                    let store = full_store_with(fifo, challenge, login.is_some());
                    for room in ["", "drops"] {
                        let cookie = login.map(|i| {
                            let claims = logins::claims("alice", NOW);
                            format!(
                                "session={}",
                                mint_login(&claims, &logins[i], logins::KIDS[i])
                            )
                        });
                        let uid = match login {
                            Some(_) => logins::person_uid("alice", None),
                            None => UID.to_string(),
                        };
                        for request in requests_of(room, &uid, cookie.as_deref()) {
                            let counted = walk(&store, in_secrets, &request);
                            let case = format!(
                                "{} in {room:?} (fifo {fifo}, challenge {challenge}, keys in \
                             secrets {in_secrets}, login {login:?}): {counted:?}",
                                request.what
                            );
                            if login.is_some() && !request.path.starts_with("/about") {
                                assert!(counted.line.contains(&format!("uid={uid}")), "{case}");
                            }
                            assert!(counted.failed.is_empty(), "{case}");
                            assert!(!counted.line.contains("ALERT=unreadable"), "{case}");
                            assert!(counted.lookups <= CONFIG_LOOKUP_BUDGET, "{case}");
                            assert!(counted.secrets <= SECRET_READ_BUDGET, "{case}");
                            // The token's key, the active one and at most one a pass
                            // alone names.
                            assert!(counted.kids.len() <= 3, "{case}");
                            worst = (worst.0.max(counted.lookups), worst.1.max(counted.secrets));
                            verified |= counted.verified;
                        }
                    }
                }
            }
        }
    }
    // The walk reached the provider, and its worst paths are as
    // docs/operate/platform-limits.md states them.
    assert!(verified, "no path verified the challenge");
    assert_eq!(worst, (16, 3));
}

/// Regression: a token or a pass under a key id no store can hold (`k!1`) was read,
/// and on Fastly the read failed as an invalid name, logged
/// `ALERT=unreadable:signing-key`: anyone could raise the alarm, at the cost of the
/// request's reads. Such an id is an unknown key, read nowhere: the request costs
/// what a newcomer's does.
#[test]
fn an_odd_key_id_costs_no_read_and_raises_no_alert() {
    let store = full_store(false, false);
    for in_secrets in [true, false] {
        for room in ["", "drops"] {
            let newcomer = walk(&store, in_secrets, &requests(room)[0]);
            let (token_cookie, path) = match room {
                "" => ("waiting_room", "/events/1"),
                _ => ("waiting_room_drops", "/drops/1"),
            };
            for kid in ["k!1", "k/1", "k:1", "k%201"] {
                let token = match room {
                    "" => mint::mint(OLD.1, "allow", NOW + 60, UID, kid),
                    _ => mint::mint_in_room(OLD.1, room, "allow", NOW + 60, UID, kid),
                };
                let request = Request {
                    what: "an odd key id",
                    path,
                    query: None,
                    cookie: Some(format!("{token_cookie}={token}")),
                    pass_header: Some(mint::mint_pass(OLD.1, room, NOW - 10, NOW + 600, kid)),
                    origin_down: false,
                };
                let counted = walk(&store, in_secrets, &request);
                let case = format!("{kid} in {room:?} (keys in secrets {in_secrets}): {counted:?}");
                assert_eq!(
                    (counted.lookups, counted.secrets),
                    (newcomer.lookups, newcomer.secrets),
                    "{case}"
                );
                assert!(counted.failed.is_empty(), "{case}");
                assert!(!counted.line.contains("ALERT="), "{case}");
                assert!(
                    counted
                        .line
                        .contains(&format!(" rejected=unknown-key kid={kid}"))
                        && counted.line.contains(" pass_refused=unknown-key"),
                    "{case}"
                );
            }
        }
    }
}

#[test]
fn a_lookup_past_the_limit_fails_and_is_named_in_the_line() {
    let store = full_store(false, false);
    // Three lookups: `enabled`, `settings` and `controller_heartbeat`; `logger_name`
    // and everything after fail.
    let reads = Reads::new(3);
    let config = Remembered::fallible(|key: &str| reads.config(&store, key));
    let settings = RequestContext::for_request(&config, None, "/events/1", NOW);
    assert!(
        settings.unreadable.contains(&"rooms".to_string()),
        "{:?}",
        settings.unreadable
    );
    let keys = ReadOnce::new(|kid: &str| (kid == NEW.0).then(|| NEW.1.to_string()));
    let visit = Visit {
        now: NOW,
        uid: UID,
        path: "/events/1",
        path_and_query: "/events/1",
        ..Visit::default()
    };
    let planned = plan(&visit, &settings, &keys);
    // Without the rooms' scopes nothing is placed: asked to try again, never let
    // through.
    assert_eq!(planned.action, Action::Serve(Page::OriginUnavailable));
    assert!(
        planned
            .log_line()
            .contains("decision=refused reason=unreadable")
            && planned.log_line().contains(" ALERT=unreadable:"),
        "{}",
        planned.log_line()
    );
}

/// The settings of a request for `path` from `store`, the lookups of `failing` keys
/// failing (as past the limit, or on a value too long).
fn with_failing(store: &BTreeMap<String, String>, failing: &[&str], path: &str) -> RequestContext {
    let config = Remembered::fallible(|key: &str| match failing.contains(&key) {
        true => Err(LookupFailed),
        false => Ok(store.get(key).cloned()),
    });
    RequestContext::for_request(&config, None, path, NOW)
}

/// The line and action of a newcomer's request for `path` under `settings`.
fn newcomer(settings: &RequestContext, path: &str) -> (Action, String) {
    let keys = |kid: &str| (kid == NEW.0).then(|| NEW.1.to_string());
    let visit = Visit {
        now: NOW,
        uid: UID,
        path,
        path_and_query: path,
        accept: Some("text/html"),
        accept_language: Some("fr"),
        ..Visit::default()
    };
    let planned = plan(&visit, settings, &keys);
    (planned.action, planned.log_line())
}

#[test]
fn unreadable_settings_hold_the_room_and_grant_nothing() {
    for challenge in [false, true] {
        let store = full_store(false, challenge);
        let settings = with_failing(&store, &["settings"], "/events/static/app.js");
        // Held: nobody new admitted, the toll at its most or the challenge held,
        // no bypass rule, no custom page, and the line says why.
        assert!(settings.settings.queue_all);
        assert!(
            settings.settings.bypass_paths.is_empty()
                && settings.settings.bypass_addresses.is_empty()
        );
        assert!(settings.settings.custom_pages.is_empty());
        match challenge {
            true => assert!(
                settings.settings.bot_challenge.is_on()
                    && settings.settings.bot_challenge.settings().is_none()
            ),
            false => assert_eq!(
                settings.settings.bot_toll_bits,
                waiting_room::bots::toll::MAX_BITS
            ),
        }
        let (action, line) = newcomer(&settings, "/events/static/app.js");
        assert_eq!(action, Action::Serve(Page::OriginUnavailable), "{line}");
        assert!(line.contains(" ALERT=unreadable:settings"), "{line}");
        assert!(
            line.contains("decision=refused reason=unreadable"),
            "{line}"
        );
    }
}

#[test]
fn an_unreadable_named_room_holds_everyone() {
    let store = full_store(false, false);
    let settings = with_failing(&store, &["room.drops"], "/drops/1");
    assert!(settings.settings.enabled && settings.settings.queue_all);
    let (action, line) = newcomer(&settings, "/drops/1");
    assert_eq!(action, Action::Serve(Page::OriginUnavailable), "{line}");
    assert!(
        line.contains(" room=drops ") && line.contains(" ALERT=unreadable:room.drops"),
        "{line}"
    );
}

#[test]
fn an_unreadable_page_is_the_built_in_one_and_the_walk_names_it() {
    let store = full_store(false, false);
    let newcomer = &requests("")[0];
    // Enough lookups for the settings and the active key, not for the page.
    let counted = walk_with(&store, false, newcomer, 14);
    assert_eq!(
        counted.failed,
        ["event.launch.startwaiting.fr"],
        "{counted:?}"
    );
}

/// A pass under a key id of its own, during a rotation, with the keys in a Secret
/// Store and the challenge on: the token's key and the active one take two of the
/// three reads and the challenge's secret the third, so the pass is refused for
/// want of reads (said as such, no alert), and the challenge is verified.
#[test]
fn a_pass_spends_only_the_reads_left() {
    let store = full_store(false, true);
    let (tolled, _) = mint::mint_toll(OLD.1, NOW - 5, UID, OLD.0, 32);
    let request = Request {
        what: "a pass under a third key, the challenge due",
        path: "/events/1",
        query: None,
        cookie: Some(format!(
            "waiting_room={tolled}; waiting_toll=XXXX.DUMMY.TOKEN.XXXX"
        )),
        pass_header: Some(mint::mint_pass(THIRD.1, "", NOW - 10, NOW + 600, THIRD.0)),
        origin_down: false,
    };
    let counted = walk(&store, true, &request);
    assert_eq!(counted.kids, [OLD.0, NEW.0], "{counted:?}");
    assert!(
        counted.line.contains(" pass_refused=no-reads-left") && !counted.line.contains("ALERT"),
        "{counted:?}"
    );
    assert!(counted.verified && counted.secrets == 3, "{counted:?}");
    // With the keys in a config store, this store's settings and the page leave
    // the pass no lookup either.
    let counted = walk(&store, false, &request);
    assert!(
        counted.line.contains(" pass_refused=no-reads-left") && counted.lookups == 16,
        "{counted:?}"
    );
}

/// A store key whose lookup fails never admits anyone nor takes a place away: for
/// every key of the full store and every kind of visitor, a key that holds
/// (`holds_when_unreadable`) lets on only a live session, its token as it is, and
/// asks everyone else to try again with no cookie written; any other key leaves the
/// outcome as it was. Nobody is forwarded who was not without the failure.
#[test]
fn a_failed_lookup_admits_nobody_and_takes_no_place_away() {
    use waiting_room::settings::config::holds_when_unreadable;
    let store = full_store(false, false);
    let keys: HashMap<String, String> =
        HashMap::from([OLD, NEW].map(|(k, v)| (k.into(), v.into())));
    for (room, path, cookie) in [
        ("", "/events/1", "waiting_room"),
        ("drops", "/drops/1", "waiting_room_drops"),
    ] {
        let mint_in = |key: (&str, &str), dec: &str, exp: u64| match room {
            "" => mint::mint(key.1, dec, exp, UID, key.0),
            _ => mint::mint_in_room(key.1, room, dec, exp, UID, key.0),
        };
        let visitors = [
            ("a newcomer", None, false),
            (
                "a due wait token",
                Some(mint_in(OLD, "wait", NOW - 5)),
                false,
            ),
            (
                "a wait token not yet due",
                Some(mint_in(NEW, "wait", NOW + 20)),
                false,
            ),
            (
                "a live session",
                Some(mint_in(NEW, "allow", NOW + 600)),
                true,
            ),
            (
                "a live session of the old key",
                Some(mint_in(OLD, "allow", NOW + 600)),
                true,
            ),
        ];
        let failing = store.keys().map(String::as_str).chain(["settings"]);
        for key in failing {
            let context = with_failing(&store, &[key], path);
            if !context.unreadable.iter().any(|k| k == key) {
                continue; // not read for this path
            }
            let clean = with_failing(&store, &[], path);
            for (who, token, live) in &visitors {
                let header = token.as_ref().map(|t| format!("{cookie}={t}"));
                let visit = Visit {
                    now: NOW,
                    uid: UID,
                    path,
                    path_and_query: path,
                    cookie_header: header.as_deref(),
                    ..Visit::default()
                };
                let before = plan(&visit, &clean, &keys);
                let after = plan(&visit, &context, &keys);
                let case = format!("{key} failing, {who} in {room:?}: {}", after.log_line());
                assert!(
                    after.log_line().contains(&format!("unreadable:{key}")),
                    "{case}"
                );
                if after.action == Action::Forward {
                    assert_eq!(before.action, Action::Forward, "unearned: {case}");
                }
                if !holds_when_unreadable(key) {
                    assert_eq!(after.action, before.action, "{case}");
                    continue;
                }
                assert_eq!(after.set_cookie, None, "{case}");
                match (live, key) {
                    (true, k) if k != "rooms" => {
                        assert_eq!(after.action, Action::Forward, "{case}");
                        assert!(after.log_line().contains("scope=live-session"), "{case}");
                    }
                    _ => assert_eq!(
                        after.action,
                        Action::Serve(Page::OriginUnavailable),
                        "{case}"
                    ),
                }
            }
        }
    }
}

/// A signing key whose read fails: a token under it is neither honoured nor
/// replaced, and a live session under a readable key goes on when the active key
/// fails (not renewed).
#[test]
fn a_failed_key_read_admits_nobody_and_takes_no_place_away() {
    let store = full_store(false, false);
    let context = with_failing(&store, &[], "/events/1");
    let failing = |fails: &'static str| {
        move |kid: &str| -> KeyRead {
            match kid {
                k if k == fails => Err(Unread::Failed),
                k => Ok([OLD, NEW]
                    .iter()
                    .find(|(id, _)| *id == k)
                    .and_then(|(_, s)| SigningKey::new(s))),
            }
        }
    };
    struct Fails<F>(F);
    impl<F: Fn(&str) -> KeyRead> KeyStore for Fails<F> {
        fn key(&self, kid: &str) -> KeyRead {
            (self.0)(kid)
        }
    }
    let cases = [
        (
            OLD.0,
            mint::mint(OLD.1, "allow", NOW + 600, UID, OLD.0),
            false,
        ),
        (OLD.0, mint::mint(OLD.1, "wait", NOW - 5, UID, OLD.0), false),
        (
            NEW.0,
            mint::mint(OLD.1, "allow", NOW + 600, UID, OLD.0),
            true,
        ),
        (NEW.0, mint::mint(OLD.1, "wait", NOW - 5, UID, OLD.0), false),
        (NEW.0, String::new(), false),
    ];
    // A newcomer with two passes: one under no stored key, one under the key
    // that fails (so the one refusal logged is the unknown key).
    let link = format!(
        "/events/1?waiting_pass={}",
        mint::mint_pass(OLD.1, "", NOW - 10, NOW + 600, "nokey")
    );
    let header = mint::mint_pass(OLD.1, "", NOW - 10, NOW + 600, OLD.0);
    let planned = plan(
        &Visit {
            now: NOW,
            uid: UID,
            path: "/events/1",
            path_and_query: &link,
            pass_header: Some(&header),
            ..Visit::default()
        },
        &context,
        &Fails(failing(OLD.0)),
    );
    assert_eq!(planned.set_cookie, None, "{}", planned.log_line());
    assert_eq!(
        planned.action,
        Action::Serve(Page::OriginUnavailable),
        "{}",
        planned.log_line()
    );
    for (fails, token, forwarded) in cases {
        let header = format!("waiting_room={token}");
        let visit = Visit {
            now: NOW,
            uid: UID,
            path: "/events/1",
            path_and_query: "/events/1",
            cookie_header: (!token.is_empty()).then_some(header.as_str()),
            ..Visit::default()
        };
        let planned = plan(&visit, &context, &Fails(failing(fails)));
        let case = format!("{fails} failing: {}", planned.log_line());
        assert_eq!(planned.set_cookie, None, "{case}");
        match forwarded {
            true => assert_eq!(planned.action, Action::Forward, "{case}"),
            false => {
                assert_eq!(
                    planned.action,
                    Action::Serve(Page::OriginUnavailable),
                    "{case}"
                );
                assert!(
                    planned
                        .log_line()
                        .contains("decision=refused reason=unreadable"),
                    "{case}"
                );
            }
        }
    }
}

/// The challenge's secret that cannot be read: the due draw is neither made nor
/// lost (no new wait token), the visitor asked to try again.
#[test]
fn an_unread_challenge_secret_holds_the_draw() {
    #[derive(Debug)]
    struct Unreadable;
    impl Verifier for Unreadable {
        fn verify(&self, _token: &str, _signature: &[u8; 32]) -> Outcome {
            Outcome::Unread
        }
    }
    let store = full_store(false, true);
    let context = with_failing(&store, &[], "/events/1");
    let (tolled, _) = mint::mint_toll(NEW.1, NOW - 5, UID, NEW.0, 32);
    let cookie = format!("waiting_room={tolled}; waiting_toll=XXXX.DUMMY.TOKEN.XXXX");
    let keys = |kid: &str| (kid == NEW.0).then(|| NEW.1.to_string());
    let visit = Visit {
        now: NOW,
        uid: UID,
        path: "/events/1",
        path_and_query: "/events/1",
        cookie_header: Some(&cookie),
        challenge: Some(&Unreadable),
        ..Visit::default()
    };
    let planned = plan(&visit, &context, &keys);
    assert_eq!(planned.set_cookie, None, "{}", planned.log_line());
    assert_eq!(
        planned.action,
        Action::Serve(Page::OriginUnavailable),
        "{}",
        planned.log_line()
    );
}

/// The one combination past the budget, which `wrctl config check` refuses: an HS256
/// login (a secret read) beside signing keys in a Secret Store (two) and the external
/// challenge (one more). Its fourth read fails as Fastly's would, and the admission
/// it needed is neither made nor lost: nobody is admitted for it.
#[test]
fn an_hs256_login_beside_secret_keys_and_the_challenge_holds_the_draw() {
    let store = full_store_with(false, true, true);
    let claims = logins::claims("alice", NOW);
    let cookie = format!(
        "session={}",
        mint_login(&claims, &logins::keys()[2], logins::KIDS[2])
    );
    let uid = logins::person_uid("alice", None);
    let due = &requests_of("", &uid, Some(&cookie))[2];
    assert!(due.what.starts_with("a due wait token of the toll"));
    let counted = walk(&store, true, due);
    // The login, the token's key and the challenge's secret are read; the active key,
    // which the won draw's new token needs, is not: the visitor is asked to try again.
    assert_eq!(counted.failed, ["signing-key"], "{counted:?}");
    assert_eq!(counted.secrets, SECRET_READ_BUDGET);
    assert!(
        counted
            .line
            .contains(" decision=refused reason=unreadable "),
        "{}",
        counted.line
    );
}
