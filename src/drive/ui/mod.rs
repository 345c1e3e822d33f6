//! What a run shows on the terminal while it lasts, kept apart from what drives it: the
//! counters a run shares with its displays (`live.rs`: lock-free, written by the driver and
//! the record writers, only read here), the renderer that picks a display (`progress.rs`:
//! the dashboard, a bar, a plain line every few seconds, or nothing) and the dashboard itself
//! (`dashboard.rs`, ratatui on stderr).
//!
//! Nothing here changes what is measured: the displays only read [`live::Live`]. The driver
//! (`drive::load`, `drive::talk`, `drive::lanes`, `drive::records`) imports only `live.rs`
//! from here. A new display is a [`progress::ProgressMode`] and its arm in
//! [`progress::Progress::start`].

pub mod dashboard;
pub mod live;
pub mod progress;
