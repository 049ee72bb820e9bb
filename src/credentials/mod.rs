//! What a visitor presents, and the keys that sign it: the waiting-room token,
//! the signing keys, signed passes, the names of a room's cookies, the `Cookie`
//! header and the `Set-Cookie` attributes, and the visitor's identity (uid).

pub mod cookie;
pub mod cookie_names;
pub mod keys;
pub mod pass;
pub mod token;
pub mod uid;
