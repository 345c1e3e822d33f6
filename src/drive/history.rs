//! A conversation's history, turn by turn: what each turn sends, and the bounds on
//! building it.
//!
//! A turn carries the history: the alternating user/assistant messages for the chat API; for
//! an API that takes a prompt, the messages rendered with the model's chat template where the
//! tokenizer has one, else `history + "\n\n" + text` (docs/metrics.md, "Multi-turn
//! conversations"). Before a turn is built its history is held to the run's
//! [`HistoryLimits`]; the template (code from outside) renders on a thread of its own, at most
//! [`render_threads`] at once and within [`RENDER_TIME_LIMIT`], so that neither a template
//! nor a long history holds the thread that measures, or the signals it watches. A turn that
//! cannot be built is a failed record ([`FailureKind::Prompt`]) naming why, and its
//! conversation ends there: it is never sent in another format.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::config::shape::HistoryLimits;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::record::{FailureKind, Outcome, RequestRecord};
use crate::tokenizer::chat_template::TemplateError;

/// The longest one render of the chat template may take: its fuel ends a render long before
/// on any machine (tens of milliseconds); this bounds what fuel does not count.
pub const RENDER_TIME_LIMIT: Duration = Duration::from_secs(10);

/// A render thread's stack: room for the template's nesting limit many times over.
const RENDER_STACK: usize = 8 << 20;

/// Renders at once: half the CPUs (at least one), so renders never take the CPU the
/// measuring thread needs. A render that ran past its time limit keeps its slot until its
/// fuel ends it.
pub fn render_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

fn renders() -> Arc<Semaphore> {
    static RENDERS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    RENDERS
        .get_or_init(|| Arc::new(Semaphore::new(render_threads())))
        .clone()
}

/// Why a turn was not sent.
#[derive(Debug, PartialEq)]
pub enum Unbuilt {
    /// It could not be built: why, for its failed record.
    Failed(String),
    /// The run was aborted while it was being built.
    Cancelled,
}

/// The history of one conversation so far.
#[derive(Default)]
pub struct History {
    /// The plain format's history: the last turn's prompt and its reply.
    text: String,
    messages: Vec<serde_json::Value>,
    /// The messages' text, bytes and tokens.
    bytes: u64,
    tokens: u64,
    /// The last turn's prompt and output tokens (the server's counts): the next turn's
    /// designed cached tokens.
    cached: u64,
}

impl History {
    /// Builds turn `k` of the conversation (`req` holds its new user text) with the history,
    /// within `limits` and the chat template's limits.
    pub async fn turn(
        &mut self,
        req: &mut RequestSpec,
        k: usize,
        client: &Arc<Client>,
        limits: HistoryLimits,
        cancel: &CancellationToken,
    ) -> Result<(), Unbuilt> {
        let bytes = self.bytes.saturating_add(req.prompt.len() as u64);
        let tokens = (self.tokens).saturating_add(req.input_len.unwrap_or(0));
        let over = |what: &str, n: u64, flag: &str, max: u64| {
            Unbuilt::Failed(format!(
                "turn {k}: the conversation's history would hold {n} {what}, more than {flag} {max}; the conversation ends here"
            ))
        };
        if bytes > limits.bytes {
            return Err(over("bytes", bytes, "--max-history-bytes", limits.bytes));
        }
        if tokens > limits.tokens {
            return Err(over(
                "tokens",
                tokens,
                "--max-history-tokens",
                limits.tokens,
            ));
        }
        (self.bytes, self.tokens) = (bytes, tokens);
        let user = serde_json::json!({"role": "user", "content": req.prompt});
        self.messages.push(user);
        let mut history = serde_json::Value::Array(self.messages.clone());
        let mut templated = None;
        if client.chat_template().is_some() {
            let c = client.clone();
            let render = move || {
                let out = c.chat_template().map(|t| t.render(&history));
                (history, out)
            };
            let (back, out) = off_thread(render, RENDER_TIME_LIMIT, cancel)
                .await
                .map_err(|wait| wait.unbuilt(client, k))?;
            history = back;
            match out {
                Some(Ok(prompt)) => templated = Some(prompt),
                Some(Err(e)) => return Err(Unbuilt::Failed(format!("turn {k}: {e}"))),
                None => {}
            }
        }
        if k > 0 || templated.is_some() {
            req.prompt = match templated {
                Some(prompt) => prompt,
                None => format!("{}\n\n{}", self.text, req.prompt),
            };
            req.input_len = None;
        }
        if k > 0 {
            req.messages = Some(history);
        }
        req.designed_cached = Some(self.cached);
        Ok(())
    }

    /// Adds a turn's reply (its `record`; `prompt`: what the turn sent) to the history.
    pub fn reply(&mut self, prompt: String, record: &RequestRecord) {
        let reply = record.generated_text.clone().unwrap_or_default();
        let output = record.output_tokens.unwrap_or(0);
        self.cached = record.prompt_tokens.unwrap_or(0).saturating_add(output);
        self.bytes = self.bytes.saturating_add(reply.len() as u64);
        self.tokens = self.tokens.saturating_add(output);
        self.text = prompt + &reply;
        let assistant = serde_json::json!({"role": "assistant", "content": reply});
        self.messages.push(assistant);
    }
}

/// The record of a turn that could not be built: failed as `prompt` with `why`, at `now_ns`,
/// never sent.
pub fn unbuilt(req: &RequestSpec, scheduled_ns: u64, now_ns: u64, why: String) -> RequestRecord {
    RequestRecord {
        id: req.id,
        warmup: req.warmup,
        scheduled_ns,
        sent_ns: now_ns,
        end_ns: now_ns,
        outcome: Outcome::failed(FailureKind::Prompt, why),
        input_len_requested: req.input_len,
        output_len_requested: Some(req.output_len),
        designed_cached_tokens: req.designed_cached,
        adapter: req.model.clone(),
        ..RequestRecord::default()
    }
}

/// A job's call `k` as sent on an API that takes a prompt: `text` (its own text and the
/// replies it carries) as one user message rendered with the chat template where the client
/// has one, and the result counted with the run's tokenizer where it has one (`None`: words,
/// counted by the caller, or no tokenizer). Both off the measuring thread, as a turn's render
/// is (their cost grows with the upstream replies, text from outside).
pub async fn render_call(
    client: &Arc<Client>,
    text: String,
    k: usize,
    cancel: &CancellationToken,
) -> Result<(String, Option<u64>), Unbuilt> {
    if client.chat_template().is_none() && client.tokenizer().is_none() {
        return Ok((text, None));
    }
    let c = client.clone();
    let work = move || {
        let prompt = match c.chat_template() {
            Some(t) => t.render(&serde_json::json!([{"role": "user", "content": text}]))?,
            None => text,
        };
        let count = c.tokenizer().map(|t| t.count(&prompt) as u64);
        Ok::<_, TemplateError>((prompt, count))
    };
    match off_thread(work, RENDER_TIME_LIMIT, cancel).await {
        Ok(Ok(built)) => Ok(built),
        Ok(Err(e)) => Err(Unbuilt::Failed(format!("call {k}: {e}"))),
        Err(Wait::Cancelled) => Err(Unbuilt::Cancelled),
        Err(wait) => Err(Unbuilt::Failed(format!("call {k}: {}", wait.error(client)))),
    }
}

/// Renders the representative conversation of `ChatTemplate::check` off the measuring
/// thread, within [`RENDER_TIME_LIMIT`]: the run's start-up check of its template (none:
/// nothing to check).
pub async fn check_template(client: &Arc<Client>) -> Result<(), TemplateError> {
    if client.chat_template().is_none() {
        return Ok(());
    }
    let c = client.clone();
    let check = move || c.chat_template().map(|t| t.check());
    let never = CancellationToken::new();
    match off_thread(check, RENDER_TIME_LIMIT, &never).await {
        Ok(Some(Err(e))) => Err(e),
        Ok(_) => Ok(()),
        Err(wait) => Err(wait.error(client)),
    }
}

/// Why [`off_thread`] has no answer.
#[derive(Debug, PartialEq)]
enum Wait {
    TimedOut(Duration),
    /// The thread could not start, or ended without an answer (a panic).
    Lost(String),
    Cancelled,
}

impl Wait {
    fn error(self, client: &Client) -> TemplateError {
        let origin = (client.chat_template()).map_or(String::new(), |t| t.origin().to_string());
        match self {
            Wait::TimedOut(limit) => TemplateError::TimedOut {
                origin,
                seconds: limit.as_secs_f64(),
            },
            Wait::Lost(reason) => TemplateError::Render { origin, reason },
            Wait::Cancelled => TemplateError::Render {
                origin,
                reason: "the run was stopped".into(),
            },
        }
    }

    fn unbuilt(self, client: &Client, k: usize) -> Unbuilt {
        match self {
            Wait::Cancelled => Unbuilt::Cancelled,
            wait => Unbuilt::Failed(format!("turn {k}: {}", wait.error(client))),
        }
    }
}

/// Runs `work` on a thread of its own (one of [`render_threads`] at a time) and waits for it
/// at most `limit`, or until `cancel`. A thread past its limit is left to end by itself
/// (fuel ends a render); nothing waits for it, not even the process's exit.
async fn off_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
    limit: Duration,
    cancel: &CancellationToken,
) -> Result<T, Wait> {
    let permit = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(Wait::Cancelled),
        p = renders().acquire_owned() => p.map_err(|e| Wait::Lost(e.to_string()))?,
    };
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("chat-template".into())
        .stack_size(RENDER_STACK)
        .spawn(move || {
            let _ = tx.send(work());
            drop(permit);
        })
        .map_err(|e| Wait::Lost(format!("cannot start a thread to render it: {e}")))?;
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Wait::Cancelled),
        answer = tokio::time::timeout(limit, rx) => match answer {
            Err(_) => Err(Wait::TimedOut(limit)),
            Ok(Err(_)) => Err(Wait::Lost("its render stopped without an answer".into())),
            Ok(Ok(out)) => Ok(out),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_past_its_time_limit_is_left_behind_not_waited_for() {
        let never = CancellationToken::new();
        let slow = || std::thread::sleep(Duration::from_secs(5));
        let started = std::time::Instant::now();
        let out = off_thread(slow, Duration::from_millis(50), &never).await;
        assert_eq!(out, Err(Wait::TimedOut(Duration::from_millis(50))));
        // It came back at its limit, long before the work's end (a generous margin).
        assert!(started.elapsed() < Duration::from_secs(4));
        // A panic is an answer-less end, not a panic here.
        let out = off_thread(|| panic!("inside"), RENDER_TIME_LIMIT, &never).await;
        assert!(matches!(out, Err(Wait::Lost(_))));
        // Cancelled while waiting.
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(
            off_thread(|| 1, RENDER_TIME_LIMIT, &cancel).await,
            Err(Wait::Cancelled)
        );
        assert_eq!(off_thread(|| 7, RENDER_TIME_LIMIT, &never).await, Ok(7));
    }

    #[tokio::test]
    async fn a_history_past_its_limit_is_a_named_failure_not_a_bigger_body() {
        // 2 MB replies over 40 turns grew request bodies from 4 to 41 MB.
        let cfg = crate::config::RunConfig::default();
        let secrets = crate::measure::client::Secrets::default();
        let client = Client::new(&cfg, &secrets, None, None).unwrap();
        let limits = cfg.load.shape.history_limits();
        let never = CancellationToken::new();
        let reply = RequestRecord {
            generated_text: Some("w ".repeat(1 << 20)),
            output_tokens: Some(1000),
            ..RequestRecord::default()
        };
        let mut history = History::default();
        for k in 0..40 {
            let mut req = RequestSpec {
                prompt: "hello there".into(),
                input_len: Some(2),
                turn: Some(k as u32),
                ..RequestSpec::default()
            };
            match history.turn(&mut req, k, &client, limits, &never).await {
                Ok(()) => {
                    assert!(req.prompt.len() as u64 <= limits.bytes + 64);
                    history.reply(req.prompt, &reply);
                }
                Err(Unbuilt::Failed(why)) => {
                    assert_eq!(k, 8, "{why}");
                    assert!(why.contains("--max-history-bytes 16777216"), "{why}");
                    return;
                }
                Err(Unbuilt::Cancelled) => panic!("cancelled"),
            }
        }
        panic!("forty turns of 2 MB replies went out");
    }

    #[tokio::test]
    async fn the_history_limit_in_tokens_counts_texts_and_replies() {
        let cfg = crate::config::RunConfig::default();
        let secrets = crate::measure::client::Secrets::default();
        let client = Client::new(&cfg, &secrets, None, None).unwrap();
        let limits = HistoryLimits {
            bytes: 1 << 20,
            tokens: 25,
        };
        let reply = RequestRecord {
            generated_text: Some("a b c".into()),
            output_tokens: Some(3),
            prompt_tokens: Some(u64::MAX),
            ..RequestRecord::default()
        };
        let mut history = History::default();
        let never = CancellationToken::new();
        let mut sent = Vec::new();
        for k in 0..5 {
            let mut req = RequestSpec {
                prompt: "one two three four five".into(),
                input_len: Some(5),
                turn: Some(k as u32),
                ..RequestSpec::default()
            };
            match history.turn(&mut req, k, &client, limits, &never).await {
                Ok(()) => {
                    // A server's absurd prompt count saturates, it does not wrap.
                    assert_eq!(req.designed_cached, Some(if k == 0 { 0 } else { u64::MAX }));
                    sent.push(req.prompt.clone());
                    history.reply(req.prompt, &reply);
                }
                Err(Unbuilt::Failed(why)) => {
                    // 5 + 3 + 5 + 3 + 5 + 3 + 5 = 29 > 25: turn 3 is the first past it.
                    assert_eq!(k, 3, "{why}");
                    assert!(why.contains("29 tokens") && why.contains("--max-history-tokens 25"));
                    break;
                }
                Err(Unbuilt::Cancelled) => panic!("cancelled"),
            }
        }
        assert_eq!(sent.len(), 3);
        // Without a template: the plain history format.
        assert_eq!(
            sent[1],
            "one two three four five".to_string() + "a b c\n\none two three four five"
        );
    }
}
