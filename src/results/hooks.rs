//! What each hook call of a run did ([`HookCall`]): its event, method and path, the server's
//! status, how long it took, a short excerpt of the answer and when it was made on the run's
//! clock. Saved in the result (`hooks`), made by `drive::hooks`, shown by the text report.

use serde::{Deserialize, Serialize};

use crate::config::hooks::{HookBy, HookEvent, HookMethod};

/// The most characters of a hook's answer kept.
pub const HOOK_EXCERPT_CHARS: usize = 200;

/// One call of a hook, as it went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookCall {
    pub event: HookEvent,
    pub method: HookMethod,
    pub path: String,
    /// The option that asked for it.
    #[serde(default)]
    pub by: HookBy,
    /// The answer's HTTP status; `None` when no answer came (`error` says why).
    #[serde(default)]
    pub status: Option<u16>,
    /// From the call's send to the end of its answer (or its failure), ms.
    pub took_ms: f64,
    /// When it was sent, seconds on the run's clock (the records' time axis: 0 is the clock's
    /// start, before the pre-flight request); negative for a call before the run (`before-run`,
    /// `before-step`).
    pub at_s: f64,
    /// The start of the answer's body, at most [`HOOK_EXCERPT_CHARS`] characters, cleared of
    /// the user's secrets (raw: escape it before showing it).
    #[serde(default)]
    pub answer: String,
    /// Why no answer came (a transport failure or the time limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl HookCall {
    /// Whether the call failed: no answer, or a status outside 2xx.
    pub fn failed(&self) -> bool {
        !matches!(self.status, Some(200..=299))
    }

    /// What went wrong, in one line (for a failed call): the option, the call and the status
    /// or the error. `url` is the call's URL as shown (redacted).
    pub fn failure(&self, url: &str) -> String {
        let what = match (&self.error, self.status) {
            (Some(e), _) => e.clone(),
            (None, Some(s)) => format!("answered HTTP {s}"),
            (None, None) => "got no answer".into(),
        };
        format!(
            "{} ({}): {} {url} {what}",
            self.by.flag(),
            self.event.as_str(),
            self.method.as_str()
        )
    }
}
