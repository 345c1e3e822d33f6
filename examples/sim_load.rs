//! A raw load generator for `bench/sim_throughput.sh`: opens STREAMS connections to a
//! servebench sim (exact mode), each asking for TOKENS streamed tokens, with the connection
//! starts spread evenly over SPREAD_MS (so the server sees a steady event rate rather than
//! lockstep bursts), and counts the SSE events it receives. One thread; no HTTP library and
//! none of servebench's client code (it measures the server, not a client).
//!
//! Usage: sim_load HOST:PORT STREAMS TOKENS SPREAD_MS
//!
//! `SIM_LOAD_COLD_LINES=N` (default 0) gives each stream 8 KiB of state of its own and has
//! every read update N of its cache lines, in a scattered order: what a client whose per-stream
//! state is spread over N more lines pays per event, with nothing else changed
//! (docs/performance.md, "Instructions per event").

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A stream's own state with `SIM_LOAD_COLD_LINES` (8 KiB: 128 lines of 8 words).
const STATE_WORDS: usize = 1024;
const WORDS_PER_LINE: usize = 8;
const LINES: usize = STATE_WORDS / WORDS_PER_LINE;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: sim_load HOST:PORT STREAMS TOKENS SPREAD_MS");
        std::process::exit(2);
    }
    let addr = args[1].clone();
    let streams: usize = args[2].parse().expect("STREAMS");
    let tokens: usize = args[3].parse().expect("TOKENS");
    let spread = Duration::from_secs_f64(args[4].parse::<f64>().expect("SPREAD_MS") / 1000.0);
    let cold_lines: usize = std::env::var("SIM_LOAD_COLD_LINES")
        .ok()
        .map_or(0, |v| v.parse().expect("SIM_LOAD_COLD_LINES"))
        .min(LINES);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let (events, failed) = rt.block_on(async move {
        let body = format!(r#"{{"prompt":"x","max_tokens":{tokens},"stream":true}}"#);
        let t0 = tokio::time::Instant::now();
        let tasks: Vec<_> = (0..streams)
            .map(|i| {
                let (addr, body) = (addr.clone(), body.clone());
                let at = t0 + spread.mul_f64(i as f64 / streams as f64);
                tokio::spawn(async move {
                    tokio::time::sleep_until(at).await;
                    let Ok(mut s) = TcpStream::connect(&addr).await else {
                        return None;
                    };
                    let head = format!(
                        "POST /v1/completions HTTP/1.1\r\nhost: sim\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    s.write_all(head.as_bytes()).await.ok()?;
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut state = vec![0u64; if cold_lines > 0 { STATE_WORDS } else { 0 }];
                    let (mut events, mut tail) = (0usize, 0u8);
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                let b = &buf[..n];
                                if tail == b'\n' && b[0] == b'\n' {
                                    events += 1;
                                }
                                events += b.windows(2).filter(|w| w == b"\n\n").count();
                                tail = b[n - 1];
                                // Lines in a scattered order, so the prefetcher cannot
                                // bring the next one in with the last.
                                for k in 0..cold_lines {
                                    let line = k * 37 % LINES;
                                    state[line * WORDS_PER_LINE] += n as u64;
                                }
                            }
                        }
                    }
                    std::hint::black_box(&state);
                    Some(events)
                })
            })
            .collect();
        let (mut total, mut failed) = (0, 0);
        for t in tasks {
            match t.await.ok().flatten() {
                Some(e) => total += e,
                None => failed += 1,
            }
        }
        (total, failed)
    });
    let elapsed = started.elapsed();
    println!(
        "streams={streams} tokens={tokens} events={events} failed_connections={failed} elapsed_s={:.3} events_per_s={:.0}",
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64()
    );
}
