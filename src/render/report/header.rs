//! The head of servebench's block: which server and backend ran, the run's name and facts,
//! its shard, and the shards a merged result joins.

use super::lines::line;
use crate::results::document::BenchResult;

/// Server, backend, label, metadata, shard, merged shards and the HDR note.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    let s = &result.summary;
    let c = &result.config;
    let server = if c.simulated {
        let preset = c.sim_preset.as_deref().unwrap_or("exact");
        match c.time_scale {
            k if k != 1.0 => {
                format!("simulated ({preset}; clock {k}x real time, figures in simulated time)")
            }
            _ => format!("simulated ({preset})"),
        }
    } else if c.time_scale != 1.0 {
        let k = c.time_scale;
        format!(
            "{} (servebench sim, clock {k}x real time per its /sim/info: figures in simulated time)",
            c.base_url
        )
    } else {
        c.base_url.clone()
    };
    line(out, "Server:", server);
    line(out, "Backend:", c.backend.as_str());
    if let Some(l) = &c.tags.label {
        line(out, "Label:", l);
    }
    if !c.tags.metadata.is_empty() {
        line(out, "Metadata:", c.tags.metadata_text());
    }
    if let Some(shard) = c.load.shard {
        line(
            out,
            "Shard:",
            format!("{shard} (servebench merge joins the shards)"),
        );
    }
    if let Some(m) = &result.merged_from {
        let merged = format!("{} of {}", m.shards.len(), m.count);
        line(out, "Merged shards:", merged);
    }
    let hdr = s.hdr_figures();
    if !hdr.is_empty() {
        // docs/metrics.md, "Percentiles of very large runs".
        line(out, "Percentiles within 0.05% (HDR):", hdr.join(" "));
    }
}
