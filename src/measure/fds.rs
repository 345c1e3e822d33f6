//! The process's open-file limit. Every stream is a socket (two with the built-in simulator,
//! which serves from the same process), so the default soft limit of many systems (1,024)
//! caps a run at about a thousand streams. [`raise`] lifts the soft limit to the hard one, as
//! far as the system lets an unprivileged process go, before a run opens its streams.

/// The open-file limit after [`raise`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFiles {
    /// The limit in force: what a run may open.
    pub soft: u64,
    /// The most an unprivileged process may raise it to.
    pub hard: u64,
    /// The soft limit before `raise` (equal to `soft` when it could not be raised).
    pub was: u64,
}

/// Raises the soft open-file limit to the hard one; `None` where the limit cannot be read.
#[cfg(unix)]
// `rlim_t` is `u64` on Linux and macOS, not on every unix: the conversions stay.
#[allow(clippy::useless_conversion)]
pub fn raise() -> Option<OpenFiles> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for the call to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let was = lim.rlim_cur;
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `want` is a valid rlimit; raising the soft limit up to the hard one is
        // always permitted. On failure the old limit stays in force.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    Some(OpenFiles {
        soft: u64::from(lim.rlim_cur),
        hard: u64::from(lim.rlim_max),
        was: u64::from(was),
    })
}

#[cfg(not(unix))]
pub fn raise() -> Option<OpenFiles> {
    None
}

/// Files a run needs besides its streams' sockets: the records, the result, the tokenizer,
/// the runtime's own descriptors, scrape connections.
pub const SPARE: u64 = 64;

/// Open files a run of `streams` concurrent streams needs: a socket each, two with the
/// built-in simulator in the same process, and [`SPARE`].
pub fn needed(streams: u64, simulated: bool) -> u64 {
    streams
        .saturating_mul(if simulated { 2 } else { 1 })
        .saturating_add(SPARE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The soft limit ends at the hard one (or where it was, if the system
    /// refused), never lower, and the count of files a run needs counts the simulator's side.
    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let Some(f) = raise() else {
            return;
        };
        assert!(f.soft >= f.was && f.soft <= f.hard, "{f:?}");
        assert_eq!(
            raise().map(|g| g.soft),
            Some(f.soft),
            "raising again changes nothing"
        );
        assert_eq!(needed(1000, true), 2064);
        assert_eq!(needed(1000, false), 1064);
        assert_eq!(needed(u64::MAX, true), u64::MAX);
    }
}
