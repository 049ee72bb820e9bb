//! The controller's decisions: from the room's log records to the
//! `allow_percentage` that holds a target of new sessions a minute.
//!
//! A pure state machine with the clock passed in, so the live controller
//! (`wrctl control`), the simulator and the tests run the very same code; reading
//! logs and writing stores are the callers' business. Both rules, the percentage
//! ([`percentage_rule`]) and the FIFO cutoff ([`fifo_rule`]), are policies
//! ([`frame::Policy`]) of one [`frame::Frame`] (the log taken in, the writes
//! scheduled, the snapshot), which the loops drive; each write is a
//! [`store_write::StoreWrite`]. The loop's words (beat, tick, trim, calendar,
//! ...) and the reasons behind each rule are in `docs/research/controller-rules.md`.
//!
//! The crate's root only names its modules: the options ([`options`]) and the
//! snapshot ([`snapshot`]) that both rules share sit in files of their own, so
//! no module imports the root back.

pub mod fifo_rule;
pub mod frame;
pub mod holders;
mod intake;
pub mod options;
pub mod origin_rule;
pub mod percentage_rule;
pub mod record;
pub mod schedule;
pub mod series;
pub mod snapshot;
pub mod store_write;
pub mod tokens;
