//! The Kubernetes manifests and the container image in `deploy/`, checked without a cluster:
//! the YAML is parsed, the fields an Indexed Job needs are checked, and each pod's command
//! line is rendered as Kubernetes would (`$(VAR)` from the ConfigMap and
//! `JOB_COMPLETION_INDEX`) and parsed by servebench's own command line. So a shard's flags,
//! the files the shards write and the files the merge reads are known to fit together.
//! (No Kubernetes schema validator installs from the package registries without bundling the
//! schemas of every Kubernetes version; see docs/distributed.md.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Parser;
use servebench::cli::{Cli, Command};
use servebench::config::shard::Shard;
use yaml_rust2::{Yaml, YamlLoader};

fn docs(file: &str) -> Vec<Yaml> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/k8s")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn of_kind<'a>(docs: &'a [Yaml], kind: &str) -> &'a Yaml {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind}"))
}

fn strings(y: &Yaml) -> Vec<String> {
    y.as_vec()
        .expect("a list")
        .iter()
        .map(|s| s.as_str().expect("a string").to_string())
        .collect()
}

/// Expands `$(NAME)` as the kubelet does, from `env`; an unknown name fails the test.
fn expand(arg: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(i) = rest.find("$(") {
        let end = rest[i..].find(')').expect("closed $(") + i;
        let name = &rest[i + 2..end];
        out.push_str(&rest[..i]);
        out.push_str(env.get(name).unwrap_or_else(|| panic!("{name} is not set")));
        rest = &rest[end + 1..];
    }
    out + rest
}

/// The ConfigMap's data, which both Jobs take as their environment.
fn config_map(docs: &[Yaml]) -> BTreeMap<String, String> {
    let cm = of_kind(docs, "ConfigMap");
    assert_eq!(cm["metadata"]["name"].as_str(), Some("servebench-run"));
    cm["data"]
        .as_hash()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().into(), v.as_str().unwrap().into()))
        .collect()
}

/// The pod template's one container, after checking what every Job here needs: no retries,
/// the ConfigMap as environment, and the results volume from the PVC mounted at /results.
fn container(job: &Yaml) -> &Yaml {
    assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"));
    assert_eq!(job["spec"]["backoffLimit"].as_i64(), Some(0));
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
    let volume = &pod["volumes"][0];
    assert_eq!(
        volume["persistentVolumeClaim"]["claimName"].as_str(),
        Some("servebench-results")
    );
    let c = &pod["containers"][0];
    assert!(pod["containers"][1].is_badvalue(), "one container");
    assert_eq!(
        c["envFrom"][0]["configMapRef"]["name"].as_str(),
        Some("servebench-run")
    );
    let mount = &c["volumeMounts"][0];
    assert_eq!(mount["name"].as_str(), volume["name"].as_str());
    assert_eq!(mount["mountPath"].as_str(), Some("/results"));
    assert_eq!(
        c["image"].as_str(),
        Some(format!("servebench:{}", env!("CARGO_PKG_VERSION")).as_str()),
        "the image tag follows the crate version"
    );
    c
}

#[test]
fn the_indexed_job_runs_four_shards_of_one_run_and_the_merge_reads_their_results() {
    let job_docs = docs("servebench-job.yaml");
    let env = config_map(&job_docs);
    let pvc = of_kind(&job_docs, "PersistentVolumeClaim");
    assert_eq!(pvc["metadata"]["name"].as_str(), Some("servebench-results"));
    assert_eq!(
        strings(&pvc["spec"]["accessModes"]),
        ["ReadWriteMany"],
        "four pods on different nodes write to it"
    );
    let job = of_kind(&job_docs, "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    assert_eq!(spec["completions"].as_i64(), Some(4));
    assert_eq!(spec["parallelism"].as_i64(), Some(4), "all shards at once");
    let args = strings(&container(job)["args"]);
    assert!(args.contains(&"--shard=$(JOB_COMPLETION_INDEX)/4".to_string()));

    // Each pod's command line, as the kubelet expands it, parsed by servebench itself.
    let mut configs = Vec::new();
    let mut written = Vec::new();
    for index in 0..4u64 {
        let mut env = env.clone();
        env.insert("JOB_COMPLETION_INDEX".into(), index.to_string());
        let argv = args.iter().map(|a| expand(a, &env));
        let cli = Cli::try_parse_from(std::iter::once("servebench".to_string()).chain(argv))
            .unwrap_or_else(|e| panic!("shard {index}: {e}"));
        let Command::Run(run) = cli.command else {
            panic!("shard {index} does not run");
        };
        assert_eq!(run.shard, Some(Shard { index, count: 4 }));
        let start = run.start_at.expect("--start-at");
        assert_eq!(
            start,
            servebench::config::shard::parse_start_at(&env["START_AT"]).unwrap()
        );
        assert!(!run.base_url.is_empty() && run.tokenizer.is_some());
        assert!(run.result_dir.starts_with("/results"));
        let stem = run.result_filename.clone().expect("--result-filename");
        written.push(run.result_dir.join(format!("{stem}.json")));
        let cfg = run
            .config(run.base_url[0].clone(), false)
            .unwrap_or_else(|e| panic!("shard {index}: {e}"));
        servebench::config::valid::ValidConfig::new(cfg.clone())
            .unwrap_or_else(|e| panic!("shard {index}: {e}"));
        configs.push(servebench::config::RunConfig {
            load: servebench::config::LoadSpec {
                shard: None,
                ..cfg.load
            },
            ..cfg
        });
    }
    assert!(
        configs.windows(2).all(|w| w[0] == w[1]),
        "the shards differ only in --shard"
    );

    let merge_docs = docs("servebench-merge.yaml");
    let merge = of_kind(&merge_docs, "Job");
    assert!(merge["spec"]["completionMode"].is_badvalue(), "one pod");
    let argv = strings(&container(merge)["args"])
        .iter()
        .map(|a| expand(a, &env))
        .collect::<Vec<_>>();
    let cli = Cli::try_parse_from(std::iter::once("servebench".to_string()).chain(argv)).unwrap();
    let Command::Merge(m) = cli.command else {
        panic!("the merge Job does not merge");
    };
    assert_eq!(
        m.files, written,
        "the merge reads exactly the shards' results"
    );
    assert!(!m.allow_missing, "a missing shard fails the merge");
    assert_eq!(m.output.parent(), written[0].parent());
}

#[test]
fn the_image_is_a_plain_release_build_of_servebench() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dockerfile = std::fs::read_to_string(root.join("deploy/Dockerfile")).unwrap();
    let runs: Vec<&str> = dockerfile
        .lines()
        .filter(|l| l.starts_with("RUN cargo"))
        .collect();
    assert_eq!(
        runs,
        ["RUN cargo build --release --locked --bin servebench"]
    );
    assert!(dockerfile
        .contains("COPY --from=build /src/target/release/servebench /usr/local/bin/servebench"));
    assert!(dockerfile.contains("ENTRYPOINT [\"servebench\"]"));
    let ignore = std::fs::read_to_string(root.join(".dockerignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l == "target"),
        "the build context leaves out target/"
    );
}
