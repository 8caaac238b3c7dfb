//! Inside `session/` (and its `delivery/`), files import each other without a circle
//! (docs/architecture.md, "Layers"; `layers_tests` holds the same rule between the
//! top-level modules), and the rest of the product reaches delivery only through its
//! entry, `session/delivery/mod.rs`.
//!
//! Read as text, like `layers_tests`: every file's non-test code (an item under
//! `#[cfg(test)]` is left out; unit-test files are skipped), its `use` statements and
//! the paths it names inline (`crate::session::…`, `super::…`, `self::…`, a child
//! module's `child::…`), doc comments included. A path is followed module by module to
//! the file it ends in; a name a module re-exports (`pub use`) is followed to the file
//! that defines it, and a re-export is not itself an import.

use crate::layers_tests::{rust_files, src};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// The files of one subtree: module path → (file under `src/`, non-test text).
struct Files {
    files: BTreeMap<Module, (String, String)>,
    /// (module, name it re-exports) → the path it names.
    reexports: BTreeMap<(Module, String), Module>,
}

fn is_unit_test_file(rel: &str) -> bool {
    crate::layers_tests::is_unit_test_file(Path::new(rel))
}

/// `session/ship/mod.rs` → `[session, ship]`; `session/ship/text.rs` →
/// `[session, ship, text]`.
fn module_of(rel: &str) -> Module {
    let mut parts: Module = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The text without test code: an item under `#[cfg(test)]` that is a `mod x;` is left
/// out; anything else under it ends the file's product code.
fn product_text(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let mut after = rest[at + "#[cfg(test)]".len()..].trim_start();
        while after.starts_with("#[") {
            let Some(end) = after.find(']') else {
                return out;
            };
            after = after[end + 1..].trim_start();
        }
        let item = after.strip_prefix("pub ").unwrap_or(after);
        let Some(decl) = item.strip_prefix("mod ") else {
            return out;
        };
        match decl.find(';') {
            Some(end) if !decl[..end].contains('{') => rest = &decl[end + 1..],
            _ => return out,
        }
    }
    out.push_str(rest);
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A `use` tree (`a::{b, c::{d as e, self}}`) as its paths, each with the name it binds.
fn expand(tree: &str) -> Vec<(Vec<String>, String)> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let (path, alias) = match tree.split_once(" as ") {
            Some((path, alias)) => (path.trim(), Some(alias.trim())),
            None => (tree, None),
        };
        let segs: Vec<String> = path
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let name = alias
            .map(str::to_string)
            .or_else(|| segs.iter().rev().find(|s| *s != "self").cloned())
            .unwrap_or_default();
        return vec![(segs, name)];
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().filter(|p| !p.trim().is_empty()) {
        for (segs, name) in expand(part) {
            let mut full = prefix.clone();
            full.extend(segs);
            let name = if name == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                name
            };
            out.push((full, name));
        }
    }
    out
}

/// The file's `use` statements (whether re-exported, the tree) and its text without them.
fn use_statements(text: &str) -> (Vec<(bool, String)>, String) {
    let (mut uses, mut rest, mut from) = (Vec::new(), String::new(), 0);
    let mut search = 0;
    while let Some(found) = text[search..].find("use ") {
        let at = search + found;
        search = at + 4;
        let before = text[..at].trim_end_matches([' ', '\t']);
        let (public, head) = if let Some(b) = before.strip_suffix("pub") {
            (true, b)
        } else if let Some(vis) = before
            .rfind("pub(")
            .filter(|&vis| before.ends_with(')') && !before[vis..].contains(['\n', ';']))
        {
            (true, &before[..vis])
        } else {
            (false, before)
        };
        // Only what its own line holds before it: a statement ends there, or nothing.
        let line = head[head.rfind('\n').map_or(0, |i| i + 1)..].trim();
        let statement_start = line.is_empty() || line.ends_with([';', '{', '}', ']']);
        let word_start = at == 0 || !text[..at].ends_with(is_ident);
        if !statement_start || !word_start {
            continue;
        }
        let Some(end) = text[at..].find(';') else {
            break;
        };
        uses.push((public, text[at + 4..at + end].to_string()));
        rest.push_str(&text[from..at]);
        from = at + end + 1;
        search = from;
    }
    rest.push_str(&text[from..]);
    (uses, rest)
}

impl Files {
    /// `files`: (path under `src/`, whole text), unit-test files included (skipped here).
    fn new(files: &[(String, String)]) -> Self {
        let files: BTreeMap<Module, (String, String)> = files
            .iter()
            .filter(|(rel, _)| !is_unit_test_file(rel))
            .map(|(rel, text)| (module_of(rel), (rel.clone(), product_text(text))))
            .collect();
        let mut this = Self {
            files,
            reexports: BTreeMap::new(),
        };
        let mut reexports = BTreeMap::new();
        for (module, (_, text)) in &this.files {
            for (public, tree) in use_statements(text).0 {
                for (segs, name) in expand(&tree) {
                    if let (true, Some(path)) = (public, this.absolute(module, &segs)) {
                        reexports.insert((module.clone(), name), path);
                    }
                }
            }
        }
        this.reexports = reexports;
        this
    }

    fn children(&self, module: &Module) -> BTreeSet<String> {
        self.files
            .keys()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
            .map(|m| m[module.len()].clone())
            .collect()
    }

    /// `segs` as named in `module`, from the crate root; `None` for another crate's.
    fn absolute(&self, module: &Module, segs: &[String]) -> Option<Module> {
        let first = segs.first()?;
        let mut base = module.clone();
        let rest = match first.as_str() {
            "crate" => {
                base.clear();
                &segs[1..]
            }
            "self" => &segs[1..],
            "super" => {
                let supers = segs.iter().take_while(|s| *s == "super").count();
                base.truncate(base.len().saturating_sub(supers));
                &segs[supers..]
            }
            child if self.children(module).contains(child) => segs,
            _ => return None,
        };
        base.extend(rest.iter().filter(|s| *s != "self").cloned());
        Some(base)
    }

    /// The file a path ends in: module by module, then through re-exports.
    fn resolve(&self, path: &[String]) -> Option<Module> {
        let mut path: Module = path.to_vec();
        for _ in 0..8 {
            let mut depth = 0;
            while depth < path.len() && self.files.contains_key(&path[..=depth]) {
                depth += 1;
            }
            let at = path[..depth].to_vec();
            let target = path
                .get(depth)
                .and_then(|name| self.reexports.get(&(at.clone(), name.clone())));
            match target {
                Some(target) => {
                    let mut next = target.clone();
                    next.extend(path[depth + 1..].iter().cloned());
                    path = next;
                }
                None => return self.files.contains_key(&at).then_some(at),
            }
        }
        None
    }

    /// Paths a file names outside its `use` statements, from a starting word on.
    fn inline_paths(&self, module: &Module, text: &str) -> Vec<Vec<String>> {
        let mut starts: Vec<String> = ["crate", "super", "self"].map(String::from).to_vec();
        starts.extend(self.children(module));
        let mut paths = Vec::new();
        for start in &starts {
            let needle = format!("{start}::");
            for (at, _) in text.match_indices(&needle) {
                let before = &text[..at];
                if before.ends_with(|c: char| is_ident(c) || c == ':') || before.ends_with("in ") {
                    continue;
                }
                let mut segs = Vec::new();
                let mut rest = &text[at..];
                loop {
                    let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
                    if end == 0 {
                        break;
                    }
                    segs.push(rest[..end].to_string());
                    match rest[end..].strip_prefix("::") {
                        Some(next) => rest = next,
                        None => break,
                    }
                }
                paths.push(segs);
            }
        }
        paths
    }

    /// File → the files of this subtree it imports.
    fn graph(&self) -> BTreeMap<Module, BTreeSet<Module>> {
        let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (module, (_, text)) in &self.files {
            let (uses, rest) = use_statements(text);
            let mut named: Vec<Vec<String>> = uses
                .iter()
                .filter(|(public, _)| !public)
                .flat_map(|(_, tree)| expand(tree))
                .map(|(segs, _)| segs)
                .collect();
            named.extend(self.inline_paths(module, &rest));
            let edges = graph.entry(module.clone()).or_default();
            for segs in named {
                let target = self
                    .absolute(module, &segs)
                    .and_then(|path| self.resolve(&path));
                if let Some(target) = target.filter(|t| t != module) {
                    edges.insert(target);
                }
            }
        }
        graph
    }

    fn file(&self, module: &Module) -> &str {
        &self.files[module].0
    }
}

/// The circles of `graph` (strongly connected parts of more than one file), each as
/// its files and the edges between them.
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<(Module, Module)>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        found: Vec<Vec<&'a Module>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let at = self.stack.iter().position(|m| *m == v).expect("on stack");
                let part = self.stack.split_off(at);
                if part.len() > 1 {
                    self.found.push(part);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found
        .iter()
        .map(|part| {
            let mut edges = Vec::new();
            for a in part {
                for b in graph[*a].iter().filter(|b| part.contains(b)) {
                    edges.push(((*a).clone(), b.clone()));
                }
            }
            edges
        })
        .collect()
}

fn describe(files: &Files, circles: &[Vec<(Module, Module)>]) -> String {
    circles
        .iter()
        .map(|edges| {
            let lines: Vec<String> = edges
                .iter()
                .map(|(a, b)| format!("  {} imports {}", files.file(a), files.file(b)))
                .collect();
            format!("circle:\n{}", lines.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn session_files() -> Files {
    let mut paths = Vec::new();
    rust_files(&src().join("session"), &mut paths);
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(src()).expect("under src");
            let rel = rel.to_str().expect("utf-8 path").replace('\\', "/");
            (rel, std::fs::read_to_string(p).expect("read source"))
        })
        .collect();
    Files::new(&files)
}

fn module(path: &str) -> Module {
    path.split("::").map(str::to_string).collect()
}

#[test]
fn no_circle_between_the_files_of_session_and_delivery() {
    let files = session_files();
    let graph = files.graph();
    // The reader reads: a direct import, one through two re-exports, one from a
    // child module's `super::`.
    for (from, to) in [
        ("session::delivery::paste", "session::sessions"),
        ("session::reply", "session::delivery::paste"),
        ("session::ship::request", "session::sessions"),
    ] {
        assert!(
            graph[&module(from)].contains(&module(to)),
            "the reader lost {from} → {to}: {:?}",
            graph[&module(from)]
        );
    }
    let found = circles(&graph);
    assert!(
        found.is_empty(),
        "files of session/ import each other in a circle:\n{}",
        describe(&files, &found)
    );
}

#[test]
fn outside_delivery_only_its_entry_is_named() {
    let delivery = module("session::delivery");
    let files = session_files();
    let inner: BTreeSet<String> = files.children(&delivery);
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let mut reaching = Vec::new();
    for path in paths {
        let rel = path.strip_prefix(src()).expect("under src");
        let rel = rel.to_str().expect("utf-8 path").replace('\\', "/");
        if is_unit_test_file(&rel) || rel.starts_with("session/delivery/") {
            continue;
        }
        let text = product_text(&std::fs::read_to_string(&path).expect("read source"));
        for (at, _) in text.match_indices("delivery::") {
            let rest = &text[at + "delivery::".len()..];
            let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
            if inner.contains(&rest[..end]) {
                reaching.push(format!("src/{rel}: delivery::{}", &rest[..end]));
            }
        }
    }
    assert!(
        reaching.is_empty(),
        "product code outside session/delivery/ reaches past its entry (use what \
         delivery/mod.rs re-exports):\n{}",
        reaching.join("\n")
    );
}

#[test]
fn a_circle_is_found_and_printed() {
    let file = |rel: &str, text: &str| (rel.to_string(), text.to_string());
    let files = Files::new(&[
        file(
            "session/mod.rs",
            "mod a;\nmod b;\nmod c;\n#[cfg(test)]\nmod t;\npub use b::Bee;\n",
        ),
        file("session/a.rs", "use super::Bee;\nfn f() {}\n"),
        file(
            "session/b.rs",
            "pub struct Bee;\nfn g() { crate::session::c::h() }\n",
        ),
        file(
            "session/c.rs",
            "use super::{a::{self}, b as _};\n#[cfg(test)]\nmod tests { use super::b; }",
        ),
        file("session/b_tests.rs", "use crate::session::a;"),
    ]);
    let graph = files.graph();
    let found = circles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    let text = describe(&files, &found);
    for edge in [
        "session/a.rs imports session/b.rs",
        "session/b.rs imports session/c.rs",
        "session/c.rs imports session/a.rs",
    ] {
        assert!(text.contains(edge), "{text}");
    }
    // Without c's import of a, no circle.
    let files = Files::new(&[
        file("session/mod.rs", "mod a;\nmod b;\npub use b::Bee;\n"),
        file("session/a.rs", "use super::Bee;\n"),
        file("session/b.rs", "pub struct Bee;\n"),
    ]);
    assert!(circles(&files.graph()).is_empty());
}
