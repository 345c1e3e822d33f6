//! HTML (stub).
use std::path::Path;

use crate::error::ViewError;
use crate::view::View;

pub fn write(_view: &View, _out: &Path) -> Result<(), ViewError> {
    Ok(())
}
