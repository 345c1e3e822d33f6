//! Transcriptions (`--backend openai-audio`, vLLM's name for Whisper's
//! `/v1/audio/transcriptions`, the backend whose row `takes_clip`): which datasets bring its audio, the synthetic
//! clips' length (`--audio-duration-s`) and format, and their bounds. Pure values, no I/O:
//! `workload::audio` makes and reads the clips, `measure::client` sends them.
//!
//! A transcription request carries one WAV clip: a jsonl line's `audio` file, or with
//! `--dataset-name random` a seeded clip of `--audio-duration-s` made before the load.

use std::time::Duration;

use super::backend::{names_where, BackendKind};
use super::error::{ConfigError, ValueError};
use super::workload::Dataset;

/// `--audio-duration-s` when not given: a short utterance.
pub const DEFAULT_AUDIO_DURATION: Duration = Duration::from_secs(5);
/// The longest synthetic clip: 10 minutes, 19.2 MB at 16 kHz 16-bit mono, under the 25 MB
/// OpenAI's and vLLM's transcription endpoints take by default.
pub const MAX_AUDIO_DURATION: Duration = Duration::from_secs(600);
/// The shortest synthetic clip: one 10 ms frame of a Whisper-style encoder.
pub const MIN_AUDIO_DURATION: Duration = Duration::from_millis(10);
/// The synthetic clips' sample rate (Whisper's), Hz; mono, 16-bit PCM.
pub const AUDIO_SAMPLE_RATE: u32 = 16_000;

/// The longest WAV clip read from a file (a jsonl line's `audio`), seconds: an hour, the
/// longest the built-in simulator takes.
pub const MAX_WAV_SECONDS: u64 = 3600;
/// The sample rates a WAV file read may have, Hz: telephone speech (8 kHz) down to a
/// sixteenth of it, studio audio (384 kHz) up to twice it; a rate outside is a header that
/// lies (1 Hz made a 20,000 s clip of 20,000 samples).
pub const WAV_RATES_HZ: std::ops::RangeInclusive<u64> = 500..=768_000;
/// The most channels of a WAV file read (7.1 surround is 8).
pub const MAX_WAV_CHANNELS: u64 = 32;
/// The sample sizes of a WAV file read, bits: 8-bit to 64-bit float.
pub const WAV_BITS: std::ops::RangeInclusive<u64> = 8..=64;

/// The rules between `--backend openai-audio`, the dataset and `--audio-duration-s`: a
/// transcription needs a dataset that brings audio (`random` makes clips, `jsonl` reads its
/// lines' `audio` files); the flag only where clips are made, within its bounds.
pub fn check(
    backend: BackendKind,
    dataset: &Dataset,
    duration: Option<Duration>,
) -> Result<(), ConfigError> {
    let bad = |option: &str, why: String| Err(ConfigError::invalid(option, why));
    let audio = backend.takes_clip();
    let makes = matches!(dataset, Dataset::Random { .. });
    if audio && !(makes || matches!(dataset, Dataset::Jsonl { .. })) {
        let why = format!(
            "--backend {} sends a WAV clip per request: use random (seeded clips of --audio-duration-s) or jsonl (each line's \"audio\" file), not {}",
            backend.as_str(),
            dataset.name()
        );
        return bad("--dataset-name", why);
    }
    let Some(d) = duration else {
        return Ok(());
    };
    if !(audio && makes) {
        let why = format!(
            "the synthetic clips' length: only with --backend {} and --dataset-name random",
            names_where(|i| i.takes_clip, " or ")
        );
        return bad("--audio-duration-s", why);
    }
    if !(MIN_AUDIO_DURATION..=MAX_AUDIO_DURATION).contains(&d) {
        let why = format!(
            "{} s: give {} to {} seconds",
            d.as_secs_f64(),
            MIN_AUDIO_DURATION.as_secs_f64(),
            MAX_AUDIO_DURATION.as_secs()
        );
        return bad("--audio-duration-s", why);
    }
    Ok(())
}

/// `--audio-duration-s`'s value: a positive number of seconds (a fraction allowed), as a
/// `Duration` (its bounds are [`check`]'s, which names them); the error says what is wrong.
pub fn parse_seconds(s: &str) -> Result<Duration, ValueError> {
    let v: f64 = (s.trim().parse()).map_err(|_| ValueError::Seconds(s.to_string()))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(ValueError::SecondsNotPositive(s.to_string()));
    }
    Duration::try_from_secs_f64(v).map_err(|_| ValueError::SecondsTooLong(s.to_string()))
}

/// Serde for `Option<Duration>` as seconds (`audio_duration_s` in saved configs).
pub mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let v: Option<f64> = Option::deserialize(d)?;
        v.map(|v| Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn random() -> Dataset {
        Dataset::Random {
            input_len: 8,
            output_len: None,
            range_ratio: 0.0,
        }
    }

    /// openai-audio takes random (clips made) or jsonl (files read); the clips' length only
    /// where clips are made, within its bounds; each refusal names its flag.
    #[test]
    fn transcriptions_take_a_dataset_that_brings_audio() {
        let audio = BackendKind::OpenaiAudio;
        let jsonl = Dataset::Jsonl {
            path: PathBuf::from("a.jsonl"),
            output_len: None,
        };
        assert!(check(audio, &random(), None).is_ok());
        assert!(check(audio, &random(), Some(Duration::from_secs(30))).is_ok());
        assert!(check(audio, &jsonl, None).is_ok());
        assert!(check(BackendKind::OpenaiChat, &jsonl, None).is_ok());
        let named = |r: Result<(), ConfigError>, flag: &str, what: &str| {
            let msg = r.unwrap_err().to_string();
            assert!(msg.contains(flag) && msg.contains(what), "{msg}");
        };
        let book = Dataset::Book {
            path: PathBuf::from("b.txt"),
            input_len: 8,
            output_len: None,
            range_ratio: 0.0,
        };
        named(check(audio, &book, None), "--dataset-name", "not book");
        let one = Some(Duration::from_secs(1));
        named(check(audio, &jsonl, one), "--audio-duration-s", "random");
        named(
            check(BackendKind::OpenaiChat, &random(), one),
            "--audio-duration-s",
            "openai-audio",
        );
        let long = Some(Duration::from_secs(601));
        named(check(audio, &random(), long), "--audio-duration-s", "601");
        assert_eq!(parse_seconds("2.5").unwrap(), Duration::from_millis(2500));
        assert!(
            parse_seconds("601").is_ok(),
            "bounded by check, which names the bounds"
        );
        for bad in ["0", "-1", "nan", "inf", "x", "1e300"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
