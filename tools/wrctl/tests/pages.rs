//! `wrctl pages`: check, encode and preview, run as the real binary.

use crate::support;

use std::path::Path;

use support::{run_to_end, wrctl};
use waiting_room::pages::page::{MAX_ORIGIN_PAGE_BYTES, Page, PageBody};
use waiting_room::pages::view::VARIABLES;
use waiting_room::settings::language::Language;

/// `wrctl args`: (exit code, stdout, stderr).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let run = wrctl(args, &[]);
    (run.code, run.out, run.err)
}

/// A page that passes every check, with `body` inside.
fn page(body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width\">\n<title>Wait</title>\n\
         </head>\n<body>\n{body}\n</body>\n</html>\n"
    )
}

fn write(dir: &Path, name: &str, text: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn encode_round_trips_through_the_rooms_page_reader() {
    let dir = tempfile::tempdir().unwrap();
    let html = page("<p>Hello ✓ {{wait_p50}}, back in {{ refresh_after }} s</p>");
    let file = write(dir.path(), "p.html", html.as_bytes());
    let (code, out, err) = run(&["pages", "encode", &file]);
    assert_eq!(code, Some(0), "{err}");
    let (body, problem) = Page::StartWaiting.body(Some(out.trim()), Language::En);
    assert_eq!(problem, None);
    assert_eq!(body, PageBody::Html(html.clone().into_bytes()));

    let (code, out, err) = run(&["pages", "encode", &file, "--key", "deny.de", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let object = json.as_object().unwrap();
    assert_eq!(object.len(), 1);
    let value = object["deny.de"].as_str().unwrap();
    assert_eq!(
        Page::Deny.body(Some(value), Language::En).0,
        PageBody::Html(html.into_bytes())
    );
}

#[test]
fn encode_refuses_a_page_with_an_error_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "p.html",
        page("<script src=\"https://cdn.example/x.js\"></script>").as_bytes(),
    );
    let (code, out, err) = run(&["pages", "encode", &file]);
    assert_eq!(code, Some(1), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("--force"), "{err}");
    let (code, out, _) = run(&["pages", "encode", &file, "--force"]);
    assert_eq!(code, Some(0));
    assert!(!out.trim().is_empty());
    let (code, _, err) = run(&["pages", "encode", &file, "--key", "welcome"]);
    assert_eq!(code, Some(2), "{err}");
}

/// `pages check` on `body` in an otherwise clean page: (exit code, stderr).
fn check_body(body: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.html", page(body).as_bytes());
    run_to_end(&["pages", "check", &file], &[])
}

#[test]
fn check_refuses_what_loads_from_outside() {
    for (body, expected) in [
        (
            "<script src=\"https://cdn.example/app.js\"></script>",
            "<script src=…> loads \"https://cdn.example/app.js\"",
        ),
        (
            "<link rel=\"stylesheet\" href=\"https://fonts.example/css\">",
            "<link rel=\"stylesheet\" href=…>",
        ),
        (
            "<img alt=\"\" src=\"https://img.example/logo.png\">",
            "<img src=…> loads \"https://img.example/logo.png\"",
        ),
        (
            "<style>\nbody { background: url(\"//img.example/bg.png\") }\n</style>",
            "CSS url(\"//img.example/bg.png\")",
        ),
        (
            "<div style=\"background:url(/images/bg.png)\"></div>",
            "fetched from the origin",
        ),
        (
            "<style>@import 'https://x.example/a.css';</style>",
            "@import",
        ),
        (
            "<iframe src=\"https://x.example/\"></iframe>",
            "<iframe src=…>",
        ),
        (
            "<script src=\"&#47;&#47;x.example/a.js\"></script>",
            "protocol-relative",
        ),
    ] {
        let (code, err) = check_body(body);
        assert_eq!(code, Some(1), "{body}: {err}");
        assert!(err.contains(expected), "{body}: {err}");
        // The line number: the body starts on line 9 of the page.
        assert!(
            err.contains("p.html:9: error:") || err.contains("p.html:10: error:"),
            "{err}"
        );
    }
}

#[test]
fn check_accepts_data_urls_links_and_fragments() {
    let (code, err) = check_body(
        "<img alt=\"\" src=\"data:image/png;base64,iVBORw0KGgo=\">\n\
         <a href=\"https://example.com/help\">help</a>\n\
         <style>.x{background:url(data:image/svg+xml,%3Csvg%3E)} .y{fill:url(#g)}</style>\n\
         <svg><use href=\"#icon\"/></svg>",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("error:"), "{err}");
}

#[test]
fn check_refuses_an_unknown_variable() {
    let (code, err) = check_body("<p>{{wait_p50}} {{ wait_median }}</p>");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("p.html:9: error: unknown template variable {{wait_median}}"),
        "{err}"
    );
    assert!(!err.contains("{{wait_p50}}:"), "{err}");
    for variable in VARIABLES {
        let (code, err) = check_body(&format!("<p>{{{{ {variable} }}}}</p>"));
        assert_eq!(code, Some(0), "{variable}: {err}");
    }
}

#[test]
fn check_refuses_a_page_over_the_config_store_limit_with_the_numbers() {
    // 6,000 bytes encode to exactly 8,000 characters: the limit itself passes.
    let shell = page("");
    let fill = |n: usize| page(&"x".repeat(n - shell.len()));
    let dir = tempfile::tempdir().unwrap();
    let at_limit = write(dir.path(), "a.html", fill(6_000).as_bytes());
    let (code, err) = run_to_end(&["pages", "check", &at_limit], &[]);
    assert_eq!(code, Some(0), "{err}");
    let over = write(dir.path(), "b.html", fill(6_001).as_bytes());
    let (code, err) = run_to_end(&["pages", "check", &over], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("the encoded page is 8,004 characters (6,001 bytes of HTML), 4 over the config store's limit of 8,000"),
        "{err}"
    );
}

/// An origin-hosted page is read up to the room's cap: a page at it may be served
/// from the origin, one over it may not (served from there, it is the built-in page).
#[test]
fn check_refuses_a_page_over_the_origin_cap_with_the_numbers() {
    let shell = page("");
    let fill = |n: usize| page(&"x".repeat(n - shell.len()));
    let dir = tempfile::tempdir().unwrap();
    let at_cap = write(dir.path(), "a.html", fill(MAX_ORIGIN_PAGE_BYTES).as_bytes());
    let (code, err) = run_to_end(&["pages", "check", &at_cap], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("or serve it from the origin as a /path"),
        "{err}"
    );
    assert!(!err.contains("fetches from the origin"), "{err}");
    let over = write(
        dir.path(),
        "b.html",
        fill(MAX_ORIGIN_PAGE_BYTES + 1).as_bytes(),
    );
    let (code, err) = run_to_end(&["pages", "check", &over], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "b.html: error: the page is 262,145 bytes, over the 262,144 bytes the room reads \
             of a page it fetches from the origin"
        ),
        "{err}"
    );
    assert!(!err.contains("serve it from the origin"), "{err}");
}

#[test]
fn check_warns_about_viewport_lang_and_title() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "p.html",
        b"<html><body>Please wait</body></html>",
    );
    let (code, err) = run_to_end(&["pages", "check", &file], &[]);
    assert_eq!(code, Some(0), "{err}");
    for expected in ["viewport", "no lang on <html>", "no <title>"] {
        assert!(err.contains(expected), "{expected}: {err}");
    }
    assert!(!err.contains("error:"), "{err}");
}

#[test]
fn check_refuses_non_utf8_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.html", b"<html>\n<p>caf\xe9</p>");
    let (code, err) = run_to_end(&["pages", "check", &file], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not UTF-8") && err.contains("line 2"), "{err}");
    // Odd but valid input: unclosed tags, comments, quotes, stray brackets.
    for odd in [
        "<",
        "<a",
        "<!--",
        "<img src=\"",
        "{{",
        "{{}}",
        "<style>url(",
        "<< >> <1 <a =b>",
        "<script>",
    ] {
        let file = write(dir.path(), "odd.html", odd.as_bytes());
        let (code, err) = run_to_end(&["pages", "check", &file], &[]);
        assert!(matches!(code, Some(0 | 1)), "{odd}: {err}");
        assert!(!err.contains("panicked"), "{odd}: {err}");
    }
}

#[test]
fn the_built_in_pages_pass() {
    let dir = tempfile::tempdir().unwrap();
    for page in [
        Page::StartWaiting,
        Page::KeepWaiting,
        Page::Deny,
        Page::OriginUnavailable,
    ] {
        let file = write(dir.path(), "builtin.html", page.default_html().as_bytes());
        let (code, err) = run_to_end(&["pages", "check", &file], &[]);
        assert_eq!(code, Some(0), "{page:?}: {err}");
        assert!(err.contains("0 error(s), 0 warning(s)"), "{page:?}: {err}");
    }
}

#[test]
fn preview_fills_the_template_with_the_rooms_figures() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "p.html",
        Page::StartWaiting.default_html().as_bytes(),
    );
    let out = dir.path().join("out.html");
    let out = out.to_str().unwrap();
    let (code, err) = run_to_end(
        &[
            "pages",
            "preview",
            &file,
            "--out",
            out,
            "--percentage",
            "5",
            "--wait-period",
            "30",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let html = std::fs::read_to_string(out).unwrap();
    assert!(!html.contains("{{"), "{html}");
    // 5 % a draw, a draw every 60 s: the median is 14 draws, over 13 minutes.
    assert!(html.contains(" min"), "{html}");
    assert!(
        !html.contains('—'),
        "a waiting page has every figure: {html}"
    );

    let deny = write(
        dir.path(),
        "d.html",
        b"<p>{{allow_percentage}} {{wait_p50}} {{wait_period_duration}}</p>",
    );
    let (code, err) = run_to_end(
        &[
            "pages",
            "preview",
            &deny,
            "--out",
            out,
            "--page",
            "deny",
            "--percentage",
            "0",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(out).unwrap(), "<p>0 — 30</p>");
}

#[test]
fn every_subcommand_has_an_example() {
    for args in [
        ["pages", "check", "--help"],
        ["pages", "encode", "--help"],
        ["pages", "preview", "--help"],
        ["config", "check", "--help"],
    ] {
        let (code, out, _) = run(&args);
        assert_eq!(code, Some(0));
        assert!(out.contains("Example:"), "{args:?}: {out}");
    }
}
