//! What a room may ask before a draw, against bots: the bot toll (a proof of
//! work) and the external challenge (Cloudflare Turnstile or hCaptcha).

pub mod challenge;
pub mod toll;
