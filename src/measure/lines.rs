//! A text file read a line at a time, each line's bytes bounded before it is held: the
//! readers of files from outside (`trace analyze`'s trace, `trace anonymize`'s input) take
//! their lines here, numbered from 1, blank ones skipped, and name the line a bound refused.

use std::io::{self, BufRead, Read};

/// Why a line was not given as text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadLine {
    /// Longer than the reader's bound.
    TooLong,
    NotUtf8,
}

/// The lines of `reader`, each at most `max` bytes.
pub struct Lines<R> {
    reader: R,
    max: usize,
    buf: Vec<u8>,
    number: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R, max: usize) -> Self {
        Lines {
            reader,
            max,
            buf: Vec::new(),
            number: 0,
        }
    }

    /// The next line that is not blank, with its number (from 1, blank lines counted); its
    /// text, or why it has none. `None` at the end of the file. At most `max + 1` bytes of a
    /// line are read before it is refused.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Result<&str, BadLine>)>> {
        loop {
            self.buf.clear();
            let n = (&mut self.reader)
                .take(self.max as u64 + 1)
                .read_until(b'\n', &mut self.buf)?;
            if n == 0 {
                return Ok(None);
            }
            self.number += 1;
            if self.buf.len() > self.max {
                return Ok(Some((self.number, Err(BadLine::TooLong))));
            }
            match std::str::from_utf8(&self.buf) {
                Err(_) => return Ok(Some((self.number, Err(BadLine::NotUtf8)))),
                Ok(text) if text.trim().is_empty() => {}
                Ok(_) => break,
            }
        }
        // Checked above: UTF-8 and not blank.
        let text = std::str::from_utf8(&self.buf).map_err(io::Error::other)?;
        Ok(Some((self.number, Ok(text))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_blank_ones_skipped_and_bounds_named() {
        let input: &[u8] = b"a\n\n  \nbb\n\xff\nc\ntoolong\n";
        let mut lines = Lines::new(input, 4);
        let mut got = Vec::new();
        while let Some((n, l)) = lines.next_line().unwrap() {
            let too_long = l == Err(BadLine::TooLong);
            got.push((n, l.map(str::to_string)));
            if too_long {
                break; // the rest of a line too long is not a line: its readers stop here
            }
        }
        assert_eq!(
            got,
            vec![
                (1, Ok("a\n".to_string())),
                (4, Ok("bb\n".to_string())),
                (5, Err(BadLine::NotUtf8)),
                (6, Ok("c\n".to_string())),
                (7, Err(BadLine::TooLong)),
            ]
        );
    }
}
