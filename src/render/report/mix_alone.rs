//! A mix's class alone against mixed (`--mix-alone`; docs/metrics.md, "A class alone"): the
//! lines under each class of the report's "Workload mix" block, its latency mixed, alone and
//! their ratio, the interference. Nothing when the class was not run alone.

use super::lines::line;
use crate::results::stats::mix::ClassFigures;

/// Class `c`'s lines alone, when it has them.
pub(super) fn lines(out: &mut String, c: &ClassFigures) {
    let (Some(alone), Some(i)) = (&c.alone, &c.interference) else {
        return;
    };
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let three = |a: Option<f64>, b: Option<f64>, c: Option<f64>| {
        format!("{} / {} / {}", ms(a), ms(b), ms(c))
    };
    let planned = alone.planned.map_or("-".to_string(), |p| p.to_string());
    let state = if alone.complete { "" } else { " (incomplete)" };
    line(
        out,
        "  Alone: completed / failed / planned:",
        format!("{} / {} / {planned}{state}", alone.completed, alone.failed),
    );
    let (m, a) = (c.latency(), alone.latency);
    let ttft_mixed = three(m.mean_ttft_ms, m.p50_ttft_ms, m.p99_ttft_ms);
    line(out, "  Mean / P50 / P99 TTFT mixed (ms):", ttft_mixed);
    let ttft_alone = three(a.mean_ttft_ms, a.p50_ttft_ms, a.p99_ttft_ms);
    line(out, "  Mean / P50 / P99 TTFT alone (ms):", ttft_alone);
    let ttft = three(i.mean_ttft, i.p50_ttft, i.p99_ttft);
    line(out, "  TTFT interference (mean / P50 / P99):", ttft);
    let e2el_mixed = three(m.mean_e2el_ms, m.p50_e2el_ms, m.p99_e2el_ms);
    line(out, "  Mean / P50 / P99 E2EL mixed (ms):", e2el_mixed);
    let e2el_alone = three(a.mean_e2el_ms, a.p50_e2el_ms, a.p99_e2el_ms);
    line(out, "  Mean / P50 / P99 E2EL alone (ms):", e2el_alone);
    let e2el = three(i.mean_e2el, i.p50_e2el, i.p99_e2el);
    line(out, "  E2EL interference (mean / P50 / P99):", e2el);
    line(out, "  Alone result:", alone.result.display());
}
