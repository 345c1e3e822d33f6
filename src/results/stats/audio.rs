//! Audio in requests (docs/metrics.md, "Audio and transcriptions"), over the
//! successful requests that carried audio of known duration (a WAV clip's frames over its
//! rate, `RequestRecord::audio_duration_ns`): the audio seconds sent, per request, vLLM's
//! `rtfx` (audio seconds per second of the run) and each request's real-time factor (its
//! audio seconds per second of its E2EL).

use serde::{Deserialize, Serialize};

use super::distribution::{Distribution, NS_PER_S};
use super::samples::SampleSet;
use crate::measure::record::RequestRecord;

/// The audio figures of a run; absent from runs that sent no audio.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AudioSummary {
    /// Successful requests that carried audio.
    pub requests: u64,
    /// Σ their audio, seconds (vLLM's `input_audio_duration` summed).
    pub total_audio_s: f64,
    /// Audio per request, seconds.
    pub audio_s: Option<Distribution>,
    /// vLLM's `rtfx`: `total_audio_s` over the run's duration (audio seconds served per
    /// second).
    pub rtfx: f64,
    /// Each request's real-time factor: its audio seconds over its E2EL seconds.
    pub request_rtfx: Option<Distribution>,
}

impl AudioSummary {
    /// Its figures under their result keys (vLLM's `rtfx`, servebench's beside it).
    pub fn keys(&self) -> Vec<(String, serde_json::Value)> {
        use crate::config::figure::RunFigure as F;
        let rtf = self.request_rtfx.as_ref();
        let figures = [
            (F::TotalInputAudioS, Some(self.total_audio_s)),
            (F::Rtfx, Some(self.rtfx)),
            (F::MeanRequestRtfx, rtf.map(|d| d.mean)),
            (F::MedianRequestRtfx, rtf.map(|d| d.median)),
        ];
        let named = |(f, v): (F, Option<f64>)| Some((f.name().to_string(), v?.into()));
        figures.into_iter().filter_map(named).collect()
    }
}

/// Running sums over the successful requests that carried audio.
#[derive(Clone, Debug)]
pub(super) struct AudioSums {
    requests: u64,
    total_ns: u128,
    audio: SampleSet,
    rtf: SampleSet,
}

impl AudioSums {
    pub(super) fn new(set: impl Fn() -> SampleSet) -> AudioSums {
        AudioSums {
            requests: 0,
            total_ns: 0,
            audio: set(),
            rtf: set(),
        }
    }

    /// Adds a successful request whose E2EL (in the server's time) is `e2el_ns`.
    pub(super) fn add(&mut self, r: &RequestRecord, e2el_ns: u64) {
        let Some(ns) = r.audio_duration_ns else {
            return;
        };
        self.requests += 1;
        self.total_ns += u128::from(ns);
        self.audio.add(ns as f64 / NS_PER_S);
        if e2el_ns > 0 {
            self.rtf.add(ns as f64 / e2el_ns as f64);
        }
    }

    pub(super) fn merge(&mut self, o: AudioSums) {
        self.requests += o.requests;
        self.total_ns += o.total_ns;
        self.audio.merge(o.audio);
        self.rtf.merge(o.rtf);
    }

    /// `None` when no successful request carried audio; `duration_s` is the run's.
    pub(super) fn finish(self, ps: &[f64], duration_s: f64) -> Option<AudioSummary> {
        let total = self.total_ns as f64 / NS_PER_S;
        (self.requests > 0).then(|| AudioSummary {
            requests: self.requests,
            total_audio_s: total,
            audio_s: self.audio.finish(ps),
            rtfx: if duration_s > 0.0 {
                total / duration_s
            } else {
                0.0
            },
            request_rtfx: self.rtf.finish(ps),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(audio_ms: Option<u64>) -> RequestRecord {
        RequestRecord {
            audio_duration_ns: audio_ms.map(|ms| ms * 1_000_000),
            ..RequestRecord::default()
        }
    }

    /// Audio seconds summed and per request, `rtfx` over the run's duration,
    /// each request's real-time factor over its E2EL; a request without audio adds nothing.
    #[test]
    fn audio_figures_by_hand() {
        let mut a = AudioSums::new(SampleSet::default);
        a.add(&record(Some(5000)), 500_000_000);
        a.add(&record(None), 100_000_000);
        let mut b = AudioSums::new(SampleSet::default);
        b.add(&record(Some(1000)), 250_000_000);
        a.merge(b);
        let s = a.finish(&[99.0], 2.0).unwrap();
        assert_eq!(s.requests, 2);
        assert_eq!(s.total_audio_s, 6.0);
        assert_eq!(s.rtfx, 3.0);
        assert_eq!(s.audio_s.unwrap().mean, 3.0);
        let rtf = s.request_rtfx.unwrap();
        assert_eq!((rtf.min, rtf.max, rtf.mean), (4.0, 10.0, 7.0));
        assert!(AudioSums::new(SampleSet::default)
            .finish(&[], 1.0)
            .is_none());
    }
}
