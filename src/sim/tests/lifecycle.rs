//! The simulator's other endpoints, its errors, shutdown, config validation, and the ignored
//! load smoke test.

use super::*;

#[tokio::test(start_paused = true)]
async fn metadata_endpoints_and_errors() {
    let server = start(SimConfig {
        model: "my \"model\"".into(),
        ..fast()
    })
    .await;
    let addr = server.local_addr();
    assert!(server.base_url().starts_with("http://127.0.0.1:"));

    let r = request(addr, "GET", "/health", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "ok");

    let r = request(addr, "GET", "/v1/models", None).await;
    let v = r.json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "my \"model\"");
    assert_eq!(v["data"][0]["owned_by"], "servebench-sim");

    // The model name is escaped in streamed events.
    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":1,"stream":true}"#,
    )
    .await;
    assert_eq!(parse(&r.events()[0])["model"], "my \"model\"");

    let r = request(addr, "GET", "/nope", None).await;
    assert_eq!(r.status, 404);

    for (path, body) in [
        ("/v1/completions", "{not json"),
        ("/v1/chat/completions", r#"{"max_tokens":-3}"#),
        ("/generate_stream", r#"{"parameters":{"max_new_tokens":0}}"#),
        ("/completion", "[1,2]"),
        ("/v1/completions", r#"{"max_tokens":99999999999}"#),
        ("/v1/completions", r#"{"stream":"yes"}"#),
    ] {
        let r = post(addr, path, body).await;
        assert_eq!(r.status, 400, "{path} {body}");
        let v = r.json();
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert!(v["error"]["message"].as_str().unwrap().len() > 3);
    }
    // Bad requests are not numbered.
    assert_eq!(server.stats().requests, 1);
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_stalled_streams() {
    let server = start(with_faults(FaultConfig {
        stall_rate: 1.0,
        ..Default::default()
    }))
    .await;
    let addr = server.local_addr();
    let client = tokio::spawn(async move {
        post(
            addr,
            "/v1/completions",
            r#"{"prompt":"x","max_tokens":4,"stream":true}"#,
        )
        .await
    });
    while server.stats().stalled == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Guard against a hang, not a timing assertion.
    tokio::time::timeout(Duration::from_secs(60), server.shutdown())
        .await
        .expect("shutdown hung on a stalled stream");
    let r = client.await.unwrap();
    assert!(!r.complete);
}

#[test]
fn validate_rejects_bad_config() {
    assert!(SimConfig::default().validate().is_ok());
    let bad = |f: fn(&mut SimConfig), field: &str| {
        let mut c = SimConfig::default();
        f(&mut c);
        let err = c.validate().unwrap_err().to_string();
        assert!(err.contains(field), "{err:?} should name {field}");
    };
    bad(|c| c.faults.error_rate = -0.1, "error_rate");
    bad(|c| c.faults.rate_limit_rate = 2.0, "rate_limit_rate");
    bad(|c| c.faults.disconnect_rate = f64::NAN, "disconnect_rate");
    bad(|c| c.faults.stall_rate = 1.01, "stall_rate");
    bad(|c| c.faults.malformed_rate = -1.0, "malformed_rate");
    bad(
        |c| {
            c.faults.error_rate = 0.5;
            c.faults.malformed_rate = 0.6;
        },
        "sum",
    );
    bad(|c| c.tokens_per_chunk = 0, "tokens_per_chunk");
    bad(|c| c.output_tokens = 0, "output_tokens");
}

#[tokio::test]
async fn spawn_rejects_invalid_config() {
    let mut c = SimConfig::default();
    c.faults.error_rate = 3.0;
    let err = spawn(c, "127.0.0.1:0".parse().unwrap())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("error_rate"));
}

/// Load smoke test: many concurrent streams against a server confined to one thread. Run
/// with `cargo test --release --lib sim::tests::lifecycle::throughput_smoke -- --ignored
/// --nocapture`; it prints the event rate and the server's own lateness report.
#[test]
#[ignore = "load test; run explicitly, preferably with --release"]
fn throughput_smoke() {
    let streams: usize = std::env::var("SIM_STREAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let tokens = 200;
    let config = SimConfig {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(5),
        ..SimConfig::default()
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server_thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let cpu_before = thread_cpu();
        let stats = rt.block_on(async move {
            let server = start(config).await;
            addr_tx.send(server.local_addr()).unwrap();
            let _ = stop_rx.await;
            let stats = server.stats();
            server.shutdown().await;
            stats
        });
        (stats, thread_cpu().saturating_sub(cpu_before))
    });
    let addr = addr_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let events: usize = rt.block_on(async move {
        let body = format!(r#"{{"prompt":"x","max_tokens":{tokens},"stream":true}}"#);
        let tasks: Vec<_> = (0..streams)
            .map(|_| {
                let body = body.clone();
                tokio::spawn(async move {
                    let mut s = TcpStream::connect(addr).await.unwrap();
                    let head = format!(
                        "POST /v1/completions HTTP/1.1\r\nhost: sim\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    s.write_all(head.as_bytes()).await.unwrap();
                    let mut buf = vec![0u8; 16 * 1024];
                    let mut events = 0;
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => events += buf[..n].windows(2).filter(|w| w == b"\n\n").count(),
                        }
                    }
                    events
                })
            })
            .collect();
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        total
    });
    let elapsed = started.elapsed();
    let _ = stop_tx.send(());
    let (stats, server_cpu) = server_thread.join().unwrap();
    println!(
        "{streams} streams, {events} events in {elapsed:?}: {:.0} events/s; server CPU {server_cpu:?} = {:.0} events per CPU-second; server: {stats:?}",
        events as f64 / elapsed.as_secs_f64(),
        events as f64 / server_cpu.as_secs_f64().max(1e-3),
    );
    assert_eq!(events, streams * (tokens + 1));
}

/// CPU time (user + system) of the calling thread, from `/proc` (Linux; zero elsewhere).
fn thread_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    // USER_HZ is 100 on every mainstream Linux configuration.
    Duration::from_millis(ticks * 10)
}
