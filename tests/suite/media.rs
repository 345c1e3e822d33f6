//! Images in chat (`--dataset-name random-mm`), over real HTTP on 127.0.0.1
//! against the built-in simulator, which counts each image's tokens by its patch rule
//! (`ceil(w/28)·ceil(h/28) + 2`) and answers in exact mode `ttft` after a request's last byte
//! arrives: the media tokens servebench reports equal the simulator's truth exactly, the
//! upload is timed apart from TTFT (TTFT less the upload is the simulator's `ttft` within
//! 1 ms), an engine preset prefills the images' tokens, and bad input is a named failure or a
//! one-line error, never a crash.

use crate::common;

use common::{exact_sim, path_str, run_config, servebench, stdout_of, EXACT_TTFT_MS as TTFT_MS};

use std::path::Path;

use serde_json::Value;
use servebench::config::media::{MmBucket, MmLimit, MmSpec};
use servebench::config::{BackendKind, Dataset, Metric, RequestRate, RunConfig, WorkloadSpec};
use servebench::drive::run::{execute, RunOptions};
use servebench::measure::client::Secrets;
use servebench::measure::record::{FailureKind, Outcome, RequestRecord, TokenSource};
use servebench::results::document::BenchResult;
use servebench::sim::{self, SimConfig};
use tokio_util::sync::CancellationToken;

/// A 256 × 256 image under the simulator's patch rule: ceil(256/28)² + 2.
const TOKENS_256: u64 = 10 * 10 + 2;

fn images(height: u64, width: u64, base: u64, range_ratio: f64) -> MmSpec {
    MmSpec {
        base_items: base,
        items_range_ratio: range_ratio,
        limit: MmLimit { image: 3, video: 0 },
        buckets: vec![MmBucket {
            height,
            width,
            num_frames: 1,
            probability: 1.0,
        }],
    }
}

/// `n` chat requests of 16 words and `mm`'s images, `conc` at a time.
fn config(base_url: String, n: u64, mm: MmSpec, conc: u64) -> RunConfig {
    let mut cfg = run_config(base_url, BackendKind::OpenaiChat, n, conc, 16, 4);
    cfg.load.request_rate = RequestRate::PerSecond(conc as f64 * 10.0);
    cfg.load.timeout_s = 60.0;
    cfg.workload = WorkloadSpec {
        dataset: Dataset::RandomMm {
            input_len: 16,
            output_len: Some(4),
            range_ratio: 0.0,
            mm,
        },
        tokenizer: None,
    };
    cfg.percentile_metrics = vec![Metric::Ttft, Metric::E2el];
    cfg
}

async fn run(cfg: RunConfig, dir: &Path) -> (BenchResult, Vec<RequestRecord>) {
    common::execute(cfg, dir, "result.json", false).await
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Against the exact simulator every media count is its truth — each request's
/// media tokens are 102 per 256 × 256 image (the server's prompt count less the text's 16
/// words), per image exactly 102, images and bytes as sent — and the upload is apart from
/// TTFT: never early, TTFT less the upload is the simulator's `ttft` within 1 ms (median, on
/// the best of 3 runs: a busy machine delays some reads).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_mm_against_the_exact_simulator_equals_its_truth() {
    let n = 12u64;
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let server = exact_sim().await;
        let dir = tempfile::tempdir().unwrap();
        let (result, records) = run(
            config(server.base_url(), n, images(256, 256, 2, 0.5), 3),
            dir.path(),
        )
        .await;
        server.shutdown().await;

        let s = &result.summary;
        assert_eq!((s.completed, s.failed), (n, 0), "{:?}", s.failures_by_kind);
        assert_eq!(s.input_len_disagreements, 0, "media is not a disagreement");
        let m = s.media.as_ref().expect("media figures");
        let sent: u64 = records
            .iter()
            .map(|r| u64::from(r.images.unwrap_or(0)))
            .sum();
        let with: u64 = records.iter().filter(|r| r.images.is_some()).count() as u64;
        assert_eq!((m.requests, m.images), (with, sent));
        assert!(records.iter().all(|r| r.images.unwrap_or(0) <= 3));
        assert_eq!(m.total_media_tokens, Some(sent * TOKENS_256));
        assert_eq!(m.media_tokens_per_image, Some(TOKENS_256 as f64));
        let g = m.generation.expect("the images' making is reported");
        assert!(g.images >= sent && g.bytes > 0 && g.seconds > 0.0, "{g:?}");
        let mut net = Vec::new();
        for r in &records {
            assert!(r.is_ok(), "{:?}", r.outcome);
            let Some(k) = r.images else { continue };
            assert_eq!(r.prompt_tokens_source, Some(TokenSource::ServerUsage));
            assert_eq!(r.input_len_requested, Some(16));
            assert_eq!(r.prompt_tokens, Some(16 + u64::from(k) * TOKENS_256));
            let bytes = r.request_bytes.expect("bytes sent");
            assert!(
                bytes > u64::from(k) * 256 * 256 * 3,
                "{bytes} bytes for {k} images"
            );
            let end = r.upload_end_ns.expect("upload timed");
            assert!(r.sent_ns <= end && end <= r.chunk_ns[0]);
            let ttft = ms(r.chunk_ns[0] - r.sent_ns);
            assert!(ttft >= TTFT_MS - 0.05, "TTFT {ttft} ms before the truth");
            net.push(ttft - ms(end - r.sent_ns));
        }
        // vLLM has no media keys: servebench's, beside its own.
        let doc: Value = common::json(&dir.path().join("result.json"));
        assert_eq!(doc["total_images"], sent);
        assert_eq!(doc["media_tokens_per_image"], TOKENS_256 as f64);
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

/// Videos: a bucket of 4 frames is a `video/jpeg` frame list the exact simulator
/// counts by its rule (frames in pairs: 2 · ceil(84/28) · ceil(56/28) + 2 = 14 tokens); with
/// an image bucket beside it and a limit of one of each, every request carries one image
/// (32 × 32: 6 tokens) and one video, and the counts are exact. An API without content parts
/// fails each request as `prompt`, naming the video.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_mm_videos_are_sent_and_counted_exactly() {
    const VIDEO_TOKENS: u64 = 2 * 3 * 2 + 2;
    const IMAGE_TOKENS: u64 = 2 * 2 + 2;
    let bucket = |height, width, num_frames| MmBucket {
        height,
        width,
        num_frames,
        probability: 1.0,
    };
    let server = exact_sim().await;
    let n = 6u64;
    let only_video = MmSpec {
        limit: MmLimit { image: 1, video: 1 },
        buckets: vec![bucket(56, 84, 4)],
        ..images(56, 84, 1, 0.0)
    };
    let both = MmSpec {
        base_items: 2,
        buckets: vec![bucket(32, 32, 1), bucket(56, 84, 4)],
        ..only_video.clone()
    };
    let dir = tempfile::tempdir().unwrap();
    let (result, records) = run(config(server.base_url(), n, only_video, 3), dir.path()).await;
    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (n, 0), "{:?}", s.failures_by_kind);
    for r in &records {
        assert_eq!((r.images, r.videos), (None, Some(1)));
        assert_eq!(r.prompt_tokens, Some(16 + VIDEO_TOKENS));
    }
    let m = s.media.as_ref().expect("media figures");
    assert_eq!((m.requests, m.images, m.videos), (n, 0, n));
    assert_eq!(m.media_tokens_per_video, Some(VIDEO_TOKENS as f64));
    let g = m.generation.expect("the videos' making is reported");
    assert_eq!((g.videos, g.video_frames, g.images), (n, 4 * n, 0));
    let doc: Value = common::json(&dir.path().join("result.json"));
    assert_eq!(doc["total_videos"], n);
    assert_eq!(doc["media_tokens_per_video"], VIDEO_TOKENS as f64);

    let dir = tempfile::tempdir().unwrap();
    let (result, records) = run(config(server.base_url(), n, both.clone(), 3), dir.path()).await;
    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (n, 0), "{:?}", s.failures_by_kind);
    for r in &records {
        assert_eq!((r.images, r.videos), (Some(1), Some(1)));
        assert_eq!(r.prompt_tokens, Some(16 + IMAGE_TOKENS + VIDEO_TOKENS));
    }
    let m = s.media.as_ref().unwrap();
    assert_eq!((m.images, m.videos), (n, n));
    assert_eq!(
        m.total_media_tokens,
        Some(n * (IMAGE_TOKENS + VIDEO_TOKENS))
    );

    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(server.base_url(), 2, both, 1);
    cfg.backend = BackendKind::Openai;
    cfg.endpoint = BackendKind::Openai.default_endpoint().into();
    let (result, records) = run(cfg, dir.path()).await;
    server.shutdown().await;
    assert_eq!(result.summary.failed, 2);
    for r in records {
        let Outcome::Failed { kind, message } = &r.outcome else {
            panic!("a video went to the completions API")
        };
        assert_eq!(*kind, FailureKind::Prompt);
        assert!(
            message.contains("an image") || message.contains("a video"),
            "{message}"
        );
    }
}

/// With an engine preset the images' tokens are prefilled: four 720 × 1280 images (4,792
/// tokens at 0.08 ms each, about 380 ms) make TTFT much longer than the same text alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_presets_prefill_the_images_tokens() {
    let cfg = SimConfig {
        usage: true,
        ..SimConfig::from_preset(sim::Preset::VllmLlama8bRtx4090)
    };
    let server = common::spawn_sim(cfg).await;
    let mut means = Vec::new();
    for base in [0, 4] {
        let dir = tempfile::tempdir().unwrap();
        let mm = MmSpec {
            limit: MmLimit { image: 4, video: 0 },
            ..images(720, 1280, base, 0.0)
        };
        let (result, records) = run(config(server.base_url(), 4, mm, 1), dir.path()).await;
        let s = &result.summary;
        assert_eq!(s.completed, 4, "{:?}", s.failures_by_kind);
        let want = (base > 0).then_some(base as u32);
        assert!(records.iter().all(|r| r.images == want));
        means.push(s.ttft_ms.as_ref().unwrap().mean);
    }
    server.shutdown().await;
    assert!(means[1] > means[0] + 150.0, "{means:?}");
}

/// An API that takes no content parts cannot carry an image: every request fails unsent as
/// `prompt`, naming the image; the run saves its result (no crash, nothing dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_for_an_api_without_content_parts_is_a_named_failure() {
    let server = exact_sim().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(server.base_url(), 4, images(32, 32, 1, 0.0), 2);
    cfg.backend = BackendKind::Openai;
    cfg.endpoint = BackendKind::Openai.default_endpoint().into();
    let opts = RunOptions::new(dir.path().join("result.json"), false);
    let result = execute(cfg, &Secrets::default(), &opts, CancellationToken::new())
        .await
        .expect("the run saves");
    server.shutdown().await;
    assert_eq!((result.summary.completed, result.summary.failed), (0, 4));
    for r in common::read_records(&opts.records_path) {
        match &r.outcome {
            Outcome::Failed { kind, message } => {
                assert_eq!(*kind, FailureKind::Prompt);
                assert!(message.contains("an image"), "{message}");
            }
            Outcome::Ok => panic!("an image went to the completions API"),
        }
    }
}

/// Bad random-mm flags are one line naming the flag, exit 2, before anything is made.
#[test]
fn bad_random_mm_flags_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let mm = ["--backend", "openai-chat", "--dataset-name", "random-mm"];
    let cases: [(&[&str], &str); 8] = [
        // One item over the run's bound, refused by its size before a pixel is made.
        (
            &["--random-mm-bucket-config", "{(4096, 4096, 100): 1}"],
            "bytes",
        ),
        // Weights whose sum is past what a number holds.
        (
            &[
                "--random-mm-bucket-config",
                "{(64, 64, 1): 1e308, (32, 32, 1): 1e308}",
            ],
            "add up",
        ),
        (
            &["--random-mm-bucket-config", "{(256, 256): 1}"],
            "--random-mm-bucket-config",
        ),
        (&["--random-mm-bucket-config", "{(0, 64, 1): 1}"], "audio"),
        (
            &["--random-mm-bucket-config", "{(64, 99999, 1): 1}"],
            "8192",
        ),
        (
            &[
                "--random-mm-limit-mm-per-prompt",
                r#"{"image": 1, "video": 0}"#,
                "--random-mm-base-items-per-request",
                "3",
            ],
            "--random-mm-limit-mm-per-prompt",
        ),
        (
            &["--random-mm-num-mm-items-range-ratio", "2"],
            "--random-mm-num-mm-items-range-ratio",
        ),
        (
            &["--random-mm-limit-mm-per-prompt", "{\"audio\": 1}"],
            "audio",
        ),
    ];
    for (args, named) in cases {
        let out = servebench()
            .args([
                "run",
                "--num-prompts",
                "2",
                "--quiet",
                "--sim-preset",
                "exact",
                "--result-dir",
            ])
            .arg(dir.path())
            .args(mm)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(named), "{args:?}: names {named}: {err}");
    }
    // A random-mm flag with another dataset is refused by name.
    let out = servebench()
        .args([
            "run",
            "--num-prompts",
            "2",
            "--quiet",
            "--random-mm-base-items-per-request",
            "2",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--random-mm-base-items-per-request") && err.contains("random-mm"),
        "{err}"
    );
}

/// The built-in simulator serves `run --dataset-name random-mm`; the text report prints the
/// "Images in chat" block, and the CSV and compare of the saved documents carry its figures.
#[test]
fn the_report_csv_and_compare_show_the_media_figures() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let out = servebench()
            .args([
                "run",
                "--backend",
                "openai-chat",
                "--sim-preset",
                "exact",
                "--no-tui",
            ])
            .args([
                "--dataset-name",
                "random-mm",
                "--input-len",
                "8",
                "--output-len",
                "4",
            ])
            .args(["--random-mm-base-items-per-request", "2"])
            .args(["--random-mm-bucket-config", "{(64, 96, 1): 1.0}"])
            .args(["--num-prompts", "6", "--max-concurrency", "2"])
            .args(["--result-filename", name, "--result-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let report = run("a.json");
    let value = |label: &str| {
        let line = report.lines().find(|l| l.starts_with(label));
        line.map(|l| l[label.len()..].trim().to_string())
    };
    // 96 × 64: ceil(96/28)·ceil(64/28) + 2 = 4·3 + 2 = 14 tokens an image.
    assert_eq!(value("Images sent:").as_deref(), Some("12"), "{report}");
    assert_eq!(
        value("Total media tokens:").as_deref(),
        Some("168"),
        "{report}"
    );
    assert_eq!(
        value("Media tokens per image (mean):").as_deref(),
        Some("14.00"),
        "{report}"
    );
    for label in [
        "Mean upload (ms):",
        "P99 upload (ms):",
        "Media built before the load:",
    ] {
        assert!(value(label).is_some(), "{label}:\n{report}");
    }
    run("b.json");
    let a = dir.path().join("a.json");
    let csv = stdout_of(&["report", path_str(&a), "--format", "csv"]);
    let head = csv.lines().next().unwrap_or_default();
    for key in [
        "total_images",
        "media_tokens_per_image",
        "mean_upload_ms",
        "mean_request_bytes",
    ] {
        assert!(head.contains(key), "{key}: {head}");
    }
    let cmp = stdout_of(&[
        "compare",
        path_str(&a),
        path_str(&dir.path().join("b.json")),
    ]);
    assert!(
        cmp.contains("media_tokens_per_image") && cmp.contains("mean_upload_ms"),
        "{cmp}"
    );
    // A sweep's plot has an upload-time chart.
    let out = servebench()
        .args([
            "run",
            "--backend",
            "openai-chat",
            "--sim-preset",
            "exact",
            "--no-tui",
        ])
        .args([
            "--dataset-name",
            "random-mm",
            "--input-len",
            "8",
            "--output-len",
            "4",
        ])
        .args(["--random-mm-bucket-config", "{(64, 96, 1): 1.0}"])
        .args(["--num-prompts", "2,4", "--max-concurrency", "2", "--quiet"])
        .args(["--result-filename", "s.json", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = common::sweep_chart_names(dir.path());
    assert!(
        names.iter().any(|n| n.starts_with("mean_upload_ms")),
        "{names:?}"
    );
}

/// VLLM's custom image format, a jsonl line's `prompt` and `image_files` (PNG
/// and JPEG files beside it), sent as data URLs: each request's media tokens against the
/// exact simulator are its files' patch-rule tokens exactly; a file that is not an image, or
/// missing, is one line naming the file and the line, exit 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_image_files_are_sent_and_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let png = |w: u64, h: u64| {
        let pixels = vec![90u8; (w * h * 3) as usize];
        servebench::workload::media::encode_png(w, h, &pixels).unwrap()
    };
    std::fs::create_dir(dir.path().join("img")).unwrap();
    std::fs::write(dir.path().join("img/a.png"), png(256, 256)).unwrap();
    std::fs::write(dir.path().join("img/b.png"), png(100, 60)).unwrap();
    let jsonl = dir.path().join("mm.jsonl");
    std::fs::write(
        &jsonl,
        concat!(
            r#"{"prompt": "look at these two", "image_files": ["img/a.png", "img/b.png"]}"#,
            "\n",
            r#"{"prompt": "and this", "image_files": ["img/b.png"]}"#,
            "\n",
        ),
    )
    .unwrap();
    let server = exact_sim().await;
    let mut cfg = config(server.base_url(), 4, images(1, 1, 0, 0.0), 2);
    cfg.workload = WorkloadSpec {
        dataset: Dataset::Jsonl {
            path: jsonl.clone(),
            output_len: Some(4),
        },
        tokenizer: Some("cl100k_base".into()),
    };
    let (result, records) = run(cfg, dir.path()).await;
    server.shutdown().await;
    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (4, 0), "{:?}", s.failures_by_kind);
    // 100 × 60: ceil(100/28)·ceil(60/28) + 2 = 4·3 + 2.
    let (a, b) = (TOKENS_256, 14);
    for r in &records {
        let (text, k, media) = match r.input_len_requested {
            Some(4) => (4, 2, a + b),
            Some(2) => (2, 1, b),
            other => panic!("a prompt of {other:?} tokens"),
        };
        assert_eq!(r.images, Some(k));
        assert_eq!(r.prompt_tokens, Some(text + media), "{r:?}");
    }
    let m = s.media.as_ref().unwrap();
    assert_eq!((m.requests, m.images), (4, 6));
    assert_eq!(m.total_media_tokens, Some(2 * (a + b) + 2 * b));

    // Bad files: one line naming the file and the line, exit 2.
    std::fs::write(dir.path().join("img/c.png"), b"GIF89a not a png").unwrap();
    for (line, named) in [
        (
            r#"{"prompt": "x", "image_files": ["img/c.png"]}"#,
            "img/c.png",
        ),
        (
            r#"{"prompt": "x", "image_files": ["img/none.png"]}"#,
            "img/none.png",
        ),
        (
            r#"{"prompt": "x", "image_files": "img/a.png"}"#,
            "image_files",
        ),
    ] {
        std::fs::write(&jsonl, format!("{line}\n")).unwrap();
        let out = servebench()
            .args([
                "run",
                "--num-prompts",
                "2",
                "--quiet",
                "--sim-preset",
                "exact",
            ])
            .args(["--backend", "openai-chat", "--tokenizer", "cl100k_base"])
            .args(["--dataset-name", "jsonl", "--dataset-path"])
            .arg(&jsonl)
            .arg("--result-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{line}: one line: {err}");
        assert!(
            err.contains(named) && err.contains("line 1"),
            "{line}: {err}"
        );
    }
}

/// A jsonl line's `audio` WAV goes out as an `input_audio` part; against the
/// exact simulator its media tokens are the clip's duration rule exactly (1.5 s at 16 kHz: 40);
/// a file that is not a WAV is one line naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_audio_is_sent_and_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // 1.5 s of silence, 16 kHz mono.
    let wav = servebench::workload::audio::wav_bytes(&[0; 24_000], 16_000);
    std::fs::write(dir.path().join("a.wav"), &wav).unwrap();
    let jsonl = dir.path().join("audio.jsonl");
    std::fs::write(
        &jsonl,
        "{\"prompt\": \"listen to this\", \"audio\": \"a.wav\"}\n",
    )
    .unwrap();
    let server = exact_sim().await;
    let mut cfg = config(server.base_url(), 3, images(1, 1, 0, 0.0), 1);
    cfg.workload = WorkloadSpec {
        dataset: Dataset::Jsonl {
            path: jsonl.clone(),
            output_len: Some(4),
        },
        tokenizer: Some("cl100k_base".into()),
    };
    let (result, records) = run(cfg, dir.path()).await;
    server.shutdown().await;
    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (3, 0), "{:?}", s.failures_by_kind);
    for r in &records {
        assert_eq!((r.images, r.audio_clips), (None, Some(1)));
        assert_eq!(
            (r.input_len_requested, r.prompt_tokens),
            (Some(3), Some(3 + 40))
        );
    }
    let m = s.media.as_ref().unwrap();
    assert_eq!((m.requests, m.audio_clips), (3, 3));
    assert_eq!(m.media_tokens_per_clip, Some(40.0));
    assert_eq!(m.media_tokens_per_image, None);

    std::fs::write(dir.path().join("a.wav"), b"ID3 an mp3, not a wav").unwrap();
    let out = servebench()
        .args([
            "run",
            "--num-prompts",
            "2",
            "--quiet",
            "--sim-preset",
            "exact",
        ])
        .args(["--backend", "openai-chat", "--tokenizer", "cl100k_base"])
        .args(["--dataset-name", "jsonl", "--dataset-path"])
        .arg(&jsonl)
        .arg("--result-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("a.wav") && err.contains("not a WAV"), "{err}");
}

/// `run --dataset-name jsonl` of `jsonl` against the built-in exact simulator, `n` requests,
/// its stdout and stderr piped; the child, to be finished within a bound.
fn jsonl_run(jsonl: &Path, dir: &Path, n: u64) -> std::process::Child {
    let n = n.to_string();
    let sim = [
        "--quiet",
        "--sim-preset",
        "exact",
        "--backend",
        "openai-chat",
    ];
    servebench()
        .args(["run", "--num-prompts", &n])
        .args(sim)
        .args(["--tokenizer", "cl100k_base", "--dataset-name", "jsonl"])
        .arg("--dataset-path")
        .arg(jsonl)
        .arg("--result-dir")
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// A FIFO (or a device) named as an image or a clip is refused at once in one line
/// naming the file and what it is: it once blocked the run for ever, waiting for a writer.
#[test]
fn a_fifo_or_device_named_as_media_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.png");
    let c = std::ffi::CString::new(path_str(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let jsonl = dir.path().join("mm.jsonl");
    for (line, named, kind) in [
        (
            r#"{"prompt": "x", "image_files": ["pipe.png"]}"#,
            "pipe.png",
            "FIFO",
        ),
        (
            r#"{"prompt": "x", "audio": "pipe.png"}"#,
            "pipe.png",
            "FIFO",
        ),
        (
            r#"{"prompt": "x", "image_files": ["/dev/zero"]}"#,
            "/dev/zero",
            "device",
        ),
    ] {
        std::fs::write(&jsonl, format!("{line}\n")).unwrap();
        let child = jsonl_run(&jsonl, dir.path(), 1);
        let out = common::finish_within(child, std::time::Duration::from_secs(60), line);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{line}: one line: {err}");
        assert!(err.contains(named) && err.contains(kind), "{line}: {err}");
    }
}

/// A run reads only the lines it sends: a one-request run of a file whose second line is
/// broken (or names a missing file) runs, where every line's files were once read first.
#[test]
fn a_jsonl_run_reads_only_the_lines_it_sends() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("mm.jsonl");
    std::fs::write(
        &jsonl,
        concat!(
            r#"{"prompt": "the one sent"}"#,
            "\n",
            r#"{"prompt": "x", "image_files": ["missing.png"]}"#,
            "\n",
            "not json\n",
        ),
    )
    .unwrap();
    let child = jsonl_run(&jsonl, dir.path(), 1);
    let out = common::finish_within(child, std::time::Duration::from_secs(120), "one line");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // Two requests read the second line, and name it.
    let child = jsonl_run(&jsonl, dir.path(), 2);
    let out = common::finish_within(child, std::time::Duration::from_secs(120), "two lines");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line 2") && err.contains("missing.png"),
        "{err}"
    );
}

/// A chat server that streams one answer token and claims 10^12 prompt tokens for every
/// request (a 1 s clip costs a few thousand at most); its URL.
fn media_liar() -> String {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            if common::http::read_request(&mut conn).is_none() {
                continue;
            }
            let events = [
                r#"{"choices":[{"index":0,"delta":{"content":" yes"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":1000000000000,"completion_tokens":1}}"#,
                "[DONE]",
            ];
            let mut out = String::from(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            );
            for e in events {
                out.push_str(&format!("data: {e}\n\n"));
            }
            let _ = conn.write_all(out.as_bytes());
        }
    });
    url
}

/// Bad input: 10^12 prompt tokens for a request of text and a 1 s clip is past the clip's
/// bound (4,096 + 100 per second) and the text's bytes: flagged `prompt_tokens` on every
/// record, counted in the summary, and the built length used instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_count_past_the_media_bound_is_flagged_not_believed() {
    let dir = tempfile::tempdir().unwrap();
    // One second of silence, 16 kHz mono.
    let wav = servebench::workload::audio::wav_bytes(&[0; 16_000], 16_000);
    std::fs::write(dir.path().join("a.wav"), &wav).unwrap();
    let jsonl = dir.path().join("audio.jsonl");
    std::fs::write(
        &jsonl,
        "{\"prompt\": \"listen to this\", \"audio\": \"a.wav\"}\n",
    )
    .unwrap();
    let mut cfg = config(media_liar(), 3, images(1, 1, 0, 0.0), 1);
    cfg.workload = WorkloadSpec {
        dataset: Dataset::Jsonl {
            path: jsonl,
            output_len: Some(4),
        },
        tokenizer: Some("cl100k_base".into()),
    };
    let (result, records) = run(cfg, dir.path()).await;
    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (3, 0), "{:?}", s.failures_by_kind);
    assert_eq!(s.implausible_usage_by_field.get("prompt_tokens"), Some(&3));
    for r in &records {
        assert_eq!(
            r.implausible_usage,
            [servebench::measure::record::Implausible::PromptTokens]
        );
        assert_eq!(r.prompt_tokens_source, Some(TokenSource::Requested));
        assert_eq!(r.prompt_tokens, Some(3), "the built length");
    }
}
