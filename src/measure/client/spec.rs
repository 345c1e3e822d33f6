//! What the client is given: one request to send as the workload built it ([`RequestSpec`],
//! with its mix class, [`ClassTag`]), the options kept out of the saved config because they can
//! hold secrets ([`Secrets`]), and the hook told when a request's first byte is written
//! ([`Written`]).
//!
//! Plain data, a leaf: the client's files read it and it imports only the request shape's
//! [`Part`]. A new per-request input is a field here, read where the body is built
//! (`send.rs`).

use super::api::Part;

/// One request to send, as built by the workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestSpec {
    pub id: u64,
    pub prompt: String,
    /// Chat messages, when the dataset gave them (chat API only; others send `prompt`).
    pub messages: Option<serde_json::Value>,
    /// Further inputs sent with `prompt` in this one request, for an API that takes a list
    /// (an embeddings batch of `--embedding-batch-size`); empty for every other request.
    pub batch: Vec<String>,
    /// Media sent beside `prompt` as content parts of its user message (images, audio), for
    /// the APIs that take them; a request holding one for another API fails unsent.
    pub parts: Vec<Part>,
    /// Prompt length under servebench's tokenizer (or as requested), when known; a batch's
    /// inputs together.
    pub input_len: Option<u64>,
    pub output_len: u64,
    pub warmup: bool,
    /// A trace's send time, ns from the run's start (server time); `None`: the load's
    /// arrival process decides.
    pub offset_ns: Option<u64>,
    /// Prompt tokens that repeat a prefix already sent earlier in the workload (an unbounded
    /// cache would hold them), where the dataset designs reuse (`prefix`, `trace`).
    pub designed_cached: Option<u64>,
    /// The turn of a conversation this request is (0 starts one; the driver sends a
    /// conversation's turns in order, each with the history); `None`: a single request.
    pub turn: Option<u32>,
    /// The model (a LoRA adapter, `--lora-modules` or a jsonl line's `model`) this request is
    /// sent to instead of the run's `--model`; kept in its record.
    pub model: Option<String>,
    /// The `--mix` class this request belongs to, and what the class sends with it.
    pub class: Option<ClassTag>,
    /// The call of an agentic job this request is (call 0 starts a job; a job's calls are
    /// consecutive in the pool); `None`: not part of a job.
    pub call: Option<crate::measure::job::CallPlace>,
    /// The session this request belongs to (its conversation's or job's schedule number, set
    /// by the driver), which `--affinity session` keeps on one endpoint; `None`: a lone request.
    pub session: Option<u64>,
}

/// A request's class of a workload mix (`--mix`): its number in the mix, vLLM's `priority`
/// field put in the body, and the tenant header sent with it (checked as a header name and
/// value by `config::mix`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassTag {
    pub index: u32,
    pub priority: Option<i32>,
    pub header: Option<(String, String)>,
}

/// Told when a request's first byte is about to be written ([`Client::send_within`]).
pub type Written<'a> = Option<&'a (dyn Fn() + Sync)>;

/// Options that are not in the saved config because they can hold secrets.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    pub api_key: Option<String>,
    /// Extra headers, `(name, value)`.
    pub headers: Vec<(String, String)>,
    /// `--base-url` and `--endpoint` as given, when they differ from the config's redacted
    /// forms (userinfo, query parameters): requests go here, nothing shows it.
    pub base_url: Option<String>,
    pub endpoint: Option<String>,
    /// The endpoints after the first as given (`--base-url` more than once), when they differ
    /// from the config's redacted forms; empty: the config's.
    pub more_base_urls: Vec<String>,
}
