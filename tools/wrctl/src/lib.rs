//! `wrctl`, the waiting room's operator tool. Every subcommand carries out the room's
//! own library code (settings, tokens, decisions, templates, the controller), never a
//! second implementation:
//!
//! | subcommand | what it does |
//! | --- | --- |
//! | `wrctl control` | the rooms' controller: reads their log lines, writes each room's `allow_percentage` (or `fifo_cutoff` and `fifo_rate`) and `controller_heartbeat` to hold its target of new sessions a minute, every room's writes of a tick in one update within the Fastly API's budget ([`control::Controller`], [`control::record::Record`], [`budget`]) |
//! | `wrctl keygen` | a strong random signing key, and the `fastly` commands that store it |
//! | `wrctl token inspect` / `mint` | a cookie's fields, its signature, and what the room decides for it ([`waiting_room::admission::decision::decide`]); a token for tests and support |
//! | `wrctl rotate` / `revoke` | the key-rotation runbook on JSON stores or through the Fastly API; the emergency removal of a key |
//! | `wrctl pages check` / `encode` / `preview` | a page's size, external loads and template variables; its base64 value; a preview with sample figures ([`waiting_room::pages::view::Status::render`]) |
//! | `wrctl config check` | the effective settings, every fallback as the room logs it, and surprising combinations |
//!
//! # `wrctl control`
//!
//! ```text
//! viceroy serve … | wrctl control --target-per-minute 600 --config-file config.json
//! fastly log-tail … | wrctl control --target-per-minute 3000 --fastly-store-id STORE_ID
//! wrctl control --target-per-minute 3000 --fastly-store-id STORE_ID --listen 0.0.0.0:8080 --service-id SERVICE
//! wrctl control --target-per-minute 600 --service-room --room drops:target=300,queueing=fifo \
//!   --room vip:target=100 --fastly-store-id STORE_ID --listen 0.0.0.0:8080
//! ```
//!
//! Options (see `wrctl control --help` for each one's example):
//!
//! | option | default | meaning |
//! | --- | --- | --- |
//! | `--target-per-minute N` | required (unless every `--room` sets `target=`) | new sessions a minute to hold |
//! | `--queueing MODE` | `random` | `random`: write `allow_percentage`; `fifo`: write `fifo_cutoff` and `fifo_rate` ([`control::fifo`]) |
//! | `--fifo-hold SECONDS` | 300 | the room's `fifo_hold` (FIFO mode) |
//! | `--max-active N` | none | at most this many live sessions |
//! | `--min P` | `0.0001` | lowest percentage written |
//! | `--max P` | `100` | highest percentage written |
//! | `--tick SECONDS` | 10 | seconds between ticks; at most one update a tick (with the Fastly API, at least the budget's spacing) |
//! | `--heartbeat-every SECONDS` | 30 | heartbeat written at least this often; keep it well under the room's `controller_timeout` (default 120) |
//! | `--log-silence SECONDS` | 300 | stop writing, heartbeat included, after this long without a log line (0: never) |
//! | `--wait-period SECONDS` | 30 | the room's `wait_period_duration` |
//! | `--redeem-window SECONDS` | one wait period | the room's `redeem_window` |
//! | `--start P` | none | percentage written at the first tick |
//! | `--config-file PATH` | | write to a Viceroy JSON config-store file (atomic replace, other keys kept) |
//! | `--fastly-store-id ID` | | write to a Fastly config store; token from `FASTLY_API_TOKEN` only |
//! | `--fastly-api-url URL` | `https://api.fastly.com` | the Fastly API's address |
//! | `--api-budget N` | 500 | Fastly API updates an hour at most (half the API's documented 1,000 per user): one each 3600 / N s, rounded up ([`budget`]) |
//! | `--room NAME[:KEY=VALUE,...]` | none (the service room) | a named room to hold, with its own settings (repeatable: every room in one process) |
//! | `--service-room` | | with `--room`, hold the service room too |
//! | `--event-target NAME=N` | none | during event NAME, hold N (repeatable) |
//! | `--room-dashboard NAME=URL` | none | another controller's dashboard, for the room picker |
//! | `--dry-run` | | compute and print, write nothing |
//! | `--listen ADDR` | none | serve HTTP (see [`server`]) |
//! | `--service-id ID` | none (`*`) | service IDs the logging challenge names (repeatable) |
//! | `--max-body-bytes BYTES` | 104857600 | largest POST body (413 above) |
//! | `--http-timeout SECONDS` | 30 | longest an HTTP client may take to send its request head, or the next piece of a body |
//! | `--quiet` | | no line per write |
//!
//! Exactly one of `--config-file`, `--fastly-store-id` and `--dry-run`. With
//! `--queueing fifo`, `--start`, `--redeem-window`, `--min` and `--max` (the
//! percentage's) are refused. Bad usage
//! exits 2 with a message naming the flag; a failure to start (an unreadable
//! config file, an address that cannot be bound) exits 1.
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

pub mod budget;
pub mod cli;
pub mod clock;
pub mod config_check;
pub mod control;
pub mod fastly_api;
pub mod ingest;
pub mod keys;
pub mod pages;
pub mod pages_cmd;
pub mod rooms_cmd;
pub mod rotate;
pub mod server;
pub mod sink;
pub mod state;
pub mod synthetic;
pub mod token_cmd;
