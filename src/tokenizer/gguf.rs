//! A small reader for the metadata of a GGUF model file (the format llama.cpp serves).
//!
//! It owns one job: read the header and the key/value metadata, then stop. It never reads the
//! tensor infos or the weights, so a multi-gigabyte model costs a few megabytes of reads (the
//! tokenizer arrays). Every length read from the file is checked against the bytes that are
//! left in the file before anything is allocated, so a corrupt or truncated file gives a
//! [`GgufError`], never a huge allocation or a panic.
//!
//! Format (little-endian): magic `GGUF`, version u32 (2 and 3 are supported), tensor_count
//! u64, kv_count u64, then kv_count pairs of `key: string, type: u32, value`. A string is a
//! u64 byte length and UTF-8 bytes. Value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32,
//! 6 f32, 7 bool, 8 string, 9 array (element type u32, count u64, elements), 10 u64, 11 i64,
//! 12 f64. To support a new value type, add it to [`GgufValue`] and to `read_value`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// The 4-byte magic every GGUF file starts with.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";

/// Nested arrays deeper than this are treated as corruption (real files use depth 1).
const MAX_ARRAY_DEPTH: u32 = 4;
/// Limits well above any real metadata (vocabularies hold ~10^5 tokens; templates a few KB),
/// so that a corrupt count inside a large model file cannot make the reader walk into the
/// weights and build gigabytes of values.
const MAX_ARRAY_LEN: u64 = 1 << 24;
/// Array elements decoded in one file, all arrays together. Each takes 32 bytes in memory
/// whatever its encoded size (one byte for a u8), so this caps the metadata's memory at
/// 128 MiB (plus string contents, bounded by the file's size). A real tokenizer holds about
/// 600,000 (Llama 3: 128,256 tokens and types, 280,147 merges): seven times less.
const MAX_TOTAL_ELEMENTS: u64 = 1 << 22;
const MAX_STRING_LEN: u64 = 1 << 26;

/// One metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Vec<GgufValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl GgufValue {
    /// The value as a string slice, if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an array, if it is one.
    pub fn as_array(&self) -> Option<&[GgufValue]> {
        match self {
            GgufValue::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Any integer value widened to i64 (u64 values above i64::MAX give None).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            GgufValue::U8(v) => Some(i64::from(v)),
            GgufValue::I8(v) => Some(i64::from(v)),
            GgufValue::U16(v) => Some(i64::from(v)),
            GgufValue::I16(v) => Some(i64::from(v)),
            GgufValue::U32(v) => Some(i64::from(v)),
            GgufValue::I32(v) => Some(i64::from(v)),
            GgufValue::U64(v) => i64::try_from(v).ok(),
            GgufValue::I64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a bool, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            GgufValue::Bool(b) => Some(b),
            _ => None,
        }
    }
}

/// The metadata part of a GGUF file.
#[derive(Clone, Debug, Default)]
pub struct GgufMetadata {
    pub version: u32,
    pub tensor_count: u64,
    pub kv: BTreeMap<String, GgufValue>,
}

impl GgufMetadata {
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.kv.get(key)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.kv.get(key).and_then(GgufValue::as_str)
    }
}

/// Why the metadata could not be read. Messages are one line and name no path (the caller
/// adds it).
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a GGUF file (magic is {0:?}, expected \"GGUF\")")]
    BadMagic(String),
    #[error("unsupported GGUF version {0} (supported: 2, 3)")]
    UnsupportedVersion(u32),
    #[error("truncated: needed {needed} more bytes at offset {offset}, file has {left} left")]
    Truncated { offset: u64, needed: u64, left: u64 },
    #[error("corrupt: {0}")]
    Corrupt(String),
}

/// True when the file at `path` starts with the GGUF magic.
pub fn has_gguf_magic(path: &Path) -> std::io::Result<bool> {
    let mut f = File::open(path)?;
    let mut magic = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = f.read(&mut magic[got..])?;
        if n == 0 {
            return Ok(false);
        }
        got += n;
    }
    Ok(magic == GGUF_MAGIC)
}

/// Reads the header and all key/value metadata of the GGUF file at `path`.
pub fn read_metadata(path: &Path) -> Result<GgufMetadata, GgufError> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut r = Reader {
        inner: BufReader::with_capacity(1 << 16, file),
        offset: 0,
        size,
        elements_left: MAX_TOTAL_ELEMENTS,
    };
    r.read_header_and_kv()
}

/// Parses GGUF metadata from an in-memory buffer (used by tests and fuzzing).
pub fn parse_metadata(bytes: &[u8]) -> Result<GgufMetadata, GgufError> {
    let mut r = Reader {
        inner: bytes,
        offset: 0,
        size: bytes.len() as u64,
        elements_left: MAX_TOTAL_ELEMENTS,
    };
    r.read_header_and_kv()
}

struct Reader<R: Read> {
    inner: R,
    offset: u64,
    size: u64,
    /// Array elements that may still be decoded ([`MAX_TOTAL_ELEMENTS`] in all).
    elements_left: u64,
}

impl<R: Read> Reader<R> {
    fn left(&self) -> u64 {
        self.size.saturating_sub(self.offset)
    }

    /// Fails unless at least `needed` bytes are left in the file.
    fn ensure(&self, needed: u64) -> Result<(), GgufError> {
        if needed > self.left() {
            return Err(GgufError::Truncated {
                offset: self.offset,
                needed,
                left: self.left(),
            });
        }
        Ok(())
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], GgufError> {
        self.ensure(N as u64)?;
        let mut buf = [0u8; N];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| self.io_err(e))?;
        self.offset += N as u64;
        Ok(buf)
    }

    fn io_err(&self, e: std::io::Error) -> GgufError {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            GgufError::Truncated {
                offset: self.offset,
                needed: 1,
                left: 0,
            }
        } else {
            GgufError::Io(e)
        }
    }

    fn u32(&mut self) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    fn string(&mut self) -> Result<String, GgufError> {
        let len = self.u64()?;
        self.ensure(len)?;
        if len > MAX_STRING_LEN {
            return Err(GgufError::Corrupt(format!(
                "string of {len} bytes at offset {} (limit {MAX_STRING_LEN})",
                self.offset
            )));
        }
        let len_usize = usize::try_from(len)
            .map_err(|_| GgufError::Corrupt(format!("string length {len} too large")))?;
        let mut buf = vec![0u8; len_usize];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| self.io_err(e))?;
        let at = self.offset;
        self.offset += len;
        String::from_utf8(buf)
            .map_err(|_| GgufError::Corrupt(format!("string at offset {at} is not UTF-8")))
    }

    fn read_header_and_kv(&mut self) -> Result<GgufMetadata, GgufError> {
        let magic: [u8; 4] = self.bytes().map_err(|e| match e {
            GgufError::Truncated { .. } => GgufError::BadMagic("file shorter than 4 bytes".into()),
            other => other,
        })?;
        if magic != GGUF_MAGIC {
            return Err(GgufError::BadMagic(
                String::from_utf8_lossy(&magic).into_owned(),
            ));
        }
        let version = self.u32()?;
        if version != 2 && version != 3 {
            return Err(GgufError::UnsupportedVersion(version));
        }
        let tensor_count = self.u64()?;
        let kv_count = self.u64()?;
        // Each pair needs at least 8 (key length) + 4 (type) + 1 (smallest value) bytes.
        if kv_count.saturating_mul(13) > self.left() {
            return Err(GgufError::Corrupt(format!(
                "kv_count {kv_count} does not fit in the {} bytes left",
                self.left()
            )));
        }
        let mut kv = BTreeMap::new();
        for _ in 0..kv_count {
            let key = self.string()?;
            let ty = self.u32()?;
            let value = self.value(ty, 0)?;
            kv.insert(key, value);
        }
        Ok(GgufMetadata {
            version,
            tensor_count,
            kv,
        })
    }

    /// The smallest encoded size of one value of type `ty` (for bounding array counts).
    fn min_size(ty: u32) -> Option<u64> {
        Some(match ty {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            8 | 10 | 11 | 12 => 8,
            9 => 12,
            _ => return None,
        })
    }

    fn value(&mut self, ty: u32, depth: u32) -> Result<GgufValue, GgufError> {
        Ok(match ty {
            0 => GgufValue::U8(u8::from_le_bytes(self.bytes()?)),
            1 => GgufValue::I8(i8::from_le_bytes(self.bytes()?)),
            2 => GgufValue::U16(u16::from_le_bytes(self.bytes()?)),
            3 => GgufValue::I16(i16::from_le_bytes(self.bytes()?)),
            4 => GgufValue::U32(self.u32()?),
            5 => GgufValue::I32(i32::from_le_bytes(self.bytes()?)),
            6 => GgufValue::F32(f32::from_le_bytes(self.bytes()?)),
            7 => {
                let [b] = self.bytes()?;
                match b {
                    0 => GgufValue::Bool(false),
                    1 => GgufValue::Bool(true),
                    other => {
                        return Err(GgufError::Corrupt(format!(
                            "bool value {other} at offset {}",
                            self.offset - 1
                        )))
                    }
                }
            }
            8 => GgufValue::String(self.string()?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(GgufError::Corrupt(format!(
                        "arrays nested deeper than {MAX_ARRAY_DEPTH}"
                    )));
                }
                let elem_ty = self.u32()?;
                let count = self.u64()?;
                let min = Self::min_size(elem_ty).ok_or_else(|| {
                    GgufError::Corrupt(format!("unknown array element type {elem_ty}"))
                })?;
                let needed = count.saturating_mul(min);
                self.ensure(needed)?;
                if count > MAX_ARRAY_LEN {
                    return Err(GgufError::Corrupt(format!(
                        "array of {count} elements at offset {} (limit {MAX_ARRAY_LEN})",
                        self.offset
                    )));
                }
                if count > self.elements_left {
                    return Err(GgufError::Corrupt(format!(
                        "more than {MAX_TOTAL_ELEMENTS} array elements in the metadata (at offset {})",
                        self.offset
                    )));
                }
                self.elements_left -= count;
                let count = usize::try_from(count)
                    .map_err(|_| GgufError::Corrupt(format!("array count {count} too large")))?;
                let mut items = Vec::with_capacity(count);
                for _ in 0..count {
                    items.push(self.value(elem_ty, depth + 1)?);
                }
                GgufValue::Array(items)
            }
            10 => GgufValue::U64(self.u64()?),
            11 => GgufValue::I64(i64::from_le_bytes(self.bytes()?)),
            12 => GgufValue::F64(f64::from_le_bytes(self.bytes()?)),
            other => {
                return Err(GgufError::Corrupt(format!(
                    "unknown value type {other} at offset {}",
                    self.offset - 4
                )))
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a GGUF v3 header + metadata in memory (no tensors).
    pub(crate) fn build(kv: &[(&str, GgufValue)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(b"GGUF");
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&(kv.len() as u64).to_le_bytes());
        for (k, v) in kv {
            put_str(&mut out, k);
            out.extend_from_slice(&type_of(v).to_le_bytes());
            put_value(&mut out, v);
        }
        out
    }

    fn put_str(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    fn type_of(v: &GgufValue) -> u32 {
        match v {
            GgufValue::U8(_) => 0,
            GgufValue::I8(_) => 1,
            GgufValue::U16(_) => 2,
            GgufValue::I16(_) => 3,
            GgufValue::U32(_) => 4,
            GgufValue::I32(_) => 5,
            GgufValue::F32(_) => 6,
            GgufValue::Bool(_) => 7,
            GgufValue::String(_) => 8,
            GgufValue::Array(_) => 9,
            GgufValue::U64(_) => 10,
            GgufValue::I64(_) => 11,
            GgufValue::F64(_) => 12,
        }
    }

    fn put_value(out: &mut Vec<u8>, v: &GgufValue) {
        match v {
            GgufValue::U8(x) => out.push(*x),
            GgufValue::I8(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::Bool(x) => out.push(u8::from(*x)),
            GgufValue::String(s) => put_str(out, s),
            GgufValue::Array(items) => {
                let elem = items.first().map(type_of).unwrap_or(4);
                out.extend_from_slice(&elem.to_le_bytes());
                out.extend_from_slice(&(items.len() as u64).to_le_bytes());
                for it in items {
                    put_value(out, it);
                }
            }
            GgufValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
            GgufValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
        }
    }

    fn sample() -> Vec<u8> {
        build(&[
            ("general.architecture", GgufValue::String("llama".into())),
            ("answer", GgufValue::U32(42)),
            ("flag", GgufValue::Bool(true)),
            ("neg", GgufValue::I64(-7)),
            (
                "list",
                GgufValue::Array(vec![
                    GgufValue::String("a".into()),
                    GgufValue::String("bc".into()),
                ]),
            ),
            ("pi", GgufValue::F64(3.5)),
        ])
    }

    #[test]
    fn round_trips_every_common_type() {
        let meta = parse_metadata(&sample()).unwrap();
        assert_eq!(meta.version, 3);
        assert_eq!(meta.get_str("general.architecture"), Some("llama"));
        assert_eq!(meta.get("answer").and_then(GgufValue::as_i64), Some(42));
        assert_eq!(meta.get("flag").and_then(GgufValue::as_bool), Some(true));
        assert_eq!(meta.get("neg").and_then(GgufValue::as_i64), Some(-7));
        assert_eq!(meta.get("pi"), Some(&GgufValue::F64(3.5)));
        let list = meta.get("list").and_then(GgufValue::as_array).unwrap();
        assert_eq!(list.len(), 2);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = sample();
        for cut in 0..bytes.len() {
            assert!(parse_metadata(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn huge_lengths_are_rejected_before_allocating() {
        let mut bytes = build(&[("k", GgufValue::String("v".into()))]);
        // Overwrite the string length of the value with u64::MAX / 2.
        let at = bytes.len() - 1 - 8;
        bytes[at..at + 8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
        let err = parse_metadata(&bytes).unwrap_err();
        assert!(matches!(err, GgufError::Truncated { .. }), "{err}");

        let mut bytes = build(&[("k", GgufValue::Array(vec![GgufValue::U32(1)]))]);
        let at = bytes.len() - 4 - 8;
        bytes[at..at + 8].copy_from_slice(&(u64::MAX).to_le_bytes());
        assert!(parse_metadata(&bytes).is_err());
    }

    #[test]
    fn wrong_magic_and_version() {
        let mut bytes = sample();
        bytes[0] = b'X';
        assert!(matches!(
            parse_metadata(&bytes),
            Err(GgufError::BadMagic(_))
        ));
        let mut bytes = sample();
        bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert!(matches!(
            parse_metadata(&bytes),
            Err(GgufError::UnsupportedVersion(1))
        ));
    }

    /// Arrays of bytes may not expand a file 32-fold in memory without
    /// bound. Four byte arrays of 2^20 elements (4 MiB of file, 128 MiB decoded) fill the
    /// budget of 2^22 elements; one element more is refused.
    #[test]
    fn byte_arrays_are_bounded_in_total() {
        let bytes_array = |n: usize| GgufValue::Array(vec![GgufValue::U8(7); n]);
        let ok: Vec<(String, GgufValue)> = (0..4)
            .map(|i| (format!("a{i}"), bytes_array(1 << 20)))
            .collect();
        let kv: Vec<(&str, GgufValue)> = ok.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        assert!(parse_metadata(&build(&kv)).is_ok());
        let mut too_many = kv.clone();
        too_many.push(("a4", bytes_array(1)));
        let err = parse_metadata(&build(&too_many)).unwrap_err().to_string();
        assert!(err.contains("array elements in the metadata"), "{err}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Any bytes after a valid header are an error or metadata, never a
        /// panic, and never more elements than the budget.
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let mut bytes = b"GGUF".to_vec();
            bytes.extend_from_slice(&3u32.to_le_bytes());
            bytes.extend_from_slice(&tail);
            let _ = parse_metadata(&bytes);
            let _ = parse_metadata(&tail);
        }
    }
}
