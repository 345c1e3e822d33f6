//! The settings of `--dataset-name random-mm`, vLLM's synthetic multimodal dataset: how many
//! media items a request carries and at which sizes ([`MmSpec`]), read from vLLM's flag values
//! (`--random-mm-bucket-config`'s Python-style dict, `--random-mm-limit-mm-per-prompt`'s
//! JSON) and checked before a single item is made, each refusal naming its flag. A bucket of
//! one frame is an image, of more a video (vLLM's rule); an audio bucket (height 0) is refused.
//! Pure values, no I/O: `workload::media` draws and encodes the items.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// `--random-mm-base-items-per-request` when not given (vLLM's default).
pub const DEFAULT_MM_BASE_ITEMS: u64 = 1;
/// `--random-mm-limit-mm-per-prompt` when not given (vLLM's default): 255 images, 1 video.
pub const DEFAULT_MM_LIMIT: MmLimit = MmLimit {
    image: 255,
    video: 1,
};
/// The widest or tallest image made, pixels.
pub const MAX_MM_SIDE: u64 = 8192;
/// The most pixels of one image made: 4096² (48 MiB of RGB before encoding).
pub const MAX_MM_PIXELS: u64 = 1 << 24;
/// The most media items one request carries.
pub const MAX_MM_ITEMS: u64 = 255;
/// The most frames of one video made.
pub const MAX_MM_FRAMES: u64 = 1024;
/// The largest image file a jsonl line may name (`image_files`).
pub const MAX_IMAGE_FILE_BYTES: u64 = 64 << 20;
/// The most bytes of encoded images a run holds (every request is built before the load
/// starts, so all of them are in memory at once).
pub const MAX_MM_BYTES: u64 = 2 << 30;

/// One entry of `--random-mm-bucket-config`: an item of `height` × `width` pixels and
/// `num_frames` frames (1: an image, more: a video), drawn with `probability` (normalized over
/// the entries that still have room in their modality's limit).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MmBucket {
    pub height: u64,
    pub width: u64,
    pub num_frames: u64,
    pub probability: f64,
}

/// `--random-mm-limit-mm-per-prompt`: the most items of each modality in one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmLimit {
    pub image: u64,
    pub video: u64,
}

/// The media of a `random-mm` request, under vLLM's flag names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MmSpec {
    /// `--random-mm-base-items-per-request`: n, the items per request before the range.
    #[serde(rename = "random_mm_base_items_per_request")]
    pub base_items: u64,
    /// `--random-mm-num-mm-items-range-ratio`: r; the item count is uniform in
    /// [floor(n(1−r)), ceil(n(1+r))], capped at the limits' sum.
    #[serde(rename = "random_mm_num_mm_items_range_ratio")]
    pub items_range_ratio: f64,
    #[serde(rename = "random_mm_limit_mm_per_prompt")]
    pub limit: MmLimit,
    #[serde(rename = "random_mm_bucket_config")]
    pub buckets: Vec<MmBucket>,
}

impl Default for MmSpec {
    /// vLLM's defaults: one image per request, 256×256 or 720×1280 (height × width) alike.
    fn default() -> Self {
        let image = |height, width| MmBucket {
            height,
            width,
            num_frames: 1,
            probability: 0.5,
        };
        MmSpec {
            base_items: DEFAULT_MM_BASE_ITEMS,
            items_range_ratio: 0.0,
            limit: DEFAULT_MM_LIMIT,
            buckets: vec![image(256, 256), image(720, 1280)],
        }
    }
}

impl MmBucket {
    /// True for a video's bucket (more than one frame).
    pub fn is_video(&self) -> bool {
        self.num_frames > 1
    }

    /// At least the bytes one item of this bucket holds as sent (its data URL), from its size
    /// and frames alone, before a pixel is made: an image's PNG of noise is its raw rows
    /// (a filter byte and 3 bytes a pixel) and deflate's framing, a frame's JPEG at most
    /// [`JPEG_BYTES_PER_PIXEL`] a pixel and its headers; base64 takes 4 characters for 3.
    pub fn item_bytes(&self) -> u64 {
        let base64 = |n: u64| n.div_ceil(3).saturating_mul(4);
        let (w, h) = (self.width, self.height);
        if self.is_video() {
            let jpeg = (w.saturating_mul(h).saturating_mul(JPEG_BYTES_PER_PIXEL_X4) / 4)
                .saturating_add(MEDIA_HEADER_BYTES);
            let frame = base64(jpeg).saturating_add(1);
            frame.saturating_mul(self.num_frames).saturating_add(32)
        } else {
            let raw = w.saturating_mul(3).saturating_add(1).saturating_mul(h);
            let png = raw
                .saturating_add(raw / 64)
                .saturating_add(MEDIA_HEADER_BYTES);
            base64(png).saturating_add(32)
        }
    }
}

/// The most bytes a pixel of noise takes in a video frame's JPEG, times 4 (measured: see
/// `workload::media`'s test of the estimate).
pub const JPEG_BYTES_PER_PIXEL_X4: u64 = 12;
/// What an encoded image or frame holds beside its pixels, at most: headers, tables, chunks.
const MEDIA_HEADER_BYTES: u64 = 4096;

impl MmLimit {
    /// The most items of `b`'s modality in one request.
    pub fn of(&self, b: &MmBucket) -> u64 {
        if b.is_video() {
            self.video
        } else {
            self.image
        }
    }
}

impl MmSpec {
    /// The inclusive range the item count of a request is drawn from: [floor(n(1−r)),
    /// ceil(n(1+r))], its top capped at the limits' sum over the modalities a bucket is drawn
    /// for (a modality at its limit has its buckets left out, as in vLLM).
    pub fn items_range(&self) -> (u64, u64) {
        let n = self.base_items as f64;
        let r = self.items_range_ratio;
        let lo = (n * (1.0 - r)).floor().max(0.0) as u64;
        let hi = (n * (1.0 + r)).ceil() as u64;
        (lo, hi.min(self.cap()).min(MAX_MM_ITEMS))
    }

    /// The most items a request can carry: the limits of the modalities the buckets draw.
    fn cap(&self) -> u64 {
        let has = |video: bool| self.drawn().any(|b| b.is_video() == video);
        let image = if has(false) { self.limit.image } else { 0 };
        let video = if has(true) { self.limit.video } else { 0 };
        image.saturating_add(video)
    }

    /// The buckets drawn from: those with a positive probability.
    pub fn drawn(&self) -> impl Iterator<Item = &MmBucket> {
        self.buckets.iter().filter(|b| b.probability > 0.0)
    }

    /// Checks every setting before anything is made; the error names the flag.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |option: &str, why: String| {
            Err(ConfigError::Invalid {
                option: option.into(),
                why,
            })
        };
        if self.base_items > MAX_MM_ITEMS {
            let why = format!("must be at most {MAX_MM_ITEMS} items");
            return bad("--random-mm-base-items-per-request", why);
        }
        if !(0.0..=1.0).contains(&self.items_range_ratio) {
            let why = "must be in [0, 1]".into();
            return bad("--random-mm-num-mm-items-range-ratio", why);
        }
        let flag = "--random-mm-bucket-config";
        for b in &self.buckets {
            if !b.probability.is_finite() || b.probability < 0.0 {
                let why = format!("the probability {} is not a number ≥ 0", b.probability);
                return bad(flag, why);
            }
        }
        if self.drawn().next().is_none() {
            return bad(flag, "no bucket has a probability above 0".into());
        }
        // They are normalized by their sum: one past what a number holds drew the last
        // bucket every time.
        let sum: f64 = self.drawn().map(|b| b.probability).sum();
        if !sum.is_finite() {
            let why = "the probabilities add up past what a number holds; give smaller ones (they are normalized by their sum)";
            return bad(flag, why.into());
        }
        for b in self.drawn() {
            let key = format!("({}, {}, {})", b.height, b.width, b.num_frames);
            if b.height == 0 {
                let why = format!("{key} is an audio bucket; only images and videos are made (give it probability 0)");
                return bad(flag, why);
            }
            if !(1..=MAX_MM_FRAMES).contains(&b.num_frames) {
                let why = format!("{key}: num_frames must be in 1..={MAX_MM_FRAMES}");
                return bad(flag, why);
            }
            if b.width == 0 || b.height > MAX_MM_SIDE || b.width > MAX_MM_SIDE {
                let why = format!("{key}: height and width must be in 1..={MAX_MM_SIDE} pixels");
                return bad(flag, why);
            }
            if b.height * b.width > MAX_MM_PIXELS {
                let why = format!("{key}: at most {MAX_MM_PIXELS} pixels an image or frame");
                return bad(flag, why);
            }
            let bytes = b.item_bytes();
            if bytes > MAX_MM_BYTES {
                let why = format!("{key}: one item would hold about {bytes} bytes as sent (by its size and frames), more than the {MAX_MM_BYTES} a run's media may hold");
                return bad(flag, why);
            }
        }
        let (lo, _) = self.items_range();
        let cap = self.cap();
        if lo > cap {
            let why = format!("allows {cap} items per request of the buckets' modalities, fewer than the {lo} the base count and range ratio ask for");
            return bad("--random-mm-limit-mm-per-prompt", why);
        }
        Ok(())
    }
}

/// Reads `--random-mm-bucket-config`: vLLM's Python-style dict of `(height, width,
/// num_frames): probability` entries, `{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}`, its keys
/// also taken quoted (`{"(256, 256, 1)": 0.5}`, valid JSON). The error names the flag and
/// quotes what is wrong.
pub fn parse_buckets(text: &str) -> Result<Vec<MmBucket>, ConfigError> {
    let bad = |why: String| ConfigError::invalid("--random-mm-bucket-config", why);
    let t = text.trim();
    let inner = (t.strip_prefix('{').and_then(|t| t.strip_suffix('}'))).ok_or_else(|| {
        bad("expected a dict such as {(256, 256, 1): 0.5, (720, 1280, 1): 0.5}".into())
    })?;
    let mut out = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'');
        if let Some(q) = quote {
            rest = &rest[q.len_utf8()..];
        }
        let open = rest
            .strip_prefix('(')
            .ok_or_else(|| bad(format!("expected '(' at {rest:?}")))?;
        let close = open
            .find(')')
            .ok_or_else(|| bad(format!("no ')' after {open:?}")))?;
        let dims: Vec<&str> = open[..close].split(',').map(str::trim).collect();
        let num = |s: &str| {
            s.parse::<u64>().map_err(|_| {
                bad(format!(
                    "{s:?} in ({}) is not a whole number",
                    &open[..close]
                ))
            })
        };
        let &[h, w, f] = &dims[..] else {
            return Err(bad(format!(
                "({}) is not (height, width, num_frames)",
                &open[..close]
            )));
        };
        rest = open[close + 1..].trim_start();
        if let Some(q) = quote {
            rest = rest
                .strip_prefix(q)
                .ok_or_else(|| bad(format!("unclosed quote before {rest:?}")))?;
        }
        rest = (rest.trim_start().strip_prefix(':'))
            .ok_or_else(|| bad(format!("expected ':' at {rest:?}")))?;
        let end = rest.find(',').unwrap_or(rest.len());
        let p = rest[..end].trim();
        let probability = (p.parse::<f64>())
            .map_err(|_| bad(format!("the probability {p:?} is not a number")))?;
        out.push(MmBucket {
            height: num(h)?,
            width: num(w)?,
            num_frames: num(f)?,
            probability,
        });
        rest = rest[end..].strip_prefix(',').unwrap_or("").trim_start();
    }
    if out.is_empty() {
        return Err(bad("no bucket given".into()));
    }
    Ok(out)
}

/// Reads `--random-mm-limit-mm-per-prompt`: a JSON object of item counts by modality,
/// `{"image": 3, "video": 0}` (a modality left out takes vLLM's default). The error names the
/// flag.
pub fn parse_limit(text: &str) -> Result<MmLimit, ConfigError> {
    let bad = |why: String| ConfigError::invalid("--random-mm-limit-mm-per-prompt", why);
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not a JSON object ({e})")))?;
    let map = v
        .as_object()
        .ok_or_else(|| bad("not a JSON object".into()))?;
    let mut limit = DEFAULT_MM_LIMIT;
    for (k, v) in map {
        let n = (v.as_u64()).ok_or_else(|| bad(format!("{k}: {v} is not a whole number ≥ 0")))?;
        match k.as_str() {
            "image" => limit.image = n,
            "video" => limit.video = n,
            other => return Err(bad(format!("unknown modality {other:?} (image, video)"))),
        }
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM's bucket dict is read in both spellings, and a malformed one is one
    /// line quoting what is wrong.
    #[test]
    fn bucket_config_reads_vllms_dict_and_names_what_is_wrong() {
        let b = parse_buckets("{(256, 256, 1): 0.25, (720, 1280, 1): 0.75}").unwrap();
        assert_eq!((b[0].height, b[0].width, b[0].num_frames), (256, 256, 1));
        assert_eq!(
            (b[1].height, b[1].width, b[1].probability),
            (720, 1280, 0.75)
        );
        let j = parse_buckets(r#"{"(32, 32, 1)":0.5,"(0, 1, 1)":0.1,"(32, 64, 2)":0.4}"#).unwrap();
        assert_eq!(j.len(), 3);
        assert_eq!((j[2].width, j[2].num_frames), (64, 2));
        for bad in [
            "(1,1,1): 1",
            "{(1, 1): 1}",
            "{(a, 1, 1): 1}",
            "{(1, 1, 1) 1}",
            "{}",
        ] {
            let e = parse_buckets(bad).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            parse_limit(r#"{"image": 3, "video": 0}"#).unwrap(),
            MmLimit { image: 3, video: 0 }
        );
        assert!(parse_limit(r#"{"audio": 1}"#)
            .unwrap_err()
            .to_string()
            .contains("audio"));
        assert!(parse_limit(r#"{"image": -1}"#).is_err());
    }

    #[test]
    fn checks_name_the_flag() {
        assert!(MmSpec::default().check().is_ok());
        let bucket = |height, width, num_frames| MmSpec {
            buckets: vec![MmBucket {
                height,
                width,
                num_frames,
                probability: 1.0,
            }],
            ..MmSpec::default()
        };
        // A video's bucket is taken (vLLM's default limit: one video a request); an audio
        // bucket and a video of too many frames are refused by name.
        assert!(bucket(64, 64, 16).check().is_ok());
        assert_eq!(bucket(64, 64, 16).items_range(), (1, 1));
        for (b, what) in [
            (bucket(0, 1, 1), "audio"),
            (bucket(8, 8, 2000), "num_frames"),
        ] {
            let e = b.check().unwrap_err().to_string();
            assert!(
                e.contains("--random-mm-bucket-config") && e.contains(what),
                "{e}"
            );
        }
        let no_video = MmSpec {
            limit: MmLimit { image: 5, video: 0 },
            ..bucket(64, 64, 16)
        };
        let e = no_video.check().unwrap_err().to_string();
        assert!(e.contains("--random-mm-limit-mm-per-prompt"), "{e}");
        let huge = MmSpec {
            buckets: vec![MmBucket {
                height: 8192,
                width: 8192,
                num_frames: 1,
                probability: 1.0,
            }],
            ..MmSpec::default()
        };
        assert!(huge.check().is_err());
        // One item over the whole bound is refused by its size before anything is made
        // (4096 × 4096 × 100 frames once took 159 s and 2.8 GB to be refused).
        for frames in [100, 1024] {
            let e = bucket(4096, 4096, frames).check().unwrap_err().to_string();
            assert!(
                e.contains("--random-mm-bucket-config") && e.contains("bytes"),
                "{e}"
            );
        }
        assert!(bucket(4096, 4096, 1).check().is_ok());
        // Weights whose sum is past what a number holds are refused, not drawn as the last.
        let mut heavy = bucket(8, 8, 1);
        heavy.buckets.push(MmBucket {
            height: 16,
            ..heavy.buckets[0]
        });
        heavy.buckets.iter_mut().for_each(|b| b.probability = 1e308);
        let e = heavy.check().unwrap_err().to_string();
        assert!(
            e.contains("--random-mm-bucket-config") && e.contains("add up"),
            "{e}"
        );
        let capped = MmSpec {
            base_items: 4,
            limit: MmLimit { image: 2, video: 1 },
            ..MmSpec::default()
        };
        let e = capped.check().unwrap_err().to_string();
        assert!(e.contains("--random-mm-limit-mm-per-prompt"), "{e}");
        let ranged = MmSpec {
            base_items: 2,
            items_range_ratio: 1.0,
            limit: MmLimit { image: 3, video: 0 },
            ..MmSpec::default()
        };
        assert_eq!(ranged.items_range(), (0, 3));
    }
}
