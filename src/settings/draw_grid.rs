//! `draw_grid`: which grid new wait tokens expire on, each address's own or the
//! VCL's global one. [`crate::admission::grid`] computes the expiry on it.

use std::fmt;

/// Which grid new wait tokens expire on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawGrid {
    /// Each address's own grid (the default).
    Address,
    /// The VCL's slot boundaries, shared by everyone.
    Global,
}

impl fmt::Display for DrawGrid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DrawGrid::Address => "address",
            DrawGrid::Global => "global",
        })
    }
}
