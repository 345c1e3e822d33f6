//! Integration tests against a second real OpenAI-compatible server, LiteLLM's proxy, in front
//! of the real llama.cpp server (tests/common/litellm.rs): an HTTP and streaming stack other
//! than llama.cpp's (uvicorn's HTTP/1.1 with keep-alive, LiteLLM's own SSE framing, its usage
//! chunk with a `choices` entry, bearer-token auth). The servebench binary, run as a
//! user runs it, measures a completions sweep, a chat run and a multi-turn conversation with
//! no failure and exact input counts; and a real stream whose `data: [DONE]` is left out (HF's
//! `transformers serve` ends its streams so) is a success, while one cut before its finishing
//! chunk is not.
//!
//! The tests run one at a time, and never beside the other timed tests (`common::serial`),
//! each with its own servers: a llama.cpp server and a LiteLLM proxy are too heavy for two
//! at once on a 2-core machine, and a paused clock cannot stand in for real processes. They assert counts and
//! exact lengths, never wall-clock limits.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;

use common::litellm::Gateway;
use common::real_server::{process_exists, RealServer};
use common::relay::{Ending, Relay};
use common::serial;
use serde_json::{json, Value};
use servebench::measure::record::{RequestRecord, TokenSource};
use servebench::results::document::BenchResult;
use servebench::results::stats::{itl_gaps_ns, RequestMetrics};
use servebench::tokenizer::chat_template::ChatTemplate;
use servebench::tokenizer::Tokenizer;

fn gguf() -> PathBuf {
    RealServer::gguf_path().expect("the GGUF ships with the real server")
}

/// `servebench run` against `base_url` (the proxy, or a relay in front of it) with the proxy's
/// key, the model's own tokenizer, exactly `output_len` tokens per answer, results in `dir`
/// under the stem `stem`.
fn servebench_run(
    gw: &Gateway,
    base_url: &str,
    backend: &str,
    output_len: u64,
    dir: &Path,
    stem: &str,
) -> Command {
    let mut cmd = common::servebench();
    cmd.args(["run", "--backend", backend, "--base-url", base_url])
        .args(["--model", gw.model(), "--api-key", gw.key()])
        .arg("--tokenizer")
        .arg(gguf())
        .args(["--output-len", &output_len.to_string(), "--ignore-eos"])
        .args(["--timeout", "120", "--result-filename", stem, "-q"])
        .arg("--result-dir")
        .arg(dir);
    cmd
}

/// Runs `cmd`; panics with its output and the proxy's log unless it exits `want`.
fn run_expecting(cmd: &mut Command, want: i32, gw: &Gateway) -> String {
    let out = cmd.output().expect("run servebench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(want),
        "servebench exited {:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n--- proxy log ---\n{}",
        out.status,
        gw.log()
    );
    stdout
}

/// Every line of a records file, as JSON (to read fields this version may not know) and as a
/// record.
fn records(result: &Path) -> Vec<(Value, RequestRecord)> {
    let path = result.with_extension("records.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            let r: RequestRecord = serde_json::from_str(l).expect("a record");
            (v, r)
        })
        .collect()
}

/// `n` measured requests, every one successful, each with exactly `output_len` tokens by the
/// server's count and the invariants of docs/metrics.md.
fn assert_all_ok(
    gw: &Gateway,
    what: &str,
    result: &BenchResult,
    recs: &[(Value, RequestRecord)],
    n: u64,
    output_len: u64,
) {
    let s = &result.summary;
    let failures: Vec<String> = recs
        .iter()
        .filter(|(_, r)| !r.is_ok())
        .map(|(v, r)| {
            format!(
                "request {} (HTTP {:?}): {:?}\n{v}",
                r.id, r.http_status, r.outcome
            )
        })
        .collect();
    assert_eq!(
        (s.completed, s.failed),
        (n, 0),
        "{what}: {:?}\n{}\n--- proxy log ---\n{}",
        s.failures_by_kind,
        failures.join("\n"),
        gw.log()
    );
    let measured: Vec<&RequestRecord> = recs.iter().map(|(_, r)| r).filter(|r| !r.warmup).collect();
    assert_eq!(measured.len() as u64, n, "{what}: one record per request");
    for r in measured {
        assert!(
            r.is_ok(),
            "{what}: request {} failed: {:?}",
            r.id,
            r.outcome
        );
        let m = RequestMetrics::of(r).expect("an ok record has metrics");
        assert_eq!(
            m.ttft_ns + itl_gaps_ns(r).sum::<u64>(),
            m.e2el_ns,
            "{what}: TTFT + ΣITL = E2EL"
        );
        assert_eq!(r.usage_output_tokens, Some(output_len), "{what}: usage");
        assert_eq!(
            (m.output_tokens, r.output_tokens_source),
            (output_len, Some(TokenSource::ServerUsage)),
            "{what}: N"
        );
        assert_eq!(
            r.prompt_tokens_source,
            Some(TokenSource::ServerUsage),
            "{what}: prompt tokens from the server"
        );
    }
}

/// The prompts a run built: the same workload, tokenizer and seed as its saved config.
fn built_prompts(result: &BenchResult, tok: &Tokenizer, n: u64) -> Vec<String> {
    let cfg = &result.config;
    servebench::workload::build_requests(&cfg.workload, Some(tok), n, 0, cfg.load.seed, false)
        .expect("rebuild the run's prompts")
        .into_iter()
        .map(|r| r.prompt)
        .collect()
}

/// SmolLM2's chat template (in its GGUF), as the server applies it to a chat request.
fn template() -> ChatTemplate {
    ChatTemplate::for_tokenizer(&gguf().display().to_string())
        .expect("read the GGUF's chat template")
        .expect("SmolLM2's GGUF carries a chat template")
}

/// A completions sweep (1, 2, 4 prompts at once on 4 slots) through LiteLLM's proxy:
/// every step complete with no failure, and every prompt exactly the 32 tokens servebench
/// built by the server's own count.
#[test]
fn litellm_completions_sweep_has_exact_inputs() {
    let _serial = serial();
    let Some(gw) = Gateway::start(4) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (input_len, output_len) = (32, 16);
    run_expecting(
        servebench_run(&gw, gw.base_url(), "openai", output_len, dir.path(), "s").args([
            "--num-prompts",
            "1,2,4",
            "--input-len",
            &input_len.to_string(),
        ]),
        0,
        &gw,
    );
    let (doc, results) =
        servebench::results::sweep::SweepDoc::load(&dir.path().join("s.sweep.json"))
            .expect("the sweep document");
    assert!(doc.complete);
    assert_eq!(results.len(), 3);
    for (step, n) in doc.steps.iter().zip([1, 2, 4]) {
        let what = format!("{n} prompts");
        let path = dir.path().join(&step.result);
        let result = BenchResult::load(&path).expect("the step's result");
        assert_eq!(result.config.load.num_prompts, n, "{what}");
        let recs = records(&path);
        assert_all_ok(&gw, &what, &result, &recs, n, output_len);
        for (_, r) in &recs {
            assert_eq!(
                (r.input_len_requested, r.prompt_tokens),
                (Some(input_len), Some(input_len)),
                "{what}: request {} built and counted by the server",
                r.id
            );
        }
        assert_eq!(result.summary.input_len_disagreements, 0, "{what}");
        assert_eq!(result.summary.total_input_tokens, n * input_len, "{what}");
    }
}

/// A chat run through LiteLLM's proxy (4 prompts, 2 at a time): no failure, and the
/// server's prompt count of each request is exactly the model's chat template applied to the
/// prompt servebench built (plus the BOS token, if the server adds one: the same for all).
/// Also checks the harness: both processes on loopback ports of their own, both stopped when
/// the gateway is dropped.
#[test]
fn litellm_chat_run_counts_exactly_the_template() {
    let _serial = serial();
    let Some(gw) = Gateway::start(4) else {
        return;
    };
    assert!(
        gw.base_url().starts_with("http://127.0.0.1:"),
        "{}",
        gw.base_url()
    );
    assert!(gw.upstream().base_url().starts_with("http://127.0.0.1:"));
    assert_ne!(gw.base_url(), gw.upstream().base_url());
    let dir = tempfile::tempdir().expect("temp dir");
    let (n, input_len, output_len) = (4, 24, 8);
    run_expecting(
        servebench_run(
            &gw,
            gw.base_url(),
            "openai-chat",
            output_len,
            dir.path(),
            "c",
        )
        .args(["--num-prompts", &n.to_string(), "--max-concurrency", "2"])
        .args(["--input-len", &input_len.to_string()]),
        0,
        &gw,
    );
    let path = dir.path().join("c.json");
    let result = BenchResult::load(&path).expect("the result");
    let recs = records(&path);
    assert_all_ok(&gw, "chat", &result, &recs, n, output_len);
    let tok = Tokenizer::load(&gguf().display().to_string()).expect("the GGUF tokenizer");
    let prompts = built_prompts(&result, &tok, n);
    let template = template();
    let rendered = |p: &str| {
        let text = template
            .render(&json!([{"role": "user", "content": p}]))
            .expect("render the template");
        tok.count(&text) as u64
    };
    let bos = recs[0].1.prompt_tokens.unwrap() - rendered(&prompts[recs[0].1.id as usize]);
    assert!(bos <= 1, "{bos} tokens beyond the rendered prompt");
    for (_, r) in &recs {
        let prompt = &prompts[r.id as usize];
        assert_eq!(tok.count(prompt) as u64, input_len, "built length");
        assert_eq!(r.input_len_requested, Some(input_len));
        assert_eq!(
            r.prompt_tokens,
            Some(rendered(prompt) + bos),
            "request {}: the server's count is the template around the built prompt",
            r.id
        );
    }

    let (proxy, server) = gw.pids();
    assert!(process_exists(proxy) && process_exists(server));
    drop(gw);
    assert!(!process_exists(proxy), "proxy pid {proxy} still running");
    assert!(!process_exists(server), "server pid {server} still running");
}

/// Two 3-turn conversations over the chat API through LiteLLM's proxy: all six turns
/// succeed, and each turn's prompt, by the server's count, is exactly the conversation so far
/// (the seeded user inputs and the streamed replies, as servebench kept them) under the model's
/// chat template: nothing of the history is lost or changed on the way through the proxy.
#[test]
fn litellm_three_turn_conversations_count_exactly() {
    let _serial = serial();
    let Some(gw) = Gateway::start(2) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (conversations, turns, input_len, output_len) = (2u64, 3u64, 24, 8);
    run_expecting(
        servebench_run(
            &gw,
            gw.base_url(),
            "openai-chat",
            output_len,
            dir.path(),
            "t",
        )
        .args(["--num-prompts", &conversations.to_string()])
        .args(["--turns", &turns.to_string()])
        .args(["--input-len", &input_len.to_string()]),
        0,
        &gw,
    );
    let path = dir.path().join("t.json");
    let result = BenchResult::load(&path).expect("the result");
    let recs = records(&path);
    assert_all_ok(
        &gw,
        "3 turns",
        &result,
        &recs,
        conversations * turns,
        output_len,
    );
    let tok = Tokenizer::load(&gguf().display().to_string()).expect("the GGUF tokenizer");
    // The pool is grouped into conversations of `turns` consecutive prompts.
    let users = built_prompts(&result, &tok, conversations * turns);
    let template = template();
    let mut bos = None;
    for c in 0..conversations {
        let mut turns_of: Vec<&RequestRecord> = recs
            .iter()
            .map(|(_, r)| r)
            .filter(|r| r.conversation == Some(c))
            .collect();
        turns_of.sort_by_key(|r| r.turn);
        assert_eq!(turns_of.len() as u64, turns, "conversation {c}");
        let mut messages = Vec::new();
        for (k, r) in turns_of.iter().enumerate() {
            assert_eq!(r.turn, Some(k as u32));
            let user = &users[(c * turns) as usize + k];
            assert_eq!(tok.count(user) as u64, input_len, "built length");
            messages.push(json!({"role": "user", "content": user}));
            let counted = tok.count(&template.render(&json!(messages)).expect("render")) as u64;
            let server = r.prompt_tokens.expect("the server's count");
            let bos = *bos.get_or_insert(server.saturating_sub(counted));
            assert!(bos <= 1, "{bos} tokens beyond the rendered prompt");
            assert_eq!(
                server,
                counted + bos,
                "conversation {c}, turn {}: the history under the template",
                k + 1
            );
            let reply = r.generated_text.as_deref().expect("a turn keeps its reply");
            messages.push(json!({"role": "assistant", "content": reply}));
        }
    }
    assert_eq!(result.summary.ttft_by_turn.len(), turns as usize);
}

/// On a real stream: LiteLLM's streams, relayed with their `data: [DONE]`
/// left out and then ended cleanly (as HF's `transformers serve` ends every stream), are
/// successes on the completions and chat APIs, recorded with `done_marker: false`, with exact
/// lengths; the relay shows that every stream did carry a `[DONE]` that it removed. The same
/// streams cut cleanly just before their finishing chunk are failures (`stream_broken`), not
/// short successes. Needs the client's clean-end rule (`done_marker`).
#[test]
fn litellm_stream_without_done_is_a_success() {
    let _serial = serial();
    let Some(gw) = Gateway::start(4) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (n, output_len) = (3, 12);
    for backend in ["openai", "openai-chat"] {
        let relay = Relay::start(gw.base_url(), Ending::DropDone);
        run_expecting(
            servebench_run(
                &gw,
                relay.base_url(),
                backend,
                output_len,
                dir.path(),
                backend,
            )
            .args(["--num-prompts", &n.to_string(), "--input-len", "16"]),
            0,
            &gw,
        );
        let path = dir.path().join(format!("{backend}.json"));
        let result = BenchResult::load(&path).expect("the result");
        let recs = records(&path);
        assert_all_ok(&gw, backend, &result, &recs, n, output_len);
        for (v, r) in &recs {
            assert_eq!(
                v["done_marker"],
                json!(false),
                "{backend}: request {} ended without [DONE]: {v}",
                r.id
            );
        }
        let c = relay.counts();
        let (streams, dropped) = (
            c.streams.load(Ordering::SeqCst),
            c.done_dropped.load(Ordering::SeqCst),
        );
        // The measured requests and the pre-flight request.
        assert!(streams >= n, "{backend}: {streams} streams relayed");
        assert_eq!(dropped, streams, "{backend}: every stream's [DONE] removed");
    }

    let relay = Relay::start(gw.base_url(), Ending::CutAtFinish);
    let cut = 2;
    run_expecting(
        servebench_run(
            &gw,
            relay.base_url(),
            "openai",
            output_len,
            dir.path(),
            "cut",
        )
        .args(["--num-prompts", &cut.to_string(), "--input-len", "16"]),
        1,
        &gw,
    );
    let recs = records(&dir.path().join("cut.json"));
    assert_eq!(recs.len() as u64, cut);
    for (v, r) in &recs {
        assert_eq!(
            v["outcome"]["kind"],
            json!("stream_broken"),
            "request {} cut before its finishing chunk: {v}",
            r.id
        );
    }
    assert!(relay.counts().cut.load(Ordering::SeqCst) >= cut);
}
