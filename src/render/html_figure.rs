//! One chart of the HTML page as a `<figure>`: the chart drawn by `plot` as inline SVG (its
//! title, axes with units and legend are in the SVG itself), with the page's figure class and
//! the chart's name as its anchor, and an optional caption below it. Every section that shows
//! a chart (`html`, `html_pareto`, `html_slices`, `html_autoscale`, `html_adaptive`) writes it
//! through here, so a figure reads the same everywhere and a failed drawing is named the same.
//!
//! A leaf: it uses `plot`'s drawing and `escape`, and nothing of the sections that call it.

use crate::render::error::{DrawError, RenderError};
use crate::render::escape::html as esc;
use crate::render::plot::chart::Chart;
use crate::render::plot::draw::chart_svg;

/// A drawing that failed, named as the page's chart `name`.
pub fn drawn(name: &str, svg: Result<String, DrawError>) -> Result<String, RenderError> {
    svg.map_err(|source| RenderError::Draw {
        what: format!("the chart {name} of the HTML page"),
        source,
    })
}

/// An SVG already drawn, as the figure `name` (escaped), with `caption` (HTML the caller
/// escaped) below it when given; one line.
pub fn wrap(name: &str, svg: &str, caption: Option<&str>) -> String {
    let caption = caption.map_or_else(String::new, |c| format!("<figcaption>{c}</figcaption>"));
    format!(
        "<figure class=\"chart\" id=\"{}\">{svg}{caption}</figure>\n",
        esc(name)
    )
}

/// Chart `c` drawn as the figure named by its file stem, without a caption.
pub fn figure(c: &Chart) -> Result<String, RenderError> {
    Ok(wrap(&c.name, &drawn(&c.name, chart_svg(c))?, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::plot::chart::{Dash, Line};

    #[test]
    fn a_figure_holds_the_svg_its_anchor_and_an_escaped_name() {
        let c = Chart {
            name: "a<b".into(),
            title: "T".into(),
            x_label: "time (s)".into(),
            y_label: "requests".into(),
            x_log: false,
            y_log: false,
            lines: vec![Line {
                name: "l".into(),
                color: 0,
                dash: Dash::Solid,
                points: vec![(0.0, 1.0), (1.0, 2.0)],
                markers: true,
            }],
            legend: Vec::new(),
        };
        let h = figure(&c).unwrap();
        assert!(
            h.starts_with("<figure class=\"chart\" id=\"a&lt;b\"><svg"),
            "{h}"
        );
        assert!(h.contains("</svg>") && h.ends_with("</figure>\n"), "{h}");
        assert!(!h.contains("figcaption"));
        let w = wrap("x", "<svg></svg>", Some("a caption"));
        assert_eq!(
            w,
            "<figure class=\"chart\" id=\"x\"><svg></svg><figcaption>a caption</figcaption></figure>\n"
        );
    }
}
