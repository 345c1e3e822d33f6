//! Autoscaler benchmarks' values: a request rate that changes over the run ([`RateCurve`]:
//! `--load-shape` points from a file, `sine:PERIOD,MIN,MAX` or `burst:EVERY,LEN,BASE,PEAK`),
//! where the replica count comes from ([`ReplicaSource`]: a Prometheus query or a file), and
//! the settings of the figures over both ([`AutoscaleSpec`]). Pure values and their rules, no
//! I/O: `cli` reads the files, `drive::arrivals` draws the schedule from the curve,
//! `drive::replicas` polls the count, `results::autoscale` computes the figures
//! (docs/metrics.md, "Autoscaler benchmarks").

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use super::limits::{check_rate, check_span, MAX_WAIT_S};

/// The most points a `--load-shape` or `--replicas-file` file may hold.
pub const MAX_POINTS: usize = 100_000;
/// The largest replica count believed (from a query or a file): more is not a deployment.
pub const MAX_REPLICAS: f64 = 10_000.0;
/// The most requests per second any point of a load shape may ask for.
pub const MAX_SHAPE_RATE: f64 = 1e6;
/// The attainment a window must be back at for a burst to count as recovered, by default.
pub const DEFAULT_ATTAINMENT_TARGET: f64 = 0.9;

/// A request rate over time (requests per second at each second of server time from the
/// start of the measured load). Arrivals follow it as a Poisson process of that rate
/// (`drive::arrivals`, by thinning).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum RateCurve {
    /// `(time_s, rate)` points, times never decreasing: the rate is linear between two points
    /// (two points at one time make a step), the first point's before it and the last's after.
    Points { points: Vec<[f64; 2]> },
    /// `MIN + (MAX − MIN)·(1 − cos(2πt/PERIOD))/2`: MIN at 0, MAX at PERIOD/2.
    Sine { period_s: f64, min: f64, max: f64 },
    /// BASE, and PEAK for LEN seconds from each multiple of EVERY after 0 (EVERY, 2·EVERY, …).
    Burst {
        every_s: f64,
        len_s: f64,
        base: f64,
        peak: f64,
    },
}

fn bad(why: impl std::fmt::Display) -> ConfigError {
    ConfigError::invalid("--load-shape", why)
}

/// `text` as a number in `what`, or the error naming both.
fn number(text: &str, what: &str) -> Result<f64, ConfigError> {
    (text.trim().parse::<f64>())
        .map_err(|_| bad(format!("{what}: {:?} is not a number", text.trim())))
}

impl RateCurve {
    /// `sine:PERIOD,MIN,MAX` or `burst:EVERY,LEN,BASE,PEAK`, checked; `None` when `spec` is
    /// neither (a file's name).
    pub fn parse_spec(spec: &str) -> Option<Result<RateCurve, ConfigError>> {
        let (kind, rest) = spec.split_once(':')?;
        let parts: Vec<&str> = rest.split(',').collect();
        let curve = match kind {
            "sine" => {
                if parts.len() != 3 {
                    return Some(Err(bad(format!("{spec:?}: sine takes PERIOD,MIN,MAX"))));
                }
                let v: Result<Vec<f64>, _> = parts.iter().map(|p| number(p, spec)).collect();
                v.map(|v| RateCurve::Sine {
                    period_s: v[0],
                    min: v[1],
                    max: v[2],
                })
            }
            "burst" => {
                if parts.len() != 4 {
                    return Some(Err(bad(format!(
                        "{spec:?}: burst takes EVERY,LEN,BASE,PEAK"
                    ))));
                }
                let v: Result<Vec<f64>, _> = parts.iter().map(|p| number(p, spec)).collect();
                v.map(|v| RateCurve::Burst {
                    every_s: v[0],
                    len_s: v[1],
                    base: v[2],
                    peak: v[3],
                })
            }
            _ => return None,
        };
        Some(curve.and_then(|c| c.check().map(|()| c)))
    }

    /// The points of a file's text, checked: each line `time_s,rate` (CSV; a first line that
    /// is not numbers is a header) or a JSON object `{"time_s": T, "rate": R}` (JSONL); blank
    /// lines and `#` comments are skipped. `name` is the file's, for errors.
    pub fn from_points_text(text: &str, name: &str) -> Result<RateCurve, ConfigError> {
        let points = read_points(text, name, "rate", "--load-shape")?;
        let curve = RateCurve::Points { points };
        curve.check()?;
        Ok(curve)
    }

    /// The rate at `t_s` seconds.
    pub fn rate_at(&self, t_s: f64) -> f64 {
        match self {
            RateCurve::Points { points } => linear_at(points, t_s),
            RateCurve::Sine { period_s, min, max } => {
                let phase = std::f64::consts::TAU * t_s / period_s;
                min + (max - min) * (1.0 - phase.cos()) / 2.0
            }
            RateCurve::Burst {
                every_s,
                len_s,
                base,
                peak,
            } => {
                let k = (t_s / every_s).floor();
                if k >= 1.0 && t_s - k * every_s < *len_s {
                    *peak
                } else {
                    *base
                }
            }
        }
    }

    /// The highest rate the curve reaches.
    pub fn peak(&self) -> f64 {
        match self {
            RateCurve::Points { points } => points.iter().map(|p| p[1]).fold(0.0, f64::max),
            RateCurve::Sine { max, .. } => *max,
            RateCurve::Burst { base, peak, .. } => base.max(*peak),
        }
    }

    /// The mean rate over `[a, b)` (the expected offered load of a window), by the midpoint
    /// rule over 256 steps (exact for the steps and lines of points and bursts up to a step's
    /// width).
    pub fn mean_rate(&self, a: f64, b: f64) -> f64 {
        if b <= a {
            return self.rate_at(a);
        }
        const STEPS: u32 = 256;
        let h = (b - a) / f64::from(STEPS);
        (0..STEPS)
            .map(|i| self.rate_at(a + (f64::from(i) + 0.5) * h))
            .sum::<f64>()
            / f64::from(STEPS)
    }

    /// The time its points end (the last point's), when it has points; sines and bursts go
    /// on for as long as `--duration` says.
    pub fn end_s(&self) -> Option<f64> {
        match self {
            RateCurve::Points { points } => points.last().map(|p| p[0]).filter(|&t| t > 0.0),
            _ => None,
        }
    }

    /// When each burst starts, before `until_s`: `EVERY, 2·EVERY, …` for bursts; none for
    /// other curves.
    pub fn burst_starts(&self, until_s: f64) -> Vec<f64> {
        let RateCurve::Burst { every_s, .. } = self else {
            return Vec::new();
        };
        (1..)
            .map(|k| f64::from(k) * every_s)
            .take_while(|&t| t < until_s)
            .take(MAX_POINTS)
            .collect()
    }

    /// The curve's own rules: rates 0 or more and at most [`MAX_SHAPE_RATE`], some rate
    /// above 0, times not going backwards and within a week, a period above 0, MIN ≤ MAX,
    /// BASE ≤ PEAK, and a burst shorter than its period.
    pub fn check(&self) -> Result<(), ConfigError> {
        let rate = |r: f64, what: &str| {
            if !(r.is_finite() && (0.0..=MAX_SHAPE_RATE).contains(&r)) {
                return Err(bad(format!(
                    "{what} {r} is not a rate from 0 to {MAX_SHAPE_RATE} requests per second"
                )));
            }
            Ok(())
        };
        let span =
            |s: f64, what: &str| check_span(s, false).map_err(|why| bad(format!("{what}: {why}")));
        match self {
            RateCurve::Points { points } => {
                if points.is_empty() {
                    return Err(bad("the file has no (time, rate) point"));
                }
                for (i, p) in points.iter().enumerate() {
                    rate(p[1], &format!("point {}: rate", i + 1))?;
                }
            }
            RateCurve::Sine { period_s, min, max } => {
                span(*period_s, "the period")?;
                rate(*min, "MIN")?;
                rate(*max, "MAX")?;
                if min > max {
                    return Err(bad(format!("MIN {min} is above MAX {max}")));
                }
            }
            RateCurve::Burst {
                every_s,
                len_s,
                base,
                peak,
            } => {
                span(*every_s, "EVERY")?;
                span(*len_s, "LEN")?;
                rate(*base, "BASE")?;
                rate(*peak, "PEAK")?;
                if len_s >= every_s {
                    return Err(bad(format!(
                        "a burst of {len_s} s every {every_s} s never ends: LEN must be below EVERY"
                    )));
                }
                if base > peak {
                    return Err(bad(format!("BASE {base} is above PEAK {peak}")));
                }
            }
        }
        check_rate(self.peak()).map_err(|why| bad(format!("its highest rate: {why}")))
    }
}

/// The value at `t` of a piecewise-linear function of `points` (time, value), flat outside.
fn linear_at(points: &[[f64; 2]], t: f64) -> f64 {
    let Some(first) = points.first() else {
        return 0.0;
    };
    if t < first[0] {
        return first[1];
    }
    // The last point at or before t (the later of two at one time: a step).
    let i = points.partition_point(|p| p[0] <= t);
    let a = points[i - 1];
    match points.get(i) {
        Some(b) if b[0] > a[0] => a[1] + (b[1] - a[1]) * (t - a[0]) / (b[0] - a[0]),
        _ => a[1],
    }
}

/// `(time, value)` points from a CSV or JSONL text (see [`RateCurve::from_points_text`]),
/// `value_key` the JSON key of the value; times at or above 0, never decreasing, within a
/// week; at most [`MAX_POINTS`].
fn read_points(
    text: &str,
    name: &str,
    value_key: &str,
    flag: &str,
) -> Result<Vec<[f64; 2]>, ConfigError> {
    let err =
        |line: usize, why: String| ConfigError::invalid(flag, format!("{name} line {line}: {why}"));
    let mut points: Vec<[f64; 2]> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let (n, line) = (i + 1, raw.trim());
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if points.len() >= MAX_POINTS {
            return Err(err(n, format!("more than {MAX_POINTS} points")));
        }
        let point = if line.starts_with('{') {
            let v: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| err(n, format!("not a JSON object: {e}")))?;
            let get = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
            match (get("time_s").or_else(|| get("time")), get(value_key)) {
                (Some(t), Some(r)) => [t, r],
                _ => {
                    return Err(err(
                        n,
                        format!("needs numbers \"time_s\" and \"{value_key}\""),
                    ))
                }
            }
        } else {
            let parts: Vec<&str> = line.split(',').map(str::trim).collect();
            let nums: Option<Vec<f64>> = parts.iter().map(|p| p.parse::<f64>().ok()).collect();
            match nums {
                Some(v) if v.len() == 2 => [v[0], v[1]],
                // A header: the first line that is not numbers.
                None if points.is_empty()
                    && !text.lines().take(i).any(|l| {
                        let l = l.trim();
                        !l.is_empty() && !l.starts_with('#')
                    }) =>
                {
                    continue
                }
                _ => {
                    return Err(err(
                        n,
                        format!("{line:?} is not TIME,{}", value_key.to_uppercase()),
                    ))
                }
            }
        };
        let [t, v] = point;
        if !(t.is_finite() && (0.0..=MAX_WAIT_S).contains(&t)) {
            return Err(err(
                n,
                format!("time {t} is not 0 to {MAX_WAIT_S:.0} seconds"),
            ));
        }
        if !v.is_finite() || v < 0.0 {
            return Err(err(
                n,
                format!("{value_key} {v} is negative or not a number"),
            ));
        }
        if let Some(prev) = points.last().filter(|p| p[0] > t) {
            return Err(err(
                n,
                format!("time goes backwards ({t} s after {} s)", prev[0]),
            ));
        }
        points.push(point);
    }
    if points.is_empty() {
        return Err(ConfigError::invalid(
            flag,
            format!("{name} has no (time, {value_key}) point"),
        ));
    }
    Ok(points)
}

/// Where the replica count over the run comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ReplicaSource {
    /// `--replicas-metric URL QUERY`: `GET URL/api/v1/query?query=QUERY` (Prometheus' HTTP
    /// API) every `interval_s` seconds of server time; its first series' value.
    Metric {
        url: String,
        query: String,
        interval_s: f64,
    },
    /// `--replicas-file`: `(time_s, replicas)` points, each count holding until the next.
    File { points: Vec<[f64; 2]> },
}

impl ReplicaSource {
    /// The points of a `--replicas-file` text (as a load shape's file, the value key
    /// `replicas`), each count at most [`MAX_REPLICAS`].
    pub fn from_points_text(text: &str, name: &str) -> Result<ReplicaSource, ConfigError> {
        let points = read_points(text, name, "replicas", "--replicas-file")?;
        if let Some(p) = points.iter().find(|p| p[1] > MAX_REPLICAS) {
            return Err(ConfigError::invalid(
                "--replicas-file",
                format!("{name}: {} replicas is more than {MAX_REPLICAS}", p[1]),
            ));
        }
        Ok(ReplicaSource::File { points })
    }
}

/// An autoscaler benchmark's settings (`--load-shape`, `--replicas-*`,
/// `--cost-per-replica-hour`, `--replica-capacity`, `--attainment-target`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoscaleSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicaSource>,
    /// Dollars per replica-hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_replica_hour: Option<f64>,
    /// Requests per second one replica sustains (its SLOs met): the need of each window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_capacity: Option<f64>,
    /// A window's attainment at which the service counts as recovered from a burst.
    pub attainment_target: f64,
}

impl Default for AutoscaleSpec {
    fn default() -> Self {
        AutoscaleSpec {
            replicas: None,
            cost_per_replica_hour: None,
            replica_capacity: None,
            attainment_target: DEFAULT_ATTAINMENT_TARGET,
        }
    }
}

impl AutoscaleSpec {
    /// The rules on its own values: a poll interval, a cost, a capacity and a target in
    /// their ranges.
    pub fn check(&self) -> Result<(), ConfigError> {
        if let Some(ReplicaSource::Metric {
            interval_s,
            url,
            query,
        }) = &self.replicas
        {
            check_span(*interval_s, false)
                .map_err(|why| ConfigError::limit("--replicas-interval", why))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::invalid(
                    "--replicas-metric",
                    format!("{url:?} is not an http:// or https:// URL"),
                ));
            }
            if query.trim().is_empty() || query.len() > 4096 {
                return Err(ConfigError::invalid(
                    "--replicas-metric",
                    "the query must be 1 to 4096 bytes",
                ));
            }
        }
        if let Some(c) = self.cost_per_replica_hour {
            if !(c.is_finite() && (0.0..=1e6).contains(&c)) {
                return Err(ConfigError::invalid(
                    "--cost-per-replica-hour",
                    format!("{c} is not a price from 0 to 1000000"),
                ));
            }
        }
        if let Some(c) = self.replica_capacity {
            if !(c.is_finite() && c > 0.0 && c <= MAX_SHAPE_RATE) {
                return Err(ConfigError::invalid(
                    "--replica-capacity",
                    format!("{c} is not a rate above 0 and at most {MAX_SHAPE_RATE}"),
                ));
            }
        }
        let t = self.attainment_target;
        if !(t > 0.0 && t <= 1.0) {
            return Err(ConfigError::invalid(
                "--attainment-target",
                format!("{t} is not in (0, 1]"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_give_their_rates() {
        let sine = RateCurve::parse_spec("sine:10,2,6").unwrap().unwrap();
        assert_eq!(sine.rate_at(0.0), 2.0);
        assert!((sine.rate_at(5.0) - 6.0).abs() < 1e-12);
        assert_eq!(sine.peak(), 6.0);
        let burst = RateCurve::parse_spec("burst:10,2,1,8").unwrap().unwrap();
        assert_eq!(burst.rate_at(0.5), 1.0);
        assert_eq!(burst.rate_at(10.0), 8.0);
        assert_eq!(burst.rate_at(11.9), 8.0);
        assert_eq!(burst.rate_at(12.0), 1.0);
        assert_eq!(burst.burst_starts(30.0), vec![10.0, 20.0]);
        assert!((burst.mean_rate(10.0, 12.0) - 8.0).abs() < 1e-9);
        assert!(RateCurve::parse_spec("shape.csv").is_none());
        let points =
            RateCurve::from_points_text("time_s,rate\n0,0\n10,10\n10,2\n# end\n20,2\n", "f")
                .unwrap();
        assert_eq!(points.rate_at(5.0), 5.0);
        assert_eq!(points.rate_at(10.0), 2.0);
        assert_eq!(points.rate_at(99.0), 2.0);
        assert_eq!(points.end_s(), Some(20.0));
        let jsonl = RateCurve::from_points_text(
            "{\"time_s\":0,\"rate\":3}\n{\"time_s\":4,\"rate\":3}\n",
            "f",
        )
        .unwrap();
        assert_eq!(jsonl.rate_at(2.0), 3.0);
    }

    #[test]
    fn bad_shapes_are_refused_in_one_line_naming_what_is_wrong() {
        let refused = |spec: &str, want: &str| {
            let e = match RateCurve::parse_spec(spec) {
                Some(r) => r.unwrap_err(),
                None => RateCurve::from_points_text(spec, "shape.csv").unwrap_err(),
            };
            let s = e.to_string();
            assert_eq!(e.option(), "--load-shape", "{s}");
            assert!(s.contains(want) && !s.contains('\n'), "{spec}: {s}");
        };
        refused("sine:0,1,2", "period");
        refused("sine:-5,1,2", "period");
        refused("sine:10,5,2", "MIN 5 is above MAX 2");
        refused("sine:10,1", "PERIOD,MIN,MAX");
        refused("burst:10,2,-1,5", "BASE -1");
        refused("burst:10,10,1,5", "LEN must be below EVERY");
        refused("burst:10,2,6,5", "BASE 6 is above PEAK 5");
        refused("0,1\n5,-2\n", "negative");
        refused("0,1\n5,2\n3,2\n", "time goes backwards");
        refused("", "no (time, rate) point");
        refused("# only a comment\n", "no (time, rate) point");
        refused("0,0\n5,0\n", "highest rate");
        refused("0,1\nx,y\n", "line 2");
        refused("0,nan\n", "negative or not a number");
    }

    #[test]
    fn replica_files_and_settings_are_bounded() {
        let f = ReplicaSource::from_points_text("0,1\n5,3\n", "r.csv").unwrap();
        assert_eq!(
            f,
            ReplicaSource::File {
                points: vec![[0.0, 1.0], [5.0, 3.0]]
            }
        );
        let e = ReplicaSource::from_points_text("0,1\n5,20000\n", "r.csv").unwrap_err();
        assert_eq!(e.option(), "--replicas-file");
        let mut spec = AutoscaleSpec::default();
        assert!(spec.check().is_ok());
        spec.attainment_target = 1.5;
        assert_eq!(spec.check().unwrap_err().option(), "--attainment-target");
        spec.attainment_target = 0.9;
        spec.cost_per_replica_hour = Some(f64::NAN);
        assert_eq!(
            spec.check().unwrap_err().option(),
            "--cost-per-replica-hour"
        );
    }
}
