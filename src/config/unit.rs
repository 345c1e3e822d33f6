//! What a figure measures and which way it is better: [`Unit`] (how a figure is formatted
//! and labelled) and [`Better`] (higher or lower), the two facts every figure key
//! (`figure.rs`, `run_figure.rs`) states of itself. Pure values.

use serde::{Deserialize, Serialize};

/// What a figure measures: how it is formatted and labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Milliseconds,
    Seconds,
    /// A number of requests.
    Requests,
    /// A total of tokens.
    Tokens,
    /// Tokens per request, on average.
    TokensPerRequest,
    RequestsPerSecond,
    TokensPerSecond,
    /// A number of input sequences (an embeddings request carries several).
    Inputs,
    InputsPerSecond,
    /// US dollars per million tokens.
    UsdPerMillionTokens,
    JoulesPerToken,
    /// A part of a whole, 0..=1.
    Fraction,
    /// A percentage, 0..=100.
    Percent,
    /// Tokens per decoding step (speculative decoding's acceptance length).
    TokensPerStep,
    /// Images sent.
    Images,
    /// Media tokens per image, on average.
    TokensPerImage,
    /// Videos sent, and media tokens per video on average.
    Videos,
    TokensPerVideo,
    /// Bytes of a request's body.
    Bytes,
    /// Seconds of audio served per second (a real-time factor: vLLM's `rtfx`).
    RealTimeFactor,
    /// A number of agentic jobs, and jobs completed per second.
    Jobs,
    JobsPerSecond,
    /// Calls per job, and tokens per job, on average.
    CallsPerJob,
    TokensPerJob,
}

impl Unit {
    /// The unit as tables and documents write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Milliseconds => "ms",
            Unit::Seconds => "s",
            Unit::Requests => "requests",
            Unit::Tokens => "tokens",
            Unit::TokensPerRequest => "tokens/request",
            Unit::RequestsPerSecond => "requests/s",
            Unit::Inputs => "inputs",
            Unit::InputsPerSecond => "inputs/s",
            Unit::TokensPerSecond => "tokens/s",
            Unit::UsdPerMillionTokens => "USD/1M tokens",
            Unit::JoulesPerToken => "J/token",
            Unit::Fraction => "fraction",
            Unit::Percent => "%",
            Unit::TokensPerStep => "tokens/step",
            Unit::Images => "images",
            Unit::TokensPerImage => "tokens/image",
            Unit::Videos => "videos",
            Unit::TokensPerVideo => "tokens/video",
            Unit::Bytes => "bytes",
            Unit::RealTimeFactor => "audio s/s",
            Unit::Jobs => "jobs",
            Unit::JobsPerSecond => "jobs/s",
            Unit::CallsPerJob => "calls/job",
            Unit::TokensPerJob => "tokens/job",
        }
    }

    /// True for a count of whole things (requests, a total of tokens).
    pub fn is_count(self) -> bool {
        matches!(
            self,
            Unit::Requests | Unit::Tokens | Unit::Images | Unit::Videos | Unit::Jobs
        )
    }
}

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}
