//! WAV files: a clip's sample frames and rate read from its chunks ([`wav`]), a WAV file read
//! and checked whole ([`wav_file`]: a jsonl line's `audio`), and PCM samples written as one
//! ([`wav_bytes`]: the clips a transcription run makes, `audio.rs`).
//!
//! A leaf: the datasets (`dataset/jsonl.rs`) and the clip maker (`audio.rs`) both read and
//! write WAVs through it, and it imports neither. No clock here.

use std::time::Duration;

use base64::Engine;

/// What is wrong with a WAV file (the caller's error names the file).
#[derive(Debug, thiserror::Error)]
pub enum WavError {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    #[error("not a WAV file (no RIFF/WAVE header)")]
    NotWav,
    #[error("the WAV's data comes before its fmt chunk")]
    DataBeforeFmt,
    #[error("the WAV's fmt is {channels} channels of {bits} bits at {rate} Hz")]
    Fmt { channels: u64, bits: u64, rate: u64 },
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

/// Reads a WAV's `fmt` and `data` chunks: `RIFF`/`WAVE`, a PCM-like `fmt` (a rate and a frame
/// size above zero) before a `data` chunk whose announced bytes the file holds; the error
/// says what is wrong.
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
                if rate == 0 || frame == 0 {
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
                return Ok(Wav {
                    frames: size / frame,
                    rate,
                });
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
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(WavError::Read)?;
    let mut bytes = Vec::new();
    (file.take(max + 1).read_to_end(&mut bytes)).map_err(WavError::Read)?;
    if bytes.len() as u64 > max {
        return Err(WavError::TooLarge(max));
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
        let mut no_data = ok[..36].to_vec();
        no_data[4..8].copy_from_slice(&28u32.to_le_bytes());
        assert!(wav(&no_data)
            .unwrap_err()
            .to_string()
            .contains("no data chunk"));
    }
}
