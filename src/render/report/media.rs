//! The report's block of a run that sent images, videos or audio (docs/metrics.md, "Images in
//! chat"; a run without images is titled "Media in requests", without image lines): the
//! items, their media tokens per request and per image, video or clip, the bytes of a
//! request's body, its upload time apart from TTFT, and what building the media cost before
//! the load. Every number comes from the result's summary.

use super::lines::{distribution, line, rule};
use crate::results::document::BenchResult;

/// The block; nothing for a run without media.
pub(super) fn block(out: &mut String, result: &BenchResult) {
    let Some(m) = &result.summary.media else {
        return;
    };
    // A run that sent only images is "Images in chat"; one with videos or audio is titled by
    // media, and one without images (a transcription, chat's input_audio) has no image lines.
    let images = m.images > 0 || (m.audio_clips == 0 && m.videos == 0);
    if images && m.audio_clips == 0 && m.videos == 0 {
        out.push_str(&rule("Images in chat", '-'));
        line(out, "Requests with images:", m.requests);
        line(out, "Images sent:", m.images);
    } else {
        out.push_str(&rule("Media in requests", '-'));
        line(out, "Requests with media:", m.requests);
        if images {
            line(out, "Images sent:", m.images);
        }
    }
    if m.videos > 0 {
        line(out, "Videos sent:", m.videos);
    }
    if m.audio_clips > 0 {
        line(out, "Audio clips sent:", m.audio_clips);
    }
    let fixed = |v: Option<f64>| v.map_or_else(|| "unknown".into(), |v| format!("{v:.2}"));
    line(
        out,
        "Total media tokens:",
        m.total_media_tokens
            .map_or_else(|| "unknown".into(), |n| n.to_string()),
    );
    let per_request = m.media_tokens_per_request.as_ref().map(|d| d.mean);
    line(out, "Media tokens per request (mean):", fixed(per_request));
    if images {
        let per_image = m.media_tokens_per_image;
        line(out, "Media tokens per image (mean):", fixed(per_image));
    }
    if m.videos > 0 {
        let per_video = m.media_tokens_per_video;
        line(out, "Media tokens per video (mean):", fixed(per_video));
    }
    if m.audio_clips > 0 {
        let per_clip = m.media_tokens_per_clip;
        line(out, "Media tokens per audio clip (mean):", fixed(per_clip));
    }
    let kb = m.request_bytes.as_ref().map(|d| d.mean / 1024.0);
    line(out, "Request body (mean KiB):", fixed(kb));
    let ps = &result.config.metric_percentiles;
    distribution(out, "upload", "ms", m.upload_ms.as_ref(), ps);
    if let Some(g) = &m.generation {
        let mut items = Vec::new();
        if g.images > 0 {
            items.push(format!("{} images", g.images));
        }
        if g.videos > 0 {
            items.push(format!("{} videos ({} frames)", g.videos, g.video_frames));
        }
        if g.audio_clips > 0 {
            items.push(format!(
                "{} audio clips ({:.1} s)",
                g.audio_clips, g.audio_s
            ));
        }
        let mib = g.bytes as f64 / (1024.0 * 1024.0);
        let built = format!("{}, {mib:.1} MiB in {:.2} s", items.join(", "), g.seconds);
        line(out, "Media built before the load:", built);
    }
}
