//! `docs/operate/wrctl.md`'s reference of every command and option is what wrctl's command
//! line says (`wrctl::manual`, rendered from clap's definition of it): this test fails
//! when the two differ. `WRCTL_WRITE_MANUAL=1` rewrites the page's reference instead
//! (docs/development.md, "The wrctl manual").

use std::path::Path;

use test_support::docs;
use wrctl::manual;

#[test]
fn docs_wrctl_md_reference_is_generated_from_the_command_line() {
    docs::check_generated(&docs::Generated {
        path: &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operate/wrctl.md"),
        begin: manual::BEGIN,
        end: manual::END,
        text: manual::markdown(),
        write_var: "WRCTL_WRITE_MANUAL",
        regenerate: "WRCTL_WRITE_MANUAL=1 cargo test -p wrctl --test wrctl manual::",
    });
}
