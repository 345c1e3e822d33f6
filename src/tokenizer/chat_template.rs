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

use std::path::Path;

use minijinja::{Environment, ErrorKind};

use super::gguf;

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    eos: String,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChatTemplate")
    }
}

impl ChatTemplate {
    /// Compiles `source`; checks it renders a two-turn conversation.
    pub fn new(source: &str, eos: &str) -> Result<ChatTemplate, String> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> Result<String, _> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| e.to_string())?;
        let t = ChatTemplate {
            env,
            eos: eos.to_string(),
        };
        t.render(&serde_json::json!([
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ]))?;
        Ok(t)
    }

    /// The prompt for `messages` (a JSON array of `{role, content}`), ending with the
    /// assistant's turn opened (`add_generation_prompt`).
    pub fn render(&self, messages: &serde_json::Value) -> Result<String, String> {
        let t = self.env.get_template("chat").map_err(|e| e.to_string())?;
        t.render(minijinja::context! {
            messages => minijinja::Value::from(minijinja::value::Serde(messages)),
            add_generation_prompt => true,
            bos_token => "",
            eos_token => self.eos.as_str(),
        })
        .map_err(|e| e.to_string())
    }

    /// The template that goes with tokenizer spec `spec` (a `--tokenizer` value), if its
    /// source carries one. `Err`: it carries one that does not compile or render.
    pub fn for_tokenizer(spec: &str) -> Result<Option<ChatTemplate>, String> {
        let path = Path::new(spec);
        let found = if path.is_dir() {
            from_config(&path.join("tokenizer_config.json"))
        } else if gguf::has_gguf_magic(path).unwrap_or(false) {
            from_gguf(path)
        } else if path.is_file() {
            from_config(&path.with_file_name("tokenizer_config.json"))
        } else {
            None
        };
        found
            .map(|(source, eos)| ChatTemplate::new(&source, &eos))
            .transpose()
            .map_err(|e| format!("the chat template of {spec}: {e}"))
    }
}

/// (template, EOS text) from a Hugging Face tokenizer_config.json: `chat_template` is a
/// string, or a list of `{name, template}` of which "default" (else the first) is used.
fn from_config(path: &Path) -> Option<(String, String)> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let source = match v.get("chat_template")? {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(list) => {
            let pick = (list.iter())
                .find(|t| t.get("name").and_then(|x| x.as_str()) == Some("default"))
                .or(list.first())?;
            pick.get("template")?.as_str()?.to_string()
        }
        _ => return None,
    };
    let eos = match v.get("eos_token") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(o) => (o.get("content").and_then(|c| c.as_str()))
            .unwrap_or_default()
            .to_string(),
        None => String::new(),
    };
    Some((source, eos))
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
mod tests {
    use super::*;

    /// A ChatML template as Hugging Face models ship it, with Python string methods.
    const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + \
        '\\n' + message['content'].strip() + '<|im_end|>' + '\\n' }}{% endfor %}\
        {% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

    #[test]
    fn renders_the_history_with_the_assistant_turn_open() {
        let t = ChatTemplate::new(CHATML, "<|im_end|>").unwrap();
        let out = t
            .render(&serde_json::json!([
                {"role": "user", "content": " hi "},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "more"},
            ]))
            .unwrap();
        assert_eq!(
            out,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n\
             <|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn config_files_give_template_and_eos_and_bad_templates_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("tokenizer_config.json");
        let conf = serde_json::json!({
            "chat_template": [{"name": "tool_use", "template": "x"},
                              {"name": "default", "template": "{{ messages[0]['content'] }}{{ eos_token }}"}],
            "eos_token": {"content": "</s>"},
        });
        std::fs::write(&cfg, conf.to_string()).unwrap();
        let spec = dir.path().display().to_string();
        let t = ChatTemplate::for_tokenizer(&spec).unwrap().unwrap();
        let out = t.render(&serde_json::json!([{"role": "user", "content": "q"}]));
        assert_eq!(out.unwrap(), "q</s>");
        // A template that raises on every conversation is refused by name.
        let raising = "{{ raise_exception('roles must alternate') }}";
        std::fs::write(
            &cfg,
            serde_json::json!({ "chat_template": raising }).to_string(),
        )
        .unwrap();
        let err = ChatTemplate::for_tokenizer(&spec).unwrap_err();
        assert!(
            err.contains("roles must alternate") && err.contains(&spec),
            "{err}"
        );
        // No config, or no template in it: none.
        std::fs::write(&cfg, "{}").unwrap();
        assert!(ChatTemplate::for_tokenizer(&spec).unwrap().is_none());
        assert!(ChatTemplate::for_tokenizer("cl100k_base")
            .unwrap()
            .is_none());
    }
}
