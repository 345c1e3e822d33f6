//! `servebench report FILE --html OUT.html` rendered by a real browser: headless Chromium
//! loads the self-contained page (no network) and its DOM must hold the inline SVG charts with
//! their data; a screenshot must be a real picture.
//!
//! Needs Debian's `chromium` (scripts/test.sh installs it). Without it the test fails with a
//! message saying so, unless SERVEBENCH_SKIP_BROWSER=1.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SERVEBENCH_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs headless Chromium with `args` on `page`; returns stdout. Fails the test after 90 s.
fn headless(browser: &Path, profile: &Path, args: &[&str], page: &Path) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let case = format!("chromium {args:?}");
    let out = common::finish_within(child, Duration::from_secs(90), &case);
    assert!(out.status.success(), "{case}: {:?}", out.status);
    reader.join().unwrap()
}

/// The browser, or `None` when SERVEBENCH_SKIP_BROWSER=1 (the test then passes, saying so);
/// without one and without the variable, the test fails saying how to get one.
fn browser_or_skip() -> Option<PathBuf> {
    if std::env::var("SERVEBENCH_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("SERVEBENCH_SKIP_BROWSER=1: browser check skipped");
        return None;
    }
    Some(chromium().unwrap_or_else(|| {
        panic!(
            "chromium is not installed: the HTML report test renders the page in headless \
             Chromium. Install Debian's `chromium` (scripts/test.sh does), point \
             SERVEBENCH_CHROMIUM at a Chromium binary, or set SERVEBENCH_SKIP_BROWSER=1 to skip"
        )
    }))
}

#[test]
fn html_report_shows_its_charts_in_chromium() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("tgi.html");
    let out = common::servebench()
        .args(["report", "tests/fixtures/seed001_tgi.txt", "--html"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    for external in ["<script", "<link", "src=", "@import", "url("] {
        assert!(
            !html.contains(external),
            "the page must not load {external}"
        );
    }

    let profile = dir.path().join("profile");
    let dom = headless(&browser, &profile, &["--dump-dom"], &page);
    assert!(
        dom.contains("servebench report: tgi"),
        "page title in the DOM"
    );
    assert!(dom.contains("767.92"), "the table");
    let charts = dom.matches("<figure class=\"chart\"").count();
    let svgs = dom.matches("<svg").count();
    assert!(charts >= 7 && svgs >= charts, "{charts} charts, {svgs} svg");
    // Data, not empty frames: the lines of the sweep and the axis labels.
    assert!(dom.matches("<polyline").count() >= 7, "chart lines");
    assert!(dom.contains("num_prompts [log]"), "log axis label");
    assert!(
        dom.contains("Output token throughput vs num_prompts"),
        "chart title"
    );

    let shot = dir.path().join("shot.png");
    let shot_arg = format!("--screenshot={}", shot.display());
    headless(
        &browser,
        &profile,
        &[&shot_arg, "--window-size=1200,2000", "--hide-scrollbars"],
        &page,
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert_eq!(&png[1..4], b"PNG");
    assert!(
        png.len() > 60_000,
        "a page with charts, not a blank one: {} bytes",
        png.len()
    );
}

/// A copy of `page` with an inline probe that writes what the browser laid out and fetched
/// into the body's data attributes, for `--dump-dom` to show: horizontal overflow of the
/// document (px), resources fetched, the timeline's rows, figures without an axis label or
/// a legend, and SVGs whose right edge passes the window's. `extra` is markup put before the
/// probe (a planted overflow).
fn probed(page: &Path, out: &Path, extra: &str) {
    let html = std::fs::read_to_string(page).unwrap();
    let probe = r#"<script>
window.addEventListener('load', () => {
  const d = document.documentElement, b = document.body;
  b.dataset.overflow = String(d.scrollWidth - d.clientWidth);
  b.dataset.resources = String(performance.getEntriesByType('resource').length);
  b.dataset.rows = String(document.querySelectorAll('figure.tl g.rq').length);
  const tl = document.querySelector('figure.tl');
  b.dataset.tlaxes = tl ? String(!!tl.querySelector('.xlabel') && !!tl.querySelector('.ylabel')) : 'none';
  b.dataset.tllegend = String(document.querySelectorAll('.legend .sw').length);
  b.dataset.svgwide = String([...document.querySelectorAll('svg')]
    .filter(s => s.getBoundingClientRect().right > d.clientWidth + 1).length);
});
</script>"#;
    let html = html.replace("</body>", &format!("{extra}{probe}</body>"));
    std::fs::write(out, html).unwrap();
}

/// The value of `data-NAME` on the dumped DOM's body.
fn data(dom: &str, name: &str) -> String {
    let key = format!("data-{name}=\"");
    let at = dom
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in the DOM"));
    let rest = &dom[at + key.len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// A run's page in a real browser: it opens with the answer (headline figures with units, the
/// verdict, SLO attainment), its timeline has one row per request as the page says, nothing is
/// fetched, and at a laptop's widths nothing overflows the window sideways (a planted wide
/// element shows the probe would see it).
#[test]
fn run_page_opens_with_the_answer_and_a_timeline_in_chromium() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = common::servebench()
        .args([
            "run",
            "--sim-preset",
            "exact",
            "--num-prompts",
            "60",
            "--request-rate",
            "200",
        ])
        .args([
            "--output-len",
            "12",
            "--goodput",
            "ttft:5000",
            "--result-dir",
        ])
        .arg(d)
        .args(["--result-filename", "run.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let page = d.join("run.html");
    let out = common::servebench()
        .args(["report", "--timeline-itl-ms", "50", "--html"])
        .arg(&page)
        .arg(d.join("run.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    for external in ["<script", "<link", "src=", "@import", "url(", "href=\"http"] {
        assert!(
            !html.contains(external),
            "the page must not load {external}"
        );
    }
    // The answer comes before the charts, and the full table last.
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} in the page"));
    assert!(at("id=\"answer\"") < at("id=\"timeline\""));
    assert!(at("id=\"timeline\"") < at("id=\"series\""));
    assert!(
        html.contains("all 60 measured requests"),
        "the sampling is stated"
    );
    assert!(html.contains("Gaps between output chunks longer than 50 ms"));

    let profile = d.join("profile");
    for width in [1280, 1024] {
        let probe = d.join(format!("probe{width}.html"));
        probed(&page, &probe, "");
        let size = format!("--window-size={width},900");
        let dom = headless(&browser, &profile, &["--dump-dom", &size], &probe);
        assert_eq!(
            data(&dom, "overflow"),
            "0",
            "sideways overflow at {width} px"
        );
        assert_eq!(data(&dom, "resources"), "0", "nothing fetched");
        assert_eq!(data(&dom, "rows"), "60", "a row per request");
        assert_eq!(
            data(&dom, "tlaxes"),
            "true",
            "the timeline's axes are labelled"
        );
        assert!(
            data(&dom, "tllegend").parse::<u32>().unwrap() >= 8,
            "its legend"
        );
        assert!(dom.contains("Output throughput"), "headline label");
        assert!(dom.contains("tokens/s"), "headline unit");
        // The verdict, whichever a loaded machine gives.
        assert!(dom.contains("Measurement: <strong>"), "the verdict");
        assert!(
            dom.contains("SLO attainment: <strong>100.0%</strong>"),
            "{dom}"
        );
        assert!(dom.contains("(s)</text>"), "the time axis's unit");
    }
    // The probe sees an overflow when there is one.
    let probe = d.join("planted.html");
    probed(
        &page,
        &probe,
        "<div style=\"width:3000px;height:4px\"></div>",
    );
    let dom = headless(
        &browser,
        &profile,
        &["--dump-dom", "--window-size=1280,900"],
        &probe,
    );
    assert!(
        data(&dom, "overflow").parse::<i64>().unwrap() > 1000,
        "planted overflow seen"
    );
}

/// A sweep's page at a laptop's width (1366 px) in a real browser: it opens with the answer
/// (the sweep's table of steps, figures with their units), then the Pareto front; nothing
/// overflows the window sideways and no chart's SVG passes its edge; nothing is fetched; and
/// every chart has its axes labelled, the measured one with its unit, and a legend naming
/// the series.
#[test]
fn sweep_page_at_a_laptops_width_in_chromium() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("sweep.html");
    let out = common::servebench()
        .args(["report", "tests/fixtures/seed001_tgi.txt", "--html"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} in the page"));
    assert!(at("id=\"answer\"") < at("id=\"pareto_front\""));
    assert!(at("id=\"pareto_front\"") < at("id=\"series\""));
    let probe = dir.path().join("probe.html");
    probed(&page, &probe, "");
    let profile = dir.path().join("profile");
    let dom = headless(
        &browser,
        &profile,
        &["--dump-dom", "--window-size=1366,768"],
        &probe,
    );
    assert_eq!(data(&dom, "overflow"), "0", "sideways overflow at 1366 px");
    assert_eq!(data(&dom, "svgwide"), "0", "an SVG past the window's edge");
    assert_eq!(data(&dom, "resources"), "0", "nothing fetched");
    assert!(
        // The browser's DOM puts a <tbody> between the table and its rows.
        dom.contains("<table class=\"headline\">")
            && dom.contains("<tr><th>num_prompts</th><th>Output throughput (tokens/s)</th>"),
        "the first screen: a step per row, figures with their units"
    );
    let legend = "tgi meta-llama/Llama-3.1-405B-Instruct (seed001_tgi)";
    let units = ["(ms)", "(tokens/s)", "(requests/s)", "tokens/s per"];
    let figures: Vec<&str> = dom.split("<figure class=\"chart\"").skip(1).collect();
    assert!(figures.len() >= 8, "{} charts", figures.len());
    for f in figures {
        let f = &f[..f.find("</figure>").unwrap()];
        let id = &f[..f.find('>').unwrap()];
        assert!(f.contains("<svg"), "{id}: an SVG");
        assert!(f.contains(legend), "{id}: a legend naming the series");
        assert!(
            units.iter().any(|u| f.contains(u)),
            "{id}: an axis with its unit"
        );
        // Two axis labels besides the title and the legend.
        let labels = f.matches("<text").count();
        assert!(labels >= 6, "{id}: {labels} texts");
    }
}
