//! A `multipart/form-data` body, read (RFC 7578): the boundary from the request's content
//! type, then each part's `Content-Disposition` name (and whether it names a file) and its
//! bytes, borrowed from the body. Used by the transcriptions endpoint (`audio.rs`).
//!
//! Bounded before the work: the body itself by the server's body limit (`HttpLimits`), at
//! most [`MAX_PARTS`] parts, each part's head at most [`MAX_PART_HEAD`] bytes, a boundary of
//! 1 to 70 characters (the RFC's). Whatever does not read is a [`FormError`] (`sim/error.rs`)
//! saying what, which the endpoint answers with a 400.
//!
//! # What it must not touch
//! Any API's fields (the endpoint reads them), the engine, the socket.

use crate::sim::error::FormError;

/// The most parts a form may have.
pub(crate) const MAX_PARTS: usize = 64;
/// The most bytes of one part's head (its header lines).
pub(crate) const MAX_PART_HEAD: usize = 1024;

/// One part of a form: its name, its file name if it is a file, its bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct FormPart<'a> {
    pub(crate) name: String,
    pub(crate) file: bool,
    pub(crate) bytes: &'a [u8],
}

/// The boundary a `multipart/form-data` content type names.
pub(crate) fn boundary(content_type: Option<&str>) -> Result<String, FormError> {
    let ct = content_type.ok_or(FormError::NoContentType)?;
    let mut params = ct.split(';');
    let kind = params.next().unwrap_or_default().trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        let shown: String = kind.chars().take(60).collect();
        return Err(FormError::NotMultipart { shown });
    }
    let b = params
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"'))
        .ok_or(FormError::NoBoundary)?;
    if b.is_empty() || b.len() > 70 || !b.bytes().all(|c| c.is_ascii_graphic() || c == b' ') {
        return Err(FormError::BadBoundary);
    }
    Ok(b.to_string())
}

/// The parts of `body`, in order.
pub(crate) fn parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<FormPart<'a>>, FormError> {
    let delimiter = format!("--{boundary}");
    let d = delimiter.as_bytes();
    let mut at = find(body, d, 0).ok_or(FormError::NoPart)?;
    let mut out = Vec::new();
    loop {
        at += d.len();
        let rest = &body[at..];
        if rest.starts_with(b"--") {
            return Ok(out);
        }
        if !rest.starts_with(b"\r\n") {
            return Err(FormError::part(out.len() + 1, FormError::BoundaryLine));
        }
        at += 2;
        if out.len() == MAX_PARTS {
            return Err(FormError::TooManyParts { max: MAX_PARTS });
        }
        let n = out.len() + 1;
        let window = &body[at..body.len().min(at + MAX_PART_HEAD + 4)];
        let head_len = find(window, b"\r\n\r\n", 0)
            .ok_or_else(|| FormError::part(n, FormError::HeadTooLong { max: MAX_PART_HEAD }))?;
        let head = std::str::from_utf8(&window[..head_len])
            .map_err(|_| FormError::part(n, FormError::HeadNotUtf8))?;
        let (name, file) = disposition(head).map_err(|why| FormError::part(n, why))?;
        let start = at + head_len + 4;
        let mut close = b"\r\n".to_vec();
        close.extend_from_slice(d);
        let end = find(body, &close, start).ok_or_else(|| FormError::CutShort {
            part: n,
            name: name.clone(),
        })?;
        out.push(FormPart {
            name,
            file,
            bytes: &body[start..end],
        });
        at = end + 2;
    }
}

/// A part head's `Content-Disposition: form-data` name, and whether it names a file.
fn disposition(head: &str) -> Result<(String, bool), FormError> {
    let line = head
        .split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-disposition"))
        .map(|(_, v)| v)
        .ok_or(FormError::NoDisposition)?;
    let mut params = line.split(';').map(str::trim);
    if !params
        .next()
        .is_some_and(|k| k.eq_ignore_ascii_case("form-data"))
    {
        return Err(FormError::NotFormData);
    }
    let (mut name, mut file) = (None, false);
    for p in params {
        match p.split_once('=') {
            Some((k, v)) if k.trim().eq_ignore_ascii_case("name") => {
                name = Some(v.trim().trim_matches('"').to_string());
            }
            Some((k, _)) if k.trim().eq_ignore_ascii_case("filename") => file = true,
            _ => {}
        }
    }
    Ok((name.ok_or(FormError::NoName)?, file))
}

/// Where `needle` first occurs in `hay` at or after `from`: each candidate found by its
/// first byte, so a file of megabytes costs one pass.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let (&first, tail) = needle.split_first()?;
    let mut i = from;
    while i + needle.len() <= hay.len() {
        let at = i + hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&b| b == first)?;
        if &hay[at + 1..at + needle.len()] == tail {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/form-data; boundary=XyZ";

    fn form(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
        let mut out = b"preamble\r\n".to_vec();
        for (name, file, bytes) in parts {
            out.extend_from_slice(b"--XyZ\r\n");
            let f = file.map_or(String::new(), |f| format!("; filename=\"{f}\""));
            out.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"{f}\r\n\r\n").as_bytes(),
            );
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"--XyZ--\r\n");
        out
    }

    /// A form's parts, names, files and bytes (holding CRLFs and dashes) read.
    #[test]
    fn a_form_s_parts_are_read() {
        assert_eq!(boundary(Some(CT)).unwrap(), "XyZ");
        assert_eq!(
            boundary(Some("Multipart/Form-Data; charset=x; boundary=\"a b\"")).unwrap(),
            "a b"
        );
        let body = form(&[
            ("model", None, &b"whisper"[..]),
            ("file", Some("a.wav"), &b"RIFF\r\n--Xy\r\n\x00WAVE"[..]),
        ]);
        let p = parts(&body, "XyZ").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p[0].name.as_str(), p[0].file, p[0].bytes),
            ("model", false, &b"whisper"[..])
        );
        assert_eq!((p[1].name.as_str(), p[1].file), ("file", true));
        assert_eq!(p[1].bytes, b"RIFF\r\n--Xy\r\n\x00WAVE");
    }

    /// What is not a form is refused saying what.
    #[test]
    fn a_malformed_form_is_refused_by_name() {
        for (ct, says) in [
            (None, "no content type"),
            (Some("application/json"), "application/json"),
            (Some("multipart/form-data"), "no boundary"),
        ] {
            assert!(
                boundary(ct).unwrap_err().to_string().contains(says),
                "{ct:?}"
            );
        }
        let good = form(&[("model", None, &b"m"[..])]);
        let cut = &good[..good.len() - 12];
        assert!(parts(cut, "XyZ")
            .unwrap_err()
            .to_string()
            .contains("cut short"));
        assert!(parts(&good, "Other")
            .unwrap_err()
            .to_string()
            .contains("no part"));
        let no_name = b"--XyZ\r\nContent-Disposition: form-data\r\n\r\nx\r\n--XyZ--".to_vec();
        assert!(parts(&no_name, "XyZ")
            .unwrap_err()
            .to_string()
            .contains("no name"));
        let long = format!("--XyZ\r\nX: {}\r\n\r\nx\r\n--XyZ--", "a".repeat(2000));
        assert!(parts(long.as_bytes(), "XyZ")
            .unwrap_err()
            .to_string()
            .contains("1024"));
        let many: Vec<(&str, Option<&str>, &[u8])> = vec![("f", None, &b"v"[..]); 65];
        assert!(parts(&form(&many), "XyZ")
            .unwrap_err()
            .to_string()
            .contains("64"));
    }
}
