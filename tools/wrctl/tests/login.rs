//! `wrctl login keys` and `wrctl login mint`, run as the real binary: a provider's
//! JWKS served over HTTP made into `login_keys` and written only when it changed, and
//! minted tokens verified by the room's own `login::verify`.

use crate::support;

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use support::{MockApi, Run, unix_now, wrctl};
use test_support::logins::{
    AUDIENCE, ES256_PEM, HASH_KEY, HS256_SECRET, ISSUER, RS256_1024_PEM, RS256_PEM,
};
use waiting_room::credentials::login::{self, Login, person_uid};
use waiting_room::credentials::login_mint::MintKey;
use waiting_room::settings::config::Settings;
use waiting_room::settings::identity::{HashKey, LoginKey, WhoMayWait, parse_login_keys};

/// A secret no output may hold: the `k` of an `oct` key a provider publishes by mistake.
const OCT_SECRET: &str = "c2VjcmV0LW9mLWFuLW9jdC1rZXktbmV2ZXItc2hvd24";

/// `jwk` with the members a provider adds for other readers than the room.
fn as_published(mut jwk: Value, extra: Value) -> Value {
    let fields = jwk.as_object_mut().unwrap();
    fields.insert("use".into(), "sig".into());
    fields.extend(extra.as_object().unwrap().clone());
    jwk
}

fn public_jwk(pem: &str, kid: &str) -> Value {
    MintKey::from_pem(pem).unwrap().public_jwk(kid)
}

/// A provider's JWKS as published: two keys the room verifies with (with `x5c`,
/// `x5t` and `use`), and others it refuses: RSA-1024, Ed25519, P-384, an encryption
/// key, an `oct` key holding its secret, and a second key of one kid.
fn provider_jwks() -> Value {
    let rsa = public_jwk(RS256_PEM, "rs-2025");
    let certificate = json!({
        "x5c": [STANDARD.encode(b"the provider's certificate, DER in real life")],
        "x5t": "dGh1bWJwcmludCBvZiB0aGUgY2VydGlmaWNhdGU",
        "x5t#S256": "c2hhLTI1NiB0aHVtYnByaW50IG9mIHRoZSBjZXJ0aWZpY2F0ZQ",
        "alg": "RS256",
    });
    let mut enc = as_published(rsa.clone(), json!({"kid": "enc-1", "alg": "RSA-OAEP"}));
    enc["use"] = "enc".into();
    let mut marked_for_encryption = public_jwk(RS256_PEM, "enc-2");
    marked_for_encryption["use"] = "enc".into();
    json!({"keys": [
        as_published(rsa, certificate),
        as_published(public_jwk(RS256_1024_PEM, "rs-old"), json!({})),
        as_published(public_jwk(ES256_PEM, "es-1"), json!({})),
        {"kty": "OKP", "crv": "Ed25519", "kid": "ed-1", "use": "sig", "alg": "EdDSA",
         "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
        {"kty": "EC", "crv": "P-384", "kid": "ec-384", "use": "sig", "alg": "ES384",
         "x": "iA7lWQLzVrKGEFjfGMfMHfTEZ2KnLiKU7JuNT3E7ygsfE7ygsfE7ygsfE7ygsfE7",
         "y": "iA7lWQLzVrKGEFjfGMfMHfTEZ2KnLiKU7JuNT3E7ygsfE7ygsfE7ygsfE7ygsfE7"},
        enc,
        marked_for_encryption,
        {"kty": "oct", "kid": "shared", "k": OCT_SECRET},
        as_published(public_jwk(ES256_PEM, "rs-2025"), json!({})),
    ]})
}

/// The keys the room verifies with, of [`provider_jwks`].
fn usable_keys() -> Vec<LoginKey> {
    let jwks = json!({"keys": [public_jwk(RS256_PEM, "rs-2025"), public_jwk(ES256_PEM, "es-1")]});
    parse_login_keys(&jwks.to_string()).unwrap()
}

fn login_keys(jwks: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    wrctl(&[&["login", "keys", "--jwks", jwks], extra].concat(), env)
}

#[test]
fn a_providers_jwks_is_stripped_and_each_refused_key_named() {
    let provider = MockApi::start(&[200], &provider_jwks().to_string());
    let url = format!("{}/.well-known/jwks.json", provider.url());
    let run = login_keys(&url, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].line(), "GET /.well-known/jwks.json");

    // The value: the usable keys, with only what verifying needs.
    let value: Value = serde_json::from_str(run.out.trim()).unwrap();
    for jwk in value["keys"].as_array().unwrap() {
        for member in jwk.as_object().unwrap().keys() {
            assert!(
                ["kty", "kid", "alg", "n", "e", "crv", "x", "y"].contains(&member.as_str()),
                "{member}: {jwk}"
            );
        }
    }
    assert_eq!(parse_login_keys(run.out.trim()).unwrap(), usable_keys());
    assert!(
        !run.out.contains("x5c") && !run.out.contains("use"),
        "{}",
        run.out
    );

    // Each refused key, and why.
    for needle in [
        "kept kid \"rs-2025\": RS256 (2048 bits)",
        "kept kid \"es-1\": ES256 (P-256)",
        "refused kid \"rs-old\": an RSA key of 1024 bits: the room takes 2048 to 4096 (rsa-bits)",
        "refused kid \"ed-1\": kty \"OKP\" is not one the room verifies",
        "refused kid \"ec-384\": an EC key on curve \"P-384\": the room verifies P-256 only (crv)",
        "refused kid \"enc-1\": alg \"RSA-OAEP\" is not its key's (alg)",
        "refused kid \"enc-2\": use \"enc\" is not sig: not a key tokens are signed with (use)",
        "refused kid \"shared\": an oct key holding its secret: an HS256 secret goes to the Secret \
         Store waitingroom_login under the key's kid, never into the config store (k)",
        "refused kid \"rs-2025\": a second key of this kid: the first is used",
    ] {
        assert!(run.err.contains(needle), "{needle}:\n{}", run.err);
    }
    assert!(!run.all().contains(OCT_SECRET), "{}", run.all());

    // The same from a file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, provider_jwks().to_string()).unwrap();
    let from_file = login_keys(file.to_str().unwrap(), &[], &[]);
    assert_eq!((from_file.code, &from_file.out), (Some(0), &run.out));
}

/// The Fastly API's config-store items: `settings` holding `members`.
fn items(members: Value) -> String {
    json!([
        {"item_key": "enabled", "item_value": "true", "store_id": "CS"},
        {"item_key": "settings", "item_value": members.to_string(), "store_id": "CS"}
    ])
    .to_string()
}

fn patches(api: &MockApi) -> usize {
    api.requests()
        .iter()
        .filter(|r| r.method == "PATCH")
        .count()
}

#[test]
fn login_keys_are_written_through_the_fastly_api_only_when_they_changed() {
    let provider = MockApi::start(&[200], &provider_jwks().to_string());
    let token = "test-api-token-login";
    let env = [("FASTLY_API_TOKEN", token)];
    let by_api = |api: &MockApi, jwks: &str| {
        let url = api.url();
        let args = [
            "--fastly-config-store",
            "CS",
            "--fastly-api-url",
            url.as_str(),
        ];
        login_keys(jwks, &args, &env)
    };

    // A store without login_keys: one GET, one upsert of settings, its members kept.
    let api = MockApi::with_budget(
        &[200],
        &items(json!({"protected_paths": "/shop"})),
        1000,
        unix_now(),
    );
    let run = by_api(&api, &provider.url());
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(!run.all().contains(token));
    assert!(
        run.err.contains("login_keys written in config store CS"),
        "{}",
        run.err
    );
    assert_eq!(patches(&api), 1);
    let requests = api.requests();
    assert_eq!(requests[0].line(), "GET /resources/stores/config/CS/items");
    let body: Value = serde_json::from_str(&requests[1].body).unwrap();
    assert_eq!(body["items"][0]["item_key"], "settings");
    let written: BTreeMap<String, String> =
        serde_json::from_str(body["items"][0]["item_value"].as_str().unwrap()).unwrap();
    assert_eq!(written["protected_paths"], "/shop");
    assert_eq!(
        parse_login_keys(&written["login_keys"]).unwrap(),
        usable_keys()
    );

    // The store holding them now: one GET, no write; in another order, the same keys.
    let members = json!({"protected_paths": "/shop", "login_keys": written["login_keys"]});
    let api = MockApi::with_budget(&[200], &items(members), 1000, unix_now());
    let run = by_api(&api, &provider.url());
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(
        run.err
            .contains("login_keys unchanged in config store CS: nothing written"),
        "{}",
        run.err
    );
    let mut reordered = provider_jwks();
    reordered["keys"].as_array_mut().unwrap().swap(0, 2);
    let reordered_provider = MockApi::start(&[200], &reordered.to_string());
    let run = by_api(&api, &reordered_provider.url());
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(run.err.contains("unchanged"), "{}", run.err);
    assert_eq!((api.requests().len(), patches(&api)), (2, 0));

    // A key more: written again.
    let rotated =
        json!({"keys": [public_jwk(RS256_PEM, "rs-2025"), public_jwk(ES256_PEM, "es-2")]});
    let rotated_provider = MockApi::start(&[200], &rotated.to_string());
    let run = by_api(&api, &rotated_provider.url());
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert_eq!(patches(&api), 1);
}

#[test]
fn login_keys_are_written_to_a_file_only_when_they_changed() {
    use std::os::unix::fs::MetadataExt as _;
    let provider = MockApi::start(&[200], &provider_jwks().to_string());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(
        &path,
        r#"{"enabled": "true", "settings": "{\"queue_all\":\"true\"}"}"#,
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let run = login_keys(&provider.url(), &["--config-file", file], &[]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(run.err.contains("login_keys written in"), "{}", run.err);
    let store: BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let settings = Settings::from_lookup(|k| {
        let members: BTreeMap<String, String> = serde_json::from_str(&store["settings"]).ok()?;
        members.get(k).cloned()
    });
    assert_eq!(settings.login_keys, usable_keys());
    assert!(settings.queue_all);

    // Unchanged: the file is not replaced (a replacement is a new file renamed over it).
    let inode = std::fs::metadata(&path).unwrap().ino();
    let run = login_keys(&provider.url(), &["--config-file", file], &[]);
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(run.err.contains("unchanged"), "{}", run.err);
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);
}

#[test]
fn no_usable_key_or_an_oversized_settings_item_is_never_written() {
    let api_items = items(json!({"protected_paths": "/shop"}));
    let env = [("FASTLY_API_TOKEN", "test-api-token-login")];
    let with_api = |api: &MockApi, jwks: &str| {
        let url = api.url();
        login_keys(
            jwks,
            &["--fastly-config-store", "CS", "--fastly-api-url", &url],
            &env,
        )
    };
    // Only keys the room refuses: nothing printed, nothing written.
    let refused = json!({"keys": [public_jwk(RS256_1024_PEM, "rs-old"),
        {"kty": "OKP", "crv": "Ed25519", "kid": "ed-1", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]});
    let provider = MockApi::start(&[200], &refused.to_string());
    let api = MockApi::with_budget(&[200], &api_items, 1000, unix_now());
    let run = with_api(&api, &provider.url());
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(run.out.is_empty(), "{}", run.out);
    assert!(
        run.err
            .contains("no key of the JWKS is one the room can use"),
        "{}",
        run.err
    );
    assert_eq!(patches(&api), 0);

    // Keys that would take the settings item past 8,000 characters: refused.
    let long_paths: String = (0..950).map(|i| format!("/p{i:05},")).collect();
    let api = MockApi::with_budget(
        &[200],
        &items(json!({"protected_paths": long_paths})),
        1000,
        unix_now(),
    );
    let provider = MockApi::start(&[200], &provider_jwks().to_string());
    let run = with_api(&api, &provider.url());
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(
        run.err
            .contains("over a config-store value's 8,000: not written"),
        "{}",
        run.err
    );
    assert_eq!(patches(&api), 0);

    // Not a JWKS at all.
    let provider = MockApi::start(&[200], r#"{"issuer": "https://id.example.test/"}"#);
    let run = login_keys(&provider.url(), &[], &[]);
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(run.err.contains("not a JWKS"), "{}", run.err);
}

#[test]
fn the_jwks_is_fetched_over_https_only_and_bounded() {
    for (source, code) in [
        ("http://id.example.test/jwks.json", 2),
        ("ftp://id.example.test/jwks.json", 2),
        ("http://192.0.2.1/jwks.json", 2),
    ] {
        let run = login_keys(source, &[], &[]);
        assert_eq!(run.code, Some(code), "{source}: {}", run.all());
        assert!(run.err.contains("https://"), "{}", run.err);
    }
    let huge = json!({"keys": [], "padding": "x".repeat(300 * 1024)});
    let provider = MockApi::start(&[200], &huge.to_string());
    let run = login_keys(&provider.url(), &[], &[]);
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(run.err.contains("over 262144 bytes"), "{}", run.err);

    let missing = MockApi::start(&[404], "{}");
    let run = login_keys(&missing.url(), &[], &[]);
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(run.err.contains("404"), "{}", run.err);

    // A store through the API without a token: refused before anything is fetched.
    let provider = MockApi::start(&[200], &provider_jwks().to_string());
    let run = login_keys(&provider.url(), &["--fastly-config-store", "CS"], &[]);
    assert_eq!(run.code, Some(2), "{}", run.all());
    assert!(provider.requests().is_empty());
}

fn mint(args: &[&str], env: &[(&str, &str)]) -> Run {
    wrctl(&[&["login", "mint"], args].concat(), env)
}

/// Settings of a service whose identity is the login, verified with `jwk`.
fn settings_of(jwk: &Value) -> Settings {
    let members = [
        ("identity", "login".to_string()),
        ("login_issuer", ISSUER.to_string()),
        ("login_audience", AUDIENCE.to_string()),
        ("login_hash_key", HASH_KEY.to_string()),
        ("login_keys", json!({"keys": [jwk]}).to_string()),
    ];
    let (settings, fallbacks) = Settings::read(&|k| {
        members
            .iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
    });
    assert!(fallbacks.is_empty(), "{fallbacks:?}");
    settings
}

#[test]
fn minted_tokens_verify_with_the_rooms_own_code() {
    let dir = tempfile::tempdir().unwrap();
    let pem_file = |name: &str, pem: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, pem).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (rs, es) = (pem_file("rs.pem", RS256_PEM), pem_file("es.pem", ES256_PEM));
    let hs = [("WRCTL_LOGIN_SECRET", HS256_SECRET)];
    // (kid, the key's options, the environment)
    let cases = [
        (
            "site-rs",
            vec!["--key", rs.as_str(), "--kid", "site-rs"],
            &[][..],
        ),
        (
            "site-es",
            vec!["--key", es.as_str(), "--kid", "site-es"],
            &[],
        ),
        ("site-hs", vec!["--kid", "site-hs"], &hs),
    ];
    let hash_key = HashKey::parse(HASH_KEY).unwrap();
    let presale = WhoMayWait::parse("tier=presale").unwrap();
    for (kid, key, env) in cases {
        let printed = mint(&[&key[..], &["--print-jwk"]].concat(), &[]);
        assert_eq!(printed.code, Some(0), "{kid}: {}", printed.all());
        let jwk: Value = serde_json::from_str(printed.out.trim()).unwrap();
        assert_eq!(LoginKey::from_jwk(&jwk).unwrap().kid, kid);
        let settings = settings_of(&jwk);

        let minted = mint(
            &[
                &key[..],
                &[
                    "--iss",
                    ISSUER,
                    "--aud",
                    AUDIENCE,
                    "--subs-prefix",
                    "load-",
                    "--count",
                    "3",
                ],
                &["--ttl", "600", "--claim", "tier=presale"],
            ]
            .concat(),
            env,
        );
        assert_eq!(minted.code, Some(0), "{kid}: {}", minted.all());
        assert!(!minted.all().contains(HS256_SECRET));
        let tokens: Vec<&str> = minted.out.lines().collect();
        assert_eq!(tokens.len(), 3, "{kid}: {}", minted.out);
        let now = unix_now();
        for (i, token) in tokens.iter().enumerate() {
            let login = login::verify(Some(token), &settings, "192.0.2.7", now, &mut |asked| {
                assert_eq!(asked, "site-hs", "only an HS256 key's secret is read");
                Ok(Some(HS256_SECRET.as_bytes().to_vec()))
            });
            let sub = format!("load-{i}");
            match &login {
                Login::Person { uid, claims } => {
                    assert_eq!(*uid, person_uid(&hash_key, ISSUER, &sub, None), "{kid}");
                    assert_eq!(claims["sub"], sub.as_str());
                    let (iat, exp) = (
                        claims["iat"].as_u64().unwrap(),
                        claims["exp"].as_u64().unwrap(),
                    );
                    assert_eq!(exp - iat, 600);
                    assert!(iat.abs_diff(now) <= 5);
                }
                other => panic!("{kid}: {other:?}"),
            }
            assert!(login.may_wait(&presale), "{kid}");
        }
    }
}

#[test]
fn mint_refuses_what_the_room_would_and_takes_no_secret_from_a_flag() {
    let dir = tempfile::tempdir().unwrap();
    let weak = dir.path().join("weak.pem");
    std::fs::write(&weak, RS256_1024_PEM).unwrap();
    let weak = weak.to_str().unwrap();
    let run = mint(&["--key", weak, "--kid", "old", "--print-jwk"], &[]);
    assert_eq!(run.code, Some(1), "{}", run.all());
    assert!(
        run.err.contains("an RSA key of 1024 bits") && run.out.is_empty(),
        "{}",
        run.all()
    );
    // Minted anyway (tests of refused tokens), with a warning.
    let run = mint(
        &[
            "--key", weak, "--kid", "old", "--iss", ISSUER, "--aud", AUDIENCE, "--sub", "a",
        ],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}", run.all());
    assert!(
        run.err.contains("warning: the room refuses this key"),
        "{}",
        run.err
    );

    let hs = [
        "--kid", "site-hs", "--iss", ISSUER, "--aud", AUDIENCE, "--sub", "alice",
    ];
    let run = mint(&hs, &[]);
    assert_eq!(run.code, Some(2), "{}", run.all());
    assert!(run.err.contains("WRCTL_LOGIN_SECRET"), "{}", run.err);
    for extra in [
        &["--secret", HS256_SECRET][..],
        &["--claim", "exp=1"],
        &["--claim", "sub=bob"],
    ] {
        let run = mint(
            &[&hs[..], extra].concat(),
            &[("WRCTL_LOGIN_SECRET", HS256_SECRET)],
        );
        assert_eq!(run.code, Some(2), "{extra:?}: {}", run.all());
    }
    let run = mint(&["--kid", "a/b", "--print-jwk"], &[]);
    assert_eq!(run.code, Some(2), "{}", run.all());
    let not_a_key = dir.path().join("not.pem");
    std::fs::write(&not_a_key, "-----BEGIN NOTHING-----").unwrap();
    let run = mint(
        &[
            "--key",
            not_a_key.to_str().unwrap(),
            "--kid",
            "k",
            "--print-jwk",
        ],
        &[],
    );
    assert_eq!(run.code, Some(1), "{}", run.all());
}
