//! An HTTP relay on 127.0.0.1 (port 0) that passes requests to a real server and its streamed
//! answers back event by event, changing only how each stream ends: [`Ending::DropDone`] leaves
//! out the `data: [DONE]` event and then ends the body cleanly (the last chunk of a chunked
//! body), as HF's `transformers serve` does; [`Ending::CutAtFinish`] ends the body cleanly
//! just before the first event that carries a `finish_reason`, as a server that dies
//! mid-answer behind a proxy would. Every other byte, and every event's timing, is the real
//! server's.
//!
//! One request per connection (it answers `Connection: close`), one thread per connection;
//! every read has a 60 s timeout and a request head is at most 64 KiB. Counts what it dropped,
//! so a test can tell that the real server did send what was removed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const READ_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_HEAD: usize = 64 * 1024;

/// How the relay ends each streamed body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Leave out `data: [DONE]`, pass everything else, end the body cleanly.
    DropDone,
    /// End the body cleanly before the first event with a non-null `finish_reason`.
    CutAtFinish,
}

/// What the relay has done so far.
#[derive(Debug, Default)]
pub struct Counts {
    /// Requests relayed.
    pub requests: AtomicU64,
    /// Answers that were event streams (`text/event-stream`).
    pub streams: AtomicU64,
    /// Events passed on to the client.
    pub events_passed: AtomicU64,
    /// `data: [DONE]` events left out.
    pub done_dropped: AtomicU64,
    /// Bodies ended before their finishing event.
    pub cut: AtomicU64,
}

/// A running relay; stops accepting (and joins its accept thread) on drop.
pub struct Relay {
    base_url: String,
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Relay {
    /// Listens on 127.0.0.1:0 and relays to `upstream` (`http://HOST:PORT`).
    pub fn start(upstream: &str, ending: Ending) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay on 127.0.0.1:0");
        let base_url = format!("http://{}", listener.local_addr().expect("relay address"));
        let upstream = upstream
            .strip_prefix("http://")
            .unwrap_or(upstream)
            .trim_end_matches('/')
            .to_string();
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (counts, stop) = (counts.clone(), stop.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = conn else { continue };
                    let (upstream, counts) = (upstream.clone(), counts.clone());
                    std::thread::spawn(move || {
                        if let Err(e) = relay_one(client, &upstream, ending, &counts) {
                            eprintln!("relay: {e}");
                        }
                    });
                }
            })
        };
        Relay {
            base_url,
            counts,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn counts(&self) -> &Counts {
        &self.counts
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.base_url.trim_start_matches("http://"));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn invalid(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

/// Reads an HTTP head (up to and including the blank line) as lines without their CRLF.
fn read_head(r: &mut impl BufRead) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line)?;
        total += n;
        if n == 0 {
            return Err(invalid("connection closed inside an HTTP head".into()));
        }
        if total > MAX_HEAD {
            return Err(invalid(format!("HTTP head over {MAX_HEAD} bytes")));
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            return Ok(lines);
        }
        lines.push(line);
    }
}

fn header<'a>(lines: &'a [String], name: &str) -> Option<&'a str> {
    lines[1..].iter().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn relay_one(
    client: TcpStream,
    upstream: &str,
    ending: Ending,
    counts: &Counts,
) -> std::io::Result<()> {
    client.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut from_client = BufReader::new(client.try_clone()?);
    let head = read_head(&mut from_client)?;
    let length: usize = header(&head, "content-length")
        .map(|v| {
            v.parse()
                .map_err(|_| invalid(format!("Content-Length {v:?}")))
        })
        .transpose()?
        .unwrap_or(0);
    let mut body = vec![0; length];
    from_client.read_exact(&mut body)?;
    counts.requests.fetch_add(1, Ordering::SeqCst);

    // The same request, on a connection of its own that the server closes after answering.
    let server = TcpStream::connect(upstream)?;
    server.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut request = format!("{}\r\nHost: {upstream}\r\nConnection: close\r\n", head[0]);
    for line in &head[1..] {
        let name = line.split(':').next().unwrap_or_default().trim();
        if !name.eq_ignore_ascii_case("host") && !name.eq_ignore_ascii_case("connection") {
            request.push_str(line);
            request.push_str("\r\n");
        }
    }
    request.push_str("\r\n");
    let mut to_server = server.try_clone()?;
    to_server.write_all(request.as_bytes())?;
    to_server.write_all(&body)?;

    let mut from_server = BufReader::new(server);
    let answer = read_head(&mut from_server)?;
    let chunked =
        header(&answer, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let sse = header(&answer, "content-type").is_some_and(|v| v.starts_with("text/event-stream"));
    if sse {
        counts.streams.fetch_add(1, Ordering::SeqCst);
    }
    let mut out = format!("{}\r\n", answer[0]);
    for line in &answer[1..] {
        let name = line.split(':').next().unwrap_or_default().trim();
        if !["transfer-encoding", "content-length", "connection"]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
        {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    let mut to_client = client;
    to_client.write_all(out.as_bytes())?;

    let mut pending: Vec<u8> = Vec::new();
    let mut body = BodyReader {
        r: from_server,
        chunked,
        left: header(&answer, "content-length").and_then(|v| v.parse().ok()),
        done: false,
    };
    'read: while let Some(bytes) = body.next_bytes()? {
        if !sse {
            write_chunk(&mut to_client, &bytes)?;
            continue;
        }
        pending.extend_from_slice(&bytes);
        // Pass on each complete event (ended by a blank line) as soon as it is whole.
        while let Some(end) = find_event_end(&pending) {
            let event: Vec<u8> = pending.drain(..end).collect();
            let text = String::from_utf8_lossy(&event);
            let data: String = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            if ending == Ending::DropDone && data == "[DONE]" {
                counts.done_dropped.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            if ending == Ending::CutAtFinish && finishes(&data) {
                counts.cut.fetch_add(1, Ordering::SeqCst);
                break 'read;
            }
            counts.events_passed.fetch_add(1, Ordering::SeqCst);
            write_chunk(&mut to_client, &event)?;
        }
    }
    if !pending.is_empty() && ending == Ending::DropDone {
        write_chunk(&mut to_client, &pending)?;
    }
    // The clean end of a chunked body: the last chunk, then the connection closes.
    to_client.write_all(b"0\r\n\r\n")?;
    to_client.flush()?;
    let _ = to_client.shutdown(Shutdown::Both);
    Ok(())
}

/// The end (exclusive) of the first complete SSE event in `buf`: after its blank line.
fn find_event_end(buf: &[u8]) -> Option<usize> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether an event's data is a JSON chunk whose first choice has a `finish_reason`.
fn finishes(data: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(data).is_ok_and(|v| {
        v["choices"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| !c["finish_reason"].is_null()))
    })
}

fn write_chunk(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    w.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
    w.write_all(bytes)?;
    w.write_all(b"\r\n")?;
    w.flush()
}

/// The server's body, whatever its framing, as it arrives.
struct BodyReader {
    r: BufReader<TcpStream>,
    chunked: bool,
    /// Bytes left of a `Content-Length` body; `None` when it runs to the close.
    left: Option<usize>,
    done: bool,
}

impl BodyReader {
    fn next_bytes(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        if self.chunked {
            let mut size_line = String::new();
            if self.r.read_line(&mut size_line)? == 0 {
                return Err(invalid("server closed inside a chunked body".into()));
            }
            let hex = size_line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(hex, 16)
                .map_err(|_| invalid(format!("chunk size line {size_line:?}")))?;
            if size == 0 {
                self.done = true;
                return Ok(None);
            }
            let mut data = vec![0; size + 2];
            self.r.read_exact(&mut data)?;
            data.truncate(size);
            return Ok(Some(data));
        }
        let want = self.left.map_or(8192, |l| l.min(8192));
        if want == 0 {
            self.done = true;
            return Ok(None);
        }
        let mut data = vec![0; want];
        let n = self.r.read(&mut data)?;
        if n == 0 {
            self.done = true;
            return Ok(None);
        }
        data.truncate(n);
        if let Some(l) = self.left.as_mut() {
            *l -= n;
        }
        Ok(Some(data))
    }
}
