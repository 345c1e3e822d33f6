//! What making a run's media cost ([`MediaGeneration`]): the images, videos and audio clips of
//! its requests and the time building them took. The workload counts them where it makes
//! them, before inputs are grouped into requests; the result document saves the figure
//! (`results::stats::media` re-exports it). It lives here, beside [`RequestSpec`], the lowest
//! layer both know.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measure::client::{Part, RequestSpec};

/// What making a run's media cost: done before the load, never in a latency. The items of
/// the warm-ups and the measured pool, whether made (random-mm, seeded clips) or read from
/// files (a jsonl's `image_files`, `audio`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MediaGeneration {
    pub images: u64,
    #[serde(default)]
    pub videos: u64,
    /// The videos' frames.
    #[serde(default)]
    pub video_frames: u64,
    #[serde(default)]
    pub audio_clips: u64,
    /// The clips' audio, seconds.
    #[serde(default)]
    pub audio_s: f64,
    /// Their bytes as sent (data URLs, base64 audio).
    pub bytes: u64,
    /// Wall time building the requests took, seconds (text and media).
    pub seconds: f64,
}

impl MediaGeneration {
    /// The media of `requests` and their bytes, built in `took`; `None` when none carries
    /// media.
    pub fn of<'a>(
        requests: impl IntoIterator<Item = &'a RequestSpec>,
        took: Duration,
    ) -> Option<MediaGeneration> {
        let mut g = MediaGeneration {
            images: 0,
            videos: 0,
            video_frames: 0,
            audio_clips: 0,
            audio_s: 0.0,
            bytes: 0,
            seconds: took.as_secs_f64(),
        };
        let mut any = false;
        for p in requests.into_iter().flat_map(|r| &r.parts) {
            any = true;
            g.bytes += p.bytes();
            match p {
                Part::Image { .. } => g.images += 1,
                Part::Video { frames, .. } => {
                    g.videos += 1;
                    g.video_frames += u64::from(*frames);
                }
                Part::Audio { duration, .. } => {
                    g.audio_clips += 1;
                    g.audio_s += duration.as_secs_f64();
                }
            }
        }
        any.then_some(g)
    }
}
