//! The most prompt tokens a request's media may cost, so that a server's prompt count for a
//! request with images, video or audio is bounded as a text prompt's is (`usage`): per image
//! and video frame by its pixels, per audio clip by its duration, each with a generous
//! constant. The bounds and their reasons: `docs/metrics.md`, "Numbers a server reports".
//! Pure: no I/O, no clock.

use std::time::Duration;

use serde_json::Value;

use super::api::Part;

/// Prompt tokens one image, or one frame of a video, may cost besides its pixels' share: a
/// model that tiles or upscales a small image (LLaVA-NeXT's grid, InternVL's and Llama 3.2's
/// tiles) spends a few thousand tokens on any image, and its markers a few more.
pub const TOKENS_PER_IMAGE: u64 = 16_384;

/// Pixels per prompt token, at the least: vision encoders cut images into patches of 14 × 14
/// (196 pixels) or more, and merge them further; 8 × 8 leaves room for any upscaling.
pub const PIXELS_PER_TOKEN: u64 = 64;

/// Pixels assumed for an image whose size servebench does not know (a URL it does not fetch,
/// a data URL whose header it cannot read): 8192 × 8192, past what servers take unresized.
pub const UNKNOWN_IMAGE_PIXELS: u64 = 8192 * 8192;

/// Prompt tokens one audio clip may cost besides its duration's share: encoders that pad a
/// clip to a 30 s window (Whisper's 1,500 positions) and their markers.
pub const TOKENS_PER_CLIP: u64 = 4096;

/// Prompt tokens per second of audio, at the most: Whisper's encoder makes 50 a second,
/// others fewer (Qwen2-Audio 25, Ultravox about 6).
pub const TOKENS_PER_AUDIO_SECOND: u64 = 100;

/// Encoded bytes per second of a clip whose duration servebench does not know (not a WAV),
/// at the least: below any speech codec's rate (Codec2's 700 bit/s is 87 B/s), so the
/// duration it gives is an upper bound.
pub const MIN_AUDIO_BYTES_PER_SECOND: u64 = 64;

/// The most prompt tokens a request's media may cost, besides its text's bytes: per image
/// (and video frame) [`TOKENS_PER_IMAGE`] + one per [`PIXELS_PER_TOKEN`] pixels, per audio clip
/// [`TOKENS_PER_CLIP`] + [`TOKENS_PER_AUDIO_SECOND`] per second (docs/metrics.md, "Numbers a
/// server reports"). `None` when a part's cost has no bound servebench knows (a video given
/// by URL, a part of a kind it does not know).
pub fn media_tokens(parts: &[Part], messages: Option<&Value>) -> Option<u64> {
    let mut sum = 0u64;
    for p in parts {
        let cost = match p {
            Part::Image { url } => image_tokens(image_pixels(url)),
            Part::Video { url, frames } => {
                image_tokens(image_pixels(url)).saturating_mul(u64::from(*frames))
            }
            Part::Audio { data, duration, .. } => audio_tokens(data, *duration),
        };
        sum = sum.saturating_add(cost);
    }
    let parts = (messages.and_then(Value::as_array).into_iter().flatten())
        .filter_map(|m| m.get("content")?.as_array())
        .flatten();
    for p in parts {
        let cost = match p.get("type").and_then(Value::as_str) {
            Some("text") => 0,
            Some("image_url") => {
                let url = (p.pointer("/image_url/url")).and_then(Value::as_str);
                image_tokens(url.map_or(UNKNOWN_IMAGE_PIXELS, image_pixels))
            }
            Some("input_audio") => {
                let data = (p.pointer("/input_audio/data")).and_then(Value::as_str);
                audio_tokens(data?, Duration::ZERO)
            }
            _ => return None,
        };
        sum = sum.saturating_add(cost);
    }
    Some(sum)
}

/// An image's (or frame's) bound from its pixels.
fn image_tokens(pixels: u64) -> u64 {
    TOKENS_PER_IMAGE.saturating_add(pixels.div_ceil(PIXELS_PER_TOKEN))
}

/// An audio clip's bound from its duration, or (zero: unknown) from its base64 `data`'s
/// length at [`MIN_AUDIO_BYTES_PER_SECOND`].
fn audio_tokens(data: &str, duration: Duration) -> u64 {
    let per_second = |secs: f64| (secs * TOKENS_PER_AUDIO_SECOND as f64).ceil() as u64;
    let share = if duration.is_zero() {
        let bytes = data.len() as u64 / 4 * 3;
        bytes.div_ceil(MIN_AUDIO_BYTES_PER_SECOND) * TOKENS_PER_AUDIO_SECOND
    } else {
        per_second(duration.as_secs_f64())
    };
    TOKENS_PER_CLIP.saturating_add(share)
}

/// The pixels of the image in a `data:` URL (a video's: its first frame), read from its PNG or
/// JPEG header; [`UNKNOWN_IMAGE_PIXELS`] for any other URL, or a header that does not say.
fn image_pixels(url: &str) -> u64 {
    use base64::Engine;
    // The header is in the first bytes: 64 KiB of base64 is 48 KiB decoded.
    const HEAD: usize = 64 << 10;
    let Some((_, data)) = url.split_once(";base64,") else {
        return UNKNOWN_IMAGE_PIXELS;
    };
    let data = data.split(',').next().unwrap_or("").as_bytes();
    let head = &data[..data.len().min(HEAD) / 4 * 4];
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(head) else {
        return UNKNOWN_IMAGE_PIXELS;
    };
    let size = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16) == Some(b"IHDR") {
        let be = |at: usize| {
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        (bytes.len() >= 24).then(|| (be(16), be(20)))
    } else {
        use image::ImageDecoder;
        (image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(&bytes)).ok())
            .map(|d| d.dimensions())
    };
    size.filter(|&(w, h)| w > 0 && h > 0)
        .map_or(UNKNOWN_IMAGE_PIXELS, |(w, h)| u64::from(w) * u64::from(h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;

    fn data_url(kind: &str, bytes: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        format!("data:{kind};base64,{b64}")
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Grayscale);
        let mut writer = enc.write_header().unwrap();
        writer
            .write_image_data(&vec![0u8; (w * h) as usize])
            .unwrap();
        drop(writer);
        out
    }

    fn jpeg(w: u32, h: u32) -> Vec<u8> {
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new(&mut out)
            .encode(&vec![0u8; (w * h) as usize], w, h, image::ColorType::L8)
            .unwrap();
        out
    }

    /// By hand: a 256 × 256 PNG is 16,384 + 65,536 / 64 tokens at most, a 3-frame video of
    /// 64 × 32 JPEG frames three times 16,384 + 32, a 1 s clip 4,096 + 100, a clip of unknown
    /// duration as its bytes at 64 a second; an image by URL is 8192 × 8192 pixels; a video by
    /// URL has no bound.
    #[test]
    fn media_bounds_by_hand() {
        let image = Part::Image {
            url: data_url("image/png", &png(256, 256)),
        };
        assert_eq!(
            media_tokens(std::slice::from_ref(&image), None),
            Some(16_384 + 1024)
        );
        let frame = base64::engine::general_purpose::STANDARD.encode(jpeg(64, 32));
        let video = Part::Video {
            url: format!("data:video/jpeg;base64,{frame},{frame},{frame}"),
            frames: 3,
        };
        assert_eq!(media_tokens(&[video], None), Some(3 * (16_384 + 32)));
        let clip = |duration: Duration| Part::Audio {
            data: "A".repeat(4 * 64 * 10),
            format: "wav".into(),
            duration,
        };
        let second = clip(Duration::from_secs(1));
        assert_eq!(
            media_tokens(std::slice::from_ref(&second), None),
            Some(4096 + 100)
        );
        // 2,560 characters of base64 are 1,920 bytes: 30 s at 64 a second.
        assert_eq!(
            media_tokens(&[clip(Duration::ZERO)], None),
            Some(4096 + 3000)
        );
        assert_eq!(
            media_tokens(&[image, second], None),
            Some(16_384 + 1024 + 4096 + 100)
        );
        let by_url = Part::Image {
            url: "http://example.invalid/a.png".into(),
        };
        let unknown = 16_384 + UNKNOWN_IMAGE_PIXELS / 64;
        assert_eq!(media_tokens(&[by_url], None), Some(unknown));
        let not_an_image = Part::Image {
            url: data_url("image/png", b"not a png, not a jpeg"),
        };
        assert_eq!(media_tokens(&[not_an_image], None), Some(unknown));
        let messages = json!([{"role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": data_url("image/jpeg", &jpeg(640, 480))}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}]}]);
        let want = 16_384 + 640 * 480 / 64 + 4096 + 100;
        assert_eq!(media_tokens(&[], Some(&messages)), Some(want));
        let text = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(media_tokens(&[], Some(&text)), Some(0));
        let video = json!([{"role": "user", "content": [
            {"type": "video_url", "video_url": {"url": "http://example.invalid/v.mp4"}}]}]);
        assert_eq!(media_tokens(&[], Some(&video)), None);
    }
}
