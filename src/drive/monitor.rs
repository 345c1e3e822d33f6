//! The client-side monitor of a run: samples the runtime's scheduling delay and reads the
//! process's CPU time, the inputs of [`crate::results::validity::Validity::judge`].

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
pub struct Monitor {
    lags_ms: Arc<Mutex<Vec<f64>>>,
    task: tokio::task::JoinHandle<()>,
    cpu_start: f64,
}

impl Monitor {
    /// How often the lag is sampled.
    pub const INTERVAL: Duration = Duration::from_millis(10);

    pub fn start() -> Monitor {
        let lags_ms = Arc::new(Mutex::new(Vec::new()));
        let sink = lags_ms.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Self::INTERVAL).await;
                let t = std::time::Instant::now();
                tokio::task::yield_now().await;
                let lag = t.elapsed().as_secs_f64() * 1e3;
                if let Ok(mut v) = sink.lock() {
                    v.push(lag);
                }
            }
        });
        Monitor {
            lags_ms,
            task,
            cpu_start: process_cpu_s(),
        }
    }

    /// Stops sampling; returns the lag samples (ms) and the CPU seconds used since `start`.
    pub fn stop(self) -> (Vec<f64>, f64) {
        self.task.abort();
        let lags = self.lags_ms.lock().map(|v| v.clone()).unwrap_or_default();
        (lags, (process_cpu_s() - self.cpu_start).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
