//! The floor under `bench/sim_throughput.sh`'s figure: the least a server can do to stream
//! the same load. It accepts the connections of `examples/sim_load.rs`, reads each request,
//! answers with a chunked `text/event-stream` head, and then writes one pre-built event of
//! EVENT_BYTES (the simulator's mean chunk size on the wire, chunk framing included) per
//! stream every ITL_MS, the first TTFT_MS after the request was read; the last write adds
//! `data: [DONE]` and the terminating chunk, and the connection is closed. No JSON, no state
//! machine, no router: a heap of streams by deadline and one non-blocking `send` per chunk,
//! on one thread (the script pins it to the simulator's core). What it costs per chunk is
//! what the kernel costs per chunk on this machine, so the simulator's cost is judged
//! against it. std and tokio only.
//!
//! Usage: send_floor STREAMS TOKENS EVENT_BYTES TTFT_MS ITL_MS   (FLOOR_NODELAY=0: see below)
//! Prints `listening on http://ADDR`, then, once STREAMS streams have ended, its own CPU time
//! (`/proc/self/stat`, user + system) and the chunks it wrote.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::net::TcpStream;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::time::Instant;

const IDLE_END: Duration = Duration::from_secs(5);

struct Stream {
    sock: TcpStream,
    sent: u32,
    /// Bytes the socket did not take yet.
    pending: Vec<u8>,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        eprintln!("usage: send_floor STREAMS TOKENS EVENT_BYTES TTFT_MS ITL_MS");
        std::process::exit(2);
    }
    let num = |i: usize| -> u64 { args[i].parse().expect("a number") };
    let (streams, tokens, event_bytes) = (num(1) as usize, num(2) as u32, num(3) as usize);
    let ttft = Duration::from_millis(num(4));
    let itl = Duration::from_millis(num(5));
    // One event, its chunk framing included, EVENT_BYTES long in all.
    let payload_len = event_bytes.saturating_sub(20).max(16);
    let data = format!("data: {{\"t\":\"{}\"}}\n\n", "x".repeat(payload_len - 14));
    let event = format!("{:X}\r\n{data}\r\n", data.len()).into_bytes();
    let last = {
        let done = "data: [DONE]\n\n";
        let mut v = event.clone();
        v.extend_from_slice(format!("{:X}\r\n{done}\r\n0\r\n\r\n", done.len()).as_bytes());
        v
    };
    // FLOOR_NODELAY=0 leaves Nagle's algorithm on (an experiment: fewer, larger segments).
    let nodelay = std::env::var("FLOOR_NODELAY").map_or(true, |v| v != "0");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let chunks = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        println!("listening on http://{}", listener.local_addr().expect("addr"));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, TcpStream)>();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    continue;
                };
                let _ = s.set_nodelay(nodelay);
                let tx = tx.clone();
                tokio::spawn(async move {
                    // The request: a head with content-length, then that many body bytes.
                    let mut buf = Vec::with_capacity(1024);
                    let end = loop {
                        if s.read_buf(&mut buf).await.ok()? == 0 {
                            return None;
                        }
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < end + len {
                        if s.read_buf(&mut buf).await.ok()? == 0 {
                            return None;
                        }
                    }
                    let at = Instant::now();
                    let mut sock = s.into_std().ok()?;
                    sock.set_nonblocking(true).ok()?;
                    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
                    sock.write_all(head).ok()?;
                    tx.send((at, sock)).ok()
                });
            }
        });
        let mut heap: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
        let mut slots: Vec<Option<Stream>> = Vec::new();
        let (mut ended, mut chunks) = (0usize, 0u64);
        let mut last_start = Instant::now();
        let mut last_yield = Instant::now();
        // Ends when STREAMS streams have ended, or every accepted one has and none came for
        // 5 s (a client that gave up on some connections).
        while ended < streams && !(ended == slots.len() && last_start.elapsed() > IDLE_END) {
            // Let the accepting tasks run at least every millisecond when there is no idle
            // moment (each yield costs a poll of the socket events).
            if last_yield.elapsed() > Duration::from_millis(1) {
                tokio::task::yield_now().await;
                last_yield = Instant::now();
            }
            // New streams, then a sleep until the earliest deadline (or a new stream).
            while let Ok((at, sock)) = rx.try_recv() {
                slots.push(Some(Stream {
                    sock,
                    sent: 0,
                    pending: Vec::new(),
                }));
                heap.push(Reverse((at + ttft, slots.len() - 1)));
                last_start = Instant::now();
            }
            let next = heap.peek().map(|Reverse((at, _))| *at);
            if next.is_none_or(|at| at > Instant::now()) {
                let wake = next.unwrap_or_else(|| Instant::now() + Duration::from_millis(20));
                tokio::select! {
                    r = rx.recv() => {
                        if let Some((at, sock)) = r {
                            slots.push(Some(Stream { sock, sent: 0, pending: Vec::new() }));
                            heap.push(Reverse((at + ttft, slots.len() - 1)));
                            last_start = Instant::now();
                        }
                    }
                    _ = tokio::time::sleep_until(wake) => {}
                }
                continue;
            }
            let now = Instant::now();
            while let Some(&Reverse((at, i))) = heap.peek() {
                if at > now {
                    break;
                }
                heap.pop();
                let Some(st) = slots[i].as_mut() else {
                    continue;
                };
                if st.sent < tokens {
                    st.sent += 1;
                    chunks += 1;
                    let bytes = if st.sent == tokens { &last } else { &event };
                    st.pending.extend_from_slice(bytes);
                }
                match st.sock.write(&st.pending) {
                    Ok(n) => {
                        st.pending.drain(..n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // The client went away.
                    Err(_) => st.sent = u32::MAX,
                }
                if st.sent >= tokens && (st.pending.is_empty() || st.sent == u32::MAX) {
                    slots[i] = None;
                    ended += 1;
                } else if st.sent >= tokens {
                    // Flush the rest a little later.
                    heap.push(Reverse((now + Duration::from_millis(1), i)));
                } else {
                    heap.push(Reverse((at + itl, i)));
                }
            }
        }
        eprintln!("floor: {} streams accepted, {ended} ended", slots.len());
        chunks
    });
    let (user, system) = self_cpu();
    let cpu = user + system;
    println!(
        "floor: {chunks} chunks, CPU {:.2} s (user {:.2} s, system {:.2} s) = {:.2} us per chunk",
        cpu.as_secs_f64(),
        user.as_secs_f64(),
        system.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / chunks.max(1) as f64
    );
}

/// This process's user and system CPU time, from `/proc/self/stat`; zero elsewhere.
fn self_cpu() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // USER_HZ is 100 on every mainstream Linux configuration.
    let field = |i: usize| {
        Duration::from_millis(10 * f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0))
    };
    (field(11), field(12))
}
