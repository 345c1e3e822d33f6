//! Fault injection for the simulated server.
//!
//! Owns [`FaultConfig`] (the configured fault rates), the per-request fault draw and the exact
//! bytes of the injected errors. The draw is a pure function of (seed, request number), so a
//! run with a fixed seed sees the same fault sequence every time. How a fault plays out inside
//! a stream (where it is cut, stalled or corrupted) lives in `stream/machine.rs`.
//!
//! To add a fault kind: add a rate to [`FaultConfig`], check it in [`FaultConfig::validate`],
//! add a [`Fault`] variant, place it in the cumulative order in [`pick`], give it a counter in
//! `SimStats`, and handle it in `stream/machine.rs` (streams) and `stream/body.rs`'s
//! `whole_response` (non-streamed answers).

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::error::SimConfigError;
use super::text::mix_seed;

/// Fractions of requests that get each simulated fault. The rates are cumulative in the order
/// error, rate limit, disconnect, stall, malformed; their sum must not exceed 1.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Fraction of requests answered HTTP 500 with a JSON error body, before streaming.
    pub error_rate: f64,
    /// Fraction of requests answered HTTP 429 (with `retry-after: 1`).
    pub rate_limit_rate: f64,
    /// Fraction of streams cut (connection dropped, no terminator) after about half the chunks.
    pub disconnect_rate: f64,
    /// Fraction of streams that stop after about half the chunks, hang for [`Self::stall`],
    /// then carry on to the end.
    pub stall_rate: f64,
    /// Fraction of streams that get one event of broken JSON in the middle, then continue.
    pub malformed_rate: f64,
    /// How long a stalled stream hangs. Default: one hour.
    pub stall: Duration,
}

impl Default for FaultConfig {
    fn default() -> Self {
        Self {
            error_rate: 0.0,
            rate_limit_rate: 0.0,
            disconnect_rate: 0.0,
            stall_rate: 0.0,
            malformed_rate: 0.0,
            stall: Duration::from_secs(3600),
        }
    }
}

impl FaultConfig {
    fn rates(&self) -> [(&'static str, f64); 5] {
        [
            ("error_rate", self.error_rate),
            ("rate_limit_rate", self.rate_limit_rate),
            ("disconnect_rate", self.disconnect_rate),
            ("stall_rate", self.stall_rate),
            ("malformed_rate", self.malformed_rate),
        ]
    }

    /// Checks every rate is within `[0, 1]` and that they sum to at most 1.
    pub fn validate(&self) -> Result<(), SimConfigError> {
        let mut sum = 0.0;
        for (name, rate) in self.rates() {
            if !(0.0..=1.0).contains(&rate) {
                let rule = format!("must be between 0 and 1, got {rate}");
                return Err(SimConfigError::setting(format!("faults.{name}"), rule));
            }
            sum += rate;
        }
        if sum > 1.0 + 1e-9 {
            return Err(SimConfigError::setting(
                "faults: the sum of error_rate, rate_limit_rate, disconnect_rate, stall_rate and malformed_rate",
                format!("must be at most 1, got {sum}"),
            ));
        }
        Ok(())
    }

    fn any(&self) -> bool {
        self.rates().iter().any(|(_, r)| *r > 0.0)
    }
}

/// The fault drawn for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    Error500,
    RateLimit,
    Disconnect,
    Stall,
    Malformed,
}

impl Fault {
    /// Whether this fault happens inside the body (after the headers were sent).
    pub(crate) fn in_stream(self) -> bool {
        matches!(self, Fault::Disconnect | Fault::Stall | Fault::Malformed)
    }
}

/// Draws the fault of request number `request` (0-based, in arrival order).
pub(crate) fn pick(config: &FaultConfig, seed: u64, request: u64) -> Fault {
    if !config.any() {
        return Fault::None;
    }
    let mut rng = StdRng::seed_from_u64(mix_seed(seed, request));
    let u: f64 = rng.random();
    let order = [
        (config.error_rate, Fault::Error500),
        (config.rate_limit_rate, Fault::RateLimit),
        (config.disconnect_rate, Fault::Disconnect),
        (config.stall_rate, Fault::Stall),
        (config.malformed_rate, Fault::Malformed),
    ];
    let mut cumulative = 0.0;
    for (rate, fault) in order {
        // NaN rates compare false and so never fire.
        if rate > 0.0 {
            cumulative += rate;
            if u < cumulative {
                return fault;
            }
        }
    }
    Fault::None
}

/// Body of a simulated HTTP 500.
pub(crate) const ERROR_500_BODY: &str =
    r#"{"error":{"message":"simulated internal error","type":"server_error","code":500}}"#;

/// Body of a simulated HTTP 429.
pub(crate) const ERROR_429_BODY: &str =
    r#"{"error":{"message":"simulated rate limit","type":"rate_limit_error","code":429}}"#;

/// The broken event injected by the malformed fault.
pub(crate) const MALFORMED_EVENT: &[u8] = b"data: {\"choices\": [tru\n\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rates_means_no_faults() {
        let c = FaultConfig::default();
        assert!((0..100).all(|n| pick(&c, 1, n) == Fault::None));
    }

    #[test]
    fn full_rate_always_fires() {
        let c = FaultConfig {
            stall_rate: 1.0,
            ..Default::default()
        };
        assert!((0..100).all(|n| pick(&c, 1, n) == Fault::Stall));
    }

    #[test]
    fn rates_roughly_respected_and_reproducible() {
        let c = FaultConfig {
            error_rate: 0.1,
            disconnect_rate: 0.2,
            ..Default::default()
        };
        let a: Vec<_> = (0..10_000).map(|n| pick(&c, 42, n)).collect();
        let b: Vec<_> = (0..10_000).map(|n| pick(&c, 42, n)).collect();
        assert_eq!(a, b);
        let errors = a.iter().filter(|f| **f == Fault::Error500).count();
        let cuts = a.iter().filter(|f| **f == Fault::Disconnect).count();
        assert!((800..1200).contains(&errors), "{errors}");
        assert!((1700..2300).contains(&cuts), "{cuts}");
    }

    #[test]
    fn validate_names_the_field() {
        let c = FaultConfig {
            malformed_rate: 1.5,
            ..Default::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("malformed_rate"));
        let c = FaultConfig {
            error_rate: f64::NAN,
            ..Default::default()
        };
        assert!(c.validate().unwrap_err().to_string().contains("error_rate"));
        let c = FaultConfig {
            error_rate: 0.6,
            stall_rate: 0.6,
            ..Default::default()
        };
        assert!(c.validate().unwrap_err().to_string().contains("sum"));
    }
}
