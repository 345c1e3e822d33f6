//! Prompts in words, the built-in simulator's own counting (one token per whitespace-separated
//! word): what `--tokenizer words` (or no `--tokenizer`) builds. Exact under the simulator,
//! only an approximation for a real server.
//!
//! A leaf: the request builders (`mod.rs`, `server.rs`) take their words from here.

use rand::{RngExt, SeedableRng};

use crate::measure::client::RequestSpec;

/// The common English words prompts in words are drawn from.
pub const WORDS: &[&str] = &[
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
];

/// Builds `n` prompts of `input_len` words asking for `output_len` tokens (ids from
/// `first_id`), reproducible from `seed`.
pub fn prompts(
    input_len: u64,
    output_len: u64,
    n: u64,
    first_id: u64,
    seed: u64,
    warmup: bool,
) -> Vec<RequestSpec> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5EED_0F50_4D50);
    (0..n)
        .map(|i| {
            let prompt = text(input_len, &mut rng);
            RequestSpec {
                id: first_id + i,
                prompt,
                messages: None,
                input_len: Some(input_len),
                output_len,
                warmup,
                ..Default::default()
            }
        })
        .collect()
}

/// Gives each of `reqs` the (input, output) lengths `draw` picks, and a prompt of that many
/// words, reproducible from `seed` (`--range-ratio` without a local tokenizer).
pub fn vary(
    reqs: &mut [RequestSpec],
    mut draw: impl FnMut(&mut rand::rngs::StdRng) -> (u64, u64),
    seed: u64,
) {
    let mut len_rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x1E46_7115_0000_0001);
    let mut text_rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5EED_0F50_4D51);
    for r in reqs {
        let (input_len, output_len) = draw(&mut len_rng);
        r.prompt = text(input_len, &mut text_rng);
        r.input_len = Some(input_len);
        r.output_len = output_len;
    }
}

/// `len` words drawn from `rng`, separated by single spaces (exactly `len` tokens under the
/// simulator's counting).
pub fn text(len: u64, rng: &mut rand::rngs::StdRng) -> String {
    let mut out = String::with_capacity((len as usize).saturating_mul(7).min(1 << 20));
    for w in 0..len {
        if w > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.random_range(0..WORDS.len())]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--range-ratio` without a local tokenizer: each prompt's length is drawn within
    /// [L(1 − r), L(1 + r)], the lengths vary, and each prompt has as many words as its
    /// length says; reproducible from the seed.
    #[test]
    fn a_range_ratio_varies_the_words_prompts() {
        use crate::config::{Dataset, WorkloadSpec};
        let spec = WorkloadSpec {
            dataset: Dataset::Random {
                input_len: 100,
                output_len: Some(10),
                range_ratio: 0.5,
            },
            ..WorkloadSpec::default()
        };
        let reqs = crate::workload::build_requests(&spec, None, 200, 0, 9, false).unwrap();
        let lens: Vec<u64> = reqs.iter().map(|r| r.input_len.unwrap()).collect();
        assert!(lens.iter().all(|l| (50..=150).contains(l)), "{lens:?}");
        assert!(lens.iter().any(|l| *l < 75) && lens.iter().any(|l| *l > 125));
        for r in &reqs {
            assert_eq!(r.prompt.split(' ').count() as u64, r.input_len.unwrap());
            assert!((5..=15).contains(&r.output_len), "{}", r.output_len);
        }
        let again = crate::workload::build_requests(&spec, None, 200, 0, 9, false).unwrap();
        assert_eq!(reqs, again);
    }

    #[test]
    fn prompts_are_reproducible_and_have_the_requested_word_count() {
        let a = prompts(12, 128, 3, 0, 1, false);
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].prompt.split(' ').count(), 12);
        assert_eq!(a[2].id, 2);
        let b = prompts(12, 128, 3, 0, 1, false);
        assert_eq!(a[1].prompt, b[1].prompt);
        assert_ne!(a[0].prompt, prompts(12, 128, 1, 0, 2, false)[0].prompt);
    }
}
