//! Times prompt building: one 128,000-token `book` prompt and 4,096 `book` prompts of 80
//! tokens (each including the one-time encoding of the book), plus the same for `random`.
//!
//! cargo run --release --example dataset_speed -- <gguf-path | tokenizer.json | tiktoken-name> [book.txt]
//!
//! Without a book file it writes a deterministic pseudo-English text of about 170,000 tokens
//! to a temporary file. The tokenizer load is timed separately and excluded.

use std::path::PathBuf;
use std::time::Instant;

use servebench::config::Dataset;
use servebench::tokenizer::Tokenizer;
use servebench::workload::dataset::build;

fn pseudo_book(words: usize) -> String {
    const W: &[&str] = &[
        "the",
        "of",
        "and",
        "to",
        "in",
        "a",
        "is",
        "was",
        "for",
        "on",
        "that",
        "with",
        "river",
        "house",
        "winter",
        "letter",
        "captain",
        "morning",
        "garden",
        "silence",
        "promise",
        "journey",
        "window",
        "mountain",
        "station",
        "whisper",
        "evening",
        "kingdom",
        "lantern",
        "harbour",
        "merchant",
        "quietly",
        "suddenly",
        "never",
        "always",
        "beneath",
        "across",
        "remembered",
        "wondered",
        "carried",
        "opened",
        "followed",
        "answered",
        "café",
        "Zürich",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let mut out = String::with_capacity(words * 7);
    for i in 0..words {
        match next(40) {
            0 => out.push_str(&next(100_000).to_string()),
            _ => out.push_str(W[next(W.len() as u64) as usize]),
        }
        out.push_str(match (i % 13, next(20)) {
            (12, 0) => ".\n\n",
            (12, _) => ". ",
            (_, 0) => ", ",
            _ => " ",
        });
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let spec = args
        .next()
        .ok_or("usage: dataset_speed <gguf-path | tokenizer.json | tiktoken-name> [book.txt]")?;
    let t = Instant::now();
    let tok = Tokenizer::load(&spec)?;
    println!(
        "tokenizer {} loaded in {:.3} s (excluded)",
        tok.name(),
        t.elapsed().as_secs_f64()
    );

    let _tmp;
    let book: PathBuf = match args.next() {
        Some(p) => PathBuf::from(p),
        None => {
            let dir = std::env::temp_dir().join(format!("servebench-speed-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let p = dir.join("book.txt");
            std::fs::write(&p, pseudo_book(135_000))?;
            _tmp = TempDir(dir);
            p
        }
    };
    let text = std::fs::read_to_string(&book)?;
    println!(
        "book {}: {} bytes, {} tokens",
        book.display(),
        text.len(),
        tok.count(&text)
    );

    let t = Instant::now();
    let words = tok.word_tokens();
    println!(
        "word tokens ({} leading, {} spaced) found in {:.3} s (once per tokenizer, used by random/prefix)",
        words.leading.len(),
        words.spaced.len(),
        t.elapsed().as_secs_f64()
    );

    let cases = [
        (
            "book   1 x 128000",
            Dataset::Book {
                path: book.clone(),
                input_len: 128_000,
                output_len: Some(128),
                range_ratio: 0.0,
            },
            1,
        ),
        (
            "book   4096 x 80",
            Dataset::Book {
                path: book.clone(),
                input_len: 80,
                output_len: Some(128),
                range_ratio: 0.0,
            },
            4096,
        ),
        (
            "book   64 x 10000",
            Dataset::Book {
                path: book.clone(),
                input_len: 10_000,
                output_len: Some(128),
                range_ratio: 0.0,
            },
            64,
        ),
        (
            "random 1 x 128000",
            Dataset::Random {
                input_len: 128_000,
                output_len: Some(128),
                range_ratio: 0.0,
            },
            1,
        ),
        (
            "random 4096 x 80",
            Dataset::Random {
                input_len: 80,
                output_len: Some(128),
                range_ratio: 0.0,
            },
            4096,
        ),
    ];
    for (label, spec, n) in cases {
        let t = Instant::now();
        let prompts = build(&spec, &tok, n, 1)?;
        let secs = t.elapsed().as_secs_f64();
        let exact = prompts
            .iter()
            .all(|p| tok.count(&p.text) as u64 == p.input_len);
        println!(
            "{label:<22} {secs:>8.3} s   ({} prompts, all exact: {exact})",
            prompts.len()
        );
    }
    Ok(())
}

/// Removes the temporary book directory on exit.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
