//! Users with a fixed gap (`--users N --user-gap S`), as a user runs them against the built-in
//! simulator: each user's consecutive units are at least the gap apart (in the simulator's
//! time), the users start staggered over one gap, every planned request is accounted for
//! when the run ends on its own and when a signal stops it, and combinations that make no
//! sense are refused in one line naming both flags.

use crate::common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use common::{json, path_str, read_records, run_fails, run_ok, servebench};
use servebench::measure::record::RequestRecord;

/// The simulator's clock speed-up of these runs: the gap and every figure in its time.
const K: f64 = 10.0;

/// Each user's units (a conversation's turns, or one request), as (first send, last end) in
/// clock ns, in the order the user sent them.
fn units_by_user(records: &[RequestRecord]) -> BTreeMap<u32, Vec<(u64, u64)>> {
    let mut units: BTreeMap<(u32, u64), (u64, u64)> = BTreeMap::new();
    for r in records {
        let user = r.user.expect("every request of a users run names its user");
        let unit = r.conversation.unwrap_or(r.id);
        let e = units.entry((user, unit)).or_insert((u64::MAX, 0));
        *e = (e.0.min(r.sent_ns), e.1.max(r.end_ns));
    }
    let mut by_user: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for ((user, _), span) in units {
        by_user.entry(user).or_default().push(span);
    }
    by_user.values_mut().for_each(|v| v.sort_unstable());
    by_user
}

/// Every user's next send is at least `gap_s` (simulator time) after its previous unit ended.
fn assert_gap_holds(records: &[RequestRecord], gap_s: f64) {
    for (user, units) in units_by_user(records) {
        for w in units.windows(2) {
            let gap = (w[1].0 - w[0].1) as f64 * K / 1e9;
            assert!(gap >= gap_s, "user {user}: a gap of {gap} s < {gap_s} s");
        }
    }
}

/// planned = ok + failed + unsent, the records file holds the measured requests, and the
/// users block's units add up.
fn assert_accounted(result: &serde_json::Value, records: &[RequestRecord], planned: u64) {
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let s = &result["summary"];
    let (ok, failed, unsent) = (n(&s["completed"]), n(&s["failed"]), n(&result["unsent"]));
    assert_eq!(n(&result["planned"]), planned, "{result}");
    assert_eq!(ok + failed + unsent, planned, "{result}");
    assert_eq!(records.len() as u64, ok + failed);
    let by: u64 = (result["unsent_by"].as_object().into_iter().flatten())
        .map(|(_, v)| n(v))
        .sum();
    assert_eq!(by, unsent);
    let u = &result["users"];
    let taken: std::collections::BTreeSet<_> = records
        .iter()
        .map(|r| r.conversation.unwrap_or(r.id))
        .collect();
    assert_eq!(n(&u["units_taken"]), taken.len() as u64, "{u}");
}

#[test]
fn users_keep_their_gap_start_staggered_and_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let gap = 2.0;
    let (users, units, turns) = (3u64, 9u64, 2u64);
    run_ok(&[
        "run",
        "--sim-preset",
        "exact",
        "--time-scale",
        &K.to_string(),
        "--users",
        &users.to_string(),
        "--user-gap",
        &gap.to_string(),
        "--turns",
        &turns.to_string(),
        "--num-prompts",
        &units.to_string(),
        "--input-len",
        "16",
        "--output-len",
        "3",
        "--tokenizer",
        "words",
        "--quiet",
        "--result-filename",
        "r.json",
        "--result-dir",
        path_str(dir.path()),
    ]);
    let result = json(&dir.path().join("r.json"));
    let records = read_records(&dir.path().join("r.records.jsonl"));
    assert_accounted(&result, &records, units * turns);
    assert_eq!(result["complete"], true);
    assert_gap_holds(&records, gap);
    let by_user = units_by_user(&records);
    assert_eq!(by_user.len() as u64, users);
    let u = &result["users"];
    assert_eq!(
        (u["users"].as_u64(), u["gap_s"].as_f64()),
        (Some(3), Some(gap))
    );
    assert_eq!(u["units_completed"].as_u64(), Some(units));
    assert!(u["min_observed_gap_s"].as_f64().unwrap() >= gap, "{u}");
    // Each user's completed units, and its rate: the mean times the users is the throughput.
    let mean = u["completed_units_per_user"]["mean"].as_f64().unwrap();
    assert!((mean - units as f64 / users as f64).abs() < 1e-9, "{u}");
    let rate = u["request_rate_per_user"]["mean"].as_f64().unwrap();
    let throughput = result["summary"]["request_throughput"].as_f64().unwrap();
    assert!((rate * users as f64 - throughput).abs() < 1e-9 * throughput.max(1.0));
    // The staggered start: user i's first unit is scheduled i/N of a gap after user 0's.
    let first = |user: u32| {
        (records.iter())
            .filter(|r| r.user == Some(user))
            .map(|r| r.scheduled_ns)
            .min()
            .unwrap()
    };
    for i in 1..users as u32 {
        let after = (first(i) - first(0)) as f64 * K / 1e9;
        let want = gap * f64::from(i) / users as f64;
        assert!(
            (after - want).abs() < 1e-6,
            "user {i} starts {after} s after user 0"
        );
    }
    let span = u["start_span_s"].as_f64().unwrap();
    assert!(span >= gap * 2.0 / 3.0 - 1e-6, "{u}");
    // The report and its CSV show the block.
    let path = dir.path().join("r.json");
    let text = run_ok(&["report", path_str(&path)]).0;
    assert!(text.contains("Users with a fixed gap"), "{text}");
    let row = common::report_csv_row(&path);
    assert_eq!(row.get("users.users").map(String::as_str), Some("3"));
}

#[test]
fn a_signal_mid_run_keeps_every_users_unit_accounted_for() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let records_path = dir.path().join("r.records.jsonl");
        // 30 units, 3 users, 3 s of gap each (in the simulator's time: 0.3 s real): about
        // 3 s of run, stopped at its first record.
        let child = servebench()
            .args([
                "run",
                "--sim-preset",
                "exact",
                "--time-scale",
                &K.to_string(),
            ])
            .args(["--users", "3", "--user-gap", "3", "--num-prompts", "30"])
            .args([
                "--input-len",
                "16",
                "--output-len",
                "3",
                "--tokenizer",
                "words",
            ])
            .args(["--quiet", "--grace", "2", "--result-filename", "r.json"])
            .arg("--result-dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let has_record =
            || std::fs::read_to_string(&records_path).is_ok_and(|t| t.lines().count() >= 1);
        common::wait_for("the first record", Duration::from_secs(30), has_record);
        // SAFETY: a signal to our own child, which has not been reaped.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        let out = common::finish_within(child, Duration::from_secs(60), "users stopped");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let result = json(&dir.path().join("r.json"));
        let records = read_records(&records_path);
        assert_accounted(&result, &records, 30);
        assert_gap_holds(&records, 3.0);
        // Stopped before its end: exit 3, the result incomplete, the units no user took
        // unsent because the run stopped.
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert_eq!(result["complete"], false);
        let unsent = result["unsent"].as_u64().unwrap_or(0);
        assert!(unsent > 0, "{result}");
        assert_eq!(result["unsent_by"]["stopped"].as_u64(), Some(unsent));
    }
}

#[test]
fn users_beside_an_arrival_schedule_are_refused_in_one_line() {
    let base = ["run", "--users", "3", "--user-gap", "1"];
    let six = ["--num-prompts", "6"];
    for (extra, other) in [
        (
            &["--request-rate", "5", six[0], six[1]][..],
            "--request-rate",
        ),
        (
            &["--max-concurrency", "2", six[0], six[1]][..],
            "--max-concurrency 2",
        ),
        (&["--duration", "5", six[0], six[1]][..], "--duration"),
        (&["--stages", "2:3", six[0], six[1]][..], "--stages"),
        (&["--num-prompts", "2"][..], "--num-prompts 2"),
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let err = run_fails(&args);
        let line = err.trim();
        assert!(!line.contains('\n'), "{extra:?}: {err}");
        assert!(
            line.contains("--users") && line.contains(other),
            "{extra:?}: {err}"
        );
    }
    // Each flag needs the other.
    let err = run_fails(&["run", "--user-gap", "1", "--num-prompts", "3"]);
    assert!(
        err.trim().lines().count() == 1 && err.contains("--users"),
        "{err}"
    );
    let err = run_fails(&["run", "--users", "2", "--num-prompts", "3"]);
    assert!(
        err.trim().lines().count() == 1 && err.contains("--user-gap"),
        "{err}"
    );
    let err = run_fails(&["run", "--users", "2", "--user-gap=-1", "--num-prompts", "3"]);
    assert!(err.contains("--user-gap"), "{err}");
}

/// A list of gaps runs a sweep step per gap at the same users, each step's result with its
/// own gap.
#[test]
fn a_list_of_gaps_is_a_sweep_over_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(&[
        "run",
        "--sim-preset",
        "exact",
        "--time-scale",
        &K.to_string(),
        "--users",
        "2",
        "--user-gap",
        "0.5,1.5",
        "--num-prompts",
        "4",
        "--input-len",
        "16",
        "--output-len",
        "2",
        "--tokenizer",
        "words",
        "--quiet",
        "--result-filename",
        "r.json",
        "--result-dir",
        path_str(dir.path()),
    ]);
    let sweep = json(&dir.path().join("r.sweep.json"));
    assert_eq!(sweep["parameter"], "user_gap", "{sweep}");
    for gap in [0.5, 1.5] {
        let step = json(&dir.path().join(format!("r-g{gap}.json")));
        assert_eq!(step["users"]["gap_s"].as_f64(), Some(gap));
        let records = read_records(&dir.path().join(format!("r-g{gap}.records.jsonl")));
        assert_gap_holds(&records, gap);
    }
}
