//! A media file a dataset names (a jsonl line's `image_files` or `audio`), read whole and
//! bounded ([`read`]): only a regular file is read, so a FIFO, a device or a socket is refused
//! by name instead of blocking the run for ever (the type is checked before the open, the
//! open never waits on a FIFO's writer, and the type is checked again on what was opened);
//! at most `max` bytes are read.
//!
//! A leaf: the image and WAV readers (`media.rs`, `wav.rs`) both read through it, and it
//! imports neither. No clock here.

use std::io::Read;
use std::path::Path;

/// Why a media file could not be read (the caller's error names the file).
#[derive(Debug, thiserror::Error)]
pub enum MediaFileError {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    #[error("not a regular file ({0}): only files are read")]
    NotRegular(&'static str),
}

/// What kind of file `t` is, when it is not a regular one.
fn kind(t: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    })
}

/// The bytes of the regular file at `path` (links followed), at most `max` of them.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, MediaFileError> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::metadata(path).map_err(MediaFileError::Read)?;
    if let Some(k) = kind(meta.file_type()) {
        return Err(MediaFileError::NotRegular(k));
    }
    if meta.len() > max {
        return Err(MediaFileError::TooLarge(max));
    }
    // Swapped for a FIFO since: the open does not wait for a writer, and the check below
    // refuses it.
    let file = (std::fs::OpenOptions::new().read(true))
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(MediaFileError::Read)?;
    let opened = file.metadata().map_err(MediaFileError::Read)?;
    if let Some(k) = kind(opened.file_type()) {
        return Err(MediaFileError::NotRegular(k));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len().min(max)).unwrap_or(0));
    (file.take(max + 1).read_to_end(&mut bytes)).map_err(MediaFileError::Read)?;
    if bytes.len() as u64 > max {
        return Err(MediaFileError::TooLarge(max));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO, a device and a folder are refused by kind at once (a FIFO without a writer
    /// used to block the open for ever); a file over the limit is refused; a file is read.
    #[test]
    fn only_a_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.png");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo, 100).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        let e = read(Path::new("/dev/zero"), 100).unwrap_err().to_string();
        assert!(e.contains("character device"), "{e}");
        let e = read(dir.path(), 100).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let file = dir.path().join("a.bin");
        std::fs::write(&file, [7u8; 10]).unwrap();
        assert_eq!(read(&file, 10).unwrap(), [7u8; 10]);
        assert!(read(&file, 9).unwrap_err().to_string().contains("larger"));
        assert!(matches!(
            read(&dir.path().join("none"), 9),
            Err(MediaFileError::Read(_))
        ));
    }
}
