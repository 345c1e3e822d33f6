//! vLLM's run-level figures: [`RunFigure`], one per key of `--save-result` that has no
//! statistic (`completed`, `output_throughput`, `request_goodput`, ...), each with its name,
//! [`Unit`], [`Better`] direction and place in the reading order of tables. One kind of
//! `figure::FigureKey`. Pure values. To add one: a variant, its name and unit below.

use super::unit::{Better, Unit};

/// A run-level figure under vLLM's `--save-result` name, in the reading order of tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunFigure {
    Completed,
    Failed,
    Duration,
    RequestThroughput,
    RequestGoodput,
    OutputThroughput,
    TotalTokenThroughput,
    TotalInputTokens,
    TotalOutputTokens,
    /// The peak output token rate over any one second.
    MaxOutputTokensPerS,
    MaxConcurrentRequests,
    /// Input sequences sent (an embeddings request carries `--embedding-batch-size` of them).
    TotalInputSequences,
    InputSequenceThroughput,
    /// Reasoning and answer phases: their token totals, the share of output
    /// spent reasoning, each phase's throughput.
    TotalReasoningTokens,
    TotalAnswerTokens,
    ReasoningShare,
    ReasoningThroughput,
    AnswerThroughput,
    /// Speculative decoding over the run, from the server's counters (vLLM's
    /// keys): accepted / draft tokens in percent, and tokens per step.
    SpecDecodeAcceptanceRate,
    SpecDecodeAcceptanceLength,
    /// The prefix cache's hit rate the workload designed (an unbounded cache), and the one
    /// the server reported (docs/metrics.md, "Prefix-cache hit rate").
    DesignedPrefixHitRate,
    MeasuredPrefixHitRate,
    /// Structured output (`--structured-output`): the share of checked answers valid against
    /// the schema (vLLM's `correct_rate(%)`), and that parsed as JSON.
    CorrectRate,
    JsonRate,
    /// Tool calls: the mean time to the first tool-call token, and output tokens per call.
    MeanToolCallTtft,
    MeanToolCallTokens,
    /// Images in chat: images sent, media tokens per request and per image,
    /// bytes per request, upload time (docs/metrics.md, "Images in chat").
    TotalImages,
    MeanMediaTokensPerRequest,
    MediaTokensPerImage,
    /// Videos (random-mm's buckets of more frames): videos sent, media tokens per video.
    TotalVideos,
    MediaTokensPerVideo,
    MeanRequestBytes,
    MeanUploadMs,
    P99UploadMs,
    /// Audio and transcriptions: the audio seconds sent, vLLM's `rtfx` over the
    /// run, each request's real-time factor (docs/metrics.md, "Audio and transcriptions").
    TotalInputAudioS,
    Rtfx,
    MeanRequestRtfx,
    MedianRequestRtfx,
}

impl RunFigure {
    pub const ALL: [RunFigure; 38] = [
        RunFigure::Completed,
        RunFigure::Failed,
        RunFigure::Duration,
        RunFigure::RequestThroughput,
        RunFigure::InputSequenceThroughput,
        RunFigure::RequestGoodput,
        RunFigure::OutputThroughput,
        RunFigure::TotalTokenThroughput,
        RunFigure::TotalInputTokens,
        RunFigure::TotalInputSequences,
        RunFigure::TotalOutputTokens,
        RunFigure::MaxOutputTokensPerS,
        RunFigure::MaxConcurrentRequests,
        RunFigure::TotalReasoningTokens,
        RunFigure::TotalAnswerTokens,
        RunFigure::ReasoningShare,
        RunFigure::ReasoningThroughput,
        RunFigure::AnswerThroughput,
        RunFigure::SpecDecodeAcceptanceRate,
        RunFigure::SpecDecodeAcceptanceLength,
        RunFigure::DesignedPrefixHitRate,
        RunFigure::MeasuredPrefixHitRate,
        RunFigure::CorrectRate,
        RunFigure::JsonRate,
        RunFigure::MeanToolCallTtft,
        RunFigure::MeanToolCallTokens,
        RunFigure::TotalImages,
        RunFigure::MeanMediaTokensPerRequest,
        RunFigure::MediaTokensPerImage,
        RunFigure::TotalVideos,
        RunFigure::MediaTokensPerVideo,
        RunFigure::MeanRequestBytes,
        RunFigure::MeanUploadMs,
        RunFigure::P99UploadMs,
        RunFigure::TotalInputAudioS,
        RunFigure::Rtfx,
        RunFigure::MeanRequestRtfx,
        RunFigure::MedianRequestRtfx,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RunFigure::Completed => "completed",
            RunFigure::Failed => "failed",
            RunFigure::Duration => "duration",
            RunFigure::RequestThroughput => "request_throughput",
            RunFigure::RequestGoodput => "request_goodput",
            RunFigure::OutputThroughput => "output_throughput",
            RunFigure::TotalTokenThroughput => "total_token_throughput",
            RunFigure::TotalInputTokens => "total_input_tokens",
            RunFigure::TotalOutputTokens => "total_output_tokens",
            RunFigure::MaxOutputTokensPerS => "max_output_tokens_per_s",
            RunFigure::MaxConcurrentRequests => "max_concurrent_requests",
            RunFigure::TotalInputSequences => "total_input_sequences",
            RunFigure::InputSequenceThroughput => "input_sequence_throughput",
            RunFigure::TotalReasoningTokens => "total_reasoning_tokens",
            RunFigure::TotalAnswerTokens => "total_answer_tokens",
            RunFigure::ReasoningShare => "reasoning_share",
            RunFigure::ReasoningThroughput => "reasoning_throughput",
            RunFigure::AnswerThroughput => "answer_throughput",
            RunFigure::SpecDecodeAcceptanceRate => "spec_decode_acceptance_rate",
            RunFigure::SpecDecodeAcceptanceLength => "spec_decode_acceptance_length",
            RunFigure::DesignedPrefixHitRate => "designed_prefix_hit_rate",
            RunFigure::MeasuredPrefixHitRate => "measured_prefix_hit_rate",
            RunFigure::CorrectRate => "correct_rate(%)",
            RunFigure::JsonRate => "json_rate(%)",
            RunFigure::MeanToolCallTtft => "mean_tool_call_ttft_ms",
            RunFigure::MeanToolCallTokens => "mean_tool_call_tokens",
            RunFigure::TotalImages => "total_images",
            RunFigure::MeanMediaTokensPerRequest => "mean_media_tokens_per_request",
            RunFigure::MediaTokensPerImage => "media_tokens_per_image",
            RunFigure::TotalVideos => "total_videos",
            RunFigure::MediaTokensPerVideo => "media_tokens_per_video",
            RunFigure::MeanRequestBytes => "mean_request_bytes",
            RunFigure::MeanUploadMs => "mean_upload_ms",
            RunFigure::P99UploadMs => "p99_upload_ms",
            RunFigure::TotalInputAudioS => "total_input_audio_s",
            RunFigure::Rtfx => "rtfx",
            RunFigure::MeanRequestRtfx => "mean_request_rtfx",
            RunFigure::MedianRequestRtfx => "median_request_rtfx",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            RunFigure::Completed | RunFigure::Failed | RunFigure::MaxConcurrentRequests => {
                Unit::Requests
            }
            RunFigure::Duration => Unit::Seconds,
            RunFigure::RequestThroughput | RunFigure::RequestGoodput => Unit::RequestsPerSecond,
            RunFigure::OutputThroughput
            | RunFigure::TotalTokenThroughput
            | RunFigure::MaxOutputTokensPerS => Unit::TokensPerSecond,
            RunFigure::TotalInputTokens | RunFigure::TotalOutputTokens => Unit::Tokens,
            RunFigure::TotalInputSequences => Unit::Inputs,
            RunFigure::InputSequenceThroughput => Unit::InputsPerSecond,
            RunFigure::TotalReasoningTokens | RunFigure::TotalAnswerTokens => Unit::Tokens,
            RunFigure::ReasoningShare => Unit::Fraction,
            RunFigure::ReasoningThroughput | RunFigure::AnswerThroughput => Unit::TokensPerSecond,
            RunFigure::SpecDecodeAcceptanceRate => Unit::Percent,
            RunFigure::SpecDecodeAcceptanceLength => Unit::TokensPerStep,
            RunFigure::DesignedPrefixHitRate | RunFigure::MeasuredPrefixHitRate => Unit::Fraction,
            RunFigure::CorrectRate | RunFigure::JsonRate => Unit::Percent,
            RunFigure::MeanToolCallTtft => Unit::Milliseconds,
            RunFigure::MeanToolCallTokens => Unit::TokensPerRequest,
            RunFigure::TotalImages => Unit::Images,
            RunFigure::MeanMediaTokensPerRequest => Unit::TokensPerRequest,
            RunFigure::MediaTokensPerImage => Unit::TokensPerImage,
            RunFigure::TotalVideos => Unit::Videos,
            RunFigure::MediaTokensPerVideo => Unit::TokensPerVideo,
            RunFigure::MeanRequestBytes => Unit::Bytes,
            RunFigure::MeanUploadMs | RunFigure::P99UploadMs => Unit::Milliseconds,
            RunFigure::TotalInputAudioS => Unit::Seconds,
            RunFigure::Rtfx | RunFigure::MeanRequestRtfx | RunFigure::MedianRequestRtfx => {
                Unit::RealTimeFactor
            }
        }
    }

    /// Token totals and the peak of concurrent requests say what was asked, not how well
    /// it was served: no direction.
    pub fn better(self) -> Option<Better> {
        match self {
            RunFigure::Completed
            | RunFigure::RequestThroughput
            | RunFigure::RequestGoodput
            | RunFigure::OutputThroughput
            | RunFigure::TotalTokenThroughput
            | RunFigure::MaxOutputTokensPerS
            | RunFigure::InputSequenceThroughput
            | RunFigure::MeasuredPrefixHitRate
            | RunFigure::CorrectRate
            | RunFigure::JsonRate => Some(Better::Higher),
            RunFigure::Failed | RunFigure::Duration | RunFigure::MeanToolCallTtft => {
                Some(Better::Lower)
            }
            RunFigure::MeanToolCallTokens
            | RunFigure::TotalInputTokens
            | RunFigure::TotalOutputTokens
            | RunFigure::TotalInputSequences
            | RunFigure::MaxConcurrentRequests
            | RunFigure::DesignedPrefixHitRate => None,
            // What the model chose to generate, not how well it was served.
            RunFigure::TotalReasoningTokens
            | RunFigure::TotalAnswerTokens
            | RunFigure::ReasoningShare => None,
            RunFigure::ReasoningThroughput | RunFigure::AnswerThroughput => Some(Better::Higher),
            RunFigure::SpecDecodeAcceptanceRate | RunFigure::SpecDecodeAcceptanceLength => {
                Some(Better::Higher)
            }
            // What was sent, not how well it was served; the upload is time the request took.
            RunFigure::TotalImages
            | RunFigure::MeanMediaTokensPerRequest
            | RunFigure::MediaTokensPerImage
            | RunFigure::TotalVideos
            | RunFigure::MediaTokensPerVideo
            | RunFigure::MeanRequestBytes => None,
            RunFigure::MeanUploadMs | RunFigure::P99UploadMs => Some(Better::Lower),
            // The audio sent is what was asked; audio served per second is how well.
            RunFigure::TotalInputAudioS => None,
            RunFigure::Rtfx | RunFigure::MeanRequestRtfx | RunFigure::MedianRequestRtfx => {
                Some(Better::Higher)
            }
        }
    }
}
