//! Hooks into the server: HTTP calls a session makes on the server's base URL at named points
//! of its runs ([`HookEvent`]), as the user asked them (`--hook EVENT=METHOD:PATH`) or as
//! `--reset-prefix-cache` (before each run: the server's cache-reset endpoint, by
//! [`ServerKind`]) and `--profile` (the server's profiler around the measured window) add them.
//! [`Hooks`] is saved in the run's config; each call's outcome is the result's
//! (`results::hooks`), made by `drive::hooks`.
//!
//! A hook's text is the user's: its syntax is checked here ([`Hook::parse`], every path on
//! the server's base URL, visible ASCII, bounded) before any call is made.

use serde::{Deserialize, Serialize};

use super::backend::{BackendKind, ServerKind};
use super::error::{ConfigError, HookWhy, ValueError};

/// The most hooks a run may make at all its events together.
pub const MAX_HOOKS: usize = 32;
/// The longest hook path, bytes.
pub const MAX_HOOK_PATH: usize = 512;

/// When a hook is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookEvent {
    /// Once, before the session's first run (of a sweep, search or `--repeat`).
    BeforeRun,
    /// Before each run: a single run, each repetition, sweep step and search probe (before
    /// its pre-flight request and warm-ups).
    BeforeStep,
    /// When the measured window starts, after the warm-ups.
    MeasureStart,
    /// When the measured window ends, after the last measured request.
    MeasureEnd,
    /// After each run, once its result is saved.
    AfterStep,
    /// Once, after the session's last run.
    AfterRun,
}

impl HookEvent {
    pub const ALL: [HookEvent; 6] = [
        HookEvent::BeforeRun,
        HookEvent::BeforeStep,
        HookEvent::MeasureStart,
        HookEvent::MeasureEnd,
        HookEvent::AfterStep,
        HookEvent::AfterRun,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::BeforeRun => "before-run",
            HookEvent::BeforeStep => "before-step",
            HookEvent::MeasureStart => "measure-start",
            HookEvent::MeasureEnd => "measure-end",
            HookEvent::AfterStep => "after-step",
            HookEvent::AfterRun => "after-run",
        }
    }
}

/// The HTTP method of a hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HookMethod {
    Get,
    Post,
    Put,
    Delete,
}

impl HookMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            HookMethod::Get => "GET",
            HookMethod::Post => "POST",
            HookMethod::Put => "PUT",
            HookMethod::Delete => "DELETE",
        }
    }
}

/// Which option asked for a hook (named in a failure's line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookBy {
    #[default]
    Hook,
    ResetPrefixCache,
    Profile,
}

impl HookBy {
    /// The flag, as the user wrote it.
    pub fn flag(self) -> &'static str {
        match self {
            HookBy::Hook => "--hook",
            HookBy::ResetPrefixCache => "--reset-prefix-cache",
            HookBy::Profile => "--profile",
        }
    }
}

/// One hook: at `event`, `method` `path` on the server's base URL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hook {
    pub event: HookEvent,
    pub method: HookMethod,
    pub path: String,
    #[serde(default)]
    pub by: HookBy,
}

impl Hook {
    /// `--hook EVENT=METHOD:PATH`, e.g. `before-step=POST:/reset_prefix_cache`.
    pub fn parse(spec: &str) -> Result<Hook, ValueError> {
        let refuse = |why| ValueError::Hook {
            // Shown in one line whatever it holds.
            spec: spec
                .chars()
                .take(80)
                .collect::<String>()
                .escape_debug()
                .to_string(),
            why,
        };
        let (event, rest) = spec.split_once('=').ok_or_else(|| refuse(HookWhy::Shape))?;
        let (method, path) = rest.split_once(':').ok_or_else(|| refuse(HookWhy::Shape))?;
        let event = (HookEvent::ALL.into_iter())
            .find(|e| e.as_str() == event.trim())
            .ok_or_else(|| refuse(HookWhy::Event(shown(event))))?;
        let method = match method.trim().to_ascii_uppercase().as_str() {
            "GET" => HookMethod::Get,
            "POST" => HookMethod::Post,
            "PUT" => HookMethod::Put,
            "DELETE" => HookMethod::Delete,
            _ => return Err(refuse(HookWhy::Method(shown(method)))),
        };
        check_path(path).map_err(refuse)?;
        Ok(Hook {
            event,
            method,
            path: path.to_string(),
            by: HookBy::Hook,
        })
    }
}

/// A short, one-line form of the user's text for a message.
fn shown(text: &str) -> String {
    text.chars()
        .take(40)
        .collect::<String>()
        .escape_debug()
        .to_string()
}

/// A hook's path: absolute on the base URL, 1 to [`MAX_HOOK_PATH`] visible ASCII characters
/// (no space, no control character such as a newline, which would split the request line).
pub fn check_path(path: &str) -> Result<(), HookWhy> {
    if !path.starts_with('/') {
        return Err(HookWhy::NotAbsolute);
    }
    if path.len() > MAX_HOOK_PATH {
        return Err(HookWhy::TooLong(MAX_HOOK_PATH));
    }
    if !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(HookWhy::NotVisible);
    }
    Ok(())
}

/// What a failing hook (no answer, or a status outside 2xx) does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookErrors {
    /// Stop the session with one line naming the call (what was measured stays saved).
    #[default]
    Stop,
    /// Record the call as failed and go on.
    Ignore,
}

/// A run's hooks, in the order they are called at each event, and what a failing one does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hooks {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<Hook>,
    #[serde(default)]
    pub errors: HookErrors,
}

/// What the user asked of hooks, before the backend decides the control endpoints' paths.
#[derive(Clone, Debug, Default)]
pub struct HookAsk {
    /// `--reset-prefix-cache[=SERVER]`: `Some(None)` for the backend's server.
    pub reset: Option<Option<ServerKind>>,
    /// `--profile`.
    pub profile: bool,
    /// `--hook`, in the order given.
    pub hooks: Vec<Hook>,
    /// `--hook-errors`.
    pub errors: HookErrors,
}

impl Hooks {
    /// Whether no hook is called (and a config saves none).
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.errors == HookErrors::Stop
    }

    /// The hooks called at `event`, in order.
    pub fn at(&self, event: HookEvent) -> impl Iterator<Item = &Hook> {
        self.calls.iter().filter(move |h| h.event == event)
    }

    /// The hooks `ask` makes for `backend`: the cache reset first before each run, the
    /// profiler's start first at the measured window's start and its stop first at its end,
    /// then the user's. Refused when the backend's server has no such endpoint and none was
    /// named.
    pub fn resolve(backend: BackendKind, ask: HookAsk) -> Result<Hooks, ConfigError> {
        let server = |flag: &str| {
            backend.info().control.ok_or_else(|| {
                let why = format!(
                    "--backend {} has no server endpoint for it: name one with --hook, e.g. --hook before-step=POST:/PATH",
                    backend.as_str()
                );
                ConfigError::invalid(flag, why)
            })
        };
        let mut calls = Vec::new();
        let control = |event, path: &str, by| Hook {
            event,
            method: HookMethod::Post,
            path: path.into(),
            by,
        };
        if let Some(kind) = ask.reset {
            let kind = match kind {
                Some(k) => k,
                None => server("--reset-prefix-cache")?,
            };
            let by = HookBy::ResetPrefixCache;
            calls.push(control(HookEvent::BeforeStep, kind.reset_path(), by));
        }
        if ask.profile {
            server("--profile")?;
            let by = HookBy::Profile;
            calls.push(control(HookEvent::MeasureStart, "/start_profile", by));
            calls.push(control(HookEvent::MeasureEnd, "/stop_profile", by));
        }
        calls.extend(ask.hooks);
        let hooks = Hooks {
            calls,
            errors: ask.errors,
        };
        hooks.check()?;
        Ok(hooks)
    }

    /// Every hook's path and their count (a saved config's too).
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.calls.len() > MAX_HOOKS {
            let why = format!("{} hooks, at most {MAX_HOOKS}", self.calls.len());
            return Err(ConfigError::invalid("--hook", why));
        }
        for h in &self.calls {
            check_path(&h.path).map_err(|why| ConfigError::invalid(h.by.flag(), why))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_is_event_method_and_path() {
        let h = Hook::parse("before-step=post:/reset_prefix_cache").unwrap();
        assert_eq!(h.event, HookEvent::BeforeStep);
        assert_eq!(h.method, HookMethod::Post);
        assert_eq!(h.path, "/reset_prefix_cache");
        let h = Hook::parse("after-run=DELETE:/slots/0?action=erase").unwrap();
        assert_eq!(
            (h.event, h.method),
            (HookEvent::AfterRun, HookMethod::Delete)
        );
    }

    #[test]
    fn bad_hooks_are_refused_in_one_line_naming_what_is_wrong() {
        let cases = [
            ("before-step=POST:/a\nb", "visible"),
            ("before-step=POST:/a b", "visible"),
            ("before-step=POST:/a\u{7f}", "visible"),
            ("someday=POST:/a", "unknown event 'someday'"),
            ("before-step=PATCH:/a", "unknown method 'PATCH'"),
            ("before-step=POST:a", "must start with /"),
            ("before-step", "EVENT=METHOD:PATH"),
            ("before-step=/a", "EVENT=METHOD:PATH"),
        ];
        for (spec, says) in cases {
            let e = Hook::parse(spec).unwrap_err().to_string();
            assert!(e.contains(says), "{spec:?}: {e}");
            assert!(!e.contains('\n'), "{spec:?}: {e}");
        }
        let long = format!("before-step=GET:/{}", "a".repeat(MAX_HOOK_PATH));
        assert!(Hook::parse(&long)
            .unwrap_err()
            .to_string()
            .contains("at most"));
    }

    #[test]
    fn the_backend_decides_the_control_endpoints_or_refuses() {
        let ask = |reset, profile| HookAsk {
            reset,
            profile,
            ..HookAsk::default()
        };
        let h = Hooks::resolve(BackendKind::Openai, ask(Some(None), true)).unwrap();
        let paths: Vec<&str> = h.calls.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            ["/reset_prefix_cache", "/start_profile", "/stop_profile"]
        );
        let h = Hooks::resolve(
            BackendKind::Openai,
            ask(Some(Some(ServerKind::Sglang)), false),
        );
        assert_eq!(h.unwrap().calls[0].path, "/flush_cache");
        let e = Hooks::resolve(BackendKind::Tgi, ask(Some(None), false)).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("--reset-prefix-cache") && e.contains("--hook"),
            "{e}"
        );
        assert!(Hooks::resolve(BackendKind::Llamacpp, ask(None, true)).is_err());
        // Named by the user, any backend's server may be reset.
        let h = Hooks::resolve(BackendKind::Tgi, ask(Some(Some(ServerKind::Vllm)), false));
        assert!(h.is_ok());
    }
}
