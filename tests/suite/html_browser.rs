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

#[test]
fn html_report_shows_its_charts_in_chromium() {
    if std::env::var("SERVEBENCH_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("SERVEBENCH_SKIP_BROWSER=1: browser check skipped");
        return;
    }
    let browser = chromium().unwrap_or_else(|| {
        panic!(
            "chromium is not installed: the HTML report test renders the page in headless \
             Chromium. Install Debian's `chromium` (scripts/test.sh does), point \
             SERVEBENCH_CHROMIUM at a Chromium binary, or set SERVEBENCH_SKIP_BROWSER=1 to skip"
        )
    });
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
