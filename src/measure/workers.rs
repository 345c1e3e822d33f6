//! Threads that take work off the threads that read streams: a fixed number of named threads,
//! started once, that each take the next job from one queue and do it. `checker_pool.rs`
//! (structured answers' checks) and `count_pool.rs` (answers' token counts) are two such
//! pools; each keeps its own jobs' meaning, this file only the threads and the queue.
//!
//! Knows nothing of what a job is. A job that panics loses only itself: the thread lives on
//! (whoever waits for the job's answer sees its reply channel dropped).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// The queue of a pool of worker threads.
pub struct Workers<J> {
    tx: Mutex<Sender<J>>,
}

/// How a pool's threads share the CPU with the threads that read streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// As the rest of the process.
    Normal,
    /// The lowest (`nice` 19): when they share a core with a thread that reads streams, that
    /// thread runs first whenever it has work, and the pool takes what is left.
    Low,
}

impl<J: Send + 'static> Workers<J> {
    /// Starts `threads` threads named `name-0`, `name-1`, ..., each doing `work` on the jobs it
    /// takes; `None` when no thread could be started (the caller then does the work itself).
    pub fn start(name: &str, threads: usize, priority: Priority, work: fn(J)) -> Option<Self> {
        let (tx, rx) = mpsc::channel::<J>();
        let rx = Arc::new(Mutex::new(rx));
        let started = (0..threads)
            .filter(|i| {
                let rx = Arc::clone(&rx);
                (std::thread::Builder::new().name(format!("{name}-{i}")))
                    .spawn(move || {
                        if priority == Priority::Low {
                            lower_priority();
                        }
                        take_jobs(&rx, work);
                    })
                    .is_ok()
            })
            .count();
        (started > 0).then(|| Workers { tx: Mutex::new(tx) })
    }

    /// Queues `job`; gives it back when the pool's threads are gone.
    pub fn send(&self, job: J) -> Result<(), J> {
        let sent = match self.tx.lock() {
            Ok(tx) => tx.send(job),
            Err(poisoned) => poisoned.into_inner().send(job),
        };
        sent.map_err(|mpsc::SendError(job)| job)
    }
}

/// A worker thread: takes jobs until the process ends.
fn take_jobs<J>(rx: &Mutex<Receiver<J>>, work: fn(J)) {
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        let Ok(job) = job else {
            return;
        };
        let _ = catch_unwind(AssertUnwindSafe(|| work(job)));
    }
}

/// Gives the calling thread the lowest scheduling priority (on Linux `nice` is per thread);
/// where the system refuses, the thread keeps its priority and works all the same.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid` has no preconditions; `setpriority` on this thread's own id changes
    // only its nice value and reports failure by its return value, which is not needed.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
}
