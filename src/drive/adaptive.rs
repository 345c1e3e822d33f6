//! `run --adaptive`: the SLO controller inside one run (docs/metrics.md, "The SLO
//! controller"). It moves the running load (`throttle.rs`) in windows of `--adaptive-step`
//! seconds: escalating by `--adaptive-factor` while windows pass, then, at the first failing
//! window, recovering at a lower load and bisecting between the last pass and the first fail
//! to `--adaptive-resolution`, and finally holding the highest passing load for `--hold`
//! seconds to confirm it (a failed hold steps back to the next lower passing load, at most
//! [`MAX_HOLDS`] times). Each judged window is judged by its goodput's 95% Wilson interval
//! (`results::adaptive::judge`); an undecided window is extended once at the same load and
//! then counts as a fail. The saturation stop (`results::saturated`) ends escalation.
//!
//! [`Steps`] is the pure decision (what the next window is, given the last one's verdict);
//! [`control`] runs it against the throttle, in real time.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::adaptive::{AdaptiveSpec, MAX_WINDOWS};
use crate::drive::throttle::{Seg, Throttle};
use crate::measure::clock::Clock;
use crate::results::adaptive::{at_end, early, judge, AdaptiveFigures, Phase, Verdict, Window};
use crate::results::saturated::{detect, SaturationStop, StepFigures};

/// At most this many holds: the first, then a step back after each that fails.
pub const MAX_HOLDS: u32 = 3;

/// What the controller runs next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    Window(Phase, f64),
    Done,
}

/// The controller's decisions: pure, from each judged window's verdict.
#[derive(Clone, Debug)]
pub struct Steps {
    spec: AdaptiveSpec,
    pub last_pass: Option<f64>,
    pub first_fail: Option<f64>,
    /// Every passing load, for a failed hold's step back.
    passes: Vec<f64>,
    /// The escalation windows' figures, for the saturation stop.
    escalation: Vec<StepFigures>,
    pub saturation: Option<SaturationStop>,
    pub skipped: Vec<f64>,
    pub holds: u32,
    pub sustained: Option<f64>,
    pub notes: Vec<String>,
    /// The window before was undecided and is being extended.
    extending: Option<Phase>,
}

impl Steps {
    pub fn new(spec: &AdaptiveSpec) -> Steps {
        Steps {
            spec: spec.clone(),
            last_pass: None,
            first_fail: None,
            passes: Vec::new(),
            escalation: Vec::new(),
            saturation: None,
            skipped: Vec::new(),
            holds: 0,
            sustained: None,
            notes: Vec::new(),
            extending: None,
        }
    }

    fn round(&self, v: f64) -> f64 {
        match self.spec.on.counts() {
            true => v.round().max(1.0),
            false => v,
        }
    }

    /// The first window.
    pub fn first(&self) -> Next {
        Next::Window(Phase::Escalate, self.round(self.spec.start))
    }

    /// The next window after a judged window of `phase` at `load` ended with `verdict`
    /// (`figures`: its throughput, TTFT and in flight, for the saturation stop).
    pub fn after(
        &mut self,
        phase: Phase,
        load: f64,
        verdict: Verdict,
        figures: StepFigures,
    ) -> Next {
        // An undecided window is run once more at its load; undecided twice is a fail.
        let phase = match (verdict, phase) {
            (Verdict::Undecided, Phase::Extend) => self.extending.take().unwrap_or(phase),
            (Verdict::Undecided, p) => {
                self.extending = Some(p);
                return Next::Window(Phase::Extend, load);
            }
            (_, Phase::Extend) => self.extending.take().unwrap_or(phase),
            (_, p) => p,
        };
        let passed = verdict == Verdict::Pass;
        if phase == Phase::Hold {
            return self.after_hold(load, passed);
        }
        if passed {
            self.passes.push(load);
            self.last_pass = Some(self.last_pass.map_or(load, |p| p.max(load)));
        } else {
            self.first_fail = Some(self.first_fail.map_or(load, |f| f.min(load)));
        }
        if phase == Phase::Escalate {
            self.escalation.push(figures);
            return self.escalate(load, passed);
        }
        self.bisect()
    }

    fn escalate(&mut self, load: f64, passed: bool) -> Next {
        let next = self.round((load * self.spec.factor).min(self.spec.max));
        if self.spec.stop_saturated {
            if let Some(stop) = detect(&self.escalation) {
                let mut l = next;
                while passed && l > load && self.skipped.len() < 64 {
                    self.skipped.push(l);
                    let up = self.round((l * self.spec.factor).min(self.spec.max));
                    if up <= l {
                        break;
                    }
                    l = up;
                }
                self.notes.push(format!(
                    "saturated at load {} (window {} of escalation): {}; escalation stopped",
                    fmt(stop.load),
                    stop.step + 1,
                    stop.evidence
                ));
                self.saturation = Some(stop);
                if passed {
                    return self.hold(load);
                }
            }
        }
        if !passed {
            return match self.last_pass {
                None => {
                    self.notes.push(format!(
                        "the first load ({}) failed: nothing passes",
                        fmt(load)
                    ));
                    Next::Done
                }
                Some(_) => self.bisect(),
            };
        }
        if next <= load {
            return self.hold(load);
        }
        Next::Window(Phase::Escalate, next)
    }

    fn bisect(&mut self) -> Next {
        let (Some(pass), Some(fail)) = (self.last_pass, self.first_fail) else {
            return match self.last_pass {
                Some(p) => self.hold(p),
                None => Next::Done,
            };
        };
        let narrow = match self.spec.on.counts() {
            true => fail - pass <= 1.0,
            false => (fail - pass) / fail <= self.spec.resolution,
        };
        if narrow || pass >= fail {
            return self.hold(pass);
        }
        Next::Window(Phase::Bisect, self.round((pass + fail) / 2.0))
    }

    fn hold(&mut self, load: f64) -> Next {
        self.holds += 1;
        Next::Window(Phase::Hold, load)
    }

    fn after_hold(&mut self, load: f64, passed: bool) -> Next {
        if passed {
            self.sustained = Some(load);
            return Next::Done;
        }
        self.first_fail = Some(self.first_fail.map_or(load, |f| f.min(load)));
        let below = (self.passes.iter().copied())
            .filter(|&p| p < load)
            .reduce(f64::max);
        let back = below.unwrap_or_else(|| self.round(load / self.spec.factor));
        if self.holds >= MAX_HOLDS || back >= load {
            self.notes.push(format!(
                "the hold at {} failed; {} holds failed: no load confirmed",
                fmt(load),
                self.holds
            ));
            return Next::Done;
        }
        self.notes.push(format!(
            "the hold at {} failed: stepped back to {}",
            fmt(load),
            fmt(back)
        ));
        self.last_pass = Some(back);
        self.hold(back)
    }
}

fn fmt(v: f64) -> String {
    format!("{}", (v * 1000.0).round() / 1000.0)
}

/// How often the controller looks at a window's requests while it waits for them to end.
const POLL: Duration = Duration::from_millis(20);

/// What the running controller holds.
pub struct Control {
    pub throttle: Arc<Throttle>,
    pub spec: AdaptiveSpec,
    pub clock: Clock,
    pub start_ns: u64,
    pub time_scale: f64,
    /// The run's stop (a signal, an early stop): the controller ends where it is.
    pub stop: CancellationToken,
}

impl Control {
    /// `s` seconds of the server's time, in real time.
    fn real(&self, s: f64) -> Duration {
        Duration::try_from_secs_f64(s / self.time_scale).unwrap_or(Duration::MAX)
    }

    /// Seconds of the server's time from the load's start to clock ns `ns`.
    fn at_s(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.start_ns) as f64 / 1e9 * self.time_scale
    }

    /// Sleeps `d`; false when stopped first.
    async fn sleep(&self, d: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(d) => true,
            () = self.stop.cancelled() => false,
        }
    }

    /// Opens a segment of `phase` at `load`; its index.
    fn open(&self, phase: Phase, load: f64, windows: &mut Vec<Window>) -> usize {
        self.throttle.set_load(load);
        let i = self.throttle.open(self.clock.now_ns());
        windows.push(Window {
            phase,
            load,
            start_s: self.at_s(self.clock.now_ns()),
            end_s: 0.0,
            sent: 0,
            completed: 0,
            failed: 0,
            good: 0,
            unfinished: 0,
            good_fraction: None,
            good_fraction_ci95: None,
            verdict: None,
            throughput: 0.0,
            ttft_p50_ms: None,
            in_flight: None,
            early: false,
        });
        i
    }

    /// Closes window `w` (segment `i`) at `end_s` with what its requests did.
    fn close(&self, w: &mut Window, seg: &Seg, end_s: f64) {
        w.end_s = end_s;
        w.sent = seg.sent;
        w.completed = seg.completed;
        w.failed = seg.failed;
        w.good = seg.good;
        w.unfinished = seg.sent.saturating_sub(seg.completed + seg.failed);
        w.good_fraction = (seg.sent > 0).then(|| seg.good as f64 / seg.sent as f64);
        let len = (w.end_s - w.start_s).max(1e-9);
        w.throughput = seg.completed as f64 / len;
        let mut t = seg.ttfts_ms.clone();
        t.sort_by(f64::total_cmp);
        w.ttft_p50_ms = crate::results::stats::percentile(&t, 50.0);
        w.in_flight =
            (seg.completed > 0).then(|| seg.e2el_sum_s / seg.completed as f64 * w.throughput);
    }
}

/// The controller of `cfg`'s run (`None` without `--adaptive`), its load starting at
/// `start_ns`; it stops with `halt`.
pub fn controller(
    cfg: &crate::config::RunConfig,
    clock: Clock,
    start_ns: u64,
    halt: &CancellationToken,
) -> Option<Control> {
    let spec = cfg.load.adaptive.clone()?;
    let time_scale = cfg.time_scale.max(f64::MIN_POSITIVE);
    let good = crate::drive::throttle::Goodness {
        slos: cfg.goodput.clone(),
        valid_output: cfg.goodput_valid_output,
        time_scale,
    };
    Some(Control {
        throttle: Throttle::new(spec.on, spec.start, good),
        spec,
        clock,
        start_ns,
        time_scale,
        stop: halt.child_token(),
    })
}

/// Runs `load` (the lanes' measured load) with the controller `c` beside it, if any: the
/// load ends once the controller ends the schedule, and a load that ends first (a lane
/// failed) stops the controller.
pub async fn alongside<T>(
    c: Option<Control>,
    load: impl std::future::Future<Output = T>,
) -> (T, Option<AdaptiveFigures>) {
    let Some(c) = c else {
        return (load.await, None);
    };
    let ended = c.stop.clone();
    let task = tokio::spawn(control(c));
    let out = load.await;
    ended.cancel();
    (out, task.await.ok())
}

/// How one judged window went.
struct Ran {
    /// Its requests as they stood when it was judged.
    seg: Seg,
    /// Its verdict (before an undecided extension counts as a fail), or none when stopped.
    verdict: Option<Verdict>,
    /// Its good and sent counts, pooled with the window it extends.
    pooled: (u64, u64),
}

/// Runs window `phase` at `load` (segment `i`, `windows[w]`) until its length ends or an
/// early look decides it; judges it at its end, letting its requests settle (in a segment of
/// their own) only when the ones still running could change the verdict. `before`: the
/// counts of the window an extension extends.
async fn run_window(
    c: &Control,
    steps: &Steps,
    (phase, load): (Phase, f64),
    before: (u64, u64),
    windows: &mut Vec<Window>,
) -> Ran {
    let length = match phase {
        Phase::Hold => c.spec.hold_s,
        _ => c.spec.step_s,
    };
    let i = c.open(phase, load, windows);
    let w = windows.len() - 1;
    let pool = |seg: &Seg| (before.0 + seg.good, before.1 + seg.sent);
    let ended = |seg: &Seg| before.1 + seg.completed + seg.failed;
    let began = std::time::Instant::now();
    let mut verdict = None;
    while began.elapsed() < c.real(length) {
        let left = c.real(length).saturating_sub(began.elapsed());
        if !c.sleep(POLL.min(left)).await {
            let seg = c.throttle.seg(i);
            c.close(&mut windows[w], &seg, c.at_s(c.clock.now_ns()));
            return Ran {
                pooled: pool(&seg),
                seg,
                verdict: None,
            };
        }
        let seg = c.throttle.seg(i);
        let (good, sent) = pool(&seg);
        let v = early(good, ended(&seg), sent, c.spec.target);
        if v != Verdict::Undecided {
            windows[w].early = true;
            verdict = Some(v);
            break;
        }
    }
    let end_s = c.at_s(c.clock.now_ns());
    let seg = c.throttle.seg(i);
    let (good, sent) = pool(&seg);
    if verdict.is_some() || at_end(good, ended(&seg), sent, c.spec.target) != Verdict::Undecided {
        c.close(&mut windows[w], &seg, end_s);
        let (v, ci) = judge(good, sent, c.spec.target);
        windows[w].good_fraction_ci95 = ci;
        return Ran {
            seg,
            verdict: Some(verdict.unwrap_or(v)),
            pooled: (good, sent),
        };
    }
    // Its requests end while the next segment sends at the last passing load.
    let settle_load = steps.last_pass.map_or(load, |p| p.min(load));
    let s = c.open(Phase::Settle, settle_load, windows);
    let waited = std::time::Instant::now();
    let mut stopped = false;
    loop {
        let seg = c.throttle.seg(i);
        if seg.sent <= seg.completed + seg.failed || waited.elapsed() >= c.real(c.spec.step_s) {
            break;
        }
        if !c.sleep(POLL).await {
            stopped = true;
            break;
        }
    }
    let seg = c.throttle.seg(i);
    c.close(&mut windows[w], &seg, end_s);
    let settled = c.throttle.seg(s);
    c.close(&mut windows[w + 1], &settled, c.at_s(c.clock.now_ns()));
    let (good, sent) = pool(&seg);
    let (v, ci) = judge(good, sent, c.spec.target);
    windows[w].good_fraction_ci95 = ci;
    Ran {
        seg,
        verdict: (!stopped).then_some(v),
        pooled: (good, sent),
    }
}

/// Runs the controller until its hold ends (or the run stops), then ends the schedule.
pub async fn control(c: Control) -> AdaptiveFigures {
    let mut steps = Steps::new(&c.spec);
    let mut windows: Vec<Window> = Vec::new();
    let mut next = steps.first();
    let mut stopped = false;
    // An extension is judged with the window it extends, pooled.
    let mut pooled: Option<(u64, u64)> = None;
    while let Next::Window(phase, load) = next {
        if windows.len() >= MAX_WINDOWS {
            steps
                .notes
                .push(format!("stopped after {MAX_WINDOWS} windows"));
            stopped = true;
            break;
        }
        let before = match (phase, pooled.take()) {
            (Phase::Extend, Some(p)) => p,
            _ => (0, 0),
        };
        let w = windows.len();
        let ran = run_window(&c, &steps, (phase, load), before, &mut windows).await;
        let Some(verdict) = ran.verdict else {
            stopped = true;
            steps.notes.push(format!(
                "stopped during the {} window at {}: not judged",
                phase.as_str(),
                fmt(load)
            ));
            break;
        };
        let final_verdict = match (verdict, phase) {
            (Verdict::Undecided, Phase::Extend) => Verdict::Fail,
            (v, _) => v,
        };
        windows[w].verdict = Some(final_verdict);
        if verdict == Verdict::Undecided && phase != Phase::Extend {
            pooled = Some(ran.pooled);
        }
        let seg = &ran.seg;
        let fig = StepFigures {
            load,
            throughput: windows[w].throughput,
            ttft_p50_ms: windows[w].ttft_p50_ms,
            in_flight: windows[w].in_flight,
            error_fraction: match ran.pooled.1 {
                0 => 0.0,
                n => seg.failed as f64 / n as f64,
            },
        };
        next = steps.after(phase, load, verdict, fig);
        if matches!(next, Next::Window(Phase::Bisect | Phase::Hold, _))
            && final_verdict != Verdict::Pass
            && !recover(&c, &steps, &mut windows).await
        {
            stopped = true;
            break;
        }
    }
    c.throttle.finish();
    c.open(
        Phase::End,
        windows.last().map_or(0.0, |w| w.load),
        &mut windows,
    );
    let hold =
        (windows.iter().rev()).find(|w| w.phase == Phase::Hold && w.verdict == Some(Verdict::Pass));
    AdaptiveFigures {
        spec: c.spec.clone(),
        sustained: steps.sustained,
        sustained_ci95: hold.and_then(|w| w.good_fraction_ci95),
        last_pass: steps.last_pass,
        first_fail: steps.first_fail,
        saturation: steps.saturation.clone(),
        skipped: steps.skipped.clone(),
        notes: steps.notes.clone(),
        complete: !stopped,
        controller_s: c.clock.now_ns().saturating_sub(c.start_ns) as f64 / 1e9,
        windows,
    }
}

/// After a failing window: a recovery segment at the load below the last pass (the last
/// pass over the factor), until the requests in flight fall to what the last passing
/// window held (at least 1), at most one step long. False when stopped.
async fn recover(c: &Control, steps: &Steps, windows: &mut Vec<Window>) -> bool {
    let Some(pass) = steps.last_pass else {
        return true;
    };
    let load = steps.round(pass / c.spec.factor);
    let held = (windows.iter().rev())
        .find(|w| w.verdict == Some(Verdict::Pass))
        .and_then(|w| w.in_flight)
        .unwrap_or(1.0)
        .ceil()
        .max(1.0) as u64;
    let i = c.open(Phase::Recover, load, windows);
    let w = windows.len() - 1;
    let since = std::time::Instant::now();
    let mut ok = true;
    while c.throttle.in_flight() > held && since.elapsed() < c.real(c.spec.step_s) {
        if !c.sleep(POLL).await {
            ok = false;
            break;
        }
    }
    let seg = c.throttle.seg(i);
    c.close(&mut windows[w], &seg, c.at_s(c.clock.now_ns()));
    ok
}

#[cfg(test)]
#[path = "adaptive_tests.rs"]
mod tests;
