//! The model's chat template, for multi-turn conversations sent to a completions-style API
//! (a prompt, not messages): the history is rendered the way the model was trained to read it.
//!
//! Where it is found: `chat_template` (and `eos_token`) in the `tokenizer_config.json` beside
//! a tokenizer.json (or in the directory given), or `tokenizer.chat_template` in a GGUF
//! file's metadata. Tiktoken encodings have none. Templates are Jinja, rendered with
//! minijinja and its Python-compatibility methods (`.strip()`, `.items()`, ...), with
//! `messages`, `add_generation_prompt = true`, `eos_token`, `raise_exception`, and
//! `bos_token` set to "": the server adds its own BOS to a completions prompt, and a BOS in
//! the text would be a second one.
//!
//! A template is code from outside: every render is bounded ([`TemplateLimits`])
//! in work and memory (minijinja's fuel), in output (a writer that refuses past its limit) and
//! in nesting (minijinja's recursion limit), and fails with a [`TemplateError`] naming the
//! template and the limit. Rendering is synchronous: callers that must stay responsive run it
//! on a thread of its own (`drive::history`), which also bounds its time.

use std::path::Path;

use minijinja::{Environment, ErrorKind};

use super::error::FileFault;
use super::gguf;

/// The bounds of one render. Fuel is minijinja's: about one unit an instruction and one per
/// 64 bytes of data a template makes (strings, lists, output); it bounds both the time and
/// the memory of a render.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TemplateLimits {
    /// Fuel of a render besides what the conversation's text buys: a render gets
    /// `base_fuel + text / 4` (room to copy the text 16 times).
    pub base_fuel: u64,
    /// Bytes a render may write besides twice the conversation's text.
    pub base_output: usize,
    /// Nesting (minijinja's units: a loop or condition counts 1, a macro call about 10).
    pub recursion: usize,
}

/// The limits of every render: a million units of fuel (at most 64 MB of data made, tens of
/// milliseconds of work; a real template spends a few thousand on a short conversation), 1 MiB
/// of output besides twice the conversation's text, nesting 200 (real templates nest a few
/// levels).
pub const LIMITS: TemplateLimits = TemplateLimits {
    base_fuel: 1_000_000,
    base_output: 1 << 20,
    recursion: 200,
};

/// A render (or the template's compilation) that failed: one line naming the template.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TemplateError {
    #[error("the chat template of {origin} does not compile: {reason}")]
    Compile { origin: String, reason: String },
    #[error("the chat template of {origin} failed: {reason}")]
    Render { origin: String, reason: String },
    #[error(
        "the chat template of {origin} ran out of fuel (its limit: {fuel} units of work and data)"
    )]
    OutOfFuel { origin: String, fuel: u64 },
    #[error("the chat template of {origin} wrote more than its limit of {limit} bytes")]
    TooLong { origin: String, limit: usize },
    #[error("the chat template of {origin} nests deeper than its limit of {limit} levels")]
    TooDeep { origin: String, limit: usize },
    #[error("the chat template of {origin} took longer than its limit of {seconds} s")]
    TimedOut { origin: String, seconds: f64 },
}

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    eos: String,
    /// Where it came from (a tokenizer_config.json, a GGUF file), for errors.
    origin: String,
    limits: TemplateLimits,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChatTemplate({})", self.origin)
    }
}

impl ChatTemplate {
    /// Compiles `source` (from `origin`) under [`LIMITS`]; nothing is rendered (see
    /// [`ChatTemplate::check`]).
    pub fn new(source: &str, eos: &str, origin: &str) -> Result<ChatTemplate, TemplateError> {
        ChatTemplate::with_limits(source, eos, origin, LIMITS)
    }

    /// As [`ChatTemplate::new`], with other limits.
    pub fn with_limits(
        source: &str,
        eos: &str,
        origin: &str,
        limits: TemplateLimits,
    ) -> Result<ChatTemplate, TemplateError> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.set_recursion_limit(limits.recursion);
        env.add_function("raise_exception", |msg: String| -> Result<String, _> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| TemplateError::Compile {
                origin: origin.to_string(),
                reason: e.to_string(),
            })?;
        Ok(ChatTemplate {
            env,
            eos: eos.to_string(),
            origin: origin.to_string(),
            limits,
        })
    }

    /// Where the template came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Renders a representative conversation (user, assistant, user): what a run does at
    /// start-up, so that a template that cannot render refuses the run before it begins.
    pub fn check(&self) -> Result<String, TemplateError> {
        self.render(&serde_json::json!([
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ]))
    }

    /// The prompt for `messages` (a JSON array of `{role, content}`), ending with the
    /// assistant's turn opened (`add_generation_prompt`), within the template's limits.
    pub fn render(&self, messages: &serde_json::Value) -> Result<String, TemplateError> {
        let text = text_bytes(messages);
        let fuel = (self.limits.base_fuel).saturating_add(text / 4);
        let limit = (self.limits.base_output)
            .saturating_add(usize::try_from(text.saturating_mul(2)).unwrap_or(usize::MAX));
        let named = |reason: String| TemplateError::Render {
            origin: self.origin.clone(),
            reason,
        };
        // The environment is shared (Arcs); each render gets the fuel its conversation buys.
        let mut env = self.env.clone();
        env.set_fuel(Some(fuel));
        let t = env.get_template("chat").map_err(|e| named(e.to_string()))?;
        let mut out = Bounded {
            out: Vec::new(),
            limit,
            over: false,
        };
        let rendered = t.render_captured_to(
            minijinja::context! {
                messages => minijinja::Value::from(minijinja::value::Serde(messages)),
                add_generation_prompt => true,
                bos_token => "",
                eos_token => self.eos.as_str(),
            },
            &mut out,
        );
        let origin = || self.origin.clone();
        match rendered {
            Ok(_) => String::from_utf8(out.out).map_err(|e| named(e.to_string())),
            Err(_) if out.over => Err(TemplateError::TooLong {
                origin: origin(),
                limit,
            }),
            Err(e) if e.kind() == ErrorKind::OutOfFuel => Err(TemplateError::OutOfFuel {
                origin: origin(),
                fuel,
            }),
            Err(e) if e.detail() == Some("recursion limit exceeded") => {
                Err(TemplateError::TooDeep {
                    origin: origin(),
                    limit: self.limits.recursion,
                })
            }
            Err(e) => Err(named(e.to_string())),
        }
    }

    /// The template that goes with tokenizer spec `spec` (a `--tokenizer` value), if its
    /// source carries one, compiled. `Err`: it carries one that does not compile.
    pub fn for_tokenizer(spec: &str) -> Result<Option<ChatTemplate>, TemplateError> {
        let path = Path::new(spec);
        let (found, origin) = if path.is_dir() {
            let config = path.join("tokenizer_config.json");
            (from_config(&config), config)
        } else if gguf::has_gguf_magic(path).unwrap_or(false) {
            (Ok(from_gguf(path)), path.to_path_buf())
        } else if path.is_file() {
            let config = path.with_file_name("tokenizer_config.json");
            (from_config(&config), config)
        } else {
            (Ok(None), path.to_path_buf())
        };
        let origin = origin.display().to_string();
        let found = found.map_err(|fault| TemplateError::Compile {
            origin: origin.clone(),
            reason: fault.to_string(),
        })?;
        found
            .map(|(source, eos)| ChatTemplate::new(&source, &eos, &origin))
            .transpose()
    }
}

/// The bytes of text in a JSON value (its strings' lengths, keys included).
fn text_bytes(v: &serde_json::Value) -> u64 {
    match v {
        serde_json::Value::String(s) => s.len() as u64,
        serde_json::Value::Array(a) => a.iter().map(text_bytes).sum(),
        serde_json::Value::Object(o) => (o.iter())
            .map(|(k, v)| k.len() as u64 + text_bytes(v))
            .sum(),
        _ => 8,
    }
}

/// A render's output, refused past `limit` bytes (before they are kept).
struct Bounded {
    out: Vec<u8>,
    limit: usize,
    over: bool,
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.limit.saturating_sub(self.out.len()) {
            self.over = true;
            return Err(std::io::Error::other("over the output limit"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// (template, EOS text) from a Hugging Face tokenizer_config.json: `chat_template` is a
/// string, or a list of `{name, template}` of which "default" (else the first) is used.
/// `Ok(None)`: no such file, or no template in it; `Err`: a file that cannot be read as one
/// (its template is never silently left out).
fn from_config(path: &Path) -> Result<Option<(String, String)>, FileFault> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(FileFault::Unreadable(e)),
    };
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(FileFault::NotJson)?;
    let source = match v.get("chat_template") {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(list)) => {
            let pick = (list.iter())
                .find(|t| t.get("name").and_then(|x| x.as_str()) == Some("default"))
                .or(list.first());
            match pick.and_then(|p| p.get("template")?.as_str()) {
                Some(t) => t.to_string(),
                None => return Err(FileFault::TemplateListWithout),
            }
        }
        Some(_) => return Err(FileFault::TemplateNotText),
    };
    let eos = match v.get("eos_token") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(o) => (o.get("content").and_then(|c| c.as_str()))
            .unwrap_or_default()
            .to_string(),
        None => String::new(),
    };
    Ok(Some((source, eos)))
}

/// (template, EOS text) from a GGUF file's metadata.
fn from_gguf(path: &Path) -> Option<(String, String)> {
    let meta = gguf::read_metadata(path).ok()?;
    let source = meta.get_str("tokenizer.chat_template")?.to_string();
    let eos = (meta.get("tokenizer.ggml.eos_token_id"))
        .and_then(|id| id.as_i64())
        .and_then(|id| {
            let tokens = meta.get("tokenizer.ggml.tokens")?.as_array()?;
            tokens.get(usize::try_from(id).ok()?)?.as_str()
        })
        .unwrap_or_default()
        .to_string();
    Some((source, eos))
}

#[cfg(test)]
mod tests;
