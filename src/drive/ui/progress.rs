//! Live progress of a run: [`Progress`] renders the run's [`Live`] counters (`live.rs`): the
//! dashboard on a terminal (`dashboard.rs`), an indicatif bar with `--no-tui`, a plain line
//! every few seconds when stderr is not a terminal, nothing when quiet. It only reads the
//! counters, so it cannot change what is measured.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use crate::drive::ui::dashboard::{Dashboard, RunInfo};
use crate::drive::ui::live::Live;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// The live dashboard (`dashboard.rs`).
    Dashboard,
    Bar,
    Lines,
    Quiet,
}

impl ProgressMode {
    /// The dashboard when stdout and stderr are a terminal (unless `no_tui`), a bar when
    /// stderr is, lines otherwise, nothing when quiet.
    pub fn detect(quiet: bool, no_tui: bool) -> Self {
        let tty = std::io::stderr().is_terminal();
        if quiet {
            ProgressMode::Quiet
        } else if tty && !no_tui && std::io::stdout().is_terminal() {
            ProgressMode::Dashboard
        } else if tty {
            ProgressMode::Bar
        } else {
            ProgressMode::Lines
        }
    }
}

/// A running renderer; stop it with [`Progress::finish`].
pub struct Progress {
    task: Option<tokio::task::JoinHandle<()>>,
    bar: Option<indicatif::ProgressBar>,
    dashboard: Option<Dashboard>,
}

impl Progress {
    /// Starts rendering `live` for a run of `info.total` requests.
    pub fn start(live: Arc<Live>, info: RunInfo, mode: ProgressMode) -> Progress {
        if mode == ProgressMode::Dashboard {
            if let Ok(d) = Dashboard::start(live.clone(), info.clone()) {
                return Progress {
                    task: None,
                    bar: None,
                    dashboard: Some(d),
                };
            }
        }
        let (total, label) = (info.total, info.label);
        let mode = match mode {
            ProgressMode::Dashboard => ProgressMode::Bar,
            m => m,
        };
        let bar = (mode == ProgressMode::Bar).then(|| {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(label.clone());
            bar
        });
        let task = (mode != ProgressMode::Quiet).then(|| {
            let bar = bar.clone();
            tokio::spawn(async move {
                let started = tokio::time::Instant::now();
                let every = if bar.is_some() {
                    Duration::from_millis(200)
                } else {
                    Duration::from_secs(10)
                };
                loop {
                    tokio::time::sleep(every).await;
                    let line = live.line(total, started.elapsed());
                    match &bar {
                        Some(bar) => {
                            bar.set_length(live.planned_or(total));
                            bar.set_position(live.done());
                            bar.set_message(line);
                        }
                        None => eprintln!("servebench: {label} {line}"),
                    }
                }
            })
        });
        Progress {
            task,
            bar,
            dashboard: None,
        }
    }

    /// Stops the renderer and clears the bar.
    pub fn finish(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if let Some(d) = self.dashboard.take() {
            d.finish();
        }
    }
}
