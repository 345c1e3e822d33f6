//! Engine mode: natural ends, the queue timeout, faults, llama.cpp timings, and the metrics,
//! tokenize and info endpoints agreeing with the engine.

use super::*;

/// A small engine: 1 ms steps plus 0.1 ms per token, so tests under paused time are quick.
fn small_engine() -> SimConfig {
    SimConfig {
        engine: Some(EngineConfig {
            scheduler: SchedulerKind::ChunkedPrefill,
            max_num_seqs: 4,
            max_batched_tokens: 256,
            kv_capacity_tokens: 10_000,
            max_model_len: 2048,
            step_overhead: Duration::from_millis(1),
            prefill_per_token: Duration::from_micros(100),
            decode_per_seq: Duration::from_micros(100),
            prefill_attention_per_pair: Duration::ZERO,
            decode_attention_per_token: Duration::ZERO,
            frontend_latency: Duration::from_millis(2),
            mean_output_tokens: Some(20),
            queue_timeout: None,
        }),
        ..SimConfig::default()
    }
}

fn content_events(r: &RawResponse) -> Vec<Value> {
    r.events()
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| parse(e))
        .filter(|v| v["choices"].as_array().is_some_and(|c| !c.is_empty()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn engine_streams_natural_ends_and_ignore_eos() {
    let server = start(small_engine()).await;
    let addr = server.local_addr();
    // Without ignore_eos the seeded natural length (10..=30) ends the stream with "stop".
    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":"a b c","max_tokens":100,"stream":true,"stream_options":{"include_usage":true}}"#,
    )
    .await;
    assert_sse_headers(&r);
    let events = content_events(&r);
    let n = events.len();
    assert!((10..=30).contains(&n), "{n}");
    assert_eq!(events[n - 1]["choices"][0]["finish_reason"], "stop");
    let usage = parse(&r.events()[n]);
    assert_eq!(usage["usage"]["completion_tokens"], n);
    assert_eq!(usage["usage"]["prompt_tokens"], 3);
    // With ignore_eos: exactly max_tokens, "length".
    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":"a b c","max_tokens":50,"stream":true,"ignore_eos":true}"#,
    )
    .await;
    let events = content_events(&r);
    assert_eq!(events.len(), 50);
    assert_eq!(events[49]["choices"][0]["finish_reason"], "length");
    // TGI: no ignore_eos; the final event says eos_token.
    let r = post(
        addr,
        "/generate_stream",
        r#"{"inputs":"a b","parameters":{"max_new_tokens":100,"details":true}}"#,
    )
    .await;
    let last = parse(r.events().last().unwrap());
    assert_eq!(last["details"]["finish_reason"], "eos_token");
    // A context longer than max_model_len is refused, like vLLM.
    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":"a","max_tokens":2048}"#,
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.body().contains("maximum context length"));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn engine_queue_timeout_answers_503() {
    let mut config = small_engine();
    if let Some(e) = config.engine.as_mut() {
        e.max_num_seqs = 1;
        e.queue_timeout = Some(Duration::from_millis(50));
    }
    let server = start(config).await;
    let addr = server.local_addr();
    let long = r#"{"prompt":"x","max_tokens":500,"ignore_eos":true,"stream":true}"#;
    let first = tokio::spawn(async move { post(addr, "/v1/completions", long).await });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let second = post(addr, "/v1/completions", long).await;
    assert_eq!(second.status, 503);
    assert_eq!(second.json()["error"]["type"], "server_overloaded");
    let first = first.await.unwrap();
    assert_eq!(content_events(&first).len(), 500);
    assert_eq!(server.stats().queue_timeouts, 1);
    assert_eq!(server.stats().ok, 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn engine_mode_keeps_the_faults() {
    let mut config = with_faults(FaultConfig {
        disconnect_rate: 1.0,
        ..Default::default()
    });
    config.engine = small_engine().engine;
    let server = start(config).await;
    let body = r#"{"prompt":"x","max_tokens":10,"ignore_eos":true,"stream":true}"#;
    let r = post(server.local_addr(), "/v1/completions", body).await;
    assert!(!r.complete);
    assert_eq!(content_events(&r).len(), 5);
    assert_eq!(server.stats().disconnected, 1);
    server.shutdown().await;
}

/// llama.cpp's `timings` in engine mode are what the engine spent on that request: the
/// decode time per token is the gap between its chunks, and the prompt time is its prefill
/// alone, without the time it waited for the single slot.
#[tokio::test(start_paused = true)]
async fn engine_llama_timings_follow_the_engine() {
    let mut config = small_engine();
    if let Some(e) = config.engine.as_mut() {
        e.max_num_seqs = 1;
        // Whole-ms steps: the paused clock's timers have 1 ms resolution.
        e.prefill_per_token = Duration::from_micros(200);
        e.decode_per_seq = Duration::from_millis(1);
    }
    let server = start(config).await;
    let addr = server.local_addr();
    let body = r#"{"prompt":"a b c d e f g h i j","n_predict":8,"ignore_eos":true,"stream":true}"#;
    let first = tokio::spawn(async move { post(addr, "/completion", body).await });
    tokio::time::sleep(Duration::from_millis(1)).await;
    let second = tokio::spawn(async move { post(addr, "/completion", body).await });
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    for (i, r) in [first.await.unwrap(), second.await.unwrap()]
        .iter()
        .enumerate()
    {
        let events = r.events();
        assert_eq!(events.len(), 8 + 1, "{events:?}");
        let t = &parse(&events[8])["timings"];
        // One frame per token (the last one carries the stop event too).
        let times: Vec<f64> = r.frames.iter().map(|(at, _)| ms(*at)).collect();
        assert_eq!(times.len(), 8);
        let per_token = t["predicted_per_token_ms"].as_f64().unwrap();
        for gap in times.windows(2).map(|w| w[1] - w[0]) {
            assert!(
                close(gap, per_token),
                "request {i}: gap {gap} vs {t} {times:?}"
            );
        }
        assert!(close(
            t["predicted_ms"].as_f64().unwrap(),
            times[7] - times[0]
        ));
        assert!(close(per_token, 2.0), "one decode: 1 ms + 1 ms, {t}");
        assert!(close(t["predicted_per_second"].as_f64().unwrap(), 500.0));
        assert_eq!(t["predicted_n"], 8);
        assert_eq!(t["prompt_n"], 10);
        // The prefill step: 1 ms + 10 × 0.2 ms, whatever the wait before it.
        let prompt_ms = t["prompt_ms"].as_f64().unwrap();
        assert!(close(prompt_ms, 3.0), "request {i}: {t}");
        assert!(close(t["prompt_per_token_ms"].as_f64().unwrap(), 0.3));
        let waited = times[0] - prompt_ms - 2.0;
        if i == 0 {
            assert!(
                close(waited, 0.0),
                "front end 2 ms, then the prefill: {times:?}"
            );
        } else {
            // It waited for the first request's prefill and 7 decodes (less the 1 ms head start).
            assert!(waited >= 3.0 + 7.0 * 2.0 - 1.0, "{times:?}");
        }
    }
    // The non-streamed answer reports the same spans.
    let r = post(
        addr,
        "/completion",
        r#"{"prompt":"a b c d e f g h i j","n_predict":8,"ignore_eos":true}"#,
    )
    .await;
    let t = &r.json()["timings"];
    assert!(close(t["prompt_ms"].as_f64().unwrap(), 3.0), "{t}");
    assert!(close(t["predicted_ms"].as_f64().unwrap(), 14.0), "{t}");
    server.shutdown().await;
}

/// `/metrics`, `/tokenize`, `/sim/info` and TGI's `/info` over a real socket, all consistent
/// with the one engine behind them.
#[tokio::test(start_paused = true)]
async fn metrics_tokenize_and_info_agree_with_the_engine() {
    let mut config = small_engine();
    config.time_scale = 4.0;
    config.preset = Preset::VllmLlama405b;
    let server = start(config).await;
    let addr = server.local_addr();
    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":"one two three four","max_tokens":7,"ignore_eos":true,"stream":true}"#,
    )
    .await;
    assert_eq!(content_events(&r).len(), 7);

    let r = request(addr, "GET", "/metrics", None).await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let text = r.body();
    let value = |name: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(name) && !l.starts_with('#'))
            .unwrap_or_else(|| panic!("{name} missing in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(value("vllm:prompt_tokens_total{"), 4.0);
    assert_eq!(value("vllm:generation_tokens_total{"), 7.0);
    assert_eq!(value("vllm:num_requests_running{"), 0.0);
    assert_eq!(value("vllm:num_requests_waiting{"), 0.0);
    assert_eq!(value("vllm:kv_cache_usage_perc{"), 0.0);
    assert_eq!(value("vllm:gpu_cache_usage_perc{"), 0.0);
    assert_eq!(value("vllm:time_to_first_token_seconds_count{"), 1.0);
    assert_eq!(value("vllm:time_per_output_token_seconds_count{"), 6.0);
    // Prefill of 4 tokens after the front-end: 2 ms + 1.4 ms, simulated.
    let ttft = value("vllm:time_to_first_token_seconds_sum{");
    assert!((ttft - 0.0014).abs() < 1e-6, "{ttft}");
    assert!(text.contains(
        "vllm:time_to_first_token_seconds_bucket{model_name=\"servebench-sim\",le=\"+Inf\"} 1"
    ));

    let r = post(addr, "/tokenize", r#"{"content":"one two  three"}"#).await;
    let v = r.json();
    assert_eq!(v["tokens"].as_array().unwrap().len(), 3);
    assert!(v.get("count").is_none());
    let r = post(addr, "/tokenize", r#"{"prompt":"one two three four"}"#).await;
    let w = r.json();
    assert_eq!(w["count"], 4);
    assert_eq!(w["max_model_len"], 2048);
    assert_eq!(w["tokens"][0], v["tokens"][0], "same word, same id");
    let r = post(addr, "/tokenize", r#"{"nothing":1}"#).await;
    assert_eq!(r.status, 400);

    let info = request(addr, "GET", "/sim/info", None).await.json();
    assert_eq!(info["preset"], "vllm-llama-405b");
    assert_eq!(info["mode"], "engine");
    assert_eq!(info["time_scale"], 4.0);
    assert_eq!(info["engine"]["max_num_seqs"], 4);
    assert_eq!(info["engine"]["step_overhead_ms"], 1.0);

    let tgi = request(addr, "GET", "/info", None).await.json();
    assert_eq!(tgi["max_total_tokens"], 2048);
    assert_eq!(tgi["max_batch_total_tokens"], 10_000);
    assert_eq!(tgi["max_batch_prefill_tokens"], 256);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn exact_mode_metrics_and_llamacpp_names() {
    let server = start(SimConfig {
        metrics_flavor: MetricsFlavor::Llamacpp,
        ..fast()
    })
    .await;
    let addr = server.local_addr();
    post(
        addr,
        "/completion",
        r#"{"prompt":"a b","n_predict":5,"stream":true}"#,
    )
    .await;
    let text = request(addr, "GET", "/metrics", None).await.body();
    for line in [
        "llamacpp:prompt_tokens_total 2\n",
        "llamacpp:tokens_predicted_total 5\n",
        "llamacpp:requests_processing 0\n",
        "llamacpp:requests_deferred 0\n",
        "llamacpp:kv_cache_usage_ratio 0\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    let info = request(addr, "GET", "/sim/info", None).await.json();
    assert_eq!(info["preset"], "exact");
    assert_eq!(info["exact"]["ttft_ms"], 5.0);
    server.shutdown().await;
}

#[test]
fn time_scale_is_validated() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let c = SimConfig {
            time_scale: bad,
            ..SimConfig::default()
        };
        assert!(
            c.validate().unwrap_err().to_string().contains("time_scale"),
            "{bad}"
        );
    }
    for p in Preset::ALL {
        assert!(SimConfig::from_preset(p).validate().is_ok(), "{p}");
        assert_eq!(p.name().parse::<Preset>().unwrap(), p);
    }
    assert!("nope"
        .parse::<Preset>()
        .unwrap_err()
        .to_string()
        .contains("vllm-llama-405b"));
}
