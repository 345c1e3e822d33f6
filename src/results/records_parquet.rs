//! Per-request records as Apache Parquet, for pandas, polars and DuckDB: one row per record
//! of a records file, one column per field of `measure::record::RequestRecord`
//! (`docs/report.md`, "Records as Parquet", has the schema).
//!
//! The crash-safe JSON Lines file stays the source of truth: [`jsonl_to_parquet`] writes the
//! Parquet file from it (at the end of a run with `--records-format parquet`, or later with
//! `servebench export`), through a temporary file renamed into place, so a failed or
//! interrupted conversion leaves no torn Parquet file. [`parquet_to_jsonl`] reads one back.
//!
//! The schema is [`COLUMNS`]: a field's JSON key is its column's name, numbers are unsigned
//! integers of the field's width, enums are their saved names, the chunk times (and counts)
//! are list columns, and nested objects (the outcome, a structured answer's check, an agentic
//! call's place, what the server reported verbatim) are JSON text. Its test holds it to the
//! record's fields, so a new field without a column fails it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, ListArray, RecordBatch, StringArray, UInt16Array, UInt32Array,
    UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::{Map, Value};

use crate::measure::record::{read_jsonl, RecordsWriter, RequestRecord};
use crate::results::error::ResultsError;

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    U64,
    U32,
    U16,
    Bool,
    /// UTF-8 text: a string field, or an enum's saved name.
    Str,
    /// A list of u64 (the chunk times).
    ListU64,
    /// A list of u32 (the tokens per chunk).
    ListU32,
    /// A list of names (the implausible numbers).
    ListStr,
    /// JSON text of a nested object.
    Json,
}

impl Kind {
    fn data_type(self) -> DataType {
        let list = |t| DataType::List(Arc::new(Field::new_list_field(t, true)));
        match self {
            Kind::U64 => DataType::UInt64,
            Kind::U32 => DataType::UInt32,
            Kind::U16 => DataType::UInt16,
            Kind::Bool => DataType::Boolean,
            Kind::Str | Kind::Json => DataType::Utf8,
            Kind::ListU64 => list(DataType::UInt64),
            Kind::ListU32 => list(DataType::UInt32),
            Kind::ListStr => list(DataType::Utf8),
        }
    }

    /// The value a record leaves out when it is the default (`skip_serializing_if`).
    fn default_value(self) -> Value {
        match self {
            Kind::U64 | Kind::U32 | Kind::U16 => Value::from(0),
            Kind::Bool => Value::Bool(false),
            Kind::Str => Value::from(""),
            Kind::ListU64 | Kind::ListU32 | Kind::ListStr => Value::Array(Vec::new()),
            Kind::Json => Value::Null,
        }
    }
}

/// One column: the record field's JSON key, what it holds, and whether it may be null (a
/// field that is not optional is never null: its default fills a record that leaves it out).
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub nullable: bool,
}

const fn col(name: &'static str, kind: Kind, nullable: bool) -> Column {
    Column {
        name,
        kind,
        nullable,
    }
}

use Kind::{Bool, Json, ListStr, ListU32, ListU64, Str, U16, U32, U64};

/// The schema: one column per field of `RequestRecord`, in its order.
pub const COLUMNS: &[Column] = &[
    col("id", U64, false),
    col("warmup", Bool, false),
    col("scheduled_ns", U64, false),
    col("sent_ns", U64, false),
    col("connect_start_ns", U64, true),
    col("connect_end_ns", U64, true),
    col("connection_reused", Bool, true),
    col("connection_retries", U32, false),
    col("request_id", Str, true),
    col("server_request_id", Str, true),
    col("chunk_ns", ListU64, false),
    col("chunk_tokens", ListU32, true),
    col("first_reasoning_ns", U64, true),
    col("first_answer_ns", U64, true),
    col("reasoning_chunks", U64, true),
    col("reasoning_tokens", U64, true),
    col("reasoning_tokens_source", Str, true),
    col("first_tool_call_ns", U64, true),
    col("output_check", Json, true),
    col("end_ns", U64, false),
    col("done_marker", Bool, true),
    col("http_status", U16, true),
    col("outcome", Json, false),
    col("input_len_requested", U64, true),
    col("inputs", U64, true),
    col("adapter", Str, true),
    col("images", U32, true),
    col("videos", U32, true),
    col("audio_clips", U32, true),
    col("audio_duration_ns", U64, true),
    col("request_bytes", U64, true),
    col("upload_end_ns", U64, true),
    col("upload_start_ns", U64, true),
    col("prompt_tokens", U64, true),
    col("prompt_tokens_source", Str, true),
    col("output_len_requested", U64, true),
    col("output_tokens", U64, true),
    col("output_tokens_source", Str, true),
    col("usage_output_tokens", U64, true),
    col("tokenizer_output_tokens", U64, true),
    col("conversation", U64, true),
    col("turn", U32, true),
    col("job", U64, true),
    col("call", Json, true),
    col("user", U32, true),
    col("cached_prompt_tokens", U64, true),
    col("designed_cached_tokens", U64, true),
    col("class", U32, true),
    col("server_timings", Json, true),
    col("server_request_metrics", Json, true),
    col("server_timing_headers", Json, true),
    col("server_meta_info", Json, true),
    col("implausible_usage", ListStr, false),
    col("generated_text", Str, true),
    col("generated_text_truncated", Bool, false),
    col("endpoint", U32, true),
];

/// The schema's version, saved in the file's key-value metadata (`servebench.records_schema`).
pub const SCHEMA_VERSION: &str = "1";

/// Records per row group written at once (memory stays bounded by it, not by the file).
const BATCH: usize = 4096;

/// The Arrow schema of [`COLUMNS`].
pub fn schema() -> SchemaRef {
    let fields: Vec<Field> = (COLUMNS.iter())
        .map(|c| Field::new(c.name, c.kind.data_type(), c.nullable))
        .collect();
    Arc::new(Schema::new(fields))
}

/// The Parquet file beside a records file: `x.records.jsonl` → `x.records.parquet`.
pub fn parquet_next_to(records: &Path) -> PathBuf {
    records.with_extension("parquet")
}

/// `path` with `.tmp` added: where a conversion writes before it renames.
fn temporary(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Writes the records of the JSON Lines file `jsonl` as the Parquet file `out` (replacing
/// it); returns the rows written. A line that is not a record refuses the file, naming it
/// and the line: a conversion drops nothing silently.
pub fn jsonl_to_parquet(jsonl: &Path, out: &Path) -> Result<u64, ResultsError> {
    let read = |source| ResultsError::Read {
        path: jsonl.to_path_buf(),
        source,
    };
    let mut lines = read_jsonl(jsonl).map_err(read)?;
    let tmp = temporary(out);
    let written = (|| -> Result<u64, ResultsError> {
        let mut writer = ParquetWriter::create(&tmp)?;
        let mut batch = Vec::with_capacity(BATCH);
        for record in lines.by_ref() {
            batch.push(record);
            if batch.len() == BATCH {
                writer.write(&batch)?;
                batch.clear();
            }
        }
        let skipped = lines.skipped();
        if skipped.count > 0 {
            return Err(ResultsError::Invalid {
                path: jsonl.to_path_buf(),
                why: format!("not a records file throughout: {skipped}"),
            });
        }
        writer.write(&batch)?;
        writer.close()
    })();
    let rows = match written {
        Ok(rows) => rows,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, out).map_err(|source| ResultsError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    Ok(rows)
}

/// The Parquet writer of records, to one file.
struct ParquetWriter {
    path: PathBuf,
    writer: ArrowWriter<File>,
    rows: u64,
}

impl ParquetWriter {
    fn create(path: &Path) -> Result<ParquetWriter, ResultsError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| ResultsError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let file = File::create(path).map_err(|source| ResultsError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        let meta = parquet::file::metadata::KeyValue::new(
            "servebench.records_schema".into(),
            SCHEMA_VERSION.to_string(),
        );
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata(Some(vec![meta]))
            .build();
        let writer =
            ArrowWriter::try_new(file, schema(), Some(props)).map_err(|e| write_error(path, e))?;
        Ok(ParquetWriter {
            path: path.to_path_buf(),
            writer,
            rows: 0,
        })
    }

    fn write(&mut self, records: &[RequestRecord]) -> Result<(), ResultsError> {
        if records.is_empty() {
            return Ok(());
        }
        let batch = to_batch(records).map_err(|e| write_error(&self.path, e))?;
        self.writer
            .write(&batch)
            .map_err(|e| write_error(&self.path, e))?;
        self.rows += records.len() as u64;
        Ok(())
    }

    fn close(self) -> Result<u64, ResultsError> {
        let path = self.path;
        self.writer.close().map_err(|e| write_error(&path, e))?;
        Ok(self.rows)
    }
}

fn write_error(path: &Path, e: impl std::fmt::Display) -> ResultsError {
    ResultsError::Invalid {
        path: path.to_path_buf(),
        why: format!("cannot write Parquet: {e}"),
    }
}

/// Records as one Arrow batch of [`schema`].
fn to_batch(records: &[RequestRecord]) -> Result<RecordBatch, String> {
    let objects: Vec<Map<String, Value>> = (records.iter())
        .map(|r| match serde_json::to_value(r) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err("a record is not a JSON object".to_string()),
            Err(e) => Err(e.to_string()),
        })
        .collect::<Result<_, _>>()?;
    let columns: Vec<ArrayRef> = (COLUMNS.iter())
        .map(|c| {
            let default = c.kind.default_value();
            let values: Vec<Option<&Value>> = (objects.iter())
                .map(|o| match o.get(c.name).filter(|v| !v.is_null()) {
                    None if !c.nullable => Some(&default),
                    v => v,
                })
                .collect();
            array(c.kind, &values)
        })
        .collect();
    RecordBatch::try_new(schema(), columns).map_err(|e| e.to_string())
}

/// A list field's items.
fn list(v: Option<&Value>) -> Option<&Vec<Value>> {
    v.and_then(Value::as_array)
}

/// One column's values as an Arrow array.
fn array(kind: Kind, values: &[Option<&Value>]) -> ArrayRef {
    let u64s = || values.iter().map(|v| v.and_then(Value::as_u64));
    match kind {
        Kind::U64 => Arc::new(UInt64Array::from_iter(u64s())),
        Kind::U32 => Arc::new(UInt32Array::from_iter(
            u64s().map(|v| v.and_then(|v| u32::try_from(v).ok())),
        )),
        Kind::U16 => Arc::new(UInt16Array::from_iter(
            u64s().map(|v| v.and_then(|v| u16::try_from(v).ok())),
        )),
        Kind::Bool => Arc::new(BooleanArray::from_iter(
            values.iter().map(|v| v.and_then(Value::as_bool)),
        )),
        Kind::Str => Arc::new(StringArray::from_iter(
            values.iter().map(|v| v.and_then(Value::as_str)),
        )),
        Kind::Json => Arc::new(StringArray::from_iter(
            values.iter().map(|v| v.map(Value::to_string)),
        )),
        Kind::ListU64 => Arc::new(ListArray::from_iter_primitive::<UInt64Type, _, _>(
            values
                .iter()
                .map(|v| list(*v).map(|a| a.iter().map(Value::as_u64).collect::<Vec<_>>())),
        )),
        Kind::ListU32 => Arc::new(ListArray::from_iter_primitive::<UInt32Type, _, _>(
            values.iter().map(|v| {
                list(*v).map(|a| {
                    (a.iter())
                        .map(|x| x.as_u64().and_then(|x| u32::try_from(x).ok()))
                        .collect::<Vec<_>>()
                })
            }),
        )),
        Kind::ListStr => {
            let mut b = ListBuilder::new(StringBuilder::new());
            for v in values {
                match list(*v) {
                    Some(a) => {
                        for x in a {
                            b.values().append_option(x.as_str());
                        }
                        b.append(true);
                    }
                    None => b.append(false),
                }
            }
            Arc::new(b.finish())
        }
    }
}

/// Reads the Parquet records file `path` back as records, `each` called on every one in
/// order; returns how many. A file that is not Parquet (a truncated one), or whose columns
/// are not this schema's, is refused in one line naming it.
pub fn read_parquet(
    path: &Path,
    mut each: impl FnMut(RequestRecord) -> Result<(), ResultsError>,
) -> Result<u64, ResultsError> {
    let bad = |why: String| ResultsError::Invalid {
        path: path.to_path_buf(),
        why,
    };
    let file = File::open(path).map_err(|source| ResultsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| bad(format!("not a readable Parquet file (truncated?): {e}")))?;
    let found = builder.schema().clone();
    let mut positions = Vec::with_capacity(COLUMNS.len());
    for c in COLUMNS {
        let at = found.index_of(c.name).ok();
        if let Some(i) = at {
            let t = found.field(i).data_type();
            if *t != c.kind.data_type() {
                return Err(bad(format!(
                    "column {} is {t}, not {} as servebench writes it",
                    c.name,
                    c.kind.data_type()
                )));
            }
        } else if !c.nullable {
            return Err(bad(format!(
                "no column {}: not a servebench records file",
                c.name
            )));
        }
        positions.push(at);
    }
    let reader = builder
        .with_batch_size(BATCH)
        .build()
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    let mut rows = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("cannot read (truncated?): {e}")))?;
        for i in 0..batch.num_rows() {
            let mut object = Map::new();
            for (c, at) in COLUMNS.iter().zip(&positions) {
                let Some(at) = at else { continue };
                let v = value(c.kind, batch.column(*at).as_ref(), i)
                    .map_err(|e| bad(format!("row {rows}, column {}: {e}", c.name)))?;
                if let Some(v) = v {
                    object.insert(c.name.to_string(), v);
                }
            }
            let record = serde_json::from_value(Value::Object(object))
                .map_err(|e| bad(format!("row {rows} is not a record: {e}")))?;
            each(record)?;
            rows += 1;
        }
    }
    Ok(rows)
}

/// Row `i` of a column as the JSON value of its field; `None` when null.
fn value(kind: Kind, a: &dyn Array, i: usize) -> Result<Option<Value>, String> {
    if a.is_null(i) {
        return Ok(None);
    }
    let wrong = || format!("not {}", kind.data_type());
    let v = match kind {
        Kind::U64 => Value::from(
            a.as_primitive_opt::<UInt64Type>()
                .ok_or_else(wrong)?
                .value(i),
        ),
        Kind::U32 => Value::from(
            a.as_primitive_opt::<UInt32Type>()
                .ok_or_else(wrong)?
                .value(i),
        ),
        Kind::U16 => Value::from(
            a.as_primitive_opt::<UInt16Type>()
                .ok_or_else(wrong)?
                .value(i),
        ),
        Kind::Bool => Value::from(a.as_boolean_opt().ok_or_else(wrong)?.value(i)),
        Kind::Str => Value::from(a.as_string_opt::<i32>().ok_or_else(wrong)?.value(i)),
        Kind::Json => {
            let text = a.as_string_opt::<i32>().ok_or_else(wrong)?.value(i);
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?
        }
        Kind::ListU64 | Kind::ListU32 | Kind::ListStr => {
            let inner = a.as_list_opt::<i32>().ok_or_else(wrong)?.value(i);
            let item = match kind {
                Kind::ListU64 => Kind::U64,
                Kind::ListU32 => Kind::U32,
                _ => Kind::Str,
            };
            let items = (0..inner.len())
                .map(|j| value(item, inner.as_ref(), j).map(|v| v.unwrap_or(Value::Null)))
                .collect::<Result<Vec<_>, _>>()?;
            Value::Array(items)
        }
    };
    Ok(Some(v))
}

/// Writes the Parquet records file `parquet` back as the JSON Lines file `out` (replacing it,
/// through a temporary file); returns the rows.
pub fn parquet_to_jsonl(parquet: &Path, out: &Path) -> Result<u64, ResultsError> {
    let tmp = temporary(out);
    let write = |source: std::io::Error| ResultsError::Write {
        path: out.to_path_buf(),
        source,
    };
    let written = (|| -> Result<u64, ResultsError> {
        let mut writer = RecordsWriter::create(&tmp).map_err(write)?;
        let rows = read_parquet(parquet, |r| writer.write(&r).map_err(write))?;
        writer.flush().map_err(write)?;
        Ok(rows)
    })();
    match written {
        Ok(rows) => {
            std::fs::rename(&tmp, out).map_err(write)?;
            Ok(rows)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
#[path = "records_parquet_tests.rs"]
mod tests;
