//! Transcriptions (`--backend openai-audio`, vLLM's name for Whisper's
//! `/v1/audio/transcriptions`), over real HTTP on 127.0.0.1 against the built-in simulator,
//! which reads the multipart form, counts the clip's tokens by its duration
//! (`ceil(seconds · 25) + 2`, beside the prompt field's words) and answers in exact mode `ttft`
//! after the request's last byte: the prompt tokens, the audio seconds and vLLM's `rtfx`
//! servebench reports equal the truth, TTFT less the upload is the simulator's `ttft` within
//! 1 ms, and bad input is a one-line error or a failed record naming its cause.

use crate::common;

use common::{exact_sim, run_config, servebench, EXACT_TTFT_MS as TTFT_MS};

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use servebench::config::{BackendKind, Dataset, Metric, RequestRate, RunConfig, WorkloadSpec};
use servebench::measure::record::{FailureKind, Outcome, TokenSource};

/// A WAV file's bytes: `frames` of 16-bit mono at `rate` Hz (a quiet ramp), by the library's
/// own writer.
fn wav(frames: u32, rate: u32) -> Vec<u8> {
    let samples: Vec<i16> = (0..frames).map(|i| (i % 512) as i16).collect();
    servebench::workload::audio::wav_bytes(&samples, rate)
}

/// The simulator's audio rule for a clip of `frames` at `rate`.
fn rule(frames: u64, rate: u64) -> u64 {
    (frames * 25).div_ceil(rate) + 2
}

/// `n` transcriptions of `dataset`, `conc` at a time, 4 tokens each.
fn config(base_url: String, n: u64, dataset: Dataset, tokenizer: Option<&str>) -> RunConfig {
    let mut cfg = run_config(base_url, BackendKind::OpenaiAudio, n, 2, 0, 0);
    cfg.load.request_rate = RequestRate::PerSecond(20.0);
    cfg.load.timeout_s = 60.0;
    cfg.workload = WorkloadSpec {
        dataset,
        tokenizer: tokenizer.map(str::to_string),
    };
    cfg.percentile_metrics = vec![Metric::Ttft, Metric::E2el];
    cfg
}

/// A jsonl file of three clips (1.5 s and 2 s at 16 kHz, 0.75 s at 8 kHz), the first with a
/// prompt of three words (three cl100k tokens).
fn clips(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("a.wav"), wav(24_000, 16_000)).unwrap();
    std::fs::write(dir.join("b.wav"), wav(32_000, 16_000)).unwrap();
    std::fs::write(dir.join("c.wav"), wav(6_000, 8_000)).unwrap();
    let jsonl = dir.join("clips.jsonl");
    std::fs::write(
        &jsonl,
        "{\"prompt\": \"listen to this\", \"audio\": \"a.wav\"}\n{\"audio\": \"b.wav\"}\n{\"audio\": [\"c.wav\"]}\n",
    )
    .unwrap();
    jsonl
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Against the exact simulator every transcription figure is its truth — each
/// request's prompt tokens are its clip's audio rule (plus its prompt's words), its audio
/// seconds its clip's exactly, the run's audio seconds their sum and vLLM's `rtfx` that over
/// the duration — and TTFT less the upload is the simulator's `ttft` within 1 ms (median, on
/// the best of 3 runs: a busy machine delays some reads).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcriptions_against_the_exact_simulator_equal_their_truth() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = clips(dir.path());
    // (audio ns, text tokens, prompt tokens) of each line, in order.
    let truth = [
        (1_500_000_000u64, 3u64, 3 + rule(24_000, 16_000)),
        (2_000_000_000, 0, rule(32_000, 16_000)),
        (750_000_000, 0, rule(6_000, 8_000)),
    ];
    assert_eq!(
        truth.map(|t| t.2),
        [3 + 40, 52, 21],
        "the rule by hand: ceil(1.5·25)+2, 2·25+2, ceil(0.75·25)+2"
    );
    let n = 9u64;
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let server = exact_sim().await;
        let run_dir = tempfile::tempdir().unwrap();
        let dataset = Dataset::Jsonl {
            path: jsonl.clone(),
            output_len: Some(4),
        };
        let cfg = config(server.base_url(), n, dataset, Some("cl100k_base"));
        let (result, records) = common::execute(cfg, run_dir.path(), "result.json", false).await;
        server.shutdown().await;

        let s = &result.summary;
        assert_eq!((s.completed, s.failed), (n, 0), "{:?}", s.failures_by_kind);
        assert_eq!(s.total_output_tokens, 4 * n);
        let mut net = Vec::new();
        let mut total_ns = 0;
        for r in &records {
            assert!(r.is_ok(), "{:?}", r.outcome);
            let (audio, text, prompt) = truth[(r.id % 3) as usize];
            assert_eq!(r.audio_duration_ns, Some(audio), "request {}", r.id);
            assert_eq!(r.audio_clips, Some(1));
            assert_eq!(r.input_len_requested, Some(text));
            assert_eq!(r.prompt_tokens_source, Some(TokenSource::ServerUsage));
            assert_eq!(r.prompt_tokens, Some(prompt), "request {}", r.id);
            assert_eq!(r.output_tokens, Some(4));
            total_ns += audio;
            let bytes = r.request_bytes.expect("bytes sent");
            assert!(bytes > audio / 1_000_000 * 16, "{bytes} bytes");
            let end = r.upload_end_ns.expect("upload timed");
            assert!(r.sent_ns <= end && end <= r.chunk_ns[0]);
            let ttft = ms(r.chunk_ns[0] - r.sent_ns);
            assert!(ttft >= TTFT_MS - 0.05, "TTFT {ttft} ms before the truth");
            net.push(ttft - ms(end - r.sent_ns));
        }
        let a = s.audio.as_ref().expect("audio figures");
        assert_eq!(a.requests, n);
        assert!((a.total_audio_s - total_ns as f64 / 1e9).abs() < 1e-9);
        assert!((a.rtfx - a.total_audio_s / s.duration_s).abs() < 1e-9);
        let m = s.media.as_ref().expect("media figures");
        assert_eq!(m.audio_clips, n);
        // The clips' building is reported (warm-ups' clips too).
        let g = m.generation.expect("the clips' building is reported");
        let clips_s = total_ns as f64 / 1e9;
        assert!(g.audio_clips >= n && g.audio_s >= clips_s - 1e-9, "{g:?}");
        // vLLM's key, and servebench's beside it.
        let doc: Value = common::json(&run_dir.path().join("result.json"));
        assert_eq!(doc["rtfx"].as_f64(), Some(a.rtfx));
        assert_eq!(doc["total_input_audio_s"].as_f64(), Some(a.total_audio_s));
        assert!(doc["median_request_rtfx"].as_f64().is_some_and(|v| v > 0.0));
        assert!(doc["mean_upload_ms"].is_number() && doc["mean_request_bytes"].is_number());
        net.sort_by(f64::total_cmp);
        let median = net[net.len() / 2];
        if (median - TTFT_MS).abs() <= 1.0 {
            return;
        }
        attempts.push(median);
    }
    panic!("TTFT less the upload off the truth ({TTFT_MS} ms) in every attempt: {attempts:?}");
}

/// `--dataset-name random` makes one seeded clip of `--audio-duration-s` per
/// request (its text not sent): 2.5 s at 16 kHz is ceil(62.5) + 2 = 65 prompt tokens each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_makes_clips_of_the_asked_duration() {
    let server = exact_sim().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(
        server.base_url(),
        4,
        Dataset::Random {
            input_len: 16,
            output_len: Some(3),
            range_ratio: 0.0,
        },
        None,
    );
    cfg.audio_duration = Some(Duration::from_millis(2500));
    let (result, records) = common::execute(cfg, dir.path(), "result.json", false).await;
    server.shutdown().await;
    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (4, 0), "{:?}", s.failures_by_kind);
    let mut bodies = Vec::new();
    for r in &records {
        assert_eq!(r.audio_duration_ns, Some(2_500_000_000));
        assert_eq!(
            (r.input_len_requested, r.prompt_tokens),
            (Some(0), Some(65))
        );
        bodies.push(r.request_bytes);
    }
    let a = s.audio.as_ref().unwrap();
    assert!((a.total_audio_s - 10.0).abs() < 1e-9);
    // The report's audio block; a run of clips alone says nothing of images.
    let report = servebench::render::report::text(&result);
    assert!(
        report.contains("Audio sent (s):") && report.contains("RTFx"),
        "{report}"
    );
    assert!(!report.to_lowercase().contains("image"), "{report}");
    // 80,000 bytes of samples and a 44-byte header, in a form of a few hundred bytes more.
    assert!(bodies
        .iter()
        .all(|b| b.is_some_and(|b| (80_044..81_024).contains(&b))));
}

/// A server that answers 400 is a failed record with its status and message;
/// the run saves its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_transcription_is_a_failed_record_with_its_cause() {
    let server = exact_sim().await;
    let dir = tempfile::tempdir().unwrap();
    let jsonl = clips(dir.path());
    let dataset = Dataset::Jsonl {
        path: jsonl,
        output_len: Some(4),
    };
    let mut cfg = config(server.base_url(), 3, dataset, Some("cl100k_base"));
    cfg.extra_body = Some(json!({"max_completion_tokens": 0}));
    let (result, records) = common::execute(cfg, dir.path(), "result.json", false).await;
    server.shutdown().await;
    assert_eq!((result.summary.completed, result.summary.failed), (0, 3));
    for r in &records {
        assert_eq!(r.http_status, Some(400));
        match &r.outcome {
            Outcome::Failed { kind, message } => {
                assert_eq!(*kind, FailureKind::HttpStatus);
                assert!(
                    message.contains("400") && message.contains("max_completion_tokens"),
                    "{message}"
                );
            }
            Outcome::Ok => panic!("a refused request counted as a success"),
        }
    }
}

/// Bad input is one line naming what is wrong, exit 2, before a request is
/// sent: a jsonl line's WAV that is missing or not a WAV (naming the file and its line), a
/// dataset that brings no audio, `--audio-duration-s` where no clip is made or out of bounds;
/// a jsonl line without audio, refused when the workload is built (not per request at send
/// time).
#[test]
fn bad_transcription_input_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = clips(dir.path());
    std::fs::write(dir.path().join("b.wav"), b"ID3 an mp3, not a wav").unwrap();
    std::fs::write(
        dir.path().join("missing.jsonl"),
        "{\"audio\": \"a.wav\"}\n{\"audio\": \"gone.wav\"}\n",
    )
    .unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let jsonl = jsonl.to_string_lossy().into_owned();
    let missing = path("missing.jsonl");
    let half = path("half.jsonl");
    std::fs::write(&half, "{\"audio\": \"a.wav\"}\n{\"prompt\": \"no clip\"}\n").unwrap();
    let cases: [(Vec<&str>, &[&str]); 7] = [
        (
            vec!["--dataset-name", "jsonl", "--dataset-path", &half],
            &["half.jsonl", "line 2", "\"audio\"", "openai-audio"],
        ),
        (
            vec!["--dataset-name", "jsonl", "--dataset-path", &jsonl],
            &["b.wav", "line 2", "not a WAV"],
        ),
        (
            vec!["--dataset-name", "jsonl", "--dataset-path", &missing],
            &["gone.wav", "line 2"],
        ),
        (
            vec!["--dataset-name", "prefix", "--prefix-len", "8"],
            &["--dataset-name", "openai-audio"],
        ),
        (
            vec![
                "--dataset-name",
                "jsonl",
                "--dataset-path",
                &jsonl,
                "--audio-duration-s",
                "3",
            ],
            &["--audio-duration-s", "random"],
        ),
        (
            vec!["--dataset-name", "random", "--audio-duration-s", "601"],
            &["--audio-duration-s", "601", "600"],
        ),
        (
            vec!["--dataset-name", "random", "--audio-duration-s", "0.001"],
            &["--audio-duration-s", "0.01 to 600"],
        ),
    ];
    for (args, says) in cases {
        let out = servebench()
            .args([
                "run",
                "--num-prompts",
                "2",
                "--quiet",
                "--sim-preset",
                "exact",
            ])
            .args(["--backend", "openai-audio", "--tokenizer", "cl100k_base"])
            .args(&args)
            .arg("--result-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        for s in says {
            assert!(err.contains(s), "{args:?}: {s}: {err}");
        }
    }
}
