//! `--client-threads` against the machine it runs on: a count no machine of these cores can
//! use (`1000` on 2 cores: a typo, or a count written for another machine) is refused in one
//! line; a count above the cores runs, with one warning line (threads beyond the cores share
//! them: each adds wake-ups and its own runtime, and reads no more events). The count's own
//! bounds (1 to `config::threads::MAX_CLIENT_THREADS`) are its parser's.

use super::error::PlanError;
use crate::config::threads::ClientThreads;

/// Most client threads per core the machine has: past it a count is refused.
pub const MAX_THREADS_PER_CORE: u64 = 8;

/// `threads` on a machine of `cores` cores: refused past [`MAX_THREADS_PER_CORE`] per core.
pub fn check(threads: ClientThreads, cores: u64) -> Result<(), PlanError> {
    let most = cores.max(1) * MAX_THREADS_PER_CORE;
    match threads {
        ClientThreads::Count(n) if u64::from(n) > most => Err(PlanError::ClientThreads {
            asked: n,
            cores,
            per_core: MAX_THREADS_PER_CORE,
            most,
        }),
        _ => Ok(()),
    }
}

/// The warning line for `threads` above the machine's `cores`, if they are.
pub fn warning(threads: ClientThreads, cores: u64) -> Option<String> {
    match threads {
        ClientThreads::Count(n) if u64::from(n) > cores.max(1) => Some(format!(
            "servebench: warning: --client-threads {n} is more than this machine's {cores} core(s): the threads share them, and more threads than cores read no more events on time (auto picks at most the cores)"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1000 threads on 2 cores are refused naming both; 3 run with a warning; the cores'
    /// count and `auto` run without a word.
    #[test]
    fn thread_counts_past_the_cores_are_warned_and_absurd_ones_refused() {
        let e = check(ClientThreads::Count(1000), 2)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--client-threads 1000") && e.contains("2 core") && e.contains("16"),
            "{e}"
        );
        assert!(check(ClientThreads::Count(16), 2).is_ok());
        assert!(check(ClientThreads::Count(1000), 128).is_ok());
        let w = warning(ClientThreads::Count(3), 2).expect("a warning");
        assert!(
            w.contains("--client-threads 3") && w.contains("2 core"),
            "{w}"
        );
        assert_eq!(w.lines().count(), 1);
        assert_eq!(warning(ClientThreads::Count(2), 2), None);
        assert_eq!(warning(ClientThreads::Auto, 2), None);
        assert!(check(ClientThreads::Auto, 1).is_ok());
    }
}
