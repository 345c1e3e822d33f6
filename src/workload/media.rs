//! random-mm's images and videos (vLLM's synthetic multimodal dataset). For each request: its
//! item count, uniform in [`MmSpec::items_range`]; each item's bucket, drawn by the buckets'
//! probabilities normalized over the modalities still under their limit (a modality at its
//! `--random-mm-limit-mm-per-prompt` has its buckets left out, as in vLLM); its pixels, seeded
//! random RGB noise (every item differs, as vLLM's do, so no server cache answers one from
//! another).
//!
//! - An image (one frame) is encoded as PNG (8-bit RGB, fast deflate, no filter) and sent as
//!   a `data:image/png;base64,` URL in an `image_url` content part after the request's text.
//!   vLLM encodes its images as JPEG; noise does not compress either way, so the bodies are
//!   of the same order.
//! - A video (more frames) is its frames encoded as JPEG (quality [`FRAME_QUALITY`]), sent as
//!   one `data:video/jpeg;base64,` URL of the frames' base64 joined by commas in a
//!   `video_url` part: the frame-list form vLLM's server reads as a video. vLLM's benchmark
//!   sends an MP4 instead; a frame list needs no video codec on the client (none is
//!   maintained in Rust without a C library), and the server decodes it frame by frame as it
//!   would the MP4's sampled frames.
//!
//! Built with the requests, before the load starts (every image is in memory at once, so the
//! total is bounded by [`MAX_MM_BYTES`]: estimated from the items' sizes and frames before
//! any is made, and counted again as they are); reproducible from the seed. No
//! clock here: the run times the building (`drive::run`).

use base64::Engine;
use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};

use crate::config::media::{MmBucket, MmSpec, MAX_MM_BYTES};
use crate::measure::client::{Part, RequestSpec};
use crate::workload::media_file::{self, MediaFileError};

/// Why random-mm's images could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    #[error("random-mm: cannot encode a {width}x{height} image or frame: {why}")]
    Encode {
        width: u64,
        height: u64,
        why: String,
    },
    #[error("random-mm: the images and videos of {requests} requests would hold more than {MAX_MM_BYTES} bytes in memory (by their sizes and frames); ask for fewer requests (--num-prompts), fewer items (--random-mm-base-items-per-request) or smaller ones (--random-mm-bucket-config)")]
    TooLarge { requests: usize },
}

/// What is wrong with an image file a jsonl line names (the caller's error names the file).
#[derive(Debug, thiserror::Error)]
pub enum ImageFileError {
    #[error(transparent)]
    File(#[from] MediaFileError),
    #[error("not a PNG or JPEG file (by its first bytes)")]
    NotAnImage,
}

/// What the items of a build came to: images, videos, their frames, and the encoded bytes
/// (the data URLs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Made {
    pub images: u64,
    pub videos: u64,
    pub frames: u64,
    pub bytes: u64,
}

/// JPEG quality of a video's frames (the encoder's common default).
pub const FRAME_QUALITY: u8 = 75;

/// Gives each request its images and videos (after any parts it has), seeded by `seed`.
///
/// Every item is drawn first and its bytes estimated from its size and frames
/// ([`MmBucket::item_bytes`]): a run whose items would hold more than [`MAX_MM_BYTES`] is
/// refused before a pixel is made. Then the same draws are made again and encoded, each item
/// from a seed of its own.
pub fn attach(requests: &mut [RequestSpec], mm: &MmSpec, seed: u64) -> Result<Made, MediaError> {
    let n = requests.len();
    let mut estimate = 0u64;
    draws(n, mm, seed, |_, items| {
        let sum = (items.iter()).fold(estimate, |s, d| s.saturating_add(d.bucket.item_bytes()));
        estimate = sum;
        match sum > MAX_MM_BYTES {
            true => Err(MediaError::TooLarge { requests: n }),
            false => Ok(()),
        }
    })?;
    let mut made = Made::default();
    draws(n, mm, seed, |i, items| {
        for d in items {
            let b = d.bucket;
            let mut rng = StdRng::seed_from_u64(d.seed);
            let part = if b.is_video() {
                made.videos += 1;
                made.frames += b.num_frames;
                video_part(b, &mut rng)?
            } else {
                made.images += 1;
                Part::Image {
                    url: image_url(b.width, b.height, &mut rng)?,
                }
            };
            made.bytes += part.bytes();
            // The estimate bounds what is made; this holds if it did not.
            if made.bytes > MAX_MM_BYTES {
                return Err(MediaError::TooLarge { requests: n });
            }
            requests[i].parts.push(part);
        }
        Ok(())
    })?;
    Ok(made)
}

/// One item drawn for a request: its bucket and the seed of its pixels.
struct Draw<'a> {
    bucket: &'a MmBucket,
    seed: u64,
}

/// Draws the items of `n` requests from `seed` (the same ones from the same seed) and hands
/// each request's to `each` with its index, in order; stops at `each`'s first error.
fn draws<'a>(
    n: usize,
    mm: &'a MmSpec,
    seed: u64,
    mut each: impl FnMut(usize, &[Draw<'a>]) -> Result<(), MediaError>,
) -> Result<(), MediaError> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x1A6E_5EED_0F4D_4D00);
    let (lo, hi) = mm.items_range();
    let mut items = Vec::new();
    for i in 0..n {
        items.clear();
        let k = rng.random_range(lo..=hi);
        // Items of each modality so far: (images, videos).
        let mut had = (0u64, 0u64);
        for _ in 0..k {
            let room = |b: &&MmBucket| {
                let so_far = if b.is_video() { had.1 } else { had.0 };
                so_far < mm.limit.of(b)
            };
            let buckets: Vec<&MmBucket> = mm.drawn().filter(room).collect();
            if buckets.is_empty() {
                break;
            }
            let total: f64 = buckets.iter().map(|b| b.probability).sum();
            let bucket = draw(&buckets, total, rng.random::<f64>());
            match bucket.is_video() {
                true => had.1 += 1,
                false => had.0 += 1,
            }
            items.push(Draw {
                bucket,
                seed: rng.random(),
            });
        }
        each(i, &items)?;
    }
    Ok(())
}

/// The bucket at `u` (in [0, 1)) of the cumulative normalized probabilities.
fn draw<'a>(buckets: &[&'a MmBucket], total: f64, u: f64) -> &'a MmBucket {
    let mut at = u * total;
    for b in buckets {
        if at < b.probability {
            return b;
        }
        at -= b.probability;
    }
    // Rounding left `at` just past the last bucket.
    buckets[buckets.len() - 1]
}

/// A `width` × `height` image of random RGB noise as a PNG data URL.
fn image_url(width: u64, height: u64, rng: &mut StdRng) -> Result<String, MediaError> {
    let fail = |why: String| MediaError::Encode { width, height, why };
    let mut pixels = vec![0u8; (width * height * 3) as usize];
    rng.fill_bytes(&mut pixels);
    let png = encode_png(width, height, &pixels).map_err(|e| fail(e.to_string()))?;
    Ok(png_data_url(&png))
}

/// A video of `b.num_frames` frames of random RGB noise, each a JPEG, as one
/// `data:video/jpeg;base64,` URL of the frames' base64 joined by commas.
fn video_part(b: &MmBucket, rng: &mut StdRng) -> Result<Part, MediaError> {
    let (width, height) = (b.width, b.height);
    let fail = |why: String| MediaError::Encode { width, height, why };
    let engine = base64::engine::general_purpose::STANDARD;
    let mut pixels = vec![0u8; (width * height * 3) as usize];
    let mut jpeg = Vec::new();
    let mut url = String::from("data:video/jpeg;base64,");
    for i in 0..b.num_frames {
        if i > 0 {
            url.push(',');
        }
        rng.fill_bytes(&mut pixels);
        jpeg.clear();
        let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, FRAME_QUALITY);
        let (w, h) = (u32::try_from(width), u32::try_from(height));
        let (Ok(w), Ok(h)) = (w, h) else {
            return Err(fail("too large".into()));
        };
        (enc.encode(&pixels, w, h, image::ColorType::Rgb8)).map_err(|e| fail(e.to_string()))?;
        engine.encode_string(&jpeg, &mut url);
    }
    let frames = u32::try_from(b.num_frames).unwrap_or(u32::MAX);
    Ok(Part::Video { url, frames })
}

/// 8-bit RGB `pixels` as a PNG file.
pub fn encode_png(width: u64, height: u64, pixels: &[u8]) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::with_capacity(pixels.len() + pixels.len() / 64 + 1024);
    let (w, h) = (
        u32::try_from(width).unwrap_or(u32::MAX),
        u32::try_from(height).unwrap_or(u32::MAX),
    );
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    enc.set_filter(png::FilterType::NoFilter);
    let mut writer = enc.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(out)
}

/// An image file (a jsonl line's `image_files`) as a base64 `data:` URL: a regular file of at
/// most `max` bytes (`media_file.rs`), its type from its first bytes (PNG or JPEG); the error says what is wrong.
pub fn image_file_url(path: &std::path::Path, max: u64) -> Result<String, ImageFileError> {
    let bytes = media_file::read(path, max)?;
    let mime = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "image/jpeg"
    } else {
        return Err(ImageFileError::NotAnImage);
    };
    let engine = base64::engine::general_purpose::STANDARD;
    let mut url = format!("data:{mime};base64,");
    engine.encode_string(&bytes, &mut url);
    Ok(url)
}

/// A PNG file as a `data:image/png;base64,` URL.
pub fn png_data_url(png: &[u8]) -> String {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut url = String::with_capacity(22 + png.len().div_ceil(3) * 4);
    url.push_str("data:image/png;base64,");
    engine.encode_string(png, &mut url);
    url
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::media::MmLimit;

    fn spec(buckets: Vec<MmBucket>, base: u64, r: f64, limit: u64) -> MmSpec {
        MmSpec {
            base_items: base,
            items_range_ratio: r,
            limit: MmLimit {
                image: limit,
                video: 0,
            },
            buckets,
        }
    }

    fn bucket(height: u64, width: u64, probability: f64) -> MmBucket {
        MmBucket {
            height,
            width,
            num_frames: 1,
            probability,
        }
    }

    /// The PNG's size, read back from its IHDR chunk.
    fn png_size(url: &str) -> (u32, u32) {
        let b64 = url.strip_prefix("data:image/png;base64,").unwrap();
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        let be = |i: usize| u32::from_be_bytes([png[i], png[i + 1], png[i + 2], png[i + 3]]);
        (be(16), be(20))
    }

    /// The item counts stay in vLLM's range and under the limit, each image has
    /// its bucket's size (width × height from (height, width, frames)), every image differs,
    /// and the same seed makes the same images.
    #[test]
    fn random_mm_images_follow_the_buckets_range_and_limit() {
        let mm = spec(vec![bucket(16, 32, 1.0), bucket(8, 8, 3.0)], 2, 1.0, 3);
        let mut reqs = vec![RequestSpec::default(); 200];
        let made = attach(&mut reqs, &mm, 7).unwrap();
        let counts: Vec<usize> = reqs.iter().map(|r| r.parts.len()).collect();
        assert!(counts.iter().all(|&c| c <= 3));
        for c in 0..=3 {
            assert!(counts.contains(&c), "{c} images never drawn");
        }
        let mut sizes = std::collections::BTreeMap::new();
        let mut urls = std::collections::HashSet::new();
        for p in reqs.iter().flat_map(|r| &r.parts) {
            let Part::Image { url } = p else {
                panic!("an image")
            };
            *sizes.entry(png_size(url)).or_insert(0u32) += 1;
            assert!(urls.insert(url.clone()), "two images alike");
        }
        assert_eq!(
            sizes.keys().copied().collect::<Vec<_>>(),
            [(8, 8), (32, 16)]
        );
        let (small, wide) = (sizes[&(8, 8)], sizes[&(32, 16)]);
        assert!(small > 2 * wide, "weights 3:1, got {small}:{wide}");
        assert_eq!(made.images, u64::from(small + wide));
        let mut again = vec![RequestSpec::default(); 200];
        attach(&mut again, &mm, 7).unwrap();
        assert_eq!(again, reqs);
    }

    /// A bucket of more frames is a video: a `video/jpeg` frame list of its
    /// bucket's frames, each a JPEG of its size; each modality stays under its limit (three
    /// items, at most two images and one video: always two and one).
    #[test]
    fn random_mm_videos_are_jpeg_frame_lists_under_their_limit() {
        use image::ImageDecoder;
        let video = MmBucket {
            num_frames: 4,
            ..bucket(16, 32, 1.0)
        };
        let mut mm = spec(vec![bucket(8, 8, 1.0), video], 3, 0.0, 2);
        mm.limit.video = 1;
        let mut reqs = vec![RequestSpec::default(); 20];
        let made = attach(&mut reqs, &mm, 3).unwrap();
        assert_eq!((made.images, made.videos, made.frames), (40, 20, 80));
        let engine = base64::engine::general_purpose::STANDARD;
        for r in &reqs {
            let videos: Vec<_> = (r.parts.iter())
                .filter_map(|p| match p {
                    Part::Video { url, frames } => Some((url, *frames)),
                    _ => None,
                })
                .collect();
            assert_eq!((r.parts.len(), videos.len()), (3, 1));
            let (url, frames) = videos[0];
            let list = url.strip_prefix("data:video/jpeg;base64,").unwrap();
            let each: Vec<&str> = list.split(',').collect();
            assert_eq!((each.len(), frames), (4, 4));
            for f in each {
                let jpeg = engine.decode(f).unwrap();
                let dec = image::codecs::jpeg::JpegDecoder::new(&jpeg[..]).unwrap();
                assert_eq!(dec.dimensions(), (32, 16));
            }
        }
    }

    /// The estimate an item's bytes are refused by before it is made is never below what
    /// it comes to, for images and for videos, small and large.
    #[test]
    fn an_item_s_bytes_are_never_more_than_estimated() {
        let mut rng = StdRng::seed_from_u64(5);
        for (h, w, frames) in [
            (1, 1, 1),
            (8, 8, 1),
            (300, 200, 1),
            (720, 1280, 1),
            (8, 8, 2),
            (64, 48, 3),
            (720, 1280, 2),
        ] {
            let b = MmBucket {
                height: h,
                width: w,
                num_frames: frames,
                probability: 1.0,
            };
            let made = if b.is_video() {
                video_part(&b, &mut rng).unwrap()
            } else {
                Part::Image {
                    url: image_url(w, h, &mut rng).unwrap(),
                }
            };
            let (got, est) = (made.bytes(), b.item_bytes());
            eprintln!(
                "{h}x{w}x{frames}: {got} of {est}, {:.3} a pixel",
                got as f64 / (h * w * frames) as f64
            );
            assert!(got <= est, "{h}x{w}x{frames}: {got} > {est}");
        }
    }

    /// A run whose items would hold more than the bound is refused by their sizes before a
    /// pixel is made: 2,000 requests of a 2048 × 2048 image (about 17 MB each as sent) are
    /// refused at once, and no request was given a part (the refusal once came after 2 GiB
    /// of images were made).
    #[test]
    fn random_mm_over_the_bound_is_refused_before_anything_is_made() {
        let mm = spec(vec![bucket(2048, 2048, 1.0)], 1, 0.0, 1);
        let mut reqs = vec![RequestSpec::default(); 2000];
        let e = attach(&mut reqs, &mm, 1).unwrap_err().to_string();
        assert!(e.contains("2000 requests") && !e.contains('\n'), "{e}");
        assert!(reqs.iter().all(|r| r.parts.is_empty()), "nothing made");
    }

    #[test]
    fn random_mm_fixed_count_without_a_range() {
        let mm = spec(vec![bucket(4, 4, 1.0)], 2, 0.0, 255);
        let mut reqs = vec![RequestSpec::default(); 5];
        attach(&mut reqs, &mm, 1).unwrap();
        assert!(reqs.iter().all(|r| r.parts.len() == 2));
    }
}
