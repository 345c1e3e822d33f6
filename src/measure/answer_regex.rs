//! The whole-match check of a regex answer, within a work budget: a pattern the limits
//! accept can still cost O(pattern × answer) to search (`[01]*1[01]{10000}` against 1 MB of
//! `0`s and `1`s: 74-90 s of CPU with the `regex` crate, which falls back to its NFA engine
//! when its lazy DFA thrashes). [`WholeMatch`] searches with a lazy DFA whose state cache is
//! bounded ([`DFA_CACHE_BYTES`]) and may be rebuilt at most [`MAX_CACHE_CLEARS`] times, so
//! the states it builds are bounded whatever the answer; when it gives up (or cannot be
//! built, as for a Unicode word boundary), an NFA search runs only when the pattern's states
//! × the answer's bytes stay within [`MAX_NFA_WORK`]. Past both, the answer is over budget:
//! [`OverBudget`], never a stall (`output_check.rs` makes it `unchecked`). Pure, no I/O.

use regex_automata::hybrid::dfa::DFA;
use regex_automata::nfa::thompson::{self, pikevm::PikeVM, WhichCaptures, NFA};
use regex_automata::{Anchored, Input};

use crate::config::guided::MAX_COMPILED_BYTES;

/// The most bytes of lazy DFA states held for one search (docs/reliability.md, limits).
pub const DFA_CACHE_BYTES: usize = 2 << 20;

/// The most times one search may clear its DFA cache and build states again before it
/// gives up: at most (this + 1) × [`DFA_CACHE_BYTES`] of states built per answer.
pub const MAX_CACHE_CLEARS: usize = 8;

/// The most NFA work of the fallback search: the pattern's NFA states × the answer's bytes
/// (about 0.1-0.5 s of CPU at its worst).
pub const MAX_NFA_WORK: u64 = 50_000_000;

/// The search of an answer went over its budget: what was spent, for the record's `why`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OverBudget(pub String);

/// A pattern compiled for the budgeted whole match (anchored at both ends), once per run.
pub struct WholeMatch {
    /// `None`: the lazy DFA cannot run this pattern (a Unicode word boundary).
    dfa: Option<DFA>,
    nfa: PikeVM,
    states: u64,
}

impl WholeMatch {
    /// `pattern` (already accepted by `config::guided::Pattern`) compiled; `None` when it
    /// does not compile here (it would then not have been accepted: the check says so).
    pub fn new(pattern: &str) -> Option<WholeMatch> {
        let nfa: NFA = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(MAX_COMPILED_BYTES))
                    .which_captures(WhichCaptures::None),
            )
            .build(&format!(r"\A(?:{pattern})\z"))
            .ok()?;
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .cache_capacity(DFA_CACHE_BYTES)
                    .skip_cache_capacity_check(true)
                    .minimum_cache_clear_count(Some(MAX_CACHE_CLEARS))
                    .minimum_bytes_per_state(None),
            )
            .build_from_nfa(nfa.clone())
            .ok();
        let states = nfa.states().len() as u64;
        let nfa = PikeVM::new_from_nfa(nfa).ok()?;
        Some(WholeMatch { dfa, nfa, states })
    }

    /// Whether the whole of `text` matches, or [`OverBudget`] when neither search fits its
    /// budget.
    pub fn matches(&self, text: &str) -> Result<bool, OverBudget> {
        let input = Input::new(text).anchored(Anchored::Yes);
        let gave_up = match &self.dfa {
            Some(dfa) => {
                let mut cache = dfa.create_cache();
                match dfa.try_search_fwd(&mut cache, &input) {
                    Ok(found) => return Ok(found.is_some()),
                    Err(e) => format!("the lazy DFA gave up ({e})"),
                }
            }
            None => "the lazy DFA cannot run the pattern".to_string(),
        };
        let work = self.states.saturating_mul(text.len() as u64);
        if work > MAX_NFA_WORK {
            return Err(OverBudget(format!(
                "over the check's budget: {gave_up}, and an NFA search of {} states over {} bytes is past {MAX_NFA_WORK}",
                self.states,
                text.len()
            )));
        }
        let mut cache = self.nfa.create_cache();
        Ok(self.nfa.is_match(&mut cache, input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Ordinary patterns match as the `regex` crate does; the hostile one against a
    /// megabyte is over budget within a second's work, not the minutes of a plain search;
    /// a pattern the lazy DFA cannot run still matches a short answer by the NFA.
    #[test]
    fn whole_matches_are_found_and_hostile_searches_are_bounded() {
        let email = WholeMatch::new(r"\w+@\w+\.com\n").unwrap();
        assert_eq!(email.matches("ada@xy.com\n"), Ok(true));
        assert_eq!(email.matches("ada@xy.com\n!"), Ok(false));
        assert_eq!(email.matches("!ada@xy.com\n"), Ok(false));
        let long = format!("{}@x.com\n", "a".repeat(1 << 20));
        assert_eq!(email.matches(&long), Ok(true));
        let alt = WholeMatch::new("a|ab").unwrap();
        assert_eq!(
            alt.matches("ab"),
            Ok(true),
            "a whole match, not the leftmost-first one"
        );

        let hostile = WholeMatch::new("[01]*1[01]{10000}").unwrap();
        let text: String = (0..1_000_000)
            .map(|i: u64| {
                if (i * 2_654_435_761) % 7 < 3 {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        let t0 = Instant::now();
        let why = hostile.matches(&text).unwrap_err().0;
        assert!(why.contains("budget"), "{why}");
        // Generous: the bounded work takes milliseconds; a plain search takes minutes.
        assert!(t0.elapsed().as_secs() < 20, "{:?}", t0.elapsed());
        let short = format!("1{}", "0".repeat(10_000));
        assert_eq!(hostile.matches(&short), Ok(true));

        let word = WholeMatch::new(r"\bé\w+\b").unwrap();
        assert_eq!(word.matches("été"), Ok(true));
        assert_eq!(word.matches("ét é"), Ok(false));
    }
}
