//! The figures of the server's own account of its requests as views show and `compare`
//! judges them ([`AccountFigure`]; docs/metrics.md, "The server's account"): the share of
//! successful requests whose answer carried an account, the mean and p99 of the client's and
//! network's part of TTFT, of the server's queue and of its prefill, and the disagreements
//! between an account and the client's view. Each with its name in views, its unit, which way
//! is better and its label for people. Pure values.

use super::unit::{Better, Unit};

/// One figure of the server's account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AccountFigure {
    /// Requests with a believed account, of the successful ones (0 to 1).
    Coverage,
    MeanClientPart,
    P99ClientPart,
    MeanQueue,
    P99Queue,
    MeanPrefill,
    P99Prefill,
    /// Disagreements counted, every kind summed (a request with two kinds counts twice).
    Disagreements,
}

impl AccountFigure {
    pub const ALL: [AccountFigure; 8] = [
        AccountFigure::Coverage,
        AccountFigure::MeanClientPart,
        AccountFigure::P99ClientPart,
        AccountFigure::MeanQueue,
        AccountFigure::P99Queue,
        AccountFigure::MeanPrefill,
        AccountFigure::P99Prefill,
        AccountFigure::Disagreements,
    ];

    /// Its name in views, `compare --metrics` and `--fail-if-worse`.
    pub fn name(self) -> &'static str {
        match self {
            AccountFigure::Coverage => "server_account_coverage",
            AccountFigure::MeanClientPart => "mean_account_client_part_ms",
            AccountFigure::P99ClientPart => "p99_account_client_part_ms",
            AccountFigure::MeanQueue => "mean_account_queue_ms",
            AccountFigure::P99Queue => "p99_account_queue_ms",
            AccountFigure::MeanPrefill => "mean_account_prefill_ms",
            AccountFigure::P99Prefill => "p99_account_prefill_ms",
            AccountFigure::Disagreements => "server_account_disagreements",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            AccountFigure::Coverage => Unit::Fraction,
            AccountFigure::Disagreements => Unit::Requests,
            _ => Unit::Milliseconds,
        }
    }

    /// Times and disagreements are better lower; coverage is how the server was set up
    /// (whether it was asked to tell), not how well it served, so it has no direction.
    pub fn better(self) -> Option<Better> {
        match self {
            AccountFigure::Coverage => None,
            _ => Some(Better::Lower),
        }
    }

    /// Its name for people, without its unit.
    pub fn label(self) -> &'static str {
        match self {
            AccountFigure::Coverage => "Server's account: requests covered",
            AccountFigure::MeanClientPart => "Server's account: mean client+network part of TTFT",
            AccountFigure::P99ClientPart => "Server's account: P99 client+network part of TTFT",
            AccountFigure::MeanQueue => "Server's account: mean server queue",
            AccountFigure::P99Queue => "Server's account: P99 server queue",
            AccountFigure::MeanPrefill => "Server's account: mean server prefill",
            AccountFigure::P99Prefill => "Server's account: P99 server prefill",
            AccountFigure::Disagreements => "Server's account: disagreements",
        }
    }

    /// The figure named `s`.
    pub fn named(s: &str) -> Option<AccountFigure> {
        AccountFigure::ALL.into_iter().find(|f| f.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::figure::FigureKey;

    /// Names are distinct, read back as account figures (not as a latency statistic), and
    /// carry their unit and direction through `FigureKey`.
    #[test]
    fn names_read_back_with_unit_and_direction() {
        for f in AccountFigure::ALL {
            assert_eq!(AccountFigure::named(f.name()), Some(f));
            let k = FigureKey::named(f.name());
            assert_eq!(k, FigureKey::Account(f));
            assert_eq!(k.unit(), Some(f.unit()));
            assert_eq!(k.name(), f.name());
        }
        let q = FigureKey::named("p99_account_queue_ms");
        assert_eq!(q.better(), Some(Better::Lower));
        assert_eq!(
            q.label_with_unit(),
            "Server's account: P99 server queue (ms)"
        );
        assert_eq!(FigureKey::named("server_account_coverage").better(), None);
    }
}
