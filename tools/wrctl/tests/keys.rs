//! `wrctl keygen`, `wrctl token inspect|mint`, `wrctl rotate` and `wrctl revoke`,
//! run as the real binary against tokens and stores made with the room's library.

use crate::support;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use support::{MockApi, Run, unix_now, wrctl};
use waiting_room::admission::lottery;
use waiting_room::credentials::keys::SigningKey;
use waiting_room::credentials::token::{self, Claims, TokenKind};
use waiting_room::settings::percentage::Percentage;

/// Two strong keys and a weak one, as a key store file holds them.
const KEY1: &str = "test-key-one-0123456789abcdefghijklmnopqrstuv";
const KEY2: &str = "test-key-two-0123456789abcdefghijklmnopqrstuv";
const WEAK: &str = "short-key";

/// A directory with `keys.json` (KEY1, KEY2, WEAK, an empty one) and `config.json`.
fn stores(config: Value) -> (tempfile::TempDir, String, String) {
    let keys = json!({"key1": KEY1, "key2": KEY2, "weak": WEAK, "empty": ""});
    key_and_config_files(keys, config)
}

/// A directory with `keys.json` and `config.json`, and their paths.
fn key_and_config_files(keys: Value, config: Value) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, value: Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, value.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (keys, conf) = (write("keys.json", keys), write("config.json", config));
    (dir, keys, conf)
}

fn read(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn mint(secret: &str, kid: &str, dec: TokenKind, exp: u64, uid: &str) -> String {
    Claims {
        dec,
        exp,
        uid: uid.into(),
        kid: kid.into(),
        adm: None,
        arr: None,
        toll: None,
    }
    .mint(&SigningKey::new(secret).unwrap())
}

fn no_secret_in(run: &Run) {
    for secret in [KEY1, KEY2, WEAK] {
        assert!(
            !run.all().contains(secret),
            "a key in the output:\n{}",
            run.all()
        );
    }
}

#[test]
fn keygen_prints_only_a_strong_base64_key_on_stdout() {
    let run = wrctl(&["keygen"], &[]);
    assert_eq!(run.code, Some(0), "{}", run.err);
    assert_eq!(run.out.len(), 44, "{:?}", run.out);
    assert_eq!(STANDARD.decode(&run.out).unwrap().len(), 32);
    assert!(run.err.contains(
        "fastly secret-store-entry create --store-id=<SECRET_STORE_ID> --name=key1 --stdin"
    ));
    assert!(run.err.contains("fastly config-store-entry create"));
    assert!(!run.err.contains(&run.out), "the key is on stderr");

    let run = wrctl(&["keygen", "--bytes", "48", "--kid", "key2"], &[]);
    assert_eq!(run.code, Some(0));
    assert_eq!(STANDARD.decode(&run.out).unwrap().len(), 48);
    assert!(run.err.contains("--name=key2 --stdin"));
    assert_ne!(run.out, wrctl(&["keygen", "--bytes", "48"], &[]).out);
}

#[test]
fn keygen_refuses_a_weak_key_unless_asked() {
    let run = wrctl(&["keygen", "--bytes", "31"], &[]);
    assert_eq!(run.code, Some(2));
    assert!(run.out.is_empty());
    assert!(run.err.contains("weak"), "{}", run.err);
    let run = wrctl(&["keygen", "--bytes", "16", "--allow-weak"], &[]);
    assert_eq!(run.code, Some(0));
    assert_eq!(STANDARD.decode(&run.out).unwrap().len(), 16);
    assert_eq!(
        wrctl(&["keygen", "--bytes", "0", "--allow-weak"], &[]).code,
        Some(2)
    );
    assert_eq!(wrctl(&["keygen", "--kid", "a&b"], &[]).code, Some(2));
    // An id the room never reads: Fastly's Secret Store cannot hold it.
    assert_eq!(wrctl(&["keygen", "--kid", "k!1"], &[]).code, Some(2));
}

#[test]
fn every_subcommand_has_an_example() {
    for args in [
        &["keygen", "--help"][..],
        &["token", "--help"],
        &["token", "inspect", "--help"],
        &["token", "mint", "--help"],
        &["login", "keys", "--help"],
        &["login", "mint", "--help"],
        &["rotate", "--help"],
        &["revoke", "--help"],
    ] {
        let run = wrctl(args, &[]);
        assert_eq!(run.code, Some(0), "{args:?}");
        assert!(run.out.contains("Example:"), "{args:?}:\n{}", run.out);
    }
}

#[test]
fn inspect_a_valid_token() {
    let (_dir, keys, _) = stores(json!({}));
    let now = 1_800_000_000;
    let value = mint(KEY1, "key1", TokenKind::Allow, now + 300, "203.0.113.7");
    let at = now.to_string();
    let run = wrctl(
        &["token", "inspect", &value, "--keys", &keys, "--at", &at],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(run.out.contains("dec        allow"), "{}", run.out);
    assert!(
        run.out.contains("(2027-01-15 08:05:00 UTC, in 5 min)"),
        "{}",
        run.out
    );
    assert!(run.out.contains("uid        203.0.113.7"));
    assert!(run.out.contains("kid        key1"));
    assert!(run.out.contains("signature  valid"));
    no_secret_in(&run);

    // Without keys: decoded, not checked.
    let at = (now + 1020).to_string();
    let run = wrctl(&["token", "inspect", &value, "--at", &at], &[]);
    assert_eq!(run.code, Some(0));
    assert!(run.out.contains("12 min ago"), "{}", run.out);
    assert!(run.out.contains("not checked"));
}

#[test]
fn inspect_a_whole_cookie_header() {
    let (_dir, keys, _) = stores(json!({}));
    let value = mint(KEY2, "key2", TokenKind::Wait, unix_now() + 30, "10.0.0.1");
    for header in [
        format!("Cookie: theme=dark; waiting_room={value}; b=2"),
        format!("theme=dark; waiting_room=\"{value}\""),
    ] {
        let run = wrctl(&["token", "inspect", &header, "--keys", &keys], &[]);
        assert_eq!(run.code, Some(0), "{}", run.all());
        assert!(run.out.contains("signature  valid"), "{}", run.out);
        assert!(run.out.contains("kid        key2"));
    }
    let run = wrctl(&["token", "inspect", "Cookie: theme=dark"], &[]);
    assert_eq!(run.code, Some(1));
}

#[test]
fn inspect_says_why_a_token_is_refused() {
    let (_dir, keys, conf) = stores(json!({"allow_percentage": "50"}));
    let (keys, conf) = (keys.as_str(), conf.as_str());
    let now = unix_now();
    let value = mint(KEY1, "key1", TokenKind::Allow, now + 600, "203.0.113.7");
    let inspect = |value: &str, uid: &str| {
        let args = [
            "token", "inspect", value, "--keys", keys, "--uid", uid, "--config", conf,
        ];
        wrctl(&args, &[])
    };

    // Tampered: a later expiry under the old signature.
    let text = String::from_utf8(STANDARD.decode(&value).unwrap()).unwrap();
    let forged = STANDARD.encode(text.replace(
        &format!("exp={}", now + 600),
        &format!("exp={}", now + 9000),
    ));
    let run = inspect(&forged, "203.0.113.7");
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(run.out.contains("signature  bad-signature"), "{}", run.out);
    assert!(run.out.contains("rejected=bad-signature"), "{}", run.out);
    no_secret_in(&run);

    // Another visitor.
    let run = inspect(&value, "198.51.100.1");
    assert_eq!(run.code, Some(0));
    assert!(run.out.contains("signature  valid"));
    assert!(
        run.out.contains("uid-mismatch token_uid=203.0.113.7"),
        "{}",
        run.out
    );

    // The holder: admitted.
    let run = inspect(&value, "203.0.113.7");
    assert!(run.out.contains("decision   allow"), "{}", run.out);

    // A key the store does not hold, and an empty one.
    for kid in ["key9", "empty"] {
        let other = mint(KEY1, kid, TokenKind::Allow, now + 600, "203.0.113.7");
        let run = inspect(&other, "203.0.113.7");
        assert_eq!(run.code, Some(0));
        assert!(
            run.out
                .contains(&format!("signature  unknown-key kid={kid}")),
            "{}",
            run.out
        );
        assert!(
            run.out.contains(&format!("rejected=unknown-key kid={kid}")),
            "{}",
            run.out
        );
        no_secret_in(&run);
    }

    // An expired allow token.
    let old = mint(KEY1, "key1", TokenKind::Allow, now - 5, "203.0.113.7");
    let run = inspect(&old, "203.0.113.7");
    assert!(run.out.contains("session-expired"), "{}", run.out);
}

/// A key id the room never reads (`k!1`): inspect says unknown-key as the room
/// logs it, though the file holds a key under it, and mint refuses it.
#[test]
fn inspect_and_mint_treat_an_odd_key_id_as_the_room_does() {
    let keys = json!({"key1": KEY1, "k!1": KEY1});
    let (_dir, keys, conf) = key_and_config_files(keys, json!({"allow_percentage": "50"}));
    let value = mint(
        KEY1,
        "k!1",
        TokenKind::Allow,
        unix_now() + 600,
        "203.0.113.7",
    );
    let args = [
        "token",
        "inspect",
        &value,
        "--keys",
        &keys,
        "--uid",
        "203.0.113.7",
        "--config",
        &conf,
    ];
    let run = wrctl(&args, &[]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(
        run.out.contains("signature  unknown-key kid=k!1"),
        "{}",
        run.out
    );
    assert!(
        run.out.contains("rejected=unknown-key kid=k!1"),
        "{}",
        run.out
    );
    let args = [
        "token",
        "mint",
        "--keys",
        &keys,
        "--kid",
        "k!1",
        "--dec",
        "allow",
        "--exp",
        "+600",
        "--uid",
        "203.0.113.7",
    ];
    let run = wrctl(&args, &[]);
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(
        run.err.contains("the room never reads a key under it"),
        "{}",
        run.err
    );
}

#[test]
fn inspect_refuses_what_does_not_decode() {
    for (value, why) in [
        ("not base64!", "malformed:not-base64"),
        (
            &*STANDARD.encode("dec=maybe&exp=1&uid=1.2.3.4&kid=k&sig=0x00"),
            "malformed:dec",
        ),
        (
            &*STANDARD.encode("dec=wait&exp=01&uid=1.2.3.4&kid=k&sig=0x00"),
            "malformed:exp",
        ),
        (&*STANDARD.encode("hello"), "malformed:fields"),
    ] {
        let run = wrctl(&["token", "inspect", value], &[]);
        assert_eq!(run.code, Some(1), "{value}: {}", run.all());
        assert!(run.out.contains(why), "{value}: {}", run.out);
    }
    assert_eq!(wrctl(&["token", "inspect"], &[]).code, Some(2));
    assert_eq!(
        wrctl(&["token", "inspect", "x", "--uid", "1.2.3.4"], &[]).code,
        Some(2)
    );
}

/// Expired wait tokens draw as the library draws, at the config's percentage.
#[test]
fn an_expired_wait_token_draws_as_the_room_does() {
    let (_dir, keys, conf) =
        stores(json!({"allow_percentage": "50", "wait_period_duration": "30"}));
    let now = 1_800_000_000;
    let (mut won, mut lost) = (0, 0);
    for i in 0..12 {
        let uid = format!("192.0.2.{i}");
        let value = mint(KEY1, "key1", TokenKind::Wait, now - 10, &uid);
        let seed = token::decode(&value).unwrap().lottery_seed();
        let wins = lottery::wins(seed, Percentage::whole(50));
        let word = if wins { "lottery-won" } else { "lottery-lost" };
        if wins {
            won += 1
        } else {
            lost += 1
        }
        let at = now.to_string();
        let args = [
            "token", "inspect", &value, "--keys", &keys, "--uid", &uid, "--config", &conf, "--at",
            &at,
        ];
        let run = wrctl(&args, &[]);
        assert_eq!(run.code, Some(0), "{}", run.all());
        assert!(
            run.out.contains(&format!("draw       {word} at p=50")),
            "{}",
            run.out
        );
        assert!(
            run.out.contains(&format!("transition={word}")),
            "{}",
            run.out
        );
        let decision = if wins {
            "decision=allow"
        } else {
            "decision=re-wait"
        };
        assert!(run.out.contains(decision), "{}", run.out);
    }
    assert!(won > 0 && lost > 0, "won {won}, lost {lost}");
}

/// `wrctl token mint` with the keys `keys`, a token's fields, and `extra` arguments.
fn mint_with(keys: &str, [kid, dec, exp, uid]: [&str; 4], extra: &[&str]) -> Run {
    let args = [
        "token", "mint", "--keys", keys, "--kid", kid, "--dec", dec, "--exp", exp, "--uid", uid,
    ];
    wrctl(&[&args[..], extra].concat(), &[])
}

#[test]
fn mint_then_inspect_is_valid() {
    let (_dir, keys, _) = stores(json!({}));
    let keys = keys.as_str();
    let fields = ["key2", "allow", "+600", "2001:db8::1"];
    let run = mint_with(keys, fields, &["--adm", "1800000000"]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    no_secret_in(&run);
    let value = run.out.trim();
    let token = token::decode(value).unwrap();
    assert!(token.verify(&SigningKey::new(KEY2).unwrap()));
    assert_eq!(token.claims.dec, TokenKind::Allow);
    assert_eq!(token.claims.uid, "2001:db8::1");
    assert_eq!(token.claims.adm, Some(1_800_000_000));
    assert!(token.claims.exp.abs_diff(unix_now() + 600) <= 5);
    let run = wrctl(&["token", "inspect", value, "--keys", keys], &[]);
    assert!(run.out.contains("signature  valid"), "{}", run.out);

    let run = mint_with(keys, ["key1", "wait", "1800000000", "10.1.2.3"], &[]);
    assert_eq!(run.code, Some(0));
    assert_eq!(
        run.out.trim(),
        mint(KEY1, "key1", TokenKind::Wait, 1_800_000_000, "10.1.2.3")
    );
}

#[test]
fn mint_refuses_weak_empty_and_missing_keys_and_unreadable_tokens() {
    let (_dir, keys, _) = stores(json!({}));
    let keys = keys.as_str();
    let with = |kid: &str, extra: &[&str]| mint_with(keys, [kid, "wait", "+30", "10.0.0.1"], extra);
    let run = with("weak", &[]);
    assert_eq!(run.code, Some(1));
    assert!(run.err.contains("weak"), "{}", run.err);
    no_secret_in(&run);
    let run = with("weak", &["--allow-weak"]);
    assert_eq!(run.code, Some(0), "{}", run.err);
    assert!(
        token::decode(run.out.trim())
            .unwrap()
            .verify(&SigningKey::new(WEAK).unwrap())
    );
    assert_eq!(with("empty", &["--allow-weak"]).code, Some(1));
    assert_eq!(with("nope", &[]).code, Some(1));
    // An admission time on a wait token never reads back.
    let run = with("key1", &["--adm", "5"]);
    assert_eq!(run.code, Some(1));
    assert!(run.err.contains("malformed:adm"), "{}", run.err);
    // A FIFO place on a wait token does; on an allow token it would not.
    let run = with("key1", &["--arr", "1800000000123"]);
    assert_eq!(run.code, Some(0), "{}", run.err);
    let token = token::decode(run.out.trim()).unwrap();
    assert_eq!(token.claims.arr, Some(1_800_000_000_123));
    let inspect = wrctl(&["token", "inspect", run.out.trim(), "--keys", keys], &[]);
    assert!(
        inspect.out.contains("arr        1800000000123 (")
            && inspect.out.contains("signature  valid"),
        "{}",
        inspect.out
    );
    let run = mint_with(keys, ["key1", "allow", "+30", "10.0.0.1"], &["--arr", "5"]);
    assert_eq!(run.code, Some(1));
    assert!(run.err.contains("malformed:arr"), "{}", run.err);
    assert_eq!(with("key1", &["--exp", "soon"]).code, Some(2));
}

/// `--exp`, `--adm`, `--arr` and `--at` take RFC 3339 (with `Z` or an offset) as
/// well as Unix time; garbage and times out of range are usage errors.
#[test]
fn time_options_take_rfc3339_or_unix() {
    let (_dir, keys, _) = stores(json!({}));
    let keys = keys.as_str();
    let mint_allow =
        |exp: &str, adm: &str| mint_with(keys, ["key1", "allow", exp, "10.1.2.3"], &["--adm", adm]);
    let unix = mint_allow("1800000000", "1799999700");
    assert_eq!(unix.code, Some(0), "{}", unix.all());
    for (exp, adm) in [
        ("2027-01-15T08:00:00Z", "2027-01-15T07:55:00Z"),
        ("2027-01-15T09:00:00+01:00", "2027-01-15T02:55:00-05:00"),
    ] {
        let run = mint_allow(exp, adm);
        assert_eq!(run.code, Some(0), "{exp} {adm}: {}", run.all());
        assert_eq!(run.out, unix.out, "{exp} {adm}");
    }

    let mint_wait =
        |arr: &str| mint_with(keys, ["key1", "wait", "+30", "10.1.2.3"], &["--arr", arr]);
    for arr in [
        "1800000000123",
        "2027-01-15T08:00:00.123Z",
        "2027-01-15T03:00:00.123-05:00",
    ] {
        let run = mint_wait(arr);
        assert_eq!(run.code, Some(0), "{arr}: {}", run.all());
        let token = token::decode(run.out.trim()).unwrap();
        assert_eq!(token.claims.arr, Some(1_800_000_000_123), "{arr}");
        let inspect = wrctl(&["token", "inspect", run.out.trim()], &[]);
        assert!(
            inspect
                .out
                .contains("arr        1800000000123 (2027-01-15 08:00:00.123 UTC, "),
            "{}",
            inspect.out
        );
    }

    let value = mint(KEY1, "key1", TokenKind::Allow, 1_800_000_300, "203.0.113.7");
    let inspect_at = |at: &str| wrctl(&["token", "inspect", &value, "--at", at], &[]);
    let unix = inspect_at("1800000000");
    assert!(unix.out.contains("UTC, in 5 min)"), "{}", unix.out);
    for at in ["2027-01-15T08:00:00Z", "2027-01-15T09:00:00+01:00"] {
        let run = inspect_at(at);
        assert_eq!(run.code, Some(0), "{at}: {}", run.all());
        assert_eq!(run.out, unix.out, "{at}");
    }

    for (option, bad) in [
        ("--at", "soon"),
        ("--at", "2027-01-15T08:00:00"),
        ("--adm", "1969-12-31T23:59:59Z"),
        ("--arr", "2027-01-15 08:00"),
        ("--exp", "10000-01-01T00:00:00Z"),
    ] {
        let run = match option {
            "--at" => inspect_at(bad),
            "--exp" => mint_allow(bad, "1799999700"),
            _ => mint_with(keys, ["key1", "allow", "+30", "10.1.2.3"], &[option, bad]),
        };
        assert_eq!(run.code, Some(2), "{option} {bad}: {}", run.all());
        assert!(run.err.contains("RFC 3339"), "{option} {bad}: {}", run.err);
    }
}

/// `wrctl rotate` on the local key and config files, with `extra` arguments.
fn rotate_files(keys: &str, conf: &str, extra: &[&str]) -> Run {
    let args = ["rotate", "--keys", keys, "--config", conf];
    wrctl(&[&args[..], extra].concat(), &[])
}

/// The `unix N` of the deletion line.
fn deletion_unix(out: &str) -> u64 {
    let at = out.find("(unix ").expect(out) + "(unix ".len();
    out[at..].split(')').next().unwrap().parse().unwrap()
}

#[test]
fn rotate_adds_a_key_and_switches_active_key() {
    let (_dir, keys, conf) = stores(json!({
        "active_key": "key2", "allow_period_timeout": "600", "wait_period_duration": "10",
        "allow_percentage": "50"
    }));
    let before = unix_now();
    let run = rotate_files(&keys, &conf, &[]);
    let after = unix_now();
    assert_eq!(run.code, Some(0), "{}", run.all());
    let k = read(&keys);
    let new = k["key3"].as_str().expect("key3 added");
    assert_eq!(STANDARD.decode(new).unwrap().len(), 32);
    assert!(
        !run.all().contains(new),
        "the new key is shown:\n{}",
        run.all()
    );
    assert_eq!(
        (k["key1"].as_str(), k["key2"].as_str(), k["weak"].as_str()),
        (Some(KEY1), Some(KEY2), Some(WEAK))
    );
    let c = read(&conf);
    assert_eq!(c["active_key"], "key3");
    assert_eq!(c["allow_percentage"], "50");
    assert!(run.out.contains("active_key: key2 -> key3"), "{}", run.out);
    let at = deletion_unix(&run.out);
    assert!(
        (before + 630..=after + 630).contains(&at),
        "{at} not {before}+630"
    );
    assert!(
        run.out.contains("in 10 min 30 s") || run.out.contains("in 10 min 29 s"),
        "{}",
        run.out
    );
    assert!(run.out.contains("wrctl revoke key2"));

    // An id given, and one that exists is refused.
    let run = rotate_files(&keys, &conf, &["--kid", "2027-a"]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert_eq!(read(&conf)["active_key"], "2027-a");
    assert!(read(&keys)["key3"].is_string());
    let run = rotate_files(&keys, &conf, &["--kid", "key1"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(read(&conf)["active_key"], "2027-a");
}

#[test]
fn rotate_uses_the_defaults_of_an_empty_config() {
    let (_dir, keys, conf) = stores(json!({}));
    let before = unix_now();
    let run = rotate_files(&keys, &conf, &[]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(run.out.contains("active_key: key1 -> key3"), "{}", run.out);
    // 3600 + 3 × 30.
    assert!(deletion_unix(&run.out).abs_diff(before + 3690) <= 2);
}

#[test]
fn rotate_never_picks_the_active_keys_id() {
    let (_dir, keys, conf) =
        key_and_config_files(json!({"main": KEY1}), json!({"active_key": "key4"}));
    let run = rotate_files(&keys, &conf, &[]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert_eq!(read(&conf)["active_key"], "key5");
    assert_eq!(read(&keys)["main"], KEY1);
}

#[test]
fn revoke_refuses_the_active_key_and_removes_another() {
    let (_dir, keys, conf) = stores(json!({"active_key": "key2"}));
    let (k, c) = (keys.as_str(), conf.as_str());
    let run = wrctl(&["revoke", "key2", "--keys", k, "--config", c], &[]);
    assert_eq!(run.code, Some(1));
    assert!(run.err.contains("rotate first"), "{}", run.err);
    let run = wrctl(&["revoke", "key7", "--keys", k, "--config", c], &[]);
    assert_eq!(run.code, Some(1));
    assert!(run.err.contains("no key"), "{}", run.err);
    no_secret_in(&run);
    let run = wrctl(&["revoke", "key1", "--keys", k, "--config", c], &[]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    let left = read(&keys);
    assert!(left.get("key1").is_none());
    assert_eq!(left["key2"], KEY2);
    assert_eq!(left["weak"], WEAK);
}

/// `wrctl rotate` to `key2` in the stores `CS` and `SS`, without the API's URL.
const ROTATE_BY_API: [&str; 7] = [
    "rotate",
    "--kid",
    "key2",
    "--fastly-config-store",
    "CS",
    "--fastly-secret-store",
    "SS",
];

#[test]
fn rotate_through_the_fastly_api() {
    let items = json!([
        {"item_key": "active_key", "item_value": "key1", "store_id": "CS"},
        {"item_key": "allow_period_timeout", "item_value": "900", "store_id": "CS"},
        {"item_key": "wait_period_duration", "item_value": "20", "store_id": "CS"}
    ]);
    let api = MockApi::start(&[200], &items.to_string());
    let token = "test-api-token-1234";
    let before = unix_now();
    let run = wrctl(
        &[&ROTATE_BY_API[..], &["--fastly-api-url", &api.url()]].concat(),
        &[("FASTLY_API_TOKEN", token)],
    );
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(!run.all().contains(token));
    let requests = api.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    for r in &requests {
        assert_eq!(r.header("Fastly-Key"), Some(token));
    }
    assert_eq!(requests[0].line(), "GET /resources/stores/config/CS/items");
    assert_eq!(
        requests[1].line(),
        "POST /resources/stores/secret/SS/secrets"
    );
    assert_eq!(requests[1].header("Content-Type"), Some("application/json"));
    let body: Value = serde_json::from_str(&requests[1].body).unwrap();
    assert_eq!(body["name"], "key2");
    let secret = STANDARD.decode(body["secret"].as_str().unwrap()).unwrap();
    let key = String::from_utf8(secret).unwrap();
    assert_eq!(STANDARD.decode(&key).unwrap().len(), 32);
    assert!(!run.all().contains(&key));
    assert_eq!(
        requests[2].line(),
        "PATCH /resources/stores/config/CS/items"
    );
    let body: Value = serde_json::from_str(&requests[2].body).unwrap();
    assert_eq!(
        body,
        json!({"items": [{"op": "upsert", "item_key": "active_key", "item_value": "key2"}]})
    );
    assert!(run.out.contains("active_key: key1 -> key2"), "{}", run.out);
    // 900 + 3 × 20.
    assert!(deletion_unix(&run.out).abs_diff(before + 960) <= 2);
}

#[test]
fn a_refused_secret_leaves_active_key_alone() {
    let api = MockApi::start(&[200, 409], "[]");
    let run = wrctl(
        &[&ROTATE_BY_API[..], &["--fastly-api-url", &api.url()]].concat(),
        &[("FASTLY_API_TOKEN", "t0ken-abc")],
    );
    assert_eq!(run.code, Some(1));
    assert!(run.err.contains("409"), "{}", run.err);
    assert_eq!(api.requests().len(), 2);
    let run = wrctl(&ROTATE_BY_API, &[]);
    assert_eq!(run.code, Some(2), "{}", run.err);
}

#[test]
fn revoke_through_the_fastly_api_deletes_the_secret_but_never_the_active_key() {
    let items = json!([{"item_key": "active_key", "item_value": "key2", "store_id": "CS"}]);
    let token = "test-api-token-5678";
    let revoke = |kid: &str, api: &MockApi| {
        let url = api.url();
        let args = [
            "revoke",
            kid,
            "--fastly-config-store",
            "CS",
            "--fastly-secret-store",
            "SS",
            "--fastly-api-url",
            &url,
        ];
        wrctl(&args, &[("FASTLY_API_TOKEN", token)])
    };
    let api = MockApi::start(&[200, 200], &items.to_string());
    let run = revoke("key1", &api);
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(!run.all().contains(token));
    let requests = api.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(
        requests[1].line(),
        "DELETE /resources/stores/secret/SS/secrets/key1"
    );
    assert!(
        requests
            .iter()
            .all(|r| r.header("Fastly-Key") == Some(token))
    );

    // The active key: refused after reading the config, nothing deleted.
    let api = MockApi::start(&[200], &items.to_string());
    let run = revoke("key2", &api);
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(run.all().contains("rotate first"), "{}", run.all());
    assert_eq!(api.requests().len(), 1);

    // An id that is no plain path segment is refused before any request.
    let api = MockApi::start(&[200], &items.to_string());
    let run = revoke("../x", &api);
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(api.requests().is_empty());
}

#[test]
fn config_set_writes_a_member_into_settings_through_the_fastly_api() {
    let items = json!([
        {"item_key": "enabled", "item_value": "true", "store_id": "CS"},
        {"item_key": "settings", "item_value": "{\"protected_paths\":\"/shop\"}", "store_id": "CS"}
    ]);
    let api = MockApi::start(&[200], &items.to_string());
    let token = "test-api-token-5678";
    let set = |key: &str, value: &str| {
        wrctl(
            &[
                "config",
                "set",
                key,
                value,
                "--fastly-config-store",
                "CS",
                "--fastly-api-url",
                &api.url(),
            ],
            &[("FASTLY_API_TOKEN", token)],
        )
    };
    let run = set("queue_all", "true");
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(!run.all().contains(token));
    let requests = api.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].line(), "GET /resources/stores/config/CS/items");
    assert_eq!(
        requests[1].line(),
        "PATCH /resources/stores/config/CS/items"
    );
    // One upsert of the settings item, its other members kept.
    let body: Value = serde_json::from_str(&requests[1].body).unwrap();
    let item = &body["items"][0];
    assert_eq!(
        (item["op"].as_str(), item["item_key"].as_str()),
        (Some("upsert"), Some("settings"))
    );
    let members: Value = serde_json::from_str(item["item_value"].as_str().unwrap()).unwrap();
    assert_eq!(
        members,
        json!({"protected_paths": "/shop", "queue_all": "true"})
    );
    // A key of its own is written as itself; a value the room would not read, never.
    let run = set("allow_percentage", "2.5");
    assert_eq!(run.code, Some(0), "{}", run.all());
    let body: Value = serde_json::from_str(&api.requests()[3].body).unwrap();
    assert_eq!(
        body,
        json!({"items": [{"op": "upsert", "item_key": "allow_percentage", "item_value": "2.5"}]})
    );
    let run = set("waiting_status", "418");
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert_eq!(api.requests().len(), 5, "only the GET of the refused set");
}
