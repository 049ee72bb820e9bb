//! The controller's decisions: from the room's log records to the
//! `allow_percentage` that holds a target of new sessions a minute.
//!
//! A pure state machine with the clock passed in, so the live controller
//! (`wrctl control`), the simulator and the tests run the very same code; reading
//! logs and writing stores are the callers' business. Both rules, the percentage
//! ([`percentage`]) and the FIFO cutoff ([`fifo`]), are policies of one [`frame::Frame`] ([`frame`]: the log
//! taken in, the writes scheduled, the snapshot), which the loops drive through
//! [`rule::Rule`] ([`rule`]).
//!
//! The crate's root only names its modules: the options ([`options`]) and the
//! snapshot ([`snapshot`]) that both rules share sit in files of their own, so
//! no module imports the root back.

pub mod crowd;
pub mod fifo;
pub mod frame;
mod intake;
pub mod options;
pub mod origin;
pub mod percentage;
pub mod record;
pub mod rule;
pub mod schedule;
pub mod series;
pub mod snapshot;
pub mod tokens;
