//! vLLM's guided-decoding workloads besides JSON: every answer asked to match a
//! regular expression ([`Pattern`], `--structured-output regex`), to be one of a list of
//! choices (`--structured-output choice`), or to follow a grammar (`--structured-output
//! grammar`), sent in vLLM's `structured_outputs` request field (`regex`, `choice`,
//! `grammar`). The built-in pattern, choices and grammar; the reading and bounding of the
//! user's ([`Pattern::new`], [`choices`], [`choices_from_text`], [`grammar_from_text`]: a one-line error naming the
//! flag, and the file, out). What is checked of an answer is `measure::output_check`'s: the
//! whole answer matches the pattern, or is exactly one choice; a grammar answer is not
//! checked. Pure values, no I/O.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::ConfigError;

/// The longest pattern taken, in bytes (docs/reliability.md, limits).
pub const MAX_PATTERN_BYTES: usize = 16 * 1024;

/// The most memory one compiled pattern may take, in bytes (the `regex` crate's size limit).
pub const MAX_COMPILED_BYTES: usize = 1 << 20;

/// The most choices, and the longest choice in bytes.
pub const MAX_CHOICES: usize = 1024;
pub const MAX_CHOICE_BYTES: usize = 1024;

/// The most bytes of a grammar file (as of a schema or tools file, whose bound `cli/plan.rs`
/// reads it under: it is sent in every request's body).
pub const MAX_GRAMMAR_FILE_BYTES: u64 = 1 << 20;

/// The built-in pattern: an e-mail address of word characters at a `.com` domain, then a
/// newline (the shape of vLLM's structured-output benchmark's `regex` dataset).
pub const BUILTIN_PATTERN: &str = r"\w+@\w+\.com\n";

/// The built-in choices: a sentiment (as vLLM's benchmark's `choice` dataset).
pub const BUILTIN_CHOICES: [&str; 2] = ["Positive", "Negative"];

/// The built-in grammar: a small SQL query in the GBNF/EBNF that llama.cpp, xgrammar and
/// llguidance take.
pub const BUILTIN_GRAMMAR: &str = r#"root ::= query
query ::= "SELECT " columns " FROM " table where ";"
columns ::= column | column ", " columns
column ::= "id" | "name" | "email"
table ::= "users" | "orders"
where ::= "" | " WHERE " column " = " number
number ::= [1-9] [0-9]*
"#;

/// A regular expression, compiled once (anchored at both ends: it matches a whole answer),
/// kept with its text. Serialized as its text; two are equal when their texts are.
#[derive(Clone)]
pub struct Pattern {
    text: String,
    whole: regex::Regex,
}

impl Pattern {
    /// `text` compiled, or the error naming `flag`: longer than [`MAX_PATTERN_BYTES`], does
    /// not compile (the `regex` crate's syntax: no look-around, no backreference), or
    /// compiles to more than [`MAX_COMPILED_BYTES`].
    pub fn new(text: &str, flag: &str) -> Result<Self, ConfigError> {
        let bad = |why: String| ConfigError::invalid(flag, why);
        if text.is_empty() {
            return Err(bad("the pattern is empty".into()));
        }
        if text.len() > MAX_PATTERN_BYTES {
            return Err(bad(format!(
                "the pattern is {} bytes, longer than {MAX_PATTERN_BYTES}",
                text.len()
            )));
        }
        // The pattern alone first: wrapped, `a)|(b` would parse as a different pattern.
        regex_syntax::Parser::new()
            .parse(text)
            .map_err(|e| bad(format!("the pattern does not compile: {}", one_line(&e))))?;
        let whole = regex::RegexBuilder::new(&format!(r"\A(?:{text})\z"))
            .size_limit(MAX_COMPILED_BYTES)
            .build()
            .map_err(|e| bad(format!("the pattern does not compile: {}", one_line(&e))))?;
        Ok(Pattern {
            text: text.to_string(),
            whole,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the whole of `answer` matches.
    pub fn matches_whole(&self, answer: &str) -> bool {
        self.whole.is_match(answer)
    }
}

/// A `regex` or `regex-syntax` error in one line: its own last line (`error: unclosed
/// group`), or the size limit's sentence.
fn one_line(e: &impl fmt::Display) -> String {
    let text = e.to_string();
    let last = text.lines().rev().find(|l| !l.trim().is_empty());
    let line = last.unwrap_or("").trim();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({:?})", self.text)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Pattern::new(&text, "pattern").map_err(serde::de::Error::custom)
    }
}

/// The choices of `--structured-output-choices` (`None`: the built-in ones): each non-empty,
/// none repeated, at most [`MAX_CHOICES`] of at most [`MAX_CHOICE_BYTES`] bytes.
pub fn choices(given: Option<&[String]>, flag: &str) -> Result<Vec<String>, ConfigError> {
    let bad = |why: String| Err(ConfigError::invalid(flag, why));
    let Some(given) = given else {
        return Ok(BUILTIN_CHOICES.iter().map(|c| c.to_string()).collect());
    };
    if given.is_empty() || given.iter().all(String::is_empty) {
        return bad("no choice given".into());
    }
    if given.len() > MAX_CHOICES {
        return bad(format!("{} choices, more than {MAX_CHOICES}", given.len()));
    }
    for (i, c) in given.iter().enumerate() {
        if c.is_empty() {
            return bad(format!("choice {} is empty", i + 1));
        }
        if c.len() > MAX_CHOICE_BYTES {
            return bad(format!(
                "choice {} is longer than {MAX_CHOICE_BYTES} bytes",
                i + 1
            ));
        }
        if given[..i].contains(c) {
            return bad(format!("choice {} repeats {c:?}", i + 1));
        }
    }
    Ok(given.to_vec())
}

/// `--structured-output-choices` as given: a JSON array of strings when it starts with `[`
/// (`'["yes, sir", "no"]'`: a choice may hold a comma), else the values between commas
/// (`yes,no`); then the checks of [`choices`]. A malformed array or an element that is not a
/// string is refused naming the flag.
pub fn choices_from_text(text: &str, flag: &str) -> Result<Vec<String>, ConfigError> {
    let bad = |why: String| ConfigError::invalid(flag, why);
    let list: Vec<String> = if text.trim_start().starts_with('[') {
        let items: Vec<serde_json::Value> = serde_json::from_str(text)
            .map_err(|e| bad(format!("not a JSON array of strings: {e}")))?;
        (items.into_iter().enumerate())
            .map(|(i, c)| match c {
                serde_json::Value::String(s) => Ok(s),
                _ => Err(bad(format!("choice {} is not a string", i + 1))),
            })
            .collect::<Result<_, _>>()?
    } else {
        text.split(',').map(str::to_string).collect()
    };
    choices(Some(&list), flag)
}

/// The grammar in `text` (the file `file`, given to `flag`): not blank, at most
/// [`MAX_GRAMMAR_FILE_BYTES`].
pub fn grammar_from_text(text: &str, file: &str, flag: &str) -> Result<String, ConfigError> {
    if text.len() as u64 > MAX_GRAMMAR_FILE_BYTES {
        let why = format!("{file}: longer than {MAX_GRAMMAR_FILE_BYTES} bytes");
        return Err(ConfigError::invalid(flag, why));
    }
    if text.trim().is_empty() {
        return Err(ConfigError::invalid(
            flag,
            format!("{file}: the grammar file is empty"),
        ));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pattern matches whole answers only; one that does not compile, is too
    /// long or compiles too large is one line naming the flag.
    #[test]
    fn a_pattern_matches_whole_answers_and_bad_ones_are_named() {
        let p = Pattern::new(BUILTIN_PATTERN, "--structured-output-regex").unwrap();
        assert!(p.matches_whole("alan_turing@enigma.com\n"));
        assert!(!p.matches_whole("alan_turing@enigma.com"));
        assert!(!p.matches_whole("x alan_turing@enigma.com\n"));
        assert!(!p.matches_whole("alan_turing@enigma.com\nmore"));
        let alt = Pattern::new("a|b", "f").unwrap();
        assert!(alt.matches_whole("b") && !alt.matches_whole("ab"));
        let flag = "--structured-output-regex";
        for (text, why) in [
            ("(a", "unclosed group"),
            ("", "empty"),
            ("a".repeat(MAX_PATTERN_BYTES + 1).as_str(), "longer than"),
            (r"\w{1000}\w{1000}", "size limit"),
        ] {
            let err = Pattern::new(text, flag).unwrap_err().to_string();
            assert!(err.contains(flag) && err.contains(why), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Pattern>(&json).unwrap(), p);
    }

    /// The choices are the built-in ones unless given; an empty or repeated one
    /// is refused by name.
    #[test]
    fn choices_are_checked() {
        let flag = "--structured-output-choices";
        assert_eq!(choices(None, flag).unwrap(), BUILTIN_CHOICES);
        let given = ["a".to_string(), "b".to_string()];
        assert_eq!(choices(Some(&given), flag).unwrap(), given);
        for (list, why) in [
            (vec![], "no choice"),
            (vec![String::new()], "no choice"),
            (vec!["a".into(), String::new()], "choice 2 is empty"),
            (vec!["a".into(), "a".into()], "choice 2 repeats"),
        ] {
            let err = choices(Some(&list), flag).unwrap_err().to_string();
            assert!(err.contains(flag) && err.contains(why), "{err}");
        }
        assert!(grammar_from_text(" \n", "g.gbnf", "--structured-output-grammar").is_err());
        assert!(grammar_from_text(BUILTIN_GRAMMAR, "g", "f").is_ok());
        let big = "a".repeat(MAX_GRAMMAR_FILE_BYTES as usize + 1);
        assert!(grammar_from_text(&big, "g", "f").is_err());
        assert_eq!(
            MAX_GRAMMAR_FILE_BYTES,
            crate::config::structured::MAX_SCHEMA_FILE_BYTES
        );
    }

    /// A choice may hold a comma, given as a JSON array; plain values still go
    /// between commas; an empty list, an empty choice, a non-string element, a repeated
    /// choice and a malformed array are refused naming the flag, on one line.
    #[test]
    fn a_choice_may_contain_a_comma() {
        let flag = "--structured-output-choices";
        let got = choices_from_text(r#"["yes, sir", "no"]"#, flag).unwrap();
        assert_eq!(got, ["yes, sir", "no"]);
        assert_eq!(choices_from_text(" [\"a\"]", flag).unwrap(), ["a"]);
        assert_eq!(choices_from_text("yes,no", flag).unwrap(), ["yes", "no"]);
        assert_eq!(choices_from_text("Positive", flag).unwrap(), ["Positive"]);
        for (text, why) in [
            ("[]", "no choice"),
            ("", "no choice"),
            (r#"["a", ""]"#, "choice 2 is empty"),
            ("a,,b", "choice 2 is empty"),
            (r#"["a", 3]"#, "choice 2 is not a string"),
            (r#"[["a"]]"#, "choice 1 is not a string"),
            (r#"["a, b", "a, b"]"#, "choice 2 repeats"),
            (r#"["a", "b""#, "not a JSON array"),
            (r#"[{"a": 1}"#, "not a JSON array"),
        ] {
            let err = choices_from_text(text, flag).unwrap_err().to_string();
            assert!(err.contains(flag) && err.contains(why), "{text}: {err}");
            assert!(!err.contains('\n'), "{text}: {err}");
        }
    }
}
