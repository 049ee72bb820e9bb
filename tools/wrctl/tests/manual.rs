//! `docs/wrctl.md`'s reference of every command and option is what wrctl's command
//! line says (`wrctl::manual`, rendered from clap's definition of it): this test fails
//! when the two differ. `WRCTL_WRITE_MANUAL=1` rewrites the page's reference instead
//! (docs/development.md, "The wrctl manual").

use std::path::Path;

use wrctl::manual;

#[test]
fn docs_wrctl_md_reference_is_generated_from_the_command_line() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/wrctl.md");
    let doc = std::fs::read_to_string(&path).expect("docs/wrctl.md");
    let wanted = manual::splice(&doc, &manual::markdown()).unwrap_or_else(|| {
        panic!(
            "docs/wrctl.md lacks the lines around its generated reference:\n{}\n{}",
            manual::BEGIN,
            manual::END
        )
    });
    if std::env::var_os("WRCTL_WRITE_MANUAL").is_some() {
        std::fs::write(&path, &wanted).expect("docs/wrctl.md written");
        return;
    }
    if doc != wanted {
        let (line, (have, want)) = doc
            .lines()
            .zip(wanted.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .unwrap_or((
                doc.lines().count().min(wanted.lines().count()),
                ("(end of file)", "(more lines)"),
            ));
        panic!(
            "docs/wrctl.md's reference is not what wrctl's command line says (first \
             difference at line {}):\n  page: {have}\n  clap: {want}\nRegenerate it: \
             WRCTL_WRITE_MANUAL=1 cargo test -p wrctl --test manual",
            line + 1
        );
    }
}
