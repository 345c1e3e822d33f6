//! The crate's layering, checked: every `crate::…`, `super::…` and `self::…` path in `src/`
//! (outside `#[cfg(test)]` modules, which may use any layer) is resolved to the source file it
//! names, and
//! 1. a file may name only files of its own layer or of a layer it is allowed to import
//!    ([`ALLOWED`], the diagram of `docs/architecture.md`);
//! 2. the files, as a graph of who names whom, have no cycle;
//! 3. `src/` holds only `main.rs` and `lib.rs` besides the layer folders, and no source file
//!    outside tests is longer than 700 lines;
//! 4. the tests (`tests/main.rs`, its modules in `tests/suite/`, and any binary of its own in
//!    `tests/`) use the test toolkit (`tests/common`) and keep no copy of its helpers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each layer and the layers it may import (besides itself). `sim` is the exception that
/// may import exactly one file below it: the kernel receive timestamps.
const ALLOWED: &[(&str, &[&str])] = &[
    ("tokenizer", &[]),
    ("config", &[]),
    ("measure", &["config", "tokenizer"]),
    ("workload", &["config", "measure", "tokenizer"]),
    ("results", &["config", "measure", "tokenizer"]),
    (
        "drive",
        &["config", "measure", "workload", "results", "tokenizer"],
    ),
    ("views", &["config", "measure", "results"]),
    ("render", &["config", "measure", "results", "views"]),
    (
        "cli",
        &[
            "config",
            "measure",
            "workload",
            "results",
            "drive",
            "views",
            "render",
            "sim",
            "tokenizer",
        ],
    ),
    (
        "commands",
        &[
            "cli",
            "config",
            "measure",
            "workload",
            "results",
            "drive",
            "views",
            "render",
            "sim",
            "tokenizer",
        ],
    ),
    ("sim", &[]),
];

/// The one file below it that `sim` may use.
const SIM_MAY_USE: &str = "src/measure/rxtime.rs";

const MAX_LINES: usize = 700;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/results/stats.rs` → `["results", "stats"]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// A file's text without its `#[cfg(test)]` modules (from the attribute to the end of the
/// module's braces).
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let Some(open) = after.find(['{', ';']) else {
            return out;
        };
        if after.as_bytes()[open] == b';' {
            rest = &after[open + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (j, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every path named in `code` that starts with `crate::`, `super::` or `self::`, as module
/// segments (brace groups expanded one level: `crate::a::{b, c::D}` gives `a::b`, `a::c::D`).
fn named_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(root) {
            let start = from + i;
            from = start + root.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            if start >= 2 && &code[start - 2..start] == "::" {
                continue;
            }
            let tail: String = code[from..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':' || *c == '{')
                .collect();
            let mut base: Vec<String> = match root {
                "crate::" => Vec::new(),
                "self::" => here.to_vec(),
                _ => {
                    // `super` of a mod.rs is its parent module; of a file, the module holding it.
                    let mut b = here.to_vec();
                    b.pop();
                    b
                }
            };
            let (prefix, group) = match tail.split_once('{') {
                Some((p, _)) => {
                    let close = code[from..].find('}').map_or(from, |k| from + k);
                    let inner = &code[from + p.len() + 1..close];
                    (p.to_string(), Some(inner.to_string()))
                }
                None => (tail.clone(), None),
            };
            let segs: Vec<String> = prefix
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            base.extend(segs);
            match group {
                Some(inner) => {
                    for item in inner.split(',') {
                        let item = item.trim();
                        let mut p = base.clone();
                        p.extend(
                            item.split("::")
                                .map(|s| s.trim().to_string())
                                .filter(|s| !s.is_empty() && s != "self" && s != "*"),
                        );
                        out.push(p);
                    }
                }
                None => out.push(base),
            }
        }
    }
    out
}

/// The file a module path names: its longest prefix that is a module file.
fn resolve(path: &[String], modules: &BTreeMap<Vec<String>, PathBuf>) -> Option<PathBuf> {
    (1..=path.len())
        .rev()
        .find_map(|n| modules.get(&path[..n]).cloned())
}

struct Crate {
    /// File → the files it names (outside tests).
    edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
    lines: BTreeMap<PathBuf, usize>,
}

fn read_crate() -> Crate {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&root).unwrap().to_path_buf();
            (module_of(&rel), Path::new("src").join(rel))
        })
        .collect();
    let mut edges = BTreeMap::new();
    let mut lines = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        let name = Path::new("src").join(rel);
        let text = std::fs::read_to_string(f).unwrap();
        lines.insert(name.clone(), text.lines().count());
        let here = module_of(rel);
        let targets: BTreeSet<PathBuf> = named_paths(&without_tests(&text), &here)
            .iter()
            .filter_map(|p| resolve(p, &modules))
            .filter(|t| *t != name)
            .collect();
        edges.insert(name, targets);
    }
    Crate { edges, lines }
}

fn layer_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix("src").ok()?;
    let mut c = rel.components();
    let first = c.next()?.as_os_str().to_string_lossy().into_owned();
    c.next()?; // a file directly under src/ belongs to no layer
    Some(first)
}

fn is_test_file(file: &Path) -> bool {
    file.file_stem()
        .is_some_and(|s| s == "tests" || s.to_string_lossy().ends_with("_tests"))
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let krate = read_crate();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (file, targets) in &krate.edges {
        let Some(layer) = layer_of(file) else {
            continue;
        };
        let Some(may) = allowed.get(layer.as_str()) else {
            wrong.push(format!(
                "{}: layer `{layer}` is not in ALLOWED",
                file.display()
            ));
            continue;
        };
        for t in targets {
            let Some(tl) = layer_of(t) else {
                wrong.push(format!(
                    "{} names {}, which is in no layer",
                    file.display(),
                    t.display()
                ));
                continue;
            };
            let ok = tl == layer
                || may.contains(&tl.as_str())
                || (layer == "sim" && t == Path::new(SIM_MAY_USE));
            if !ok {
                wrong.push(format!(
                    "{} ({layer}) names {} ({tl})",
                    file.display(),
                    t.display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_import_circle() {
    let krate = read_crate();
    // Depth-first search for a back edge; report the cycle it closes.
    let mut state: BTreeMap<&PathBuf, u8> = BTreeMap::new(); // 1 on the stack, 2 done
    let mut cycles = Vec::new();
    fn visit<'a>(
        f: &'a PathBuf,
        krate: &'a Crate,
        state: &mut BTreeMap<&'a PathBuf, u8>,
        stack: &mut Vec<&'a PathBuf>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(f, 1);
        stack.push(f);
        for t in &krate.edges[f] {
            match state.get(t) {
                Some(1) => {
                    let at = stack.iter().position(|s| *s == t).unwrap();
                    let names: Vec<String> = stack[at..]
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect();
                    cycles.push(format!("{} -> {}", names.join(" -> "), t.display()));
                }
                Some(_) => {}
                None => visit(t, krate, state, stack, cycles),
            }
        }
        stack.pop();
        state.insert(f, 2);
    }
    for f in krate.edges.keys() {
        if !state.contains_key(f) {
            visit(f, &krate, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    assert!(cycles.is_empty(), "import circles:\n{}", cycles.join("\n"));
}

#[test]
fn src_root_holds_only_main_and_lib_and_files_stay_short() {
    let krate = read_crate();
    let mut wrong = Vec::new();
    for (file, &n) in &krate.lines {
        if file.parent() == Some(Path::new("src"))
            && !matches!(
                file.file_name().and_then(|n| n.to_str()),
                Some("main.rs" | "lib.rs")
            )
        {
            wrong.push(format!("{} is at the root of src/", file.display()));
        }
        if n > MAX_LINES && !is_test_file(file) {
            wrong.push(format!(
                "{} has {n} lines (at most {MAX_LINES})",
                file.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_path_parser_reads_groups_super_and_skips_tests() {
    // The parser itself: a path in a brace group, `super::` from a file and from a mod.rs.
    let here = vec!["results".to_string(), "stats".to_string()];
    let paths = named_paths(
        "use crate::drive::{run::execute, load};\nlet x = super::document::X;",
        &here,
    );
    let names: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        names,
        ["drive::run::execute", "drive::load", "results::document::X"]
    );
    let in_mod = named_paths("use super::x;", &["sim".to_string()]);
    assert_eq!(in_mod, [vec!["x".to_string()]]);
    assert_eq!(
        without_tests("a\n#[cfg(test)]\nmod tests {\n fn f() { crate::x(); }\n}\nb"),
        "a\n\nb"
    );
}

/// The layers as [`ALLOWED`] has them, each with the set it may import.
fn allowed() -> BTreeMap<String, BTreeSet<String>> {
    ALLOWED
        .iter()
        .map(|(layer, may)| {
            let may = may.iter().map(|m| m.to_string()).collect();
            (layer.to_string(), may)
        })
        .collect()
}

/// The lines of the first ```text block after `marker` in `text`.
fn text_block<'a>(text: &'a str, marker: &str) -> Vec<&'a str> {
    let from = text.find(marker).expect(marker);
    let lines = text[from..].lines().skip_while(|l| !l.contains("```text"));
    lines.skip(1).take_while(|l| !l.contains("```")).collect()
}

/// `docs/architecture.md` (its folder diagram and its table of who may import whom)
/// and `lib.rs` (its layer diagram and its modules) name exactly the layers of [`ALLOWED`],
/// and the table gives each layer exactly what [`ALLOWED`] lets it import: a layer moved in
/// one place and not the others fails here.
#[test]
fn the_docs_name_the_layers_the_layer_test_checks() {
    let allowed = allowed();
    let layers: BTreeSet<String> = allowed.keys().cloned().collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let arch = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();

    // The folder diagram: one `name/` line per layer, besides main.rs.
    let folders: BTreeSet<String> = text_block(&arch, "# Architecture")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "main.rs")
        .map(|w| w.trim_end_matches('/').to_string())
        .collect();
    assert_eq!(folders, layers, "docs/architecture.md's folder diagram");

    // The table: `| layer | may import |`.
    let mut table = BTreeMap::new();
    for line in arch.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let layer = cells[1].trim_matches('`').to_string();
        let others = |but: &[&str]| -> BTreeSet<String> {
            layers
                .iter()
                .filter(|l| **l != layer && !but.contains(&l.as_str()))
                .cloned()
                .collect()
        };
        let may: BTreeSet<String> = match cells[2] {
            "—" => BTreeSet::new(),
            "every layer" => others(&[]),
            m if m.starts_with("every layer but ") => others(
                &m["every layer but ".len()..]
                    .split(", ")
                    .collect::<Vec<_>>(),
            ),
            // `sim`: one file below it, which the test checks as SIM_MAY_USE.
            m if m.contains(SIM_MAY_USE.trim_start_matches("src/")) => BTreeSet::new(),
            m => m.split(", ").map(String::from).collect(),
        };
        table.insert(layer, may);
    }
    assert_eq!(
        table, allowed,
        "docs/architecture.md's table of who may import whom"
    );

    // lib.rs: its diagram's first words and its `pub mod` lines.
    let diagram: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//! "))
        .skip_while(|l| !l.contains("```text"))
        .skip(1)
        .take_while(|l| !l.contains("```"))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert_eq!(diagram, layers, "lib.rs's layer diagram");
    let mods: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    assert_eq!(mods, layers, "lib.rs's modules");
}

/// The toolkit's helpers that test files once each kept a copy of.
const TOOLKIT: &[&str] = &[
    "fn servebench(",
    "fn output(",
    "fn stdout(",
    "fn json(",
    "fn read_records(",
    "fn try_read_records(",
    "fn run_config(",
    "fn sim_url(",
    "fn wait_for(",
    "fn finish_within(",
    "cargo_bin(",
    "fn spawn_sim(",
    "fn exact_sim(",
    "struct SimProcess",
    "struct Tmux",
    "fn serial(",
    "static SERIAL",
];

/// A helper lives once, in `tests/common`; no test file defines its own
/// copy or finds the binary itself, and no module keeps a lock of its own beside the toolkit's.
#[test]
fn test_binaries_use_the_toolkit_not_copies() {
    let tests = src().parent().unwrap().join("tests");
    let mut copies = Vec::new();
    let suite = std::fs::read_dir(tests.join("suite")).unwrap();
    for entry in std::fs::read_dir(&tests).unwrap().chain(suite) {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let code = std::fs::read_to_string(&path).unwrap();
        for helper in TOOLKIT.iter().filter(|h| code.contains(**h)) {
            // This file names them in its list.
            if path.file_name().is_some_and(|n| n == "layers.rs") {
                continue;
            }
            copies.push(format!("{}: {helper}", path.display()));
        }
    }
    assert!(
        copies.is_empty(),
        "test files keep their own copies of tests/common's helpers: {copies:#?}"
    );
}
