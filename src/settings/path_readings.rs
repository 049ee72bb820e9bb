//! The readings an origin may give a request path, so that the room never grants
//! on one reading what the origin serves on another.
//!
//! The room decides on the path the edge forwards: the SDK's parse of the URL
//! (dot segments resolved, `%2e` read as `.`, `\` read as `/`), which the edge
//! writes back into the request, so the origin receives exactly the bytes the
//! room decided on and logged. Origins may still read those bytes differently:
//! merge repeated slashes (nginx's default, Apache), percent-decode before they
//! resolve dot segments (nginx, Apache; `%2F` becomes a separator), read `\` as
//! `/` (servers on Windows), drop `;` parameters from segments (Java servlet
//! containers), or decode twice (a common application bug). [`readings`] gives
//! the path under each combination of those habits. The room places a request in
//! a room only when every reading falls in that same room (else it refuses the
//! request, `decision=refused`), and bypasses by path only when every reading is
//! inside the bypass prefix. Case is not folded: prefixes match as the VCL's
//! regular expression does, case-sensitively.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

/// The path itself, then its other readings, without repeats. A path with no
/// `%`, `;`, `\`, repeated slash or dot segment has no other reading.
pub fn readings(path: &str) -> Vec<Cow<'_, str>> {
    let mut all = vec![Cow::Borrowed(path)];
    if !may_read_differently(path) {
        return all;
    }
    for decodes in 0..=2 {
        for habits in 0..8 {
            let reading = read(path, decodes, Habits(habits));
            if !all.iter().any(|seen| *seen == reading) {
                all.push(Cow::Owned(reading));
            }
        }
    }
    all
}

/// Whether some origin could read `path` as another path.
fn may_read_differently(path: &str) -> bool {
    path.bytes().any(|b| matches!(b, b'%' | b';' | b'\\'))
        || path.contains("//")
        || path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
}

/// Three habits an origin has or not, one bit each.
#[derive(Clone, Copy)]
struct Habits(u8);

impl Habits {
    fn backslash_is_slash(self) -> bool {
        self.0 & 1 != 0
    }
    fn merge(self) -> bool {
        self.0 & 2 != 0
    }
    fn strip_parameters(self) -> bool {
        self.0 & 4 != 0
    }
}

/// `path` decoded `decodes` times, then as an origin with `habits` reads it: `\`
/// as `/`, without `;` parameters, with repeated slashes merged; dot segments
/// resolved.
fn read(path: &str, decodes: usize, habits: Habits) -> String {
    let mut text = path.to_string();
    for _ in 0..decodes {
        text = percent_decode_str(&text).decode_utf8_lossy().into_owned();
    }
    if habits.backslash_is_slash() {
        text = text.replace('\\', "/");
    }
    let (merge, strip_parameters) = (habits.merge(), habits.strip_parameters());
    let mut segments: Vec<&str> = Vec::new();
    let mut pieces = text.split('/').peekable();
    // The text before the first slash (none in a path from the SDK) stays as it is.
    let head = pieces.next().unwrap_or_default();
    while let Some(segment) = pieces.next() {
        let segment = match (strip_parameters, segment.find(';')) {
            (true, Some(at)) => &segment[..at],
            _ => segment,
        };
        let last = pieces.peek().is_none();
        match segment {
            "." => {
                if last {
                    segments.push("");
                }
            }
            ".." => {
                segments.pop();
                if last {
                    segments.push("");
                }
            }
            "" if merge && !last => {}
            _ => segments.push(segment),
        }
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(head);
    for segment in segments {
        out.push('/');
        out.push_str(segment);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(path: &str) -> Vec<String> {
        readings(path).into_iter().map(Cow::into_owned).collect()
    }

    #[test]
    fn a_plain_path_has_one_reading() {
        for path in ["/", "/events", "/events/static/app.css", "/a-b_c~d/e.f"] {
            assert_eq!(all(path), [path], "{path}");
        }
    }

    #[test]
    fn repeated_slashes_read_merged_and_not() {
        let r = all("/events/static//../checkout");
        assert_eq!(r[0], "/events/static//../checkout");
        // RFC 3986 removes the empty segment; an origin that merges first climbs out.
        assert!(r.contains(&"/events/static/checkout".to_string()), "{r:?}");
        assert!(r.contains(&"/events/checkout".to_string()), "{r:?}");
        assert!(all("//checkout").contains(&"/checkout".to_string()));
    }

    #[test]
    fn encoded_separators_and_dots_are_decoded_once_and_twice() {
        let once = all("/static/..%2fcheckout");
        assert!(once.contains(&"/checkout".to_string()), "{once:?}");
        let backslash = all("/static/..%5Ccheckout");
        assert!(
            backslash.contains(&"/checkout".to_string()),
            "{backslash:?}"
        );
        let twice = all("/static/%252e%252e/checkout");
        assert!(twice.contains(&"/checkout".to_string()), "{twice:?}");
        let letter = all("/%63heckout");
        assert!(letter.contains(&"/checkout".to_string()), "{letter:?}");
    }

    #[test]
    fn parameters_are_read_kept_and_dropped() {
        let r = all("/static;x=1/../checkout");
        assert!(r.contains(&"/checkout".to_string()), "{r:?}");
        let r = all("/checkout;jsessionid=1/a");
        assert!(r.contains(&"/checkout/a".to_string()), "{r:?}");
        assert!(r.contains(&"/checkout;jsessionid=1/a".to_string()), "{r:?}");
    }

    #[test]
    fn dot_segments_never_climb_above_the_root() {
        assert!(all("/../../etc").contains(&"/etc".to_string()));
        assert!(all("/a/./b/.").contains(&"/a/b/".to_string()));
        assert!(all("/a/..").contains(&"/".to_string()));
    }

    #[test]
    fn any_text_reads_without_panic() {
        for path in [
            "", "%", "%%", "%zz", "%ff%fe", "/%c3", ";", "\\", "/..;/", "a/../..",
        ] {
            assert_eq!(readings(path)[0], path);
        }
    }
}
