//! The option reference, `docs/options.md`, rendered as Markdown from the clap command itself
//! (`<Cli as clap::CommandFactory>::command()`), so the document cannot drift from the flags:
//! a unit test here renders it and compares it with the file, and `SERVEBENCH_BLESS=1` rewrites
//! the file. This file only reads a `clap::Command` it is given; it imports nothing of the
//! crate, so any command line can be documented with it. To extend: a new property of an
//! argument (say its value hint) goes in `arg_facts`; the output must stay deterministic
//! (clap's declaration order, no map iteration, no time or path).

use std::fmt::Write;

use clap::builder::PossibleValue;
use clap::{Arg, ArgAction, Command};

/// The whole reference: a title, the subcommands' table, then one section per (visible)
/// subcommand, its usage and its arguments grouped under their help headings as `--help`
/// groups them ("Arguments", "Options", then each heading in order of first appearance).
pub fn options_markdown(mut cmd: Command) -> String {
    cmd.build();
    let name = cmd.get_name().to_string();
    let mut out = String::new();
    let _ = writeln!(out, "# Command-line options\n");
    let _ = writeln!(
        out,
        "<!-- Generated from the clap definitions in src/cli by src/cli/reference.rs: do not \
         edit. After changing a flag, refresh it with\n     SERVEBENCH_BLESS=1 cargo test \
         --release --lib cli::reference -->\n"
    );
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", escape(&about.to_string()));
    }
    let _ = writeln!(out, "| command | what it does |\n|---|---|");
    for sub in visible_subcommands(&cmd) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let _ = writeln!(
            out,
            "| [`{name} {sub}`](#{anchor}) | {about} |",
            sub = sub.get_name(),
            anchor = anchor(&format!("{name} {}", sub.get_name())),
            about = escape(&one_line(&about)).replace('|', "\\|"),
        );
    }
    out.push('\n');
    out.push_str(&command_head(&mut cmd, &name, 2));
    let subs: Vec<Command> = visible_subcommands(&cmd).cloned().collect();
    for mut sub in subs {
        let path = format!("{name} {}", sub.get_name());
        out.push_str(&command_section(&mut sub, &path, 2));
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The subcommands a user sees: not hidden, and not clap's own `help`.
fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

/// One command's section: its heading, description, usage and arguments; nested
/// subcommands follow one level deeper.
fn command_section(cmd: &mut Command, path: &str, level: usize) -> String {
    let mut out = command_head(cmd, path, level);
    let subs: Vec<Command> = visible_subcommands(cmd).cloned().collect();
    for mut sub in subs {
        let sub_path = format!("{path} {}", sub.get_name());
        out.push_str(&command_section(&mut sub, &sub_path, level + 1));
    }
    out
}

/// A command's heading, description, usage and arguments, without its subcommands.
fn command_head(cmd: &mut Command, path: &str, level: usize) -> String {
    let mut out = String::new();
    let hashes = "#".repeat(level.min(6));
    let _ = writeln!(out, "{hashes} `{path}`\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", escape(&about.to_string()));
    }
    let usage = cmd.render_usage().to_string();
    let _ = writeln!(out, "```text\n{}\n```\n", usage.trim_end());
    for (heading, args) in grouped_args(cmd) {
        let _ = writeln!(out, "{} {heading}\n", "#".repeat((level + 1).min(6)));
        for arg in args {
            out.push_str(&arg_entry(arg));
        }
    }
    out
}

/// The visible arguments grouped as clap's help groups them: positionals without a heading
/// under "Arguments", options without one under "Options", then every named heading in the
/// order it first appears.
fn grouped_args(cmd: &Command) -> Vec<(String, Vec<&Arg>)> {
    let visible: Vec<&Arg> = cmd.get_arguments().filter(|a| !a.is_hide_set()).collect();
    let mut groups: Vec<(String, Vec<&Arg>)> = vec![
        ("Arguments".to_string(), Vec::new()),
        ("Options".to_string(), Vec::new()),
    ];
    for arg in &visible {
        let heading = match arg.get_help_heading() {
            Some(h) => h.to_string(),
            None if arg.is_positional() => "Arguments".to_string(),
            None => "Options".to_string(),
        };
        match groups.iter_mut().find(|(h, _)| *h == heading) {
            Some((_, list)) => list.push(arg),
            None => groups.push((heading, vec![arg])),
        }
    }
    groups.retain(|(_, list)| !list.is_empty());
    groups
}

/// One argument as a list item: its spelling, its facts (env, default, values), then its
/// help text, every paragraph indented under the item.
fn arg_entry(arg: &Arg) -> String {
    let mut out = format!("- {}", spelling(arg));
    let facts = arg_facts(arg);
    if !facts.is_empty() {
        let _ = write!(out, " ({})", facts.join("; "));
    }
    out.push('\n');
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let help = help.trim();
    if !help.is_empty() {
        out.push('\n');
        for line in escape(help).lines() {
            if line.trim().is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    let values = described_values(arg);
    if !values.is_empty() {
        out.push_str("\n  Values:\n\n");
        for value in values {
            let _ = writeln!(out, "  - {value}");
        }
    }
    out.push('\n');
    out
}

/// The possible values as `` `name`: help ``, when at least one has help of its own (those
/// without any are listed in the facts instead).
fn described_values(arg: &Arg) -> Vec<String> {
    let values: Vec<PossibleValue> = shown_values(arg);
    if values.iter().all(|v| v.get_help().is_none()) {
        return Vec::new();
    }
    values
        .iter()
        .map(|v| match v.get_help() {
            Some(help) => format!(
                "`{}`: {}",
                v.get_name(),
                escape(&one_line(&help.to_string()))
            ),
            None => format!("`{}`", v.get_name()),
        })
        .collect()
}

/// The possible values `--help` would show: none for a plain flag or when hidden.
fn shown_values(arg: &Arg) -> Vec<PossibleValue> {
    if arg.is_hide_possible_values_set() || !takes_value(arg) {
        return Vec::new();
    }
    let mut values = arg.get_possible_values();
    values.retain(|v| !v.is_hide_set());
    values
}

/// How an argument is written: `-s`, `--long <VALUE>`, its visible aliases; a positional by
/// its value name.
fn spelling(arg: &Arg) -> String {
    let value = value_text(arg);
    if arg.is_positional() {
        return format!("`{value}`");
    }
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let mut first = names.join(", ");
    if !value.is_empty() {
        first.push(' ');
        first.push_str(&value);
    }
    let mut out = format!("`{first}`");
    for alias in arg.get_visible_aliases().unwrap_or_default() {
        let _ = write!(out, ", `--{alias}`");
    }
    for short in arg.get_visible_short_aliases().unwrap_or_default() {
        let _ = write!(out, ", `-{short}`");
    }
    out
}

/// The value part of an argument's spelling as `--help` writes it: `<NAME>`, `[<NAME>]` when
/// the value may be left out, `<NAME>...` when several may follow; empty for a plain flag.
fn value_text(arg: &Arg) -> String {
    if !takes_value(arg) {
        return String::new();
    }
    let names: Vec<String> = match arg.get_value_names() {
        Some(names) if !names.is_empty() => names.iter().map(|n| format!("<{n}>")).collect(),
        _ => vec![format!("<{}>", arg.get_id().as_str().to_uppercase())],
    };
    let mut text = names.join(" ");
    let range = arg.get_num_args();
    if range.is_some_and(|r| r.max_values() > names.len()) {
        text.push_str("...");
    }
    if range.is_some_and(|r| r.min_values() == 0) {
        text = format!("[{text}]");
    }
    text
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values() && arg.get_num_args().is_none_or(|r| r.takes_values())
}

/// The facts `--help` shows in brackets: whether it is required, the environment variable, the
/// default, and the possible values when none has help of its own.
fn arg_facts(arg: &Arg) -> Vec<String> {
    let mut facts = Vec::new();
    if arg.is_required_set() {
        facts.push("required".to_string());
    }
    if let Some(env) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
        facts.push(format!("env: `{}`", env.to_string_lossy()));
    }
    let defaults = arg.get_default_values();
    let shows_default = takes_value(arg)
        && !defaults.is_empty()
        && !arg.is_hide_default_value_set()
        && !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
    if shows_default {
        let list: Vec<String> = defaults
            .iter()
            .map(|d| format!("`{}`", d.to_string_lossy()))
            .collect();
        facts.push(format!("default: {}", list.join(", ")));
    }
    let values = shown_values(arg);
    if !values.is_empty() && values.iter().all(|v| v.get_help().is_none()) {
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        facts.push(format!("values: {}", names.join(", ")));
    }
    facts
}

/// Text joined onto one line (for a table cell or a fact in brackets).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Help text made safe for Markdown outside code spans: `<` and `>` would start HTML or a
/// quote, `*` and `_` emphasis, `\` an escape; text between backticks is left as written.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code && matches!(c, '<' | '>' | '*' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A heading's GitHub anchor: lower case, spaces as `-`, punctuation other than `-` and `_`
/// dropped.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::CommandFactory;

    use super::options_markdown;
    use crate::cli::Cli;

    const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/options.md");

    /// `docs/options.md` is exactly what the clap definitions render; `SERVEBENCH_BLESS=1`
    /// rewrites it instead of failing.
    #[test]
    fn docs_options_md_matches_the_command_line() {
        let rendered = options_markdown(Cli::command());
        let saved = std::fs::read_to_string(DOC).unwrap_or_default();
        if saved == rendered {
            return;
        }
        if std::env::var("SERVEBENCH_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(DOC, &rendered).expect("write docs/options.md");
            return;
        }
        let line = saved
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| saved.lines().count().min(rendered.lines().count()));
        panic!(
            "{} is out of date with the command line (first difference at line {}: saved {:?}, \
             rendered {:?}); refresh it with\n  SERVEBENCH_BLESS=1 cargo test --release --lib \
             cli::reference\nand commit the file",
            Path::new(DOC).display(),
            line + 1,
            saved.lines().nth(line).unwrap_or("<end of file>"),
            rendered.lines().nth(line).unwrap_or("<end of file>"),
        );
    }

    /// Rendering twice gives the same text, so the file never changes by itself.
    #[test]
    fn rendering_is_deterministic() {
        assert_eq!(
            options_markdown(Cli::command()),
            options_markdown(Cli::command())
        );
    }

    /// Every visible flag of every subcommand appears, under a heading.
    #[test]
    fn every_visible_flag_is_documented() {
        let text = options_markdown(Cli::command());
        let mut cmd = Cli::command();
        cmd.build();
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let heading = format!("\n## `servebench {}`\n", sub.get_name());
            let start = text.find(&heading).expect("a section per subcommand");
            let rest = &text[start + heading.len()..];
            let section = &rest[..rest.find("\n## `").unwrap_or(rest.len())];
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(long) = arg.get_long() {
                    let listed = [" ", "`"]
                        .iter()
                        .any(|end| section.contains(&format!("--{long}{end}")));
                    assert!(listed, "--{long} of {} missing", sub.get_name());
                }
            }
        }
    }
}
