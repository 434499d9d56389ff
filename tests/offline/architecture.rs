//! docs/architecture.md's claims that a test can check, checked (issue 41): the layer table is
//! the layers guard's (`layers.rs`), the guards it names exist and every guard is named, the
//! crate doc lists what is `pub` (`public_surface.rs` checks the items), three test binaries,
//! a wake method is one file and one row, a load generator one file and one row, and no file
//! circles inside `measure/` (the hot path reads top to bottom) nor inside `report/` (the views
//! read top to bottom: what files share sits in leaf files below them).

use crate::scan::{Source, bare_lines, sources, src};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn doc() -> String {
    std::fs::read_to_string(src().parent().unwrap().join("docs/architecture.md")).unwrap()
}

// ---- File circles inside a directory ----

/// A module's path (`measure::wake::driver`) from its file's path relative to `src/`.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The production code of a file, literals blanked (a path in a string names nothing), with its
/// `use` statements apart: (the use trees, with whether each is a re-export; the rest).
fn split_uses(source: &Source) -> (Vec<(bool, String)>, String) {
    let text: String = source
        .lines
        .iter()
        .zip(bare_lines(&source.text))
        .filter(|(line, _)| !line.test)
        .map(|(_, bare)| bare + "\n")
        .collect();
    let (mut uses, mut rest) = (Vec::new(), String::new());
    let mut k = 0;
    let bytes = text.as_bytes();
    while k < text.len() {
        let line_start = k == 0 || bytes[k - 1] == b'\n';
        let tail = &text[k..];
        let trimmed = tail.trim_start_matches([' ', '\t']);
        let lead = tail.len() - trimmed.len();
        if line_start {
            let (public, after) = match trimmed.strip_prefix("pub") {
                Some(p) => {
                    let p = p.trim_start();
                    let p = if p.starts_with('(') {
                        p[p.find(')').map_or(0, |e| e + 1)..].trim_start()
                    } else {
                        p
                    };
                    (true, p)
                }
                None => (false, trimmed),
            };
            if let Some(tree) = after.strip_prefix("use ")
                && let Some(end) = tree.find(';')
            {
                uses.push((public, tree[..end].to_string()));
                k += lead + (trimmed.len() - after.len()) + 4 + end + 1;
                continue;
            }
        }
        let c = tail.chars().next().unwrap();
        rest.push(c);
        k += c.len_utf8();
    }
    (uses, rest)
}

/// The leaves of a use tree: each as its path segments and the name it is known by.
fn expand(tree: &str) -> Vec<(Vec<String>, String)> {
    fn top_level_split(t: &str) -> Vec<&str> {
        let (mut parts, mut depth, mut from) = (Vec::new(), 0, 0);
        for (i, c) in t.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&t[from..i]);
                    from = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&t[from..]);
        parts
    }
    fn walk(prefix: &[String], t: &str, out: &mut Vec<(Vec<String>, String)>) {
        for part in top_level_split(t) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if let Some(open) = part.find('{') {
                let head: Vec<String> = part[..open]
                    .split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                let inner = &part[open + 1..part.rfind('}').unwrap_or(part.len())];
                walk(&[prefix, &head].concat(), inner, out);
                continue;
            }
            let (path, alias) = match part.split_once(" as ") {
                Some((p, a)) => (p, Some(a.trim())),
                None => (part, None),
            };
            let mut segments: Vec<String> = prefix.to_vec();
            segments.extend(
                path.split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from),
            );
            if segments.last().is_some_and(|s| s == "self") {
                segments.pop();
            }
            let name = alias
                .map(String::from)
                .or_else(|| segments.last().cloned())
                .unwrap_or_default();
            out.push((segments, name));
        }
    }
    let mut out = Vec::new();
    walk(&[], tree, &mut out);
    out
}

/// The paths in code outside `use` statements that start with `crate`, `super`, `self` or one
/// of `children` (the modules the file declares), as segments.
fn inline_paths(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        if !ident(chars[i]) || (i > 0 && (ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        // A path: identifiers joined by `::`.
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            while j < chars.len() && ident(chars[j]) {
                j += 1;
            }
            segments.push(chars[start..j].iter().collect::<String>());
            if j + 2 < chars.len() && chars[j] == ':' && chars[j + 1] == ':' && ident(chars[j + 2])
            {
                j += 2;
            } else {
                break;
            }
        }
        let first = segments[0].as_str();
        if segments.len() > 1
            && (matches!(first, "crate" | "super" | "self") || children.contains(first))
        {
            out.push(segments);
        }
        i = j.max(i + 1);
    }
    out
}

/// The files of a `src/` tree as modules: each module's use trees (with whether re-exported),
/// its declared children and its other code.
/// A use leaf: whether re-exported, its path, the name it is known by.
type UseLeaf = (bool, Vec<String>, String);

struct Tree {
    files: BTreeMap<Vec<String>, String>,
    uses: BTreeMap<Vec<String>, Vec<UseLeaf>>,
    children: BTreeMap<Vec<String>, BTreeSet<String>>,
    rest: BTreeMap<Vec<String>, String>,
}

impl Tree {
    fn new(sources: &[Source]) -> Tree {
        let mut tree = Tree {
            files: BTreeMap::new(),
            uses: BTreeMap::new(),
            children: BTreeMap::new(),
            rest: BTreeMap::new(),
        };
        for source in sources.iter().filter(|s| !s.is_test_file()) {
            if source.rel == "lib.rs" || source.rel == "main.rs" {
                continue;
            }
            let module = module_of(&source.rel);
            let (uses, rest) = split_uses(source);
            let mut children = BTreeSet::new();
            for line in rest.lines() {
                let words: Vec<&str> = line
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .collect();
                if let Some(at) = words.iter().position(|w| *w == "mod")
                    && line.trim_end().ends_with(';')
                    && at + 1 < words.len()
                {
                    children.insert(words[at + 1].to_string());
                }
            }
            let uses = uses
                .into_iter()
                .flat_map(|(public, t)| {
                    expand(&t)
                        .into_iter()
                        .map(move |(path, name)| (public, path, name))
                })
                .collect();
            tree.files.insert(module.clone(), source.rel.clone());
            tree.uses.insert(module.clone(), uses);
            tree.children.insert(module.clone(), children);
            tree.rest.insert(module, rest);
        }
        tree
    }

    /// The module a path written in `module` names: the longest prefix that is a module of
    /// the tree, followed through that module's re-exports when the next segment is one.
    fn resolve(&self, module: &[String], path: &[String], depth: usize) -> Option<Vec<String>> {
        let (mut current, mut k): (Vec<String>, usize) = match path.first()?.as_str() {
            "crate" => (Vec::new(), 1),
            "self" => (module.to_vec(), 1),
            "super" => {
                let mut m = module.to_vec();
                let mut k = 0;
                while path.get(k).is_some_and(|s| s == "super") {
                    m.pop();
                    k += 1;
                }
                (m, k)
            }
            child if self.children.get(module)?.contains(child) => {
                ([module, &[child.to_string()]].concat(), 1)
            }
            _ => return None,
        };
        while let Some(segment) = path.get(k) {
            let next = [current.as_slice(), std::slice::from_ref(segment)].concat();
            if self.files.contains_key(&next) {
                current = next;
                k += 1;
                continue;
            }
            if depth < 8 {
                for (_, target, name) in self.uses.get(&current).into_iter().flatten() {
                    if name == segment
                        && target.last().is_some_and(|s| s != "*")
                        && let Some(found) = self.resolve(&current, target, depth + 1)
                    {
                        return Some(found);
                    }
                }
            }
            break;
        }
        self.files.contains_key(&current).then_some(current)
    }

    /// Every file's imports of other files whose module starts with `under`.
    fn graph(&self, under: &[String]) -> BTreeMap<String, BTreeSet<String>> {
        let mut graph = BTreeMap::new();
        for (module, rel) in &self.files {
            if !module.starts_with(under) {
                continue;
            }
            let mut paths: Vec<Vec<String>> = self.uses[module]
                .iter()
                .map(|(_, path, _)| path.clone())
                .collect();
            paths.extend(inline_paths(&self.rest[module], &self.children[module]));
            let targets: BTreeSet<String> = paths
                .iter()
                .filter_map(|p| self.resolve(module, p, 0))
                .filter(|t| t.starts_with(under) && t != module)
                .map(|t| self.files[&t].clone())
                .collect();
            graph.insert(rel.clone(), targets);
        }
        graph
    }
}

/// The circles of a graph: its strongly connected components of more than one file, each
/// sorted, in order.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Reachability by repeated search: the graphs are a few dozen files.
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(f) = stack.pop() {
            for t in graph.get(&f).into_iter().flatten() {
                if seen.insert(t.clone()) {
                    stack.push(t.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|f| (f, reach(f))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for f in graph.keys() {
        let component: Vec<String> = graph
            .keys()
            .filter(|g| *g == f || (reachable[f].contains(*g) && reachable[g].contains(f)))
            .cloned()
            .collect();
        if component.len() > 1 && !out.contains(&component) {
            out.push(component);
        }
    }
    out
}

fn circles_under(root: &Path, dir: &str) -> (Vec<Vec<String>>, BTreeMap<String, BTreeSet<String>>) {
    let tree = Tree::new(&sources(root));
    let under: Vec<String> = dir.split('/').map(String::from).collect();
    let graph = tree.graph(&under);
    (circles(&graph), graph)
}

fn listing(graph: &BTreeMap<String, BTreeSet<String>>, circle: &[String]) -> String {
    circle
        .iter()
        .map(|f| {
            let inside: Vec<&String> = graph[f].iter().filter(|t| circle.contains(t)).collect();
            format!("    {f} -> {inside:?}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hot path reads top to bottom: no file of `measure/` imports, through any chain, a file
/// that imports it (issue 41: `cycle.rs -> wake/mod.rs -> driver.rs -> cycle.rs`). A re-export
/// is followed to the file that defines the item: naming `super::Waker` is naming `waker.rs`.
#[test]
fn no_file_circles_in_measure() {
    let (found, graph) = circles_under(&src(), "measure");
    let text: Vec<String> = found.iter().map(|c| listing(&graph, c)).collect();
    assert!(
        found.is_empty(),
        "file circles in src/measure/ (move the shared item down, into a file both can import):\n{}",
        text.join("\n\n")
    );
    // The files the hot path runs through, in the order they import each other.
    for (from, to) in [
        ("measure/wakeups.rs", "measure/thread.rs"),
        ("measure/noise.rs", "measure/thread.rs"),
        ("measure/wakeups.rs", "measure/wake/driver.rs"),
        ("measure/wake/driver.rs", "measure/cycle.rs"),
        ("measure/cycle.rs", "measure/waker.rs"),
        ("measure/cycle.rs", "measure/sample.rs"),
    ] {
        assert!(
            graph[from].contains(to),
            "the scan no longer sees {from} import {to}: {:?}",
            graph[from]
        );
    }
}

/// `report/` reads top to bottom too: no file imports, through any chain, a file that imports it
/// (issue 41 broke its four circles: the exporters and export/mod.rs, the HTML pages and
/// html/mod.rs, the table renderers and table/mod.rs, the terminal summary and the noise and
/// tails views). What files share sits in a leaf below them (`export/exporter.rs`,
/// `export/output.rs`, `html/blocks.rs`, `table/model.rs`, `heading.rs`).
#[test]
fn no_file_circles_in_report() {
    let (found, graph) = circles_under(&src(), "report");
    let text: Vec<String> = found.iter().map(|c| listing(&graph, c)).collect();
    assert!(
        found.is_empty(),
        "file circles in src/report/ (move the shared item down, into a file both can import):\n{}",
        text.join("\n\n")
    );
    // The scan sees the leaves: a renderer imports the table model, an exporter its contract.
    for (from, to) in [
        ("report/table/terminal.rs", "report/table/model.rs"),
        ("report/export/json.rs", "report/export/exporter.rs"),
        ("report/html/run.rs", "report/html/blocks.rs"),
        ("report/terminal.rs", "report/heading.rs"),
    ] {
        assert!(
            graph[from].contains(to),
            "the scan no longer sees {from} import {to}: {:?}",
            graph[from]
        );
    }
}

#[test]
fn the_circle_scan_follows_re_exports_and_skips_tests() {
    use crate::scan::plant;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    plant(&root, "lib.rs", "mod m;\n");
    // a.rs -> c.rs only through mod.rs's re-export; c.rs -> a.rs names a.rs: a circle.
    plant(
        &root,
        "m/mod.rs",
        "mod a;\nmod b;\nmod c;\npub use c::Thing;\n",
    );
    plant(
        &root,
        "m/a.rs",
        "use super::Thing;\nfn f() -> Thing { Thing }\n",
    );
    plant(
        &root,
        "m/c.rs",
        "pub struct Thing;\nfn g() { super::a::f(); }\n#[cfg(test)]\nmod tests { use super::super::b::*; }\n",
    );
    // b.rs names c.rs in a comment and a string only, and a.rs from its tests only.
    plant(
        &root,
        "m/b.rs",
        "// use super::c::Thing;\nconst S: &str = \"super::c::Thing\";\n#[cfg(test)]\nmod t { use crate::m::a::f; }\n",
    );
    let (found, graph) = circles_under(&root, "m");
    assert_eq!(found, [vec!["m/a.rs".to_string(), "m/c.rs".to_string()]]);
    assert!(graph["m/b.rs"].is_empty(), "{graph:?}");
    assert_eq!(
        graph["m/mod.rs"],
        BTreeSet::from(["m/c.rs".to_string()]),
        "a re-export is an import of the file it names"
    );
}

// ---- The doc's tables and names ----

/// The layer table of docs/architecture.md, row by row: (layer, modules).
fn doc_layers() -> Vec<(String, Vec<String>)> {
    let doc = doc();
    let section = doc.split("## Layers").nth(1).unwrap();
    section
        .lines()
        .skip_while(|l| !l.starts_with("| layer |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let modules = cells[2]
                .split(',')
                .map(|m| m.trim().trim_matches('`').to_string())
                .collect();
            (cells[1].to_string(), modules)
        })
        .collect()
}

#[test]
fn the_layer_table_is_the_guards() {
    let guard: Vec<(String, Vec<String>)> = crate::layers::LAYERS
        .iter()
        .map(|(name, mods)| {
            (
                name.to_string(),
                mods.iter().map(|m| m.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        doc_layers(),
        guard,
        "docs/architecture.md's layer table and tests/offline/layers.rs's LAYERS differ"
    );
}

/// Every `tests/offline/X.rs` the doc names exists, and every guard that reads `src/` through
/// the scanner (`scan::sources`) is named in the doc.
#[test]
fn the_guards_named_are_the_guards() {
    let doc = doc();
    let offline = src().parent().unwrap().join("tests/offline");
    let named: BTreeSet<String> = doc
        .split("tests/offline/")
        .skip(1)
        .filter_map(|rest| {
            let end = rest.find(".rs")?;
            let name = &rest[..end];
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
                .then(|| name.to_string())
        })
        .collect();
    let missing: Vec<&String> = named
        .iter()
        .filter(|n| !offline.join(format!("{n}.rs")).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names tests/offline files that do not exist: {missing:?}"
    );
    let mut guards = Vec::new();
    for entry in std::fs::read_dir(&offline).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        if name != "scan" && name != "main" && text.contains("scan::") && text.contains("sources") {
            guards.push(name);
        }
    }
    guards.sort();
    let unnamed: Vec<&String> = guards.iter().filter(|g| !named.contains(*g)).collect();
    assert!(
        unnamed.is_empty(),
        "guards that read src/ but docs/architecture.md does not name (say what each checks): \
         {unnamed:?}"
    );
}

/// "Three test binaries": the offline and measuring tiers and the wake grid, nothing else.
#[test]
fn three_test_binaries() {
    let tests = src().parent().unwrap().join("tests");
    let mut binaries = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if (path.is_dir() && path.join("main.rs").exists()) || name.ends_with(".rs") {
            binaries.push(name);
        }
    }
    binaries.sort();
    assert_eq!(binaries, ["measuring", "offline", "wake_grid.rs"]);
    assert!(doc().contains("Three test binaries"));
}

/// lib.rs's crate doc lists every module it declares `pub`, each with who uses it (a bullet
/// `//! - \`name\`, ...: why`), and no other: what is public is stated where it is declared.
#[test]
fn the_crate_doc_lists_the_public_modules() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let listed: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//! - "))
        .filter_map(|l| l.split_once(':'))
        .flat_map(|(names, _)| {
            names
                .split(',')
                .map(|n| n.trim().trim_matches('`').to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let public: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').to_string())
        .collect();
    assert!(
        public.len() > 10,
        "the scan finds lib.rs's modules: {public:?}"
    );
    assert_eq!(
        listed, public,
        "src/lib.rs's crate doc lists (left) other modules than it declares pub (right)"
    );
}

// ---- "One file and one row" ----

/// A wake method is one file and one row: every waker type (`impl MakeWaker for T`, `impl
/// Channel for T` for the IPC methods) is named in a row of `WAKE_METHODS`, and every row names a
/// waker of some file of `measure/wake/`.
#[test]
fn a_wake_method_is_one_file_and_one_row() {
    let all = sources(&src());
    let table_file = all.iter().find(|s| s.rel == "measure/wake/mod.rs").unwrap();
    // The file's own text, comment lines aside: a row names its waker as `driver::<Waker>()`.
    let table: String = std::fs::read_to_string(src().join(&table_file.rel))
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let rows: Vec<&str> = table
        .split("WakeMethod {")
        .skip(1)
        // `split_once`: the row's `driver: driver::<Waker>()` holds "driver:" twice.
        .filter_map(|r| r.split_once("driver:").map(|(_, rest)| rest))
        .map(|r| r.split("()").next().unwrap().trim())
        .collect();
    assert_eq!(
        rows.len(),
        jitterlab::measure::wake::WAKE_METHODS.len(),
        "every row of WAKE_METHODS has one `driver:`"
    );
    let mut wakers = Vec::new();
    for source in all.iter().filter(|s| s.rel.starts_with("measure/wake/")) {
        for line in source.production() {
            for marker in ["impl MakeWaker for ", "impl Channel for "] {
                if let Some(rest) = line.code.trim().strip_prefix(marker) {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    wakers.push((source.rel.clone(), name));
                }
            }
        }
    }
    assert!(wakers.len() >= 10, "the scan finds the wakers: {wakers:?}");
    let unlisted: Vec<&(String, String)> = wakers
        .iter()
        .filter(|(_, w)| {
            !rows.iter().any(|r| {
                r.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|p| p == w)
            })
        })
        .collect();
    // pi-mutex's waker is made by its own driver (one row, `inversion::pi_mutex_driver`).
    assert!(
        unlisted.is_empty(),
        "wakers no row of WAKE_METHODS names (a method is its waker's file and its row): {unlisted:?}"
    );
    for row in &rows {
        let named = row.starts_with("inversion::")
            || wakers.iter().any(|(_, w)| {
                row.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|p| p == w)
            });
        assert!(
            named,
            "the row with driver {row} names no waker of measure/wake/"
        );
    }
}

/// A load generator is one file and one row: every file of `load/generators/` but `mod.rs` is a
/// row of `GENERATORS`, and every row is a file.
#[test]
fn a_load_generator_is_one_file_and_one_row() {
    let dir = src().join("load/generators");
    let table = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        if stem != "mod" && stem != "tests" {
            files.push(stem);
        }
    }
    files.sort();
    let unrowed: Vec<&String> = files
        .iter()
        .filter(|f| !table.contains(&format!("{f}::")))
        .collect();
    assert!(
        unrowed.is_empty(),
        "files of load/generators/ that GENERATORS does not name: {unrowed:?}"
    );
    assert_eq!(
        jitterlab::load::generators::GENERATORS.len(),
        files.len(),
        "one row per file of load/generators/"
    );
}

/// Modules that have files of their own beside `x.rs` other than its unit tests (`x/tests.rs`),
/// and why they are not yet folders with `mod.rs`. An entry that keeps to the layout fails.
const LAYOUT_EXCEPTIONS: &[(&str, &str)] = &[
    (
        "trace/split.rs",
        "split/moved.rs: trace's owner moves it (R40)",
    ),
    (
        "load/contain.rs",
        "contain/{cpuset,reaper}.rs: load's owner moves it (F39)",
    ),
    (
        "session/children.rs",
        "children/groups.rs: session's owner moves it (F39)",
    ),
    (
        "session/cpuset/v2.rs",
        "v2/stale.rs: session's owner moves it (F39)",
    ),
];

/// "One module layout throughout": a module with files of its own is a folder with `mod.rs`,
/// but for a file whose only other file is its unit tests (`x.rs` beside `x/tests.rs`).
#[test]
fn one_module_layout() {
    let root = src();
    let mut breaks = Vec::new();
    for source in sources(&root) {
        let Some(stem) = source.rel.strip_suffix(".rs") else {
            continue;
        };
        let dir = root.join(stem);
        if !dir.is_dir() || stem.ends_with("/mod") {
            continue;
        }
        let mut others: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_str().unwrap().to_string())
            .filter(|n| n != "tests.rs")
            .collect();
        others.sort();
        if !others.is_empty() {
            breaks.push((source.rel.clone(), others));
        }
    }
    let unexplained: Vec<_> = breaks
        .iter()
        .filter(|(rel, _)| !LAYOUT_EXCEPTIONS.iter().any(|(e, _)| e == rel))
        .collect();
    assert!(
        unexplained.is_empty(),
        "modules with files of their own that are not folders with mod.rs (move x.rs to \
         x/mod.rs): {unexplained:?}"
    );
    let stale: Vec<&str> = LAYOUT_EXCEPTIONS
        .iter()
        .filter(|(e, _)| !breaks.iter().any(|(rel, _)| rel == e))
        .map(|(e, _)| *e)
        .collect();
    assert!(
        stale.is_empty(),
        "LAYOUT_EXCEPTIONS that keep to the layout now (remove them): {stale:?}"
    );
}
