//! The integration tests: one test binary (linking the library once, not once per file), one
//! module per area in `tests/suite/`, and the toolkit they share in `tests/common/` (the
//! binary as a command, the simulator, config builders, record readers, the real servers).
//!
//! To add tests: add a function to the area's module, or a file `tests/suite/NAME.rs` and its
//! `mod NAME;` line below (a file left out is never compiled: `every_suite_file_is_declared`
//! fails on it). A helper two modules need goes into `tests/common`, once. Tests run on
//! parallel threads of this one process: a test that measures time against the simulator
//! repeats a disturbed measurement, and tests that must not overlap one another take one of
//! the toolkit's locks ([`common::serial`]). A test that changes the whole process (its
//! environment, its signal handlers, its working directory) cannot live here: it gets its
//! own `tests/NAME.rs` binary, with the reason at its top.

mod common;

mod suite {
    // What runs on every commit: the crate's layers and its hygiene.
    mod hygiene;
    mod layers;
    mod sim_layers;

    // The binary as a user runs it, against the built-in simulator.
    mod cli;
    mod dashboard;
    mod deploy;
    mod files;
    mod inputs;
    mod live;
    mod shape;
    mod shard;
    mod steady;
    mod wiring;

    // Measurement against the exact simulator, over real HTTP on 127.0.0.1.
    mod accounting;
    mod adaptive;
    mod autoscale;
    mod endpoints;
    mod faults;
    mod hooks;
    mod jobs;
    mod run_sim;
    mod sim_hostile;
    mod sources;
    mod threads;
    mod upload_tls;
    mod users;

    // Workloads and backends.
    mod audio;
    mod embeddings;
    mod lora;
    mod media;
    mod mix;
    mod mix_alone;
    mod reasoning;
    mod rerank;
    mod spec_decode;
    mod structured;
    mod trace_share;

    // Joins, sweeps, searches and their documents.
    mod capacity;
    mod cliff;
    mod join;
    mod join_save;
    mod records_parquet;
    mod server_account;

    // Reports, comparisons and plots.
    mod compare;
    mod formats;
    mod history;
    mod html_browser;
    mod pareto;
    mod view;

    // Real servers: llama.cpp with a small model, and LiteLLM's proxy in front of it.
    mod real_litellm;
    mod real_server;
}

/// Every file in `tests/suite/` is one of the modules above: a file cargo would never compile
/// is a test that silently never runs.
#[test]
fn every_suite_file_is_declared() {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(tests.join("main.rs")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(tests.join("suite")).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && !main.contains(&format!("mod {stem};")) {
            missing.push(path.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "files in tests/suite/ that tests/main.rs does not declare: {missing:?}"
    );
}
