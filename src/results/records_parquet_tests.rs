//! The Parquet schema against the record's fields and docs/report.md, records round-tripped
//! through Parquet, and bad files refused in one line.

use std::collections::BTreeSet;

use super::*;
use crate::measure::job::CallPlace;
use crate::measure::output_check::{OutputCheck, Verdict};
use crate::measure::record::{FailureKind, Implausible, Outcome, TokenSource};

/// The field names serde's derive gives `deserialize_struct`: the record's fields exactly,
/// new ones included, whatever a test record fills in.
fn record_fields() -> Vec<&'static str> {
    use serde::de::{Deserializer, Error, Visitor};
    #[derive(Debug)]
    struct Fields(Vec<&'static str>);
    impl std::fmt::Display for Fields {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "fields")
        }
    }
    impl std::error::Error for Fields {}
    impl Error for Fields {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Fields(Vec::new())
        }
    }
    struct Capture;
    impl<'de> Deserializer<'de> for Capture {
        type Error = Fields;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
            Err(Fields(Vec::new()))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Fields> {
            Err(Fields(fields.to_vec()))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    match <RequestRecord as serde::Deserialize>::deserialize(Capture) {
        Err(Fields(f)) => f,
        Ok(_) => unreachable!("the capture never gives a record"),
    }
}

/// A record with every field set (none left at a default a record leaves out).
fn full_record() -> RequestRecord {
    RequestRecord {
        id: 7,
        warmup: true,
        scheduled_ns: 10,
        sent_ns: 20,
        connect_start_ns: Some(11),
        connect_end_ns: Some(19),
        connection_reused: Some(false),
        connection_retries: 2,
        request_id: Some("req-7".into()),
        server_request_id: Some("srv-7".into()),
        chunk_ns: vec![30, 40, 55],
        chunk_tokens: Some(vec![1, 2, 1]),
        first_reasoning_ns: Some(30),
        first_answer_ns: Some(40),
        reasoning_chunks: Some(1),
        reasoning_tokens: Some(1),
        reasoning_tokens_source: Some(TokenSource::ServerUsage),
        first_tool_call_ns: Some(55),
        output_check: Some(OutputCheck {
            verdict: Verdict::SchemaMismatch,
            tool: Some("f".into()),
            tool_calls: 1,
            why: Some("no \"a\"".into()),
            as_text: false,
            over_budget: true,
        }),
        end_ns: 60,
        done_marker: Some(true),
        http_status: Some(200),
        outcome: Outcome::Ok,
        input_len_requested: Some(100),
        inputs: Some(3),
        adapter: Some("lora-ä".into()),
        images: Some(1),
        videos: Some(2),
        audio_clips: Some(3),
        audio_duration_ns: Some(4_000_000_000),
        request_bytes: Some(12345),
        upload_end_ns: Some(19),
        upload_start_ns: Some(18),
        prompt_tokens: Some(101),
        prompt_tokens_source: Some(TokenSource::Tokenizer),
        output_len_requested: Some(4),
        output_tokens: Some(4),
        output_tokens_source: Some(TokenSource::ServerUsage),
        usage_output_tokens: Some(4),
        tokenizer_output_tokens: Some(5),
        conversation: Some(2),
        turn: Some(1),
        job: Some(3),
        call: Some(CallPlace {
            call: 1,
            of: 3,
            after: vec![0],
            splice: vec![0],
            gap_ms: 12.5,
        }),
        user: Some(4),
        cached_prompt_tokens: Some(64),
        designed_cached_tokens: Some(64),
        class: Some(1),
        server_timings: Some(serde_json::json!({"prompt_ms": 1.5})),
        server_request_metrics: Some(serde_json::json!({"queue_time_ms": 0.25})),
        server_timing_headers: Some(serde_json::json!({"x-queue-time": "3"})),
        server_meta_info: Some(serde_json::json!({"e2e_latency": 0.04})),
        implausible_usage: vec![Implausible::OutputTokens, Implausible::CachedTokens],
        generated_text: Some("hi\nthere".into()),
        generated_text_truncated: true,
        endpoint: Some(1),
    }
}

fn failed_record(id: u64) -> RequestRecord {
    RequestRecord {
        id,
        scheduled_ns: 5,
        sent_ns: 6,
        end_ns: 9,
        http_status: Some(503),
        outcome: Outcome::failed(FailureKind::HttpStatus, "503: busy"),
        ..RequestRecord::default()
    }
}

/// The schema follows the record: a field added to `RequestRecord` without its column here
/// fails this test (as does a column whose field is gone).
#[test]
fn the_schema_has_a_column_for_every_record_field() {
    let fields = record_fields();
    assert!(fields.len() > 40, "{fields:?}");
    let columns: Vec<&str> = COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(columns, fields, "one column per record field, in its order");
    // And a record with every field set saves no key that has no column.
    let full = serde_json::to_value(full_record()).unwrap();
    let keys: BTreeSet<&str> = full
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let names: BTreeSet<&str> = columns.iter().copied().collect();
    assert_eq!(keys, names);
}

fn write_jsonl(path: &Path, records: &[RequestRecord]) {
    let mut w = RecordsWriter::create(path).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.flush().unwrap();
}

/// Records written to Parquet read back equal, with every field kept; the file's row count and
/// a few values read with the Parquet crate's own reader agree with the JSON Lines.
#[test]
fn records_round_trip_through_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("r.records.jsonl");
    // More than one batch, so the rows cross row groups.
    let mut records = vec![full_record(), failed_record(1), RequestRecord::default()];
    records.extend((0..BATCH as u64 + 5).map(|i| RequestRecord {
        id: 100 + i,
        chunk_ns: vec![i, i + 1],
        ..RequestRecord::default()
    }));
    write_jsonl(&jsonl, &records);
    let out = parquet_next_to(&jsonl);
    assert_eq!(out, dir.path().join("r.records.parquet"));
    assert_eq!(
        jsonl_to_parquet(&jsonl, &out).unwrap(),
        records.len() as u64
    );
    assert!(!temporary(&out).exists());

    let mut back = Vec::new();
    read_parquet(&out, |r| {
        back.push(r);
        Ok(())
    })
    .unwrap();
    assert_eq!(back, records);

    // The raw columns, through the crate's reader.
    let file = File::open(&out).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let meta = builder.metadata().file_metadata();
    assert_eq!(meta.num_rows() as usize, records.len());
    let kv = meta.key_value_metadata().unwrap();
    assert!(kv.iter().any(|k| k.key == "servebench.records_schema"));
    let batch = builder.build().unwrap().next().unwrap().unwrap();
    assert_eq!(batch.num_columns(), COLUMNS.len());
    let ids = batch
        .column_by_name("id")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert_eq!((ids.value(0), ids.value(1)), (7, 1));
    let chunks = batch.column_by_name("chunk_ns").unwrap().as_list::<i32>();
    let first = chunks.value(0);
    let first = first.as_primitive::<UInt64Type>();
    assert_eq!(first.values().to_vec(), vec![30, 40, 55]);
    let status = batch.column_by_name("http_status").unwrap();
    assert_eq!(status.as_primitive::<UInt16Type>().value(1), 503);
    assert!(status.is_null(2));
    let outcome = batch.column_by_name("outcome").unwrap().as_string::<i32>();
    assert!(
        outcome.value(1).contains("http_status"),
        "{}",
        outcome.value(1)
    );

    // And back to JSON Lines, equal to the source.
    let again = dir.path().join("again.records.jsonl");
    assert_eq!(
        parquet_to_jsonl(&out, &again).unwrap(),
        records.len() as u64
    );
    let reread: Vec<RequestRecord> = read_jsonl(&again).unwrap().collect();
    assert_eq!(reread, records);
}

/// An empty records file makes a Parquet file with the schema and no rows.
#[test]
fn an_empty_records_file_makes_an_empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("e.records.jsonl");
    std::fs::write(&jsonl, "").unwrap();
    let out = dir.path().join("e.parquet");
    assert_eq!(jsonl_to_parquet(&jsonl, &out).unwrap(), 0);
    assert_eq!(read_parquet(&out, |_| Ok(())).unwrap(), 0);
}

/// A truncated Parquet file is refused in one line naming it, and no JSON Lines is left.
#[test]
fn a_truncated_parquet_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("t.records.jsonl");
    write_jsonl(&jsonl, &[full_record(), failed_record(1)]);
    let out = dir.path().join("t.parquet");
    jsonl_to_parquet(&jsonl, &out).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    for cut in [bytes.len() - 3, bytes.len() / 2, 4] {
        let cut_file = dir.path().join(format!("cut{cut}.parquet"));
        std::fs::write(&cut_file, &bytes[..cut]).unwrap();
        let back = dir.path().join(format!("cut{cut}.records.jsonl"));
        let e = parquet_to_jsonl(&cut_file, &back).unwrap_err().to_string();
        assert!(e.contains(&cut_file.display().to_string()), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(!back.exists() && !temporary(&back).exists());
    }
    // A Parquet file of some other table: refused, naming the column it lacks.
    let other = dir.path().join("other.parquet");
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::UInt64, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(UInt64Array::from(vec![1u64])) as ArrayRef],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(File::create(&other).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let e = read_parquet(&other, |_| Ok(())).unwrap_err().to_string();
    assert!(
        e.contains("other.parquet") && e.contains("no column id"),
        "{e}"
    );
}

/// A records file with a line that is no record is refused, naming the file and the line;
/// no Parquet file (nor its temporary) is left.
#[test]
fn a_records_file_with_a_bad_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("b.records.jsonl");
    let good = serde_json::to_string(&failed_record(1)).unwrap();
    std::fs::write(&jsonl, format!("{good}\nnot a record\n{good}\n")).unwrap();
    let out = dir.path().join("b.parquet");
    let e = jsonl_to_parquet(&jsonl, &out).unwrap_err().to_string();
    assert!(e.contains("b.records.jsonl") && e.contains("line 2"), "{e}");
    assert!(!out.exists() && !temporary(&out).exists());
}

/// docs/report.md's schema table is this schema, row for row: each column's name, type and
/// whether it may be null.
#[test]
fn the_documented_schema_is_the_schema() {
    let doc = include_str!("../../docs/report.md");
    let rows: Vec<&str> = (doc.lines())
        .skip_while(|l| !l.starts_with("| column | type | null |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let name = |k: Kind| match k {
        U64 => "uint64",
        U32 => "uint32",
        U16 => "uint16",
        Bool => "bool",
        Str => "string",
        Json => "string (JSON)",
        ListU64 => "list<uint64>",
        ListU32 => "list<uint32>",
        ListStr => "list<string>",
    };
    assert_eq!(rows.len(), COLUMNS.len(), "{rows:?}");
    for (row, c) in rows.iter().zip(COLUMNS) {
        let null = if c.nullable { "yes" } else { "no" };
        let head = format!("| `{}` | {} | {null} |", c.name, name(c.kind));
        assert!(row.starts_with(&head), "{row} should start {head}");
    }
}
