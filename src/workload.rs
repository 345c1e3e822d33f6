//! What is sent: builds the run's [`RequestSpec`]s from the workload spec.
//!
//! Until servebench has tokenizers, the `random` dataset builds prompts of `input_len` words
//! drawn (seeded) from a list of common English words; the requested length is recorded as
//! such (`requested`) and the server's own prompt count, when it reports usage, is what the
//! totals use. It does no HTTP and reads no clock.

use rand::{RngExt, SeedableRng};

use crate::client::RequestSpec;
use crate::config::WorkloadSpec;

const WORDS: &[&str] = &[
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

/// Builds `n` prompts (ids from `first_id`), reproducible from `seed`.
pub fn build(
    spec: &WorkloadSpec,
    n: u64,
    first_id: u64,
    seed: u64,
    warmup: bool,
) -> Vec<RequestSpec> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5EED_0F50_4D50);
    (0..n)
        .map(|i| {
            let mut prompt = String::with_capacity(spec.input_len as usize * 7);
            for w in 0..spec.input_len {
                if w > 0 {
                    prompt.push(' ');
                }
                prompt.push_str(WORDS[rng.random_range(0..WORDS.len())]);
            }
            RequestSpec {
                id: first_id + i,
                prompt,
                input_len: Some(spec.input_len),
                output_len: spec.output_len,
                warmup,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_reproducible_and_have_the_requested_word_count() {
        let spec = WorkloadSpec {
            input_len: 12,
            ..WorkloadSpec::default()
        };
        let a = build(&spec, 3, 0, 1, false);
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].prompt.split(' ').count(), 12);
        assert_eq!(a[2].id, 2);
        let b = build(&spec, 3, 0, 1, false);
        assert_eq!(a[1].prompt, b[1].prompt);
        assert_ne!(a[0].prompt, build(&spec, 1, 0, 2, false)[0].prompt);
    }
}
