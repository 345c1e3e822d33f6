//! A raw load generator for `bench/sim_throughput.sh`: opens STREAMS connections to a
//! servebench sim (exact mode), each asking for TOKENS streamed tokens, with the connection
//! starts spread evenly over SPREAD_MS (so the server sees a steady event rate rather than
//! lockstep bursts), and counts the SSE events it receives. One thread; no HTTP library and
//! none of servebench's client code (it measures the server, not a client).
//!
//! Usage: sim_load HOST:PORT STREAMS TOKENS SPREAD_MS

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
                            }
                        }
                    }
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
