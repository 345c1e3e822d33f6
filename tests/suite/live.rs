//! What the screen shows mid-run is true mid-run. The binary runs against
//! `servebench sim` (long streams: 64 open at once for seconds), as a user runs it: with the
//! dashboard in a terminal (tmux, a private server of the test's own), with `--no-tui` (the
//! progress bar's line), and piped (the plain progress line). While every stream is open and
//! none has finished, the `sent` and `in flight` figures on screen equal the simulator's own
//! count of open streams (`/sim/stats`: requests received less requests answered), read in the
//! same moment; `q` then stops the run, and its result accounts for every planned request.

use crate::common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::tmux::Tmux;
use common::{json, servebench, servebench_path, SimProcess as Sim};
use serde_json::Value;

/// A `servebench sim` child: TTFT 50 ms and one token every `itl_ms`.
fn start_sim(itl_ms: u64) -> Sim {
    Sim::start(&["--itl-ms", &itl_ms.to_string()])
}

/// Streams open now in `sim`: generation requests received less those answered (the run's
/// pre-flight request is both).
fn open_streams(sim: &Sim) -> u64 {
    let addr = sim.url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /sim/stats HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    let stats: Value = serde_json::from_str(body).unwrap();
    let n = |k: &str| stats[k].as_u64().unwrap();
    let answered = [
        "ok",
        "http_500",
        "http_429",
        "disconnected",
        "stalled",
        "malformed",
    ];
    n("requests") - answered.iter().map(|k| n(k)).sum::<u64>()
}

/// The number after `word` in `text` ("sent 64" → 64), the first place it is followed by one.
fn after(text: &str, word: &str) -> Option<u64> {
    text.match_indices(word).find_map(|(i, _)| {
        let rest = text[i + word.len()..].trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// The number before `word` in `text` ("64 sent" → 64).
fn before(text: &str, word: &str) -> Option<u64> {
    text.match_indices(word).find_map(|(i, _)| {
        let head = text[..i].trim_end();
        let digits: String = (head.chars().rev())
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        digits.parse().ok()
    })
}

/// Waits until the screen (as `read` gives it) shows the same figures twice, 0.7 s apart
/// (longer than the dashboard's and the bar's redraw periods, so the second is a redraw made
/// between the two reads), while the simulator has all 64 streams open before the first read
/// and after the second: open streams only rise to 64 and then fall, so they were 64 all
/// along. Returns (figures, open streams, screen).
fn stable_read(
    sim: &Sim,
    limit: Duration,
    read: impl Fn() -> String,
    figures: impl Fn(&str) -> Option<(u64, u64)>,
) -> ((u64, u64), u64, String) {
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < limit,
            "no stable figures within {limit:?}:\n{}",
            read()
        );
        let open = open_streams(sim);
        let first = figures(&read());
        // The span between the two reads (see above): what the test reads, not a wait.
        std::thread::sleep(Duration::from_millis(700));
        let text = read();
        let second = figures(&text);
        if let (Some(f), true) = (second, first == second) {
            if open == 64 && open_streams(sim) == open {
                return (f, open, text);
            }
        }
        // Polls a screen and a simulator process until they agree.
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// 128 requests, at most 64 at once, 100 tokens at 50 ms each: 64 streams stay open for 5 s.
fn run_line(url: &str, dir: &Path, name: &str, more: &str) -> String {
    format!(
        "{} run --base-url {url} --tokenizer words --num-prompts 128 --max-concurrency 64 \
         --output-len 100 --result-dir {} --result-filename {name} {more}",
        servebench_path().display(),
        dir.display()
    )
}

#[test]
fn the_dashboard_shows_the_streams_open_at_that_moment_and_q_accounts_for_the_rest() {
    let sim = start_sim(50);
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("live", 160);
    tmux.start(&run_line(&sim.url, dir.path(), "q.json", ""));
    // "requests   sent 64 of 128   done 0   failed 0   in flight 64 (cap 64)"
    let ((sent, in_flight), open, screen) = stable_read(
        &sim,
        Duration::from_secs(30),
        || tmux.screen(),
        |s| {
            let line = s.lines().find(|l| l.contains("in flight"))?;
            Some((after(line, "sent")?, after(line, "in flight")?))
        },
    );
    assert_eq!(
        (sent, in_flight),
        (open, open),
        "the dashboard's sent and in flight against the simulator's {open} open streams:\n{screen}"
    );
    assert!(screen.contains("of 128"), "{screen}");
    // `q` stops the sends: the 64 waiting for a slot are never sent, and say so.
    tmux.tmux(&["send-keys", "-t", "t", "q"]);
    common::wait_for("the run's end after q", Duration::from_secs(30), || {
        tmux.exited()
    });
    let r = json(&dir.path().join("q.json"));
    let n = |k: &str| r[k].as_u64().unwrap();
    assert_eq!(n("planned"), 128, "{r}");
    assert_eq!(n("completed") + n("failed") + n("unsent"), 128);
    assert_eq!(r["unsent_by"]["stopped"], 64);
    assert_eq!(r["complete"], false);
    let records = std::fs::read_to_string(dir.path().join("q.records.jsonl")).unwrap();
    assert_eq!(records.lines().count() as u64, n("completed") + n("failed"));
}

#[test]
fn the_progress_line_shows_the_streams_open_at_that_moment() {
    // The bar (--no-tui on a terminal) redraws every 200 ms.
    let sim = start_sim(50);
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("bar", 160);
    tmux.start(&run_line(&sim.url, dir.path(), "b.json", "--no-tui"));
    // "0/128 done (0 failed), 64 sent, 64 in flight, ..."
    let figures = |s: &str| Some((before(s, " sent,")?, before(s, " in flight")?));
    let ((sent, in_flight), open, screen) =
        stable_read(&sim, Duration::from_secs(30), || tmux.screen(), figures);
    assert_eq!(
        (sent, in_flight),
        (open, open),
        "the bar's line against the simulator's {open} open streams:\n{screen}"
    );

    // Piped: a plain line every 10 s, so these streams last 13 s (130 tokens, 100 ms each).
    let sim = start_sim(100);
    let err = dir.path().join("stderr.txt");
    let mut child = servebench()
        .args(["run", "--base-url", &sim.url, "--tokenizer", "words"])
        .args(["--num-prompts", "64", "--max-concurrency", "64"])
        .args(["--output-len", "130", "--result-filename", "p.json"])
        .arg("--result-dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&err).unwrap_or_default();
    let piped = stable_read(&sim, Duration::from_secs(40), read, figures);
    let _ = child.kill();
    let _ = child.wait();
    let ((sent, in_flight), open, text) = piped;
    assert_eq!(
        (sent, in_flight),
        (open, open),
        "the piped line against the simulator's {open} open streams:\n{text}"
    );
}
