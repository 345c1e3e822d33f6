//! The live dashboard: a few lines at the bottom of the terminal, redrawn four
//! times a second while a run (or a sweep's step) is measured, from the same [`Live`]
//! counters the progress line reads, so it cannot change what is measured.
//!
//! It shows requests sent, done and failed by kind, the request and output-token rates over
//! the last 5 seconds and over the run, TTFT and ITL p50/p99 and the schedule lag over the
//! recent requests, the in-flight count against the concurrency cap, the client's own
//! event-loop lag (the validity monitor's first test, live), and the sweep step. `q` or
//! Ctrl-C stops as Ctrl-C does outside it (the terminal is in raw mode, so the dashboard
//! raises the signal itself): no new requests, in-flight ones finish, everything measured is
//! saved; again cancels those in flight; a third time exits.
//!
//! [`render`] draws a [`Frame`] of figures and is tested with ratatui's test backend;
//! `tests/suite/dashboard.rs` runs the binary in tmux.

use std::collections::VecDeque;
use std::io::Stderr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::drive::ui::live::{Live, RecentFigures};
use crate::results::validity::{MAX_LOOP_LAG_P99_MS, MAX_SCHEDULE_LAG_P99_MS};

/// How often it redraws.
const TICK: Duration = Duration::from_millis(250);
/// The window of the "last seconds" rates.
const RATE_WINDOW: Duration = Duration::from_secs(5);
/// Lines it takes at the bottom of the terminal (border included).
const HEIGHT: u16 = 7;

/// What the dashboard knows of the run besides its counters.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    /// "num_prompts=64", or "run".
    pub label: String,
    /// Requests the run was built for (shown until the load says what it planned).
    pub total: u64,
    /// `--max-concurrency`, when set.
    pub cap: Option<u64>,
    /// `--stages`: each stage's rate and when it ends, real seconds from the schedule's start.
    pub stages: Vec<(f64, f64)>,
    /// The simulator's `--time-scale` (1 for real servers): figures are shown in the server's
    /// time, as the report shows them.
    pub time_scale: f64,
    /// A finite rate and no concurrency cap: send times are promised, so the schedule lag
    /// counts toward validity (as in `results::validity`).
    pub open_loop: bool,
}

impl RunInfo {
    /// "stage k of n (R req/s)" at `s` real seconds into the schedule, for a staged run.
    fn stage_at(&self, s: f64) -> Option<String> {
        let k = self.stages.iter().position(|&(_, end)| s < end)?;
        let (rate, _) = self.stages[k];
        Some(format!(
            "stage {} of {} ({rate} req/s)",
            k + 1,
            self.stages.len()
        ))
    }
}

/// One frame's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frame {
    pub label: String,
    pub elapsed_s: f64,
    pub total: u64,
    pub sent: u64,
    pub done: u64,
    pub failed: u64,
    pub cap: Option<u64>,
    /// (req/s, output tok/s) over the last seconds and over the run.
    pub recent_rates: (f64, f64),
    pub run_rates: (f64, f64),
    pub recent: RecentFigures,
    /// p99 of the dashboard's own tick lateness, ms: the client's event-loop lag (real time).
    pub loop_lag_p99_ms: Option<f64>,
    /// The simulator's `--time-scale` the other figures were scaled by (1: none).
    pub time_scale: f64,
    pub open_loop: bool,
}

fn pair(v: Option<(f64, f64)>) -> String {
    v.map_or_else(|| "-".into(), |(a, b)| format!("{a:.1} / {b:.1}"))
}

/// The dashboard's lines for `f`.
pub fn lines(f: &Frame) -> Vec<Line<'static>> {
    let failures: Vec<String> = (f.recent.failures.iter())
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let failed = match failures.is_empty() {
        true => f.failed.to_string(),
        false => format!("{} ({})", f.failed, failures.join(", ")),
    };
    let in_flight = f.sent.saturating_sub(f.done);
    let cap = f
        .cap
        .map_or_else(|| "no cap".into(), |c| format!("cap {c}"));
    // The validity rule's thresholds are on the client's (real) clock.
    let lag = f
        .recent
        .schedule_lag_ms
        .map(|(_, p99)| p99 / f.time_scale.max(f64::MIN_POSITIVE));
    let client = match (f.loop_lag_p99_ms, lag) {
        (Some(l), _) if l > MAX_LOOP_LAG_P99_MS => {
            format!("client-bound? event-loop lag p99 {l:.1} ms")
        }
        (_, Some(s)) if s > MAX_SCHEDULE_LAG_P99_MS && f.open_loop => {
            format!("client-bound? schedule lag p99 {s:.1} ms")
        }
        (l, _) => format!(
            "valid so far (event-loop lag p99 {})",
            l.map_or_else(|| "-".into(), |l| format!("{l:.1} ms"))
        ),
    };
    vec![
        Line::from(format!(
            "requests   sent {} of {}   done {}   failed {failed}   in flight {in_flight} ({cap})",
            f.sent, f.total, f.done
        )),
        Line::from(format!(
            "rate       last 5 s: {:.1} req/s, {:.0} tok/s    whole run: {:.1} req/s, {:.0} tok/s",
            f.recent_rates.0, f.recent_rates.1, f.run_rates.0, f.run_rates.1
        )),
        Line::from(format!(
            "TTFT ms    p50 / p99 {}      ITL ms  p50 / p99 {}   (recent requests)",
            pair(f.recent.ttft_ms),
            pair(f.recent.itl_ms)
        )),
        Line::from(format!(
            "schedule   lag p50 / p99 {} ms    validity: {client}",
            pair(f.recent.schedule_lag_ms)
        )),
        Line::from(
            "q or Ctrl-C: stop sending and keep what was measured (again: cancel in flight)",
        ),
    ]
}

/// Draws `f` into `area` of `frame`.
pub fn render(frame: &mut ratatui::Frame, area: Rect, f: &Frame) {
    let title = format!(" servebench · {} · {:.1} s ", f.label, f.elapsed_s);
    let block = Block::bordered().title(title);
    frame.render_widget(Paragraph::new(lines(f)).block(block), area);
}

/// The running dashboard; stop it with [`Dashboard::finish`].
pub struct Dashboard {
    task: tokio::task::JoinHandle<()>,
    term: Arc<Mutex<Terminal<CrosstermBackend<Stderr>>>>,
}

impl Dashboard {
    /// Takes the bottom lines of the terminal (stderr) and redraws them until `finish`.
    /// `Err`: the terminal cannot be driven (the caller falls back to the progress bar).
    pub fn start(live: Arc<Live>, info: RunInfo) -> std::io::Result<Dashboard> {
        let options = TerminalOptions {
            viewport: Viewport::Inline(HEIGHT),
        };
        let term = Terminal::with_options(CrosstermBackend::new(std::io::stderr()), options)?;
        terminal::enable_raw_mode()?;
        let term = Arc::new(Mutex::new(term));
        let drawn = term.clone();
        let task = tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let mut history: VecDeque<(tokio::time::Instant, u64, u64)> = VecDeque::new();
            let mut lateness: VecDeque<f64> = VecDeque::new();
            let mut next = started + TICK;
            loop {
                tokio::time::sleep_until(next).await;
                let now = tokio::time::Instant::now();
                if lateness.len() == 240 {
                    lateness.pop_front();
                }
                lateness.push_back(now.saturating_duration_since(next).as_secs_f64() * 1e3);
                next = now + TICK;
                keys();
                let frame = snapshot(&live, &info, started, &mut history, &lateness);
                if let Ok(mut t) = drawn.lock() {
                    let _ = draw_on(&mut t, &frame);
                }
            }
        });
        Ok(Dashboard { task, term })
    }

    /// Stops redrawing and gives the lines and the terminal back.
    pub fn finish(self) {
        self.task.abort();
        if let Ok(mut t) = self.term.lock() {
            let _ = t.clear();
            let _ = t.show_cursor();
        }
        let _ = terminal::disable_raw_mode();
    }
}

/// `q` or Ctrl-C: the same SIGINT a Ctrl-C outside raw mode sends (the run's own handler
/// stops, cancels, exits).
fn keys() {
    while event::poll(Duration::ZERO).unwrap_or(false) {
        let Ok(Event::Key(k)) = event::read() else {
            continue;
        };
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        if k.kind == KeyEventKind::Press && (k.code == KeyCode::Char('q') || ctrl_c) {
            // SAFETY: raise only sends a signal to this process.
            unsafe {
                libc::raise(libc::SIGINT);
            }
        }
    }
}

/// The figures now; `history` keeps (time, done, output tokens) for the recent rates.
fn snapshot(
    live: &Live,
    info: &RunInfo,
    started: tokio::time::Instant,
    history: &mut VecDeque<(tokio::time::Instant, u64, u64)>,
    lateness: &VecDeque<f64>,
) -> Frame {
    let now = tokio::time::Instant::now();
    let (done, tokens) = (live.done(), live.output_tokens());
    history.push_back((now, done, tokens));
    while history
        .front()
        .is_some_and(|(t, _, _)| now.duration_since(*t) > RATE_WINDOW)
    {
        history.pop_front();
    }
    let rates = |from: (tokio::time::Instant, u64, u64)| {
        let s = now.duration_since(from.0).as_secs_f64();
        match s > 0.0 {
            true => ((done - from.1) as f64 / s, (tokens - from.2) as f64 / s),
            false => (0.0, 0.0),
        }
    };
    let mut lags: Vec<f64> = lateness.iter().copied().collect();
    lags.sort_unstable_by(f64::total_cmp);
    // In the server's time, as the report: latencies × K, rates ÷ K.
    let k = if info.time_scale > 0.0 {
        info.time_scale
    } else {
        1.0
    };
    let per_k = |(a, b): (f64, f64)| (a / k, b / k);
    let times_k = |v: Option<(f64, f64)>| v.map(|(a, b)| (a * k, b * k));
    let mut recent = live.recent();
    recent.ttft_ms = times_k(recent.ttft_ms);
    recent.itl_ms = times_k(recent.itl_ms);
    recent.schedule_lag_ms = times_k(recent.schedule_lag_ms);
    let stage = (live.measuring_since.get()).and_then(|t| info.stage_at(t.elapsed().as_secs_f64()));
    Frame {
        label: stage.map_or_else(|| info.label.clone(), |s| format!("{} · {s}", info.label)),
        elapsed_s: now.duration_since(started).as_secs_f64(),
        total: live.planned_or(info.total),
        sent: live.sent(),
        done,
        failed: live.failed(),
        cap: info.cap,
        recent_rates: per_k(history.front().map_or((0.0, 0.0), |&h| rates(h))),
        // The whole run's rates count from the measured load's start (after the warm-ups).
        run_rates: per_k(rates((
            (live.measuring_since.get()).map_or(started, |&t| t.into()),
            0,
            0,
        ))),
        recent,
        loop_lag_p99_ms: crate::results::stats::percentile(&lags, 99.0),
        time_scale: k,
        open_loop: info.open_loop,
    }
}

/// Draws `f` on any backend (the tests' `TestBackend`).
pub fn draw_on<B: Backend>(term: &mut Terminal<B>, f: &Frame) -> std::io::Result<()> {
    term.draw(|fr| render(fr, fr.area(), f)).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;

    fn text(term: &Terminal<TestBackend>) -> String {
        let buf = term.backend().buffer();
        let w = buf.area.width as usize;
        let cells: Vec<&str> = buf.content.iter().map(|c| c.symbol()).collect();
        cells
            .chunks(w)
            .map(|r| r.concat())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_staged_run_names_its_stage() {
        let info = RunInfo {
            stages: vec![(5.0, 1.0), (20.0, 1.5)],
            ..RunInfo::default()
        };
        assert_eq!(info.stage_at(0.2).unwrap(), "stage 1 of 2 (5 req/s)");
        assert_eq!(info.stage_at(1.2).unwrap(), "stage 2 of 2 (20 req/s)");
        assert_eq!(info.stage_at(1.6), None);
    }

    #[test]
    fn every_figure_is_drawn() {
        let mut term = Terminal::new(TestBackend::new(110, HEIGHT)).unwrap();
        let f = Frame {
            label: "num_prompts=64".into(),
            elapsed_s: 12.5,
            total: 64,
            sent: 60,
            done: 40,
            failed: 2,
            cap: Some(32),
            recent_rates: (3.25, 410.0),
            run_rates: (3.2, 400.0),
            recent: RecentFigures {
                ttft_ms: Some((51.0, 88.5)),
                itl_ms: Some((10.0, 14.25)),
                schedule_lag_ms: Some((0.1, 0.4)),
                failures: vec![("timeout", 1), ("http_5xx", 1)],
            },
            loop_lag_p99_ms: Some(0.3),
            time_scale: 1.0,
            open_loop: true,
        };
        draw_on(&mut term, &f).unwrap();
        let t = text(&term);
        for want in [
            "servebench · num_prompts=64 · 12.5 s",
            "sent 60 of 64",
            "done 40",
            "failed 2 (timeout 1, http_5xx 1)",
            "in flight 20 (cap 32)",
            "last 5 s: 3.2 req/s, 410 tok/s",
            "whole run: 3.2 req/s, 400 tok/s",
            "p50 / p99 51.0 / 88.5",
            "p50 / p99 10.0 / 14.2",
            "valid so far",
            "q or Ctrl-C",
        ] {
            assert!(t.contains(want), "{want:?} not in\n{t}");
        }
        // A lagging event loop is flagged.
        let lagging = Frame {
            loop_lag_p99_ms: Some(12.0),
            ..f
        };
        draw_on(&mut term, &lagging).unwrap();
        assert!(text(&term).contains("client-bound? event-loop lag p99 12.0 ms"));
    }
}
