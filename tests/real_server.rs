//! Integration tests against the real llama.cpp server with a real model
//! (see tests/common/real_server.rs): checks the stream format servebench
//! relies on, and that the harness starts servers on distinct ports and
//! never leaves one running.

mod common;

use common::real_server::{http_request, process_exists, RealServer};
use serde_json::Value;

#[test]
fn streams_completion_with_usage_and_serves_metrics() {
    let Some(server) = RealServer::start(4) else {
        return;
    };
    let body = serde_json::json!({
        "model": server.model(),
        "prompt": "Write a short story about a lighthouse.",
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 32,
        "ignore_eos": true,
        "cache_prompt": false,
    })
    .to_string();
    let resp = http_request(server.base_url(), "POST", "/v1/completions", Some(&body))
        .expect("streamed completion");
    assert_eq!(resp.status, 200, "body: {}", resp.body);
    assert!(
        resp.header("content-type")
            .is_some_and(|v| v.starts_with("text/event-stream")),
        "headers: {:?}",
        resp.headers
    );

    let data: Vec<&str> = resp
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .collect();
    assert!(data.len() >= 2, "too few SSE data events:\n{}", resp.body);
    assert_eq!(data.last(), Some(&"[DONE]"), "stream:\n{}", resp.body);

    let events: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("event {d:?}: {e}")))
        .collect();
    let usage = events
        .iter()
        .rev()
        .find_map(|e| e.get("usage").filter(|u| !u.is_null()))
        .unwrap_or_else(|| panic!("no usage in the stream:\n{}", resp.body));
    assert_eq!(usage["completion_tokens"], 32, "usage: {usage}");
    let text: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["text"].as_str())
        .collect();
    assert!(!text.is_empty(), "no generated text:\n{}", resp.body);

    let metrics = http_request(server.base_url(), "GET", "/metrics", None).expect("GET /metrics");
    assert_eq!(metrics.status, 200, "body: {}", metrics.body);
    assert!(
        metrics.body.contains("llamacpp:"),
        "not llama.cpp's Prometheus text:\n{}",
        metrics.body
    );
}

#[test]
fn concurrent_servers_get_distinct_ports_and_stop_on_drop() {
    let starters: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(|| RealServer::start(1)))
        .collect();
    let servers: Vec<RealServer> = starters
        .into_iter()
        .filter_map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        .collect();
    if servers.is_empty() {
        return; // SERVEBENCH_SKIP_REAL=1 and not installed
    }
    assert_eq!(servers.len(), 2);
    assert_ne!(servers[0].base_url(), servers[1].base_url());
    for s in &servers {
        assert!(
            s.base_url().starts_with("http://127.0.0.1:"),
            "{}",
            s.base_url()
        );
        let health = http_request(s.base_url(), "GET", "/health", None).expect("GET /health");
        assert_eq!(health.status, 200);
    }
    let pids: Vec<u32> = servers.iter().map(RealServer::pid).collect();
    let urls: Vec<String> = servers.iter().map(|s| s.base_url().to_string()).collect();
    assert!(pids.iter().all(|&p| process_exists(p)));

    drop(servers);
    for (pid, url) in pids.iter().zip(&urls) {
        assert!(
            !process_exists(*pid),
            "server pid {pid} still running after drop"
        );
        assert!(
            http_request(url, "GET", "/health", None).is_err(),
            "{url} still answers after drop"
        );
    }
}
