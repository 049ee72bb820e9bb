//! The waiting-room token, byte-compatible with Fastly's VCL solution:
//!
//! ```text
//! string_to_sign = "dec=" + dec + "&exp=" + exp + "&uid=" + uid + "&kid=" + kid
//! sig            = "0x" + lowercase_hex(HMAC-SHA256(key, string_to_sign))
//! cookie value   = standard_base64_with_padding(string_to_sign + "&sig=" + sig)
//! ```
//!
//! Two kinds of token carry a sixth field, signed, before the signature:
//! - with fixed sessions (`session_mode = fixed`), an allow token carries the time
//!   of first admission: `string_to_sign + "&adm=" + adm` (Unix seconds);
//! - in FIFO mode (`queueing_method = fifo`), a wait token carries the visitor's
//!   place in the line, the time of first arrival: `string_to_sign + "&arr=" + arr`
//!   (Unix milliseconds).
//!
//! While the room asks a bot toll (`bot_toll_bits`), a wait token also carries what
//! its holder owes, last before the signature: `&toll=` and the bits of proof of
//! work its draw needs, `0` once paid ([`crate::bots::toll`]).
//!
//! VCL-format tokens (five fields) verify as before.
//!
//! Decoding accepts exactly those canonical forms and nothing looser; everything
//! that came from the network is bounds-checked before use and never panics.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::Mac;

use crate::credentials::keys::{MAX_KID_LEN, SigningKey};

/// Longest cookie value decoded, in bytes. A canonical token is under 600.
pub const MAX_COOKIE_VALUE_LEN: usize = 1024;
/// Longest `uid` accepted: the longest textual IPv6 address.
pub const MAX_UID_LEN: usize = 45;

/// The signature field after the signed text: `&sig=0x` and 64 hex digits.
const SIG_FIELD_LEN: usize = "&sig=0x".len() + 64;
/// What a token says about its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Waiting until `exp`, then entered into the lottery.
    Wait,
    /// Admitted until `exp`.
    Allow,
}

impl TokenKind {
    /// The token's `dec` text.
    fn as_text(self) -> &'static str {
        match self {
            TokenKind::Wait => "wait",
            TokenKind::Allow => "allow",
        }
    }
}

impl fmt::Display for TokenKind {
    /// The token's `dec` text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_text())
    }
}

/// The signed fields of a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// Waiting or admitted.
    pub dec: TokenKind,
    /// Expiry, Unix seconds.
    pub exp: u64,
    /// The client IP the token is bound to, as text.
    pub uid: String,
    /// Id of the signing key.
    pub kid: String,
    /// Unix seconds of first admission, on allow tokens of fixed sessions only.
    pub adm: Option<u64>,
    /// Unix milliseconds of first arrival, on FIFO wait tokens only.
    pub arr: Option<u64>,
    /// The bits of bot toll the holder owes (`0`: paid), on wait tokens issued
    /// while the room asks one only.
    pub toll: Option<u8>,
}

impl Claims {
    /// The exact text the signature covers:
    /// `dec=…&exp=…&uid=…&kid=…[&adm=…][&arr=…][&toll=…]`.
    pub fn string_to_sign(&self) -> String {
        let mut text = format!(
            "dec={}&exp={}&uid={}&kid={}",
            self.dec, self.exp, self.uid, self.kid
        );
        if let Some(adm) = self.adm {
            text.push_str(&format!("&adm={adm}"));
        }
        if let Some(arr) = self.arr {
            text.push_str(&format!("&arr={arr}"));
        }
        if let Some(toll) = self.toll {
            text.push_str(&format!("&toll={toll}"));
        }
        text
    }

    /// Signs the claims with `key` and returns the cookie value.
    pub fn mint(&self, key: &SigningKey) -> String {
        self.mint_with_signature(key).0
    }

    /// Signs the claims with `key`: the cookie value and its signature.
    pub fn mint_with_signature(&self, key: &SigningKey) -> (String, [u8; 32]) {
        let text = self.string_to_sign();
        let mut mac = key.mac();
        mac.update(text.as_bytes());
        let sig: [u8; 32] = mac.finalize().into_bytes().into();
        // Lowercase hex, as Fastly's `digest.hmac_sha256` writes it.
        let value = STANDARD.encode(format!("{text}&sig=0x{}", hex::encode(sig)));
        (value, sig)
    }
}

/// A decoded token whose signature is not yet checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedToken {
    /// The fields, as presented.
    pub claims: Claims,
    sig: [u8; 32],
    /// The text the signature covers, exactly as presented: the decoded cookie up
    /// to `&sig=`.
    signed: String,
}

impl SignedToken {
    /// Whether the signature is `key`'s HMAC of the presented text, checked in
    /// constant time.
    pub fn verify(&self, key: &SigningKey) -> bool {
        let mut mac = key.mac();
        mac.update(self.signed.as_bytes());
        mac.verify_slice(&self.sig).is_ok()
    }

    /// The VCL's lottery seed, `std.strtol(substr(sig, 0, 8), 16)`: the value of
    /// the first six hex digits of the signature, that is of its first three bytes.
    pub fn lottery_seed(&self) -> u32 {
        u32::from_be_bytes([0, self.sig[0], self.sig[1], self.sig[2]])
    }

    /// The signature as presented (the bot toll's challenge).
    pub fn signature(&self) -> &[u8; 32] {
        &self.sig
    }
}

/// Why a cookie value is not a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// Longer than [`MAX_COOKIE_VALUE_LEN`].
    TooLong,
    /// Not standard padded base64.
    NotBase64,
    /// Decodes to bytes that are not UTF-8.
    NotUtf8,
    /// Not exactly the fields `dec`, `exp`, `uid`, `kid`, [`adm`,] [`arr`,]
    /// [`toll`,] `sig`, in that order.
    Fields,
    /// `dec` is neither `wait` nor `allow`.
    TokenKind,
    /// `exp` is not a canonical unsigned decimal that fits in 64 bits.
    Exp,
    /// `uid` is empty, too long, or has characters no IP address has.
    Uid,
    /// `kid` is empty, too long, or not visible ASCII.
    Kid,
    /// `sig` is not `0x` followed by 64 lowercase hex digits.
    Sig,
    /// `adm` is not a canonical unsigned decimal, or is on a wait token.
    Adm,
    /// `arr` is not a canonical unsigned decimal, or is on an allow token.
    Arr,
    /// `toll` is not a canonical decimal up to [`MAX_TOLL_BITS`](crate::bots::toll::MAX_BITS),
    /// or is on an allow token.
    Toll,
}

impl fmt::Display for Malformed {
    /// A short name for logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Malformed::TooLong => "too-long",
            Malformed::NotBase64 => "not-base64",
            Malformed::NotUtf8 => "not-utf8",
            Malformed::Fields => "fields",
            Malformed::TokenKind => "dec",
            Malformed::Exp => "exp",
            Malformed::Uid => "uid",
            Malformed::Kid => "kid",
            Malformed::Sig => "sig",
            Malformed::Adm => "adm",
            Malformed::Arr => "arr",
            Malformed::Toll => "toll",
        })
    }
}

impl std::error::Error for Malformed {}

/// Decodes a cookie value into a token, accepting only the canonical form.
pub fn decode(value: &str) -> Result<SignedToken, Malformed> {
    // Bounded before decoding: a long header costs no more than a short one.
    if value.len() > MAX_COOKIE_VALUE_LEN {
        return Err(Malformed::TooLong);
    }
    let bytes = STANDARD.decode(value).map_err(|_| Malformed::NotBase64)?;
    let text = String::from_utf8(bytes).map_err(|_| Malformed::NotUtf8)?;

    // `dec`, `exp`, `uid`, `kid`, then the optional fields, each at most once and
    // in this order, then `sig`.
    const FIELDS: [&str; 4] = ["dec=", "exp=", "uid=", "kid="];
    const OPTIONAL: [&str; 3] = ["adm=", "arr=", "toll="];
    let parts: Vec<&str> = text.split('&').collect();
    if !(FIELDS.len() + 1..=FIELDS.len() + 1 + OPTIONAL.len()).contains(&parts.len()) {
        return Err(Malformed::Fields);
    }
    let (fixed, rest) = parts.split_at(FIELDS.len());
    let (sig, optional) = rest.split_last().ok_or(Malformed::Fields)?;
    let sig = sig.strip_prefix("sig=").ok_or(Malformed::Fields)?;
    let values: Vec<&str> = fixed
        .iter()
        .zip(FIELDS)
        .map(|(part, name)| part.strip_prefix(name))
        .collect::<Option<_>>()
        .ok_or(Malformed::Fields)?;
    let mut extra: [Option<&str>; 3] = [None; 3];
    let mut next = 0;
    for part in optional {
        let found = OPTIONAL[next..]
            .iter()
            .position(|name| part.starts_with(name))
            .ok_or(Malformed::Fields)?;
        next += found;
        extra[next] = Some(&part[OPTIONAL[next].len()..]);
        next += 1;
    }
    let [adm, arr, toll] = extra;

    let dec = parse_dec(values[0]).ok_or(Malformed::TokenKind)?;
    // `adm` only on allow tokens, `arr` and `toll` only on wait tokens.
    let wait = dec == TokenKind::Wait;
    let adm = optional_field(adm, !wait, parse_decimal, Malformed::Adm)?;
    let arr = optional_field(arr, wait, parse_decimal, Malformed::Arr)?;
    let toll = optional_field(toll, wait, crate::bots::toll::parse_bits, Malformed::Toll)?;
    let claims = Claims {
        dec,
        exp: parse_decimal(values[1]).ok_or(Malformed::Exp)?,
        uid: valid_uid(values[2]).ok_or(Malformed::Uid)?.to_string(),
        kid: valid_kid(values[3]).ok_or(Malformed::Kid)?.to_string(),
        adm,
        arr,
        toll,
    };
    let sig = parse_sig(sig).ok_or(Malformed::Sig)?;
    // The signed text is everything before `&sig=0x…`: the fields just checked,
    // each canonical, so it is the text `string_to_sign` writes for them.
    let signed = text[..text.len() - SIG_FIELD_LEN].to_string();
    Ok(SignedToken {
        claims,
        sig,
        signed,
    })
}

/// An optional field's value: absent, or present where `allowed` and parsed by
/// `parse`; anything else is malformed as `why`.
fn optional_field<T>(
    raw: Option<&str>,
    allowed: bool,
    parse: fn(&str) -> Option<T>,
    why: Malformed,
) -> Result<Option<T>, Malformed> {
    match raw {
        None => Ok(None),
        Some(raw) if allowed => parse(raw).map(Some).ok_or(why),
        Some(_) => Err(why),
    }
}

fn parse_dec(raw: &str) -> Option<TokenKind> {
    match raw {
        "wait" => Some(TokenKind::Wait),
        "allow" => Some(TokenKind::Allow),
        _ => None,
    }
}

/// Digits only, no leading zero (so the signed text is the one we re-create).
pub(crate) fn parse_decimal(raw: &str) -> Option<u64> {
    let canonical = !raw.is_empty()
        && raw.bytes().all(|b| b.is_ascii_digit())
        && (raw == "0" || !raw.starts_with('0'));
    if canonical { raw.parse().ok() } else { None }
}

/// IPv4 or IPv6 address characters only, and `/` (an IPv6 prefix's length).
fn valid_uid(raw: &str) -> Option<&str> {
    let ok = (1..=MAX_UID_LEN).contains(&raw.len())
        && raw
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b'.' || b == b':' || b == b'/');
    ok.then_some(raw)
}

/// Whether a token can carry `kid`, so that a token signed under it reads back:
/// 1 to [`MAX_KID_LEN`] visible ASCII characters (no spaces or control
/// characters, as config-store keys are), none of them `&`, the field separator.
/// The room reads and signs under fewer: the ids a store can hold
/// ([`is_storable_kid`](crate::credentials::keys::is_storable_kid)); a token of
/// any other is read and refused as an unknown key.
pub fn is_valid_kid(kid: &str) -> bool {
    (1..=MAX_KID_LEN).contains(&kid.len()) && kid.bytes().all(|b| b.is_ascii_graphic() && b != b'&')
}

fn valid_kid(raw: &str) -> Option<&str> {
    is_valid_kid(raw).then_some(raw)
}

/// `0x` + 64 lowercase hex digits, the only form Fastly's `digest.hmac_sha256` returns.
fn parse_sig(raw: &str) -> Option<[u8; 32]> {
    parse_mac_hex(raw.strip_prefix("0x")?)
}

/// An HMAC-SHA256 written as 64 lowercase hex digits, and nothing else.
pub(crate) fn parse_mac_hex(hex_digits: &str) -> Option<[u8; 32]> {
    let lowercase = hex_digits
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let mut sig = [0u8; 32];
    if !lowercase || hex::decode_to_slice(hex_digits, &mut sig).is_err() {
        return None;
    }
    Some(sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::new("secret").unwrap()
    }

    fn claims() -> Claims {
        Claims {
            dec: TokenKind::Wait,
            exp: 1_700_000_070,
            uid: "192.0.2.10".into(),
            kid: "key1".into(),
            adm: None,
            arr: None,
            toll: None,
        }
    }

    fn raw(text: &str) -> String {
        STANDARD.encode(text)
    }

    #[test]
    fn minted_token_decodes_and_verifies() {
        let value = claims().mint(&key());
        let token = decode(&value).unwrap();
        assert_eq!(token.claims, claims());
        assert!(token.verify(&key()));
        assert!(!token.verify(&SigningKey::new("other").unwrap()));
    }

    #[test]
    fn lottery_seed_is_the_first_six_hex_digits() {
        let token = decode(&claims().mint(&key())).unwrap();
        let hex_sig = hex::encode(token.sig);
        assert_eq!(
            token.lottery_seed(),
            u32::from_str_radix(&hex_sig[..6], 16).unwrap()
        );
    }

    #[test]
    fn ipv6_uid_round_trips() {
        let mut c = claims();
        c.uid = "2001:db8::1".into();
        assert_eq!(decode(&c.mint(&key())).unwrap().claims.uid, "2001:db8::1");
    }

    #[test]
    fn rejects_each_malformation_with_its_reason() {
        let sig = format!("0x{}", "ab".repeat(32));
        let good = format!("dec=wait&exp=5&uid=1.2.3.4&kid=k&sig={sig}");
        assert!(decode(&raw(&good)).is_ok());
        let cases = [
            (
                "dec=wait&exp=5&uid=1.2.3.4&kid=k".to_string(),
                Malformed::Fields,
            ),
            (format!("{good}&x=1"), Malformed::Fields),
            (
                format!("exp=5&dec=wait&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::Fields,
            ),
            (
                format!("dec=wait&dec=wait&exp=5&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::Fields,
            ),
            (
                format!("decx=wait&exp=5&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::Fields,
            ),
            (
                format!("dec=deny&exp=5&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::TokenKind,
            ),
            (
                format!("dec=WAIT&exp=5&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::TokenKind,
            ),
            (
                format!("dec=wait&exp=-5&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::Exp,
            ),
            (
                format!("dec=wait&exp=05&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::Exp,
            ),
            (
                format!("dec=wait&exp=&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::Exp,
            ),
            (
                format!("dec=wait&exp=+5&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::Exp,
            ),
            (
                format!("dec=wait&exp=99999999999999999999&uid=1.2.3.4&kid=k&sig={sig}"),
                Malformed::Exp,
            ),
            (
                format!("dec=wait&exp=5&uid=&kid=k&sig={sig}"),
                Malformed::Uid,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4 &kid=k&sig={sig}"),
                Malformed::Uid,
            ),
            (
                format!("dec=wait&exp=5&uid={}&kid=k&sig={sig}", "1".repeat(46)),
                Malformed::Uid,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4&kid=&sig={sig}"),
                Malformed::Kid,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4&kid=a b&sig={sig}"),
                Malformed::Kid,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4&kid=k\n&sig={sig}"),
                Malformed::Kid,
            ),
            (
                format!(
                    "dec=wait&exp=5&uid=1.2.3.4&kid=k&sig={}",
                    sig.to_uppercase()
                ),
                Malformed::Sig,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4&kid=k&sig={}", &sig[..65]),
                Malformed::Sig,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4&kid=k&sig={}", &sig[2..]),
                Malformed::Sig,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4&kid=k&sig={sig}0"),
                Malformed::Sig,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4&kid=k&sig=0x{}", "g".repeat(64)),
                Malformed::Sig,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(decode(&raw(&text)), Err(want), "{text:?}");
        }
    }

    #[test]
    fn fixed_session_tokens_carry_a_signed_admission_time() {
        let c = Claims {
            dec: TokenKind::Allow,
            adm: Some(1_700_000_000),
            arr: None,
            toll: None,
            ..claims()
        };
        assert_eq!(
            c.string_to_sign(),
            "dec=allow&exp=1700000070&uid=192.0.2.10&kid=key1&adm=1700000000"
        );
        let token = decode(&c.mint(&key())).unwrap();
        assert_eq!(token.claims, c);
        assert!(token.verify(&key()));
        // Dropping the field breaks the signature; VCL tokens are unaffected.
        let vcl = Claims {
            adm: None,
            arr: None,
            toll: None,
            ..c.clone()
        };
        let stripped = format!("{}&sig=0x{}", vcl.string_to_sign(), hex::encode(token.sig));
        let stripped = decode(&raw(&stripped)).unwrap();
        assert_eq!(stripped.claims, vcl);
        assert!(!stripped.verify(&key()));
    }

    /// The signature is checked over the text as presented, which decoding only
    /// accepts when it is the text the claims sign.
    #[test]
    fn verify_macs_the_presented_text() {
        for c in [
            claims(),
            Claims {
                dec: TokenKind::Allow,
                adm: Some(0),
                arr: None,
                toll: None,
                exp: u64::MAX,
                uid: "f".repeat(MAX_UID_LEN),
                kid: "k".repeat(MAX_KID_LEN),
            },
        ] {
            let token = decode(&c.mint(&key())).unwrap();
            assert_eq!(token.signed, c.string_to_sign());
            assert_eq!(token.claims, c);
            assert!(token.verify(&key()));
            assert!(!token.verify(&SigningKey::new("other").unwrap()));
        }
    }

    /// A token under any id the room signs with reads back: each byte a stored
    /// id may hold is one a token carries, at the longest such id too.
    #[test]
    fn every_storable_key_id_is_one_a_token_carries() {
        use crate::credentials::keys::is_storable_kid;
        for b in 0..=u8::MAX {
            let kid = format!("k{}", char::from(b));
            assert!(!is_storable_kid(&kid) || is_valid_kid(&kid), "{kid:?}");
        }
        let longest = "k".repeat(MAX_KID_LEN);
        assert!(is_storable_kid(&longest) && is_valid_kid(&longest));
    }

    /// The reference: the text, `&sig=0x`, the hex HMAC, base64, each step its own
    /// string (as the VCL writes it).
    fn reference_mint(c: &Claims, secret: &str) -> String {
        use hmac::{Hmac, KeyInit};
        let text = format!("dec={}&exp={}&uid={}&kid={}", c.dec, c.exp, c.uid, c.kid)
            + &c.adm.map(|adm| format!("&adm={adm}")).unwrap_or_default();
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(text.as_bytes());
        let sig = hex::encode(mac.finalize().into_bytes());
        STANDARD.encode(format!("{text}&sig=0x{sig}"))
    }

    #[test]
    fn mint_writes_the_reference_bytes() {
        let long = Claims {
            dec: TokenKind::Allow,
            exp: u64::MAX,
            uid: "u".repeat(300),
            kid: "k".repeat(2_000),
            adm: Some(u64::MAX),
            arr: None,
            toll: None,
        };
        for c in [
            claims(),
            Claims { exp: 0, ..claims() },
            Claims {
                dec: TokenKind::Allow,
                adm: Some(9),
                arr: None,
                toll: None,
                ..claims()
            },
            long,
        ] {
            assert_eq!(c.mint(&key()), reference_mint(&c, "secret"), "{c:?}");
            assert!(reference_mint(&c, "secret").len() > 100);
        }
    }

    #[test]
    fn adm_must_be_canonical_and_on_an_allow_token() {
        let sig = format!("0x{}", "ab".repeat(32));
        for (text, want) in [
            (
                format!("dec=allow&exp=5&uid=1.2.3.4&kid=k&adm=05&sig={sig}"),
                Malformed::Adm,
            ),
            (
                format!("dec=allow&exp=5&uid=1.2.3.4&kid=k&adm=&sig={sig}"),
                Malformed::Adm,
            ),
            (
                format!("dec=wait&exp=5&uid=1.2.3.4&kid=k&adm=4&sig={sig}"),
                Malformed::Adm,
            ),
            (
                format!("dec=allow&exp=5&uid=1.2.3.4&kid=k&amd=4&sig={sig}"),
                Malformed::Fields,
            ),
            (
                format!("dec=allow&exp=5&uid=1.2.3.4&adm=4&kid=k&sig={sig}"),
                Malformed::Fields,
            ),
        ] {
            assert_eq!(decode(&raw(&text)), Err(want), "{text}");
        }
        let ok = format!("dec=allow&exp=5&uid=1.2.3.4&kid=k&adm=4&sig={sig}");
        assert_eq!(decode(&raw(&ok)).unwrap().claims.adm, Some(4));
    }

    /// Every one-byte change of two real tokens (each byte replaced by a field
    /// separator, a `=`, a letter, a digit, a space or removed) is rejected, or
    /// decodes to claims that sign exactly the text presented.
    #[test]
    fn every_mutation_that_decodes_signs_the_text_it_presents() {
        let fixed = Claims {
            dec: TokenKind::Allow,
            adm: Some(1_700_000_000),
            arr: None,
            toll: None,
            ..claims()
        };
        for text in [claims(), fixed]
            .map(|c| String::from_utf8(STANDARD.decode(c.mint(&key())).unwrap()).unwrap())
        {
            let mut variants = vec![text.clone(), String::new(), format!("{text}&")];
            for at in 0..text.len() {
                for with in ["&", "=", "x", "0", " ", "", "&&", "é"] {
                    variants.push(format!("{}{with}{}", &text[..at], &text[at + 1..]));
                }
            }
            for variant in variants {
                if let Ok(token) = decode(&raw(&variant)) {
                    assert_eq!(token.signed, token.claims.string_to_sign(), "{variant:?}");
                }
            }
        }
    }

    #[test]
    fn sig_is_exactly_64_lowercase_hex_digits_at_every_position() {
        let digits = "0123456789abcdef".repeat(4);
        let want: Vec<u8> = (0..32)
            .map(|i| [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef][i % 8])
            .collect();
        assert_eq!(parse_sig(&format!("0x{digits}")).unwrap().to_vec(), want);
        for b in 0..=255u8 {
            let hex_digit = b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
            for at in [0, 1, 31, 62, 63] {
                let mut bytes = digits.clone().into_bytes();
                bytes[at] = b;
                let Ok(text) = String::from_utf8(bytes) else {
                    continue;
                };
                assert_eq!(
                    parse_sig(&format!("0x{text}")).is_some(),
                    hex_digit,
                    "byte {b:#x} at {at}"
                );
            }
        }
    }

    #[test]
    fn rejects_non_base64_non_utf8_and_oversized_values() {
        assert_eq!(decode("not base64!"), Err(Malformed::NotBase64));
        assert_eq!(decode("ZGVj"), Err(Malformed::Fields));
        assert_eq!(decode("ZGVjPQ"), Err(Malformed::NotBase64)); // padding missing
        assert_eq!(
            decode(&STANDARD.encode([0xff, 0xfe])),
            Err(Malformed::NotUtf8)
        );
        assert_eq!(
            decode(&"A".repeat(MAX_COOKIE_VALUE_LEN + 4)),
            Err(Malformed::TooLong)
        );
        assert_eq!(decode(""), Err(Malformed::Fields));
    }
}
