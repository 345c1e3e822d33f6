//! Why a run (or a sweep, or a search) stopped before it could save a result: each lower
//! layer's error, and the two that belong to driving itself.

/// A run could not start, or its results could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] crate::config::error::ConfigError),
    #[error(transparent)]
    Client(#[from] crate::measure::error::ClientError),
    #[error(transparent)]
    Workload(#[from] crate::workload::error::WorkloadError),
    #[error(transparent)]
    Results(#[from] crate::results::error::ResultsError),
    /// The chat template failed its start-up render.
    #[error(transparent)]
    Template(#[from] crate::tokenizer::chat_template::TemplateError),
    /// The pre-flight request failed: the server is unreachable or the endpoint is wrong.
    #[error("{0}")]
    Preflight(String),
    /// `--start-at` cannot be kept.
    #[error("{0}")]
    StartAt(String),
    /// A client thread (`--client-threads`) could not start or ended without its figures.
    #[error("{0}")]
    Threads(String),
    /// A hook failed (`--hook`, `--reset-prefix-cache`, `--profile`): which, and how; what
    /// was measured before it is saved.
    #[error("{0} (--hook-errors ignore goes on)")]
    Hook(String),
    /// `--replicas-metric` cannot be read at the start (no series, or the poll failed).
    #[error(transparent)]
    Replicas(#[from] crate::drive::replicas::ReplicasError),
    /// Stopped (Ctrl-C, SIGTERM) before the measured load began: nothing was measured or
    /// written.
    #[error("stopped before the measured load began: nothing was measured or written")]
    Stopped,
    /// The run stopped sending early and saved what it measured, marked incomplete.
    #[error("{why}; the run stopped sending and saved what it had measured to {}, marked incomplete", result.display())]
    Incomplete {
        why: String,
        result: std::path::PathBuf,
    },
}

impl From<crate::tokenizer::TokenizerError> for RunError {
    fn from(e: crate::tokenizer::TokenizerError) -> Self {
        RunError::Workload(e.into())
    }
}

impl From<crate::workload::dataset::DatasetError> for RunError {
    fn from(e: crate::workload::dataset::DatasetError) -> Self {
        RunError::Workload(e.into())
    }
}
