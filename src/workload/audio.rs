//! Audio clips: the seeded clips a transcription run makes (`--backend openai-audio`,
//! `--dataset-name random`; [`attach`]): 16 kHz mono 16-bit PCM of `--audio-duration-s`, a
//! tone of a seeded pitch (200-1000 Hz) under seeded noise, so no two clips are alike and no
//! server cache answers one from another. Each clip travels as an audio [`Part`] (base64,
//! format `wav`) with its duration: the WAV's sample frames over its rate.
//!
//! Built with the requests, before the load starts (every clip is in memory at once, so the
//! total is bounded by [`MAX_MM_BYTES`], from the clips' duration before one is made); reproducible from the seed. No
//! clock here. Reading and writing WAV files is `wav.rs`'s.

use std::f64::consts::TAU;
use std::time::Duration;

use base64::Engine;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::config::audio::AUDIO_SAMPLE_RATE;
use crate::config::media::MAX_MM_BYTES;
use crate::measure::client::{Part, RequestSpec};
pub use crate::workload::wav::{wav_bytes, Wav};

/// Why a run's clips could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    #[error("openai-audio: the clips of {requests} requests would hold more than {MAX_MM_BYTES} bytes in memory; ask for fewer requests (--num-prompts) or shorter clips (--audio-duration-s)")]
    TooLarge { requests: usize },
}

/// A clip of `duration` of silence at [`AUDIO_SAMPLE_RATE`] (the pre-flight request's).
pub fn silence(duration: Duration) -> Part {
    let frames = duration.as_nanos() * u128::from(AUDIO_SAMPLE_RATE) / 1_000_000_000;
    let wav = wav_bytes(&vec![0; frames as usize], AUDIO_SAMPLE_RATE);
    Part::Audio {
        data: base64::engine::general_purpose::STANDARD.encode(wav),
        format: "wav".into(),
        duration,
    }
}

/// One seeded clip of `frames` samples at [`AUDIO_SAMPLE_RATE`]: a tone of a drawn pitch
/// at a third of full scale under noise at a twentieth.
fn clip(frames: u64, rng: &mut StdRng) -> Vec<u8> {
    let rate = f64::from(AUDIO_SAMPLE_RATE);
    let pitch = 200.0 + 800.0 * rng.random::<f64>();
    let samples: Vec<i16> = (0..frames)
        .map(|n| {
            let tone = (TAU * pitch * n as f64 / rate).sin() / 3.0;
            let noise = (rng.random::<f64>() * 2.0 - 1.0) / 20.0;
            ((tone + noise) * f64::from(i16::MAX)) as i16
        })
        .collect();
    wav_bytes(&samples, AUDIO_SAMPLE_RATE)
}

/// A transcription run's requests from `--dataset-name random` (`--backend openai-audio`):
/// each a clip of `duration` alone (its random text is not sent: a Whisper prompt is a hint,
/// not an input to measure), seeded by `seed`; the bytes of the clips made.
pub fn transcribe(
    requests: &mut [RequestSpec],
    duration: Duration,
    seed: u64,
) -> Result<u64, AudioError> {
    for r in requests.iter_mut() {
        r.prompt.clear();
        r.input_len = Some(0);
    }
    attach(requests, duration, seed)
}

/// Gives each request one clip of `duration` (whole sample frames at 16 kHz), seeded by
/// `seed`; the bytes of the clips made.
pub fn attach(
    requests: &mut [RequestSpec],
    duration: Duration,
    seed: u64,
) -> Result<u64, AudioError> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xA0D1_05EE_D0C1_1950);
    let frames = (duration.as_nanos() * u128::from(AUDIO_SAMPLE_RATE) / 1_000_000_000) as u64;
    let made = Wav {
        frames,
        rate: u64::from(AUDIO_SAMPLE_RATE),
    };
    let n = requests.len();
    // Every clip's bytes are known from its duration: a run over the bound is refused
    // before one is made.
    let each = (44 + 2 * frames).div_ceil(3) * 4;
    if each.saturating_mul(n as u64) > MAX_MM_BYTES {
        return Err(AudioError::TooLarge { requests: n });
    }
    let mut bytes = 0u64;
    let engine = base64::engine::general_purpose::STANDARD;
    for r in requests.iter_mut() {
        let data = engine.encode(clip(frames, &mut rng));
        bytes += data.len() as u64;
        if bytes > MAX_MM_BYTES {
            return Err(AudioError::TooLarge { requests: n });
        }
        r.parts.push(Part::Audio {
            data,
            format: "wav".into(),
            duration: made.duration(),
        });
    }
    Ok(bytes)
}

/// A transcription run from a jsonl file (`--backend openai-audio`): every request holds
/// exactly one clip, or the first line that names none or several is refused by its number,
/// before the load (the client's per-request refusal stays the last line of defence).
pub fn one_clip_each<'a>(
    mut requests: impl Iterator<Item = &'a RequestSpec>,
    jsonl: &std::path::Path,
) -> Result<(), crate::workload::dataset::DatasetError> {
    let clips = |r: &RequestSpec| {
        (r.parts.iter())
            .filter(|p| matches!(p, Part::Audio { .. }))
            .count()
    };
    if requests.all(|r| clips(r) == 1) {
        return Ok(());
    }
    crate::workload::dataset::one_clip_per_line(jsonl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::wav::wav;

    /// Each request gets one clip of the asked duration, reproducible from the seed, clips
    /// differing from each other (no server cache answers one from another).
    #[test]
    fn synthetic_clips_are_seeded_and_of_the_asked_duration() {
        let mut a = vec![RequestSpec::default(); 3];
        let mut b = vec![RequestSpec::default(); 3];
        let d = Duration::from_millis(250);
        let bytes = attach(&mut a, d, 7).unwrap();
        attach(&mut b, d, 7).unwrap();
        assert_eq!(a, b, "reproducible");
        let engine = base64::engine::general_purpose::STANDARD;
        let mut seen = Vec::new();
        for r in &a {
            let [Part::Audio {
                data,
                format,
                duration,
            }] = r.parts.as_slice()
            else {
                panic!("one clip: {:?}", r.parts.len());
            };
            assert_eq!((format.as_str(), *duration), ("wav", d));
            let raw = engine.decode(data).unwrap();
            assert_eq!(
                wav(&raw).unwrap(),
                Wav {
                    frames: 4000,
                    rate: 16_000
                }
            );
            assert!(!seen.contains(data), "clips differ");
            seen.push(data.clone());
        }
        assert_eq!(bytes, 3 * ((44 + 8000usize).div_ceil(3) * 4) as u64);
    }

    /// Clips over the bound are refused by their duration before one is made.
    #[test]
    fn clips_over_the_bound_are_refused_before_one_is_made() {
        let mut reqs = vec![RequestSpec::default(); 200];
        let e = attach(&mut reqs, Duration::from_secs(600), 1).unwrap_err();
        assert!(e.to_string().contains("200 requests"), "{e}");
        assert!(reqs.iter().all(|r| r.parts.is_empty()), "nothing made");
    }
}
