//! Support code shared by the integration tests (`mod common;` in tests/*.rs).
// Each test binary compiles this module on its own and uses only part of it.
#![allow(dead_code)]

pub mod litellm;
pub mod real_server;
pub mod relay;

/// The URL a `servebench sim` child (started with its stdout piped) prints on its first line,
/// `... listening on http://HOST:PORT`.
pub fn sim_url(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("sim's stdout is piped"))
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://"), "sim printed {line:?}");
    url
}
