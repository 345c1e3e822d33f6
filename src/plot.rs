//! Charts (stub).
use std::path::{Path, PathBuf};

use crate::error::ViewError;
use crate::view::View;

#[derive(Clone, Copy, Debug)]
pub struct Formats {
    pub svg: bool,
    pub png: bool,
}

impl Formats {
    pub fn parse(s: &str) -> Formats {
        Formats {
            svg: s != "png",
            png: s != "svg",
        }
    }
}

pub fn plot_all(_views: &[View], _dir: &Path, _f: Formats) -> Result<Vec<PathBuf>, ViewError> {
    Ok(vec![])
}
