//! The client-side monitor of a run: samples the runtime's scheduling delay (a stall
//! included, also one the run ends in) and reads the process's CPU time, the inputs of
//! [`crate::results::validity::Validity::judge`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Process CPU time (user + system), seconds, from `/proc/self/stat`; 0 where unavailable.
pub fn process_cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0 // USER_HZ is 100 on Linux
}

/// Samples the runtime's scheduling delay until stopped.
///
/// Every [`Monitor::INTERVAL`] a task on the runtime wakes and yields once; its sample is how
/// late it ran: the time since its previous sample, less the interval. A thread that blocks
/// (a long check of an answer, any work that does not yield) holds the task back with
/// everything else, so the tick after a stall measures it whole; and a stall the run ends in,
/// after which the task never runs again, is measured when the monitor is stopped: the time
/// since its last sample, less the interval.
pub struct Monitor {
    shared: Arc<Mutex<Samples>>,
    task: tokio::task::JoinHandle<()>,
    cpu_start: f64,
}

/// The lag samples (ms) and when the latest was taken.
struct Samples {
    lags_ms: Vec<f64>,
    last: std::time::Instant,
}

/// How late a task that meant to run `INTERVAL` after `since` ran at `now`, ms.
fn late_ms(since: std::time::Instant, now: std::time::Instant) -> f64 {
    now.saturating_duration_since(since)
        .saturating_sub(Monitor::INTERVAL)
        .as_secs_f64()
        * 1e3
}

impl Monitor {
    /// How often the lag is sampled.
    pub const INTERVAL: Duration = Duration::from_millis(10);

    pub fn start() -> Monitor {
        let shared = Arc::new(Mutex::new(Samples {
            lags_ms: Vec::new(),
            last: std::time::Instant::now(),
        }));
        let sink = shared.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Self::INTERVAL).await;
                tokio::task::yield_now().await;
                let now = std::time::Instant::now();
                if let Ok(mut s) = sink.lock() {
                    let lag = late_ms(s.last, now);
                    s.lags_ms.push(lag);
                    s.last = now;
                }
            }
        });
        Monitor {
            shared,
            task,
            cpu_start: process_cpu_s(),
        }
    }

    /// Stops sampling; returns the lag samples (ms), the last one how late the next sample is
    /// by now (a stall at the end of the run), and the CPU seconds used since `start`.
    pub fn stop(self) -> (Vec<f64>, f64) {
        self.task.abort();
        let now = std::time::Instant::now();
        let lags = self.shared.lock().map_or_else(
            |_| Vec::new(),
            |s| {
                let mut lags = s.lags_ms.clone();
                lags.push(late_ms(s.last, now));
                lags
            },
        );
        (lags, (process_cpu_s() - self.cpu_start).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lags a monitor saw on a one-thread runtime whose only thread was blocked for
    /// 300 ms, 40 ms after the monitor started; `after`: how long the run went on after it.
    fn lags_around_a_stall(after: Option<Duration>) -> Vec<f64> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let m = Monitor::start();
            tokio::time::sleep(Duration::from_millis(40)).await;
            std::thread::sleep(Duration::from_millis(300));
            if let Some(after) = after {
                tokio::time::sleep(after).await;
            }
            m.stop().0
        })
    }

    fn assert_stall_seen(lags: &[f64]) {
        let longest = lags.iter().copied().fold(0.0, f64::max);
        assert!(longest >= 250.0, "longest lag {longest} ms of {lags:?}");
    }

    /// The runtime's only thread blocked (a check of an answer, a tokenizer on the measuring
    /// thread) for 300 ms in the middle of a run: the monitor's tick after the stall sees it.
    #[test]
    fn a_stall_in_the_middle_of_a_run_is_seen() {
        assert_stall_seen(&lags_around_a_stall(Some(Duration::from_millis(60))));
    }

    /// The thread blocked for 300 ms at the very end of the run, so the monitor never ticks
    /// again before it is stopped: stopping it measures the time since its last tick.
    #[test]
    fn a_stall_at_the_end_of_a_run_is_seen() {
        assert_stall_seen(&lags_around_a_stall(None));
    }

    #[test]
    fn cpu_time_is_read() {
        let before = process_cpu_s();
        let mut x = 0u64;
        for i in 0..30_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1);
        assert!(process_cpu_s() >= before);
    }
}
