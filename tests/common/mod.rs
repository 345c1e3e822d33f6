//! The test toolkit: support code every module of the integration test binary shares
//! (`tests/main.rs`, its modules in `tests/suite/`). A helper two modules need lives here,
//! once; a module never keeps its own copy (the layer test checks the best-known ones).
//!
//! - the binary: [`servebench`], [`servebench_path`], [`output`], [`run_ok`], [`stdout_of`], [`run_fails`],
//!   [`stdout`];
//! - files: [`json`], [`read_records`], [`try_read_records`], [`path_str`], [`report_csv_row`];
//! - records: [`failure`];
//! - the driver as a library: [`run_config`], [`execute`];
//! - the simulator: [`spawn_sim`], [`exact_sim`] in this process, [`SimProcess`] as a child;
//! - processes: [`sim_url`], [`wait_for`], [`finish_within`];
//! - a test's own server: [`http`] reads its requests;
//! - tests that must not overlap: [`serial`], [`serial_async`];
//! - real servers and their relays: [`real_server`], [`litellm`], [`relay`];
//! - a real terminal: [`tmux`].

pub mod http;
pub mod litellm;
pub mod real_server;
pub mod relay;
pub mod tmux;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use servebench::config::{BackendKind, LoadSpec, Metric, RunConfig, WorkloadSpec};
use servebench::drive::run::RunOptions;
use servebench::measure::client::Secrets;
use servebench::measure::record::{FailureKind, Outcome, RequestRecord};
use servebench::results::document::BenchResult;
use servebench::sim::{SimConfig, SimServer};
use tokio::sync::{Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

/// The lock of the tests that must not overlap one another: those that measure real time
/// against a schedule held to a few ms (the exact simulator's, in this process or as child
/// processes) and those whose processes load the whole machine (real servers, sharded runs of
/// five processes). All tests of this binary run on parallel threads of one process; these
/// take turns, so that none disturbs another's clock. A paused clock cannot stand in for
/// them: the client stamps each chunk with the kernel's receive time, on the real clock. Not
/// poisoned by a failed test.
static SERIAL: Mutex<()> = Mutex::const_new(());

/// Takes [`SERIAL`] in a test that is not async (not on a runtime's thread); held until the
/// guard is dropped.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.blocking_lock()
}

/// Takes [`SERIAL`] in an async test; held until the guard is dropped.
pub async fn serial_async() -> MutexGuard<'static, ()> {
    SERIAL.lock().await
}

/// The simulator `cfg` describes, on 127.0.0.1 (port 0), on a runtime of its own as
/// `servebench run`'s built-in simulator is: the test's runtime then holds only the client.
pub async fn spawn_sim(cfg: SimConfig) -> SimServer {
    servebench::sim::spawn_on_own_runtime(cfg, ([127, 0, 0, 1], 0).into())
        .await
        .expect("sim starts")
}

/// The first token's delay of [`exact_sim`], ms.
pub const EXACT_TTFT_MS: f64 = 30.0;

/// The exact simulator the workload tests measure against ([`spawn_sim`]): the first token
/// [`EXACT_TTFT_MS`] after the request, usage in every stream, seed 7, the rest its defaults.
pub async fn exact_sim() -> SimServer {
    spawn_sim(SimConfig {
        ttft: Duration::from_millis(EXACT_TTFT_MS as u64),
        usage: true,
        seed: 7,
        ..SimConfig::default()
    })
    .await
}

/// A `servebench sim` child process and the URL it serves; killed (and reaped) on drop.
pub struct SimProcess {
    pub child: Child,
    pub url: String,
}

impl SimProcess {
    /// `servebench sim --port 0 ARGS`, once it printed its URL.
    pub fn start(args: &[&str]) -> SimProcess {
        let mut cmd = servebench();
        cmd.args(["sim", "--port", "0"]).args(args);
        SimProcess::spawn(cmd)
    }

    /// Spawns `cmd` (a command line that runs `servebench sim`; its stdout is piped here)
    /// and waits for the URL it prints.
    pub fn spawn(mut cmd: Command) -> SimProcess {
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let url = sim_url(&mut child);
        SimProcess { child, url }
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The built binary's path (for a command line another program runs: tmux, `ip netns`).
pub fn servebench_path() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("servebench")
}

/// The built binary, as a command to add arguments to.
pub fn servebench() -> Command {
    Command::new(servebench_path())
}

/// The first row of `servebench report PATH --format csv`, each cell by its column's name.
pub fn report_csv_row(path: &Path) -> std::collections::BTreeMap<String, String> {
    let text = stdout_of(&["report", path_str(path), "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let head = reader.headers().unwrap().clone();
    let row = reader.records().next().unwrap().unwrap();
    head.iter()
        .map(str::to_string)
        .zip(row.iter().map(str::to_string))
        .collect()
}

/// `servebench ARGS`, run to its end: its exit status and what it printed.
pub fn output(args: &[&str]) -> Output {
    servebench().args(args).output().unwrap()
}

/// What a successful `out` printed on stdout (a failure panics with everything it printed).
pub fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `servebench ARGS`, which must succeed: its stdout and stderr.
pub fn run_ok(args: &[&str]) -> (String, String) {
    let out = output(args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "servebench {args:?} failed: {stderr}");
    (stdout, stderr)
}

/// `servebench ARGS`, which must succeed: its stdout.
pub fn stdout_of(args: &[&str]) -> String {
    run_ok(args).0
}

/// Plots the one sweep document in `dir` as SVG into `dir/charts` (the plot must succeed);
/// the charts' file names.
pub fn sweep_chart_names(dir: &Path) -> Vec<String> {
    let sweep = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".sweep.json"))
        .expect("the sweep's document");
    let charts = dir.join("charts");
    run_ok(&[
        "plot",
        path_str(&sweep),
        "-o",
        path_str(&charts),
        "--format",
        "svg",
    ]);
    std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// `servebench ARGS`, which must be refused with exit code 2: its stderr.
pub fn run_fails(args: &[&str]) -> String {
    let out = output(args);
    assert_eq!(out.status.code(), Some(2), "servebench {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A path as the `&str` an argument list takes.
pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A JSON file (a result, a sweep document), parsed.
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every line of a records file (warm-ups too), each a whole record; an error names the
/// file and, for a line that is not a record (or the torn last line of a killed writer),
/// the line.
pub fn try_read_records(path: &Path) -> Result<Vec<RequestRecord>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(format!("{} ends in a torn line", path.display()));
    }
    (text.lines().enumerate())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|e| format!("{} line {}: not a whole record: {e}", path.display(), i + 1))
        })
        .collect()
}

/// A failed record's kind and message; panics on a success.
pub fn failure(r: &RequestRecord) -> (FailureKind, String) {
    match &r.outcome {
        Outcome::Failed { kind, message } => (*kind, message.clone()),
        ok => panic!("expected a failure, got {ok:?}"),
    }
}

/// Every line of a records file (warm-ups too), each a whole record; panics otherwise.
pub fn read_records(path: &Path) -> Vec<RequestRecord> {
    try_read_records(path).unwrap_or_else(|e| panic!("{e}"))
}

/// A run of `n` requests, at most `conc` at once, of `input_len` random tokens asking for
/// `output_len`, on `backend`'s default endpoint at `base_url`; a 30 s request timeout and
/// p50 and p99 of every metric. Tests change what they need on the value.
pub fn run_config(
    base_url: String,
    backend: BackendKind,
    n: u64,
    conc: u64,
    input_len: u64,
    output_len: u64,
) -> RunConfig {
    RunConfig {
        backend,
        endpoint: backend.default_endpoint().into(),
        base_url,
        load: LoadSpec {
            num_prompts: n,
            max_concurrency: Some(conc),
            timeout_s: 30.0,
            ..LoadSpec::default()
        },
        workload: WorkloadSpec::random(input_len, output_len),
        metric_percentiles: vec![50.0, 99.0],
        percentile_metrics: Metric::ALL.to_vec(),
        ..RunConfig::default()
    }
}

/// Runs `cfg` through the driver, saving `dir/name` (with a pre-flight request when
/// `preflight`): the result and every line of its records file.
pub async fn execute(
    cfg: RunConfig,
    dir: &Path,
    name: &str,
    preflight: bool,
) -> (BenchResult, Vec<RequestRecord>) {
    let opts = RunOptions::new(dir.join(name), preflight);
    let result =
        servebench::drive::run::execute(cfg, &Secrets::default(), &opts, CancellationToken::new())
            .await
            .expect("the run completes");
    (result, read_records(&opts.records_path))
}

/// The URL a `servebench sim` child (started with its stdout piped) prints,
/// `... listening on http://HOST:PORT`: the first `http://` word of its output.
pub fn sim_url(child: &mut Child) -> String {
    use std::io::BufRead;
    let out = child.stdout.take().expect("sim's stdout is piped");
    for line in std::io::BufReader::new(out).lines() {
        let line = line.unwrap();
        if let Some(i) = line.find("http://") {
            return line[i..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
        }
    }
    panic!("the simulator ended without printing its URL");
}

/// Polls `done` until it holds, panicking with `what` after `limit`. For what another
/// process or a socket does, which nothing here can be told of: the one place the toolkit
/// sleeps (20 ms between looks). No test's verdict depends on the interval.
pub fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` to end, at most `limit` (then kills it and panics with `case` and what
/// it printed: a hang is a failure); its output.
pub fn finish_within(mut child: Child, limit: Duration, case: &str) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{case}: still running after {limit:?}: {out:?}");
        }
        // Polls a child process, which cannot tell this thread it ended.
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `GET path` on the server at `url` (`http://127.0.0.1:PORT`, a simulator's `/sim/stats`
/// or `/sim/control`), its JSON body.
pub fn json_get(url: &str, path: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    serde_json::from_str(body).unwrap_or_else(|e| panic!("GET {path}: {e}: {answer}"))
}
