//! A browser-like crowd against a running waiting room, over real HTTP, from many
//! loopback addresses: the parts the `crowd` binary is made of, each tested on its
//! own (see `crowd --help` for the crowd itself).

pub mod addr;
pub mod plan;
pub mod refresh;
pub mod tally;
pub mod token;
