//! What the visitor is shown: the room's pages, their bodies and headers, and
//! what a waiting visitor is told (template variables, JSON for apps).

pub mod page;
pub mod view;
