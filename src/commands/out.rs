//! The commands' one way to stdout: [`out`] writes what the user reads, every control
//! character made visible. A leaf: it imports nothing from the command files.

use std::io::Write;

/// Writes `text` to stdout, its control characters but newline and tab made visible
/// (`escape::terminal`). A closed pipe is an error `dispatch` (the folder's `mod.rs`) turns
/// into a quiet exit 0 (`print!` would panic instead).
pub(super) fn out(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(crate::render::escape::terminal(text).as_bytes())?;
    stdout.flush()?;
    Ok(())
}
