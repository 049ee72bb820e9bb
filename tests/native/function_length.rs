//! No function of the room (`src/`) or the controller (`control/src/`) is over
//! [`MAX_LINES`] lines outside tests: free functions, methods in impls, trait default
//! bodies and functions nested in others, each counted from the line of its `fn` (its
//! attributes and doc comment aside) to the line of its closing brace. Tests are left
//! out: `#[cfg(test)]` and `#[test]` items, files named `tests.rs` and files under a
//! `tests/` folder.

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The longest a function may be, in lines.
const MAX_LINES: usize = 80;

/// The folders held to [`MAX_LINES`].
const FOLDERS: [&str; 2] = ["src", "control/src"];

/// A function and its length.
#[derive(Debug, PartialEq)]
struct Function {
    /// `file::scope::fn`.
    name: String,
    /// The line of its `fn`.
    line: usize,
    lines: usize,
}

impl std::fmt::Display for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let (file, scoped) = self.name.split_once(".rs::").unwrap_or((&self.name, ""));
        write!(f, "{file}.rs:{}: {scoped}, {} lines", self.line, self.lines)
    }
}

/// Every function of a file's code outside tests, named from `file`.
#[derive(Default)]
struct Functions {
    file: String,
    scope: Vec<String>,
    found: Vec<Function>,
}

/// Whether an item is a test's: `#[test]` or `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg")
                && a.meta
                    .require_list()
                    .is_ok_and(|list| list.tokens.to_string() == "test"))
    })
}

impl Functions {
    fn note(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let line = sig.fn_token.span.start().line;
        let lines = block.brace_token.span.close().end().line - line + 1;
        let scoped = [&self.scope[..], &[sig.ident.to_string()]]
            .concat()
            .join("::");
        self.found.push(Function {
            name: format!("{}::{scoped}", self.file),
            line,
            lines,
        });
    }

    fn within(&mut self, scope: String, visit: impl FnOnce(&mut Self)) {
        self.scope.push(scope);
        visit(self);
        self.scope.pop();
    }
}

/// The last segment of a type's path (`Settings` for `settings::Settings<'a>`).
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => Some(type_name(&r.elem)),
        _ => None,
    }
    .unwrap_or_else(|| "_".into())
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_test(&item.attrs) {
            return;
        }
        self.note(&item.sig, &item.block);
        self.within(item.sig.ident.to_string(), |me| {
            syn::visit::visit_item_fn(me, item);
        });
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test(&item.attrs) {
            return;
        }
        self.note(&item.sig, &item.block);
        self.within(item.sig.ident.to_string(), |me| {
            syn::visit::visit_impl_item_fn(me, item);
        });
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if is_test(&item.attrs) {
            return;
        }
        if let Some(block) = &item.default {
            self.note(&item.sig, block);
        }
        self.within(item.sig.ident.to_string(), |me| {
            syn::visit::visit_trait_item_fn(me, item);
        });
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test(&item.attrs) {
            return;
        }
        self.within(type_name(&item.self_ty), |me| {
            syn::visit::visit_item_impl(me, item);
        });
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        if is_test(&item.attrs) {
            return;
        }
        self.within(item.ident.to_string(), |me| {
            syn::visit::visit_item_trait(me, item);
        });
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test(&item.attrs) {
            return;
        }
        self.within(item.ident.to_string(), |me| {
            syn::visit::visit_item_mod(me, item);
        });
    }
}

/// Every function of `source`, named from `file`.
fn functions(file: &str, source: &str) -> Vec<Function> {
    let parsed = syn::parse_file(source).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut functions = Functions {
        file: file.into(),
        ..Functions::default()
    };
    functions.visit_file(&parsed);
    functions.found
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `.rs` files under `dir` that are not tests (`tests.rs`, `tests/`).
fn code_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("tests") {
                code_files(&path, files);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
            files.push(path);
        }
    }
}

/// Every function of [`FOLDERS`] outside tests.
fn all_functions() -> Vec<Function> {
    let mut files = Vec::new();
    for folder in FOLDERS {
        code_files(&root().join(folder), &mut files);
    }
    files.sort();
    let mut all = Vec::new();
    for path in files {
        let file = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let source = std::fs::read_to_string(&path).unwrap();
        all.extend(functions(&file, &source));
    }
    all
}

#[test]
fn no_function_of_the_room_or_the_controller_is_over_80_lines() {
    let all = all_functions();
    assert!(
        all.len() > 500,
        "only {} functions found: the walk is broken",
        all.len()
    );
    let over: Vec<String> = all
        .iter()
        .filter(|f| f.lines > MAX_LINES)
        .map(|f| format!("  {f}"))
        .collect();
    assert!(
        over.is_empty(),
        "over {MAX_LINES} lines (split them; tests/native/function_length.rs):\n{}",
        over.join("\n")
    );
}

#[test]
fn a_function_is_counted_from_its_fn_to_its_closing_brace_outside_tests() {
    let source = r#"
/// Doc comments and attributes are not counted.
#[inline]
pub const fn free() -> u8 {
    fn nested() {}
    1
}

struct Room;

impl std::fmt::Display for &Room {
    fn fmt(
        &self,
        f: &mut std::fmt::Formatter,
    ) -> std::fmt::Result {
        Ok(())
    }
}

trait Rule {
    fn required(&self);
    async fn given(&self) {
    }
}

mod inline {
    fn inner() {}
}

#[cfg(test)]
mod tests {
    fn helper() {}
}

#[test]
fn a_test() {}
"#;
    let found = |name: &str, line: usize, lines: usize| Function {
        name: format!("src/x.rs::{name}"),
        line,
        lines,
    };
    assert_eq!(
        functions("src/x.rs", source),
        [
            found("free", 4, 4),
            found("free::nested", 5, 1),
            found("Room::fmt", 12, 6),
            found("Rule::given", 22, 2),
            found("inline::inner", 27, 1),
        ]
    );
    assert_eq!(
        found("Room::fmt", 12, 6).to_string(),
        "src/x.rs:12: Room::fmt, 6 lines"
    );
}
