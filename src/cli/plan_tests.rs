//! The plan's rules between flags, each with its typed error, and what a plan holds.

use clap::Parser;

use super::*;
use crate::cli::{Cli, Command};
use crate::config::error::ConfigError;
use crate::config::RequestRate;
use crate::results::error::ResultsError;

fn parse(args: &[&str]) -> Command {
    let argv = ["servebench"].iter().chain(args).copied();
    Cli::try_parse_from(argv)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
        .command
}

fn run_args(args: &[&str]) -> RunArgs {
    match parse(&[&["run"][..], args].concat()) {
        Command::Run(a) => *a,
        _ => unreachable!(),
    }
}

fn search_args(args: &[&str]) -> SearchArgs {
    match parse(&[&["search"][..], args].concat()) {
        Command::Search(a) => *a,
        _ => unreachable!(),
    }
}

fn refused(args: &[&str]) -> PlanError {
    match check(&run_args(args), None) {
        Err(e) => e,
        Ok(c) => panic!("{args:?} was planned as {:?}", c.asked),
    }
}

fn refused_search(args: &[&str]) -> PlanError {
    let s = search_args(args);
    match check(&s.run, Some(&s)) {
        Err(e) => e,
        Ok(c) => panic!("{args:?} was planned as {:?}", c.asked),
    }
}

#[test]
fn each_rule_between_flags_is_refused_with_its_typed_error() {
    use PlanError as E;
    let url = ["--base-url", "http://127.0.0.1:8000"];
    type Is = fn(&PlanError) -> bool;
    let cases: Vec<(Vec<&str>, Is)> = vec![
        (vec!["--num-prompts", "1,2", "--request-rate", "1,2"], |e| {
            matches!(e, E::SweepOfTwo)
        }),
        (vec!["--max-concurrency", "1,2", "--shard", "0/2"], |e| {
            matches!(e, E::ShardedSweep)
        }),
        (
            vec!["--num-prompts", "4,8", "--start-at", "2030-01-01T00:00:00Z"],
            |e| matches!(e, E::ShardedSweep),
        ),
        (vec!["--stages", "5:1", "--repeat", "2"], |e| {
            matches!(e, E::StagesNotARun)
        }),
        (vec!["--stages", "5:1", "--num-prompts", "1,2"], |e| {
            matches!(e, E::StagesNotARun)
        }),
        (vec!["--repeat", "2", "--shard", "0/2"], |e| {
            matches!(e, E::RepeatNotARun)
        }),
        (
            vec!["--repeat", "3", "--start-at", "2030-01-01T00:00:00Z"],
            |e| matches!(e, E::RepeatNotARun),
        ),
        (vec!["--summary-only"], |e| matches!(e, E::SummaryOfOne)),
        (
            vec!["--metadata", "gpu=a", "--metadata", "gpu=b"],
            |e| matches!(e, E::MetadataTwice(k) if k == "gpu"),
        ),
        (
            [
                &url[..],
                &["--tokenizer", "words", "--sim-preset", "exact"][..],
            ]
            .concat(),
            |e| matches!(e, E::SimFlagWithServer("--sim-preset")),
        ),
        (
            [&url[..], &["--tokenizer", "words", "--time-scale", "2"][..]].concat(),
            |e| matches!(e, E::SimFlagWithServer("--time-scale")),
        ),
        (url.to_vec(), |e| matches!(e, E::TokenizerRequired)),
    ];
    for (args, is) in cases {
        let e = refused(&args);
        assert!(is(&e), "{args:?}: {e:?}");
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    // What the flags allow is planned as the mode they ask for.
    let asked = |args: &[&str]| check(&run_args(args), None).unwrap().asked;
    assert_eq!(asked(&[]), Asked::Single);
    assert_eq!(asked(&["--shard", "1/2"]), Asked::Single);
    assert_eq!(
        asked(&["--repeat", "3", "--summary-only"]),
        Asked::Repeat(3)
    );
    assert_eq!(
        asked(&["--stages", "5:1,10:1", "--shard", "0/2"]),
        Asked::Stages
    );
    assert_eq!(
        asked(&["--request-rate", "1,inf"]),
        Asked::Sweep(
            LoadParameter::RequestRate,
            vec![
                SweepValue::Rate(RequestRate::PerSecond(1.0)),
                SweepValue::Rate(RequestRate::Infinite)
            ]
        )
    );
}

#[test]
fn a_search_s_rules_are_the_plan_s_too() {
    use PlanError as E;
    let slo = ["--goodput", "ttft:500"];
    let with = |more: &[&'static str]| [&slo[..], more].concat();
    assert!(matches!(refused_search(&[]), E::SearchWithoutSlo));
    assert!(matches!(refused_search(&with(&["--target", "0"])), E::Target(t) if t == 0.0));
    assert!(matches!(
        refused_search(&with(&["--start", "8", "--max", "4"])),
        E::StartMax
    ));
    assert!(matches!(
        refused_search(&with(&["--precision", "1"])),
        E::Precision(_)
    ));
    assert!(matches!(
        refused_search(&with(&["--shard", "0/2"])),
        E::ShardedSearch
    ));
    // A search is not a single run: --summary-only is not refused for it, as before.
    let s = search_args(&with(&["--summary-only"]));
    assert!(matches!(
        check(&s.run, Some(&s)).unwrap().asked,
        Asked::Search(_)
    ));
}

#[test]
fn a_sweep_s_steps_are_validated_by_the_plan_before_any_runs() {
    let base = ValidConfig::new(RunConfig::default()).unwrap();
    let counts = |v: &[u64]| v.iter().map(|&n| SweepValue::Count(n)).collect::<Vec<_>>();
    let err = sweep_steps(&base, LoadParameter::NumPrompts, &counts(&[4, 6, 4])).unwrap_err();
    let PlanError::Config(c) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(c.option(), "--num-prompts");
    assert!(
        err.to_string().contains("given twice (steps 1 and 3)"),
        "{err}"
    );
    // A step whose load breaks a rule the first kept: the tokens --num-prompts builds.
    let huge = counts(&[1, crate::config::MAX_PROMPTS]);
    let err = sweep_steps(&base, LoadParameter::NumPrompts, &huge).unwrap_err();
    assert!(
        matches!(&err, PlanError::Config(c) if c.option() == "--num-prompts"),
        "{err}"
    );
    let steps = sweep_steps(&base, LoadParameter::NumPrompts, &counts(&[2, 8])).unwrap();
    assert_eq!(steps[1].1.load.num_prompts, 8);
}

#[test]
fn the_simulator_s_flags_are_refused_with_their_typed_error() {
    let sim = |args: &[&str]| match parse(&[&["sim"][..], args].concat()) {
        Command::Sim(a) => a.config(),
        _ => unreachable!(),
    };
    let err = sim(&["--max-num-seqs", "4"]).unwrap_err();
    assert!(
        matches!(
            &err,
            PlanError::EngineOnly {
                flag: "--max-num-seqs",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "--max-num-seqs needs an engine preset (--preset exact has no engine)"
    );
    let err = sim(&["--ttft-ms", "1e300"]).unwrap_err();
    assert!(
        matches!(
            err,
            PlanError::NotADuration {
                flag: "ttft-ms",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(matches!(
        sim(&["--error-rate", "2"]),
        Err(PlanError::Simulator(_))
    ));
    assert!(sim(&[]).is_ok());
}

#[test]
fn every_file_of_every_mode_is_listed_once_for_the_one_check() {
    let dir = tempfile::tempdir().unwrap();
    let out = Output {
        dir: dir.path().to_path_buf(),
        stem: "s".into(),
        overwrite: false,
        records_parquet: false,
    };
    let cfg = ValidConfig::new(RunConfig::default()).unwrap();
    let names = |mode: &Mode| -> Vec<String> {
        let files = crate::drive::plan::targets(&out, mode, &cfg);
        let mut names: Vec<String> = (files.iter())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&Mode::Repeat { times: 2 }),
        [
            "s.rep1.json",
            "s.rep1.records.jsonl",
            "s.rep2.json",
            "s.rep2.records.jsonl",
            "s.repeat.json"
        ]
    );
    let mut staged = RunConfig::default();
    staged.load.shape.stages = vec!["5:1".parse().unwrap(), "9:1".parse().unwrap()];
    let staged = ValidConfig::new(staged).unwrap();
    let files = crate::drive::plan::targets(&out, &Mode::Stages { start_at: None }, &staged);
    assert_eq!(files.len(), 7, "{files:?}");
    // A stage's records file that exists refuses the whole session, before it runs.
    std::fs::write(dir.path().join("s-stage2.records.jsonl"), "").unwrap();
    let mode = Mode::Stages { start_at: None };
    let err = check_targets(&out, &mode, &staged).unwrap_err();
    assert!(matches!(err, ResultsError::Exists { .. }), "{err}");
    let over = Output {
        overwrite: true,
        ..out.clone()
    };
    assert!(check_targets(&over, &mode, &staged).is_ok());
    // --records-format parquet: each run's Parquet records are its files too.
    let parquet = Output {
        records_parquet: true,
        ..out.clone()
    };
    let single = Mode::Single { start_at: None };
    assert!(check_targets(&parquet, &single, &cfg).is_ok());
    std::fs::write(dir.path().join("s.records.parquet"), "").unwrap();
    let err = check_targets(&parquet, &single, &cfg).unwrap_err();
    assert!(err.to_string().contains("s.records.parquet"), "{err}");
    assert!(check_targets(&out, &single, &cfg).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_holds_the_final_config_with_the_started_simulator_s_address() {
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_string_lossy().into_owned();
    let args = run_args(&[
        "--sim-preset",
        "exact",
        "--time-scale",
        "4",
        "--num-prompts",
        "3,6",
        "--result-dir",
        &dir_arg,
        "--result-filename",
        "p.json",
    ]);
    let Planned {
        plan, simulator, ..
    } = run(args).await.unwrap();
    let sim = simulator.expect("the built-in simulator is started");
    assert_eq!(plan.config.base_url, sim.base_url());
    assert_eq!(plan.config.time_scale, 4.0);
    assert!(plan.config.simulated);
    assert_eq!(plan.output.stem, "p");
    let Mode::Sweep { param, steps, .. } = &plan.mode else {
        panic!("{:?}", plan.mode)
    };
    assert_eq!(*param, LoadParameter::NumPrompts);
    assert_eq!(steps[1].1.load.num_prompts, 6);
    assert_eq!(steps[1].1.base_url, sim.base_url());
    assert_eq!(plan.targets().len(), 5);
    sim.shutdown().await;
    // The typed error of a rule on the config passes through unchanged.
    let args = run_args(&["--burstiness", "0", "--result-dir", &dir_arg]);
    let err = run(args).await.err().expect("refused");
    assert!(
        matches!(&err, PlanError::Config(ConfigError::Invalid { option, .. }) if option == "--burstiness")
    );
    assert_eq!(
        err.to_string(),
        "invalid --burstiness: must be a positive number"
    );
}
