//! The crate's layering, checked: every path in `src/` that names the crate's own modules
//! (`crate::…`, `super::…`, `self::…`, and a bare `child::…` where the file declares
//! `mod child;`, in `use` trees and in code; outside `#[cfg(test)]` items, comments and string
//! literals) is resolved to the source file it names, and
//! 1. a file may name only files of its own layer or of a layer it is allowed to import
//!    ([`ALLOWED`], the diagram of `docs/architecture.md`);
//! 2. the files, as a graph of who names whom, have no cycle;
//! 3. `src/` holds only `main.rs` and `lib.rs` besides the layer folders, no source file
//!    outside tests is longer than 700 lines, and no function outside tests longer than 120;
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

/// A file's code as the compiler reads it for names: comments, string and char literals
/// and `#[cfg(test)]` items blanked out (each byte but a newline made a space), so line
/// numbers stay where they were and no brace or path inside a literal or a comment counts.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |k| i + k);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = raw_string_start(b, i) {
            // r"..", r#".."#, br#".."#: ends at a quote followed by as many hashes.
            let open = i + b[i..].iter().position(|&c| c == b'"').unwrap_or(0);
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = (b[open + 1..].windows(close.len()))
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |k| open + 1 + k + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{7f}', 'é'), or a lifetime ('a), left as it is.
            let end = if rest.get(1) == Some(&b'\\') {
                rest.iter()
                    .skip(2)
                    .position(|&c| c == b'\'')
                    .map(|k| i + 2 + k + 1)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(i + 2 + ch)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    let code = String::from_utf8(out).unwrap_or_default();
    without_tests(&code)
}

/// Whether a raw string literal starts at `i` (`r"`, `r#"`, `br##"`, ...): its hash count.
fn raw_string_start(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let j = i + usize::from(b.get(i) == Some(&b'b'));
    if b.get(j) != Some(&b'r') {
        return None;
    }
    let hashes = b[j + 1..].iter().take_while(|&&c| c == b'#').count();
    (b.get(j + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// `code` with its `#[cfg(test)]` items blanked out (from the attribute to the end of the
/// item's braces, or its `;`), newlines kept.
fn without_tests(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(k) = out[from..].find("#[cfg(test)]") {
        let i = from + k;
        let Some(open) = out[i..].find(['{', ';']).map(|o| i + o) else {
            break;
        };
        let mut end = open + 1;
        if out.as_bytes()[open] == b'{' {
            let mut depth = 0usize;
            for (j, c) in out[open..].char_indices() {
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
        }
        let blanked: String = out[i..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(i..end, &blanked);
        from = end;
    }
    out
}

/// Whether `c` may be part of an identifier.
fn ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The modules a file declares as its children (`mod name;`, `pub(crate) mod name;`): a bare
/// path starting with one of them names that child's file.
fn child_modules(code: &str) -> BTreeSet<String> {
    code.split(';')
        .filter_map(|stmt| {
            let words: Vec<&str> = stmt.split_whitespace().collect();
            let at = words.iter().rposition(|w| *w == "mod")?;
            let name = words.get(at + 1)?;
            (at + 2 == words.len() && name.chars().all(ident)).then(|| name.to_string())
        })
        .collect()
}

/// The paths a `use` tree names, brace groups expanded at any depth: `a::{b, c::{d, e as f}}`
/// gives `a::b`, `a::c::d`, `a::c::e`; `self` in a group names the group's own path.
fn use_tree(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or("");
        let segs = path.split("::").map(str::trim);
        let segs: Vec<String> = segs
            .filter(|s| !s.is_empty() && *s != "*")
            .map(String::from)
            .collect();
        return vec![segs];
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut items, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    let mut out = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        for sub in use_tree(item) {
            let mut p = prefix.clone();
            p.extend(sub.into_iter().filter(|s| s != "self"));
            out.push(p);
        }
    }
    out
}

/// Every module path a file's code (as [`code_of`] leaves it) names, resolved from the crate's
/// root as Rust resolves it: `crate::`, `self::`, `super::` (any number), and a bare path whose
/// first segment is a child module the file declares (`child::f()`, `use child::{X, Y}`), in
/// `use` trees and in code. Paths into other crates are not the crate's.
fn named_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let children = child_modules(code);
    let mut raw: Vec<Vec<String>> = Vec::new();
    // `use` trees, whole (they may nest groups), then blanked so the scan of paths in code
    // below does not read their prefixes (`super::{a::X}` names `a`, not `super`).
    let mut code = code.to_string();
    let mut from = 0;
    while let Some(k) = code[from..].find("use ") {
        let at = from + k;
        from = at + 4;
        if code[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let end = code[from..].find(';').map_or(code.len(), |e| from + e);
        raw.extend(use_tree(&code[from..end]));
        let blanked: String = code[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        code.replace_range(at..end, &blanked);
        from = end;
    }
    let code = code.as_str();
    // Paths in code: `a::b::c` not preceded by `::` or an identifier.
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let starts = ident(c) && (i == 0 || !ident(chars[i - 1].1)) && !code[..at].ends_with("::");
        if !starts {
            i += 1;
            continue;
        }
        let len = code[at..]
            .find(|ch: char| !(ident(ch) || ch == ':'))
            .unwrap_or(code.len() - at);
        let path = code[at..at + len].trim_end_matches(':');
        if path.contains("::") {
            raw.push(path.split("::").map(String::from).collect());
        }
        i += code[at..at + len].chars().count().max(1);
    }
    let mut out = Vec::new();
    for segs in raw {
        let Some(first) = segs.first() else { continue };
        let (mut base, mut rest): (Vec<String>, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            "self" | "super" => (here.to_vec(), &segs[..]),
            name if children.contains(name) => (here.to_vec(), &segs[..]),
            _ => continue,
        };
        while let Some(s) = rest.first() {
            match s.as_str() {
                "super" => {
                    base.pop();
                }
                "self" => {}
                _ => break,
            }
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        out.push(base);
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
    /// File → its functions outside tests: (name, first line, lines from `fn` to `}`).
    functions: BTreeMap<PathBuf, Vec<(String, usize, usize)>>,
}

fn read_crate() -> Crate {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let texts = files.iter().map(|f| {
        let rel = f.strip_prefix(&root).unwrap().to_path_buf();
        (rel, std::fs::read_to_string(f).unwrap())
    });
    crate_of(texts.collect())
}

/// The crate that these files (paths relative to `src/`, and their text) make.
fn crate_of(files: Vec<(PathBuf, String)>) -> Crate {
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|(rel, _)| (module_of(rel), Path::new("src").join(rel)))
        .collect();
    let mut krate = Crate {
        edges: BTreeMap::new(),
        lines: BTreeMap::new(),
        functions: BTreeMap::new(),
    };
    for (rel, text) in &files {
        let name = Path::new("src").join(rel);
        krate.lines.insert(name.clone(), text.lines().count());
        let code = code_of(text);
        let targets: BTreeSet<PathBuf> = named_paths(&code, &module_of(rel))
            .iter()
            .filter_map(|p| resolve(p, &modules))
            .filter(|t| *t != name)
            .collect();
        krate.edges.insert(name.clone(), targets);
        krate.functions.insert(name, functions(&code));
    }
    krate
}

/// The functions with a body in `code` (as [`code_of`] leaves it): each one's name, the line
/// its `fn` is on (from 1) and its length in lines, from that line to its closing brace.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find("fn ") {
        let at = from + k;
        from = at + 3;
        if code[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let name: String = code[from..].chars().take_while(|c| ident(*c)).collect();
        // The body's brace, or the `;` of a declaration, outside the signature's brackets
        // (`fn f(a: [u8; 4]) {`).
        let mut nest = 0i32;
        let body = code[from..].char_indices().find_map(|(j, c)| {
            match c {
                '(' | '[' => nest += 1,
                ')' | ']' => nest -= 1,
                '{' | ';' if nest == 0 => return Some(from + j),
                _ => {}
            }
            None
        });
        let Some(body) = body else {
            break;
        };
        if name.is_empty() || code.as_bytes()[body] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut end = code.len();
        for (j, c) in code[body..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body + j;
                        break;
                    }
                }
                _ => {}
            }
        }
        let first = code[..at].matches('\n').count() + 1;
        let last = code[..end].matches('\n').count() + 1;
        out.push((name, first, last - first + 1));
    }
    out
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
        // A test file is compiled only with the tests, as a `#[cfg(test)]` module is.
        let Some(layer) = layer_of(file).filter(|_| !is_test_file(file)) else {
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

/// The circles of the crate's import graph, each as the path that closes it.
fn circles(krate: &Crate) -> Vec<String> {
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
            visit(f, krate, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    cycles
}

#[test]
fn no_import_circle() {
    let cycles = circles(&read_crate());
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
fn the_path_parser_reads_groups_super_children_and_skips_tests_and_literals() {
    let paths = |code: &str, here: &[&str]| -> Vec<String> {
        let here: Vec<String> = here.iter().map(|s| s.to_string()).collect();
        let mut p: Vec<String> = named_paths(&code_of(code), &here)
            .iter()
            .map(|p| p.join("::"))
            .collect();
        p.sort();
        p
    };
    // Groups at any depth, `super::` from a file, `self` in a group.
    assert_eq!(
        paths(
            "use crate::drive::{run::execute, load::{self, X as Y}};\nlet x = super::document::X;",
            &["results", "stats"],
        ),
        [
            "drive::load",
            "drive::load::X",
            "drive::run::execute",
            "results::document::X"
        ]
    );
    // `super` of a mod.rs is its parent module; `super::super` climbs twice.
    assert_eq!(paths("use super::x;", &["sim"]), ["x"]);
    assert_eq!(
        paths("fn f() { super::super::a::b(); }", &["x", "y", "z"]),
        ["x::a::b"]
    );
    // A child the file declares, named bare in code or in a `use`.
    assert_eq!(
        paths(
            "mod child;\npub use child::{A, B};\nfn f() { child::g(); other::h(); }",
            &["w"],
        ),
        ["w::child::A", "w::child::B", "w::child::g"]
    );
    // Nothing in a test module, a comment or a string counts.
    assert_eq!(
        paths(
            "// crate::a::b\nconst S: &str = \"crate::c::d\";\n#[cfg(test)]\nmod tests {\n fn f() { crate::x(); }\n}\nfn g() { crate::e::f(); }",
            &["w"],
        ),
        ["e::f"]
    );
}

#[test]
fn a_circle_through_a_child_path_is_found() {
    // The parent names its child bare; the child takes an item of its parent by `super::`.
    let planted = |child_uses: &str| {
        crate_of(vec![
            ("lib.rs".into(), "pub mod w;".into()),
            (
                "w/mod.rs".into(),
                "mod child;\nmod leaf;\npub use child::A;\npub struct B;".into(),
            ),
            ("w/child.rs".into(), format!("{child_uses}\npub struct A;")),
            ("w/leaf.rs".into(), "pub struct C;".into()),
        ])
    };
    assert_eq!(
        circles(&planted("use super::B;")),
        ["src/w/child.rs -> src/w/mod.rs -> src/w/child.rs"]
    );
    // The same item taken from a leaf file beside the child: no circle.
    assert!(circles(&planted("use super::leaf::C;")).is_empty());
}

#[test]
fn functions_are_measured_from_fn_to_closing_brace() {
    let code = code_of(
        "trait T { fn decl(&self); }\nfn f(a: [u8; 4]) {\n    let s = \"}\";\n    if true {\n    }\n}\n#[cfg(test)]\nmod tests { fn long() {\n\n} }",
    );
    assert_eq!(functions(&code), [("f".to_string(), 2, 5)]);
}

/// A function of library code longer than this is two steps that want names.
const MAX_FUNCTION_LINES: usize = 120;

#[test]
fn library_functions_stay_short() {
    let krate = read_crate();
    let mut long = Vec::new();
    for (file, fns) in krate.functions.iter().filter(|(f, _)| !is_test_file(f)) {
        for (name, line, n) in fns.iter().filter(|f| f.2 > MAX_FUNCTION_LINES) {
            long.push(format!("{}:{line} fn {name}: {n} lines", file.display()));
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_product_names_no_ticket_numbers() {
    // A reader of the repository cannot open the project's issues: code and docs say what and
    // why; the history (with its numbers) is CHANGELOG.md's.
    let root = src().parent().unwrap().to_path_buf();
    let mut files = vec![root.join("README.md")];
    rust_files(&src(), &mut files);
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        files.push(entry.unwrap().path());
    }
    let ticket = regex::Regex::new(r"(?i)\bissues? #?[0-9]").unwrap();
    let mut found = Vec::new();
    for file in files.iter().filter(|f| f.is_file()) {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if ticket.is_match(line) {
                let at = file.strip_prefix(&root).unwrap().display();
                found.push(format!("{at}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "ticket numbers:\n{}", found.join("\n"));
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
