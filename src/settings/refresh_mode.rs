//! `refresh_mode`: when a waiting page comes back, at the visitor's next draw or
//! every period as the VCL did. [`crate::admission::refresh`] computes the delay.

/// How waiting pages schedule the next visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshMode {
    /// At the visitor's next draw, plus their phase (the default).
    Eligible,
    /// Every `wait_period_duration` seconds, on the VCL's global grid.
    Fixed,
}
