//! The simulator's errors, one enum per concern, each message the text a user or client sees:
//! - [`SimConfigError`]: a setting (of [`crate::sim::SimConfig`], its engine, limits or
//!   faults) outside the values it may take, or a preset or metrics-flavour name that names
//!   none. The message names the setting as `servebench sim` and the tests spell it
//!   (`faults.error_rate`, `engine.max_num_seqs`, `time_scale`) and says what it must be.
//! - [`GuidedError`]: a guided decoding request (`structured.rs`) that cannot be answered.
//! - [`MediaError`]: an image, video or audio clip in a request (`apis/media.rs`) that does
//!   not read.
//! - [`FormError`]: a `multipart/form-data` body (`apis/form.rs`) that does not read.
//! - [`TranscriptionError`]: a transcription form (`apis/audio.rs`) that does not read.
//!
//! The request errors reach clients as the message of an HTTP 400 (`apis/reject.rs`), so
//! their text is part of the simulator's wire format: change it only on purpose.
//!
//! # What it must not touch
//! It imports nothing of the simulator: every module may use it. A limit a message names is
//! a field, filled by the module that owns the limit.

/// A simulator setting or name that breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimConfigError {
    /// A setting outside the values it may take: "`setting` `rule`".
    #[error("{setting} {rule}")]
    Setting { setting: String, rule: String },
    /// A preset or metrics flavour that does not exist.
    #[error("unknown {what} '{name}' (expected {expected})")]
    Unknown {
        what: &'static str,
        name: String,
        expected: String,
    },
}

impl SimConfigError {
    /// `setting` breaks `rule` ("must be at least 1").
    pub(crate) fn setting(setting: impl Into<String>, rule: impl Into<String>) -> Self {
        SimConfigError::Setting {
            setting: setting.into(),
            rule: rule.into(),
        }
    }
}

/// For callers whose own errors are still text (the command line's flag parsers).
impl From<SimConfigError> for String {
    fn from(e: SimConfigError) -> String {
        e.to_string()
    }
}

/// A guided decoding request (a regex or a list of choices) that cannot be answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GuidedError {
    #[error("structured_outputs.regex must be a string")]
    RegexNotString,
    #[error("structured_outputs.choice must be a non-empty list of strings")]
    ChoiceList,
    /// A pattern longer than the simulator takes.
    #[error("structured_outputs.regex: longer than {max} bytes")]
    PatternTooLong { max: usize },
    /// A pattern that does not parse or compile: the regex crate's reason, on one line.
    #[error("structured_outputs.regex: {0}")]
    Pattern(String),
}

/// An image, video or audio clip that does not read: what is wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MediaError {
    /// The error of one content part of a chat request (both counted from 1).
    #[error("message {message} content part {part}: {why}")]
    Part {
        message: usize,
        part: usize,
        why: Box<MediaError>,
    },
    /// A part without its payload ("image_url has no url").
    #[error("{kind} has no {field}")]
    Missing {
        kind: &'static str,
        field: &'static str,
    },
    /// A data URL expected, something else given; `what` names the item.
    #[error("the {what} is not a data: URL ({shown:?}); the simulator fetches nothing")]
    NotDataUrl { what: &'static str, shown: String },
    #[error("the {what}'s data URL is not base64")]
    NotBase64 { what: &'static str },
    #[error("the {what}'s base64 is {len} characters: too short or not whole groups of 4")]
    Base64Length { what: &'static str, len: usize },
    #[error("the {what}'s base64: {error}")]
    Base64 {
        what: &'static str,
        error: base64::DecodeError,
    },
    #[error("the video is {shown:?}: the simulator reads video/jpeg frame lists only")]
    VideoType { shown: String },
    #[error("the video has more than {max} frames")]
    TooManyFrames { max: usize },
    /// The error of one frame of a video (counted from 1).
    #[error("frame {frame}: {why}")]
    Frame { frame: usize, why: Box<MediaError> },
    #[error("frame {frame} is {w}x{h}, the first {w0}x{h0}: a video's frames are of one size")]
    FrameSize {
        frame: usize,
        w: u64,
        h: u64,
        w0: u64,
        h0: u64,
    },
    #[error("the audio's format is {shown:?}: the simulator reads wav only")]
    AudioFormat { shown: String },
    #[error("the audio is not a WAV file (no RIFF/WAVE header)")]
    NotWav,
    #[error("the WAV's data comes before its fmt chunk")]
    DataBeforeFmt,
    #[error("the WAV's fmt is {channels} channels of {bits} bits at {rate} Hz")]
    WavFormat { channels: u64, bits: u64, rate: u64 },
    #[error("the WAV is cut short ({announced} bytes of data announced, {present} present)")]
    WavCut { announced: u64, present: usize },
    #[error("the WAV is longer than {max_s} s")]
    WavTooLong { max_s: u64 },
    #[error("the WAV has no data chunk in its first 4 KiB")]
    NoWavData,
    #[error("the image is {shown:?}, not image/png or image/jpeg")]
    ImageType { shown: String },
    /// An image side outside 1..=`max` pixels; `kind` is `PNG` or `JPEG`.
    #[error("the {kind} is {w}x{h}: each side must be 1..={max} pixels")]
    ImageSide {
        kind: &'static str,
        w: u64,
        h: u64,
        max: u64,
    },
    #[error("the image is not a PNG (no signature and IHDR chunk)")]
    NotPng,
    #[error("the PNG is cut short (no IEND chunk at its end)")]
    PngCut,
    #[error("the image is not a JPEG (no start marker)")]
    NotJpeg,
    #[error("the JPEG is cut short (no end marker at its end)")]
    JpegCut,
    #[error("the JPEG has no segment marker at byte {at}")]
    NoSegmentMarker { at: usize },
    #[error("the JPEG has no frame header (SOF) in its first 64 KiB")]
    NoFrameHeader,
}

/// A `multipart/form-data` body that does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FormError {
    #[error("the request has no content type: send multipart/form-data")]
    NoContentType,
    #[error("the content type is {shown:?}: send multipart/form-data")]
    NotMultipart { shown: String },
    #[error("the multipart content type names no boundary")]
    NoBoundary,
    #[error("the multipart boundary is not 1 to 70 visible characters")]
    BadBoundary,
    #[error("the form has no part (its boundary is not in it)")]
    NoPart,
    #[error("the form has more than {max} parts")]
    TooManyParts { max: usize },
    /// The error of one part's head (counted from 1).
    #[error("form part {part}: {why}")]
    Part { part: usize, why: Box<FormError> },
    #[error("its boundary line does not end in CRLF")]
    BoundaryLine,
    #[error("no blank line ends its head within {max} bytes")]
    HeadTooLong { max: usize },
    #[error("its head is not UTF-8")]
    HeadNotUtf8,
    #[error("no Content-Disposition header")]
    NoDisposition,
    #[error("its Content-Disposition is not form-data")]
    NotFormData,
    #[error("its Content-Disposition has no name")]
    NoName,
    #[error("form part {part} ({name}) is cut short: no closing boundary")]
    CutShort { part: usize, name: String },
}

impl FormError {
    /// `why`, said of part `part` (counted from 1).
    pub(crate) fn part(part: usize, why: FormError) -> FormError {
        FormError::Part {
            part,
            why: Box::new(why),
        }
    }
}

/// A transcription request's form that does not read: the form itself, its clip or a field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TranscriptionError {
    #[error(transparent)]
    Form(#[from] FormError),
    #[error("the file part: {0}")]
    File(MediaError),
    #[error("the field {field:?} is not UTF-8")]
    NotUtf8 { field: String },
    #[error("{field} must be a whole number, got {shown:?}")]
    NotCount { field: String, shown: String },
    #[error("the form has no file part (the audio to transcribe)")]
    NoFile,
}
