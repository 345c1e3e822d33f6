//! Tests of the chat template: rendering, where it is found, and the bounds of every render
//! (a template is code from outside), with a fuzz property over random templates.

use super::*;

use proptest::prelude::*;

/// A ChatML template as Hugging Face models ship it, with Python string methods.
const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + \
    '\\n' + message['content'].strip() + '<|im_end|>' + '\\n' }}{% endfor %}\
    {% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

fn three() -> serde_json::Value {
    serde_json::json!([
        {"role": "user", "content": " hi "},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "more"},
    ])
}

/// `n` alternating messages of `bytes` bytes each.
fn conversation(n: usize, bytes: usize) -> serde_json::Value {
    let m = (0..n).map(|i| {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        serde_json::json!({"role": role, "content": "w ".repeat(bytes / 2)})
    });
    serde_json::Value::Array(m.collect())
}

#[test]
fn renders_the_history_with_the_assistant_turn_open() {
    let t = ChatTemplate::new(CHATML, "<|im_end|>", "test").unwrap();
    assert_eq!(
        t.render(&three()).unwrap(),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n\
         <|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n"
    );
    assert!(t.check().is_ok());
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
    assert!(t.origin().ends_with("tokenizer_config.json"));
    // A template that raises on every conversation fails the start-up check by name.
    let raising = "{{ raise_exception('roles must alternate') }}";
    let conf = serde_json::json!({ "chat_template": raising });
    std::fs::write(&cfg, conf.to_string()).unwrap();
    let t = ChatTemplate::for_tokenizer(&spec).unwrap().unwrap();
    let err = t.check().unwrap_err().to_string();
    assert!(
        err.contains("roles must alternate") && err.contains(&spec),
        "{err}"
    );
    // One that does not compile is refused when it is read.
    std::fs::write(&cfg, r#"{"chat_template": "{% for %}"}"#).unwrap();
    let err = ChatTemplate::for_tokenizer(&spec).unwrap_err().to_string();
    assert!(
        err.contains("does not compile") && err.contains(&spec),
        "{err}"
    );
    // No config, or no template in it: none.
    std::fs::write(&cfg, "{}").unwrap();
    assert!(ChatTemplate::for_tokenizer(&spec).unwrap().is_none());
    std::fs::remove_file(&cfg).unwrap();
    assert!(ChatTemplate::for_tokenizer(&spec).unwrap().is_none());
    assert!(ChatTemplate::for_tokenizer("cl100k_base")
        .unwrap()
        .is_none());
}

#[test]
fn a_config_that_is_not_one_is_named_not_skipped() {
    // It was skipped in silence: the conversation went out in the plain format.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tokenizer_config.json");
    let spec = dir.path().display().to_string();
    for bad in [r#"{"chat_template": "#, r#"{"chat_template": 5}"#] {
        std::fs::write(&cfg, bad).unwrap();
        let err = ChatTemplate::for_tokenizer(&spec).unwrap_err().to_string();
        assert!(err.contains(&spec) && !err.contains('\n'), "{err}");
    }
}

#[test]
fn every_render_is_bounded_in_work_data_output_and_nesting() {
    let t = |src: &str| ChatTemplate::new(src, "", "hostile.json").unwrap();
    let named = |e: &TemplateError| {
        let s = e.to_string();
        assert!(s.contains("hostile.json") && !s.contains('\n'), "{s}");
    };
    // Nested loops of 10^10 steps: out of fuel (it froze the client for ever).
    let looping = t(
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}\
                     {% endfor %}{% endfor %}",
    );
    let e = looping.render(&three()).unwrap_err();
    assert!(matches!(e, TemplateError::OutOfFuel { .. }), "{e}");
    named(&e);
    // A string doubled 40 times (a 3.2 GB allocation aborted the client): the data it makes
    // is paid for before it is made.
    let doubling = t("{% set ns = namespace(s='x') %}{% for i in range(40) %}\
                      {% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}");
    let e = doubling.render(&three()).unwrap_err();
    assert!(matches!(e, TemplateError::OutOfFuel { .. }), "{e}");
    assert!(t("{{ 'x' * 10000000000 }}").render(&three()).is_err());
    // Output past the limit (1 MiB besides twice the conversation's text).
    let e = t("{{ 'x' * 2000000 }}").render(&three()).unwrap_err();
    assert!(matches!(e, TemplateError::TooLong { .. }), "{e}");
    named(&e);
    // Endless recursion.
    let e = t("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
        .render(&three())
        .unwrap_err();
    assert!(
        matches!(e, TemplateError::TooDeep { limit: 200, .. }),
        "{e}"
    );
    named(&e);
    // A template that raises at turn 2 (its second user message) renders turn 1.
    let raising = t(
        "{% if messages|length > 2 %}{{ raise_exception('no second turn') }}\
                     {% endif %}{{ messages[0]['content'] }}",
    );
    assert_eq!(raising.render(&conversation(1, 4)).unwrap(), "w w ");
    let e = raising.render(&three()).unwrap_err();
    assert!(e.to_string().contains("no second turn"), "{e}");
    named(&e);
}

#[test]
fn the_fuel_grows_with_the_conversation_so_real_histories_render() {
    // 40 turns of 200 KiB each (8 MiB): ChatML renders it within its fuel and output.
    let t = ChatTemplate::new(CHATML, "", "chatml").unwrap();
    let out = t.render(&conversation(40, 200 << 10)).unwrap();
    assert!(out.len() > 8_000_000, "{}", out.len());
}

/// A template from a small grammar of minijinja's constructs: loops, conditions, filters,
/// string concatenation and repetition, namespaces, macros (some recursive).
fn template() -> impl Strategy<Value = String> {
    let count = prop_oneof![
        Just(0u64),
        Just(3),
        Just(1000),
        Just(100_000),
        Just(u32::MAX as u64)
    ];
    let leaf = prop_oneof![
        Just("'ab'".to_string()),
        Just("messages|length".to_string()),
        Just("messages|tojson".to_string()),
        Just("ns.s".to_string()),
        Just("message['content']".to_string()),
        count.clone().prop_map(|n| format!("range({n})|join(',')")),
        count.clone().prop_map(|n| format!("'xyz' * {n}")),
    ];
    let expr = leaf.prop_recursive(4, 16, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) ~ ({b})")),
            inner
                .clone()
                .prop_map(|a| format!("(({a})|string).upper()")),
            inner
                .clone()
                .prop_map(|a| format!("({a})|replace('a', 'aaaaaaaa')")),
            inner
                .clone()
                .prop_map(|a| format!("(({a})|string).strip()")),
            inner
                .clone()
                .prop_map(|a| format!("[{a}, {a}]|join(({a})|string)")),
            inner.prop_map(|a| format!("({a})|list|sort|length")),
        ]
    });
    let stmt = expr.prop_map(|e| format!("{{{{ {e} }}}}")).prop_recursive(3, 24, 3, |inner| {
        let count = prop_oneof![Just(2u64), Just(50), Just(100_000)];
        prop_oneof![
            (count, inner.clone()).prop_map(|(n, b)| format!("{{% for i in range({n}) %}}{b}{{% endfor %}}")),
            inner.clone().prop_map(|b| format!("{{% for message in messages %}}{b}{{% endfor %}}")),
            inner.clone().prop_map(|b| format!("{{% if messages|length > 1 %}}{b}{{% else %}}z{{% endif %}}")),
            inner.clone().prop_map(|b| format!("{{% set ns.s = ns.s ~ ns.s %}}{b}")),
            inner.clone().prop_map(|b| format!("{{% macro m(k) %}}{b}{{% if k < 1000 %}}{{{{ m(k + 1) }}}}{{% endif %}}{{% endmacro %}}{{{{ m(0) }}}}")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("{a}{b}")),
        ]
    });
    stmt.prop_map(|s| format!("{{% set ns = namespace(s='q') %}}{s}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random templates rendered under small limits never panic, never write more than
    /// their output limit, and finish within their fuel (a hang would fail the time check,
    /// which only a render without fuel could reach).
    #[test]
    fn random_templates_render_within_their_limits(
        source in template(),
        turns in 1usize..6,
        bytes in 0usize..4000,
    ) {
        let limits = TemplateLimits { base_fuel: 20_000, base_output: 4096, recursion: 50 };
        let Ok(t) = ChatTemplate::with_limits(&source, "</s>", "fuzz", limits) else {
            return Ok(());
        };
        let messages = conversation(turns, bytes);
        let limit = limits.base_output + 2 * text_bytes(&messages) as usize;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || { let _ = tx.send(t.render(&messages)); })
            .unwrap();
        let rendered = rx.recv_timeout(std::time::Duration::from_secs(60));
        prop_assert!(rendered.is_ok(), "no answer within a minute: {}", source);
        match rendered.unwrap() {
            Ok(out) => prop_assert!(out.len() <= limit, "{} > {}", out.len(), limit),
            Err(e) => {
                let s = e.to_string();
                prop_assert!(s.contains("fuzz") && !s.contains('\n'), "{}", s);
            }
        }
    }
}
