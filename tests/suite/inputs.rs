//! With the binary as a user runs it against the built-in exact
//! simulator: a model's chat template is untrusted code (every render bounded, off the
//! measuring thread, a failure named on its turn, signals heard whatever a template does), and
//! small inputs cannot ask for huge work (history limits, time spans, trace fields); a graph
//! file's jobs are sent call by call, and a bad job is refused in one line.
//!
//! The tokenizer is a word-level tokenizer.json written here (one token a whitespace-separated
//! word, as the simulator counts), with the `tokenizer_config.json` beside it carrying the
//! template under test; conversations come from a jsonl file's `turns` lines and go to the
//! completions API, which takes a prompt: the history is rendered with the template.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use servebench::measure::record::RequestRecord;

use crate::common;

use common::{finish_within, servebench};

/// A template that renders turns as `role: content` lines, running `extra` first.
fn template(extra: &str) -> String {
    format!(
        "{extra}{{% for m in messages %}}{{{{ m['role'] }}}}: {{{{ m['content'] }}}}\n\
         {{% endfor %}}assistant:"
    )
}

/// Runs `extra` only from turn 2 on (five messages: user, assistant, user, assistant, user).
fn from_turn_2(body: &str) -> String {
    template(&format!(
        "{{% if messages|length > 3 %}}{body}{{% endif %}}"
    ))
}

/// Nested loops of 10^10 steps.
const LOOPS: &str =
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";

/// A directory with a word-level tokenizer.json, the template in its tokenizer_config.json,
/// and `conversations` jsonl lines of three turns of `words` words each.
fn setup(dir: &Path, chat_template: &str, conversations: usize, words: usize) {
    use tokenizers::models::wordlevel::WordLevel;
    use tokenizers::pre_tokenizers::whitespace::WhitespaceSplit;
    let vocab = [("[UNK]", 0), ("user", 1), ("assistant", 2)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let model = WordLevel::builder()
        .vocab(vocab)
        .unk_token("[UNK]".into())
        .build()
        .unwrap();
    let mut tok = tokenizers::Tokenizer::new(model);
    tok.with_pre_tokenizer(Some(WhitespaceSplit));
    tok.save(dir.join("tokenizer.json"), false).unwrap();
    let config = serde_json::json!({ "chat_template": chat_template, "eos_token": "</s>" });
    std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
    let turn = |k: usize| format!("turn{k} ").repeat(words);
    let line = serde_json::json!({ "turns": [turn(0), turn(1), turn(2)] }).to_string();
    std::fs::write(
        dir.join("talks.jsonl"),
        format!("{line}\n").repeat(conversations),
    )
    .unwrap();
}

/// `servebench run` against the exact simulator with the conversations of `setup`.
fn command(dir: &Path, more: &[&str]) -> Command {
    let mut cmd = servebench();
    cmd.args(["run", "--sim-preset", "exact", "--output-len", "4"])
        .args(["--quiet", "--dataset-name", "jsonl"]);
    if !more.contains(&"--num-prompts") {
        cmd.args(["--num-prompts", "4"]);
    }
    cmd.args(["--dataset-path", dir.join("talks.jsonl").to_str().unwrap()])
        .args(["--tokenizer", dir.to_str().unwrap()])
        .args(["--result-dir", dir.to_str().unwrap()])
        .args(["--result-filename", "r.json"])
        .args(more)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn records(dir: &Path) -> Vec<RequestRecord> {
    common::read_records(&dir.join("r.records.jsonl"))
}

/// The failed records' (turn, message), all failed as `prompt`.
fn prompt_failures(rs: &[RequestRecord]) -> Vec<(Option<u32>, String)> {
    (rs.iter())
        .filter_map(|r| match &r.outcome {
            servebench::measure::record::Outcome::Failed { kind, message } => {
                assert_eq!(kind.as_str(), "prompt", "{message}");
                Some((r.turn, message.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_template_that_fails_at_turn_2_fails_that_turn_by_name() {
    // It went out as plain joined text, exit 0, no warning.
    let dir = tempfile::tempdir().unwrap();
    let raising = from_turn_2("{{ raise_exception('only two turns') }}");
    setup(dir.path(), &raising, 4, 3);
    let child = command(dir.path(), &[]).spawn().unwrap();
    let out = finish_within(child, Duration::from_secs(120), "raising");
    assert!(out.status.success(), "{out:?}");
    let rs = records(dir.path());
    assert_eq!(rs.len(), 12, "every turn has its record");
    let failed = prompt_failures(&rs);
    assert_eq!(failed.len(), 4, "{failed:?}");
    for (turn, message) in &failed {
        assert_eq!(*turn, Some(2));
        assert!(
            message.contains("only two turns") && message.contains("tokenizer_config.json"),
            "{message}"
        );
    }
    // Turns 0 and 1 went out rendered with the template (the simulator counts its words).
    let turn1 = rs.iter().find(|r| r.turn == Some(1)).unwrap();
    let reply = 4;
    // "user: turn0 x3", "assistant: <4 words>", "user: turn1 x3", "assistant:".
    assert_eq!(turn1.prompt_tokens, Some(1 + 3 + 1 + reply + 1 + 3 + 1));
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(
        result["summary"]["failures_by_kind"]["prompt"], 4,
        "{result}"
    );
}

#[test]
fn a_looping_template_fails_its_turn_and_the_run_ends() {
    // It froze the client for ever (and with two client threads, the saving never ended).
    for threads in ["1", "2"] {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path(), &from_turn_2(LOOPS), 4, 3);
        let child = command(dir.path(), &["--client-threads", threads])
            .spawn()
            .unwrap();
        let case = format!("--client-threads {threads}");
        let out = finish_within(child, Duration::from_secs(120), &case);
        assert!(out.status.success(), "{case}: {out:?}");
        let failed = prompt_failures(&records(dir.path()));
        assert_eq!(failed.len(), 4, "{case}: {failed:?}");
        assert!(
            failed.iter().all(|(_, m)| m.contains("ran out of fuel")),
            "{failed:?}"
        );
    }
    // A template building a huge string (a 3.2 GB allocation aborted the client) too.
    let dir = tempfile::tempdir().unwrap();
    let doubling = "{% set ns = namespace(s='x') %}{% for i in range(40) %}\
                    {% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}";
    setup(dir.path(), &from_turn_2(doubling), 4, 3);
    let out = finish_within(
        command(dir.path(), &[]).spawn().unwrap(),
        Duration::from_secs(120),
        "huge",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(prompt_failures(&records(dir.path())).len(), 4);
}

#[test]
fn a_template_that_cannot_render_refuses_the_run_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &template(LOOPS), 4, 3);
    let out = finish_within(
        command(dir.path(), &[]).spawn().unwrap(),
        Duration::from_secs(120),
        "start-up",
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("tokenizer_config.json") && stderr.contains("fuel"),
        "{stderr}"
    );
    assert!(!dir.path().join("r.json").exists());
}

#[cfg(unix)]
#[test]
fn signals_are_heard_whatever_the_template_does() {
    // SIGTERM was ignored while a template looped (only SIGKILL ended it, nothing saved).
    for threads in ["1", "2"] {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path(), &from_turn_2(LOOPS), 40, 3);
        // A conversation a second: each one's turn 2 meets the loop.
        let mut child = command(dir.path(), &["--num-prompts", "40", "--request-rate", "1"])
            .args(["--client-threads", threads, "--grace", "1"])
            .spawn()
            .unwrap();
        // Once the measured load has started (its records file is open), the first
        // conversations reach their turn 2 within two seconds.
        common::wait_for("the load's start", Duration::from_secs(60), || {
            if child.try_wait().unwrap().is_some() {
                panic!("it ended before its load");
            }
            dir.path().join("r.records.jsonl").exists()
        });
        // The child cannot say when a render has begun looping; the first conversations'
        // turn 2 begin within this margin of the load's start (a conversation a second).
        std::thread::sleep(Duration::from_secs(2));
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let case = format!("--client-threads {threads}");
        let out = finish_within(child, Duration::from_secs(60), &case);
        assert!(out.status.code().is_some(), "{case}: {out:?}");
        let result: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
        assert_eq!(result["complete"], false, "{case}");
        let rs = records(dir.path());
        assert!(
            rs.len() < 80 && !prompt_failures(&rs).is_empty(),
            "{case}: {}",
            rs.len()
        );
    }
}

#[test]
fn a_history_past_its_limit_ends_the_conversation_by_name() {
    // Histories grew without limit (2 MB replies over 40 turns: 41 MB request bodies).
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &template(""), 4, 100);
    // Turn 0: 600 bytes; with its reply and turn 1, past 1 KiB.
    let out = command(dir.path(), &["--max-history-bytes", "1KiB"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let failed = prompt_failures(&records(dir.path()));
    assert_eq!(failed.len(), 4, "{failed:?}");
    for (turn, message) in &failed {
        assert_eq!(*turn, Some(1));
        assert!(message.contains("--max-history-bytes 1024"), "{message}");
    }
    // In tokens: 100 + 4 + 100 fit 204, the third turn's 308 does not.
    let out = command(dir.path(), &["--max-history-tokens", "204", "--overwrite"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let failed = prompt_failures(&records(dir.path()));
    assert_eq!(failed.len(), 4, "{failed:?}");
    assert!(failed
        .iter()
        .all(|(t, m)| *t == Some(2) && m.contains("--max-history-tokens 204")));
}

#[test]
fn time_spans_and_rates_are_capped_at_a_week_by_flag() {
    let dir = tempfile::tempdir().unwrap();
    for (args, flag) in [
        (
            &["--think-time", "1e300", "--turns", "2"][..],
            "--think-time",
        ),
        (&["--think-time", "NaN", "--turns", "2"], "--think-time"),
        (&["--think-time=-1", "--turns", "2"], "--think-time"),
        (&["--duration", "1e300"], "--duration"),
        (&["--duration", "inf"], "--duration"),
        (&["--stages", "5:1e300"], "--stages"),
        (&["--stages", "5:400000,5:400000"], "--stages"),
        (&["--request-rate", "1e-300"], "--request-rate"),
        (&["--request-rate", "NaN"], "--request-rate"),
        (&["--cooldown", "1e300"], "--cooldown"),
        (&["--grace", "1e300"], "--grace"),
        (&["--scrape-interval", "1e300"], "--scrape-interval"),
        (
            &[
                "--ramp-up-strategy",
                "linear",
                "--ramp-up-start-rps",
                "0",
                "--ramp-up-end-rps",
                "1e-300",
            ],
            "--ramp-up-end-rps",
        ),
        (&["--turns", "101"], "--turns"),
        (&["--turns", "100", "--num-prompts", "10000000"], "--turns"),
        (
            &["--num-prompts", "1000000", "--input-len", "10000"],
            "--num-prompts",
        ),
        (
            &["--max-history-bytes", "0", "--turns", "2"],
            "--max-history-bytes",
        ),
        (
            &["--max-history-tokens", "20000000", "--turns", "2"],
            "--max-history-tokens",
        ),
    ] {
        let out = servebench()
            .args(["run", "--sim-preset", "exact", "--quiet"])
            .args(["--result-dir", dir.path().to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(lines[0].contains(flag), "{args:?}: {stderr}");
        assert!(!lines[0].contains("panicked"), "{args:?}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// `servebench run` of the trace at `trace` with `more`, within a minute.
fn replay(dir: &Path, trace: &Path, more: &[&str]) -> Output {
    let child = servebench()
        .args([
            "run",
            "--sim-preset",
            "exact",
            "--quiet",
            "--dataset-name",
            "trace",
        ])
        .args(["--dataset-path", trace.to_str().unwrap()])
        .args(["--result-dir", dir.to_str().unwrap()])
        .args(more)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish_within(child, Duration::from_secs(60), &format!("{more:?}"))
}

#[test]
fn a_tiny_trace_cannot_ask_for_huge_work() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let trace = dir.path().join("t.jsonl");
    let huge = format!("{{\"timestamp\": 0, \"hash_ids\": [{}]}}\n", ids.join(","));
    assert!(huge.len() < 1500);
    let cases = [
        // 1.4 KB asking for 314 million tokens (it aborted out of memory).
        (huge.as_str(), "1048576", "line 1"),
        // max_tokens of 10^18, and a send time decades away.
        (
            "{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 1000000000000000000}\n",
            "512",
            "output_length",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 8}\n{\"timestamp\": 1e300, \"input_length\": 8}\n",
            "512",
            "line 2",
        ),
    ];
    for (body, block, says) in cases {
        std::fs::write(&trace, body).unwrap();
        let out = replay(dir.path(), &trace, &["--trace-block-size", block]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{says}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("t.jsonl") && stderr.contains(says),
            "{stderr}"
        );
    }
    // A trace stretched past a week by --trace-speedup.
    let body =
        "{\"timestamp\": 0, \"input_length\": 8}\n{\"timestamp\": 1000, \"input_length\": 8}\n";
    std::fs::write(&trace, body).unwrap();
    let out = replay(dir.path(), &trace, &["--trace-speedup", "1e-9"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--trace-speedup"), "{stderr}");
}

/// A graph file against the exact simulator, counted in words (no `--tokenizer`): every call
/// of every job is sent and recorded (3 jobs of a 2-job file: the file used again), each
/// asking for its own `output_len` or `--output-len`'s; a job with a cycle is refused in one
/// line naming the file and its line, exit 2, and nothing is written.
#[test]
fn graph_jobs_send_every_call_and_a_bad_job_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.jsonl");
    let fan = r#"{"calls": [{"id": "plan", "prompt": "Plan a trip.", "output_len": 3}, {"id": "a", "after": ["plan"], "gap_ms": 5, "input_len": 6, "splice": ["plan"], "output_len": 2}, {"id": "b", "after": ["plan"], "input_len": 6, "output_len": 2}, {"id": "answer", "after": ["a", "b"], "prompt": "Write it up.", "splice": ["a", "b"]}]}"#;
    let pair = r#"{"calls": [{"id": "y", "after": ["x"], "prompt": "second", "splice": ["x"]}, {"id": "x", "input_len": 3, "output_len": 1}]}"#;
    let run = |body: String| {
        std::fs::write(&jobs, body).unwrap();
        let child = servebench()
            .args([
                "run",
                "--sim-preset",
                "exact",
                "--quiet",
                "--output-len",
                "4",
            ])
            .args(["--dataset-name", "graph", "--num-prompts", "3"])
            .args(["--dataset-path", jobs.to_str().unwrap()])
            .args(["--result-dir", dir.path().to_str().unwrap()])
            .args(["--result-filename", "r.json"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        finish_within(child, Duration::from_secs(60), "graph")
    };
    let out = run(format!("{fan}\n\n{pair}\n"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rs = records(dir.path());
    assert_eq!(rs.len(), 4 + 2 + 4, "every call of the 3 jobs");
    assert!(rs.iter().all(|r| r.outcome.is_ok()), "{rs:?}");
    let asked: u64 = rs.iter().filter_map(|r| r.output_len_requested).sum();
    assert_eq!(asked, 2 * (3 + 2 + 2 + 4) + (1 + 4));
    let _ = std::fs::remove_file(dir.path().join("r.json"));
    let _ = std::fs::remove_file(dir.path().join("r.records.jsonl"));
    let cycle = r#"{"calls": [{"id": "a", "after": ["b"], "input_len": 1}, {"id": "b", "after": ["a"], "input_len": 1}]}"#;
    let out = run(format!("{fan}\n{cycle}\n"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("jobs.jsonl line 2") && stderr.contains(r#"cycle: "a" -> "b" -> "a""#),
        "{stderr}"
    );
    assert!(!dir.path().join("r.json").exists());
}
