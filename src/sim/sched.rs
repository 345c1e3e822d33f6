//! The exact-mode scheduler: threads that serve every exact-mode stream, one per worker of
//! the server's runtime (`servebench sim --threads N`: N), each stream on one of them.
//!
//! Driving each stream from its own task costs, per chunk, a tokio timer entry, a hand-over
//! to the precise-timer thread (`precise.rs`) and back, a task wake-up and hyper's body
//! machinery. Here each thread keeps its waiting streams in a heap by deadline, sleeps (on a
//! condition variable: futex precision, no tokio tick) until the earliest one, and at each
//! wake-up serves every stream that is due: it steps the stream's [`Drive`] machine, frames
//! what the machine appended (HTTP/1.1 chunked coding) and writes it to the socket with one
//! non-blocking `write`. Per chunk that is a heap pop and push, the framing and one system
//! call. Nearly all of that system call's cost is the kernel's TCP send (and, on loopback, the
//! receiver's processing charged to the sender: docs/performance.md), so one thread tops out
//! near 110,000-160,000 on-time chunks per second (measured on a 2-core VM) whatever it does;
//! threads of their own let a server on several cores send as many more (a stream handed
//! over goes to the next thread in turn).
//!
//! The connection's task (`http1.rs`) stays in charge of the connection: it writes the
//! response head, hands a [`Ticket`] over with [`Scheduler::serve`] and gets it back with an
//! [`Outcome`] when the stream ends, is cut, cannot write without blocking (the task then
//! finishes the write asynchronously and hands the ticket over again; the stream's schedule is
//! kept, and chunks that became due meanwhile go out late and are counted late) or the
//! client went away.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::state::Shared;
use super::stream::{Drive, Step, Wait};

/// Longest sleep between checks for shutdown.
const MAX_SLEEP: Duration = Duration::from_millis(20);

/// How a stream came back from the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The stream is complete, terminating chunk included.
    End,
    /// Cut on purpose (a simulated disconnect): close the connection.
    Cut,
    /// The socket would block: write [`Ticket::pending`], then serve the ticket again.
    Blocked,
    /// Writing failed (the client went away): close the connection.
    Closed,
}

/// One streamed response handed to the scheduler.
pub(crate) struct Ticket {
    machine: Box<dyn Drive>,
    sock: Arc<TcpStream>,
    /// HTTP/1.1 chunked coding; otherwise the body is delimited by closing (HTTP/1.0).
    chunked: bool,
    /// Framed bytes not written yet because the socket would block.
    pub(crate) pending: Vec<u8>,
    /// The terminating zero-length chunk was framed.
    terminated: bool,
    reply: Option<oneshot::Sender<(Ticket, Outcome)>>,
}

impl Ticket {
    pub(crate) fn new(machine: Box<dyn Drive>, sock: Arc<TcpStream>, chunked: bool) -> Self {
        Self {
            machine,
            sock,
            chunked,
            pending: Vec::new(),
            terminated: false,
            reply: None,
        }
    }

    fn give_back(mut self, outcome: Outcome) {
        if let Some(reply) = self.reply.take() {
            // The connection's task may be gone (server shutting down): nothing to tell.
            let _ = reply.send((self, outcome));
        }
    }
}

struct Queue {
    arrived: Vec<Ticket>,
    /// The thread has ended; tickets are refused.
    closed: bool,
}

struct Inner {
    queue: Mutex<Queue>,
    cv: Condvar,
}

/// Handle to a server's scheduler threads. They end when the server shuts down.
pub(crate) struct Scheduler {
    threads: Vec<Arc<Inner>>,
    /// Which thread the next stream handed over goes to.
    next: AtomicUsize,
}

impl Scheduler {
    /// Starts `threads` scheduler threads (at least one).
    pub(crate) fn start(shared: Arc<Shared>, threads: usize) -> io::Result<Self> {
        let mut all = Vec::new();
        for i in 0..threads.max(1) {
            let inner = Arc::new(Inner {
                queue: Mutex::new(Queue {
                    arrived: Vec::new(),
                    closed: false,
                }),
                cv: Condvar::new(),
            });
            let (thread_inner, shared) = (inner.clone(), shared.clone());
            std::thread::Builder::new()
                .name(if i == 0 {
                    "sim-streams".into()
                } else {
                    format!("sim-streams-{i}")
                })
                .spawn(move || {
                    Loop::new().run(&thread_inner, &shared);
                    if let Ok(mut q) = thread_inner.queue.lock() {
                        q.closed = true;
                        // Dropping the tickets drops their reply senders: their tasks see
                        // `None`.
                        q.arrived.clear();
                    }
                })?;
            all.push(inner);
        }
        Ok(Self {
            threads: all,
            next: AtomicUsize::new(0),
        })
    }

    /// Runs `ticket` on a scheduler thread until it ends, is cut or would block; `None` if
    /// the scheduler has stopped (server shutdown).
    pub(crate) async fn serve(&self, mut ticket: Ticket) -> Option<(Ticket, Outcome)> {
        let (tx, rx) = oneshot::channel();
        ticket.reply = Some(tx);
        let inner = &self.threads[self.next.fetch_add(1, Ordering::Relaxed) % self.threads.len()];
        {
            let mut q = inner.queue.lock().ok()?;
            if q.closed {
                return None;
            }
            q.arrived.push(ticket);
        }
        inner.cv.notify_one();
        rx.await.ok()
    }

    /// Wakes the threads (after shutdown was triggered, so they end promptly).
    pub(crate) fn wake(&self) {
        for inner in &self.threads {
            inner.cv.notify_one();
        }
    }
}

/// The thread's state: waiting tickets by deadline, and reused buffers.
struct Loop {
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
    slots: Vec<Option<Ticket>>,
    free: Vec<usize>,
    arrived: Vec<Ticket>,
    data: Vec<u8>,
    wire: Vec<u8>,
}

impl Loop {
    fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            arrived: Vec::new(),
            data: Vec::with_capacity(16 << 10),
            wire: Vec::with_capacity(16 << 10),
        }
    }

    fn run(&mut self, inner: &Inner, shared: &Shared) {
        loop {
            {
                let Ok(mut q) = inner.queue.lock() else {
                    return;
                };
                while q.arrived.is_empty() && !shared.shutdown.is_triggered() {
                    let now = Instant::now();
                    let wait = match self.heap.peek() {
                        Some(Reverse((at, _))) if *at <= now => break,
                        Some(Reverse((at, _))) => (*at - now).min(MAX_SLEEP),
                        None => MAX_SLEEP,
                    };
                    q = match inner.cv.wait_timeout(q, wait) {
                        Ok((q, _)) => q,
                        Err(_) => return,
                    };
                }
                std::mem::swap(&mut q.arrived, &mut self.arrived);
            }
            if shared.shutdown.is_triggered() {
                // Dropping the tickets closes their connections.
                return;
            }
            let mut arrived = std::mem::take(&mut self.arrived);
            for ticket in arrived.drain(..) {
                self.serve(ticket);
            }
            self.arrived = arrived;
            while let Some(&Reverse((at, slot))) = self.heap.peek() {
                if at > Instant::now() {
                    break;
                }
                self.heap.pop();
                if let Some(ticket) = self.slots[slot].take() {
                    self.free.push(slot);
                    self.serve(ticket);
                }
            }
        }
    }

    /// Steps `ticket` at the current instant, writes what it produced, and either keeps it
    /// waiting for its next deadline or gives it back.
    fn serve(&mut self, mut ticket: Ticket) {
        let now = Instant::now();
        self.data.clear();
        let step = loop {
            match ticket.machine.step(now, &mut self.data) {
                Step::Sent => continue,
                step => break step,
            }
        };
        self.wire.clear();
        if ticket.chunked {
            if !self.data.is_empty() {
                // Writing to a Vec cannot fail.
                let _ = write!(self.wire, "{:X}\r\n", self.data.len());
                self.wire.extend_from_slice(&self.data);
                self.wire.extend_from_slice(b"\r\n");
            }
            if step == Step::End && !ticket.terminated {
                self.wire.extend_from_slice(b"0\r\n\r\n");
                ticket.terminated = true;
            }
        } else {
            self.wire.extend_from_slice(&self.data);
        }
        match write_now(&ticket.sock, &self.wire) {
            Ok(n) if n == self.wire.len() => {}
            Ok(n) => {
                ticket.pending.clear();
                ticket.pending.extend_from_slice(&self.wire[n..]);
                return ticket.give_back(Outcome::Blocked);
            }
            Err(_) => return ticket.give_back(Outcome::Closed),
        }
        match step {
            Step::Wait(Wait::Until(at)) => {
                let slot = match self.free.pop() {
                    Some(slot) => slot,
                    None => {
                        self.slots.push(None);
                        self.slots.len() - 1
                    }
                };
                self.slots[slot] = Some(ticket);
                self.heap.push(Reverse((at, slot)));
            }
            // Exact-mode machines never wait for tokens.
            Step::Wait(Wait::Tokens) => ticket.give_back(Outcome::Closed),
            Step::Cut => ticket.give_back(Outcome::Cut),
            Step::End | Step::Sent => ticket.give_back(Outcome::End),
        }
    }
}

/// Writes as much of `buf` as the socket takes without blocking.
fn write_now(sock: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match sock.try_write(&buf[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
