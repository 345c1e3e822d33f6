//! The report's block of a run that sent audio (docs/metrics.md, "Audio and
//! transcriptions"): the audio seconds sent, per request, vLLM's `rtfx` over the run and each
//! request's real-time factor. Every number comes from the result's summary.

use super::lines::{line, num};
use crate::results::document::BenchResult;

/// The block; nothing for a run without audio.
pub(super) fn block(out: &mut String, result: &BenchResult) {
    let Some(a) = &result.summary.audio else {
        return;
    };
    out.push_str(&super::lines::rule("Audio", '-'));
    line(out, "Requests with audio:", a.requests);
    num(out, "Audio sent (s):", a.total_audio_s);
    let per_request = a.audio_s.as_ref().map(|d| d.mean);
    let fixed = |v: Option<f64>| v.map_or_else(|| "n/a".into(), |v| format!("{v:.2}"));
    line(out, "Audio per request (mean s):", fixed(per_request));
    num(out, "RTFx (audio s per s of run):", a.rtfx);
    let rtf = a.request_rtfx.as_ref();
    line(out, "Request RTFx (mean):", fixed(rtf.map(|d| d.mean)));
    line(out, "Request RTFx (median):", fixed(rtf.map(|d| d.median)));
}
