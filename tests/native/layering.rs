//! The house's layering, held: the crates depend downward only (the room's core
//! on none of the others, the controller on the core alone, the tools on both,
//! test support only under tests); the core never names Fastly or the edge's glue;
//! no file is compiled into a second crate by `#[path]`, so a tool reaches the core
//! only through its public modules (the compiler holds what is private); no two
//! files of one crate import each other, directly or round a loop; and no two
//! folders of the room's crate (`src/*/`, the root files one more) do either, with
//! `settings/` under `admission/`, `credentials/` and `pages/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Each crate's source folder, and the folders left out of it.
const CRATES: [(&str, &[&str]); 9] = [
    ("src", &["src/edge"]),
    ("src/edge", &[]),
    ("control/src", &[]),
    ("tools/wrctl/src", &[]),
    ("tools/simulate/src", &[]),
    ("tools/svg-plot/src", &[]),
    ("test-support/src", &[]),
    ("demo-origin/src", &[]),
    ("toll-solver/src", &[]),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file's module path in its crate: `a/b.rs` and `a/b/mod.rs` are `a::b`; the
/// crate's roots (`lib.rs`, `main.rs`) are the empty path.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into())
        .collect();
    let file = parts.pop().unwrap().trim_end_matches(".rs").to_string();
    match (file.as_str(), parts.is_empty()) {
        ("mod", _) | ("lib" | "main", true) => {}
        _ => parts.push(file),
    }
    parts
}

fn rust_files(dir: &Path, left_out: &[PathBuf], files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if left_out.contains(&path) {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, left_out, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Every path a file names, as written, with the inline modules it sits in.
#[derive(Default)]
struct Names {
    inline: Vec<String>,
    paths: Vec<(Vec<String>, Vec<String>)>,
    path_attributes: usize,
}

impl Names {
    fn note(&mut self, segments: Vec<String>) {
        self.paths.push((self.inline.clone(), segments));
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.note([&prefix[..], &[n.ident.to_string()]].concat()),
            syn::UseTree::Rename(r) => self.note([&prefix[..], &[r.ident.to_string()]].concat()),
            syn::UseTree::Glob(_) => self.note([&prefix[..], &["*".into()]].concat()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.note(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    /// Tests are left out: a test may import what its file's code may not.
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let attribute =
            |name: &'static str| item.attrs.iter().filter(move |a| a.path().is_ident(name));
        self.path_attributes += attribute("path").count();
        let mut cfg = attribute("cfg").filter_map(|a| a.meta.require_list().ok());
        if cfg.any(|list| list.tokens.to_string() == "test") {
            return;
        }
        self.inline.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.inline.pop();
    }
}

/// One crate's files: each file's module path, and the paths it names.
struct Crate {
    files: BTreeMap<Vec<String>, (PathBuf, Names)>,
}

fn read_crate(folder: &str, left_out: &[&str]) -> Crate {
    let dir = root().join(folder);
    let left_out: Vec<PathBuf> = left_out.iter().map(|f| root().join(f)).collect();
    let mut paths = Vec::new();
    rust_files(&dir, &left_out, &mut paths);
    let mut files = BTreeMap::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut names = Names::default();
        names.visit_file(&file);
        files.insert(module_of(path.strip_prefix(&dir).unwrap()), (path, names));
    }
    Crate { files }
}

impl Crate {
    /// The files of this crate a file imports: each path made absolute (`crate`,
    /// `self`, `super`, or a child module of where it is named), then cut to the
    /// longest module path that is a file.
    fn imports(&self, module: &[String], names: &Names) -> BTreeSet<Vec<String>> {
        let mut found = BTreeSet::new();
        // A path of one segment names nothing in another file (`pub(crate)` is one).
        for (inline, segments) in names.paths.iter().filter(|(_, s)| s.len() > 1) {
            let here = [module, &inline[..]].concat();
            let mut absolute = match segments.first().map(String::as_str) {
                Some("crate") => Vec::new(),
                Some("self" | "super") => here.clone(),
                Some(first)
                    if self
                        .files
                        .contains_key(&[&here[..], &[first.into()]].concat()) =>
                {
                    here.clone()
                }
                _ => continue,
            };
            for segment in segments {
                match segment.as_str() {
                    "crate" | "self" => {}
                    "super" => drop(absolute.pop()),
                    name => absolute.push(name.to_string()),
                }
            }
            while !absolute.is_empty() && !self.files.contains_key(&absolute) {
                absolute.pop();
            }
            if absolute != module && self.files.contains_key(&absolute) {
                found.insert(absolute);
            }
        }
        found
    }

    /// The files that import each other round a loop (none, unless some do).
    fn in_loops(&self) -> Vec<&Path> {
        let imports = self
            .files
            .iter()
            .map(|(module, (_, names))| (module.clone(), self.imports(module, names)))
            .collect();
        in_loops(imports)
            .iter()
            .map(|m| self.files[m].0.as_path())
            .collect()
    }

    /// The folder a file is in (`settings` for `settings/config.rs` and
    /// `settings/mod.rs`), or `""` for a file at the crate's root, one layer.
    fn folder_of(&self, module: &[String]) -> String {
        let (path, _) = &self.files[module];
        let in_folder = module.len() > 1 || path.ends_with("mod.rs");
        if in_folder {
            module[0].clone()
        } else {
            String::new()
        }
    }

    /// The folders each folder imports.
    fn folder_imports(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, (_, names)) in &self.files {
            let folder = self.folder_of(module);
            let imported = self
                .imports(module, names)
                .into_iter()
                .map(|import| self.folder_of(&import))
                .filter(|other| *other != folder)
                .collect::<Vec<_>>();
            folders.entry(folder).or_default().extend(imported);
        }
        folders
    }
}

/// What is left of `imports` once every node that imports none of the nodes
/// left, or that none of them imports, is taken away, again and again: nothing,
/// unless some import each other round a loop (then those).
fn in_loops<T: Ord + Clone>(mut left: BTreeMap<T, BTreeSet<T>>) -> Vec<T> {
    while let Some(free) = left
        .iter()
        .find(|(node, imports)| {
            imports.iter().all(|m| !left.contains_key(m))
                || left.values().all(|other| !other.contains(*node))
        })
        .map(|(node, _)| node.clone())
    {
        left.remove(&free);
    }
    left.into_keys().collect()
}

#[test]
fn no_files_of_a_crate_import_each_other_round_a_loop() {
    for (folder, left_out) in CRATES {
        let krate = read_crate(folder, left_out);
        assert!(!krate.files.is_empty(), "{folder}: no files read");
        let in_loops = krate.in_loops();
        assert!(
            in_loops.is_empty(),
            "{folder}: files that import each other round a loop: {in_loops:?}"
        );
    }
}

/// The folders of the room's crate `settings/` may not import: the settings are
/// the layer under them, written in value types of their own. (`bots/`, which
/// imports none of the others, sits under the settings.)
const ABOVE_SETTINGS: [&str; 3] = ["admission", "credentials", "pages"];

#[test]
fn no_folders_of_the_room_import_each_other_and_settings_imports_none_above_it() {
    let krate = read_crate(CRATES[0].0, CRATES[0].1);
    let folders = krate.folder_imports();
    assert!(folders.len() > 1, "no folders read: {folders:?}");
    let in_loops: BTreeSet<String> = in_loops(folders.clone()).into_iter().collect();
    let loops: BTreeMap<_, Vec<_>> = folders
        .iter()
        .filter(|(folder, _)| in_loops.contains(*folder))
        .map(|(folder, imports)| (folder, imports.intersection(&in_loops).collect()))
        .collect();
    assert!(
        loops.is_empty(),
        "folders of src/ (\"\": the root files) that import each other round a loop: {loops:?}"
    );
    let upward: Vec<_> = folders["settings"]
        .iter()
        .filter(|f| ABOVE_SETTINGS.contains(&f.as_str()))
        .collect();
    assert!(upward.is_empty(), "settings/ imports {upward:?}");
}

/// A file that names `paths`.
fn names(paths: &[&[&str]]) -> Names {
    Names {
        paths: paths
            .iter()
            .map(|p| (Vec::new(), p.iter().map(|s| s.to_string()).collect()))
            .collect(),
        ..Names::default()
    }
}

#[test]
fn a_loop_of_imports_is_found() {
    let krate = |b_names: Names| Crate {
        files: BTreeMap::from([
            (vec![], (PathBuf::from("lib.rs"), names(&[]))),
            (
                vec!["a".into()],
                (PathBuf::from("a.rs"), names(&[&["crate", "b", "X"]])),
            ),
            (vec!["b".into()], (PathBuf::from("b.rs"), b_names)),
        ]),
    };
    let looped = krate(names(&[&["super", "a", "Y"]]));
    assert_eq!(looped.in_loops(), [Path::new("a.rs"), Path::new("b.rs")]);
    assert_eq!(
        krate(names(&[&["self", "c"], &["std", "a"]])).in_loops(),
        Vec::<&Path>::new()
    );
}

#[test]
fn a_loop_of_folders_is_found_where_no_files_make_one() {
    let file = |module: &[&str], path: &str, paths: &[&[&str]]| {
        let module = module.iter().map(|s| s.to_string()).collect();
        (module, (PathBuf::from(path), names(paths)))
    };
    // a/x.rs imports b/y.rs, and b/z.rs imports a/x.rs.
    let krate = Crate {
        files: BTreeMap::from([
            file(&[], "lib.rs", &[&["a", "x"]]),
            file(&["a"], "a/mod.rs", &[]),
            file(&["a", "x"], "a/x.rs", &[&["crate", "b", "y", "Y"]]),
            file(&["b"], "b/mod.rs", &[]),
            file(&["b", "y"], "b/y.rs", &[]),
            file(&["b", "z"], "b/z.rs", &[&["super", "super", "a", "x", "X"]]),
        ]),
    };
    assert_eq!(krate.in_loops(), Vec::<&Path>::new());
    assert_eq!(in_loops(krate.folder_imports()), ["a", "b"]);
}

#[test]
fn the_core_never_names_fastly_or_the_glue_and_no_file_is_compiled_twice() {
    for (folder, left_out) in CRATES {
        let krate = read_crate(folder, left_out);
        for (path, names) in krate.files.values() {
            assert_eq!(
                names.path_attributes,
                0,
                "{}: a #[path] module",
                path.display()
            );
            if folder == "src" {
                let glue = names.paths.iter().map(|(_, p)| p).find(|p| {
                    p.first().is_some_and(|s| s == "fastly")
                        || p.starts_with(&["crate".into(), "edge".into()])
                });
                assert_eq!(glue, None, "{}: the core names the glue", path.display());
            }
        }
    }
}

#[test]
fn the_crates_depend_downward_only() {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("edge-waiting-room", &[][..]),
        ("control", &["edge-waiting-room"][..]),
        ("wrctl", &["control", "edge-waiting-room", "svg-plot"][..]),
        (
            "simulate",
            &["control", "edge-waiting-room", "svg-plot"][..],
        ),
        ("svg-plot", &["edge-waiting-room"][..]),
        ("demo-origin", &[][..]),
        ("toll-solver", &[][..]),
        (
            "test-support",
            &["control", "demo-origin", "edge-waiting-room"][..],
        ),
    ]);
    let packages = metadata["packages"].as_array().unwrap();
    assert_eq!(
        packages.len(),
        allowed.len(),
        "a crate this test does not place"
    );
    for package in packages {
        let name = package["name"].as_str().unwrap();
        let ours: Vec<&str> = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["path"].is_string() && d["kind"].is_null())
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            ours, allowed[name],
            "{name}'s dependencies in the workspace"
        );
    }
}
