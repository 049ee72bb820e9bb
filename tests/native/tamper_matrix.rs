//! The tamper matrix: every field of a valid allow token changed in every way an
//! attacker might try, each with the decision and the logged reason it must get.
//! One table, read top to bottom.

use test_support::mint;

use std::collections::HashMap;

use waiting_room::admission::decision::Decision;
use waiting_room::settings::config::Settings;
use waiting_room::settings::percentage::Percentage;
use waiting_room::{Visit, plan};

const NOW: u64 = 1_700_000_023;
const EXP: u64 = NOW + 100;
const UID: &str = "192.0.2.10";
const K1: &str = "tamper-matrix-key-one-0123456789abcdef";
const K2: &str = "tamper-matrix-key-two-0123456789abcdef";

/// The untampered fields, in order.
fn fields() -> Vec<(String, String)> {
    let text = format!("dec=allow&exp={EXP}&uid={UID}&kid=key1");
    let sig = mint::vcl_sig(K1, &text);
    [
        ("dec", "allow".to_string()),
        ("exp", EXP.to_string()),
        ("uid", UID.to_string()),
        ("kid", "key1".to_string()),
        ("sig", sig),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), v))
    .collect()
}

fn join(fields: &[(String, String)]) -> String {
    let parts: Vec<String> = fields.iter().map(|(n, v)| format!("{n}={v}")).collect();
    parts.join("&")
}

/// The token with field `name` set to `value` (signature left as it was).
fn with(name: &str, value: &str) -> String {
    let mut f = fields();
    f.iter_mut().find(|(n, _)| n == name).unwrap().1 = value.to_string();
    mint::encode(&join(&f))
}

/// The token under key id `kid`, signed with the key of `key1` (which the store
/// also holds under `kid`).
fn resigned(kid: &str) -> String {
    let text = format!("dec=allow&exp={EXP}&uid={UID}&kid={kid}");
    mint::encode(&format!("{text}&sig={}", mint::vcl_sig(K1, &text)))
}

/// The token with field `name` removed.
fn without(name: &str) -> String {
    let f: Vec<_> = fields().into_iter().filter(|(n, _)| n != name).collect();
    mint::encode(&join(&f))
}

/// The token with field `name` given twice.
fn doubled(name: &str) -> String {
    let mut f = fields();
    let i = f.iter().position(|(n, _)| n == name).unwrap();
    f.insert(i, f[i].clone());
    mint::encode(&join(&f))
}

fn valid_text() -> String {
    join(&fields())
}

fn sig() -> String {
    fields()[4].1.clone()
}

/// A signature with one hex digit changed at `i`.
fn flipped(i: usize) -> String {
    let mut bytes = sig().into_bytes();
    bytes[i] = if bytes[i] == b'a' { b'b' } else { b'a' };
    String::from_utf8(bytes).unwrap()
}

/// (what the attacker did, the cookie header, the decision, the log reason or `None`).
#[rustfmt::skip]
fn matrix() -> Vec<(&'static str, String, Decision, Option<&'static str>)> {
    use Decision::{Allow, Anon};
    let cookie = |value: String| format!("waiting_room={value}");
    let valid = mint::encode(&valid_text());
    let text = format!("dec=allow&exp={EXP}&uid={UID}&kid=key1");
    let reordered = valid_text().replacen("dec=allow&exp", "exp", 1).replacen("&uid", "&dec=allow&uid", 1);
    vec![
        // The control rows: untampered, it is honoured.
        ("nothing", cookie(valid.clone()), Allow, None),
        ("quoted value (RFC 6265)", format!("waiting_room=\"{valid}\""), Allow, None),
        // dec
        ("dec changed", cookie(with("dec", "wait")), Anon, Some("bad-signature")),
        ("dec unknown", cookie(with("dec", "deny")), Anon, Some("malformed:dec")),
        ("dec uppercase", cookie(with("dec", "ALLOW")), Anon, Some("malformed:dec")),
        ("dec empty", cookie(with("dec", "")), Anon, Some("malformed:dec")),
        ("dec missing", cookie(without("dec")), Anon, Some("malformed:fields")),
        ("dec twice", cookie(doubled("dec")), Anon, Some("malformed:fields")),
        // exp
        ("exp later", cookie(with("exp", &(EXP + 1).to_string())), Anon, Some("bad-signature")),
        ("exp not a number", cookie(with("exp", "soon")), Anon, Some("malformed:exp")),
        ("exp negative", cookie(with("exp", "-1")), Anon, Some("malformed:exp")),
        ("exp signed plus", cookie(with("exp", &format!("+{EXP}"))), Anon, Some("malformed:exp")),
        ("exp leading zero", cookie(with("exp", &format!("0{EXP}"))), Anon, Some("malformed:exp")),
        ("exp huge", cookie(with("exp", "99999999999999999999")), Anon, Some("malformed:exp")),
        ("exp empty", cookie(with("exp", "")), Anon, Some("malformed:exp")),
        ("exp missing", cookie(without("exp")), Anon, Some("malformed:fields")),
        ("exp twice", cookie(doubled("exp")), Anon, Some("malformed:fields")),
        // uid
        ("uid of another client", cookie(with("uid", "192.0.2.11")), Anon, Some("uid-mismatch token_uid=192.0.2.11")),
        ("uid as IPv6", cookie(with("uid", "::ffff:c000:20a")), Anon, Some("uid-mismatch token_uid=::ffff:c000:20a")),
        ("uid with a separator", cookie(with("uid", "192.0.2.10=x")), Anon, Some("malformed:uid")),
        ("uid with a space", cookie(with("uid", "192.0.2.10 ")), Anon, Some("malformed:uid")),
        ("uid empty", cookie(with("uid", "")), Anon, Some("malformed:uid")),
        ("uid too long", cookie(with("uid", &"1".repeat(46))), Anon, Some("malformed:uid")),
        ("uid missing", cookie(without("uid")), Anon, Some("malformed:fields")),
        // kid
        ("kid unknown", cookie(with("kid", "nokey")), Anon, Some("unknown-key kid=nokey")),
        ("kid of another key", cookie(with("kid", "key2")), Anon, Some("bad-signature")),
        ("kid with a space", cookie(with("kid", "key 1")), Anon, Some("malformed:kid")),
        ("kid with a newline", cookie(with("kid", "key1\nx")), Anon, Some("malformed:kid")),
        ("kid empty", cookie(with("kid", "")), Anon, Some("malformed:kid")),
        ("kid too long", cookie(with("kid", &"k".repeat(256))), Anon, Some("malformed:kid")),
        ("kid missing", cookie(without("kid")), Anon, Some("malformed:fields")),
        ("kid names an empty key", cookie(with("kid", "emptykey")), Anon, Some("unknown-key kid=emptykey")),
        // An id a token carries but no store can hold names no key, though signed by
        // what a file store holds under it; it is never read
        // (tests/native/lookup_budget.rs).
        ("kid no store can hold", cookie(resigned("k!1")), Anon, Some("unknown-key kid=k!1")),
        ("kid with a slash", cookie(resigned("k/1")), Anon, Some("unknown-key kid=k/1")),
        // sig
        ("sig first digit changed", cookie(with("sig", &flipped(2))), Anon, Some("bad-signature")),
        ("sig last digit changed", cookie(with("sig", &flipped(65))), Anon, Some("bad-signature")),
        ("sig from another key", cookie(with("sig", &mint::vcl_sig(K2, &text))), Anon, Some("bad-signature")),
        ("sig uppercase", cookie(with("sig", &sig().to_uppercase())), Anon, Some("malformed:sig")),
        ("sig uppercase hex", cookie(with("sig", &format!("0x{}", sig()[2..].to_uppercase()))), Anon, Some("malformed:sig")),
        ("sig truncated", cookie(with("sig", &sig()[..65])), Anon, Some("malformed:sig")),
        ("sig extended", cookie(with("sig", &format!("{}0", sig()))), Anon, Some("malformed:sig")),
        ("sig without 0x", cookie(with("sig", &sig()[2..])), Anon, Some("malformed:sig")),
        ("sig empty", cookie(with("sig", "")), Anon, Some("malformed:sig")),
        ("sig missing", cookie(without("sig")), Anon, Some("malformed:fields")),
        // The whole token
        ("extra field", cookie(mint::encode(&format!("{}&x=1", valid_text()))), Anon, Some("malformed:fields")),
        ("trailing separator", cookie(mint::encode(&format!("{}&", valid_text()))), Anon, Some("malformed:fields")),
        ("fields reordered", cookie(mint::encode(&reordered)), Anon, Some("malformed:fields")),
        ("not base64", cookie("not*base64".into()), Anon, Some("malformed:not-base64")),
        ("base64 without padding", cookie(valid.trim_end_matches('=').to_string()), Anon, Some("malformed:not-base64")),
        ("base64 with a space", cookie(format!("{} {}", &valid[..8], &valid[8..])), Anon, Some("malformed:not-base64")),
        ("not UTF-8", cookie(base64_of(&[0x64, 0x65, 0x63, 0x3d, 0xff])), Anon, Some("malformed:not-utf8")),
        ("too long", cookie("QUFB".repeat(300)), Anon, Some("malformed:too-long")),
        ("plain text", cookie(valid_text()), Anon, Some("malformed:not-base64")),
        // The Cookie header
        ("empty value", "waiting_room=".into(), Anon, None),
        ("forged first, valid second", format!("waiting_room=forged; waiting_room={valid}"), Anon, Some("malformed:not-base64")),
        ("valid first, forged second", format!("waiting_room={valid}; waiting_room=forged"), Allow, None),
    ]
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn every_tampering_gets_its_documented_outcome_and_reason() {
    let keys = HashMap::from([
        ("key1".to_string(), K1.to_string()),
        ("key2".to_string(), K2.to_string()),
        ("emptykey".to_string(), String::new()),
        ("k!1".to_string(), K1.to_string()),
        ("k/1".to_string(), K1.to_string()),
    ]);
    let settings = Settings {
        enabled: true,
        allow_percentage: Percentage::whole(50),
        ..Settings::default()
    }
    .into();
    let mut failures = Vec::new();
    for (what, header, want, reason) in matrix() {
        let visit = events_visit(UID, &header);
        let p = plan(&visit, &settings, &keys);
        let got = p.verdict.as_ref().unwrap().decision;
        let line = p.log_line();
        let logged = line.split_once(" rejected=").map(|(_, r)| r);
        let reason_ok = match (reason, logged) {
            (None, None) => true,
            (Some(want), Some(got)) => got == want,
            _ => false,
        };
        if got != want || !reason_ok {
            failures.push(format!("{what}: got {got:?}, log `{}`", p.log_line()));
        }
        // Whatever was sent, the log line is one line and never holds the cookie.
        assert!(!p.log_line().contains('\n'), "{what}");
        if let Some(value) = header.strip_prefix("waiting_room=") {
            assert!(value.len() < 8 || !p.log_line().contains(value), "{what}");
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// A FIFO wait token's place (`arr`, Unix ms), held until `EXP`.
const ARR: u64 = NOW * 1000 - 5_000;
/// The cutoff the FIFO matrix runs with: the untampered place is admitted.
const CUTOFF: u64 = ARR + 1;
/// An IPv6 visitor bound to their /64 (`uid_ipv6_prefix = 64`).
const UID_64: &str = "2001:db8:1:2::/64";

/// The FIFO matrix: a valid FIFO wait token (admitted: its place is before the
/// cutoff), and its sixth field changed in every way that matters. Moving one's
/// place up the line is the attack FIFO invites.
#[rustfmt::skip]
fn fifo_matrix() -> Vec<(&'static str, &'static str, String, Decision, Option<&'static str>)> {
    use Decision::{Allow, Anon, Wait};
    let signed = |text: &str| mint::encode(&format!("{text}&sig={}", mint::vcl_sig(K1, text)));
    let forged = |text: &str, signed_text: &str| mint::encode(&format!("{text}&sig={}", mint::vcl_sig(K1, signed_text)));
    let base = format!("dec=wait&exp={EXP}&uid={UID}&kid=key1");
    let text = format!("{base}&arr={ARR}");
    let other_64 = format!("dec=wait&exp={EXP}&uid=2001:db8:1:3::/64&kid=key1&arr={ARR}");
    let own_64 = format!("dec=wait&exp={EXP}&uid={UID_64}&kid=key1&arr={ARR}");
    vec![
        ("nothing", UID, signed(&text), Allow, None),
        ("place behind the cutoff", UID, signed(&format!("{base}&arr={}", CUTOFF + 1)), Wait, None),
        ("arr moved up the line", UID, forged(&format!("{base}&arr={}", ARR - 60_000), &text), Anon, Some("bad-signature")),
        ("arr moved by 1 ms", UID, forged(&format!("{base}&arr={}", ARR - 1), &text), Anon, Some("bad-signature")),
        ("arr dropped", UID, forged(&base, &text), Anon, Some("bad-signature")),
        ("arr with a leading zero", UID, forged(&format!("{base}&arr=0{ARR}"), &text), Anon, Some("malformed:arr")),
        ("arr negative", UID, forged(&format!("{base}&arr=-{ARR}"), &text), Anon, Some("malformed:arr")),
        ("arr empty", UID, forged(&format!("{base}&arr="), &text), Anon, Some("malformed:arr")),
        ("arr huge", UID, forged(&format!("{base}&arr=99999999999999999999"), &text), Anon, Some("malformed:arr")),
        ("arr twice", UID, forged(&format!("{text}&arr={ARR}"), &text), Anon, Some("malformed:fields")),
        ("arr before kid", UID, forged(&format!("dec=wait&exp={EXP}&uid={UID}&arr={ARR}&kid=key1"), &text), Anon, Some("malformed:fields")),
        ("arr on an allow token", UID, signed(&format!("dec=allow&exp={EXP}&uid={UID}&kid=key1&arr={ARR}")), Anon, Some("malformed:arr")),
        ("adm on a wait token", UID, signed(&format!("{base}&adm={ARR}")), Anon, Some("malformed:adm")),
        ("hold extended", UID, forged(&format!("dec=wait&exp={}&uid={UID}&kid=key1&arr={ARR}", EXP + 3600), &text), Anon, Some("bad-signature")),
        ("token of the visitor's own /64", UID_64, signed(&own_64), Allow, None),
        ("token from another /64", UID_64, signed(&other_64), Anon, Some("uid-mismatch token_uid=2001:db8:1:3::/64")),
        ("token of a whole address in the /64", UID_64, signed(&format!("dec=wait&exp={EXP}&uid=2001:db8:1:2::9&kid=key1&arr={ARR}")), Anon, Some("uid-mismatch token_uid=2001:db8:1:2::9")),
    ]
}

#[test]
fn every_fifo_tampering_gets_its_documented_outcome_and_reason() {
    let keys = HashMap::from([("key1".to_string(), K1.to_string())]);
    let store = HashMap::from([
        ("enabled", "true".to_string()),
        ("allow_percentage", "50".to_string()),
        ("queueing_method", "fifo".to_string()),
        ("fifo_cutoff", CUTOFF.to_string()),
    ]);
    let settings = Settings::from_lookup(|key| store.get(key).cloned()).into();
    let mut failures = Vec::new();
    for (what, uid, value, want, reason) in fifo_matrix() {
        let header = format!("waiting_room={value}");
        let visit = events_visit(uid, &header);
        let p = plan(&visit, &settings, &keys);
        let got = p.verdict.as_ref().unwrap().decision;
        let line = p.log_line();
        let logged = line.split_once(" rejected=").map(|(_, r)| r);
        if got != want || logged != reason {
            failures.push(format!("{what}: got {got:?}, log `{}`", p.log_line()));
        }
        // A tampered token never keeps its claimed place: a newcomer's place is now.
        if reason.is_some() {
            let arr = p.verdict.as_ref().unwrap().arr;
            assert_eq!(arr, Some(NOW * 1000), "{what}");
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The /64 binding end to end: the edge's uid for two addresses in one /64 is one
/// uid, so a token minted for one is honoured from the other; a neighbouring /64
/// is another visitor.
#[test]
fn a_privacy_address_change_keeps_the_place_and_another_network_does_not() {
    use waiting_room::credentials::uid::uid_of;
    let first = uid_of("2001:db8:1:2:aaaa::1".parse().unwrap(), 64);
    let rotated = uid_of("2001:db8:1:2:bbbb:cccc:dddd:eeee".parse().unwrap(), 64);
    let neighbour = uid_of("2001:db8:1:3:aaaa::1".parse().unwrap(), 64);
    assert_eq!(first, UID_64);
    assert_eq!(rotated, first);
    assert_ne!(neighbour, first);
    // With the default (128), a rotated address is another visitor.
    assert_ne!(
        uid_of("2001:db8:1:2:aaaa::1".parse().unwrap(), 128),
        uid_of("2001:db8:1:2:bbbb:cccc:dddd:eeee".parse().unwrap(), 128)
    );
}

/// A request for `/events` at `NOW` from `uid` with the `Cookie` header `header`.
fn events_visit<'a>(uid: &'a str, header: &'a str) -> Visit<'a> {
    Visit {
        now: NOW,
        uid,
        path: "/events",
        path_and_query: "/events",
        cookie_header: Some(header),
        ..Visit::default()
    }
}
