//! What the operator set: the typed settings of the config store and how the
//! edge reads them, the rooms of a service and their scheduled events, the
//! bypass rules, and the value types the settings are written in.

pub mod config;
pub mod context;
pub mod draw_grid;
pub mod events;
pub mod identity;
pub mod language;
pub mod layout;
pub mod limits;
pub mod path_readings;
pub mod percentage;
pub mod refresh_mode;
pub mod room;
pub mod room_settings;
pub mod row;
pub mod rules;
pub mod table;
pub mod uid_ipv6_prefix;
pub mod unix_time;
