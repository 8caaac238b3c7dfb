//! The module graph is a stack (docs/architecture.md, "Layers"): every top-level module
//! of `src/` sits on one layer of the table there, and its non-test code names only
//! modules on lower layers. Also: no file in `src/` over 600 lines. Read as text, the
//! way `module-cycles` reads it: `crate::NAME` anywhere before a file's first
//! `#[cfg(test)]` (doc comments too), in every file but the unit-test ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;

pub(crate) fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

pub(crate) fn is_unit_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with("_tests.rs") || name == "tests.rs" || name == "test_support.rs"
}

/// The top-level module a file belongs to (`None` for lib.rs and main.rs).
fn top_module(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src()).expect("under src");
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// `module → layer` from the "Layers" table of docs/architecture.md: rows
/// `| <n> | `a` `b` … | what |`.
fn documented_layers() -> BTreeMap<String, u32> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("read docs/architecture.md");
    let section = doc
        .split("\n## Layers")
        .nth(1)
        .expect("docs/architecture.md has a `## Layers` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut layers = BTreeMap::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(layer), Some(modules)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(layer) = layer.parse::<u32>() else {
            continue;
        };
        for module in modules.split('`').skip(1).step_by(2) {
            let module = module.trim_end_matches('/').trim_end_matches(".rs");
            let previous = layers.insert(module.to_string(), layer);
            assert!(previous.is_none(), "`{module}` is listed twice in Layers");
        }
    }
    assert!(!layers.is_empty(), "the Layers table has no rows");
    layers
}

fn named_modules(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("crate::").filter_map(|(at, _)| {
        let rest = &text[at + "crate::".len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        let starts_well = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
        // `the_loop::crate::x` does not occur; `foo_crate::x` would be a different path.
        let whole = at == 0 || !text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        (starts_well && whole).then_some(name)
    })
}

#[test]
fn every_module_imports_only_lower_layers_as_documented() {
    let layers = documented_layers();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let mut modules: Vec<String> = files
        .iter()
        .filter(|f| !is_unit_test_file(f))
        .filter_map(|f| top_module(f))
        .collect();
    modules.sort();
    modules.dedup();
    let undocumented: Vec<&String> = modules
        .iter()
        .filter(|m| !layers.contains_key(*m))
        .collect();
    assert!(
        undocumented.is_empty(),
        "top-level modules missing from the Layers table of docs/architecture.md: {undocumented:?}"
    );
    let stale: Vec<&String> = layers.keys().filter(|m| !modules.contains(m)).collect();
    assert!(
        stale.is_empty(),
        "the Layers table names modules that do not exist: {stale:?}"
    );

    let mut upward = Vec::new();
    for file in files.iter().filter(|f| !is_unit_test_file(f)) {
        let Some(own) = top_module(file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read source");
        let text = text.split("#[cfg(test)]").next().unwrap_or(&text);
        for name in named_modules(text) {
            if name == own {
                continue;
            }
            let Some(&theirs) = layers.get(name) else {
                continue;
            };
            if theirs >= layers[&own] {
                let rel = file.strip_prefix(src()).expect("under src").display();
                upward.push(format!(
                    "src/{rel}: {own} (layer {}) names crate::{name} (layer {theirs})",
                    layers[&own]
                ));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports that do not go down the stack:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_source_file_is_over_600_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f)
                .expect("read source")
                .lines()
                .count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:?}");
}

#[test]
fn the_reader_finds_module_names_as_module_cycles_does() {
    let text = "use crate::config::Config; let x = crate::work_item::WorkItemRef::parse(s);\n/// see [`crate::tmux`]\nfoo_crate::bar";
    let names: Vec<&str> = named_modules(text).collect();
    assert_eq!(names, ["config", "work_item", "tmux"]);
}
