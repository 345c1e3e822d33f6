//! The simulator's internal layers (`src/sim/mod.rs`, "Layers inside the simulator"): every
//! module of `src/sim` imports only modules on a lower layer, so its imports form a DAG. The
//! same rule holds inside `src/sim/apis/` and `src/sim/stream/` (their `mod.rs` docs).
//!
//! It reads the sources: `super::X` and `crate::sim::X` paths outside comments, groups
//! (`super::{a, b}`) included. A path to an item of a `mod.rs` (not a module) counts as an
//! import of that `mod.rs`, the top layer. Test files (`tests.rs`, `engine_tests.rs`, the
//! `tests/` folder) are exempt.

use std::path::Path;

/// `src/sim/*`: module → layer (`mod.rs` wires everything and sits on top).
const SIM: &[(&str, u32)] = &[
    ("error", 0),
    ("spec", 0),
    ("wire", 0),
    ("precise", 1),
    ("text", 1),
    ("metrics", 1),
    ("prefix_cache", 1),
    ("slots", 1),
    ("spans", 1),
    ("time", 2),
    ("cost", 2),
    ("faults", 2),
    ("structured", 2),
    ("autoscale", 2),
    ("engine", 3),
    ("presets", 4),
    ("config", 5),
    ("state", 6),
    ("timings", 6),
    ("stream", 7),
    ("sched", 8),
    ("http1", 9),
    ("apis", 10),
    ("mod", 11),
];
const STREAM: &[(&str, u32)] = &[
    ("machine", 0),
    ("body", 1),
    ("exact", 2),
    ("engine", 2),
    ("mod", 3),
];
const APIS: &[(&str, u32)] = &[
    ("reject", 0),
    ("trace", 0),
    ("session", 0),
    ("media", 0),
    ("form", 0),
    ("events", 0),
    ("common", 1),
    ("openai", 2),
    ("completions", 3),
    ("chat", 3),
    ("tgi", 3),
    ("llamacpp", 3),
    ("anthropic", 3),
    ("responses", 3),
    ("embeddings", 3),
    ("rerank", 3),
    ("info", 3),
    ("audio", 3),
    ("control", 3),
    ("replicas", 2),
    ("mod", 4),
];

fn layer(table: &[(&str, u32)], name: &str) -> Option<u32> {
    table.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// The first path segment after each occurrence of `prefix` (each item of a `{...}` group).
/// With `prefix` = `super::`, `super::super::x` is not counted (the caller asks for it).
fn targets(code: &str, prefix: &str) -> Vec<String> {
    let segment = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
        if code[..i].ends_with("super::") || rest.starts_with("super::") {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            out.extend(group[..end].split(',').map(segment));
        } else {
            out.push(segment(rest));
        }
    }
    out.retain(|s| !s.is_empty() && s != "self");
    out
}

/// The file's text without `//` comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check_dir(
    dir: &Path,
    own: &[(&str, u32)],
    parent: Option<(&str, &[(&str, u32)])>,
) -> Vec<String> {
    let mut bad = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.extension().is_none_or(|e| e != "rs") || name.ends_with("tests") {
            continue;
        }
        let here = layer(own, &name)
            .unwrap_or_else(|| panic!("{}: not in the layer table of this test", path.display()));
        let code = code(&path);
        let mut check = |target: &str, table: &[(&str, u32)], from: u32, what: &str| {
            let to = layer(table, target).unwrap_or_else(|| layer(table, "mod").unwrap());
            if to >= from {
                bad.push(format!(
                    "{} (layer {from}) imports {what}{target} (layer {to})",
                    path.display()
                ));
            }
        };
        match parent {
            // A top-level file: `super::x` and `crate::sim::x` are sim modules.
            None if name != "mod" => {
                for t in targets(&code, "super::")
                    .into_iter()
                    .chain(targets(&code, "crate::sim::"))
                {
                    check(&t, own, here, "sim::");
                }
            }
            None => {}
            // A file in a sub-folder: siblings by `super::x`, sim modules by `crate::sim::x`.
            Some((folder, sim)) => {
                if name != "mod" {
                    for t in targets(&code, "super::") {
                        check(&t, own, here, &format!("{folder}::"));
                    }
                }
                let folder_layer = layer(sim, folder).unwrap();
                for t in targets(&code, "crate::sim::")
                    .into_iter()
                    .chain(targets(&code, "super::super::"))
                {
                    check(&t, sim, folder_layer, "sim::");
                }
            }
        }
    }
    bad
}

#[test]
fn sim_modules_import_only_lower_layers() {
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sim");
    let mut bad = check_dir(&sim, SIM, None);
    bad.extend(check_dir(
        &sim.join("stream"),
        STREAM,
        Some(("stream", SIM)),
    ));
    bad.extend(check_dir(&sim.join("apis"), APIS, Some(("apis", SIM))));
    // Every folder of src/sim but its tests is checked above.
    for entry in std::fs::read_dir(&sim).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            assert!(
                ["stream", "apis", "tests"].contains(&name.as_str()),
                "src/sim/{name}/ is not checked by this test"
            );
        }
    }
    assert!(bad.is_empty(), "upward imports:\n{}", bad.join("\n"));
}

#[test]
fn the_checker_sees_groups_and_nested_paths() {
    let code =
        "use super::{engine, metrics};\nuse crate::sim::stream::{A, B};\nuse super::super::time;";
    assert_eq!(targets(code, "super::"), ["engine", "metrics"]);
    assert_eq!(targets(code, "crate::sim::"), ["stream"]);
    assert_eq!(targets(code, "super::super::"), ["time"]);
}
