//! Images, videos and audio in requests (docs/metrics.md, "Images in chat"), over
//! the successful requests that carried media: the items sent, the media tokens (the server's
//! prompt tokens minus the text's exact count, per request, and per image, video or clip over
//! the requests of that one kind), the bytes of each request's body, and its upload time
//! (first byte written to last byte written), which TTFT includes and this shows apart. The
//! run adds what building the media cost ([`MediaGeneration`]: not measured from records).

use serde::{Deserialize, Serialize};

use super::distribution::{Distribution, NS_PER_MS};
use super::samples::SampleSet;
pub use crate::measure::media_made::MediaGeneration;
use crate::measure::record::{RequestRecord, TokenSource};

/// The media figures of a run; absent from runs that sent none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MediaSummary {
    /// Successful requests that carried media.
    pub requests: u64,
    /// Images they carried.
    pub images: u64,
    /// Σ media tokens over the requests whose count is known (the server reported its prompt
    /// tokens, and they are at least the text's count); `None`: none is known.
    pub total_media_tokens: Option<u64>,
    /// Media tokens per request, over those requests.
    pub media_tokens_per_request: Option<Distribution>,
    /// Σ media tokens / Σ images, over those requests that carried only images.
    pub media_tokens_per_image: Option<f64>,
    /// Audio clips they carried (`input_audio` parts).
    #[serde(default)]
    pub audio_clips: u64,
    /// Σ media tokens / Σ clips, over the requests of known count that carried only audio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_tokens_per_clip: Option<f64>,
    /// Videos they carried (`video_url` parts).
    #[serde(default)]
    pub videos: u64,
    /// Σ media tokens / Σ videos, over the requests of known count that carried only videos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_tokens_per_video: Option<f64>,
    /// Bytes of each request's body as sent.
    pub request_bytes: Option<Distribution>,
    /// Upload time, ms: the request's first byte written to its last (lean transport), or its
    /// body's first piece taken to its last (HTTPS; `measure::client::upload`).
    pub upload_ms: Option<Distribution>,
    /// What building the run's images cost, before the load started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<MediaGeneration>,
}

impl MediaSummary {
    /// The figures a result's flat keys carry (vLLM's result has none of them), by their
    /// `RunFigure` names; a figure that is unknown is left out.
    pub fn keys(&self) -> Vec<(String, serde_json::Value)> {
        use crate::config::figure::RunFigure as F;
        use serde_json::json;
        let upload = self.upload_ms.as_ref();
        let mean = |d: Option<&Distribution>| d.map(|d| json!(d.mean));
        let figures = [
            (F::TotalImages, Some(json!(self.images))),
            (
                F::TotalVideos,
                (self.videos > 0).then(|| json!(self.videos)),
            ),
            (
                F::MeanMediaTokensPerRequest,
                mean(self.media_tokens_per_request.as_ref()),
            ),
            (
                F::MediaTokensPerImage,
                self.media_tokens_per_image.map(|v| json!(v)),
            ),
            (
                F::MediaTokensPerVideo,
                self.media_tokens_per_video.map(|v| json!(v)),
            ),
            (F::MeanRequestBytes, mean(self.request_bytes.as_ref())),
            (F::MeanUploadMs, mean(upload)),
            (
                F::P99UploadMs,
                upload.and_then(|d| d.at(99.0)).map(|v| json!(v)),
            ),
        ];
        let named = |(f, v): (F, Option<serde_json::Value>)| Some((f.name().to_string(), v?));
        figures.into_iter().filter_map(named).collect()
    }
}

/// Running sums over the successful requests that carried media.
#[derive(Clone, Debug)]
pub(super) struct MediaSums {
    requests: u64,
    images: u64,
    /// Requests whose media tokens are known, the images in them, Σ their media tokens.
    known: u64,
    known_images: u64,
    tokens: u128,
    /// Clips and videos, and the images', the clips' and the videos' own (requests of one
    /// kind) known sums.
    clips: u64,
    videos: u64,
    image_tokens: u128,
    known_clips: u64,
    clip_tokens: u128,
    known_videos: u64,
    video_tokens: u128,
    per_request: SampleSet,
    bytes: SampleSet,
    upload: SampleSet,
}

impl MediaSums {
    pub(super) fn new(set: impl Fn() -> SampleSet) -> MediaSums {
        MediaSums {
            requests: 0,
            images: 0,
            known: 0,
            known_images: 0,
            tokens: 0,
            clips: 0,
            videos: 0,
            image_tokens: 0,
            known_clips: 0,
            clip_tokens: 0,
            known_videos: 0,
            video_tokens: 0,
            per_request: set(),
            bytes: set(),
            upload: set(),
        }
    }

    /// Adds a successful request; `k` is the simulated server's clock speed-up.
    pub(super) fn add(&mut self, r: &RequestRecord, k: f64) {
        let Some(bytes) = r.request_bytes else {
            return;
        };
        let images = u64::from(r.images.unwrap_or(0));
        let clips = u64::from(r.audio_clips.unwrap_or(0));
        let videos = u64::from(r.videos.unwrap_or(0));
        self.requests += 1;
        self.images += images;
        self.clips += clips;
        self.videos += videos;
        self.bytes.add(bytes as f64);
        if let Some(end) = r.upload_end_ns {
            let start = r.upload_start_ns.unwrap_or(r.sent_ns);
            self.upload
                .add(end.saturating_sub(start) as f64 * k / NS_PER_MS);
        }
        if let Some(media) = media_tokens(r) {
            self.known += 1;
            self.tokens += u128::from(media);
            match (images, videos, clips) {
                (1.., 0, 0) => {
                    self.known_images += images;
                    self.image_tokens += u128::from(media);
                }
                (0, 0, 1..) => {
                    self.known_clips += clips;
                    self.clip_tokens += u128::from(media);
                }
                (0, 1.., 0) => {
                    self.known_videos += videos;
                    self.video_tokens += u128::from(media);
                }
                _ => {}
            }
            self.per_request.add(media as f64);
        }
    }

    pub(super) fn merge(&mut self, o: MediaSums) {
        self.requests += o.requests;
        self.images += o.images;
        self.known += o.known;
        self.known_images += o.known_images;
        self.tokens += o.tokens;
        self.clips += o.clips;
        self.image_tokens += o.image_tokens;
        self.known_clips += o.known_clips;
        self.clip_tokens += o.clip_tokens;
        self.videos += o.videos;
        self.known_videos += o.known_videos;
        self.video_tokens += o.video_tokens;
        self.per_request.merge(o.per_request);
        self.bytes.merge(o.bytes);
        self.upload.merge(o.upload);
    }

    /// `None` when no successful request carried media.
    pub(super) fn finish(self, ps: &[f64]) -> Option<MediaSummary> {
        (self.requests > 0).then(|| MediaSummary {
            requests: self.requests,
            images: self.images,
            total_media_tokens: (self.known > 0)
                .then(|| u64::try_from(self.tokens).unwrap_or(u64::MAX)),
            media_tokens_per_request: self.per_request.finish(ps),
            media_tokens_per_image: (self.known_images > 0)
                .then(|| self.image_tokens as f64 / self.known_images as f64),
            audio_clips: self.clips,
            media_tokens_per_clip: (self.known_clips > 0)
                .then(|| self.clip_tokens as f64 / self.known_clips as f64),
            videos: self.videos,
            media_tokens_per_video: (self.known_videos > 0)
                .then(|| self.video_tokens as f64 / self.known_videos as f64),
            request_bytes: self.bytes.finish(ps),
            upload_ms: self.upload.finish(ps),
            generation: None,
        })
    }
}

/// A request's media tokens: the server's prompt count minus the text's exact count (the
/// length servebench built); `None` where the server gave no count or one below the text's.
pub fn media_tokens(r: &RequestRecord) -> Option<u64> {
    if r.prompt_tokens_source != Some(TokenSource::ServerUsage) {
        return None;
    }
    r.prompt_tokens?.checked_sub(r.input_len_requested?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: u64, prompt: Option<u64>, images: u32, bytes: u64) -> RequestRecord {
        RequestRecord {
            sent_ns: 1_000_000,
            upload_end_ns: Some(3_000_000),
            input_len_requested: Some(text),
            prompt_tokens: prompt,
            prompt_tokens_source: prompt.map(|_| TokenSource::ServerUsage),
            images: Some(images),
            request_bytes: Some(bytes),
            ..RequestRecord::default()
        }
    }

    /// Media tokens are the server's prompt count minus the text's, per request
    /// and per image over the requests that have one; bytes and upload over every request
    /// with media; a text request adds nothing.
    #[test]
    fn media_figures_by_hand() {
        let mut a = MediaSums::new(SampleSet::default);
        a.add(&record(10, Some(214), 2, 4000), 1.0);
        a.add(&record(10, Some(112), 1, 2000), 1.0);
        let mut b = MediaSums::new(SampleSet::default);
        b.add(&record(10, None, 3, 6000), 1.0);
        b.add(&record(10, Some(4), 1, 2000), 1.0);
        b.add(&RequestRecord::default(), 1.0);
        a.merge(b);
        let s = a.finish(&[99.0]).unwrap();
        assert_eq!((s.requests, s.images), (4, 7));
        assert_eq!(s.total_media_tokens, Some(306));
        let per = s.media_tokens_per_request.unwrap();
        assert_eq!((per.count, per.mean), (2, 153.0));
        assert_eq!(s.media_tokens_per_image, Some(102.0));
        assert_eq!(s.request_bytes.unwrap().mean, 3500.0);
        assert_eq!(s.upload_ms.unwrap().median, 2.0);
        assert!(MediaSums::new(SampleSet::default).finish(&[]).is_none());
    }
}
