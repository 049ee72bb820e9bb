//! The browser tests, one binary, a module per page: headless Chromium driven by the
//! Node scripts beside these files (`*.mjs`). `waiting_room` also needs what the
//! black-box tests do (Viceroy and the built wasm). Without Chromium, Node.js or the
//! npm packages a test fails in one line naming them, unless
//! `WAITING_ROOM_SKIP_BROWSER=1` asks to skip it. One page:
//! `cargo nextest run --test browser dashboard_page::`.

// `support::` in every module, as in the native tests' `use test_support as support`.
extern crate test_support as support;

mod dashboard_page;
mod waiting_room;
