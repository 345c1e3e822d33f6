//! The schedule (exact under paused time, never early in real time) and each fault.

use super::*;

#[tokio::test(start_paused = true)]
async fn schedule_is_exact_under_paused_time() {
    let server = start(SimConfig {
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(10),
        ..SimConfig::default()
    })
    .await;
    let r = post(
        server.local_addr(),
        "/v1/chat/completions",
        r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"stream":true}"#,
    )
    .await;
    let times: Vec<u128> = r.frames.iter().map(|(t, _)| t.as_millis()).collect();
    // Role chunk at t0, then content at ttft + c*itl; the last frame carries the terminators.
    assert_eq!(times, [0, 50, 60, 70, 80, 90]);
    let stats = server.stats();
    assert_eq!(stats.late_chunks, 0);
    assert_eq!(stats.ok, 1);
    server.shutdown().await;
}

#[tokio::test]
async fn schedule_lower_bounds_in_real_time() {
    let ttft = Duration::from_millis(30);
    let itl = Duration::from_millis(5);
    let server = start(SimConfig {
        ttft,
        itl,
        tokens_per_chunk: 2,
        ..SimConfig::default()
    })
    .await;
    let r = post(
        server.local_addr(),
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":9,"stream":true}"#,
    )
    .await;
    assert!(r.complete);
    // 5 content chunks; never earlier than scheduled. Each event is timed by the frame that
    // brought it: a simulator delayed by a busy machine writes the chunks that fell due
    // meanwhile in one frame (late, never early), so frames are not counted.
    let content: Vec<Duration> = r
        .frames
        .iter()
        .flat_map(|(t, f)| {
            let text = std::str::from_utf8(f).unwrap();
            split_events(text)
                .into_iter()
                .filter(|e| e != "[DONE]" && parse(e)["choices"][0]["text"].is_string())
                .map(|_| *t)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(content.len(), 5, "{:?}", r.frames);
    for (c, t) in content.iter().enumerate() {
        assert!(*t >= ttft + itl * c as u32, "chunk {c} at {t:?}");
    }
    server.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Faults

const CHAT_BODY: &str =
    r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":6,"stream":true}"#;

#[tokio::test(start_paused = true)]
async fn error_fault_gives_500() {
    let server = start(with_faults(FaultConfig {
        error_rate: 1.0,
        ..Default::default()
    }))
    .await;
    let r = post(server.local_addr(), "/v1/chat/completions", CHAT_BODY).await;
    assert_eq!(r.status, 500);
    let v = r.json();
    assert_eq!(v["error"]["type"], "server_error");
    assert_eq!(v["error"]["code"], 500);
    assert_eq!(server.stats().http_500, 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn rate_limit_fault_gives_429() {
    let server = start(with_faults(FaultConfig {
        rate_limit_rate: 1.0,
        ..Default::default()
    }))
    .await;
    let r = post(server.local_addr(), "/generate_stream", r#"{"inputs":"x"}"#).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.json()["error"]["type"], "rate_limit_error");
    assert_eq!(server.stats().http_429, 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn disconnect_fault_cuts_the_body() {
    let server = start(with_faults(FaultConfig {
        disconnect_rate: 1.0,
        ..Default::default()
    }))
    .await;
    let r = post(server.local_addr(), "/v1/chat/completions", CHAT_BODY).await;
    assert_eq!(r.status, 200);
    assert!(!r.complete, "body should be cut");
    let events = r.events();
    // role + ceil(6/2) content chunks, no terminator
    assert_eq!(events.len(), 1 + 3, "{events:?}");
    assert!(!r.body().contains("[DONE]"));
    let stats = server.stats();
    assert_eq!(stats.disconnected, 1);
    assert_eq!(stats.ok, 0);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn malformed_fault_inserts_broken_event() {
    let server = start(with_faults(FaultConfig {
        malformed_rate: 1.0,
        ..Default::default()
    }))
    .await;
    let r = post(server.local_addr(), "/v1/chat/completions", CHAT_BODY).await;
    assert!(r.complete);
    let events = r.events();
    // role, 3 content, broken, 3 content, finish, [DONE]
    assert_eq!(events.len(), 10, "{events:?}");
    assert_eq!(events[4], r#"{"choices": [tru"#);
    assert_eq!(events[9], "[DONE]");
    assert_eq!(server.stats().malformed, 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn stall_fault_hangs_then_finishes() {
    let stall = Duration::from_secs(30);
    let server = start(with_faults(FaultConfig {
        stall_rate: 1.0,
        stall,
        ..Default::default()
    }))
    .await;
    let r = post(
        server.local_addr(),
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":4,"stream":true}"#,
    )
    .await;
    assert!(r.complete);
    assert_eq!(r.events().len(), 5);
    let content: Vec<Duration> = r.frames.iter().map(|(t, _)| *t).collect();
    // ttft 5 ms, itl 1 ms: chunks at 5, 6, then the stall, then 7+30s, 8+30s.
    assert_eq!(content[1], Duration::from_millis(6));
    assert_eq!(content[2], Duration::from_millis(7) + stall);
    let stats = server.stats();
    assert_eq!(stats.stalled, 1);
    assert_eq!(stats.late_chunks, 0);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn non_stream_faults() {
    let body = r#"{"prompt":"x","max_tokens":3}"#;
    let cut = start(with_faults(FaultConfig {
        disconnect_rate: 1.0,
        ..Default::default()
    }))
    .await;
    let r = post(cut.local_addr(), "/v1/completions", body).await;
    assert!(!r.complete);
    assert_eq!(cut.stats().disconnected, 1);
    cut.shutdown().await;

    let broken = start(with_faults(FaultConfig {
        malformed_rate: 1.0,
        ..Default::default()
    }))
    .await;
    let r = post(broken.local_addr(), "/v1/completions", body).await;
    assert_eq!(r.status, 200);
    assert!(serde_json::from_str::<Value>(&r.body()).is_err());
    broken.shutdown().await;

    let stall = Duration::from_secs(10);
    let slow = start(with_faults(FaultConfig {
        stall_rate: 1.0,
        stall,
        ..Default::default()
    }))
    .await;
    let r = post(slow.local_addr(), "/v1/completions", body).await;
    // E2E = ttft + 2*itl = 7 ms, then the stall.
    assert_eq!(r.frames[0].0, Duration::from_millis(7) + stall);
    assert_eq!(
        r.json()["choices"][0]["text"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        3
    );
    slow.shutdown().await;
}

#[test]
fn plan_chunks_and_deadlines() {
    let t0 = Instant::now();
    let plan = |tokens, k| super::stream::Plan {
        t0,
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(10),
        tokens,
        chunks: super::spec::Chunks::Fixed(k),
        fault: super::faults::Fault::None,
        stall: Duration::ZERO,
        queued: Duration::ZERO,
        prompt: 0,
    };
    assert_eq!(plan(10, 3).chunks(), 4);
    assert_eq!(plan(9, 3).chunks(), 3);
    assert_eq!(plan(1, 8).chunks(), 1);
    assert_eq!(plan(128, 1).chunks(), 128);
    let p = plan(10, 1);
    assert_eq!(p.deadline(0) - t0, Duration::from_millis(50));
    assert_eq!(p.deadline(9) - t0, Duration::from_millis(140));
    // Absurd durations saturate instead of panicking.
    let mut huge = plan(10, 1);
    huge.itl = Duration::MAX;
    assert!(huge.deadline(5) > t0);
}

/// What a client observed for one request.
fn classify(r: &RawResponse) -> &'static str {
    match r.status {
        500 => "500",
        429 => "429",
        _ if !r.complete => "disconnect",
        _ if r.body().contains("[tru") => "malformed",
        _ => "complete",
    }
}

#[tokio::test(start_paused = true)]
async fn seeded_faults_are_reproducible() {
    let faults = FaultConfig {
        error_rate: 0.1,
        rate_limit_rate: 0.05,
        disconnect_rate: 0.05,
        stall_rate: 0.05,
        malformed_rate: 0.05,
        stall: Duration::from_millis(100),
    };
    let config = SimConfig {
        seed: 1234,
        ..with_faults(faults.clone())
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        let server = start(config.clone()).await;
        let mut seen = Vec::new();
        for _ in 0..50 {
            let r = post(server.local_addr(), "/v1/chat/completions", CHAT_BODY).await;
            seen.push(classify(&r));
        }
        let stats = server.stats();
        let count = |k| seen.iter().filter(|s| **s == k).count() as u64;
        assert_eq!(stats.requests, 50);
        assert_eq!(stats.http_500, count("500"));
        assert_eq!(stats.http_429, count("429"));
        assert_eq!(stats.disconnected, count("disconnect"));
        assert_eq!(stats.malformed, count("malformed"));
        assert_eq!(stats.ok + stats.stalled, count("complete"));
        let from_endpoint = request(server.local_addr(), "GET", "/sim/stats", None).await;
        let served: SimStats = serde_json::from_str(&from_endpoint.body()).unwrap();
        assert_eq!(served, stats);
        runs.push((seen, stats));
        server.shutdown().await;
    }
    assert_eq!(runs[0], runs[1]);
    // Matches the offline draw, and some of each kind happened.
    let expected: Vec<super::faults::Fault> = (0..50)
        .map(|n| super::faults::pick(&faults, 1234, n))
        .collect();
    let faulty = expected
        .iter()
        .filter(|f| **f != super::faults::Fault::None)
        .count() as u64;
    let stats = &runs[0].1;
    assert_eq!(stats.ok, 50 - faulty);
    assert!(faulty > 5 && faulty < 30, "{faulty}");
}
