//! Text from outside (a server's answers, files, other tools' results, the command line) made
//! safe for the place it is written: one function per output kind, and each kind written
//! through its function everywhere.
//!
//! - [`terminal`] and [`terminal_line`]: stdout and stderr (`commands` writes everything it
//!   prints through them): control characters become visible escapes, so a string cannot
//!   move the cursor, retitle or clear the terminal, or hide what follows;
//! - [`csv_cell`]: every CSV cell: a cell a spreadsheet would run as a formula gets a leading
//!   `'`;
//! - [`markdown`]: every Markdown cell, heading and note: HTML and the table's `|` escaped;
//! - [`html`]: every string in the HTML report.
//!
//! Each is idempotent on its own output where it matters: escaping text twice for a terminal
//! changes nothing the second time (an escape is printable).

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for what a terminal must never receive raw: the C0 controls, DEL and the C1 controls
/// (`char::is_control`), and the Unicode marks that reorder or hide the text around them
/// (bidirectional overrides and isolates, as in "Trojan Source").
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `c` written visibly: `\x1b`, `\x7f`, `\u{9b}`, `\u{202e}`.
fn visible(out: &mut String, c: char) {
    match u32::from(c) {
        n if n < 0x80 => {
            let _ = write!(out, "\\x{n:02x}");
        }
        n => {
            let _ = write!(out, "\\u{{{n:x}}}");
        }
    }
}

fn escape_for_terminal(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| hidden(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if hidden(c) && !keep(c) {
            visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text for a terminal: every control character but newline and tab (the text's layout)
/// written as a visible escape (`\x1b`, `\r`'s `\x0d`, `\u{9b}`).
pub fn terminal(s: &str) -> Cow<'_, str> {
    escape_for_terminal(s, |c| c == '\n' || c == '\t')
}

/// One line for a terminal (an error, a warning, a report's value): as [`terminal`], and a
/// newline made visible too, so a string from outside cannot forge a line of its own.
pub fn terminal_line(s: &str) -> Cow<'_, str> {
    escape_for_terminal(s, |c| c == '\t')
}

/// A CSV cell: one that a spreadsheet would run as a formula (it starts with `=`, `+`, `-`,
/// `@`, a tab or a carriage return) gets a leading `'`, which spreadsheets show as text;
/// a number such as `-1.5` or `+3e-5` stays a number.
pub fn csv_cell(s: &str) -> Cow<'_, str> {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let number = s.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c))
        && s.parse::<f64>().is_ok_and(f64::is_finite);
    if formula && !number {
        Cow::Owned(format!("'{s}"))
    } else {
        Cow::Borrowed(s)
    }
}

/// Markdown text (a table cell, a heading, a note): HTML's `&`, `<` and `>` as entities, the
/// table's `|` and the escape character `\` escaped, a line break as a space (so a string
/// cannot end its cell or start a block of its own).
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text for HTML content and attribute values.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ATTACK: &str = "\x1b]0;pwned\x07\x1b[2J";

    #[test]
    fn control_characters_are_made_visible() {
        assert_eq!(terminal(ATTACK), "\\x1b]0;pwned\\x07\\x1b[2J");
        assert_eq!(
            terminal("a\tb\nc\rd\u{7f}\u{9b}\u{202e}"),
            "a\tb\nc\\x0dd\\x7f\\u{9b}\\u{202e}"
        );
        assert_eq!(terminal_line("a\tb\nc"), "a\tb\\x0ac");
        assert!(matches!(terminal("plain text, ünïcode"), Cow::Borrowed(_)));
        // Escaping twice changes nothing the second time.
        assert_eq!(terminal(&terminal(ATTACK)), terminal(ATTACK));
    }

    #[test]
    fn formulas_are_neutralised_and_numbers_stay_numbers() {
        for f in [
            "=1+1",
            "+cmd|' /C calc'!A0",
            "-2+3",
            "@SUM(A1)",
            "\tx",
            "\rx",
            "-",
            "=",
            "-inf",
            "+NaN",
        ] {
            assert_eq!(csv_cell(f), format!("'{f}"), "{f:?}");
        }
        for n in [
            "-1.5", "+3e-5", "1e10", "-0", "12", "", "a=b", "x-1", "label",
        ] {
            assert_eq!(csv_cell(n), n, "{n:?}");
        }
    }

    #[test]
    fn markdown_escapes_html_and_the_table() {
        assert_eq!(
            markdown("<img src=x onerror=alert(1)> a|b & c\\|\nd"),
            "&lt;img src=x onerror=alert(1)&gt; a\\|b &amp; c\\\\\\| d"
        );
        assert_eq!(
            html("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    proptest! {
        /// Whatever a string holds, what reaches a terminal has no control character but the
        /// layout's, and a line none at all.
        #[test]
        fn no_control_character_reaches_a_terminal(s in any::<String>()) {
            let text = terminal(&s);
            prop_assert!(text.chars().all(|c| !hidden(c) || c == '\n' || c == '\t'));
            prop_assert!(terminal_line(&s).chars().all(|c| !hidden(c) || c == '\t'));
            prop_assert_eq!(terminal(&text), text.clone());
        }

        /// No CSV cell starts as a formula unless it is a plain number.
        #[test]
        fn no_cell_starts_a_formula(s in any::<String>()) {
            let cell = csv_cell(&s);
            if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
                prop_assert!(cell.parse::<f64>().is_ok(), "{:?}", cell);
            }
        }

        /// A Markdown cell never holds raw HTML, an unescaped `|` or a line break.
        #[test]
        fn markdown_cells_hold_no_markup(s in any::<String>()) {
            let m = markdown(&s);
            prop_assert!(!m.contains(['<', '>', '\n', '\r']));
            let unescaped_pipe = m.split("\\\\").any(|part| part.replace("\\|", "").contains('|'));
            prop_assert!(!unescaped_pipe, "{:?}", m);
        }
    }
}
