//! Saved documents read from disk, bounded before they are read (a result, a sweep's or a
//! search's, or a file another tool wrote that `report` or `plot` opens): the bytes at most
//! [`MAX_DOCUMENT_BYTES`], or that JSON parsed. The error names the file and what is wrong.

use std::io::Read as _;
use std::path::Path;

use serde_json::Value;

use crate::results::error::ResultsError;

/// The most bytes of a saved document read: a result at its per-request arrays' limits
/// (`document::PER_REQUEST_CHUNKS_MAX` gaps, `document::PER_REQUEST_ARRAYS_MAX` requests'
/// texts) is a few hundred MB. A larger file is refused before it is read.
pub const MAX_DOCUMENT_BYTES: u64 = 1 << 30;

/// A saved document's bytes, at most [`MAX_DOCUMENT_BYTES`]: bounded by the file's announced
/// size before the read, then by what is read (a file that grows, or reports no size).
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, ResultsError> {
    let read = |source| ResultsError::Read {
        path: path.to_path_buf(),
        source,
    };
    let too_large = || ResultsError::Invalid {
        path: path.to_path_buf(),
        why: format!(
            "larger than {} MiB, the most a saved document may be",
            MAX_DOCUMENT_BYTES >> 20
        ),
    };
    let file = std::fs::File::open(path).map_err(read)?;
    if file.metadata().map_err(read)?.len() > MAX_DOCUMENT_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    (file.take(MAX_DOCUMENT_BYTES + 1).read_to_end(&mut bytes)).map_err(read)?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// A saved document read as JSON ([`read_bounded`]).
pub fn read_json(path: &Path) -> Result<Value, ResultsError> {
    serde_json::from_slice(&read_bounded(path)?).map_err(|e| ResultsError::BadResult {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}
