//! How common origin servers read the request path they receive: reference
//! models, written apart from the room's own `waiting_room::settings::path_readings`, for
//! the table of hostile paths (`tests/blackbox/hostile_paths.rs`) and the `path` fuzz
//! target. Each model follows the server's documented default:
//!
//! - nginx: decodes every `%XX` (`%2F` included) while it parses the URI,
//!   resolves dot segments, merges repeated slashes (`merge_slashes on`, the
//!   default) or keeps them (`off`); `\` is an ordinary character on Unix.
//! - Apache httpd 2.4: answers 404 to an encoded slash (`AllowEncodedSlashes
//!   Off`), else decodes, merges slashes (`MergeSlashes On`) and resolves dot
//!   segments before it maps the path.
//! - Node.js with the WHATWG `URL` parser (as Express apps that normalise do):
//!   dot segments (`%2e` too) resolved, `\` read as `/`, nothing decoded or merged.
//! - A Rust router (axum's matchit): the path as it arrives, nothing decoded.
//! - A Java servlet container (Tomcat): refuses an encoded slash or backslash,
//!   drops `;` parameters from each segment, decodes, merges, resolves dots.
//!
//! A model answers `None` where the server refuses the request: it serves nothing.

use percent_encoding::percent_decode_str;

/// An origin server, as configured by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// nginx, `merge_slashes on` (its default).
    Nginx,
    /// nginx, `merge_slashes off`.
    NginxKeepSlashes,
    /// Apache httpd 2.4.
    Apache,
    /// Node.js routing on the WHATWG `URL` parser.
    NodeUrl,
    /// A Rust router matching the raw path.
    RustRouter,
    /// A Java servlet container.
    Tomcat,
}

/// Every model.
pub const ORIGINS: [Origin; 6] = [
    Origin::Nginx,
    Origin::NginxKeepSlashes,
    Origin::Apache,
    Origin::NodeUrl,
    Origin::RustRouter,
    Origin::Tomcat,
];

impl Origin {
    /// The path this origin routes `path` (the bytes it received) to; `None` when
    /// it refuses the request.
    pub fn read(self, path: &str) -> Option<String> {
        let lower = path.to_ascii_lowercase();
        match self {
            Origin::Nginx => Some(without_dots(&merged(&decoded(path)))),
            Origin::NginxKeepSlashes => Some(without_dots(&decoded(path))),
            Origin::Apache if lower.contains("%2f") => None,
            Origin::Apache => Some(without_dots(&merged(&decoded(path)))),
            Origin::NodeUrl => Some(as_url(path)),
            Origin::RustRouter => Some(path.to_string()),
            Origin::Tomcat if lower.contains("%2f") || lower.contains("%5c") => None,
            Origin::Tomcat => {
                let decoded = decoded(&without_parameters(path));
                // Tomcat answers 400 to a backslash unless told otherwise.
                (!decoded.contains('\\')).then(|| without_dots(&merged(&decoded)))
            }
        }
    }
}

/// The path the SDK gives the room for a request line's `target`: the WHATWG URL
/// parse, as `fastly::Request::get_path` does.
pub fn as_url(target: &str) -> String {
    url::Url::parse(&format!("http://origin.test{target}"))
        .map(|url| url.path().to_string())
        .unwrap_or_else(|_| target.to_string())
}

fn decoded(path: &str) -> String {
    percent_decode_str(path).decode_utf8_lossy().into_owned()
}

fn merged(path: &str) -> String {
    let mut chars: Vec<char> = path.chars().collect();
    chars.dedup_by(|c, before| *c == '/' && *before == '/');
    chars.into_iter().collect()
}

fn without_parameters(path: &str) -> String {
    path.split('/')
        .map(|segment| segment.split(';').next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("/")
}

/// RFC 3986's remove_dot_segments (section 5.2.4), on an input buffer.
fn without_dots(path: &str) -> String {
    let mut input = path;
    let mut output = String::with_capacity(path.len());
    while !input.is_empty() {
        if let Some(rest) = input.strip_prefix("../") {
            input = rest;
        } else if let Some(rest) = input.strip_prefix("./") {
            input = rest;
        } else if input.starts_with("/./") {
            input = &input[2..];
        } else if input == "/." {
            input = "/";
        } else if input.starts_with("/../") || input == "/.." {
            input = if input == "/.." { "/" } else { &input[3..] };
            let cut = output.rfind('/').unwrap_or(0);
            output.truncate(cut);
        } else if input == "." || input == ".." {
            input = "";
        } else {
            let start = usize::from(input.starts_with('/'));
            let end = input[start..]
                .find('/')
                .map_or(input.len(), |at| at + start);
            output.push_str(&input[..end]);
            input = &input[end..];
        }
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_read_as_their_servers_do() {
        let p = "/events/static//../checkout";
        assert_eq!(Origin::Nginx.read(p).unwrap(), "/events/checkout");
        assert_eq!(
            Origin::NginxKeepSlashes.read(p).unwrap(),
            "/events/static/checkout"
        );
        assert_eq!(Origin::RustRouter.read(p).unwrap(), p);
        assert_eq!(Origin::NodeUrl.read(p).unwrap(), "/events/static/checkout");
        let encoded = "/static/..%2Fcheckout";
        assert_eq!(Origin::Nginx.read(encoded).unwrap(), "/checkout");
        assert_eq!(Origin::Apache.read(encoded), None);
        assert_eq!(Origin::Tomcat.read(encoded), None);
        assert_eq!(Origin::NodeUrl.read(encoded).unwrap(), encoded);
        assert_eq!(
            Origin::Tomcat.read("/static;x/../checkout;j=1").unwrap(),
            "/checkout"
        );
        assert_eq!(as_url("/a\\b/./c/%2e%2e/d"), "/a/b/d");
    }

    #[test]
    fn dot_removal_follows_the_rfc_examples() {
        assert_eq!(without_dots("/a/b/c/./../../g"), "/a/g");
        assert_eq!(without_dots("mid/content=5/../6"), "mid/6");
        assert_eq!(without_dots("/../.."), "/");
        assert_eq!(without_dots("/a/."), "/a/");
    }
}
