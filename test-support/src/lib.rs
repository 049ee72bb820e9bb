//! What the room's tests, wrctl's tests and the fuzz targets share: the token
//! minter, the room served by Viceroy, a source-bound HTTP client, the browser
//! driver, the controller and the crowd as processes, the fuzz invariants and the docs' commands
//! (for the tests that hold the docs to the code). Each test uses what it needs. The
//! fuzz crate takes only the minter and the invariants (without the `processes`
//! feature, which the tests' default brings).

#[cfg(feature = "processes")]
pub mod browser;
#[cfg(feature = "processes")]
pub mod challenge_server;
#[cfg(feature = "processes")]
pub mod controller;
pub mod decisions;
pub mod docs;
#[cfg(feature = "processes")]
pub mod faults;
pub mod fuzz_input;
#[cfg(feature = "processes")]
pub mod http;
pub mod invariants;
pub mod logins;
pub mod mint;
pub mod origins;
#[cfg(feature = "processes")]
pub mod real_crowd;
#[cfg(feature = "processes")]
pub mod viceroy_room;
