//! Who goes in, and when: the decision table, the lottery and its draw grid, the
//! POP's ceiling on new sessions, and what a waiting visitor can expect (when
//! their page comes back, the estimate of their wait).

pub mod ceiling;
pub mod decision;
pub mod estimate;
pub mod fifo_mode;
pub mod grid;
pub mod log_words;
pub mod lottery;
pub mod random_mode;
pub mod refresh;
pub mod session;
pub mod toll_due;
