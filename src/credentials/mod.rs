//! What a visitor presents, and the keys that sign it: the waiting-room token,
//! the signing keys, signed passes, the names of a room's cookies, the `Cookie`
//! header and the `Set-Cookie` attributes, and the visitor's identity (uid).

pub mod cookie;
pub mod cookie_names;
pub mod jwt_verifiers;
pub mod keys;
pub mod login;
#[cfg(not(target_arch = "wasm32"))]
pub mod login_mint;
pub mod pass;
pub mod token;
pub mod uid;
