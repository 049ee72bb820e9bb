//! A simulator of the waiting room: crowds of visitors, each device with its own
//! cookie jar, every request decided by the room's own [`waiting_room::admission::decision::decide`]
//! at a virtual clock, every refresh timed by [`waiting_room::admission::refresh::refresh_after`]
//! and every estimate shown by [`waiting_room::admission::estimate::estimate`]. Nothing of
//! the rules is written twice.
//!
//! It reports the origin's load (new sessions per second, sessions at once), the
//! lottery's fairness slot by slot, what extra devices and shared addresses change,
//! realised waits against the displayed estimate, and what a replay attacker gets.
//! The room takes a device for its address, or with `identity = login` for its
//! person ([`identity`]); [`identity_odds`] compares each kind of person's odds
//! of admission under the two.
//!
//! One event loop ([`engine`]) serves both queueing methods: the lottery, and
//! FIFO mode ([`fifo_mode`]). With a target of new sessions a minute, the room's own
//! controller ([`control::percentage_rule::Controller`], or the FIFO rule) runs in
//! the loop ([`closed_loop`]), driven through [`control::frame::Frame`] as `wrctl
//! control` drives it: it reads the room's own log lines late and its writes
//! reach the edge late.
//! Two rooms of one service run at once ([`engine::run_rooms`]), each with its
//! own crowd and controller, both controllers reading one log stream.

pub mod attacker;
pub mod bots;
pub mod cli;
pub mod closed_loop;
pub mod engine;
pub mod fifo_mode;
pub mod identity;
pub mod identity_odds;
pub mod origin_model;
pub mod planning;
pub mod plot;
pub mod population;
pub mod progress;
pub mod report;
pub mod rng;
pub mod run_record;
pub mod scenario;
pub mod stats;
pub mod summary;
pub mod toll_payment;
pub mod toll_table;
