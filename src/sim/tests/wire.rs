//! The simulator's wire formats: each API's stream and whole answer, event by event.

use super::*;

#[tokio::test(start_paused = true)]
async fn completions_stream_with_usage() {
    let server = start(fast()).await;
    let r = post(
        server.local_addr(),
        "/v1/completions",
        r#"{"model":"x","prompt":"one two three","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}"#,
    )
    .await;
    assert_sse_headers(&r);
    assert!(r.complete);
    let events = r.events();
    assert_eq!(events.len(), 5 + 2, "{events:?}");
    assert_eq!(events.last().unwrap(), "[DONE]");
    let mut text = String::new();
    for (i, e) in events[..5].iter().enumerate() {
        let v = parse(e);
        assert_eq!(v["id"], "cmpl-0");
        assert_eq!(v["object"], "text_completion");
        assert_eq!(v["model"], "servebench-sim");
        assert!(v["usage"].is_null());
        let choice = &v["choices"][0];
        assert_eq!(choice["index"], 0);
        let t = choice["text"].as_str().unwrap();
        assert!(
            t.starts_with(' ') && t.split_whitespace().count() == 1,
            "{t:?}"
        );
        text.push_str(t);
        let expect = if i == 4 {
            Value::from("length")
        } else {
            Value::Null
        };
        assert_eq!(choice["finish_reason"], expect);
        assert!(choice["stop_reason"].is_null());
    }
    let usage = parse(&events[5]);
    assert_eq!(usage["choices"], serde_json::json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 3);
    assert_eq!(usage["usage"]["completion_tokens"], 5);
    assert_eq!(usage["usage"]["total_tokens"], 8);
    assert_eq!(text.split_whitespace().count(), 5);
    // Terminators go out with the last content chunk.
    let last_frame = split_events(std::str::from_utf8(&r.frames.last().unwrap().1).unwrap());
    assert_eq!(last_frame.len(), 3);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn completions_stream_without_usage_and_non_stream() {
    let server = start(fast()).await;
    let addr = server.local_addr();
    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":["a b","c"],"max_tokens":3,"stream":true}"#,
    )
    .await;
    let events = r.events();
    assert_eq!(events.len(), 3 + 1);
    assert!(events[..3]
        .iter()
        .all(|e| parse(e)["choices"][0]["text"].is_string()));
    assert_eq!(events[3], "[DONE]");

    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":["a b","c"],"max_tokens":4}"#,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(
        v["choices"][0]["text"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        4
    );
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["prompt_tokens"], 3);
    assert_eq!(v["usage"]["completion_tokens"], 4);
    assert_eq!(v["id"], "cmpl-1");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn chat_stream_structure() {
    let server = start(fast()).await;
    let r = post(
        server.local_addr(),
        "/v1/chat/completions",
        r#"{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi there you"}]}],"max_completion_tokens":4,"stream":true,"stream_options":{"include_usage":true}}"#,
    )
    .await;
    assert_sse_headers(&r);
    assert!(r.complete);
    // The role chunk is a frame of its own.
    let first_frame = split_events(std::str::from_utf8(&r.frames[0].1).unwrap());
    assert_eq!(first_frame.len(), 1);
    let events = r.events();
    assert_eq!(events.len(), 1 + 4 + 1 + 1 + 1, "{events:?}");
    let role = parse(&events[0]);
    assert_eq!(role["id"], "chatcmpl-0");
    assert_eq!(role["object"], "chat.completion.chunk");
    assert_eq!(
        role["choices"][0]["delta"],
        serde_json::json!({"role":"assistant","content":""})
    );
    assert!(role["choices"][0]["finish_reason"].is_null());
    for e in &events[1..5] {
        let v = parse(e);
        let delta = v["choices"][0]["delta"].as_object().unwrap();
        assert_eq!(delta.len(), 1);
        assert_eq!(
            delta["content"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .count(),
            1
        );
        assert!(v["choices"][0]["finish_reason"].is_null());
    }
    let fin = parse(&events[5]);
    assert_eq!(fin["choices"][0]["delta"], serde_json::json!({}));
    assert_eq!(fin["choices"][0]["finish_reason"], "length");
    let usage = parse(&events[6]);
    assert_eq!(usage["choices"], serde_json::json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 5);
    assert_eq!(usage["usage"]["completion_tokens"], 4);
    assert_eq!(events[7], "[DONE]");

    // Without include_usage: no usage chunk.
    let r = post(
        server.local_addr(),
        "/v1/chat/completions",
        r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"stream":true}"#,
    )
    .await;
    let events = r.events();
    assert_eq!(events.len(), 1 + 2 + 1 + 1);
    assert!(events.iter().all(|e| !e.contains("\"usage\"")));
    server.shutdown().await;
}

/// Typed events (`event:` then `data:`): the (event, data.type) pairs of a body.
fn typed_events(r: &RawResponse) -> Vec<(String, Value)> {
    (r.body().split("\n\n").filter(|e| !e.is_empty()))
        .map(|e| {
            let (kind, data) = e
                .split_once("\ndata: ")
                .expect("an event line and a data line");
            let kind = kind
                .strip_prefix("event: ")
                .expect("the event line")
                .to_string();
            let data = parse(data);
            assert_eq!(data["type"], kind.as_str());
            (kind, data)
        })
        .collect()
}

#[tokio::test]
async fn messages_and_responses_stream_structure() {
    let server = start(fast()).await;
    let r = post(
        server.local_addr(),
        "/v1/messages",
        r#"{"model":"m","system":"be brief","messages":[{"role":"user","content":"hi there you"}],"max_tokens":4,"stream":true,"sim_reasoning_tokens":1}"#,
    )
    .await;
    assert_sse_headers(&r);
    let events = typed_events(&r);
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert_eq!(events[0].1["message"]["usage"]["input_tokens"], 5);
    assert_eq!(events[1].1["content_block"]["type"], "thinking");
    assert_eq!(events[2].1["delta"]["type"], "thinking_delta");
    assert_eq!(
        (
            events[4].1["index"].as_u64(),
            events[5].1["delta"]["type"].as_str()
        ),
        (Some(1), Some("text_delta"))
    );
    assert_eq!(events[9].1["usage"]["output_tokens"], 4);
    assert_eq!(events[9].1["delta"]["stop_reason"], "max_tokens");

    let r = post(
        server.local_addr(),
        "/v1/responses",
        r#"{"model":"m","input":[{"role":"user","content":"one two three"}],"max_output_tokens":3,"stream":true}"#,
    )
    .await;
    let events = typed_events(&r);
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.completed",
        ]
    );
    let seq: Vec<u64> = events
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seq, [0, 1, 2, 3, 4]);
    let usage = &events[4].1["response"]["usage"];
    assert_eq!(
        (
            usage["input_tokens"].as_u64(),
            usage["output_tokens"].as_u64()
        ),
        (Some(3), Some(3))
    );
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn chat_reasoning_tokens_and_non_stream() {
    let server = start(SimConfig {
        tokens_per_chunk: 2,
        ..fast()
    })
    .await;
    let r = post(
        server.local_addr(),
        "/v1/chat/completions",
        r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":6,"stream":true,"sim_reasoning_tokens":3}"#,
    )
    .await;
    let events = r.events();
    // role, 3 content chunks (2+2+2 tokens), finish, [DONE]
    assert_eq!(events.len(), 6, "{events:?}");
    let d1 = parse(&events[1])["choices"][0]["delta"].clone();
    let d2 = parse(&events[2])["choices"][0]["delta"].clone();
    let d3 = parse(&events[3])["choices"][0]["delta"].clone();
    assert_eq!(
        d1["reasoning_content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        2
    );
    assert!(d1.get("content").is_none());
    assert_eq!(
        d2["reasoning_content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        1
    );
    assert_eq!(
        d2["content"].as_str().unwrap().split_whitespace().count(),
        1
    );
    assert!(d3.get("reasoning_content").is_none());

    let r = post(
        server.local_addr(),
        "/v1/chat/completions",
        r#"{"messages":[{"role":"user","content":"x y"}],"max_tokens":5,"sim_reasoning_tokens":2}"#,
    )
    .await;
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    let msg = &v["choices"][0]["message"];
    assert_eq!(msg["role"], "assistant");
    assert_eq!(
        msg["content"].as_str().unwrap().split_whitespace().count(),
        3
    );
    assert_eq!(
        msg["reasoning_content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        2
    );
    assert_eq!(v["usage"]["completion_tokens"], 5);
    assert_eq!(v["usage"]["prompt_tokens"], 2);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn tgi_stream_structure() {
    let server = start(fast()).await;
    let addr = server.local_addr();
    let r = post(
        addr,
        "/generate_stream",
        r#"{"inputs":"what is up","parameters":{"max_new_tokens":4,"details":true}}"#,
    )
    .await;
    assert_sse_headers(&r);
    assert!(r.complete);
    let events = r.events();
    assert_eq!(events.len(), 4, "{events:?}");
    let mut text = String::new();
    for (i, e) in events.iter().enumerate() {
        let v = parse(e);
        assert_eq!(v["index"], i + 1);
        let tok = &v["token"];
        assert!(tok["id"].as_u64().unwrap() >= 100);
        assert_eq!(tok["logprob"], -0.5);
        assert_eq!(tok["special"], false);
        text.push_str(tok["text"].as_str().unwrap());
        assert!(v["top_tokens"].is_null());
        if i < 3 {
            assert!(v["generated_text"].is_null());
            assert!(v["details"].is_null());
        } else {
            assert_eq!(v["generated_text"].as_str().unwrap(), text);
            assert_eq!(
                v["details"],
                serde_json::json!({"finish_reason":"length","generated_tokens":4,"seed":null,"input_length":3})
            );
        }
    }
    assert!(!r.body().contains("[DONE]"));

    let r = post(
        addr,
        "/generate_stream",
        r#"{"inputs":"q","parameters":{"max_new_tokens":2}}"#,
    )
    .await;
    let events = r.events();
    assert_eq!(events.len(), 2);
    assert!(parse(&events[1])["details"].is_null());
    assert!(parse(&events[1])["generated_text"].is_string());

    let r = post(
        addr,
        "/generate",
        r#"{"inputs":"q r","parameters":{"max_new_tokens":3,"details":true}}"#,
    )
    .await;
    let v = r.json();
    assert_eq!(
        v["generated_text"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        3
    );
    assert_eq!(v["details"]["generated_tokens"], 3);
    assert_eq!(v["details"]["input_length"], 2);

    let r = request(addr, "GET", "/info", None).await;
    let v = r.json();
    assert_eq!(v["model_id"], "servebench-sim");
    assert_eq!(v["version"], "sim");
    assert!(v["max_total_tokens"].as_u64().unwrap() > v["max_input_tokens"].as_u64().unwrap());
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn llama_stream_structure() {
    let server = start(fast()).await;
    let r = post(
        server.local_addr(),
        "/completion",
        r#"{"prompt":"tell me a story","n_predict":3,"stream":true}"#,
    )
    .await;
    assert_sse_headers(&r);
    assert!(r.complete);
    let events = r.events();
    assert_eq!(events.len(), 3 + 1, "{events:?}");
    for (i, e) in events[..3].iter().enumerate() {
        let v = parse(e);
        assert_eq!(v["index"], 0);
        assert_eq!(v["stop"], false);
        assert_eq!(v["id_slot"], 0);
        assert_eq!(v["content"].as_str().unwrap().split_whitespace().count(), 1);
        assert_eq!(v["tokens"].as_array().unwrap().len(), 1);
        assert_eq!(v["tokens_predicted"], i + 1);
        assert_eq!(v["tokens_evaluated"], 4);
    }
    let fin = parse(&events[3]);
    assert_eq!(fin["stop"], true);
    assert_eq!(fin["content"], "");
    assert_eq!(fin["stop_type"], "limit");
    assert_eq!(fin["model"], "servebench-sim");
    assert_eq!(fin["tokens_predicted"], 3);
    assert_eq!(fin["tokens_evaluated"], 4);
    let t = &fin["timings"];
    assert_eq!(t["prompt_n"], 4);
    assert_eq!(t["prompt_ms"], 5.0);
    assert_eq!(t["predicted_n"], 3);
    assert_eq!(t["predicted_per_token_ms"], 1.0);
    assert_eq!(t["predicted_per_second"], 1000.0);
    assert!(!r.body().contains("[DONE]"));
    // The stop event goes out with the last content chunk.
    let last_frame = split_events(std::str::from_utf8(&r.frames.last().unwrap().1).unwrap());
    assert_eq!(last_frame.len(), 2);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn llama_without_usage_omits_counts() {
    let server = start(SimConfig {
        usage: false,
        ..fast()
    })
    .await;
    let addr = server.local_addr();
    let r = post(
        addr,
        "/completion",
        r#"{"prompt":"x","n_predict":2,"stream":true}"#,
    )
    .await;
    let events = r.events();
    assert_eq!(events.len(), 3);
    for e in &events {
        let v = parse(e);
        for key in ["tokens", "tokens_predicted", "tokens_evaluated", "timings"] {
            assert!(v.get(key).is_none(), "{key} in {e}");
        }
    }
    assert_eq!(parse(&events[2])["stop"], true);
    // Usage disabled also wins over include_usage.
    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}"#,
    )
    .await;
    assert_eq!(r.events().len(), 3);
    let r = post(addr, "/completion", r#"{"prompt":"x","n_predict":-1}"#).await;
    let v = r.json();
    assert_eq!(
        v["content"].as_str().unwrap().split_whitespace().count(),
        128
    );
    assert!(v.get("timings").is_none());
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn default_output_tokens_apply() {
    let server = start(SimConfig {
        output_tokens: 7,
        ..fast()
    })
    .await;
    let r = post(
        server.local_addr(),
        "/v1/completions",
        r#"{"prompt":"x","stream":true}"#,
    )
    .await;
    assert_eq!(r.events().len(), 7 + 1);
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn multi_token_chunks() {
    let server = start(SimConfig {
        tokens_per_chunk: 3,
        ..fast()
    })
    .await;
    let addr = server.local_addr();
    let r = post(
        addr,
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":10,"stream":true}"#,
    )
    .await;
    let events = r.events();
    let counts: Vec<usize> = events[..4]
        .iter()
        .map(|e| {
            parse(e)["choices"][0]["text"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .count()
        })
        .collect();
    assert_eq!(counts, [3, 3, 3, 1]);
    assert_eq!(events.len(), 5);

    // TGI: one event per token, the k events of a chunk in one frame.
    let r = post(
        addr,
        "/generate_stream",
        r#"{"inputs":"x","parameters":{"max_new_tokens":10}}"#,
    )
    .await;
    let per_frame: Vec<usize> = r
        .frames
        .iter()
        .map(|(_, f)| split_events(std::str::from_utf8(f).unwrap()).len())
        .collect();
    assert_eq!(per_frame, [3, 3, 3, 1]);

    // llama.cpp: one event per chunk with the chunk's token ids.
    let r = post(
        addr,
        "/completion",
        r#"{"prompt":"x","n_predict":10,"stream":true}"#,
    )
    .await;
    let events = r.events();
    let lens: Vec<usize> = events[..4]
        .iter()
        .map(|e| parse(e)["tokens"].as_array().unwrap().len())
        .collect();
    assert_eq!(lens, [3, 3, 3, 1]);
    assert_eq!(parse(&events[3])["tokens_predicted"], 10);
    server.shutdown().await;
}
