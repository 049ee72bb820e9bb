//! `wrctl`, the waiting room's operator tool. Every subcommand carries out the room's
//! own library code (settings, tokens, decisions, templates, the controller), never a
//! second implementation.
//!
//! The manual is `docs/operate/wrctl.md`: its reference of every command and option is
//! generated from the command line ([`cli`], rendered by [`manual`]), so `--help` and
//! the page say the same; `tools/wrctl/tests/manual.rs` fails when they drift.
//!
//! # How it runs
//!
//! A reader thread parses stdin, and with `--listen` the listener's thread (a tokio
//! runtime, see [`server`]) has the POSTed bodies parsed on tokio's blocking threads; both send batches of records over a bounded channel to one
//! control thread ([`crate::control::Control`]), which routes each record to its room's
//! controller by its `room=` field, ticks them all every `--tick` seconds of the wall
//! clock, sends their writes in one update through the one sink, paced by
//! [`budget::Pacer`], and answers the listener's requests for the rooms' state. Lines that are
//! not room lines (Viceroy's own output, …) are counted as bad lines and skipped;
//! blank lines are skipped. When stdin ends without `--listen`, the controller
//! ticks once more (writing if a write is due) and exits 0; with `--listen` it
//! keeps running. A write to the Fastly API can take up to 10 s, during which the
//! readers wait (the channel is bounded).

pub mod alerts;
pub mod budget;
pub mod cli;
pub mod clock;
pub mod config_check;
pub mod config_cmd;
pub mod config_login;
pub mod config_report;
pub mod config_set;
pub mod control;
pub mod control_cmd;
pub mod fastly_api;
pub mod ingest;
pub mod jwks_review;
pub mod keygen_cmd;
pub mod login_cmd;
pub mod login_keys;
pub mod login_mint;
pub mod manual;
pub mod notify;
pub mod pages;
pub mod pages_cmd;
pub mod pass_cmd;
pub mod report_cmd;
pub mod revoke_cmd;
pub mod rooms_cmd;
pub mod rotate_cmd;
pub mod server;
pub mod sink;
pub mod state;
pub mod store_file;
pub mod synthetic;
pub mod token_cmd;
pub mod usage;
