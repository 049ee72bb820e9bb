//! The tests' own token minter, written from the token format (docs/reference/token.md) and independent
//! of the code under test (it shares only the HMAC and base64 libraries).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// `"0x" + lowercase hex(HMAC-SHA256(key, text))`.
pub fn vcl_sig(key: &str, text: &str) -> String {
    sig_with(key.as_bytes(), text)
}

fn sig_with(key: &[u8], text: &str) -> String {
    format!("0x{}", hex::encode(hmac(key, text.as_bytes())))
}

fn hmac(key: &[u8], text: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(text);
    mac.finalize().into_bytes().to_vec()
}

/// The secret a named room signs with: HMAC-SHA256(key, "waiting-room room key\0" + name).
pub fn room_secret(key: &str, room: &str) -> Vec<u8> {
    hmac(
        key.as_bytes(),
        format!("waiting-room room key\0{room}").as_bytes(),
    )
}

/// A cookie value of the named room `room`, as it mints them.
pub fn mint_in_room(key: &str, room: &str, dec: &str, exp: u64, uid: &str, kid: &str) -> String {
    let text = format!("dec={dec}&exp={exp}&uid={uid}&kid={kid}");
    let sig = sig_with(&room_secret(key, room), &text);
    STANDARD.encode(format!("{text}&sig={sig}"))
}

/// A cookie value as the VCL mints it.
pub fn mint(key: &str, dec: &str, exp: u64, uid: &str, kid: &str) -> String {
    vcl_mint(key, &format!("dec={dec}&exp={exp}&uid={uid}&kid={kid}"))
}

/// `text` signed with `key` as the VCL signs it, as a cookie value.
fn vcl_mint(key: &str, text: &str) -> String {
    STANDARD.encode(format!("{text}&sig={}", vcl_sig(key, text)))
}

/// The plain text inside a cookie value.
pub fn open(cookie_value: &str) -> String {
    String::from_utf8(STANDARD.decode(cookie_value).unwrap()).unwrap()
}

/// The plain text inside a cookie value; `None` when it is not base64 of UTF-8.
pub fn try_open(cookie_value: &str) -> Option<String> {
    String::from_utf8(STANDARD.decode(cookie_value).ok()?).ok()
}

/// The number in field `name` (`exp`, `arr`, …) of a token's plain text.
pub fn number(text: &str, name: &str) -> u64 {
    text.split('&')
        .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no number {name} in {text}"))
}

/// The pre-queue's offset (0–999 ms) of `uid` for a line opening at `opens`:
/// the first four bytes of HMAC-SHA256(key, `prequeue&uid=<uid>&opens=<opens>`),
/// big-endian, modulo 1000.
pub fn prequeue_offset(key: &str, uid: &str, opens: u64) -> u64 {
    let mac = hmac(
        key.as_bytes(),
        format!("prequeue&uid={uid}&opens={opens}").as_bytes(),
    );
    u64::from(u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]])) % 1000
}

/// Base64 of arbitrary text, for hand-made (tampered) tokens.
pub fn encode(text: &str) -> String {
    STANDARD.encode(text)
}

/// The VCL's lottery seed of a signature, `strtol(substr(sig, 0, 8), 16)`.
pub fn seed(sig: &str) -> u32 {
    u32::from_str_radix(&sig[2..8], 16).unwrap()
}

/// An allow token of a fixed session: the VCL fields plus `&adm=<first admission>`.
pub fn mint_fixed(key: &str, exp: u64, uid: &str, kid: &str, adm: u64) -> String {
    let text = format!("dec=allow&exp={exp}&uid={uid}&kid={kid}&adm={adm}");
    vcl_mint(key, &text)
}

/// A FIFO wait token: the VCL fields plus `&arr=<first arrival, Unix ms>`.
pub fn mint_fifo(key: &str, exp: u64, uid: &str, kid: &str, arr: u64) -> String {
    let text = format!("dec=wait&exp={exp}&uid={uid}&kid={kid}&arr={arr}");
    vcl_mint(key, &text)
}

/// The address draw grid's expiry for a wait token handed to `uid` at `now`
/// (docs/reference/how-it-works.md, "The draw grid"), written from the rule: the first second at or after
/// `now + d` that is `FNV-1a-64(uid) mod 2d` modulo `2d`.
pub fn address_exp(now: u64, uid: &str, d: u64) -> u64 {
    let offset = fnv1a(uid) % (2 * d);
    (now + d..now + 3 * d)
        .find(|t| t % (2 * d) == offset)
        .unwrap()
}

/// FNV-1a, 64-bit, written here from its definition.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The VCL's (global grid) expiry for a wait token handed out at `now`.
pub fn global_exp(now: u64, d: u64) -> u64 {
    now / d * d + 2 * d
}

/// A signed pass of `room` (empty: the service room), as docs/operate/rooms.md describes it.
pub fn mint_pass(key: &str, room: &str, iat: u64, exp: u64, kid: &str) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let text = format!("pass=1&room={room}&iat={iat}&exp={exp}&kid={kid}");
    let secret = if room.is_empty() {
        key.as_bytes().to_vec()
    } else {
        room_secret(key, room)
    };
    let sig = hex::encode(hmac(&secret, text.as_bytes()));
    URL_SAFE_NO_PAD.encode(format!("{text}&sig={sig}"))
}

/// A wait token issued while the room asks a bot toll: the VCL fields plus
/// `&toll=<bits owed>`; with its signature's hex (the toll's challenge).
pub fn mint_toll(key: &str, exp: u64, uid: &str, kid: &str, toll: u8) -> (String, String) {
    let text = format!("dec=wait&exp={exp}&uid={uid}&kid={kid}&toll={toll}");
    let sig = vcl_sig(key, &text);
    let value = STANDARD.encode(format!("{text}&sig={sig}"));
    (value, sig[2..].to_string())
}

/// Whether `nonce` pays `bits` of bot toll for the challenge `challenge` (a
/// signature's hex), written from the rule: SHA-256 of
/// `waiting-room-toll:<challenge>:<nonce>` starts with `bits` zero bits.
pub fn toll_pays(challenge: &str, nonce: u64, bits: u32) -> bool {
    use sha2::Digest as _;
    let digest = Sha256::digest(format!("waiting-room-toll:{challenge}:{nonce}"));
    u128::from_be_bytes(digest[..16].try_into().unwrap()).leading_zeros() >= bits
}

/// The first nonce that pays `bits` of bot toll for `challenge`.
pub fn toll_nonce(challenge: &str, bits: u32) -> u64 {
    (0u64..)
        .find(|nonce| toll_pays(challenge, *nonce, bits))
        .unwrap()
}
