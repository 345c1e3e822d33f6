//! Text from outside (a server's answers, files, other tools' results, the command line) made
//! safe for the place it is written: one function per output kind, and each kind written
//! through its function everywhere.
//!
//! - [`terminal`] and [`terminal_line`]: stdout and stderr (`commands` writes everything it
//!   prints through them): control characters and Unicode format characters (zero-width,
//!   bidirectional) become visible escapes, so a string cannot move the cursor, retitle or
//!   clear the terminal, hide what follows, or pass for another;
//! - [`csv_cell`]: every CSV cell: a cell a spreadsheet would run as a formula gets a leading
//!   `'`, and format characters are made visible;
//! - [`markdown`]: every Markdown cell, heading and note: HTML and the table's `|` escaped;
//! - [`html`]: every string in the HTML report (format characters visible, here and in
//!   Markdown, too).
//!
//! Each is idempotent on its own output where it matters: escaping text twice for a terminal
//! changes nothing the second time (an escape is printable).

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for what a terminal must never receive raw: the C0 controls, DEL and the C1 controls
/// (`char::is_control`), and the invisible Unicode characters that reorder, hide or join
/// the text around them ([`format_char`]).
fn hidden(c: char) -> bool {
    c.is_control() || format_char(c)
}

/// Unicode's format characters (general category Cf, Unicode 15.1: the bidirectional marks,
/// overrides and isolates of "Trojan Source", zero-width space, joiners and no-break space,
/// the soft hyphen, the byte-order mark, the invisible operators, interlinear annotation,
/// the tag characters) and the line and paragraph separators. Each is invisible or moves
/// text: two names that differ by one look the same (`chat` and `chat` + U+200B).
fn format_char(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

/// `s` with its format characters ([`format_char`]) written visibly, the rest as it is.
fn visible_format(s: &str) -> Cow<'_, str> {
    escape_for_terminal(s, |c| !format_char(c))
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
    // Format characters visible first: a cell is a name as often as it is a number.
    if s.chars().any(format_char) {
        return Cow::Owned(csv_cell(&visible_format(s)).into_owned());
    }
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
/// cannot end its cell or start a block of its own), format characters visible.
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if format_char(c) => visible(&mut out, c),
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

/// Text for HTML content and attribute values; format characters ([`format_char`]) written
/// visibly, as for a terminal.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if format_char(c) => visible(&mut out, c),
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

    /// Zero-width and other format characters (a class name `chat` + U+200B passes for
    /// `chat`) are made visible in every kind of output.
    #[test]
    fn format_characters_are_made_visible_everywhere() {
        let name = "chat\u{200b}";
        assert_eq!(terminal(name), "chat\\u{200b}");
        assert_eq!(terminal_line(name), "chat\\u{200b}");
        assert_eq!(csv_cell(name), "chat\\u{200b}");
        assert_eq!(csv_cell("=\u{feff}1"), "'=\\u{feff}1");
        assert_eq!(html(name), "chat\\u{200b}");
        assert_eq!(markdown(name), "chat\\u{200b}");
        for c in [
            '\u{ad}',
            '\u{200c}',
            '\u{200d}',
            '\u{2060}',
            '\u{2028}',
            '\u{61c}',
            '\u{e0041}',
        ] {
            let s = format!("a{c}b");
            for out in [
                terminal(&s).into_owned(),
                csv_cell(&s).into_owned(),
                html(&s),
            ] {
                assert!(!out.contains(c), "{c:?}: {out:?}");
            }
        }
        // A letter, an accent, an emoji stay as they are.
        assert!(matches!(terminal("é ü 日本 🙂"), Cow::Borrowed(_)));
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
            prop_assert!(!csv_cell(&s).chars().any(format_char));
            prop_assert!(!html(&s).chars().any(format_char));
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
