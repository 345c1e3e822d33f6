//! Load shaped in time, with the binary as a user runs it against the built-in
//! exact-mode simulator at `--time-scale 10` (ten simulated seconds take one real second;
//! every figure and flag is in simulated time): `--duration`, vLLM's ramp, `--stages`,
//! `--duration-cancel`, the early stop against a simulator that fails half its requests, and
//! `--time-slice` showing a stage change in the window it happened.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use servebench::measure::record::RequestRecord;

use crate::common;

use common::{json, read_records, servebench};

/// Runs the built-in exact simulator ten times faster than real time (TTFT 50 ms, ITL 10 ms,
/// simulated), saving `name` in `dir`; 8 output tokens unless `more` says.
fn run(dir: &Path, name: &str, more: &[&str]) -> Output {
    let len = if more.contains(&"--output-len") {
        &[][..]
    } else {
        &["--output-len", "8"][..]
    };
    servebench()
        .args(["run", "--sim-preset", "exact", "--time-scale", "10"])
        .args(len)
        .args(["--quiet", "--result-filename", name])
        .args(["--result-dir", dir.to_str().unwrap()])
        .args(more)
        .output()
        .unwrap()
}

/// Simulated seconds from the run's first scheduled send to each record's send.
fn send_offsets_s(rs: &[RequestRecord]) -> Vec<f64> {
    let t0 = rs.iter().map(|r| r.scheduled_ns).min().unwrap();
    rs.iter()
        .map(|r| (r.sent_ns - t0) as f64 * 10.0 / 1e9)
        .collect()
}

#[test]
fn duration_sends_for_its_window_then_drains() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "d.json",
        &["--duration", "10", "--request-rate", "20", "--grace", "5"],
    );
    assert!(out.status.success(), "{out:?}");
    let r = json(&dir.path().join("d.json"));
    let sent =
        r["summary"]["completed"].as_u64().unwrap() + r["summary"]["failed"].as_u64().unwrap();
    assert!(
        (180..=220).contains(&sent),
        "{sent} sent, 200 ± 10% expected"
    );
    assert_eq!(r["complete"], true);
    // Drained within --grace: every request finished, none cancelled.
    let end = &r["window_end"];
    assert_eq!(end["cancelled"], 0, "{end}");
    assert_eq!(end["drained"], end["in_flight"], "{end}");
    let rs = read_records(&dir.path().join("d.records.jsonl"));
    // None is scheduled past the window (one due just before its end may go a timer tick
    // after it: its schedule lag shows that).
    let t0 = rs.iter().map(|r| r.scheduled_ns).min().unwrap();
    let in_window = |r: &RequestRecord| ((r.scheduled_ns - t0) as f64 * 10.0 / 1e9) < 10.0;
    assert!(rs.iter().all(in_window), "a send past the window");
    // The run ended within the grace period of its 10 s (simulated).
    let duration = r["duration"].as_f64().unwrap();
    assert!(duration < 15.0, "duration {duration}");
}

#[test]
fn duration_cancel_cancels_what_is_in_flight_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    // 64 tokens take 0.68 s (simulated): about 14 requests are in flight at the end.
    let out = run(
        dir.path(),
        "c.json",
        &[
            "--duration",
            "5",
            "--request-rate",
            "20",
            "--duration-cancel",
            "--output-len",
            "64",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let r = json(&dir.path().join("c.json"));
    let end = &r["window_end"];
    let in_flight = end["in_flight"].as_u64().unwrap();
    assert!(in_flight > 0, "{end}");
    assert_eq!(
        end["cancelled"].as_u64().unwrap() + end["drained"].as_u64().unwrap(),
        in_flight
    );
    assert_eq!(
        r["summary"]["failures_by_kind"]["cancelled"],
        end["cancelled"]
    );
    assert_eq!(end["cancel_mode"], true);
    // Cancelled as designed: the run is complete.
    assert_eq!(r["complete"], true);
}

#[test]
fn linear_ramp_sends_faster_and_faster() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "r.json",
        &[
            "--duration",
            "10",
            "--ramp-up-strategy",
            "linear",
            "--ramp-up-start-rps",
            "1",
            "--ramp-up-end-rps",
            "20",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let offsets = send_offsets_s(&read_records(&dir.path().join("r.records.jsonl")));
    let per_s = |a: f64, b: f64| offsets.iter().filter(|&&t| t >= a && t < b).count();
    // Expected 1 + 19 t / 10 per second: about 20 requests in 0-3 s, 52 in 3-6 s, 73 in 6-9 s.
    let (early, middle, late) = (per_s(0.0, 3.0), per_s(3.0, 6.0), per_s(6.0, 9.0));
    assert!(early < middle && middle < late, "{early} {middle} {late}");
    assert!(
        (100..=140).contains(&offsets.len()),
        "{} sent, ~105 expected",
        offsets.len()
    );
}

#[test]
fn stages_are_the_steps_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "s.json", &["--stages", "5:5,20:5"]);
    assert!(out.status.success(), "{out:?}");
    let doc = json(&dir.path().join("s.sweep.json"));
    assert_eq!(doc["parameter"], "request_rate");
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    let whole = json(&dir.path().join("s.json"));
    let mut total = 0;
    for (step, (rate, expected)) in steps.iter().zip([(5.0, 25), (20.0, 100)]) {
        let r = json(&dir.path().join(step["result"].as_str().unwrap()));
        assert_eq!(r["request_rate"], rate);
        let n = r["completed"].as_u64().unwrap();
        assert!(
            n * 10 >= expected * 6 && n * 10 <= expected * 14,
            "{n} vs {expected}"
        );
        // Every request of a stage was scheduled inside it.
        let records_file = dir.path().join(
            r["records_file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap(),
        );
        assert_eq!(read_records(&records_file).len() as u64, n);
        total += n;
    }
    assert_eq!(total, whole["completed"].as_u64().unwrap());
    // The staged run reads as a sweep.
    let report = servebench()
        .args(["report", dir.path().join("s.sweep.json").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");
}

/// The sum of `key` over a result's time-slice windows.
fn slices_sum(windows: &[Value], key: &str) -> f64 {
    windows.iter().map(|w| w[key].as_f64().unwrap()).sum()
}

#[test]
fn time_slices_show_a_stage_change_in_the_window_it_happened() {
    // 4 requests/s for 4 s, then 20/s for 4 s (simulated), at nearly even spacing (gamma
    // arrivals of shape 1000), cut into windows of 2 s: the first two windows see about 8
    // sends each, the next two about 40, and the windows add up to the whole run.
    let dir = tempfile::tempdir().unwrap();
    let staged = ["--stages", "4:4,20:4", "--burstiness", "1000"];
    let out = run(
        dir.path(),
        "t.json",
        &[&staged[..], &["--time-slice", "2"]].concat(),
    );
    assert!(out.status.success(), "{out:?}");
    let r = json(&dir.path().join("t.json"));
    assert_eq!(r["config"]["time_slice_s"], 2.0);
    let slices = &r["slices"];
    assert_eq!(slices["seconds"], 2.0);
    let w = slices["windows"].as_array().unwrap();
    assert!((4..=5).contains(&w.len()), "{} windows", w.len());
    let started: Vec<u64> = w.iter().map(|w| w["started"].as_u64().unwrap()).collect();
    for (i, expected) in [(0, 8), (1, 8), (2, 40), (3, 40)] {
        let n = started[i];
        assert!(
            n.abs_diff(expected) <= expected / 4 + 1,
            "window {i}: {started:?}"
        );
    }
    let tokens = |i: usize| w[i]["output_tokens"].as_f64().unwrap();
    assert!(tokens(2) > 3.0 * tokens(1), "{slices}");
    // Every request once, every token once: the windows are the run.
    let (completed, failed) = (
        r["completed"].as_f64().unwrap(),
        r["failed"].as_f64().unwrap(),
    );
    assert_eq!(slices_sum(w, "completed"), completed);
    assert_eq!(slices_sum(w, "started"), completed + failed);
    let total = r["total_output_tokens"].as_f64().unwrap();
    assert!(
        (slices_sum(w, "output_tokens") - total).abs() < 1e-6,
        "{total}"
    );
    // About 8 TTFTs: too few for a percentile; about 40: enough.
    assert_eq!(w[0]["ttft_ms"]["too_few"], true, "{}", w[0]);
    assert!(w[0]["ttft_ms"].get("p99").is_none());
    assert!(w[2]["ttft_ms"]["p99"].as_f64().unwrap() > 0.0, "{}", w[2]);
    let path = dir.path().join("t.json");
    let path = path.to_str().unwrap();
    let text = common::stdout_of(&["report", path]);
    assert!(text.contains("Time slices (2 s)"), "{text}");
    assert!(text.contains("too few"), "{text}");
    // Re-sliced from the records: windows of 4 s, a row each in the CSV, in its columns.
    let csv = common::stdout_of(&["report", path, "--time-slice", "4", "--format", "csv"]);
    let mut rows = csv.lines();
    let head: Vec<&str> = rows.next().unwrap().split(',').collect();
    assert_eq!(head, servebench::render::slices_csv::HEAD);
    let rows: Vec<Vec<&str>> = rows.map(|l| l.split(',').collect()).collect();
    assert!((2..=3).contains(&rows.len()), "{csv}");
    let sent = |row: &[&str]| row[3].parse::<u64>().unwrap();
    assert_eq!(sent(&rows[0]), started[0] + started[1]);
    assert_eq!(sent(&rows[1]), started[2] + started[3]);
    // The HTML page charts them.
    let html = common::stdout_of(&["report", path, "--format", "html"]);
    assert!(html.contains("id=\"slices-ttft\""), "no TTFT slice chart");
    // A sweep is not a result to re-slice; a slice out of bounds is refused before a run.
    let sweep = dir.path().join("t.sweep.json");
    let e = common::run_fails(&["report", sweep.to_str().unwrap(), "--time-slice", "1"]);
    assert!(
        e.contains("--time-slice") && e.trim().lines().count() == 1,
        "{e}"
    );
    for bad in ["0", "-1", "0.001", "nan", "1e9", "x"] {
        let flag = format!("--time-slice={bad}");
        let e = common::run_fails(&["run", "--sim-preset", "exact", &flag]);
        assert!(e.contains("--time-slice"), "{bad}: {e}");
    }
}

#[test]
fn time_slices_of_a_run_on_two_client_threads_hold_every_lane_s_requests() {
    // The lanes write one records file; the slices are cut from it, so they count every
    // lane's requests and tokens once, as the merged summary does.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--request-rate",
        "40",
        "--num-prompts",
        "120",
        "--client-threads",
        "2",
    ];
    let out = run(
        dir.path(),
        "c.json",
        &[&args[..], &["--time-slice", "1"]].concat(),
    );
    assert!(out.status.success(), "{out:?}");
    let r = json(&dir.path().join("c.json"));
    let w = r["slices"]["windows"].as_array().unwrap();
    assert_eq!(slices_sum(w, "completed"), r["completed"].as_f64().unwrap());
    assert_eq!(slices_sum(w, "started"), 120.0);
    let total = r["total_output_tokens"].as_f64().unwrap();
    assert!((slices_sum(w, "output_tokens") - total).abs() < 1e-6);
    let itl: u64 = w
        .iter()
        .map(|w| w["itl_ms"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(itl, r["summary"]["itl_ms"]["count"].as_u64().unwrap());
}

#[test]
fn early_stop_saves_what_it_has_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let sim = servebench()
        .args(["sim", "--port", "0", "--error-rate", "0.5", "--seed", "3"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut sim = KillOnDrop(sim);
    let url = common::sim_url(&mut sim.0);
    let out = servebench()
        .args(["run", "--base-url", &url, "--tokenizer", "words", "--quiet"])
        .args([
            "--num-prompts",
            "400",
            "--request-rate",
            "100",
            "--max-errors",
            "20",
        ])
        .args(["--output-len", "4", "--result-filename", "e.json"])
        .args(["--result-dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stopped early (max_errors: 20 requests failed"),
        "{stderr}"
    );
    let r = json(&dir.path().join("e.json"));
    assert_eq!(r["complete"], false);
    assert!(r["stopped_early"]
        .as_str()
        .unwrap()
        .starts_with("max_errors"));
    assert!(r["unsent"].as_u64().unwrap() > 0);
    // Every sent request is recorded, the failures with their cause.
    let rs = read_records(&dir.path().join("e.records.jsonl"));
    let failed = rs.iter().filter(|r| !r.is_ok()).count();
    assert!(failed >= 20, "{failed}");
    assert_eq!(rs.len() as u64 + r["unsent"].as_u64().unwrap(), 400);
    // A sweep that stops early at a step exits 1 as a single run does (it exited 0).
    let out = servebench()
        .args(["run", "--base-url", &url, "--tokenizer", "words", "--quiet"])
        .args(["--num-prompts", "200,400", "--request-rate", "100"])
        .args(["--max-errors", "20", "--output-len", "4"])
        .args(["--result-filename", "s.json"])
        .args(["--result-dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stopped early (max_errors"),
        "{out:?}"
    );
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The committed trace replayed against the simulator (real time): every request
/// is scheduled at its timestamp less the first and begun within 5 ms of it (95% of them:
/// the validity rule's bound on schedule lag; on a quiet machine all are within 2 ms,
/// `bench/trace_lag.sh`, but a shared 2-core VM's timer wake-ups vary by more), with exactly
/// its `input_length` (the simulator counts words); the report shows the trace's designed
/// prefix-cache hit rate. The schedule and the lengths are exact in every run; the send times,
/// measured against the schedule, on the best of up to 3 runs (a machine busy for a second
/// can delay more than 5% of them; a driver that sends late or at the wrong times fails all).
#[test]
fn trace_replay_sends_at_the_trace_times() {
    let dir = tempfile::tempdir().unwrap();
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mooncake_trace.jsonl");
    let lines: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut lateness = Vec::new();
    let (out, name) = loop {
        let name = format!("t{}", lateness.len());
        let out = servebench()
            .args(["run", "--sim-preset", "exact", "--dataset-name", "trace"])
            .args([
                "--dataset-path",
                trace.to_str().unwrap(),
                "--output-len",
                "4",
            ])
            .args(["--result-filename", &format!("{name}.json")])
            .args(["--result-dir", dir.path().to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let mut rs = read_records(&dir.path().join(format!("{name}.records.jsonl")));
        assert_eq!(rs.len(), lines.len());
        rs.sort_by_key(|r| r.id);
        let t0 = rs[0].scheduled_ns;
        let ts0 = lines[0]["timestamp"].as_u64().unwrap();
        let mut late = 0;
        for (r, l) in rs.iter().zip(&lines) {
            let at_ms = l["timestamp"].as_u64().unwrap() - ts0;
            assert_eq!(r.scheduled_ns - t0, at_ms * 1_000_000, "request {}", r.id);
            late += usize::from(r.began_ns() - r.scheduled_ns > 5_000_000);
            assert_eq!(r.prompt_tokens, l["input_length"].as_u64());
        }
        lateness.push(late);
        if late * 20 <= rs.len() {
            break (out, name);
        }
        assert!(
            lateness.len() < 3,
            "begun more than 5 ms late, of {}, in each run: {lateness:?}",
            rs.len()
        );
    };
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("Designed hit rate:"), "{report}");
    let r = json(&dir.path().join(format!("{name}.json")));
    assert_eq!(r["config"]["load"]["num_prompts"], lines.len());
}

/// Multi-turn conversations against the exact simulator (words are tokens). Three
/// conversations of four turns, two at a time: turn k + 1 starts after turn k ended, its
/// prompt is exactly turn k's prompt + its reply + 20 new words; the designed reuse is the
/// history, the simulator's cache reports the previous prompt's whole 16-word blocks; the
/// report shows TTFT
/// by turn, and never more than two conversations are in flight.
#[test]
fn conversations_grow_their_history_turn_by_turn() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "m.json",
        &[
            "--turns",
            "4",
            "--num-prompts",
            "3",
            "--max-concurrency",
            "2",
            "--input-len",
            "20",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let mut rs = read_records(&dir.path().join("m.records.jsonl"));
    assert_eq!(rs.len(), 12);
    rs.sort_by_key(|r| (r.conversation, r.turn));
    for conv in rs.chunks(4) {
        for (k, pair) in conv.windows(2).enumerate() {
            let (a, b) = (&pair[0], &pair[1]);
            assert_eq!(
                (b.conversation, b.turn),
                (a.conversation, Some(k as u32 + 1))
            );
            assert!(
                b.scheduled_ns >= a.end_ns,
                "turn {} before turn {k} ended",
                k + 1
            );
            let reply = a
                .generated_text
                .as_deref()
                .unwrap()
                .split_whitespace()
                .count() as u64;
            assert_eq!(
                b.prompt_tokens.unwrap(),
                a.prompt_tokens.unwrap() + reply + 20
            );
            assert_eq!(
                b.designed_cached_tokens,
                Some(a.prompt_tokens.unwrap() + a.output_tokens.unwrap())
            );
            // The simulator caches a prompt's whole 16-word blocks: the previous prompt's.
            let whole_blocks = a.prompt_tokens.unwrap() / 16 * 16;
            assert_eq!(b.cached_prompt_tokens, Some(whole_blocks));
        }
    }
    // At most two conversations at once: at any conversation's start, at most one other runs.
    let span = |c: &[RequestRecord]| (c[0].sent_ns, c[3].end_ns);
    let spans: Vec<(u64, u64)> = rs.chunks(4).map(span).collect();
    for &(s, _) in &spans {
        assert!(spans.iter().filter(|&&(a, b)| a <= s && s < b).count() <= 2);
    }
    let report = servebench()
        .args(["report", dir.path().join("m.json").to_str().unwrap()])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&report.stdout);
    assert!(report.contains("turn 4 mean / p99 (ms):"), "{report}");
    let r = json(&dir.path().join("m.json"));
    assert_eq!(r["summary"]["ttft_by_turn"].as_array().unwrap().len(), 4);
}

/// Sorted by (conversation, turn): each turn after the first was scheduled after the one
/// before ended, and its prompt is the previous prompt, the reply and its own text (the
/// simulator counts words: the plain "\n\n" history format adds exactly those).
fn assert_turns_carry_their_history(rs: &[RequestRecord], new_words: &[u64]) {
    for (k, pair) in rs.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        assert_eq!(b.turn, Some(k as u32 + 1));
        assert!(b.scheduled_ns >= a.end_ns);
        let reply = a.generated_text.as_deref().unwrap().split_whitespace();
        assert_eq!(
            b.prompt_tokens.unwrap(),
            a.prompt_tokens.unwrap() + reply.count() as u64 + new_words[k + 1],
            "turn {}",
            k + 1
        );
    }
}

#[test]
fn conversation_files_send_their_turns_in_order_with_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("talks.jsonl");
    std::fs::write(
        &jsonl,
        [
            r#"{"turns": ["Tell me about rivers.", {"prompt": "And lakes?", "output_len": 5}, "And the seas?"], "output_len": 6}"#,
            r#"{"prompt": "A single question here."}"#,
            r#"{"turns": ["First of two.", "Second of two, please."]}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let file = jsonl.to_str().unwrap();
    let args = ["--dataset-name", "jsonl", "--dataset-path", file];
    let more = ["--tokenizer", "cl100k_base", "--num-prompts", "3"];
    let out = run(dir.path(), "j.json", &[&args[..], &more].concat());
    assert!(out.status.success(), "{out:?}");
    let mut rs = read_records(&dir.path().join("j.records.jsonl"));
    assert_eq!(rs.len(), 6);
    let mut ids: Vec<u64> = rs.iter().map(|r| r.id).collect();
    ids.sort();
    assert_eq!(ids, (0..6).collect::<Vec<_>>());
    rs.sort_by_key(|r| (r.conversation.is_none(), r.conversation, r.turn));
    let outputs: Vec<u64> = rs.iter().map(|r| r.output_tokens.unwrap()).collect();
    assert_eq!(outputs, [6, 5, 6, 8, 8, 8]);
    assert_turns_carry_their_history(&rs[..3], &[4, 2, 3]);
    assert_turns_carry_their_history(&rs[3..5], &[3, 4]);
    assert_eq!((rs[5].conversation, rs[5].turn), (None, None));
    let totals = &json(&dir.path().join("j.json"))["summary"]["conversations"];
    assert_eq!(totals["count"], 2);
    assert_eq!(totals["failed"], 0);
    assert_eq!(totals["turns_mean"], 2.5);
    let prompt_sum: u64 = rs[..5].iter().map(|r| r.prompt_tokens.unwrap()).sum();
    assert_eq!(totals["prompt_tokens_mean"], prompt_sum as f64 / 2.0);
    assert_eq!(
        totals["output_tokens_mean"],
        (6 + 5 + 6 + 8 + 8) as f64 / 2.0
    );
    let report = servebench()
        .args(["report", dir.path().join("j.json").to_str().unwrap()])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&report.stdout);
    let line = report
        .lines()
        .find(|l| l.starts_with("Conversations (failed):"));
    assert_eq!(
        line.map(|l| l.trim_end().ends_with(" 2 (0)")),
        Some(true),
        "{report}"
    );

    // ShareGPT's conversations, every human turn (--multi-turn): the 3-turn one is cut
    // before its turn whose text is under 4 tokens.
    let sharegpt = dir.path().join("sharegpt.json");
    let talk = |pairs: &[(&str, &str)]| {
        let turns: Vec<Value> = (pairs.iter())
            .flat_map(|(h, g)| {
                [
                    serde_json::json!({"from": "human", "value": h}),
                    serde_json::json!({"from": "gpt", "value": g}),
                ]
            })
            .collect();
        serde_json::json!({ "conversations": turns })
    };
    let file = serde_json::json!([
        talk(&[
            (
                "Which rivers are the longest ones?",
                "The Nile and the Amazon are the longest."
            ),
            (
                "And which of them carries more water?",
                "The Amazon carries far more water."
            ),
            ("Ok?", "Yes, it is a very wide river indeed."),
        ]),
        talk(&[(
            "What is the boiling point of water?",
            "It is one hundred degrees Celsius."
        )]),
    ]);
    std::fs::write(&sharegpt, file.to_string()).unwrap();
    let args = [
        "--dataset-name",
        "sharegpt",
        "--multi-turn",
        "--dataset-path",
    ];
    let path = sharegpt.to_str().unwrap();
    let more = ["--tokenizer", "cl100k_base", "--num-prompts", "2"];
    let out = run(dir.path(), "s.json", &[&args[..], &[path], &more].concat());
    assert!(out.status.success(), "{out:?}");
    let mut rs = read_records(&dir.path().join("s.records.jsonl"));
    rs.sort_by_key(|r| (r.conversation, r.turn));
    let turns: Vec<Option<u32>> = rs.iter().map(|r| r.turn).collect();
    assert_eq!(turns.len(), 3, "{turns:?}");
    let two = rs.chunk_by(|a, b| a.conversation == b.conversation);
    let two: Vec<&[RequestRecord]> = two.filter(|c| c.len() == 2).collect();
    assert_eq!(two.len(), 1);
    assert_turns_carry_their_history(two[0], &[6, 7]);
    // --multi-turn is for ShareGPT only, and not with --turns.
    let out = run(dir.path(), "x.json", &["--multi-turn"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--multi-turn"),
        "{err}"
    );
}

/// A generic trace's `session_id` lines are one conversation: a later turn goes at its own
/// time, or once the turn before ended if that is later, with the history.
#[test]
fn trace_sessions_are_conversations_on_the_trace_times() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("sessions.jsonl");
    let lines = [
        r#"{"timestamp": 0, "session_id": "a", "prompt": "one two three"}"#,
        r#"{"timestamp": 100, "session_id": 7, "prompt": "four five"}"#,
        r#"{"timestamp": 150, "prompt": "alone here"}"#,
        r#"{"timestamp": 1000, "session_id": "a", "prompt": "six seven eight nine"}"#,
        r#"{"timestamp": 110, "session_id": 7, "prompt": "ten"}"#,
    ];
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let path = trace.to_str().unwrap();
    let out = run(
        dir.path(),
        "t.json",
        &["--dataset-name", "trace", "--dataset-path", path],
    );
    assert!(out.status.success(), "{out:?}");
    let mut rs = read_records(&dir.path().join("t.records.jsonl"));
    assert_eq!(rs.len(), 5);
    rs.sort_by_key(|r| (r.conversation.is_none(), r.conversation, r.turn));
    let t0 = rs[0].scheduled_ns;
    // Session "a": turn 1 is due at 1,000 ms (100 ms real at --time-scale 10), long after
    // turn 0 ended (12 ms real; only a machine too busy to run it for 88 ms makes it end
    // later, and then turn 1 waits for it); session 7: turn 1 is due at 110 ms, before turn 0
    // (sent at 100) ends.
    if rs[0].end_ns <= t0 + 100_000_000 {
        assert_eq!(rs[1].scheduled_ns - t0, 100_000_000);
    } else {
        assert!(rs[1].scheduled_ns >= rs[0].end_ns);
    }
    assert_turns_carry_their_history(&rs[..2], &[3, 4]);
    assert_eq!(rs[2].scheduled_ns - t0, 10_000_000);
    assert!(rs[3].scheduled_ns >= rs[2].end_ns);
    assert_turns_carry_their_history(&rs[2..4], &[2, 1]);
    assert_eq!(rs[4].turn, None);
    assert_eq!(rs[4].scheduled_ns - t0, 15_000_000);
}

/// `--bucket-by input_len:...`: each request is in the bucket of its prompt's length, every
/// bucket's count is that of the records in its range (empty ones kept), and the report has
/// the block; bad bucketings are refused in one line. The prompts' lengths vary
/// (`--range-ratio 0.9` with the words tokenizer: 10 to 190 words, as the server counts them),
/// so at least three buckets hold requests.
#[test]
fn buckets_hold_each_request_by_its_prompt_length() {
    let sim = common::SimProcess::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let edges = [0u64, 50, 100, 200];
    let out = common::servebench()
        .args(["run", "--base-url", &sim.url, "--tokenizer", "words", "-q"])
        .args([
            "--num-prompts",
            "40",
            "--max-concurrency",
            "8",
            "--num-warmups",
            "0",
        ])
        .args(["--input-len", "100", "--output-len", "4", "--no-preflight"])
        .args(["--range-ratio", "0.9", "--seed", "3"])
        .args(["--bucket-by", "input_len:0,50,100,200"])
        .args([
            "--result-filename",
            "b.json",
            "--result-dir",
            common::path_str(dir.path()),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = common::json(&dir.path().join("b.json"));
    let b = &r["buckets"]["buckets"];
    let records = common::read_records(&dir.path().join("b.records.jsonl"));
    for (i, lo) in edges.iter().enumerate() {
        let hi = edges.get(i + 1).copied().unwrap_or(u64::MAX);
        let n = (records.iter())
            .filter(|x| (*lo..hi).contains(&x.prompt_tokens.unwrap()))
            .count() as u64;
        assert_eq!(b[i]["sent"].as_u64(), Some(n), "bucket {i}: {b}");
    }
    for x in &records {
        // The server counted the prompt the workload built, and it is within the range.
        assert_eq!(x.prompt_tokens, x.input_len_requested, "{x:?}");
        assert!((10..=190).contains(&x.prompt_tokens.unwrap()), "{x:?}");
    }
    let filled = (0..3).filter(|i| b[*i]["sent"].as_u64() > Some(0)).count();
    assert_eq!(filled, 3, "the lengths vary over the three buckets: {b}");
    let sum: u64 = (0..4).map(|i| b[i]["sent"].as_u64().unwrap()).sum();
    assert_eq!(sum, 40, "{b}");
    assert_eq!(b[0]["label"], "0-49", "{b}");
    let report = common::stdout_of(&["report", common::path_str(&dir.path().join("b.json"))]);
    assert!(
        report.contains("By input_len") && report.contains("input_len 0-49 tokens:"),
        "{report}"
    );
    // The result's CSV has each bucket's figures under its label, and the HTML page a table
    // with a row per bucket (its count the result's) and the whole run's.
    let b_json = dir.path().join("b.json");
    let csv = common::stdout_of(&["report", common::path_str(&b_json), "--format", "csv"]);
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let head = rd.headers().unwrap().clone();
    let row = rd.records().next().unwrap().unwrap();
    let col = |name: &str| {
        let i = head.iter().position(|h| h == name);
        row[i.unwrap_or_else(|| panic!("{name}: {head:?}"))].to_string()
    };
    for (i, label) in ["0-49", "50-99", "100-199", "200+"].iter().enumerate() {
        assert_eq!(
            col(&format!("buckets.{label}.sent")),
            b[i]["sent"].to_string(),
            "{label}"
        );
    }
    assert_eq!(col("buckets.by"), "input_len:0,50,100,200");
    let html = dir.path().join("b.html");
    common::run_ok(&[
        "report",
        common::path_str(&b_json),
        "--html",
        common::path_str(&html),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2 id=\"buckets\">By length</h2>"), "{page}");
    for (i, label) in ["0-49", "50-99", "100-199", "200+"].iter().enumerate() {
        let want = format!("<tr><td>{label}</td><td>{}</td>", b[i]["sent"]);
        assert!(page.contains(&want), "{want}");
    }
    assert!(page.contains("<tr class=\"whole\"><td>whole run</td><td>40</td><td>100.0</td>"));
    for bad in ["input_len:5,5", "prompt:1", "input_len:x"] {
        let err = common::run_fails(&["run", "--base-url", &sim.url, "--bucket-by", bad]);
        assert!(err.contains("--bucket-by"), "{bad}: {err}");
    }
}
