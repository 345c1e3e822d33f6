//! Every run accounts for every request it planned, however it ends. One
//! property, drawn over mode × ending × timing, with the binary as a user runs it against the
//! simulator (`servebench sim --time-scale 10`: every figure and flag in simulated time):
//!
//! - planned = ok + failed + unsent (a turn is a request), where the test knows the plan
//!   itself (every count-bounded mode) the saved `planned` equals it, and `unsent` is the sum
//!   of `unsent_by`;
//! - `complete` is false whenever anything planned was not sent, and true for a run that ended
//!   on its own against a server that failed nothing;
//! - every records file holds only whole records, one line per measured request of its result
//!   but for those its result counts as `records_lost` (only where it says the file could not
//!   be written);
//! - a run, sweep or search that a signal stopped exits 3, never 0 while something it saved
//!   is incomplete; a stopped search probe is neither a pass nor a fail (`stopped`), the
//!   answer is the highest completed passing probe and a stopped search says where it
//!   stopped (`stopped_at`);
//! - a shard's result merges (`merge --allow-missing`) to the same measured requests, exiting
//!   3 when the shard was stopped, 2 when its records were lost, else 0.
//!
//! Modes: a single run (a rate, a concurrency cap), `--turns` with `--think-time`, `--duration`,
//! `--stages`, a ramp, jsonl conversations, trace replay with and without sessions, a sweep's
//! steps, a search's probes, `--repeat`, `--shard`. Endings: the run's own end; Ctrl-C once,
//! twice, three times, SIGTERM, each after a drawn delay; `--max-errors`/`--max-error-rate`
//! against a simulator that fails a quarter of its requests; a records write error from a
//! file-size limit (SIGXFSZ ignored, as a full disk gives ENOSPC without a signal: both are
//! the same failed write); and a run against that failing server with no limit (its failed
//! turns end their conversations). `q` in the dashboard raises the same SIGINT as Ctrl-C
//! (`tests/suite/live.rs` presses it and checks the same invariant).
//!
//! The cases are drawn from a fixed seed, so every run of the test tries the same ones (set
//! `SERVEBENCH_ACCOUNTING_SEED` to draw others); when a signal lands depends on the machine.
//!
//! A sibling runs one case per ending with every answer a hostile one to check (a regex
//! whose plain search of each answer takes tens of seconds): the checks run off the
//! measuring thread within their budget, so the same property holds as fast.
//!
//! Beside it, the driver as a library function given a think time too long to hold:
//! the next turn waits, it is not sent at once.

use crate::common;

use common::{json, servebench, SimProcess};

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use servebench::drive::load::{drive, Sink};
use servebench::measure::client::{Client, RequestSpec};
use servebench::measure::clock::Clock;
use servebench::measure::record::RequestRecord;
use servebench::results::document::BenchResult;
use servebench::results::search::SearchDoc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The simulators' clock speed-up: ten simulated seconds take one real second.
const K: f64 = 10.0;

/// A `servebench sim` child at clock speed-up `K`, failing `error_rate` of its requests.
fn start_sim(error_rate: f64) -> SimProcess {
    let (k, rate) = (K.to_string(), error_rate.to_string());
    SimProcess::start(&["--time-scale", &k, "--error-rate", &rate, "--seed", "7"])
}

/// What the run does.
#[derive(Clone, Debug)]
enum Mode {
    Count {
        n: u64,
        rate: f64,
        cap: Option<u64>,
    },
    Turns {
        n: u64,
        turns: u64,
        think_s: f64,
        rate: f64,
    },
    Duration {
        secs: f64,
        rate: f64,
        cap: Option<u64>,
    },
    Stages {
        rates: (f64, f64),
        secs: (f64, f64),
    },
    Ramp {
        n: u64,
        end_rps: f64,
    },
    /// A jsonl file of conversations, each line's number of turns.
    Conversations {
        n: u64,
        lines: Vec<u64>,
    },
    /// A generic trace: its lines' send times (ms, trace time), and sessions of `session` lines.
    Trace {
        times_ms: Vec<u64>,
        session: Option<u64>,
    },
    Sweep {
        ns: (u64, u64),
    },
    Search {
        n: u64,
    },
    Repeat {
        n: u64,
    },
    Shard {
        n: u64,
        index: u64,
        count: u64,
    },
    /// Generated agentic jobs (`--dataset-name agentic`): `n` jobs of `depth` levels of
    /// `fanout` calls, `gap_s` between levels; every call is a planned request.
    Jobs {
        n: u64,
        fanout: u64,
        depth: u64,
        gap_s: f64,
        rate: f64,
    },
    /// A rate over time (`--load-shape`) for `secs` seconds; not drawn by [`mode`]: its own
    /// test runs it under each ending.
    Shape {
        shape: &'static str,
        secs: f64,
    },
    /// Two endpoints (`--base-url` twice: the simulator the ending picks, and `also`, one
    /// like it) spread by `balance` over `threads` client threads; with `turns`, each
    /// conversation kept on one (`--affinity session`). Not drawn by [`mode`]: drawn by
    /// [`routing_mode`] for its own test.
    Routed {
        n: u64,
        rate: f64,
        turns: Option<u64>,
        balance: &'static str,
        threads: u16,
        also: String,
    },
    /// The prefill gate: at most `k` requests between sent and first token.
    Gated {
        n: u64,
        rate: f64,
        k: u64,
    },
    /// `run --adaptive` over the rate, in windows of `step_s` (the simulator's seconds),
    /// holding `hold_s` at the end.
    Adaptive {
        step_s: f64,
        hold_s: f64,
    },
}

/// How the run ends.
#[derive(Clone, Debug)]
enum Ending {
    /// On its own.
    Normal,
    /// These signals, each this many ms after the one before (the first after the start).
    Signals(Vec<(i32, u64)>),
    /// `--max-errors N` (`Some`) or `--max-error-rate 0.2`, against the failing simulator.
    MaxErrors(Option<u64>),
    /// A file-size limit of this many bytes (records writes fail past it).
    WriteError(u64),
    /// On its own, against the failing simulator, with no limit.
    Failing,
}

#[derive(Clone, Debug)]
struct Case {
    mode: Mode,
    ending: Ending,
    seed: u64,
    /// Every answer is a hostile one to check (a regex run against a simulator answering
    /// `--hostile-answer-bytes`).
    hostile: bool,
}

const MODES: usize = 11;
const ENDINGS: usize = 8;

/// Mode `i`'s strategy; `big` (a write-error ending) draws three times the requests, so the
/// records outgrow the file-size limit while the result still fits under it.
fn mode(i: usize, big: bool) -> BoxedStrategy<Mode> {
    let x: u64 = if big { 3 } else { 1 };
    let rate = 2.0..8.0f64;
    match i {
        0 => (20 * x..60 * x, rate, prop::option::of(1..6u64))
            .prop_map(|(n, rate, cap)| Mode::Count { n, rate, cap })
            .boxed(),
        1 => (6 * x..14 * x, 2..5u64, 0.3..2.0f64, 1.0..4.0f64)
            .prop_map(|(n, turns, think_s, rate)| Mode::Turns {
                n,
                turns,
                think_s,
                rate,
            })
            .boxed(),
        2 => (
            4.0..12.0f64,
            2.0 * x as f64..8.0 * x as f64,
            prop::option::of(1..6u64),
        )
            .prop_map(|(secs, rate, cap)| Mode::Duration { secs, rate, cap })
            .boxed(),
        3 => (
            (
                2.0 * x as f64..6.0 * x as f64,
                4.0 * x as f64..10.0 * x as f64,
            ),
            (2.0..5.0f64, 2.0..5.0f64),
        )
            .prop_map(|(rates, secs)| Mode::Stages { rates, secs })
            .boxed(),
        4 => (20 * x..50 * x, 4.0..12.0f64)
            .prop_map(|(n, end_rps)| Mode::Ramp { n, end_rps })
            .boxed(),
        5 => (5 * x..14 * x, prop::collection::vec(1..5u64, 1..6))
            .prop_map(|(n, lines)| Mode::Conversations { n, lines })
            .boxed(),
        6 => (
            prop::collection::vec(0..8000u64, (10 * x as usize)..(40 * x as usize)),
            prop::option::of(2..5u64),
        )
            .prop_map(|(mut times_ms, session)| {
                times_ms.sort_unstable();
                Mode::Trace { times_ms, session }
            })
            .boxed(),
        // Two different values (a value given twice is refused, as the next test checks).
        7 => (10 * x..30 * x, 10 * x..30 * x)
            .prop_map(|(a, b)| Mode::Sweep {
                ns: (a, if a == b { b + 1 } else { b }),
            })
            .boxed(),
        8 => (8 * x..20 * x).prop_map(|n| Mode::Search { n }).boxed(),
        9 => (10 * x..30 * x).prop_map(|n| Mode::Repeat { n }).boxed(),
        11 => (12 * x..30 * x, 1..4u64, 1..4u64, 0.0..0.5f64, 2.0..6.0f64)
            .prop_map(|(n, fanout, depth, gap_s, rate)| Mode::Jobs {
                n,
                fanout,
                depth,
                gap_s,
                rate,
            })
            .boxed(),
        _ => (20 * x..50 * x, 2..4u64)
            .prop_flat_map(|(n, count)| (Just(n), 0..count, Just(count)))
            .prop_map(|(n, index, count)| Mode::Shard { n, index, count })
            .boxed(),
    }
}

fn ending(i: usize) -> BoxedStrategy<Ending> {
    let delay = || 50..1200u64;
    let again = || 30..400u64;
    match i {
        0 => Just(Ending::Normal).boxed(),
        1 => delay()
            .prop_map(|d| Ending::Signals(vec![(libc::SIGINT, d)]))
            .boxed(),
        2 => (delay(), again())
            .prop_map(|(d, e)| Ending::Signals(vec![(libc::SIGINT, d), (libc::SIGINT, e)]))
            .boxed(),
        3 => (delay(), again(), again())
            .prop_map(|(d, e, f)| {
                Ending::Signals(vec![
                    (libc::SIGINT, d),
                    (libc::SIGINT, e),
                    (libc::SIGINT, f),
                ])
            })
            .boxed(),
        4 => delay()
            .prop_map(|d| Ending::Signals(vec![(libc::SIGTERM, d)]))
            .boxed(),
        5 => prop::option::of(2..6u64)
            .prop_map(Ending::MaxErrors)
            .boxed(),
        6 => (18_000..26_000u64).prop_map(Ending::WriteError).boxed(),
        _ => Just(Ending::Failing).boxed(),
    }
}

/// Every mode's and every ending's parameters, drawn; case `i` of the run takes mode `i mod
/// 11` and ending `i mod 8` (11 and 8 are coprime: 33 cases try 33 different pairs, every mode
/// three times and every ending at least four).
fn drawn() -> impl Strategy<Value = (Vec<Mode>, Vec<Mode>, Vec<Ending>, u64)> {
    let modes = |big| (0..MODES).map(|m| mode(m, big)).collect::<Vec<_>>();
    let endings: Vec<_> = (0..ENDINGS).map(ending).collect();
    (modes(false), modes(true), endings, any::<u64>())
}

/// Case `i` of the drawn parameters.
fn case(i: usize, (small, big, endings, seed): &(Vec<Mode>, Vec<Mode>, Vec<Ending>, u64)) -> Case {
    let e = i % ENDINGS;
    let mode = if e == 6 {
        &big[i % MODES]
    } else {
        &small[i % MODES]
    }
    .clone();
    let ending = match (&mode, endings[e].clone()) {
        // A trace refuses every load-shape flag, --max-errors and --max-error-rate too
        // (`config::shape::validate_trace`): it runs against the failing server unlimited.
        (Mode::Trace { .. }, Ending::MaxErrors(_)) => Ending::Failing,
        (_, ending) => ending,
    };
    Case {
        mode,
        ending,
        seed: *seed,
        hostile: false,
    }
}

/// The result files a mode saves (those that exist are checked), and what each planned where
/// the test knows it without the run.
fn results(mode: &Mode) -> Vec<(&'static str, Option<u64>)> {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    match mode {
        Mode::Count { n, .. } | Mode::Ramp { n, .. } => vec![("r.json", Some(*n))],
        Mode::Turns { n, turns, .. } => vec![("r.json", Some(n * turns))],
        Mode::Duration { .. } | Mode::Stages { .. } | Mode::Shape { .. } => {
            vec![("r.json", None)]
        }
        Mode::Conversations { n, lines } => {
            let turns = (0..*n).map(|i| lines[(i as usize) % lines.len()]).sum();
            vec![("r.json", Some(turns))]
        }
        Mode::Trace { times_ms, .. } => vec![("r.json", Some(times_ms.len() as u64))],
        Mode::Sweep { ns: (a, b) } => vec![
            (leak(format!("r-n{a}.json")), Some(*a)),
            (leak(format!("r-n{b}.json")), Some(*b)),
        ],
        Mode::Search { n } => (0..3)
            .map(|i| (leak(format!("r-probe{i}.json")), Some(*n)))
            .collect(),
        Mode::Repeat { n } => vec![("r.rep1.json", Some(*n)), ("r.rep2.json", Some(*n))],
        Mode::Shard { n, index, count } => {
            let owned = (0..*n).filter(|id| id % count == *index).count() as u64;
            vec![("r.json", Some(owned))]
        }
        Mode::Jobs {
            n, fanout, depth, ..
        } => vec![("r.json", Some(n * fanout * depth))],
        Mode::Routed { n, turns, .. } => vec![("r.json", Some(n * turns.unwrap_or(1)))],
        Mode::Gated { n, .. } => vec![("r.json", Some(*n))],
        Mode::Adaptive { .. } => vec![("r.json", None)],
    }
}

/// The command line of `case` against `url`, writing into `dir`.
fn command(case: &Case, url: &str, dir: &Path) -> Command {
    let mut cmd = servebench();
    let sweep_or_run = match case.mode {
        Mode::Search { .. } => "search",
        _ => "run",
    };
    // A user's own prompts are counted with a real tokenizer.
    let tokenizer = match case.mode {
        Mode::Conversations { .. } => "cl100k_base",
        _ => "words",
    };
    cmd.args([sweep_or_run, "--base-url", url, "--tokenizer", tokenizer])
        .args(["--output-len", "2", "--quiet"])
        .args(["--seed", &(case.seed % 1000).to_string()])
        .args(["--result-filename", "r.json", "--result-dir"])
        .arg(dir)
        // A short grace: a stopped run drains quickly.
        .args(["--grace", "2"]);
    // A file's prompts have their own lengths (--input-len is refused there).
    if !matches!(case.mode, Mode::Conversations { .. } | Mode::Trace { .. }) {
        cmd.args(["--input-len", "16"]);
    }
    let s = |v: f64| format!("{v:.2}");
    match &case.mode {
        Mode::Count { n, rate, cap } => {
            cmd.args(["--num-prompts", &n.to_string(), "--request-rate", &s(*rate)]);
            if let Some(c) = cap {
                cmd.args(["--max-concurrency", &c.to_string()]);
            }
        }
        Mode::Turns {
            n,
            turns,
            think_s,
            rate,
        } => {
            cmd.args(["--num-prompts", &n.to_string(), "--request-rate", &s(*rate)])
                .args(["--turns", &turns.to_string(), "--think-time", &s(*think_s)]);
        }
        Mode::Duration { secs, rate, cap } => {
            cmd.args(["--duration", &s(*secs), "--request-rate", &s(*rate)]);
            if let Some(c) = cap {
                cmd.args(["--max-concurrency", &c.to_string()]);
            }
        }
        Mode::Stages { rates, secs } => {
            let stages = format!("{}:{},{}:{}", s(rates.0), s(secs.0), s(rates.1), s(secs.1));
            cmd.args(["--stages", &stages]);
        }
        Mode::Ramp { n, end_rps } => {
            cmd.args(["--num-prompts", &n.to_string()])
                .args(["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"])
                .args(["--ramp-up-end-rps", &s(*end_rps)]);
        }
        Mode::Conversations { n, lines } => {
            let file = dir.join("talks.jsonl");
            let text: String = (lines.iter().enumerate())
                .map(|(i, turns)| {
                    let turns: Vec<String> = (0..*turns)
                        .map(|k| format!("\"line {i} turn {k} says hello\""))
                        .collect();
                    format!("{{\"turns\": [{}]}}\n", turns.join(", "))
                })
                .collect();
            std::fs::write(&file, text).unwrap();
            cmd.args(["--dataset-name", "jsonl", "--dataset-path"])
                .arg(&file)
                .args(["--num-prompts", &n.to_string(), "--request-rate", "3"]);
        }
        Mode::Trace { times_ms, session } => {
            let file = dir.join("trace.jsonl");
            let text: String = (times_ms.iter().enumerate())
                .map(|(i, t)| {
                    let s = session.map_or(String::new(), |k| {
                        format!(", \"session_id\": \"s{}\"", i as u64 / k)
                    });
                    format!(
                        "{{\"timestamp\": {t}, \"input_length\": 12, \"output_length\": 2{s}}}\n"
                    )
                })
                .collect();
            std::fs::write(&file, text).unwrap();
            cmd.args(["--dataset-name", "trace", "--dataset-path"])
                .arg(&file);
        }
        Mode::Sweep { ns: (a, b) } => {
            cmd.args(["--num-prompts", &format!("{a},{b}"), "--request-rate", "6"]);
        }
        Mode::Search { n } => {
            cmd.args(["--by", "concurrency", "--start", "1", "--max", "4"])
                .args(["--goodput", "ttft:2000", "--num-prompts", &n.to_string()]);
        }
        Mode::Repeat { n } => {
            cmd.args(["--num-prompts", &n.to_string(), "--request-rate", "6"])
                .args(["--repeat", "2"]);
        }
        Mode::Shard { n, index, count } => {
            cmd.args(["--num-prompts", &n.to_string(), "--request-rate", "6"])
                .args(["--shard", &format!("{index}/{count}")]);
        }
        Mode::Jobs {
            n,
            fanout,
            depth,
            gap_s,
            rate,
        } => {
            cmd.args(["--num-prompts", &n.to_string(), "--request-rate", &s(*rate)])
                .args([
                    "--dataset-name",
                    "agentic",
                    "--agentic-fanout",
                    &fanout.to_string(),
                ])
                .args(["--agentic-depth", &depth.to_string()])
                .args(["--agentic-gap-ms", &s(gap_s * 1e3)]);
        }
        // Its flags follow the match.
        Mode::Shape { .. } => {}
        Mode::Routed {
            n,
            rate,
            turns,
            balance,
            threads,
            also,
        } => {
            cmd.args(["--base-url", also, "--balance", balance])
                .args(["--client-threads", &threads.to_string()])
                .args(["--num-prompts", &n.to_string(), "--request-rate", &s(*rate)]);
            if let Some(t) = turns {
                cmd.args(["--turns", &t.to_string(), "--think-time", "0.5"])
                    .args(["--affinity", "session"]);
            }
        }
        Mode::Gated { n, rate, k } => {
            cmd.args(["--num-prompts", &n.to_string(), "--request-rate", &s(*rate)])
                .args(["--max-prefill-concurrency", &k.to_string()]);
        }
        Mode::Adaptive { step_s, hold_s } => {
            cmd.args(["--adaptive", "--goodput", "ttft:2000"])
                .args(["--adaptive-start", "2", "--adaptive-max", "16"])
                .args(["--adaptive-step", &s(*step_s), "--hold", &s(*hold_s)]);
        }
    }
    if let Mode::Shape { shape, secs } = &case.mode {
        cmd.args(["--load-shape", shape, "--duration", &s(*secs)]);
    }
    // Half the cases also write their records as Parquet at the end: the same rows.
    if case.seed % 2 == 0 && !matches!(case.ending, Ending::WriteError(_)) {
        cmd.args(["--records-format", "parquet"]);
    }
    if case.hostile {
        cmd.args(["--structured-output", "regex"])
            .args(["--structured-output-regex", HOSTILE_PATTERN]);
    }
    match &case.ending {
        Ending::MaxErrors(Some(n)) => {
            cmd.args(["--max-errors", &n.to_string()]);
        }
        Ending::MaxErrors(None) => {
            cmd.args(["--max-error-rate", "0.2"]);
        }
        Ending::WriteError(limit) => {
            use std::os::unix::process::CommandExt;
            let limit = *limit;
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    let lim = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        _ => {}
    }
    cmd
}

/// Runs `case`, sending its signals; how it exited, and its stderr.
fn run(case: &Case, url: &str, dir: &Path) -> (std::process::ExitStatus, String) {
    let mut child = command(case, url, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Ending::Signals(signals) = &case.ending {
        for &(sig, after_ms) in signals {
            // The drawn delay of the case: when its signal lands (the property holds
            // whenever it does), not a wait for something to happen.
            std::thread::sleep(Duration::from_millis(after_ms));
            if child.try_wait().unwrap().is_none() {
                // SAFETY: a signal to our own child, which has not been reaped.
                unsafe {
                    libc::kill(child.id() as i32, sig);
                }
            }
        }
    }
    let out = common::finish_within(child, Duration::from_secs(90), &format!("{case:?}"));
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every line of a records file, each a whole record (the measured ones: warm-ups left out).
fn records(path: &Path) -> Result<Vec<RequestRecord>, String> {
    let all = common::try_read_records(path)?;
    Ok(all.into_iter().filter(|r| !r.warmup).collect())
}

/// The property for one result document; `expected`: what it planned, where the test knows.
fn check_result(path: &Path, expected: Option<u64>, clean_end: bool) -> Result<(), String> {
    let r = json(path);
    let name = path.display();
    let n = |k: &str| r[k].as_u64().ok_or(format!("{name}: no {k}"));
    let (ok, failed, unsent) = (n("completed")?, n("failed")?, n("unsent")?);
    let complete = r["complete"]
        .as_bool()
        .ok_or(format!("{name}: no complete"))?;
    let stage = r["config"]["load"]["shape"]["duration_s"].is_number()
        && path.to_string_lossy().contains("-stage");
    let planned = r["planned"].as_u64();
    let by: u64 = [
        "stopped",
        "earlier_turn_failed",
        "window_ended",
        "upstream_failed",
    ]
    .iter()
    .map(|k| r["unsent_by"][k].as_u64().unwrap_or(0))
    .sum();
    if by != unsent {
        return Err(format!(
            "{name}: unsent {unsent} but unsent_by sums to {by}"
        ));
    }
    if let Some(e) = expected {
        if ok + failed + unsent != e || planned != Some(e) {
            return Err(format!(
                "{name}: planned {e} (saved {planned:?}) but ok {ok} + failed {failed} + unsent {unsent}"
            ));
        }
    } else if let Some(p) = planned {
        if ok + failed + unsent != p {
            return Err(format!(
                "{name}: planned {p} but ok {ok} + failed {failed} + unsent {unsent}"
            ));
        }
    } else if !stage {
        return Err(format!("{name}: a finite schedule saved no planned count"));
    }
    if unsent > 0 && complete {
        return Err(format!("{name}: {unsent} never sent, yet complete"));
    }
    if clean_end && !complete {
        return Err(format!(
            "{name}: ended on its own with nothing failed, yet incomplete"
        ));
    }
    let records_file = path.with_extension("records.jsonl");
    let rs = records(&records_file)?;
    let lost = r["records_lost"].as_u64().unwrap_or(0);
    let lines = rs.len() as u64;
    if lines + lost != ok + failed || (lost > 0 && r["error"].is_null()) {
        return Err(format!(
            "{name}: {lines} records and {lost} lost for {} measured requests (error: {})",
            ok + failed,
            r["error"]
        ));
    }
    parquet_rows_match(&records_file)
}

/// A Parquet records file beside `jsonl`, where the run wrote one, holds its rows exactly.
fn parquet_rows_match(jsonl: &Path) -> Result<(), String> {
    let parquet = jsonl.with_extension("parquet");
    if !parquet.exists() {
        return Ok(());
    }
    let all = common::try_read_records(jsonl)?;
    let mut rows = Vec::new();
    servebench::results::records_parquet::read_parquet(&parquet, |r| {
        rows.push(r);
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    if rows != all {
        return Err(format!(
            "{}: {} rows, not the {} records of its JSON Lines",
            parquet.display(),
            rows.len(),
            all.len()
        ));
    }
    Ok(())
}

/// A search's document against its probes' results: a probe whose run was stopped before it
/// was done is marked `stopped` and did not pass; the answer is the highest passing probe and
/// the first failing the lowest failed one above it; a stopped search is incomplete and says
/// at which load.
fn check_search(dir: &Path) -> Result<(), String> {
    let path = dir.join("r.search.json");
    if !path.exists() {
        return Ok(());
    }
    let doc: SearchDoc = serde_json::from_value(json(&path)).map_err(|e| e.to_string())?;
    for p in &doc.probes {
        let r = BenchResult::load(&dir.join(&p.result)).map_err(|e| e.to_string())?;
        if r.interrupted().is_some() != p.stopped.is_some() || (p.stopped.is_some() && p.passed) {
            return Err(format!(
                "probe at {}: result {:?} but probe stopped {:?}, passed {}",
                p.value,
                r.interrupted(),
                p.stopped,
                p.passed
            ));
        }
    }
    let passed = doc.probes.iter().filter(|p| p.passed).map(|p| p.value);
    let answer = passed.fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
    let failing = (doc.probes.iter())
        .filter(|p| !p.passed && p.stopped.is_none())
        .map(|p| p.value)
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.min(v))));
    if doc.answer != answer || doc.first_failing != failing {
        return Err(format!(
            "answer {:?}, first failing {:?}, but the probes say {answer:?}, {failing:?}",
            doc.answer, doc.first_failing
        ));
    }
    if doc.complete && doc.stopped_at.is_some() {
        return Err(format!("complete, yet stopped at {:?}", doc.stopped_at));
    }
    Ok(())
}

/// `merge --allow-missing` of one shard's result: the measured requests of the shard, and
/// exit 3 when the shard was stopped, 2 (refused) when its records were lost, else 0.
fn check_merge(dir: &Path) -> Result<(), String> {
    let shard = dir.join("r.json");
    let Ok(r) = BenchResult::load(&shard) else {
        return Ok(());
    };
    let out = servebench()
        .args(["merge", "--allow-missing", "--quiet", "--output"])
        .arg(dir.join("m.json"))
        .arg(&shard)
        .output()
        .unwrap();
    let code = out.status.code();
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = if r.records_lost > 0 {
        2
    } else if r.interrupted().is_some() {
        3
    } else {
        0
    };
    if code != Some(expected) {
        return Err(format!("merge exited {code:?}, not {expected}: {err}"));
    }
    if expected == 2 {
        return Ok(());
    }
    let m = BenchResult::load(&dir.join("m.json")).map_err(|e| e.to_string())?;
    let measured = |r: &BenchResult| r.summary.completed + r.summary.failed;
    if measured(&m) != measured(&r) || m.complete {
        return Err(format!(
            "merged {} measured (complete {}), the shard {}",
            measured(&m),
            m.complete,
            measured(&r)
        ));
    }
    Ok(())
}

fn check(case: &Case, sims: (&SimProcess, &SimProcess)) -> Result<(), TestCaseError> {
    let failing = matches!(case.ending, Ending::MaxErrors(_) | Ending::Failing);
    let url = if failing { &sims.1.url } else { &sims.0.url };
    let dir = tempfile::tempdir().unwrap();
    let (status, stderr) = run(case, url, dir.path());
    let code = status.code();
    // A signal before the binary's handler is in place (its first milliseconds) ends it as
    // the signal does by default: before anything was measured, so nothing is written.
    if let (Some(sig), Ending::Signals(sent)) = (status.signal(), &case.ending) {
        let written = std::fs::read_dir(dir.path()).unwrap().any(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.ends_with(".records.jsonl") || name.starts_with("r")
        });
        if sent.iter().any(|&(s, _)| s == sig) && !written {
            return Ok(());
        }
        return Err(TestCaseError::fail(format!(
            "killed by signal {sig} with files written\n{stderr}"
        )));
    }
    let fail = |why: String| {
        Err(TestCaseError::fail(format!(
            "{why}\nexit {code:?}, stderr:\n{stderr}"
        )))
    };
    if stderr.contains("panicked") || code == Some(101) {
        return fail("it panicked".into());
    }
    let allowed: &[i32] = match &case.ending {
        Ending::Normal => &[0],
        // 3: stopped (0: the signal came after the end); 130: the third signal.
        Ending::Signals(s) if s.len() == 3 => &[0, 3, 130],
        Ending::Signals(_) => &[0, 3],
        Ending::MaxErrors(_) | Ending::Failing => &[0, 1],
        Ending::WriteError(_) => &[0, 2],
    };
    if !code.is_some_and(|c| allowed.contains(&c)) {
        return fail(format!("exit code not one of {allowed:?}"));
    }
    // Stopped before any measured load: nothing was measured, nothing written.
    let records_files = || {
        (std::fs::read_dir(dir.path()).unwrap())
            .filter(|e| (e.as_ref().unwrap().path().to_string_lossy()).ends_with(".records.jsonl"))
            .count()
    };
    let before_load = stderr.contains("stopped before the measured load began");
    if code == Some(3) && before_load && records_files() > 0 {
        return fail("stopped before the measured load, but records were written".into());
    }
    // Windowed runs with a concurrency cap may leave arrivals waiting at the window's end.
    let capped_window = matches!(case.mode, Mode::Duration { cap: Some(_), .. });
    let clean_end = matches!(case.ending, Ending::Normal) && !capped_window;
    // A signal's exit 0 only when it came after the end: everything saved is complete.
    if code == Some(0) && matches!(case.ending, Ending::Signals(_)) && !capped_window {
        for (file, _) in results(&case.mode) {
            let path = dir.path().join(file);
            if path.exists() && json(&path)["complete"] != true {
                return fail(format!("exit 0 after a signal, yet {file} is incomplete"));
            }
        }
    }
    if let Err(why) = check_search(dir.path()) {
        return fail(why);
    }
    if matches!(case.mode, Mode::Shard { .. }) && code != Some(130) {
        if let Err(why) = check_merge(dir.path()) {
            return fail(why);
        }
    }
    for (file, expected) in results(&case.mode) {
        let path = dir.path().join(file);
        // What each case came to, shown with --nocapture.
        let seen = path.exists().then(|| json(&path));
        eprintln!(
            "{:?} / {:?}: exit {code:?}, {file}: {}",
            case.mode,
            case.ending,
            seen.map_or("none".into(), |r| format!(
                "planned {} ok {} failed {} unsent {} {} complete {}",
                r["planned"],
                r["completed"],
                r["failed"],
                r["unsent"],
                r["unsent_by"],
                r["complete"]
            ))
        );
        if !path.exists() {
            if clean_end && !matches!(case.mode, Mode::Search { .. }) {
                return fail(format!("{file} was not saved"));
            }
            continue;
        }
        if let Err(why) = check_result(&path, expected, clean_end) {
            return fail(why);
        }
    }
    if let Mode::Stages { .. } = case.mode {
        for k in [1, 2] {
            let path = dir.path().join(format!("r-stage{k}.json"));
            if path.exists() {
                if let Err(why) = check_result(&path, None, false) {
                    return fail(why);
                }
            }
        }
    }
    // Whatever else was left (a third Ctrl-C saves no result): whole records only, and no
    // document half written.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".tmp") {
            return fail(format!("{} left behind", path.display()));
        }
        if path.to_string_lossy().ends_with(".records.jsonl") {
            if let Err(why) = records(&path) {
                return fail(why);
            }
        }
    }
    Ok(())
}

/// A runner of `cases` cases drawn from `seed`, each reported as drawn (a case is a run of a
/// few seconds: no shrinking, no persisted failures).
fn seeded_runner(seed: u64, cases: usize) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases: cases as u32,
        failure_persistence: None,
        max_shrink_iters: 0,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

#[test]
fn every_planned_request_is_accounted_for_however_the_run_ends() {
    let sims = (start_sim(0.0), start_sim(0.25));
    let seed: u64 = std::env::var("SERVEBENCH_ACCOUNTING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(23);
    let mut runner = seeded_runner(seed, 3 * MODES);
    let next = std::cell::Cell::new(0usize);
    let result = runner.run(&drawn(), |drawn| {
        let i = next.replace(next.get() + 1);
        let case = case(i, &drawn);
        check(&case, (&sims.0, &sims.1))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The same property for agentic jobs (each call a planned request): generated jobs of
/// drawn shapes under every ending, one case each. A failed call leaves the calls that wait
/// for it unsent (`upstream_failed`), a stop those not yet sent (`stopped`).
#[test]
fn every_planned_call_of_a_job_is_accounted_for_however_the_run_ends() {
    let sims = (start_sim(0.0), start_sim(0.25));
    let mut runner = seeded_runner(31, ENDINGS);
    let next = std::cell::Cell::new(0usize);
    let endings: Vec<_> = (0..ENDINGS).map(ending).collect();
    let drawn = (mode(MODES, false), mode(MODES, true), endings, any::<u64>());
    let result = runner.run(&drawn, |(small, big, endings, seed)| {
        let i = next.replace(next.get() + 1);
        let e = i % ENDINGS;
        let case = Case {
            mode: if e == 6 { big } else { small },
            ending: endings[e].clone(),
            seed,
            hostile: false,
        };
        check(&case, (&sims.0, &sims.1))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The pattern of the hostile checks: accepted by the limits, 10,000 NFA states and an
/// exponential DFA (a plain search of 1 MB took 74-90 s).
const HOSTILE_PATTERN: &str = "[01]*1[01]{10000}";

/// The same property with every answer a hostile one to check: a regex run against
/// simulators answering each request with 300 KB of `0`s and `1`s (`--hostile-answer-bytes`),
/// whose plain search takes tens of seconds. One case per ending (its own end, one, two and
/// three Ctrl-Cs, SIGTERM, an error limit, a write error, a failing server), each with a
/// different mode. The checks run off the measuring thread within their budget: every run
/// ends as the property says, within the same 90 s (each took minutes before).
#[test]
fn every_planned_request_is_accounted_for_under_hostile_checks() {
    let hostile = |error_rate: f64| {
        let (k, rate) = (K.to_string(), error_rate.to_string());
        SimProcess::start(&[
            "--time-scale",
            &k,
            "--error-rate",
            &rate,
            "--seed",
            "7",
            "--hostile-answer-bytes",
            "300000",
        ])
    };
    let sims = (hostile(0.0), hostile(0.25));
    let mut runner = seeded_runner(29, ENDINGS);
    let next = std::cell::Cell::new(0usize);
    let result = runner.run(&drawn(), |drawn| {
        let i = next.replace(next.get() + 1);
        let case = Case {
            hostile: true,
            ..case(i, &drawn)
        };
        check(&case, (&sims.0, &sims.1))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Found by the property above: a sweep value given twice ran its first step and then
/// stopped on its own file ("exists: give --overwrite"). It is refused before any step.
#[test]
fn a_sweep_value_given_twice_is_refused_before_any_step() {
    let dir = tempfile::tempdir().unwrap();
    let out = servebench()
        .args([
            "run",
            "--sim-preset",
            "exact",
            "--time-scale",
            &K.to_string(),
        ])
        .args(["--num-prompts", "4,6,4", "--output-len", "2", "--quiet"])
        .args(["--result-filename", "r.json", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--num-prompts") && stderr.contains("4 is given twice"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing is written"
    );
}

/// `--think-time 1e300` reaching the driver (unvalidated: the driver is a
/// library function) was cast to `u64::MAX` ns and added with wrapping to the clock, so turn 1
/// went at once. A span too long to hold is the longest: the turn waits until the run is
/// stopped, and is counted unsent. The stop comes 300 ms after the simulator answered the
/// three first turns (a count, not a fixed time a busy machine could overrun): a turn 1 sent
/// at once would be on its way long before. On a paused clock, with the simulator on it too:
/// the 300 ms pass only once nothing is left to run, so a turn sent at once has been sent.
#[tokio::test(start_paused = true)]
async fn a_huge_think_time_is_a_long_wait_never_none() {
    let sim = servebench::sim::spawn(
        servebench::sim::SimConfig {
            precise_timing: false,
            ..Default::default()
        },
        ([127, 0, 0, 1], 0).into(),
    )
    .await
    .unwrap();
    let mut cfg = servebench::config::RunConfig {
        base_url: sim.base_url(),
        ..Default::default()
    };
    cfg.load.num_prompts = 3;
    cfg.load.shape.turns = Some(2);
    cfg.load.shape.think_time_s = Some(1e300);
    cfg.workload = servebench::config::WorkloadSpec::random(128, 2);
    let client = Client::new(&cfg, &Default::default(), None, None).unwrap();
    let pool: Vec<RequestSpec> = (0..6)
        .map(|_| RequestSpec {
            prompt: "one two three".into(),
            output_len: 2,
            ..RequestSpec::default()
        })
        .collect();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sink = Sink {
        records: tx,
        live: Arc::default(),
        time_scale: 1.0,
        abort: CancellationToken::new(),
        throttle: None,
    };
    let stop = CancellationToken::new();
    let stopper = async {
        while sim.stats().ok < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.cancel();
    };
    let clock = Clock::start();
    let driving = drive(
        client,
        pool,
        &cfg.load,
        clock,
        clock.now_ns(),
        stop.clone(),
        sink,
    );
    let (driven, ()) = tokio::join!(driving, stopper);
    let mut turns = Vec::new();
    while let Ok(r) = rx.try_recv() {
        assert!(r.is_ok(), "{:?}", r.outcome);
        turns.push(r.turn);
    }
    assert_eq!(turns, vec![Some(0); 3], "only the first turns went");
    assert_eq!(driven.sent, 3);
    assert_eq!(driven.planned, Some(6));
    assert_eq!(driven.unsent.stopped, 3);
    sim.shutdown().await;
}

/// The property for a run whose rate follows a load shape (`--load-shape`): a burst shape and
/// a sine, each ending on its own, at SIGTERM, and at two Ctrl-Cs mid-run.
#[test]
fn a_shaped_run_accounts_for_every_planned_request_however_it_ends() {
    let sims = (start_sim(0.0), start_sim(0.25));
    let shapes = [("burst:1.5,0.5,4,20", 3.0), ("sine:2,1,12", 3.0)];
    let endings = [
        Ending::Normal,
        Ending::Signals(vec![(libc::SIGTERM, 900)]),
        Ending::Signals(vec![(libc::SIGINT, 700), (libc::SIGINT, 200)]),
        Ending::MaxErrors(Some(3)),
    ];
    for (i, ending) in endings.into_iter().enumerate() {
        let (shape, secs) = shapes[i % shapes.len()];
        let case = Case {
            mode: Mode::Shape { shape, secs },
            ending,
            seed: i as u64,
            hostile: false,
        };
        if let Err(e) = check(&case, (&sims.0, &sims.1)) {
            panic!("{case:?}: {e}");
        }
    }
}

/// The routing modes' strategies (two endpoints with a balance, with and without sessions;
/// the prefill gate; the SLO controller): `i` of 4; `big` as [`mode`]'s. A routed mode's
/// second URL is filled in when its ending is known ([`with_second_url`]).
fn routing_mode(i: usize, big: bool) -> BoxedStrategy<Mode> {
    let x: u64 = if big { 3 } else { 1 };
    let balance = prop::sample::select(vec!["round-robin", "least-in-flight", "random"]);
    match i {
        0 => (20 * x..50 * x, 2.0..8.0f64, balance, 1..3u16)
            .prop_map(|(n, rate, balance, threads)| Mode::Routed {
                n,
                rate,
                turns: None,
                balance,
                threads,
                also: String::new(),
            })
            .boxed(),
        1 => (6 * x..14 * x, 1.0..4.0f64, 2..5u64, balance, 1..3u16)
            .prop_map(|(n, rate, turns, balance, threads)| Mode::Routed {
                n,
                rate,
                turns: Some(turns),
                balance,
                threads,
                also: String::new(),
            })
            .boxed(),
        2 => (20 * x..50 * x, 4.0..12.0f64, 1..4u64)
            .prop_map(|(n, rate, k)| Mode::Gated { n, rate, k })
            .boxed(),
        _ => (2.0..6.0f64, 2.0..6.0f64)
            .prop_map(|(step_s, hold_s)| Mode::Adaptive { step_s, hold_s })
            .boxed(),
    }
}

/// `mode` with its second endpoint: `url`.
fn with_second_url(mode: Mode, url: &str) -> Mode {
    match mode {
        Mode::Routed {
            n,
            rate,
            turns,
            balance,
            threads,
            ..
        } => Mode::Routed {
            n,
            rate,
            turns,
            balance,
            threads,
            also: url.to_string(),
        },
        other => other,
    }
}

/// The property for the ways a run's requests reach the server: two endpoints (by each
/// balance, one and two client threads, conversations kept on one by `--affinity session`),
/// the prefill gate (`--max-prefill-concurrency`), and the SLO controller (`run --adaptive`,
/// small windows). One case per ending, the modes in turn (each twice); a routed run's second
/// endpoint is a simulator like the first (failing as it does, for the endings that need one).
#[test]
fn a_routed_gated_or_adaptive_run_accounts_for_every_planned_request_however_it_ends() {
    let sims = (start_sim(0.0), start_sim(0.25));
    let seconds = (start_sim(0.0), start_sim(0.25));
    let mut runner = seeded_runner(37, ENDINGS);
    let next = std::cell::Cell::new(0usize);
    let modes = |big| (0..4).map(|m| routing_mode(m, big)).collect::<Vec<_>>();
    let endings: Vec<_> = (0..ENDINGS).map(ending).collect();
    let drawn = (modes(false), modes(true), endings, any::<u64>());
    let result = runner.run(&drawn, |(small, big, endings, seed)| {
        let i = next.replace(next.get() + 1);
        let e = i % ENDINGS;
        let ending = endings[e].clone();
        let failing = matches!(ending, Ending::MaxErrors(_) | Ending::Failing);
        let second = if failing {
            &seconds.1.url
        } else {
            &seconds.0.url
        };
        let mode = if e == 6 { &big } else { &small }[i % 4].clone();
        let case = Case {
            mode: with_second_url(mode, second),
            ending,
            seed,
            hostile: false,
        };
        check(&case, (&sims.0, &sims.1))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
