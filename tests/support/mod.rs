//! Shared helpers of the black-box tests. Each test file uses what it needs.
#![allow(dead_code)]

pub mod browser;
pub mod controller;
pub mod fuzz_input;
pub mod http;
pub mod invariants;
pub mod mint;
pub mod room;
