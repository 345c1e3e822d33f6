//! Structured output and tool calls (`--structured-output
//! json|tools|regex|choice|grammar`), over real HTTP on 127.0.0.1 against the built-in
//! simulator in exact mode: it answers a schema's JSON or a tool call split over the request's
//! tokens on the same schedule as text, a regex's match or one of the choices as its text's own
//! tokens, and makes an exact share of its answers invalid (of requests 0..N, ⌊N·rate⌋;
//! alternately not JSON and JSON of the wrong shape, a text that does not match in full, a
//! text that is no choice: `sim/structured.rs`). The figures servebench reports equal that
//! truth (counts exactly, the time to the first tool-call token within 1 ms of the
//! simulator's TTFT); a grammar's answers are counted unchecked; the report, CSV and compare
//! show them; bad input is a named failure.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{execute, path_str, run_config, servebench, stdout_of};
use servebench::config::guided::{Pattern, BUILTIN_GRAMMAR, BUILTIN_PATTERN};
use servebench::config::structured::StructuredOutput;
use servebench::config::{BackendKind, RunConfig};
use servebench::measure::output_check::Verdict;
use servebench::measure::record::RequestRecord;
use servebench::results::document::BenchResult;
use servebench::sim::{SimConfig, SimServer};

const TTFT_MS: f64 = 30.0;
const N: u64 = 20;
const OUTPUT: u64 = 24;

async fn structured_sim(invalid_output_rate: f64) -> SimServer {
    let cfg = SimConfig {
        ttft: Duration::from_millis(TTFT_MS as u64),
        itl: Duration::from_millis(2),
        seed: 7,
        invalid_output_rate,
        ..SimConfig::default()
    };
    common::spawn_sim(cfg).await
}

fn config(base_url: String, structured: StructuredOutput) -> RunConfig {
    let mut cfg = run_config(base_url, BackendKind::OpenaiChat, N, 4, 16, OUTPUT);
    cfg.structured = Some(structured);
    cfg.goodput_valid_output = true;
    cfg
}

/// Verdicts over the records, by name.
fn verdicts(records: &[RequestRecord]) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    for r in records {
        let v = r
            .output_check
            .as_ref()
            .expect("every answer is checked")
            .verdict;
        *out.entry(v.as_str()).or_insert(0) += 1;
    }
    out
}

/// Runs `structured` against a fresh exact simulator with `rate` invalid, with no pre-flight
/// (the simulator numbers the measured requests 0..N), up to 3 times until the median of
/// `latency` is within 1 ms of the simulator's TTFT; every attempt's counts are checked by
/// `counts`. A busy machine delays some reads: the best of 3 judges the client, never-early
/// is checked on every request of every attempt.
async fn best_of_3(
    structured: StructuredOutput,
    rate: f64,
    counts: impl Fn(&BenchResult, &[RequestRecord]),
    latency: impl Fn(&BenchResult) -> f64,
) {
    let mut medians = Vec::new();
    for _ in 0..3 {
        let server = structured_sim(rate).await;
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(server.base_url(), structured.clone());
        let (result, records) = execute(cfg, dir.path(), "result.json", false).await;
        server.shutdown().await;
        assert_eq!((result.summary.completed, result.summary.failed), (N, 0));
        for r in &records {
            assert_eq!(r.output_tokens, Some(OUTPUT), "the server's count");
            let first = r.chunk_ns[0].saturating_sub(r.sent_ns) as f64 / 1e6;
            assert!(
                first >= TTFT_MS - 0.05,
                "a first token {first} ms after the send"
            );
        }
        counts(&result, &records);
        let doc = common::json(&dir.path().join("result.json"));
        let st = result.summary.structured.as_ref().unwrap();
        assert_eq!(doc["correct_rate(%)"], serde_json::json!(st.correct_rate));
        let median = latency(&result);
        if (median - TTFT_MS).abs() <= 1.0 {
            return;
        }
        medians.push(median);
    }
    panic!("median off the simulator's TTFT ({TTFT_MS} ms) in every attempt: {medians:?}");
}

/// JSON of the built-in schema at an invalid rate of 0.25: of 20 answers, 5
/// invalid (requests 3, 7, 11, 15, 19): 3 not JSON and 2 JSON of the wrong shape, so 15
/// valid (correct_rate 75%) and 17 parsed (85%), exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_against_the_exact_simulator_equal_its_truth() {
    let counts = |result: &BenchResult, records: &[RequestRecord]| {
        let st = result
            .summary
            .structured
            .as_ref()
            .expect("structured figures");
        assert_eq!((st.checked, st.valid, st.json), (20, 15, 17));
        assert_eq!((st.correct_rate, st.json_rate), (Some(75.0), Some(85.0)));
        assert_eq!(
            result.summary.good_requests,
            Some(15),
            "--goodput valid_output:1"
        );
        assert_eq!(st.tool_calls, 0);
        let expected = BTreeMap::from([("not_json", 3), ("schema_mismatch", 2), ("valid", 15)]);
        assert_eq!(verdicts(records), expected);
        assert_eq!(st.by_verdict.len(), 3);
        for r in records {
            let c = r.output_check.as_ref().unwrap();
            assert_eq!(c.why.is_some(), c.verdict != Verdict::Valid, "{c:?}");
            assert!(r.first_tool_call_ns.is_none());
        }
    };
    let ttft = |result: &BenchResult| result.summary.ttft_ms.as_ref().unwrap().median;
    best_of_3(StructuredOutput::builtin_json(), 0.25, counts, ttft).await;
}

/// Tool calls of the 3 built-in tools (request n calls tool n mod 3) at an
/// invalid rate of 0.2: of 20 calls, 4 invalid (requests 4, 9, 14, 19): 2 not JSON, 2 of the
/// wrong shape; each call's function is named, its tokens are the answer's, and its first
/// token is the simulator's first chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_against_the_exact_simulator_equal_its_truth() {
    let counts = |result: &BenchResult, records: &[RequestRecord]| {
        let st = result
            .summary
            .structured
            .as_ref()
            .expect("structured figures");
        assert_eq!((st.checked, st.valid, st.json), (20, 16, 18));
        assert_eq!((st.correct_rate, st.json_rate), (Some(80.0), Some(90.0)));
        assert_eq!(
            result.summary.good_requests,
            Some(16),
            "--goodput valid_output:1"
        );
        assert_eq!(st.tool_calls, 20);
        assert_eq!(st.mean_tool_call_tokens, Some(OUTPUT as f64));
        let expected = BTreeMap::from([("not_json", 2), ("schema_mismatch", 2), ("valid", 16)]);
        assert_eq!(verdicts(records), expected);
        let mut tools = BTreeMap::new();
        for r in records {
            assert_eq!(r.first_tool_call_ns, Some(r.chunk_ns[0]));
            let tool = r
                .output_check
                .as_ref()
                .unwrap()
                .tool
                .clone()
                .expect("named");
            *tools.entry(tool).or_insert(0) += 1;
        }
        let expected = [
            ("convert_currency", 6),
            ("get_weather", 7),
            ("search_flights", 7),
        ];
        assert_eq!(tools, expected.map(|(k, n)| (k.to_string(), n)).into());
    };
    let ttfc = |result: &BenchResult| {
        let st = result.summary.structured.as_ref().unwrap();
        st.ttft_tool_call_ms.as_ref().unwrap().median
    };
    best_of_3(StructuredOutput::builtin_tools(), 0.2, counts, ttfc).await;
}

/// The Anthropic Messages API's `tool_use` blocks and the Responses API's
/// `function_call` items and `text.format` JSON are read and checked as the chat API's: at an
/// invalid rate of 0.25, exactly 15 of 20 valid and 17 parsed, every call's first token the
/// simulator's first chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_and_responses_answers_equal_the_truth() {
    let cases = [
        (
            BackendKind::AnthropicMessages,
            StructuredOutput::builtin_tools(),
        ),
        (
            BackendKind::OpenaiResponses,
            StructuredOutput::builtin_tools(),
        ),
        (
            BackendKind::OpenaiResponses,
            StructuredOutput::builtin_json(),
        ),
    ];
    for (backend, structured) in cases {
        let server = structured_sim(0.25).await;
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = run_config(server.base_url(), backend, N, 4, 16, OUTPUT);
        let tools = matches!(structured, StructuredOutput::Tools { .. });
        cfg.structured = Some(structured);
        let (result, records) = execute(cfg, dir.path(), "result.json", false).await;
        server.shutdown().await;
        let case = format!("{backend:?}, tools: {tools}");
        assert_eq!(
            (result.summary.completed, result.summary.failed),
            (N, 0),
            "{case}"
        );
        let st = result
            .summary
            .structured
            .as_ref()
            .expect("structured figures");
        assert_eq!((st.checked, st.valid, st.json), (20, 15, 17), "{case}");
        assert_eq!(st.tool_calls, if tools { 20 } else { 0 }, "{case}");
        let expected = BTreeMap::from([("not_json", 3), ("schema_mismatch", 2), ("valid", 15)]);
        assert_eq!(verdicts(&records), expected, "{case}");
        for r in &records {
            assert_eq!(r.output_tokens, Some(OUTPUT), "{case}");
            let call = tools.then(|| r.chunk_ns[0]);
            assert_eq!(r.first_tool_call_ns, call, "{case}");
            let tool = r.output_check.as_ref().unwrap().tool.is_some();
            assert_eq!(tool, tools, "{case}");
        }
    }
}

/// A schema file that is not JSON, a schema keyword servebench does not check,
/// tools for an API that cannot ask for them, a `valid_output` goodput term that is not 1 or
/// without structured output: each one line naming the flag (and the file and its line), exit
/// 2, before anything runs.
#[test]
fn bad_structured_input_names_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("schema.json");
    std::fs::write(
        &bad,
        "{\n  \"type\": \"object\",\n  \"properties\": {,\n}\n",
    )
    .unwrap();
    let pattern = dir.path().join("pattern.json");
    std::fs::write(&pattern, r#"{"type": "string", "pattern": "^a+$"}"#).unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, r#"{"name": "f"}"#).unwrap();
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        (
            vec![
                "--structured-output".into(),
                "json".into(),
                "--json-schema-path".into(),
                s(&bad),
            ],
            vec!["--json-schema-path".into(), format!("{} line 3", s(&bad))],
        ),
        (
            vec![
                "--structured-output".into(),
                "json".into(),
                "--json-schema-path".into(),
                s(&pattern),
            ],
            vec!["--json-schema-path".into(), "'pattern'".into()],
        ),
        (
            vec![
                "--structured-output".into(),
                "tools".into(),
                "--tools-path".into(),
                s(&tools),
            ],
            vec!["--tools-path".into(), "a JSON list of tools".into()],
        ),
        (
            vec![
                "--structured-output".into(),
                "tools".into(),
                "--backend".into(),
                "openai".into(),
            ],
            vec![
                "--structured-output".into(),
                "openai-chat, openai-responses or anthropic-messages".into(),
            ],
        ),
        (
            vec![
                "--structured-output".into(),
                "json".into(),
                "--backend".into(),
                "anthropic-messages".into(),
            ],
            vec![
                "--structured-output".into(),
                "openai-chat or openai-responses".into(),
            ],
        ),
        (
            vec!["--goodput".into(), "valid_output:1".into()],
            vec!["--goodput".into(), "--structured-output".into()],
        ),
    ];
    for (args, named) in cases {
        let mut cmd = servebench();
        cmd.args(["run", "--num-prompts", "2", "--quiet", "--result-dir"])
            .arg(dir.path());
        if !args.contains(&"--backend".to_string()) {
            cmd.args(["--backend", "openai-chat"]);
        }
        let out = cmd.args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        for n in named {
            assert!(err.contains(&n), "{args:?}: names {n}: {err}");
        }
    }
    // A value clap refuses: its own error names the value and the rule.
    let out = servebench()
        .args([
            "run",
            "--structured-output",
            "json",
            "--goodput",
            "valid_output:2",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'valid_output:2'") && err.contains("valid_output takes 1"),
        "{err}"
    );
}

/// `run --structured-output tools` against the built-in simulator prints the
/// structured lines (every call valid: the built-in server makes none invalid), and the CSV
/// and compare of the saved results carry vLLM's `correct_rate(%)` and the tool-call figures;
/// a sweep's plot charts the share valid.
#[test]
fn the_report_csv_and_compare_show_the_structured_figures() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, counts: &str| {
        let out = servebench()
            .args(["run", "--backend", "openai-chat", "--sim-preset", "exact"])
            .args(["--structured-output", "tools", "--num-prompts", counts])
            .args(["--max-concurrency", "2", "--output-len", "12", "--no-tui"])
            .args(["--result-filename", name, "--result-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}\n{err}");
        text
    };
    let report = run("a.json", "6");
    let value = |label: &str| {
        let line = report.lines().find(|l| l.starts_with(label));
        line.map(|l| l[label.len()..].trim().to_string())
    };
    assert_eq!(value("Answers checked:").as_deref(), Some("6"), "{report}");
    assert_eq!(
        value("Valid, correct_rate(%):").as_deref(),
        Some("6 (100.00%)"),
        "{report}"
    );
    assert_eq!(
        value("Answers with a tool call:").as_deref(),
        Some("6"),
        "{report}"
    );
    assert_eq!(
        value("Tool-call tokens (mean):").as_deref(),
        Some("12.00"),
        "{report}"
    );
    assert!(value("Mean tool-call TTFT (ms):").is_some(), "{report}");
    run("b.json", "6");
    let a = dir.path().join("a.json");
    let csv = stdout_of(&["report", path_str(&a), "--format", "csv"]);
    let head = csv.lines().next().unwrap_or_default();
    for key in [
        "correct_rate(%)",
        "json_rate(%)",
        "mean_tool_call_ttft_ms",
        "mean_tool_call_tokens",
    ] {
        assert!(head.contains(key), "{key}: {head}");
    }
    let cmp = stdout_of(&[
        "compare",
        path_str(&a),
        path_str(&dir.path().join("b.json")),
    ]);
    assert!(
        cmp.contains("correct_rate(%)") && cmp.contains("mean_tool_call_ttft_ms"),
        "{cmp}"
    );
    // A sweep's plot has a chart of the valid answers' share.
    run("s.json", "3,6");
    let names = common::sweep_chart_names(dir.path());
    assert!(
        names.iter().any(|n| n.starts_with("correct_rate_pct-")),
        "{names:?}"
    );
}

/// A regex, choice or grammar run of N requests (output 24 tokens, at most 4 at once) against
/// a fresh exact simulator with `rate` invalid and no pre-flight (the simulator numbers the
/// measured requests 0..N), with `extra_body` merged into every body; the result and the
/// records.
async fn guided_run(
    structured: StructuredOutput,
    rate: f64,
    extra_body: Option<serde_json::Value>,
) -> (BenchResult, Vec<RequestRecord>, serde_json::Value) {
    guided_run_on(BackendKind::OpenaiChat, structured, rate, extra_body).await
}

/// [`guided_run`] on `backend`.
async fn guided_run_on(
    backend: BackendKind,
    structured: StructuredOutput,
    rate: f64,
    extra_body: Option<serde_json::Value>,
) -> (BenchResult, Vec<RequestRecord>, serde_json::Value) {
    let server = structured_sim(rate).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(server.base_url(), structured);
    cfg.backend = backend;
    cfg.endpoint = backend.default_endpoint().into();
    cfg.goodput_valid_output = !matches!(cfg.structured, Some(StructuredOutput::Grammar { .. }));
    cfg.extra_body = extra_body;
    let (result, records) = execute(cfg, dir.path(), "result.json", false).await;
    server.shutdown().await;
    assert_eq!((result.summary.completed, result.summary.failed), (N, 0));
    let doc = common::json(&dir.path().join("result.json"));
    (result, records, doc)
}

fn regex(pattern: &str) -> StructuredOutput {
    let pattern = Pattern::new(pattern, "--structured-output-regex").unwrap();
    StructuredOutput::Regex {
        pattern,
        legacy_fields: false,
    }
}

/// The built-in pattern (vLLM's e-mail shape) at an invalid rate of 0.25: of 20
/// answers, exactly 5 do not match in full, so 15 valid (correct_rate 75%, the goodput's
/// count); every answer's text is its own tokens (the simulator stops at the answer's end),
/// and no JSON rate is reported for text that is not JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regex_answers_against_the_exact_simulator_equal_its_truth() {
    let (result, records, doc) = guided_run(regex(BUILTIN_PATTERN), 0.25, None).await;
    let st = result.summary.structured.as_ref().expect("structured");
    assert_eq!(
        (st.checked, st.valid, st.unchecked, st.json),
        (20, 15, 0, 0)
    );
    assert_eq!(st.correct_rate, Some(75.0));
    assert_eq!(result.summary.good_requests, Some(15));
    let expected = BTreeMap::from([("regex_mismatch", 5), ("valid", 15)]);
    assert_eq!(verdicts(&records), expected);
    for r in &records {
        let c = r.output_check.as_ref().unwrap();
        if c.verdict == Verdict::RegexMismatch {
            let why = c.why.as_deref().unwrap();
            assert!(why.contains("does not match the pattern in full"), "{why}");
        }
        let tokens = r.output_tokens.unwrap();
        assert!((1..=OUTPUT).contains(&tokens), "{tokens} tokens");
    }
    assert_eq!(doc["correct_rate(%)"], serde_json::json!(75.0));
    assert!(doc.get("json_rate(%)").is_none(), "{doc}");
    assert_eq!(doc["config"]["structured"]["kind"], "regex");
    assert_eq!(doc["config"]["structured"]["pattern"], BUILTIN_PATTERN);
}

/// Three choices at an invalid rate of 0.2: of 20 answers exactly 4 are not a
/// choice (16 valid, 80%); vLLM's `structured_outputs.choice` carries the list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn choice_answers_against_the_exact_simulator_equal_its_truth() {
    let choices: Vec<String> = ["up", "down", "flat"].map(String::from).to_vec();
    let spec = StructuredOutput::Choice {
        choices: choices.clone(),
        legacy_fields: false,
    };
    let (result, records, doc) = guided_run(spec, 0.2, None).await;
    let st = result.summary.structured.as_ref().expect("structured");
    assert_eq!((st.checked, st.valid), (20, 16));
    assert_eq!(st.correct_rate, Some(80.0));
    assert_eq!(result.summary.good_requests, Some(16));
    let expected = BTreeMap::from([("not_a_choice", 4), ("valid", 16)]);
    assert_eq!(verdicts(&records), expected);
    assert_eq!(doc["correct_rate(%)"], serde_json::json!(80.0));
    assert_eq!(
        doc["config"]["structured"]["choices"],
        serde_json::json!(choices)
    );
}

/// VLLM's structured-output benchmark drives `/v1/completions` by default; on
/// `--backend openai` the regex, choice and JSON workloads go in the completions body
/// (`structured_outputs`, `guided_choice`, `response_format`) and the exact simulator's
/// completions endpoint answers them as its chat endpoint does: at an invalid rate of 0.25,
/// of 20 answers exactly 15 valid (the JSON run's 5: 3 not JSON, 2 of the wrong shape). With
/// `structured_outputs` nulled on the wire the answers are plain text (every regex answer a
/// mismatch), so the field is what the server read; the older `guided_choice` field is read
/// in its place when asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regex_choice_and_json_on_completions_equal_the_truth() {
    let choice = |legacy_fields| StructuredOutput::Choice {
        choices: vec!["Positive".into(), "Negative".into()],
        legacy_fields,
    };
    let unasked = || Some(serde_json::json!({"structured_outputs": null}));
    let cases = [
        (
            regex(BUILTIN_PATTERN),
            None,
            vec![("regex_mismatch", 5), ("valid", 15)],
        ),
        (
            choice(false),
            None,
            vec![("not_a_choice", 5), ("valid", 15)],
        ),
        (
            choice(true),
            unasked(),
            vec![("not_a_choice", 5), ("valid", 15)],
        ),
        (
            StructuredOutput::builtin_json(),
            None,
            vec![("not_json", 3), ("schema_mismatch", 2), ("valid", 15)],
        ),
        (
            regex(BUILTIN_PATTERN),
            unasked(),
            vec![("regex_mismatch", 20)],
        ),
    ];
    for (spec, extra, expected) in cases {
        let case = format!("{} {extra:?}", spec.kind());
        let (result, records, doc) =
            guided_run_on(BackendKind::Openai, spec, 0.25, extra.clone()).await;
        assert_eq!(
            verdicts(&records),
            BTreeMap::from_iter(expected.iter().copied()),
            "{case}"
        );
        let valid = expected
            .iter()
            .find(|(v, _)| *v == "valid")
            .map_or(0, |e| e.1);
        let st = result.summary.structured.as_ref().expect("structured");
        assert_eq!((st.checked, st.valid), (N, valid), "{case}");
        assert_eq!(
            st.correct_rate,
            Some(valid as f64 * 100.0 / N as f64),
            "{case}"
        );
        assert_eq!(result.summary.good_requests, Some(valid), "{case}");
        assert_eq!(doc["backend"], "openai", "{case}");
        assert_eq!(doc["config"]["endpoint"], "/v1/completions", "{case}");
    }
}

/// A server that answers something else (here the simulator, its
/// `structured_outputs` field replaced by null through --extra-body, answers plain text):
/// every choice answer is `not_a_choice` and every regex answer `regex_mismatch`, each with
/// the text's start; a grammar run's answers are `unchecked`, outside correct_rate, which is
/// then not reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_answers_get_their_verdict_and_grammar_is_unchecked() {
    let unasked = Some(serde_json::json!({"structured_outputs": null}));
    let spec = StructuredOutput::Choice {
        choices: vec!["Positive".into(), "Negative".into()],
        legacy_fields: false,
    };
    let (result, records, _) = guided_run(spec, 0.0, unasked.clone()).await;
    assert_eq!(verdicts(&records), BTreeMap::from([("not_a_choice", N)]));
    assert_eq!(
        result.summary.structured.as_ref().unwrap().correct_rate,
        Some(0.0)
    );
    for r in &records {
        let why = r.output_check.as_ref().unwrap().why.clone().unwrap();
        assert!(
            why.starts_with('"') && why.contains("is not one of the 2 choices"),
            "{why}"
        );
    }
    let (_, records, _) = guided_run(regex(BUILTIN_PATTERN), 0.0, unasked).await;
    assert_eq!(verdicts(&records), BTreeMap::from([("regex_mismatch", N)]));

    let grammar = StructuredOutput::Grammar {
        grammar: BUILTIN_GRAMMAR.into(),
        legacy_fields: false,
    };
    let (result, records, doc) = guided_run(grammar, 0.0, None).await;
    assert_eq!(verdicts(&records), BTreeMap::from([("unchecked", N)]));
    let st = result.summary.structured.as_ref().expect("structured");
    assert_eq!((st.checked, st.unchecked, st.valid), (0, N, 0));
    assert_eq!(
        (st.correct_rate, st.json_rate),
        (None, None),
        "no share measured"
    );
    assert!(doc.get("correct_rate(%)").is_none(), "{doc}");
}

/// A pattern that does not compile, an empty choice list, a grammar file that
/// is missing, empty or too large, a flag of another kind, a kind the backend cannot ask,
/// and valid_output:1 with unchecked grammar answers: each one line naming the flag (and
/// the file), exit 2, before anything runs.
#[test]
fn bad_guided_input_names_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.gbnf");
    std::fs::write(&empty, " \n").unwrap();
    let big = dir.path().join("big.gbnf");
    std::fs::write(&big, "a".repeat((1 << 20) + 1)).unwrap();
    let missing = dir.path().join("missing.gbnf");
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        (
            vec![
                "regex".into(),
                "--structured-output-regex".into(),
                "(a".into(),
            ],
            vec!["--structured-output-regex".into(), "unclosed group".into()],
        ),
        (
            vec![
                "choice".into(),
                "--structured-output-choices".into(),
                "".into(),
            ],
            vec!["--structured-output-choices".into(), "no choice".into()],
        ),
        (
            vec![
                "choice".into(),
                "--structured-output-choices".into(),
                "a,b,a".into(),
            ],
            vec!["--structured-output-choices".into(), "repeats".into()],
        ),
        (
            vec![
                "grammar".into(),
                "--structured-output-grammar".into(),
                s(&missing),
            ],
            vec!["--structured-output-grammar".into(), s(&missing)],
        ),
        (
            vec![
                "grammar".into(),
                "--structured-output-grammar".into(),
                s(&empty),
            ],
            vec!["--structured-output-grammar".into(), "empty".into()],
        ),
        (
            vec![
                "grammar".into(),
                "--structured-output-grammar".into(),
                s(&big),
            ],
            vec![
                "--structured-output-grammar".into(),
                "longer than 1048576 bytes".into(),
            ],
        ),
        (
            vec![
                "choice".into(),
                "--structured-output-regex".into(),
                "a+".into(),
            ],
            vec![
                "--structured-output-regex".into(),
                "--structured-output regex".into(),
            ],
        ),
        (
            vec![
                "regex".into(),
                "--backend".into(),
                "openai-responses".into(),
            ],
            vec!["--structured-output".into(), "openai or openai-chat".into()],
        ),
        (
            vec!["choice".into(), "--backend".into(), "tgi".into()],
            vec!["--structured-output".into(), "not --backend tgi".into()],
        ),
        (
            vec!["tools".into(), "--backend".into(), "openai".into()],
            vec!["--structured-output".into(), "not --backend openai".into()],
        ),
        (
            vec![
                "grammar".into(),
                "--goodput".into(),
                "valid_output:1".into(),
            ],
            vec!["--goodput".into(), "not checked".into()],
        ),
    ];
    for (args, named) in cases {
        let mut cmd = servebench();
        cmd.args(["run", "--num-prompts", "2", "--quiet", "--result-dir"])
            .arg(dir.path());
        if !args.contains(&"--backend".to_string()) {
            cmd.args(["--backend", "openai-chat"]);
        }
        let out = cmd.arg("--structured-output").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        for n in named {
            assert!(err.contains(&n), "{args:?}: names {n}: {err}");
        }
    }
}

/// The report's structured block names the kind and what was asked; a choice
/// run shows correct_rate(%) and no JSON share, a grammar run its answers not checked and no
/// rate; the CSV carries correct_rate(%) of the choice run.
#[test]
fn the_report_shows_the_guided_kind() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, args: &[&str]| {
        let out = servebench()
            .args(["run", "--backend", "openai-chat", "--sim-preset", "exact"])
            .args([
                "--num-prompts",
                "4",
                "--max-concurrency",
                "2",
                "--output-len",
                "12",
            ])
            .args(["--no-tui", "--structured-output"])
            .args(args)
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
    let report = run(
        "c.json",
        &["choice", "--structured-output-choices", "yes,no"],
    );
    assert!(report.contains("Structured output (choice)"), "{report}");
    assert!(report.contains(r#"one of ["yes", "no"]"#), "{report}");
    assert!(report.contains("4 (100.00%)"), "{report}");
    assert!(!report.contains("Parsed as JSON"), "{report}");
    let report = run("g.json", &["grammar"]);
    assert!(report.contains("Structured output (grammar)"), "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("Answers not checked:") && l.trim_end().ends_with(" 4")),
        "{report}"
    );
    assert!(!report.contains("correct_rate"), "{report}");
    let csv = stdout_of(&[
        "report",
        path_str(&dir.path().join("c.json")),
        "--format",
        "csv",
    ]);
    assert!(
        csv.lines()
            .next()
            .unwrap_or_default()
            .contains("correct_rate(%)"),
        "{csv}"
    );
}

/// A choice may hold a comma when the choices are a JSON array: against the exact
/// simulator every answer is one of them, "yes, sir" among them, and judged valid.
#[test]
fn a_choice_with_a_comma_is_answered_and_valid() {
    let dir = tempfile::tempdir().unwrap();
    let out = servebench()
        .args(["run", "--backend", "openai-chat", "--sim-preset", "exact"])
        .args([
            "--num-prompts",
            "8",
            "--max-concurrency",
            "2",
            "--output-len",
            "12",
        ])
        .args(["--no-tui", "--structured-output", "choice"])
        .args(["--structured-output-choices", r#"["yes, sir", "no"]"#])
        .args(["--result-filename", "c.json", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}\n{err}");
    assert!(report.contains(r#"one of ["yes, sir", "no"]"#), "{report}");
    assert!(report.contains("8 (100.00%)"), "{report}");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("c.json")).unwrap()).unwrap();
    assert_eq!(
        doc["config"]["structured"]["choices"],
        serde_json::json!(["yes, sir", "no"]),
        "{}",
        doc["config"]["structured"]
    );
}

/// --structured-output-legacy-fields sends vLLM's older top-level field
/// (`guided_choice`) instead of `structured_outputs`: with `structured_outputs` nulled
/// through --extra-body, the simulator still answers the choices from `guided_choice`, so
/// of 20 answers at an invalid rate of 0.25 exactly 15 are valid; the flag is refused with
/// json or tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_older_guided_fields_are_sent_on_request() {
    let spec = StructuredOutput::Choice {
        choices: vec!["Positive".into(), "Negative".into()],
        legacy_fields: true,
    };
    let unasked = Some(serde_json::json!({"structured_outputs": null}));
    let (result, records, doc) = guided_run(spec, 0.25, unasked).await;
    let expected = BTreeMap::from([("not_a_choice", 5), ("valid", 15)]);
    assert_eq!(verdicts(&records), expected);
    assert_eq!(
        result.summary.structured.as_ref().unwrap().correct_rate,
        Some(75.0)
    );
    assert_eq!(doc["config"]["structured"]["legacy_fields"], true);
    let out = servebench()
        .args([
            "run",
            "--backend",
            "openai-chat",
            "--structured-output",
            "json",
        ])
        .arg("--structured-output-legacy-fields")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--structured-output-legacy-fields") && err.trim().lines().count() == 1,
        "{err}"
    );
}

/// Every tool call of an answer is checked, not only the first. The exact
/// simulator answers each request with 2 calls (`tool_calls_per_answer`: the second calls
/// the tool after the first's; chat's `tool_calls[index]`, Anthropic's `tool_use` blocks), an
/// invalid answer's second call the invalid one: at an invalid rate of 0.25, of 20 answers
/// exactly 15 valid, 3 whose second call is not JSON and 2 whose second call is JSON of the
/// wrong shape, each named by its place; every answer counted with its 2 calls (mean 2 per
/// answer), its tokens the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_call_of_an_answer_is_checked_against_the_exact_simulator() {
    every_tool_call_checked(&[BackendKind::OpenaiChat, BackendKind::AnthropicMessages]).await;
}

/// The simulator's Responses API answers several tool calls, a `function_call`
/// output item each (told apart by `output_index` and `item_id`), and servebench's Responses
/// client reads each: the same exact counts as chat's and Messages'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_call_of_a_responses_answer_is_checked() {
    every_tool_call_checked(&[BackendKind::OpenaiResponses]).await;
}

/// The 2-calls-per-answer run of the two tests above on each of `backends`.
async fn every_tool_call_checked(backends: &[BackendKind]) {
    for &backend in backends {
        let sim_cfg = SimConfig {
            ttft: Duration::from_millis(TTFT_MS as u64),
            itl: Duration::from_millis(2),
            seed: 7,
            invalid_output_rate: 0.25,
            tool_calls_per_answer: 2,
            ..SimConfig::default()
        };
        let server = common::spawn_sim(sim_cfg).await;
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(server.base_url(), StructuredOutput::builtin_tools());
        cfg.backend = backend;
        cfg.endpoint = backend.default_endpoint().into();
        let (result, records) = execute(cfg, dir.path(), "result.json", false).await;
        server.shutdown().await;
        let case = format!("{backend:?}");
        assert_eq!(
            (result.summary.completed, result.summary.failed),
            (N, 0),
            "{case}"
        );
        let expected = BTreeMap::from([("not_json", 3), ("schema_mismatch", 2), ("valid", 15)]);
        assert_eq!(verdicts(&records), expected, "{case}");
        let st = result.summary.structured.as_ref().expect("structured");
        assert_eq!((st.checked, st.valid, st.tool_calls), (N, 15, N), "{case}");
        assert_eq!(st.mean_tool_calls_per_answer, Some(2.0), "{case}");
        assert_eq!(result.summary.good_requests, Some(15), "{case}");
        for r in &records {
            assert_eq!(r.output_tokens, Some(OUTPUT), "{case}: the server's count");
            let c = r.output_check.as_ref().unwrap();
            assert_eq!(c.tool_calls, 2, "{case}");
            assert!(
                c.tool.is_some(),
                "{case}: the first call's function is named"
            );
            if c.verdict != Verdict::Valid {
                let why = c.why.as_deref().unwrap();
                assert!(why.starts_with("call 2 of 2: "), "{case}: {why}");
            }
        }
    }
}

/// The pattern of the hostile regex finding: accepted by the limits, its automaton is
/// exponential for a DFA and 10,000 states for an NFA (a plain search of a 1 MB answer took
/// 74-90 s of CPU).
const HOSTILE_PATTERN: &str = "[01]*1[01]{10000}";

/// The bytes of each hostile answer: as long as the check keeps (1 MiB).
const HOSTILE_BYTES: &str = "1000000";

/// `servebench run` against `url` (a simulator answering every structured request with a
/// hostile answer), `n` requests one at a time with `args`, writing `r.json` into `dir`.
fn hostile_run(url: &str, dir: &std::path::Path, n: u64, args: &[&str]) -> std::process::Command {
    let mut cmd = servebench();
    cmd.args(["run", "--base-url", url, "--backend", "openai-chat"])
        .args([
            "--tokenizer",
            "words",
            "--input-len",
            "8",
            "--output-len",
            "8",
        ])
        .args(["--num-prompts", &n.to_string(), "--max-concurrency", "1"])
        .args(["--quiet", "--result-filename", "r.json", "--result-dir"])
        .arg(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    cmd
}

fn regex_args() -> Vec<&'static str> {
    vec![
        "--structured-output",
        "regex",
        "--structured-output-regex",
        HOSTILE_PATTERN,
    ]
}

/// Found: the check of a structured answer ran on the thread that reads every stream, with
/// no budget. A regex the limits accept against one 1 MB answer took 74-90 s of CPU; the run
/// stalled for minutes and then called the answer checked. Now the check runs off that
/// thread with a work budget: over it the verdict is `unchecked`, saying so, counted apart
/// (outside `correct_rate`), and the run of three such answers (its pre-flight too) ends in
/// seconds (the bound, 60 s, only says it did not stall for minutes).
#[test]
fn a_hostile_regex_answer_is_unchecked_not_a_stall() {
    let sim = common::SimProcess::start(&["--hostile-answer-bytes", HOSTILE_BYTES]);
    let dir = tempfile::tempdir().unwrap();
    let child = hostile_run(&sim.url, dir.path(), 2, &regex_args())
        .spawn()
        .unwrap();
    let out = common::finish_within(child, Duration::from_secs(60), "a hostile regex");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let records = common::read_records(&dir.path().join("r.records.jsonl"));
    assert_eq!(verdicts(&records), BTreeMap::from([("unchecked", 2)]));
    for r in &records {
        let check = r.output_check.as_ref().unwrap();
        assert!(check.over_budget, "{check:?}");
        let why = check.why.as_deref().unwrap_or("");
        assert!(why.contains("budget"), "{why}");
    }
    let doc = common::json(&dir.path().join("r.json"));
    let st = &doc["summary"]["structured"];
    assert_eq!(
        (st["checked"].as_u64(), st["unchecked"].as_u64()),
        (Some(0), Some(2)),
        "{st}"
    );
    assert_eq!(st["over_budget"].as_u64(), Some(2), "{st}");
    assert!(st["correct_rate"].is_null(), "no answer checked: no share");
    let report = stdout_of(&["report", path_str(&dir.path().join("r.json"))]);
    assert!(report.contains("over the check's budget"), "{report}");
}

/// Found: Ctrl-C during a hostile check was lost (three SIGINTs), and the run ended
/// `complete: true`, exit 0. Now the measuring thread never runs a check: a SIGINT sent
/// while the run meets hostile answers ends it within seconds (bound 20 s; it took minutes),
/// saved with `complete: false`, every planned request accounted for.
#[test]
fn a_signal_during_hostile_checks_stops_the_run_saved_incomplete() {
    let sim = common::SimProcess::start(&["--hostile-answer-bytes", HOSTILE_BYTES]);
    let dir = tempfile::tempdir().unwrap();
    let child = hostile_run(&sim.url, dir.path(), 1000, &regex_args())
        .spawn()
        .unwrap();
    let records = dir.path().join("r.records.jsonl");
    // The records file opens when the measured load starts (after the pre-flight's check);
    // a client stalled in its first check never gets there.
    common::wait_for("the measured load", Duration::from_secs(60), || {
        std::fs::metadata(&records).is_ok_and(|m| m.len() > 0)
    });
    // SAFETY: a signal to our own child, which has not been reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = common::finish_within(child, Duration::from_secs(20), "SIGINT in hostile checks");
    assert!(out.status.code().is_some(), "it ended on its own: {out:?}");
    let doc = common::json(&dir.path().join("r.json"));
    assert_eq!(doc["complete"], serde_json::json!(false), "{doc}");
    let n = |k: &str| doc[k].as_u64().unwrap();
    assert_eq!(n("completed") + n("failed") + n("unsent"), 1000);
    let saved = common::read_records(&records);
    assert_eq!(saved.len() as u64, n("completed") + n("failed"));
}

/// Found: a schema `enum` was checked by a linear search per item, so a 50,000-value enum
/// against a 1 MB list of its last value took 26-37 s per answer. Now each enum is a hash set
/// built once per schema: the answers are checked, `valid`, and the run of three (its
/// pre-flight too) ends in seconds (the bound, 60 s, only says it did not take minutes).
#[test]
fn a_huge_enum_is_checked_in_constant_time_per_item() {
    let sim = common::SimProcess::start(&["--hostile-answer-bytes", HOSTILE_BYTES]);
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<String> = (0..50_000).map(|i| format!("v{i}")).collect();
    let schema = serde_json::json!({"type": "array", "items": {"enum": values}});
    let path = dir.path().join("schema.json");
    std::fs::write(&path, schema.to_string()).unwrap();
    let args = [
        "--structured-output",
        "json",
        "--json-schema-path",
        path_str(&path),
    ];
    let child = hostile_run(&sim.url, dir.path(), 2, &args).spawn().unwrap();
    let out = common::finish_within(child, Duration::from_secs(60), "a huge enum");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let records = common::read_records(&dir.path().join("r.records.jsonl"));
    assert_eq!(verdicts(&records), BTreeMap::from([("valid", 2)]));
}
