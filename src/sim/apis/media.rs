//! Images, video and audio in a chat request: the simulator counts each image's tokens from its
//! size, the way common vision encoders do, and refuses malformed media by name.
//!
//! # The patch rule
//! An image of `w` × `h` pixels is cut into 14-pixel patches that are merged 2 × 2 (Qwen2-VL's
//! layout), so it costs one token per 28 × 28 tile, each side rounded up, plus 2 tokens
//! marking its start and end: `ceil(w/28) · ceil(h/28) + 2` ([`image_tokens`]). A 256 × 256
//! image is 102 tokens, a 1280 × 720 one 1,198. Real models resize first (to multiples of
//! 28, within a pixel budget), so their counts differ a little; this rule is the simulator's
//! truth, which a client's media-token figure is checked against. The image's tokens are part
//! of the request's prompt: counted in its `prompt_tokens`, and prefilled by the engine model.
//!
//! # Video
//! A `video_url` part is read in the frame-list form vLLM's server takes: a
//! `data:video/jpeg;base64,` URL of base64 JPEG frames joined by commas, each frame checked as
//! a JPEG image is (below), all of one size, at most [`MAX_FRAMES`]. Frames are merged in
//! pairs in time (Qwen2-VL's temporal patch of 2), so a video of `f` frames of `w` × `h`
//! costs `ceil(f/2) · ceil(w/28) · ceil(h/28) + 2` tokens ([`video_tokens`]): 4 frames of
//! 256 × 256, 202. Another video type (`video/mp4`) is refused: the simulator decodes no
//! codec.
//!
//! # Audio
//! An `input_audio` part's WAV costs `ceil(duration · 25) + 2` tokens ([`audio_tokens`]): a
//! Whisper-style encoder's 50 frames a second pooled by 2 (Qwen2-Audio's layout), plus the
//! start and end markers; the duration is the `data` chunk's sample frames over the `fmt`
//! chunk's rate (1.5 s at 16 kHz: 40 tokens). A format other than `wav`, base64 broken at its
//! start, a file without `RIFF`/`WAVE`, a `fmt` and a `data` chunk within its first 4 KiB, or
//! a `data` chunk longer than the part holds is refused the same way. A transcription's `file`
//! part (`audio.rs`) is the same WAV, raw ([`wav_clip`]).
//!
//! # What is refused
//! An `image_url` content part whose URL is not a base64 `data:` URL of `image/png` or
//! `image/jpeg` (the simulator fetches nothing), whose base64 is not whole groups of its
//! alphabet at the start and end, or whose bytes are not the image they say: a PNG's
//! signature, an `IHDR` chunk first and the `IEND` chunk last; a JPEG's start marker, a frame
//! header (`SOF`) within its first 64 KiB and its end marker last; each side in
//! 1..=[`MAX_SIDE`] pixels. Only the head and the tail are decoded: the pixels are not, so a
//! request of megabytes costs the simulator's one thread microseconds.
//!
//! A part that does not read is a [`MediaError`] (`sim/error.rs`), whose message names the
//! message and the part; `reject.rs` turns it into a 400.
//!
//! # What it must not touch
//! Nothing of any API's wire format besides the content part's own fields, and nothing of
//! `common.rs` (each API turns an error here into its 400).

use base64::Engine;
use serde_json::Value;

use crate::sim::error::MediaError;

/// The pixels of one token's tile along each side: 14-pixel patches merged 2 × 2.
pub(crate) const TILE: u64 = 28;
/// The tokens marking an image's start and end.
pub(crate) const IMAGE_MARKERS: u64 = 2;
/// The widest or tallest image taken, pixels.
pub(crate) const MAX_SIDE: u64 = 16_384;

/// The most frames of one video taken.
pub(crate) const MAX_FRAMES: usize = 1024;
/// Frames merged into one in time.
pub(crate) const TEMPORAL_PATCH: u64 = 2;

/// A video's tokens under the patch rule: its frames merged in pairs, each pair a frame's
/// tiles, plus the start and end markers.
pub(crate) fn video_tokens(frames: u64, width: u64, height: u64) -> u64 {
    frames.div_ceil(TEMPORAL_PATCH) * width.div_ceil(TILE) * height.div_ceil(TILE) + IMAGE_MARKERS
}

/// An image's tokens under the patch rule.
pub(crate) fn image_tokens(width: u64, height: u64) -> u64 {
    width.div_ceil(TILE) * height.div_ceil(TILE) + IMAGE_MARKERS
}

/// The tokens of every image in `contents` (the messages' `content` values, in order);
/// an error names the message and part that is malformed.
pub(crate) fn media_tokens<'a>(
    contents: impl IntoIterator<Item = &'a Value>,
) -> Result<u64, MediaError> {
    let mut tokens = 0u64;
    for (m, content) in contents.into_iter().enumerate() {
        let Value::Array(parts) = content else {
            continue;
        };
        for (p, part) in parts.iter().enumerate() {
            let at = |why: MediaError| MediaError::Part {
                message: m + 1,
                part: p + 1,
                why: Box::new(why),
            };
            let missing = |kind, field| at(MediaError::Missing { kind, field });
            if part.get("type").and_then(Value::as_str) == Some("input_audio") {
                let audio = part.get("input_audio");
                let field = |k: &str| audio.and_then(|a| a.get(k)).and_then(Value::as_str);
                let data = field("data").ok_or_else(|| missing("input_audio", "data"))?;
                let (frames, rate) = wav_frames(data, field("format")).map_err(at)?;
                tokens = tokens.saturating_add(audio_tokens(frames, rate));
                continue;
            }
            if part.get("type").and_then(Value::as_str) == Some("video_url") {
                let url = url_of(part, "video_url").ok_or_else(|| missing("video_url", "url"))?;
                let n = video_size(url).map_err(at)?;
                tokens = tokens.saturating_add(n);
                continue;
            }
            if part.get("type").and_then(Value::as_str) != Some("image_url") {
                continue;
            }
            let url = url_of(part, "image_url").ok_or_else(|| missing("image_url", "url"))?;
            let (w, h) = image_size(url).map_err(at)?;
            tokens = tokens.saturating_add(image_tokens(w, h));
        }
    }
    Ok(tokens)
}

/// A content part's URL: `part[key]` as a string or its `url` field.
fn url_of<'a>(part: &'a Value, key: &str) -> Option<&'a str> {
    part.get(key).and_then(|i| match i {
        Value::String(s) => Some(s.as_str()),
        other => other.get("url").and_then(Value::as_str),
    })
}

/// A `video/jpeg` frame list's tokens, each frame checked as a JPEG image is, all of one size.
fn video_size(url: &str) -> Result<u64, MediaError> {
    let (mime, list) = data_url(url, "video")?;
    if !mime.eq_ignore_ascii_case("video/jpeg") {
        let shown: String = mime.chars().take(40).collect();
        return Err(MediaError::VideoType { shown });
    }
    let (mut frames, mut size) = (0usize, None);
    for (i, frame) in list.split(',').enumerate() {
        frames += 1;
        if frames > MAX_FRAMES {
            return Err(MediaError::TooManyFrames { max: MAX_FRAMES });
        }
        let wh = base64_image_size("image/jpeg", frame).map_err(|why| MediaError::Frame {
            frame: i + 1,
            why: Box::new(why),
        })?;
        if size.is_some_and(|s| s != wh) {
            let ((w0, h0), (w, h)) = (size.unwrap_or(wh), wh);
            let frame = i + 1;
            return Err(MediaError::FrameSize {
                frame,
                w,
                h,
                w0,
                h0,
            });
        }
        size = Some(wh);
    }
    let (w, h) = size.unwrap_or((0, 0));
    Ok(video_tokens(frames as u64, w, h))
}

/// Audio tokens per second of sound: a Whisper-style encoder's 50 frames a second, pooled by 2
/// (Qwen2-Audio's layout).
pub(crate) const AUDIO_TOKENS_PER_S: u64 = 25;
/// The longest clip taken, seconds.
pub(crate) const MAX_AUDIO_S: u64 = 3600;

/// A clip's tokens under the audio rule: `ceil(duration · 25) + 2`, the duration in exact
/// sample frames.
pub(crate) fn audio_tokens(frames: u64, sample_rate: u64) -> u64 {
    (frames * AUDIO_TOKENS_PER_S).div_ceil(sample_rate) + IMAGE_MARKERS
}

/// The sample frames and rate of the WAV in an `input_audio` part's base64 `data`.
fn wav_frames(data: &str, format: Option<&str>) -> Result<(u64, u64), MediaError> {
    if format != Some("wav") {
        let shown: String = format.unwrap_or("none").chars().take(20).collect();
        return Err(MediaError::AudioFormat { shown });
    }
    let b = data.as_bytes();
    if b.len() < 64 || b.len() % 4 != 0 {
        let (what, len) = ("audio", b.len());
        return Err(MediaError::Base64Length { what, len });
    }
    let engine = base64::engine::general_purpose::STANDARD;
    let head = engine
        .decode(&b[..b.len().min(WAV_HEAD_B64)])
        .map_err(|error| MediaError::Base64 {
            what: "audio",
            error,
        })?;
    let total = b.len() / 4 * 3 - b.iter().rev().take_while(|c| **c == b'=').count();
    wav_head(&head, total)
}

/// The sample frames and rate of a WAV file's raw `bytes` (a transcription's `file` part),
/// checked as an `input_audio` part's are.
pub(crate) fn wav_clip(bytes: &[u8]) -> Result<(u64, u64), MediaError> {
    wav_head(&bytes[..bytes.len().min(WAV_HEAD)], bytes.len())
}

/// The bytes of a WAV's head searched for its `fmt` and `data` chunks.
const WAV_HEAD: usize = 4096;

/// The frames and rate of a WAV of `total` bytes from its `head` (at most [`WAV_HEAD`]
/// bytes): `RIFF`/`WAVE`, a `fmt` then a `data` chunk the file holds whole.
fn wav_head(head: &[u8], total: usize) -> Result<(u64, u64), MediaError> {
    if head.len() < 12 || &head[..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return Err(MediaError::NotWav);
    }
    let le16 = |i: usize| u64::from(u16::from_le_bytes([head[i], head[i + 1]]));
    let le32 = |i: usize| {
        u64::from(u32::from_le_bytes([
            head[i],
            head[i + 1],
            head[i + 2],
            head[i + 3],
        ]))
    };
    let (mut i, mut fmt) = (12usize, None);
    while i + 8 <= head.len() {
        let size = le32(i + 4) as usize;
        match &head[i..i + 4] {
            b"fmt " if i + 24 <= head.len() => {
                fmt = Some((le16(i + 10), le32(i + 12), le16(i + 22)))
            }
            b"data" => {
                let (channels, rate, bits) = fmt.ok_or(MediaError::DataBeforeFmt)?;
                let frame = channels * bits.div_ceil(8);
                if rate == 0 || frame == 0 {
                    return Err(MediaError::WavFormat {
                        channels,
                        bits,
                        rate,
                    });
                }
                let bytes = size as u64;
                if i + 8 + size > total {
                    return Err(MediaError::WavCut {
                        announced: bytes,
                        present: total.saturating_sub(i + 8),
                    });
                }
                let frames = bytes / frame;
                if frames > MAX_AUDIO_S * rate {
                    return Err(MediaError::WavTooLong { max_s: MAX_AUDIO_S });
                }
                return Ok((frames, rate));
            }
            _ => {}
        }
        i += 8 + size + (size & 1);
    }
    Err(MediaError::NoWavData)
}

/// Base64 characters of a WAV's head decoded in search of its `fmt` and `data` chunks (4 KiB).
const WAV_HEAD_B64: usize = 5_460;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
const PNG_IEND: &[u8] = b"IEND\xae\x42\x60\x82";

/// Base64 characters of a JPEG's head decoded in search of its frame header (64 KiB).
const JPEG_HEAD_B64: usize = 87_380;

/// A `data:` URL's type and base64 text; `what` names the item in the error.
fn data_url<'a>(url: &'a str, what: &'static str) -> Result<(&'a str, &'a str), MediaError> {
    let Some(rest) = url.strip_prefix("data:") else {
        let shown: String = url.chars().take(40).collect();
        return Err(MediaError::NotDataUrl { what, shown });
    };
    (rest.split_once(";base64,")).ok_or(MediaError::NotBase64 { what })
}

/// The width and height of the image in a data URL, checked as the module doc says.
fn image_size(url: &str) -> Result<(u64, u64), MediaError> {
    let (mime, b64) = data_url(url, "image")?;
    base64_image_size(mime, b64)
}

/// The width and height of a `mime` image in `b64`, checked as the module doc says.
fn base64_image_size(mime: &str, b64: &str) -> Result<(u64, u64), MediaError> {
    let b = b64.as_bytes();
    if b.len() < 64 || b.len() % 4 != 0 {
        let (what, len) = ("image", b.len());
        return Err(MediaError::Base64Length { what, len });
    }
    let engine = base64::engine::general_purpose::STANDARD;
    let decode = |s: &[u8]| {
        engine.decode(s).map_err(|error| MediaError::Base64 {
            what: "image",
            error,
        })
    };
    let tail = decode(&b[b.len() - 24..])?;
    let (kind, (w, h)) = match mime {
        "image/png" => ("PNG", png_size(&decode(&b[..44])?, &tail)?),
        "image/jpeg" | "image/jpg" => {
            let head = &b[..b.len().min(JPEG_HEAD_B64)];
            ("JPEG", jpeg_size(&decode(head)?, &tail)?)
        }
        other => {
            let shown: String = other.chars().take(40).collect();
            return Err(MediaError::ImageType { shown });
        }
    };
    if !(1..=MAX_SIDE).contains(&w) || !(1..=MAX_SIDE).contains(&h) {
        let max = MAX_SIDE;
        return Err(MediaError::ImageSide { kind, w, h, max });
    }
    Ok((w, h))
}

/// A PNG's size from its decoded head (the signature and `IHDR`), its tail ending in `IEND`.
fn png_size(head: &[u8], tail: &[u8]) -> Result<(u64, u64), MediaError> {
    if !head.starts_with(PNG_SIGNATURE) || &head[12..16] != b"IHDR" {
        return Err(MediaError::NotPng);
    }
    if !tail.ends_with(PNG_IEND) {
        return Err(MediaError::PngCut);
    }
    let be = |i: usize| u32::from_be_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    Ok((u64::from(be(16)), u64::from(be(20))))
}

/// A JPEG's size from its first frame header (`SOF0`..`SOF15` but `DHT`, `JPG`, `DAC`),
/// found by walking the segments of its decoded head; its tail ends in the end marker.
fn jpeg_size(head: &[u8], tail: &[u8]) -> Result<(u64, u64), MediaError> {
    if !head.starts_with(&[0xFF, 0xD8]) {
        return Err(MediaError::NotJpeg);
    }
    if !tail.ends_with(&[0xFF, 0xD9]) {
        return Err(MediaError::JpegCut);
    }
    let be = |i: usize| u64::from(u16::from_be_bytes([head[i], head[i + 1]]));
    let mut i = 2;
    while i + 4 <= head.len() {
        if head[i] != 0xFF {
            return Err(MediaError::NoSegmentMarker { at: i });
        }
        let marker = head[i + 1];
        if marker == 0xFF {
            i += 1;
            continue;
        }
        if marker == 0x01 || (0xD0..=0xD9).contains(&marker) {
            i += 2;
            continue;
        }
        let frame = (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker);
        if frame && i + 9 <= head.len() {
            return Ok((be(i + 7), be(i + 5)));
        }
        i += 2 + be(i + 2) as usize;
    }
    Err(MediaError::NoFrameHeader)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// A minimal `w` × `h` PNG's bytes: signature, IHDR, an (empty) IDAT, IEND.
    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut out = PNG_SIGNATURE.to_vec();
        let mut chunk = |kind: &[u8], data: &[u8]| {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            out.extend_from_slice(kind);
            out.extend_from_slice(data);
            out.extend_from_slice(&[0, 0, 0, 0]);
        };
        let mut ihdr = w.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        chunk(b"IHDR", &ihdr);
        chunk(b"IDAT", &[0; 40]);
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(PNG_IEND);
        out
    }

    fn url(bytes: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        format!("data:image/png;base64,{b64}")
    }

    fn chat(urls: &[&str]) -> Value {
        let mut parts = vec![json!({"type": "text", "text": "look"})];
        parts.extend(
            urls.iter()
                .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
        );
        Value::Array(parts)
    }

    /// The patch rule, over every image of every message.
    #[test]
    fn image_tokens_follow_the_patch_rule() {
        assert_eq!(image_tokens(256, 256), 102);
        assert_eq!(image_tokens(1280, 720), 46 * 26 + 2);
        assert_eq!(image_tokens(28, 29), 4);
        let (a, b) = (url(&png(256, 256)), url(&png(1280, 720)));
        let contents = [
            chat(&[a.as_str(), b.as_str()]),
            json!("plain text"),
            chat(&[a.as_str()]),
        ];
        assert_eq!(media_tokens(&contents).unwrap(), 102 + 1198 + 102);
        let jpeg = format!(
            "data:image/jpeg;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(jpeg(100, 60))
        );
        assert_eq!(media_tokens(&[chat(&[jpeg.as_str()])]).unwrap(), 4 * 3 + 2);
    }

    /// A minimal `w` × `h` JPEG's bytes: start, an APP0 segment, a frame header, a scan's
    /// header and some data, the end marker.
    fn jpeg(w: u16, h: u16) -> Vec<u8> {
        let mut out = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
        out.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
        out.extend_from_slice(&[0xFF, 0xC0, 0, 17, 8]);
        out.extend_from_slice(&h.to_be_bytes());
        out.extend_from_slice(&w.to_be_bytes());
        out.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        out.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 0x3F, 0]);
        out.extend_from_slice(&[0x55; 40]);
        out.extend_from_slice(&[0xFF, 0xD9]);
        out
    }

    /// A WAV file's bytes: `frames` of 16-bit mono at `rate` Hz (the transcription tests' too).
    pub(crate) fn wav(frames: u32, rate: u32) -> Vec<u8> {
        let data = frames * 2;
        let mut out = b"RIFF".to_vec();
        out.extend_from_slice(&(36 + data).to_le_bytes());
        out.extend_from_slice(b"WAVEfmt ");
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&[1, 0, 1, 0]);
        out.extend_from_slice(&rate.to_le_bytes());
        out.extend_from_slice(&(rate * 2).to_le_bytes());
        out.extend_from_slice(&[2, 0, 16, 0]);
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data.to_le_bytes());
        out.resize(out.len() + data as usize, 0);
        out
    }

    fn audio(bytes: &[u8], format: &str) -> Value {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        json!([{"type": "text", "text": "hear"}, {"type": "input_audio", "input_audio": {"data": data, "format": format}}])
    }

    /// An audio clip's tokens by its duration; a malformed clip is refused by
    /// name.
    #[test]
    fn audio_tokens_follow_the_duration_and_bad_audio_is_refused() {
        assert_eq!(
            media_tokens(&[audio(&wav(24_000, 16_000), "wav")]).unwrap(),
            38 + 2
        );
        assert_eq!(
            media_tokens(&[audio(&wav(16_000, 16_000), "wav")]).unwrap(),
            25 + 2
        );
        let mut cut = wav(16_000, 16_000);
        cut.truncate(cut.len() - 100);
        for (part, says) in [
            (audio(&wav(16_000, 16_000), "mp3"), "wav only"),
            (audio(&[9u8; 90], "wav"), "not a WAV"),
            (audio(&cut, "wav"), "cut short"),
            (
                json!([{"type": "input_audio", "input_audio": {}}]),
                "no data",
            ),
        ] {
            let e = media_tokens(&[part]).unwrap_err().to_string();
            assert!(
                e.contains("message 1 content part") && e.contains(says),
                "{e}"
            );
        }
    }

    /// Malformed media is refused, naming the message, the part and what is
    /// wrong.
    #[test]
    fn malformed_media_is_refused_by_name() {
        let good = url(&png(64, 64));
        let mut cut = png(64, 64);
        cut.truncate(cut.len() - 4);
        let mut wide = png(64, 64);
        wide[16..20].copy_from_slice(&20_000u32.to_be_bytes());
        let cases = [
            ("http://example.invalid/cat.png".to_string(), "data: URL"),
            ("data:image/png,rawbytes".into(), "base64"),
            (good.replace("image/png", "image/gif"), "image/gif"),
            (good.replace("image/png", "image/jpeg"), "not a JPEG"),
            (format!("{}!!!!", &good[..good.len() - 4]), "base64"),
            (url(&[7u8; 90]), "not a PNG"),
            (url(&cut), "cut short"),
            (url(&wide), "20000x64"),
        ];
        for (bad, says) in cases {
            let e = media_tokens(&[chat(&[good.as_str(), bad.as_str()])])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("message 1 content part 3") && e.contains(says),
                "{e}"
            );
        }
        let no_url = json!([{"type": "image_url", "image_url": {}}]);
        assert!(media_tokens(&[no_url])
            .unwrap_err()
            .to_string()
            .contains("no url"));
    }

    /// A `video/jpeg` frame list costs its frames in pairs of tiles plus the
    /// markers; a frame that is not a JPEG, frames of two sizes, another video type and too
    /// many frames are refused by name.
    #[test]
    fn video_frame_lists_follow_the_patch_rule() {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let list = |frames: &[Vec<u8>]| {
            let each: Vec<String> = frames.iter().map(|f| b64(f)).collect();
            format!("data:video/jpeg;base64,{}", each.join(","))
        };
        let video = |url: &str| json!([{"type": "video_url", "video_url": {"url": url}}]);
        assert_eq!(video_tokens(4, 256, 256), 202);
        let five = list(&vec![jpeg(100, 60); 5]);
        assert_eq!(media_tokens(&[video(&five)]).unwrap(), 3 * 4 * 3 + 2);
        let many = list(&vec![jpeg(8, 8); MAX_FRAMES + 1]);
        let cases = [
            (list(&[jpeg(100, 60), png(100, 60)]), "frame 2"),
            (list(&[jpeg(100, 60), jpeg(60, 100)]), "one size"),
            (five.replace("video/jpeg", "video/mp4"), "video/mp4"),
            (many, "more than 1024 frames"),
        ];
        for (bad, says) in cases {
            let e = media_tokens(&[video(&bad)]).unwrap_err().to_string();
            assert!(e.contains("content part 1") && e.contains(says), "{e}");
        }
    }
}
