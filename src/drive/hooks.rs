//! Calling a run's hooks (`config::hooks`) on the server: the session's ([`SessionHooks`]:
//! `before-run` once, `before-step` before each run, `after-step` after each saved run,
//! `after-run` once at the end) and the measured window's (`measure-start`, `measure-end`:
//! [`at_start`], [`at_end`], called by `run.rs`). Each call is made in order, within
//! [`HOOK_TIMEOUT`], and kept as a `results::hooks::HookCall` in the result of the run it
//! belongs to (`before-run` and `before-step` in the next run's, `after-run` in the last
//! saved run's, which is saved again). A failed call (no answer, or a status outside 2xx)
//! stops the session with one line naming it, unless `--hook-errors ignore`; a call made
//! after a run's result was saved is in that result first, so what was measured stays saved.
//! `after-run` is called however the session ends once `before-run` was ([`SessionHooks::ended`]:
//! a stop, an early stop, a run's error, a later step's failed hook), so a server left
//! profiling or otherwise changed is put back.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::config::hooks::{HookErrors, HookEvent};
use crate::config::url::{join_url, redact_url};
use crate::config::RunConfig;
use crate::drive::error::RunError;
use crate::drive::plan::RunPlan;
use crate::measure::client::{Client, Secrets};
use crate::measure::clock::Clock;
use crate::results::document::BenchResult;
use crate::results::hooks::{HookCall, HOOK_EXCERPT_CHARS};

/// The longest one hook call may take (a profiler's stop writes its trace first).
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(300);

/// A call made before its run's clock started, with when it was sent.
#[derive(Clone, Debug)]
pub struct Early {
    at: Instant,
    call: HookCall,
}

/// Makes `cfg`'s hooks at `event` in order with `client`; each with when it was sent.
async fn call_at(client: &Client, cfg: &RunConfig, event: HookEvent) -> Vec<Early> {
    let mut made = Vec::new();
    for hook in cfg.hooks.at(event) {
        let at = Instant::now();
        let answer = (client.call(hook.method, &hook.path, HOOK_TIMEOUT, HOOK_EXCERPT_CHARS)).await;
        let call = HookCall {
            event,
            method: hook.method,
            path: hook.path.clone(),
            by: hook.by,
            status: answer.status,
            took_ms: at.elapsed().as_secs_f64() * 1e3,
            at_s: 0.0,
            answer: answer.excerpt,
            error: answer.error,
        };
        let failed = call.failed();
        made.push(Early { at, call });
        if failed && cfg.hooks.errors == HookErrors::Stop {
            break;
        }
    }
    made
}

/// The first failed call of `calls`, as the error that stops the session, unless `cfg` says
/// `--hook-errors ignore`.
pub fn failure<'a>(
    cfg: &RunConfig,
    mut calls: impl Iterator<Item = &'a HookCall>,
) -> Result<(), RunError> {
    if cfg.hooks.errors == HookErrors::Ignore {
        return Ok(());
    }
    match calls.find(|c| c.failed()) {
        Some(c) => {
            let url = redact_url(&join_url(&cfg.base_url, &c.path));
            Err(RunError::Hook(c.failure(&url)))
        }
        None => Ok(()),
    }
}

/// Seconds from `clock`'s start to `at` (negative before it).
fn on_clock(clock: &Clock, at: Instant) -> f64 {
    let start = clock.instant_at(0);
    if at >= start {
        (at - start).as_secs_f64()
    } else {
        -(start - at).as_secs_f64()
    }
}

/// When the measured window starts: the calls made before the run (`early`) placed on its
/// clock, then its `measure-start` hooks called. An error when one of those failed (unless
/// ignored): the run stops before its load.
pub async fn at_start(
    client: &Client,
    cfg: &RunConfig,
    early: &[Early],
    clock: &Clock,
) -> Result<Vec<HookCall>, RunError> {
    let started = call_at(client, cfg, HookEvent::MeasureStart).await;
    let calls: Vec<HookCall> = (early.iter().chain(&started))
        .map(|e| HookCall {
            at_s: on_clock(clock, e.at),
            ..e.call.clone()
        })
        .collect();
    failure(cfg, calls.iter().skip(early.len()))?;
    Ok(calls)
}

/// When the measured window ends: its `measure-end` hooks called and added to `calls`. A
/// failure is kept in them (the result is saved first; the session stops after it).
pub async fn at_end(client: &Client, cfg: &RunConfig, clock: &Clock, calls: &mut Vec<HookCall>) {
    for e in call_at(client, cfg, HookEvent::MeasureEnd).await {
        calls.push(HookCall {
            at_s: on_clock(clock, e.at),
            ..e.call
        });
    }
}

/// The session's hooks: those of the plan's config around each run.
pub struct SessionHooks<'a> {
    cfg: &'a RunConfig,
    secrets: &'a Secrets,
    /// No run has started yet (`before-run` is still to be called).
    first: Cell<bool>,
    /// The last run's saved result (`after-run`'s calls go into it).
    last: RefCell<Option<PathBuf>>,
}

impl<'a> SessionHooks<'a> {
    pub fn new(plan: &'a RunPlan) -> SessionHooks<'a> {
        SessionHooks {
            cfg: &plan.config,
            secrets: &plan.secrets,
            first: Cell::new(true),
            last: RefCell::new(None),
        }
    }

    /// The hooks of steps run after the session's own (a mix's runs alone): `before-step`
    /// and `after-step` only (`before-run` and `after-run` were the session's).
    pub fn steps_only(plan: &'a RunPlan) -> SessionHooks<'a> {
        let hooks = SessionHooks::new(plan);
        hooks.first.set(false);
        hooks
    }

    /// The session's `outcome` after its `after-run` calls, which are made whatever it is
    /// (once `before-run` was called): the session's own error first, else a failed
    /// `after-run` call's.
    pub async fn ended<T>(&self, outcome: Result<T, RunError>) -> Result<T, RunError> {
        let ended = self.end().await;
        let value = outcome?;
        ended?;
        Ok(value)
    }

    /// A client for the calls at `event`, when there is any.
    fn client(&self, event: HookEvent) -> Result<Option<Arc<Client>>, RunError> {
        if self.cfg.hooks.at(event).next().is_none() {
            return Ok(None);
        }
        Ok(Some(Client::new(self.cfg, self.secrets, None, None)?))
    }

    async fn call(&self, event: HookEvent) -> Result<Vec<Early>, RunError> {
        Ok(match self.client(event)? {
            Some(client) => call_at(&client, self.cfg, event).await,
            None => Vec::new(),
        })
    }

    /// Before a run: `before-run` (before the session's first only), then `before-step`.
    /// The calls go to the run (`RunOptions::hooks_before`); an error when one failed.
    pub async fn before(&self) -> Result<Vec<Early>, RunError> {
        let mut made = Vec::new();
        if self.first.replace(false) {
            made = self.call(HookEvent::BeforeRun).await?;
        }
        failure(self.cfg, made.iter().map(|e| &e.call))?;
        made.extend(self.call(HookEvent::BeforeStep).await?);
        failure(self.cfg, made.iter().map(|e| &e.call))?;
        Ok(made)
    }

    /// [`SessionHooks::before`] for a loop of runs that keeps its first error as its
    /// `outcome`: the calls made, or `None` after setting `outcome` to the error (the loop
    /// then breaks, and its `after-run` calls still come through [`SessionHooks::ended`]).
    pub async fn before_or_keep(&self, outcome: &mut Result<(), RunError>) -> Option<Vec<Early>> {
        match self.before().await {
            Ok(made) => Some(made),
            Err(e) => {
                *outcome = Err(e);
                None
            }
        }
    }

    /// After a run whose result was saved at `path`: its `after-step` calls added to it
    /// (saved again), then an error when any call of the run failed.
    pub async fn after(&self, result: &mut BenchResult, path: &Path) -> Result<(), RunError> {
        *self.last.borrow_mut() = Some(path.to_path_buf());
        self.add(HookEvent::AfterStep, result, path).await?;
        failure(self.cfg, result.hooks.iter())
    }

    /// After the session's last run: its `after-run` calls added to the last saved result
    /// (saved again; made all the same when no run was saved), then an error when one
    /// failed. Nothing when `before-run` was never called.
    async fn end(&self) -> Result<(), RunError> {
        if self.first.get() || self.cfg.hooks.at(HookEvent::AfterRun).next().is_none() {
            return Ok(());
        }
        let last = self.last.borrow().clone();
        let Some(path) = last else {
            let made = self.call(HookEvent::AfterRun).await?;
            return failure(self.cfg, made.iter().map(|e| &e.call));
        };
        let mut result = BenchResult::load(&path)?;
        let before = result.hooks.len();
        self.add(HookEvent::AfterRun, &mut result, &path).await?;
        failure(self.cfg, result.hooks[before..].iter())
    }

    /// `event`'s calls added to `result` (on its clock, through the wall clock), and the
    /// result saved again at `path` when there were any.
    async fn add(
        &self,
        event: HookEvent,
        result: &mut BenchResult,
        path: &Path,
    ) -> Result<(), RunError> {
        let made = self.call(event).await?;
        if made.is_empty() {
            return Ok(());
        }
        let fmt = &time::format_description::well_known::Rfc3339;
        let started = time::OffsetDateTime::parse(&result.started_at, fmt).ok();
        let now = (time::OffsetDateTime::now_utc(), Instant::now());
        for e in made {
            let at = now.0 - (now.1 - e.at);
            let at_s = started.map_or(0.0, |s| (at - s).as_seconds_f64());
            result.hooks.push(HookCall { at_s, ..e.call });
        }
        result.save(path)?;
        Ok(())
    }
}
