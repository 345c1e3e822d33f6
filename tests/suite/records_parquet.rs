//! Per-request records as Parquet: `run --records-format parquet` writes the Parquet file
//! from the JSON Lines records at the run's end (after Ctrl-C too), `servebench export`
//! converts later, and each file reads back with the Parquet crate (and with Python's pyarrow
//! where this machine has it) to the same rows as the JSON Lines. Runs against the built-in
//! simulator, bounded in size; bad files are refused in one line naming them.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use servebench::measure::record::{read_jsonl, RequestRecord};

use crate::common;

fn jsonl(path: &Path) -> Vec<RequestRecord> {
    read_jsonl(path).unwrap().collect()
}

/// The rows of a Parquet records file read with the crate's own reader: `id`s and each row's
/// chunk times.
fn parquet_rows(path: &Path) -> Vec<(u64, Vec<u64>)> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let ids = batch
            .column_by_name("id")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .clone();
        let chunks = batch
            .column_by_name("chunk_ns")
            .unwrap()
            .as_list::<i32>()
            .clone();
        for i in 0..batch.num_rows() {
            let c = chunks.value(i);
            let c = c.as_primitive::<UInt64Type>().values().to_vec();
            rows.push((ids.value(i), c));
        }
    }
    rows
}

/// The same rows read by pyarrow, as `id chunks` lines; `None` (with the reason printed)
/// where this machine has no pyarrow.
fn pyarrow_rows(path: &Path) -> Option<Vec<(u64, usize)>> {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import pyarrow"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => {
            println!("pyarrow check skipped: python3 with pyarrow is not on this machine");
            return None;
        }
    }
    let script = "import sys, pyarrow.parquet as pq\n\
                  t = pq.read_table(sys.argv[1])\n\
                  for i, c in zip(t.column('id').to_pylist(), t.column('chunk_ns').to_pylist()):\n\
                  \x20   print(i, len(c))\n";
    let out = std::process::Command::new("python3")
        .args(["-c", script, path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    Some(
        text.lines()
            .map(|l| {
                let (a, b) = l.split_once(' ').unwrap();
                (a.parse().unwrap(), b.parse().unwrap())
            })
            .collect(),
    )
}

/// The rows of the Parquet file are those of the JSON Lines, in order.
fn assert_same_rows(jsonl_path: &Path, parquet: &Path) {
    let records = jsonl(jsonl_path);
    assert!(!records.is_empty());
    let rows = parquet_rows(parquet);
    let expected: Vec<(u64, Vec<u64>)> =
        records.iter().map(|r| (r.id, r.chunk_ns.clone())).collect();
    assert_eq!(rows, expected);
    if let Some(py) = pyarrow_rows(parquet) {
        let expected: Vec<(u64, usize)> =
            records.iter().map(|r| (r.id, r.chunk_ns.len())).collect();
        assert_eq!(py, expected, "pyarrow reads the same rows");
    }
    // And back through servebench's own reader: the same records, every field.
    let mut back = Vec::new();
    servebench::results::records_parquet::read_parquet(parquet, |r| {
        back.push(r);
        Ok(())
    })
    .unwrap();
    assert_eq!(back, records);
}

fn run_args<'a>(dir: &'a str, name: &'a str, n: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--num-prompts",
        n,
        "--max-concurrency",
        "4",
        "--output-len",
        "8",
        "--input-len",
        "16",
        "--num-warmups",
        "1",
        "--quiet",
        "--no-tui",
        "--records-format",
        "parquet",
        "--result-dir",
        dir,
        "--result-filename",
        name,
    ]
}

#[test]
fn a_run_writes_its_records_as_parquet_that_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = common::output(&run_args(d, "p.json", "24"));
    assert!(out.status.success(), "{out:?}");
    let parquet = dir.path().join("p.records.parquet");
    assert!(parquet.is_file());
    assert!(!dir.path().join("p.records.parquet.tmp").exists());
    assert_same_rows(&dir.path().join("p.records.jsonl"), &parquet);
    // The run refuses to start over its own Parquet file, before it touches anything.
    std::fs::remove_file(dir.path().join("p.json")).unwrap();
    std::fs::remove_file(dir.path().join("p.records.jsonl")).unwrap();
    let out = common::output(&run_args(d, "p.json", "24"));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("p.records.parquet exists") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!dir.path().join("p.json").exists());
}

/// Ctrl-C: the run stops, saves what it measured, and still writes its records as Parquet.
#[test]
fn a_run_stopped_by_ctrl_c_still_gets_its_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let mut args = run_args(d, "c.json", "100000");
    args.extend(["--request-rate", "50"]);
    let child = common::servebench()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first records to be on disk, then interrupt.
    let records = dir.path().join("c.records.jsonl");
    let began = std::time::Instant::now();
    while jsonl_lines(&records) < 5 && began.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: a signal to our own child, which has not been reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = common::finish_within(child, Duration::from_secs(60), "ctrl-c with parquet");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_same_rows(&records, &dir.path().join("c.records.parquet"));
}

fn jsonl_lines(path: &Path) -> usize {
    std::fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

#[test]
fn export_converts_and_refuses_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let mut args = run_args(d, "e.json", "12");
    args.retain(|a| *a != "--records-format" && *a != "parquet");
    assert!(common::output(&args).status.success());
    let records = dir.path().join("e.records.jsonl");
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let export = |more: &[&str]| {
        let mut a = vec![
            "export".to_string(),
            path(&records),
            "--format".into(),
            "parquet".into(),
        ];
        a.extend(more.iter().map(|s| s.to_string()));
        common::output(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Default output: beside it.
    let out = export(&[]);
    assert!(out.status.success(), "{out:?}");
    let parquet = dir.path().join("e.records.parquet");
    assert_same_rows(&records, &parquet);
    // An existing output is refused without --overwrite, and replaced with it.
    let out = export(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("e.records.parquet exists") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(export(&["--overwrite"]).status.success());
    // Back to JSON Lines: the same records.
    let back = dir.path().join("back.records.jsonl");
    let out = common::output(&[
        "export",
        &path(&parquet),
        "--format",
        "jsonl",
        "-o",
        &path(&back),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(jsonl(&back), jsonl(&records));

    // A truncated Parquet file: refused, naming it, and nothing written.
    let bytes = std::fs::read(&parquet).unwrap();
    let cut = dir.path().join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let target = dir.path().join("cut.records.jsonl");
    let out = common::output(&[
        "export",
        &path(&cut),
        "--format",
        "jsonl",
        "-o",
        &path(&target),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut.parquet") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!target.exists());

    // A records file with a line that is no record: refused, naming the file and the line.
    let bad = dir.path().join("bad.records.jsonl");
    let text = std::fs::read_to_string(&records).unwrap();
    std::fs::write(&bad, format!("{text}{{\"id\": \"torn\n")).unwrap();
    let n = text.lines().count() + 1;
    let out = common::output(&["export", &path(&bad), "--format", "parquet"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.records.jsonl") && err.contains(&format!("line {n}")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!dir.path().join("bad.records.parquet").exists());
}
