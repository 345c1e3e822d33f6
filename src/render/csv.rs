//! CSV for spreadsheets and databases (`servebench report X --format csv`): column names are
//! the JSON keys, nested ones joined by `.` (`ttft_ms.mean`; a percentile list's entries as
//! `ttft_ms.percentiles.p99`).
//!
//! - a result: one row, its top-level figures (vLLM's keys, `label`, metadata) then every
//!   `summary` key flattened (and a multi-LoRA run's `per_adapter.NAME.*`: one row is one
//!   run, so a table of runs stays a row each);
//! - a sweep or an import: one row per step, its load value and every figure it has; when a
//!   step has LoRA adapters, an `adapter` column after the load value (empty in the step's
//!   row) and a row per adapter of the step after it, with that adapter's figures (the long
//!   form, docs/metrics.md, "Multi-LoRA traffic");
//! - `compare --format csv`: the same rows for each document, its file in the first column;
//! - a records file: one row per request, each scalar field, and `itl_gaps_ms`, the gaps
//!   between its output chunks (docs/metrics.md's ITL) separated by spaces.
//!
//! Every cell goes through `escape::csv_cell`: a label, metadata value or generated text
//! starting with `=`, `+`, `-` or `@` is never run as a spreadsheet formula. An adapter's
//! name (a cell, or part of a column's name) has its control characters made visible first
//! (`escape::terminal_line`): the CSV is printed to a terminal too.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::figure::FigureKey;
use crate::measure::record::RequestRecord;
use crate::render::escape::{csv_cell, terminal_line};
use crate::results::document::BenchResult;
use crate::results::stats::{itl_gaps_ns, ServerTimings};
use crate::views::model::View;

/// Writes `head` and `rows` as CSV, every cell through `escape::csv_cell` (no cell starts a
/// spreadsheet formula).
fn write(head: &[String], rows: &[Vec<String>]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        // Writing to memory cannot fail.
        let _ = w.write_record(r.iter().map(|c| csv_cell(c).into_owned()));
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// `v` flattened into `out` under `key`: objects by their keys, `[p, value]` pairs as
/// `pP`, other arrays by index; scalars as text (null, `{}` and `[]`: empty).
fn flatten(key: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    let join = |k: &str| {
        if key.is_empty() {
            k.to_string()
        } else {
            format!("{key}.{k}")
        }
    };
    match v {
        // An empty object or list is still a column, empty.
        Value::Object(m) if m.is_empty() => {
            out.insert(key.to_string(), String::new());
        }
        Value::Array(a) if a.is_empty() => {
            out.insert(key.to_string(), String::new());
        }
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&join(k), x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                match x.as_array().map(Vec::as_slice) {
                    Some([Value::Number(p), value]) => flatten(&join(&format!("p{p}")), value, out),
                    _ => flatten(&join(&i.to_string()), x, out),
                }
            }
        }
        Value::Null => {
            out.insert(key.to_string(), String::new());
        }
        Value::String(s) => {
            out.insert(key.to_string(), s.clone());
        }
        other => {
            out.insert(key.to_string(), other.to_string());
        }
    }
}

/// A result's one-row CSV.
pub fn result(r: &BenchResult) -> String {
    let mut row = BTreeMap::new();
    for (k, v) in &r.vllm {
        // vLLM's per-request arrays are the records file's business.
        if !v.is_array() {
            flatten(k, v, &mut row);
        }
    }
    if let Some(c) = &r.cost {
        flatten("cost", &serde_json::json!(c), &mut row);
    }
    // Goodput re-judged from the records (`report --goodput`): under which SLOs, from what.
    if let Some(j) = &r.rejudged {
        flatten("rejudged", &serde_json::json!(j), &mut row);
    }
    flatten("summary", &serde_json::json!(r.summary), &mut row);
    if let Some(st) = &r.steady_state {
        flatten("steady_state", &serde_json::json!(st), &mut row);
    }
    // A multi-LoRA run: each adapter's figures, `per_adapter.NAME.ttft_ms.mean`.
    if !r.per_adapter.is_empty() {
        let named: BTreeMap<String, Value> = (r.per_adapter.iter())
            .map(|(name, f)| (terminal_line(name).into_owned(), serde_json::json!(f)))
            .collect();
        flatten("per_adapter", &serde_json::json!(named), &mut row);
    }
    // Several endpoints: `per_endpoint.0.ttft_ms.median`, ... by index (the URL is `.url`).
    if !r.per_endpoint.is_empty() {
        flatten("per_endpoint", &serde_json::json!(r.per_endpoint), &mut row);
    }
    if let Some(mix) = &r.mix {
        flatten("mix", &serde_json::json!(mix), &mut row);
    }
    // `--bucket-by`: each bucket's figures under its label, `buckets.512-2047.ttft_ms.mean`.
    if let Some(b) = &r.buckets {
        let named: serde_json::Map<String, Value> = (b.buckets.iter())
            .map(|k| (k.label.clone(), serde_json::json!(k.figures)))
            .collect();
        flatten("buckets", &Value::Object(named), &mut row);
        row.insert("buckets.by".into(), b.by.to_string());
        row.insert("buckets.below".into(), b.below.to_string());
    }
    // An agentic run's job figures: `jobs.mean_jct_ms`, `jobs.ci95_mean_jct_ms.0`, ...
    if let Some(jobs) = &r.jobs {
        flatten("jobs", &serde_json::json!(jobs), &mut row);
    }
    // Users with a fixed gap: `users.gap_s`, `users.request_rate_per_user.mean`, ...
    if let Some(u) = &r.users {
        flatten("users", &serde_json::json!(u), &mut row);
    }
    // A saved join (`join --save`): `join.matched`, and each part of the TTFT split under
    // its name, `join.parts.queue.mean_ms`.
    if let Some(j) = &r.join {
        let mut v = serde_json::json!(j);
        let named: serde_json::Map<String, Value> = (j.parts.iter())
            .map(|p| {
                let mut figures = serde_json::json!(p);
                figures.as_object_mut().map(|o| o.remove("name"));
                (p.name.clone(), figures)
            })
            .collect();
        v["parts"] = Value::Object(named);
        flatten("join", &v, &mut row);
    }
    let (head, cells): (Vec<String>, Vec<String>) = row.into_iter().unzip();
    write(&head, &[cells])
}

/// A sweep's or an import's CSV: a row per step (and with LoRA adapters, an `adapter`
/// column and a row per adapter of each step, as [`views`]).
pub fn view(v: &View) -> String {
    let keys = metric_keys(std::slice::from_ref(v), None);
    let adapters = v.steps().any(|s| !s.adapters.is_empty());
    let mut head = vec!["series".to_string(), "parameter".into(), "value".into()];
    if adapters {
        head.push("adapter".into());
    }
    head.extend(keys.iter().map(FigureKey::name));
    write(&head, &step_rows(v, &keys, adapters))
}

/// `compare --format csv`: a row per document and step, the document's file first, then the
/// columns of [`view`] (only `metrics` when given).
pub fn views(views: &[View], metrics: Option<&[FigureKey]>) -> String {
    let keys = metric_keys(views, metrics);
    let adapters = views
        .iter()
        .flat_map(View::steps)
        .any(|s| !s.adapters.is_empty());
    let mut head = vec![
        "document".to_string(),
        "series".into(),
        "parameter".into(),
        "value".into(),
    ];
    if adapters {
        head.push("adapter".into());
    }
    head.extend(keys.iter().map(FigureKey::name));
    let mut rows = Vec::new();
    for v in views {
        let file = v.path.display().to_string();
        for r in step_rows(v, &keys, adapters) {
            rows.push(std::iter::once(file.clone()).chain(r).collect());
        }
    }
    write(&head, &rows)
}

/// Every figure of `views`' steps (those of `only` when given), by name.
fn metric_keys(views: &[View], only: Option<&[FigureKey]>) -> Vec<FigureKey> {
    let mut keys: Vec<FigureKey> = (views.iter())
        .flat_map(|v| v.steps())
        .flat_map(|s| {
            let adapters = s.adapters.values().flat_map(|f| f.metrics.keys());
            s.metrics.keys().chain(adapters).cloned()
        })
        .filter(|k| only.is_none_or(|only| only.contains(k)))
        .collect();
    keys.sort_by_cached_key(FigureKey::name);
    keys.dedup();
    keys
}

/// A row per step of `v`: series, parameter, load value, then each of `keys`. With
/// `adapters`, an adapter column after the load value (empty in the step's row), and after
/// each step a row per adapter it has, with the adapter's figures.
fn step_rows(v: &View, keys: &[FigureKey], adapters: bool) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let cells = |m: &BTreeMap<FigureKey, f64>| {
        keys.iter()
            .map(|k| m.get(k).map_or(String::new(), |x| x.to_string()))
            .collect::<Vec<_>>()
    };
    for s in &v.series {
        for st in &s.steps {
            let value = st
                .load_value(s.parameter)
                .map_or(String::new(), |x| x.to_string());
            let mut r = vec![s.name.clone(), s.parameter.as_str().to_string(), value];
            if adapters {
                r.push(String::new());
            }
            r.extend(cells(&st.metrics));
            rows.push(r.clone());
            for (name, f) in st.adapters.iter().filter(|_| adapters) {
                r.truncate(3);
                r.push(terminal_line(name).into_owned());
                r.extend(cells(&f.metrics));
                rows.push(r.clone());
            }
        }
    }
    rows
}

/// A records file's CSV: a row per request.
pub fn records(records: impl Iterator<Item = RequestRecord>) -> String {
    let rows: Vec<BTreeMap<String, String>> = records
        .map(|r| {
            let mut row = BTreeMap::new();
            let json = serde_json::json!(r);
            if let Value::Object(m) = &json {
                for (k, v) in m.iter().filter(|(_, v)| !v.is_array()) {
                    flatten(k, v, &mut row);
                }
            }
            let gaps: Vec<String> = itl_gaps_ns(&r)
                .map(|g| format!("{}", g as f64 / 1e6))
                .collect();
            row.insert("itl_gaps_ms".into(), gaps.join(" "));
            // The implausible numbers a server reported, by name (a short list, unlike the
            // arrays of times left out above).
            if let Some(Value::Array(flags)) = json.get("implausible_usage") {
                let names: Vec<&str> = flags.iter().filter_map(Value::as_str).collect();
                row.insert("implausible_usage".into(), names.join(" "));
            }
            account_cells(&r, &mut row);
            row
        })
        .collect();
    let mut head: Vec<String> = rows.iter().flat_map(|r| r.keys().cloned()).collect();
    head.sort();
    head.dedup();
    let cells: Vec<Vec<String>> = (rows.iter())
        .map(|r| {
            head.iter()
                .map(|k| r.get(k).cloned().unwrap_or_default())
                .collect()
        })
        .collect();
    write(&head, &cells)
}

/// A record's server account as read (`stats::ServerTimings`): the same columns for every
/// record, empty where unknown.
fn account_cells(r: &RequestRecord, row: &mut BTreeMap<String, String>) {
    let s = ServerTimings::of(r);
    let f = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    let n = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
    for (k, v) in [
        (
            "form",
            s.form.map_or_else(String::new, |f| f.as_str().into()),
        ),
        ("server_ttft_ms", f(s.server_ttft_ms)),
        ("queue_ms", f(s.queue_ms)),
        ("prefill_ms", f(s.prefill_ms())),
        ("decode_ms", f(s.decode_ms)),
        ("itl_ms", f(s.itl_ms)),
        ("cached_tokens", n(s.cached_tokens)),
        ("prompt_tokens", n(s.prompt_tokens)),
    ] {
        row.insert(format!("server_account.{k}"), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_keys_and_percentile_pairs_flatten_by_name() {
        let mut out = BTreeMap::new();
        let v = serde_json::json!({"ttft_ms": {"mean": 1.5, "percentiles": [[99.0, 7.0]]},
                                   "note": "a,b", "none": null, "list": [3, 4]});
        flatten("", &v, &mut out);
        assert_eq!(out["ttft_ms.mean"], "1.5");
        assert_eq!(out["ttft_ms.percentiles.p99.0"], "7.0");
        assert_eq!(out["note"], "a,b");
        assert_eq!(out["none"], "");
        assert_eq!(out["list.1"], "4");
        let text = write(
            &["a".into(), "b".into()],
            &[vec!["x,y".into(), "\"q\"".into()]],
        );
        assert_eq!(text, "a,b\n\"x,y\",\"\"\"q\"\"\"\n");
    }
}
