//! The font for text in charts: looked up at run time ([`font_path`]: `SERVEBENCH_FONT`, then
//! the usual system locations); none is bundled or downloaded. SVG text is laid out with the
//! same font when there is one, else with built-in metrics (browsers draw SVG text with their
//! own fonts), so SVG and HTML work on machines without any font; PNGs need a real one.
//!
//! Registers fonts with plotters and nothing else. To look in one more place, add it to
//! [`font_path`]'s candidates.

use std::path::PathBuf;
use std::sync::OnceLock;

use plotters::style::register_font;
use plotters::style::FontStyle;

/// A font file for text in PNGs: `SERVEBENCH_FONT`, else the first of the usual system fonts.
pub fn font_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SERVEBENCH_FONT").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    const CANDIDATES: [&str; 12] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
        "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
        "/usr/share/fonts/noto/NotoSans-Regular.ttf",
        "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
        "/System/Library/Fonts/Supplemental/Arial.ttf",
        "C:\\Windows\\Fonts\\arial.ttf",
    ];
    CANDIDATES.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// Registers the font used for layout (and PNG glyphs) once; true when it is a real font.
pub(super) fn ensure_font() -> bool {
    static REAL: OnceLock<bool> = OnceLock::new();
    *REAL.get_or_init(|| {
        let real = font_path()
            .and_then(|p| std::fs::read(p).ok())
            .map(|bytes| &*Box::leak(bytes.into_boxed_slice()))
            .filter(|bytes| register_font("sans-serif", FontStyle::Normal, bytes).is_ok());
        if real.is_some() {
            return true;
        }
        // No font on this machine: metrics only (every glyph 0.55 em wide), enough to lay out
        // SVG text, which the viewer draws with its own fonts.
        let metrics = &*Box::leak(metrics_only_font().into_boxed_slice());
        let _ = register_font("sans-serif", FontStyle::Normal, metrics);
        false
    })
}

/// A minimal TrueType font with metrics but no outlines: head, hhea, maxp and hmtx tables,
/// one glyph 0.55 em wide. It lets text be measured when no system font exists.
pub(super) fn metrics_only_font() -> Vec<u8> {
    let upem: u16 = 1000;
    let mut head = vec![0u8; 54];
    head[0..4].copy_from_slice(&0x0001_0000u32.to_be_bytes()); // version
    head[12..16].copy_from_slice(&0x5F0F_3CF5u32.to_be_bytes()); // magic
    head[18..20].copy_from_slice(&upem.to_be_bytes());
    head[40..42].copy_from_slice(&550u16.to_be_bytes()); // xMax
    head[42..44].copy_from_slice(&800u16.to_be_bytes()); // yMax
    let mut hhea = vec![0u8; 36];
    hhea[0..4].copy_from_slice(&0x0001_0000u32.to_be_bytes());
    hhea[4..6].copy_from_slice(&800i16.to_be_bytes()); // ascender
    hhea[6..8].copy_from_slice(&(-200i16).to_be_bytes()); // descender
    hhea[10..12].copy_from_slice(&550u16.to_be_bytes()); // advanceWidthMax
    hhea[34..36].copy_from_slice(&1u16.to_be_bytes()); // numberOfHMetrics
    let mut maxp = vec![0u8; 6];
    maxp[0..4].copy_from_slice(&0x0000_5000u32.to_be_bytes());
    maxp[4..6].copy_from_slice(&1u16.to_be_bytes()); // numGlyphs
    let hmtx = [550u16.to_be_bytes(), 0u16.to_be_bytes()].concat();
    let tables: [(&[u8; 4], Vec<u8>); 4] = [
        (b"head", head),
        (b"hhea", hhea),
        (b"hmtx", hmtx),
        (b"maxp", maxp),
    ];
    let mut out = Vec::new();
    out.extend_from_slice(&0x0001_0000u32.to_be_bytes());
    out.extend_from_slice(&(tables.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 64, 0, 2, 0, 0]); // searchRange, entrySelector, rangeShift
    let mut offset = 12 + 16 * tables.len();
    let mut body = Vec::new();
    for (tag, data) in &tables {
        out.extend_from_slice(*tag);
        out.extend_from_slice(&0u32.to_be_bytes()); // checksum (not verified by readers)
        out.extend_from_slice(&(offset as u32).to_be_bytes());
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut d = data.clone();
        d.resize(data.len().div_ceil(4) * 4, 0);
        offset += d.len();
        body.extend_from_slice(&d);
    }
    out.extend_from_slice(&body);
    out
}

// ---------------------------------------------------------------- rendering
