use std::path::Path;

use super::gguf::tests::build as build_gguf;
use super::gguf::GgufValue;
use super::testutil::{cl100k, real_gguf_tokenizer};
use super::*;

fn s(v: &str) -> GgufValue {
    GgufValue::String(v.to_string())
}

fn err_of(spec: &str) -> String {
    match Tokenizer::load(spec) {
        Ok(t) => panic!("{spec} loaded as {}", t.name()),
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "message is not one line: {msg:?}");
            msg
        }
    }
}

#[test]
fn tiktoken_encodings_count_hello_world() {
    let cl = cl100k();
    assert_eq!(cl.name(), "tiktoken:cl100k_base");
    assert_eq!(cl.encode("hello world"), vec![15339, 1917]);
    assert_eq!(cl.count("hello world"), 2);
    assert_eq!(cl.decode(&cl.encode("héllo wörld 😀")), "héllo wörld 😀");
    assert!(cl.vocab_size() > 100_000 && cl.vocab_size() < 100_300);
    // Special-token text is plain text for tiktoken.
    assert!(cl.count("<|endoftext|>") > 1);
    for name in ["o200k_base", "p50k_base", "r50k_base", "gpt2"] {
        let t = Tokenizer::load(name).unwrap();
        assert_eq!(t.count("hello world"), 2, "{name}");
        assert!(t.name().starts_with("tiktoken:"), "{}", t.name());
    }
}

#[test]
fn offsets_cover_the_text_on_char_boundaries() {
    let cl = cl100k();
    let text = "Ünïcödé 😀 text, 12345!";
    let (ids, offs) = cl.encode_with_offsets(text);
    assert_eq!(ids, cl.encode(text));
    assert_eq!(offs.first().map(|o| o.0), Some(0));
    assert_eq!(offs.last().map(|o| o.1), Some(text.len()));
    for &(a, b) in &offs {
        assert!(a <= b && text.is_char_boundary(a) && text.is_char_boundary(b));
    }
}

#[test]
fn tokenizer_json_round_trip_via_directory() {
    use tokenizers::models::bpe::BPE;
    use tokenizers::pre_tokenizers::whitespace::WhitespaceSplit;
    let vocab: tokenizers::models::bpe::Vocab =
        [("a", 0), ("b", 1), ("c", 2), ("ab", 3), ("abc", 4)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    let merges = vec![
        ("a".to_string(), "b".to_string()),
        ("ab".to_string(), "c".to_string()),
    ];
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .unwrap();
    let mut hf = tokenizers::Tokenizer::new(bpe);
    hf.with_pre_tokenizer(Some(WhitespaceSplit));
    let dir = tempfile::tempdir().unwrap();
    hf.save(dir.path().join("tokenizer.json"), false).unwrap();

    let t = Tokenizer::load(&dir.path().to_string_lossy()).unwrap();
    assert!(t.name().starts_with("hf:"), "{}", t.name());
    assert_eq!(t.encode("abc ab cab"), vec![4, 3, 2, 3]);
    assert_eq!(t.count("abc ab"), 2);
    assert_eq!(t.vocab_size(), 5);
    // And the file itself loads the same way.
    let file = dir.path().join("tokenizer.json");
    let t2 = Tokenizer::load(&file.to_string_lossy()).unwrap();
    assert_eq!(t2.encode("abc"), vec![4]);
}

#[test]
fn errors_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_string_lossy().into_owned();

    let msg = err_of("cl200k_base");
    assert!(msg.contains("unknown tokenizer \"cl200k_base\""), "{msg}");
    assert!(msg.contains("cl100k_base, o200k_base"), "{msg}");

    let missing = p("nope/tokenizer.json");
    let msg = err_of(&missing);
    assert!(msg.contains("not found") && msg.contains(&missing), "{msg}");

    let msg = err_of(&dir.path().to_string_lossy());
    assert!(msg.contains("has no tokenizer.json"), "{msg}");

    std::fs::write(p("bad.json"), "{\"model\": [1, 2,\n").unwrap();
    let msg = err_of(&p("bad.json"));
    assert!(
        msg.contains("bad.json") && msg.contains("not a Hugging Face tokenizer.json"),
        "{msg}"
    );

    std::fs::write(p("wrong.gguf"), b"GGML\x03\x00\x00\x00rest of file").unwrap();
    let msg = err_of(&p("wrong.gguf"));
    assert!(
        msg.contains("wrong.gguf") && msg.contains("corrupt") && msg.contains("magic"),
        "{msg}"
    );

    let full = build_gguf(&[
        ("tokenizer.ggml.model", s("gpt2")),
        (
            "tokenizer.ggml.tokens",
            GgufValue::Array(vec![s("a"), s("b")]),
        ),
    ]);
    // Truncated, and without a .gguf extension: detected by the magic.
    std::fs::write(p("truncated.bin"), &full[..full.len() - 3]).unwrap();
    let msg = err_of(&p("truncated.bin"));
    assert!(
        msg.contains("truncated.bin") && msg.contains("truncated"),
        "{msg}"
    );

    std::fs::write(p("notok.gguf"), build_gguf(&[("general.name", s("x"))])).unwrap();
    let msg = err_of(&p("notok.gguf"));
    assert!(msg.contains("no tokenizer metadata"), "{msg}");

    std::fs::write(
        p("spm.gguf"),
        build_gguf(&[("tokenizer.ggml.model", s("llama"))]),
    )
    .unwrap();
    let msg = err_of(&p("spm.gguf"));
    assert!(
        msg.contains("unsupported tokenizer model \"llama\""),
        "{msg}"
    );

    std::fs::write(
        p("qwen.gguf"),
        build_gguf(&[
            ("tokenizer.ggml.model", s("gpt2")),
            ("tokenizer.ggml.pre", s("qwen2")),
        ]),
    )
    .unwrap();
    let msg = err_of(&p("qwen.gguf"));
    assert!(msg.contains("unsupported pre-tokenizer \"qwen2\""), "{msg}");
}

/// GPT-2's byte → printable char table.
fn byte_chars() -> Vec<char> {
    let mut out = Vec::with_capacity(256);
    let mut extra = 0u32;
    for b in 0u32..256 {
        let printable =
            (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
        if printable {
            out.push(char::from_u32(b).unwrap());
        } else {
            out.push(char::from_u32(256 + extra).unwrap());
            extra += 1;
        }
    }
    out
}

/// A tiny byte-level BPE GGUF: a control token, the 256 byte tokens, and merges that would
/// join digits and build "Ġthe".
fn tiny_gguf(pre: &str) -> Vec<u8> {
    let mut tokens = vec![s("<|endoftext|>")];
    let mut types = vec![GgufValue::I32(3)];
    for c in byte_chars() {
        tokens.push(s(&c.to_string()));
        types.push(GgufValue::I32(1));
    }
    let merged = ["12", "Ġt", "Ġth", "Ġthe"];
    for m in merged {
        tokens.push(s(m));
        types.push(GgufValue::I32(1));
    }
    let merges = ["1 2", "Ġ t", "Ġt h", "Ġth e"].map(s).to_vec();
    build_gguf(&[
        ("tokenizer.ggml.model", s("gpt2")),
        ("tokenizer.ggml.pre", s(pre)),
        ("tokenizer.ggml.tokens", GgufValue::Array(tokens)),
        ("tokenizer.ggml.token_type", GgufValue::Array(types)),
        ("tokenizer.ggml.merges", GgufValue::Array(merges)),
    ])
}

#[test]
fn gguf_byte_level_bpe_with_smollm_and_gpt2_pre() {
    let dir = tempfile::tempdir().unwrap();
    // No .gguf extension: detected by magic.
    let smol = dir.path().join("smol.model");
    std::fs::write(&smol, tiny_gguf("smollm")).unwrap();
    let t = Tokenizer::load(&smol.to_string_lossy()).unwrap();
    assert!(t.name().starts_with("gguf:"), "{}", t.name());
    assert_eq!(t.vocab_size(), 1 + 256 + 4);
    let ids = t.encode("a the 12");
    // "a", " the" (merged), " ", "1", "2": smollm splits every digit alone.
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert_eq!(ids[1], 260, "\" the\" is the last merged token");
    assert_eq!(t.decode(&ids), "a the 12");
    // The control token is matched in text, and is special.
    assert_eq!(t.encode("<|endoftext|>a"), vec![0, 1 + b'a' as u32]);
    assert!(t.is_special(0) && !t.is_special(1));

    let gpt2 = dir.path().join("gpt2.gguf");
    std::fs::write(&gpt2, tiny_gguf("gpt-2")).unwrap();
    let t = Tokenizer::load(&gpt2.to_string_lossy()).unwrap();
    // GPT-2's regex keeps " 12" together, so the "1 2" merge applies.
    let ids = t.encode("a the 12");
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert_eq!(t.decode(&ids), "a the 12");
}

#[test]
fn word_tokens_concatenate_exactly() {
    let cl = cl100k();
    let words = cl.word_tokens();
    assert!(words.spaced.len() > 10_000, "{}", words.spaced.len());
    assert!(words.leading.len() > 10_000, "{}", words.leading.len());
    let mut ids = vec![words.leading[7]];
    ids.extend(words.spaced.iter().step_by(97).copied());
    let text = cl.decode(&ids);
    assert_eq!(cl.encode(&text), ids);
}

#[test]
fn real_gguf_loads_smollm2() {
    let Some(t) = real_gguf_tokenizer() else {
        return;
    };
    assert!(t.name().starts_with("gguf:"));
    assert_eq!(t.vocab_size(), 49_152);
    assert!(t.is_special(1));
    let ids = t.encode("<|im_start|>user");
    assert_eq!((ids.len(), ids[0]), (2, 1), "{ids:?}");
    let text = "Hello world! 123 — ünïcode 😀 日本語";
    assert_eq!(t.decode(&t.encode(text)), text);
}

/// The committed fixture holds the real llama.cpp server's `/tokenize` output for a mixed
/// corpus (regenerate with `scripts/gen_tokenize_fixture.py`); servebench must agree on at
/// least 99% of the texts.
#[test]
fn real_gguf_matches_llama_cpp_tokenize_fixture() {
    let Some(t) = real_gguf_tokenizer() else {
        return;
    };
    // SERVEBENCH_TOKENIZE_FIXTURE points the test at another file of the same format (e.g.
    // one written by `gen_tokenize_fixture.py --stress N`).
    let path = match std::env::var("SERVEBENCH_TOKENIZE_FIXTURE") {
        Ok(p) => std::path::PathBuf::from(p),
        Err(_) => {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2_tokenize.jsonl")
        }
    };
    let body = std::fs::read_to_string(&path).unwrap();
    let mut total = 0usize;
    let mut differ = Vec::new();
    for (n, line) in body.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let text = v["text"].as_str().unwrap();
        let want: Vec<u32> = v["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        total += 1;
        let got = t.encode(text);
        if got != want {
            differ.push(format!(
                "line {}: {text:?}\n  server: {want:?}\n  ours:   {got:?}",
                n + 1
            ));
        }
    }
    assert!(total >= 150, "fixture has only {total} texts");
    let matched = total - differ.len();
    eprintln!(
        "{matched}/{total} texts tokenize exactly as llama.cpp's /tokenize ({:.1}%)",
        100.0 * matched as f64 / total as f64
    );
    for d in &differ {
        eprintln!("{d}");
    }
    assert!(
        matched * 100 >= total * 99,
        "only {matched}/{total} match:\n{}",
        differ.join("\n")
    );
}

/// Random strings over many scripts, whitespace kinds, digits, contractions and specials.
fn random_texts(n: usize, seed: u64) -> Vec<String> {
    let mut state = seed | 1;
    let mut next = move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let ranges: &[(u32, u32)] = &[
        (0x20, 0x7E),
        (0x20, 0x7E),
        (0x20, 0x7E),
        (0xA0, 0x24F),
        (0x370, 0x4FF),
        (0x590, 0x6FF),
        (0x900, 0x97F),
        (0x2000, 0x206F),
        (0x3000, 0x30FF),
        (0x4E00, 0x9FFF),
        (0xAC00, 0xD7A3),
        (0x1D400, 0x1D7FF),
        (0x1F300, 0x1FAFF),
    ];
    let extras = [
        " ",
        "  ",
        "   ",
        "\n",
        "\n\n",
        "\t",
        " \n",
        "\r\n",
        "'s",
        "'ll",
        "'RE",
        "0",
        "42",
        "1999",
        "<|im_start|>",
        "<|endoftext|>",
        "\u{3000}",
        "\u{a0}",
        "...",
    ];
    (0..n)
        .map(|_| {
            let mut s = String::new();
            for _ in 0..1 + next(50) {
                if next(5) == 0 {
                    s.push_str(extras[next(extras.len() as u64) as usize]);
                } else {
                    let (lo, hi) = ranges[next(ranges.len() as u64) as usize];
                    if let Some(c) = char::from_u32(lo + next(u64::from(hi - lo + 1)) as u32) {
                        s.push(c);
                    }
                }
            }
            s
        })
        .collect()
}

#[test]
fn fast_gguf_bpe_agrees_with_the_general_pipeline() {
    let Some(path) = super::testutil::real_gguf_path() else {
        return;
    };
    let Some(fast) = real_gguf_tokenizer() else {
        return;
    };
    let general = Tokenizer::load_gguf_general(&path).unwrap();
    let mut texts = random_texts(3000, 99);
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2_tokenize.jsonl"),
    )
    .unwrap();
    for line in fixture.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        texts.push(v["text"].as_str().unwrap().to_string());
    }
    texts.push("x".repeat(5000) + &" ".repeat(3000) + "end");
    for t in &texts {
        let ids = fast.encode(t);
        assert_eq!(ids, general.encode(t), "{t:?}");
        assert_eq!(fast.count(t), ids.len());
        assert_eq!(fast.encode_with_offsets(t).0, ids);
        assert_eq!(fast.decode(&ids), general.decode(&ids), "{t:?}");
    }
}

#[test]
fn gguf_default_pre_uses_the_general_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("default.gguf");
    std::fs::write(&p, tiny_gguf("default")).unwrap();
    let t = Tokenizer::load(&p.to_string_lossy()).unwrap();
    // `default` splits "12" off as a number piece; the "1 2" merge applies inside it.
    let ids = t.encode("a the 12");
    assert_eq!(t.decode(&ids), "a the 12");
    assert!(ids.contains(&257), "{ids:?}");
}
