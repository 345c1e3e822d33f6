//! WAV files: a clip's sample frames and rate read from its chunks ([`wav`]), a WAV file read
//! and checked whole ([`wav_file`]: a jsonl line's `audio`), and PCM samples written as one
//! ([`wav_bytes`]: the clips a transcription run makes, `audio.rs`).
//!
//! A leaf: the datasets (`dataset/jsonl.rs`) and the clip maker (`audio.rs`) both read and
//! write WAVs through it, and it imports neither. No clock here.

use std::time::Duration;

use base64::Engine;

use crate::config::audio::{MAX_WAV_CHANNELS, MAX_WAV_SECONDS, WAV_BITS, WAV_RATES_HZ};
use crate::workload::media_file::{self, MediaFileError};

/// What is wrong with a WAV file (the caller's error names the file).
#[derive(Debug, thiserror::Error)]
pub enum WavError {
    #[error(transparent)]
    File(#[from] MediaFileError),
    #[error("not a WAV file (no RIFF/WAVE header)")]
    NotWav,
    #[error("the WAV's data comes before its fmt chunk")]
    DataBeforeFmt,
    #[error("the WAV's fmt is {channels} channels of {bits} bits at {rate} Hz: give 1 to {MAX_WAV_CHANNELS} channels of {} to {} bits at {} to {} Hz", WAV_BITS.start(), WAV_BITS.end(), WAV_RATES_HZ.start(), WAV_RATES_HZ.end())]
    Fmt { channels: u64, bits: u64, rate: u64 },
    #[error("the WAV lasts {seconds} s, longer than {MAX_WAV_SECONDS} s")]
    TooLong { seconds: u64 },
    #[error("the WAV is cut short ({size} bytes of data announced, {present} present)")]
    CutShort { size: u64, present: u64 },
    #[error("the WAV has no data chunk")]
    NoData,
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

/// Reads a WAV's `fmt` and `data` chunks: `RIFF`/`WAVE`, a PCM-like `fmt` (a rate in
/// [`WAV_RATES_HZ`], 1 to [`MAX_WAV_CHANNELS`] channels of [`WAV_BITS`]) before a `data` chunk
/// whose announced bytes the file holds, of at most [`MAX_WAV_SECONDS`] (the simulator's
/// bound): a header is not believed past what a clip can be. The error says what is wrong.
pub fn wav(bytes: &[u8]) -> Result<Wav, WavError> {
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err(WavError::NotWav);
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
                let (channels, rate, bits) = fmt.ok_or(WavError::DataBeforeFmt)?;
                let frame = channels * bits.div_ceil(8);
                let plausible = WAV_RATES_HZ.contains(&rate)
                    && (1..=MAX_WAV_CHANNELS).contains(&channels)
                    && WAV_BITS.contains(&bits);
                if !plausible {
                    return Err(WavError::Fmt {
                        channels,
                        bits,
                        rate,
                    });
                }
                let present = (bytes.len() - i - 8) as u64;
                if size > present {
                    return Err(WavError::CutShort { size, present });
                }
                let clip = Wav {
                    frames: size / frame,
                    rate,
                };
                if clip.frames > MAX_WAV_SECONDS * rate {
                    return Err(WavError::TooLong {
                        seconds: clip.frames / rate,
                    });
                }
                return Ok(clip);
            }
            _ => {}
        }
        i = i.saturating_add(8 + (size + (size & 1)) as usize);
    }
    Err(WavError::NoData)
}

/// A WAV file (a jsonl line's `audio`) in base64 with its duration: read up to `max` bytes
/// and checked whole ([`wav`]); the error says what is wrong.
pub fn wav_file(path: &std::path::Path, max: u64) -> Result<(String, Duration), WavError> {
    let bytes = media_file::read(path, max)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A clip's duration is its frames over its rate; a file that is not a whole WAV is
    /// refused saying what is wrong.
    #[test]
    fn a_wav_is_read_whole_or_refused() {
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
        assert!(wav(&cut).unwrap_err().to_string().contains("cut short"));
        assert!(wav(b"ID3 an mp3")
            .unwrap_err()
            .to_string()
            .contains("not a WAV"));
        // A header that lies is refused, not believed: 20,000 samples at 1 Hz are not a
        // 20,000 s clip; no rate, channel count or sample size past what audio has; no clip
        // longer than the simulator takes.
        let fmt = |channels: u16, rate: u32, bits: u16, frames: u32| {
            let mut w = wav_bytes(&[], 16_000);
            w[22..24].copy_from_slice(&channels.to_le_bytes());
            w[24..28].copy_from_slice(&rate.to_le_bytes());
            w[34..36].copy_from_slice(&bits.to_le_bytes());
            let size = frames * u32::from(channels) * u32::from(bits).div_ceil(8);
            w[40..44].copy_from_slice(&size.to_le_bytes());
            w.resize(44 + size as usize, 0);
            wav(&w).map_err(|e| e.to_string())
        };
        assert_eq!(
            fmt(1, 8_000, 16, 80).unwrap().duration(),
            Duration::from_millis(10)
        );
        for (channels, rate, bits) in [
            (1, 1, 16),
            (1, 1_000_000, 16),
            (64, 16_000, 16),
            (1, 16_000, 4),
            (1, 16_000, 128),
        ] {
            let e = fmt(channels, rate, bits, 1).unwrap_err();
            assert!(
                e.contains("fmt") && e.contains("Hz"),
                "{channels} {rate} {bits}: {e}"
            );
        }
        let e = fmt(1, 500, 8, 500 * 3601).unwrap_err();
        assert!(e.contains("3601 s") && e.contains("3600"), "{e}");
        assert!(fmt(1, 500, 8, 500 * 3600).is_ok());
        let mut no_data = ok[..36].to_vec();
        no_data[4..8].copy_from_slice(&28u32.to_le_bytes());
        assert!(wav(&no_data)
            .unwrap_err()
            .to_string()
            .contains("no data chunk"));
    }
}
