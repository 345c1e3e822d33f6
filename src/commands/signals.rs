//! Ctrl-C and SIGTERM for the commands that run until stopped (`run`, `search`, `sim`). A
//! leaf: it imports nothing from the command files.

use crate::drive::session::Signals;

/// The exit code of a `run`, `search` or `merge` that was stopped before it was done (Ctrl-C,
/// SIGTERM, `q`; a merge of a shard that was): what was measured is saved, but it is not the
/// whole of what was asked. Not 0, so a stopped job never reads as a success (a preempted
/// Kubernetes shard); not 1 or 2, so a script can tell "stopped, saved" from "measured a
/// failure" and from "could not run"; and not 128 + a signal's number (130 is the third
/// Ctrl-C's immediate exit, which saves nothing more), so it is not read as a kill.
pub(super) const STOPPED: u8 = 3;

/// Watches for Ctrl-C and SIGTERM: the first stops new sends, the second cancels the requests
/// in flight (records flushed, result saved), the third exits at once.
pub(super) fn stop_on_signal() -> Signals {
    let signals = Signals::default();
    let tokens = signals.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        // "\r": a dashboard holds the terminal in raw mode, where a new line does not return.
        eprintln!("\rservebench: stopping: no new requests; waiting for those in flight (Ctrl-C again to abort)");
        tokens.stop.cancel();
        wait_for_signal().await;
        eprintln!("\rservebench: aborting: requests in flight cancelled; saving what was measured (Ctrl-C again to exit at once)");
        tokens.abort.cancel();
        wait_for_signal().await;
        eprintln!("\rservebench: aborted");
        let _ = ratatui::crossterm::terminal::disable_raw_mode();
        std::process::exit(130);
    });
    signals
}

pub(super) async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
