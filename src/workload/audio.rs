//! Audio clips (issue 25 §3): a WAV file read and checked whole ([`wav_file`]: a jsonl line's
//! `audio`), and the seeded clips a transcription run makes (`--backend openai-audio`,
//! `--dataset-name random`; [`attach`]): 16 kHz mono 16-bit PCM of `--audio-duration-s`, a
//! tone of a seeded pitch (200-1000 Hz) under seeded noise, so no two clips are alike and no
//! server cache answers one from another. Each clip travels as an audio [`Part`] (base64,
//! format `wav`) with its duration: the WAV's sample frames over its rate.
//!
//! Built with the requests, before the load starts (every clip is in memory at once, so the
//! total is bounded by [`MAX_MM_BYTES`] as they are made); reproducible from the seed. No
//! clock here.

use std::f64::consts::TAU;
use std::time::Duration;

use base64::Engine;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::config::audio::AUDIO_SAMPLE_RATE;
use crate::config::media::MAX_MM_BYTES;
use crate::measure::client::{Part, RequestSpec};

/// Why a run's clips could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    #[error("openai-audio: the clips of {requests} requests would hold more than {MAX_MM_BYTES} bytes in memory; ask for fewer requests (--num-prompts) or shorter clips (--audio-duration-s)")]
    TooLarge { requests: usize },
}

/// A WAV's sample frames and rate, read from its `fmt` and `data` chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wav {
    pub frames: u64,
    pub rate: u64,
}

impl Wav {
    /// The clip's duration: its frames over its rate (to the nanosecond).
    pub fn duration(self) -> Duration {
        let ns = u128::from(self.frames) * 1_000_000_000 / u128::from(self.rate.max(1));
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// Reads a WAV's `fmt` and `data` chunks: `RIFF`/`WAVE`, a PCM-like `fmt` (a rate and a frame
/// size above zero) before a `data` chunk whose announced bytes the file holds; the error
/// says what is wrong.
pub fn wav(bytes: &[u8]) -> Result<Wav, String> {
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err("not a WAV file (no RIFF/WAVE header)".into());
    }
    let le16 = |i: usize| u64::from(u16::from_le_bytes([bytes[i], bytes[i + 1]]));
    let le32 = |i: usize| {
        let b = [bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]];
        u64::from(u32::from_le_bytes(b))
    };
    let (mut i, mut fmt) = (12usize, None);
    while i + 8 <= bytes.len() {
        let size = le32(i + 4);
        match &bytes[i..i + 4] {
            b"fmt " if i + 24 <= bytes.len() => {
                fmt = Some((le16(i + 10), le32(i + 12), le16(i + 22)));
            }
            b"data" => {
                let (channels, rate, bits) =
                    fmt.ok_or("the WAV's data comes before its fmt chunk")?;
                let frame = channels * bits.div_ceil(8);
                if rate == 0 || frame == 0 {
                    return Err(format!(
                        "the WAV's fmt is {channels} channels of {bits} bits at {rate} Hz"
                    ));
                }
                let present = (bytes.len() - i - 8) as u64;
                if size > present {
                    return Err(format!(
                        "the WAV is cut short ({size} bytes of data announced, {present} present)"
                    ));
                }
                return Ok(Wav {
                    frames: size / frame,
                    rate,
                });
            }
            _ => {}
        }
        i = i.saturating_add(8 + (size + (size & 1)) as usize);
    }
    Err("the WAV has no data chunk".into())
}

/// A WAV file (a jsonl line's `audio`) in base64 with its duration: read up to `max` bytes
/// and checked whole ([`wav`]); the error says what is wrong.
pub fn wav_file(path: &std::path::Path, max: u64) -> Result<(String, Duration), String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    (file.take(max + 1).read_to_end(&mut bytes)).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("larger than {max} bytes"));
    }
    let clip = wav(&bytes)?;
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok((data, clip.duration()))
}

/// `samples` of 16-bit mono PCM at `rate` Hz as a WAV file.
pub fn wav_bytes(samples: &[i16], rate: u32) -> Vec<u8> {
    let data = u32::try_from(samples.len() * 2).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(44 + samples.len() * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&data.saturating_add(36).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&[1, 0, 1, 0]);
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&[2, 0, 16, 0]);
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data.to_le_bytes());
    for s in samples {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
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

    /// Issue 25 §3: a clip's duration is its frames over its rate; a file that is not a
    /// whole WAV is refused saying what is wrong.
    #[test]
    fn issue_25_a_wav_is_read_whole_or_refused() {
        let ok = wav_bytes(&[0i16; 24_000], 16_000);
        let w = wav(&ok).unwrap();
        assert_eq!(
            w,
            Wav {
                frames: 24_000,
                rate: 16_000
            }
        );
        assert_eq!(w.duration(), Duration::from_millis(1500));
        let mut cut = ok.clone();
        cut.truncate(cut.len() - 10);
        assert!(wav(&cut).unwrap_err().contains("cut short"));
        assert!(wav(b"ID3 an mp3").unwrap_err().contains("not a WAV"));
        let mut no_data = ok[..36].to_vec();
        no_data[4..8].copy_from_slice(&28u32.to_le_bytes());
        assert!(wav(&no_data).unwrap_err().contains("no data chunk"));
    }

    /// Issue 25 §3: each request gets one clip of the asked duration, reproducible from the
    /// seed, clips differing from each other.
    #[test]
    fn issue_25_synthetic_clips_are_seeded_and_of_the_asked_duration() {
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
}
