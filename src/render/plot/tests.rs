//! Unit tests of chart building, drawing and fonts.

use plotters::style::{register_font, FontStyle};

use super::chart::{cdf, wants_log};
use super::font::metrics_only_font;

#[test]
fn log_axes_only_for_wide_positive_ranges() {
    assert!(wants_log([1.0, 4096.0].into_iter()));
    assert!(!wants_log([1.0, 40.0].into_iter()));
    assert!(!wants_log([0.0, 4096.0].into_iter()));
}

#[test]
fn cdf_ends_at_one() {
    let c = cdf(&[3.0, 1.0, 2.0]);
    assert_eq!(c, vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]);
}

#[test]
fn metrics_only_font_parses() {
    let bytes = Box::leak(metrics_only_font().into_boxed_slice());
    assert!(register_font("servebench-test-metrics", FontStyle::Normal, bytes).is_ok());
}
