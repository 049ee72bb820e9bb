//! What the room's tests, wrctl's tests and the fuzz targets share: the token
//! minter, the room served by Viceroy, a source-bound HTTP client, the browser
//! driver, the controller as a process and the fuzz invariants. Each test uses
//! what it needs.

pub mod browser;
pub mod challenge_server;
pub mod controller;
pub mod fuzz_input;
pub mod http;
pub mod invariants;
pub mod mint;
pub mod origins;
pub mod room;
