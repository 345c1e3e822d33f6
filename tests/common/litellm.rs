//! Test harness for the second real server: LiteLLM's proxy (an OpenAI-compatible gateway on
//! FastAPI and uvicorn, with its own HTTP client and its own SSE framing) in front of the real
//! llama.cpp server of `common::real_server`, started through `scripts/litellm_proxy.py` from
//! the `.venv-litellm/` that `scripts/install-litellm.sh` creates.
//!
//! Each [`Gateway`] has its own llama.cpp server and its own master key (random, sent by the
//! tests as `--api-key`). Both processes bind 127.0.0.1 port 0 themselves and are stopped
//! when the gateway is dropped, the proxy first. Tests fail (not skip) when either is not
//! installed, unless the environment sets `SERVEBENCH_SKIP_REAL=1`.

use std::io::Read;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::real_server::{
    http_request_with, repo_dir, skip_when_not_installed, ListeningProcess, RealServer,
};

/// How long the proxy may take to answer: importing LiteLLM takes about 9 s of CPU, several
/// times that on a 2-core machine that is compiling at the same time.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(300);
const NOT_INSTALLED: &str = "LiteLLM's proxy not installed: run scripts/install-litellm.sh";

/// LiteLLM's proxy in front of a real llama.cpp server; both stopped on drop.
pub struct Gateway {
    // Declared first, so dropped first: the proxy stops before the server behind it.
    process: ListeningProcess,
    key: String,
    upstream: RealServer,
}

impl Gateway {
    /// Starts a llama.cpp server with `parallel` slots and the proxy in front of it, waits for
    /// the proxy to list the model (at most 300 s) and sends one completion through it.
    ///
    /// Panics when either is not installed, unless `SERVEBENCH_SKIP_REAL=1`, in which case it
    /// returns `None`.
    pub fn start(parallel: u32) -> Option<Gateway> {
        let python = Self::python();
        if !python.is_file() || !Self::installed() {
            if skip_when_not_installed() {
                eprintln!("SERVEBENCH_SKIP_REAL=1: {NOT_INSTALLED}; skipping");
                return None;
            }
            panic!("{NOT_INSTALLED}");
        }
        let upstream = RealServer::start(parallel)?;
        let began = Instant::now();
        let key = random_key();
        let mut cmd = Command::new(&python);
        cmd.arg(repo_dir().join("scripts/litellm_proxy.py"))
            .args(["--upstream", upstream.base_url(), "--port", "0"])
            .args(["--alias", upstream.model(), "--exit-with-parent"])
            .env("LITELLM_MASTER_KEY", &key);
        let process = ListeningProcess::spawn("LiteLLM proxy", cmd, STARTUP_TIMEOUT);
        let gateway = Gateway {
            process,
            key,
            upstream,
        };
        let listening_ms = began.elapsed().as_millis();
        let models = gateway.request("GET", "/v1/models", None);
        if !models.contains(gateway.model()) {
            gateway
                .process
                .fail(&format!("does not list {}: {models}", gateway.model()));
        }
        let warm = format!(
            r#"{{"model":"{}","prompt":"Hello","max_tokens":4}}"#,
            gateway.model()
        );
        gateway.request("POST", "/v1/completions", Some(&warm));
        eprintln!(
            "LiteLLM proxy (pid {}) at {} in front of {}: listening after {listening_ms} ms, warmed up after {} ms",
            gateway.process.pid(),
            gateway.base_url(),
            gateway.upstream.base_url(),
            began.elapsed().as_millis()
        );
        Some(gateway)
    }

    /// The proxy's `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        self.process.base_url()
    }

    /// The proxy's master key, for `--api-key`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The model name to send in requests (the proxy forwards it unchanged).
    pub fn model(&self) -> &str {
        self.upstream.model()
    }

    /// The llama.cpp server behind the proxy.
    pub fn upstream(&self) -> &RealServer {
        &self.upstream
    }

    /// Process ids of the proxy and of the server behind it.
    pub fn pids(&self) -> (u32, u32) {
        (self.process.pid(), self.upstream.pid())
    }

    /// One authorized request to the proxy; panics, with the proxy's log, unless it answers
    /// 200. Returns the body.
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> String {
        let auth = format!("Bearer {}", self.key);
        match http_request_with(
            self.base_url(),
            method,
            path,
            body,
            &[("Authorization", &auth)],
        ) {
            Ok(r) if r.status == 200 => r.body,
            Ok(r) => self.process.fail(&format!(
                "{method} {path} answered HTTP {}: {}",
                r.status, r.body
            )),
            Err(e) => self.process.fail(&format!("{method} {path} failed: {e}")),
        }
    }

    /// The proxy's log (LiteLLM's stderr) so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    fn python() -> PathBuf {
        repo_dir().join(".venv-litellm/bin/python")
    }

    /// Whether `.venv-litellm/lib/python3*/site-packages/litellm/proxy` exists.
    fn installed() -> bool {
        let lib = repo_dir().join(".venv-litellm/lib");
        std::fs::read_dir(lib).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().join("site-packages/litellm/proxy").is_dir())
        })
    }
}

/// `sk-` and 32 random hex digits (from the kernel's random source).
fn random_key() -> String {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sk-{hex}")
}
