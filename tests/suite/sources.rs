//! `--source-addresses`: each new connection bound to the next of the given local addresses,
//! so one server address and port is reached through more than one address's ephemeral
//! ports. 127.0.0.2 and 127.0.0.3 are the loopback on Linux: the simulator on 127.0.0.1 sees
//! connections from both (`/sim/stats` `peer_addresses`, copied into the run's
//! `server_stats`), and a bad list is refused in one line before anything starts. The HTTPS
//! path (reqwest) is checked in `upload_tls.rs`.

use crate::common;

use common::SimProcess;

/// The distinct addresses the simulator saw connections from, as the run saved them.
fn peers(result: &serde_json::Value) -> Vec<String> {
    let list = &result["validity"]["server_stats"]["peer_addresses"];
    let list = list
        .as_array()
        .unwrap_or_else(|| panic!("no peer_addresses: {result}"));
    list.iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn connections_leave_from_every_source_address() {
    let _guard = common::serial();
    let sim = SimProcess::start(&["--ttft-ms", "5", "--itl-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, sources: Option<&str>| {
        let mut args = vec![
            "run",
            "--base-url",
            &sim.url,
            "--tokenizer",
            "words",
            "--num-prompts",
            "16",
            "--max-concurrency",
            "4",
            "--input-len",
            "8",
            "--output-len",
            "4",
            "--no-preflight",
            "-q",
            "--result-dir",
            common::path_str(dir.path()),
            "--result-filename",
            name,
        ];
        args.extend(
            sources
                .map(|s| ["--source-addresses", s])
                .into_iter()
                .flatten(),
        );
        common::run_ok(&args);
        common::json(&dir.path().join(name))
    };
    let result = run("two.json", Some("127.0.0.2,127.0.0.3"));
    assert_eq!(result["completed"], 16, "{result}");
    let seen = peers(&result);
    for ip in ["127.0.0.2", "127.0.0.3"] {
        assert!(
            seen.iter().any(|p| p == ip),
            "no connection from {ip}: {seen:?}"
        );
    }
    // Without the flag the kernel chooses (127.0.0.1 for 127.0.0.1): no new address shows.
    let before = seen.len();
    let result = run("none.json", None);
    assert_eq!(result["completed"], 16, "{result}");
    let seen = peers(&result);
    assert_eq!(seen.len(), before, "{seen:?}");
}

#[test]
fn a_bad_source_address_list_is_refused_in_one_line() {
    for (list, why) in [
        ("127.0.0.2,nonsense", "'nonsense' is not an IP address"),
        ("", "no address given"),
        ("127.0.0.2,127.0.0.2", "named twice"),
        ("127.0.0.2,::1", "mixes IPv4 and IPv6"),
    ] {
        let err = common::run_fails(&["run", "--num-prompts", "1", "--source-addresses", list]);
        assert!(
            err.contains("--source-addresses") && err.contains(why),
            "{list}: {err}"
        );
    }
    let many: Vec<String> = (1..=65).map(|i| format!("127.0.1.{i}")).collect();
    let err = common::run_fails(&["run", "--source-addresses", &many.join(",")]);
    assert!(err.contains("65 addresses, at most 64"), "{err}");
}
