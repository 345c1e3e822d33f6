//! `servebench run`'s autoscaler-benchmark flags: `--load-shape` (a rate over time), the
//! replica count (`--replicas-metric`, `--replicas-file`, `--replicas-interval`) and the
//! figures' settings (`--cost-per-replica-hour`, `--replica-capacity`, a rate or a saved
//! plan read by `replica_capacity.rs`, `--attainment-target`). Set into `RunConfig` by
//! [`AutoscaleArgs::apply`], which reads the files it names (each bounded before it is
//! read); what the values mean: `config::autoscale`.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use clap::Args;

use super::heading;
use crate::config::autoscale::{
    AutoscaleSpec, RateCurve, ReplicaSource, DEFAULT_ATTAINMENT_TARGET,
};
use crate::config::error::ConfigError;
use crate::config::limits::MIN_TIME_SLICE_S;
use crate::config::url::redact_url;
use crate::config::RunConfig;

/// The most bytes a `--load-shape` or `--replicas-file` file may hold.
const MAX_FILE_BYTES: u64 = 16 << 20;
/// The windows a run with a load shape is cut into when `--time-slice` is not given.
const DEFAULT_WINDOWS: f64 = 60.0;

#[derive(Debug, Args)]
pub struct AutoscaleArgs {
    /// The request rate over time, instead of --request-rate: a file of (time_s, rate)
    /// points (CSV `time_s,rate` or JSONL `{"time_s":..,"rate":..}`; linear between points,
    /// two points at one time a step; the run ends at the last point unless --duration),
    /// `sine:PERIOD,MIN,MAX` (MIN at 0, MAX at PERIOD/2), or `burst:EVERY,LEN,BASE,PEAK`
    /// (PEAK for LEN s from EVERY, 2·EVERY, …; BASE otherwise). Poisson arrivals of that rate.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "FILE|sine:..|burst:..")]
    pub load_shape: Option<String>,
    /// The replica count over the run from Prometheus: GET URL/api/v1/query?query=QUERY
    /// every window (--replicas-interval), its first series' value (e.g. a deployment's
    /// ready replicas). A query with no series is refused at the start; a later failed poll
    /// is a gap.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, num_args = 2, value_names = ["URL", "QUERY"])]
    pub replicas_metric: Option<Vec<String>>,
    /// Seconds between two polls of --replicas-metric (default: the time slice).
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "SECONDS", requires = "replicas_metric")]
    pub replicas_interval: Option<f64>,
    /// The replica count over the run from a file of (time_s, replicas) points (CSV or
    /// JSONL `{"time_s":..,"replicas":..}`), each count holding until the next.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "FILE", conflicts_with = "replicas_metric")]
    pub replicas_file: Option<PathBuf>,
    /// Dollars per replica-hour: the run's replica-hours priced.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "DOLLARS")]
    pub cost_per_replica_hour: Option<f64>,
    /// Requests per second one replica sustains within the SLOs: a number, or a saved plan
    /// of one configuration (`servebench plan ... --format csv > PLAN.csv`), whose sustained
    /// step's request throughput is taken. Each window's need, ceil(offered / RATE), gives
    /// the over-provisioning.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "RATE|PLAN.csv")]
    pub replica_capacity: Option<String>,
    /// A window's SLO attainment at which the service counts as recovered from a burst.
    /// Default 0.9.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "FRACTION")]
    pub attainment_target: Option<f64>,
}

/// `path`'s text, at most [`MAX_FILE_BYTES`]; the error names `flag`.
fn read_bounded(path: &Path, flag: &str) -> Result<String, ConfigError> {
    let name = path.display();
    let cannot = |e: std::io::Error| ConfigError::invalid(flag, format!("cannot read {name}: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        let why = format!("{name} is larger than {MAX_FILE_BYTES} bytes");
        return Err(ConfigError::invalid(flag, why));
    }
    Ok(text)
}

impl AutoscaleArgs {
    fn any(&self) -> bool {
        self.load_shape.is_some()
            || self.replicas_metric.is_some()
            || self.replicas_file.is_some()
            || self.cost_per_replica_hour.is_some()
            || self.replica_capacity.is_some()
            || self.attainment_target.is_some()
    }

    /// `cfg` with the load shape, the replica source and the settings (checked by
    /// `RunConfig::validate`); without `--time-slice`, windows of a sixtieth of the run (a
    /// quarter of a burst at most). The error: a file that cannot be read or is not points.
    pub fn apply(&self, mut cfg: RunConfig) -> Result<RunConfig, ConfigError> {
        if !self.any() {
            return Ok(cfg);
        }
        if let Some(spec) = &self.load_shape {
            let curve = match RateCurve::parse_spec(spec) {
                Some(curve) => curve?,
                None => {
                    let path = Path::new(spec);
                    let text = read_bounded(path, "--load-shape")?;
                    RateCurve::from_points_text(&text, &path.display().to_string())?
                }
            };
            cfg.load.shape.curve = Some(curve);
        }
        if cfg.time_slice_s.is_none() {
            let shape = &cfg.load.shape;
            let mut s = shape.window_s().map_or(1.0, |w| w / DEFAULT_WINDOWS);
            if let Some(RateCurve::Burst { len_s, .. }) = &shape.curve {
                s = s.min(len_s / 4.0);
            }
            cfg.time_slice_s = Some(s.max(MIN_TIME_SLICE_S));
        }
        let window = cfg.time_slice_s.unwrap_or(1.0);
        let replicas = match (&self.replicas_metric, &self.replicas_file) {
            (Some(m), _) => Some(ReplicaSource::Metric {
                url: redact_url(m[0].trim_end_matches('/')),
                query: m.get(1).cloned().unwrap_or_default(),
                interval_s: self.replicas_interval.unwrap_or(window),
            }),
            (None, Some(path)) => {
                let text = read_bounded(path, "--replicas-file")?;
                Some(ReplicaSource::from_points_text(
                    &text,
                    &path.display().to_string(),
                )?)
            }
            (None, None) => None,
        };
        cfg.autoscale = Some(AutoscaleSpec {
            replicas,
            cost_per_replica_hour: self.cost_per_replica_hour,
            replica_capacity: (self.replica_capacity.as_deref())
                .map(super::replica_capacity::parse)
                .transpose()?,
            attainment_target: self.attainment_target.unwrap_or(DEFAULT_ATTAINMENT_TARGET),
        });
        Ok(cfg)
    }
}
