//! The public surface (issue 41, docs/architecture.md "Layers"): the library is the binary's and
//! its tests' (not an API for others), so an item is `pub` only when `src/main.rs`, `tests/` or
//! `bench/` use it; everything else is `pub(crate)`, where the compiler's `dead_code` sees it.
//!
//! Two halves check that. The compiler's: `src/lib.rs` denies `unreachable_pub`, so an item that
//! cannot be reached from the crate root (anything in a `pub(crate)` module, a field or method
//! of a `pub(crate)` type) fails the build when written `pub`. This test's: an item of a `pub`
//! module written `pub`, which the compiler cannot judge, fails here when no code outside the
//! library names it.
//!
//! **What the scan can and cannot tell.** It is by name: an item counts as used when its name is
//! an identifier in the code of `src/main.rs`, `tests/**/*.rs` or `bench/**/*.rs` (comments out,
//! and the contents of string literals, so the code the guards plant in strings names nothing).
//! It reads production code of `src/` (test modules are not the library's surface) and finds
//! `pub` items declared on a line of their own: functions, types, traits, constants, statics,
//! modules, named fields, and the names a `pub use` re-exports (a glob re-export, `pub use x::*`,
//! is not judged). A name that two items share (`new`, `open`, `cpu`) keeps both `pub` if one is
//! used; and a name that a used item's declaration mentions (a function's signature, a type's
//! body, a field's type) counts as used, since a test reaches that type without naming it. So
//! the scan proves an item unused, never used. What it leaves to the compiler is enough:
//! `unreachable_pub` and `dead_code` do not depend on names.
//!
//! The allowances below are `pub` items nothing outside uses, each with its reason. An allowance
//! naming no such item (the item gone, `pub(crate)` now, or used outside after all) fails, so the
//! list only shrinks.

use crate::scan::{Source, bare_lines, sources, src};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `pub` items no code outside the library names, by file (relative to `src/`) and name, and why
/// they stay `pub`.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "analysis/budget/parse.rs",
        "BudgetError",
        "the error of `Budget::parse`, which tests/offline/export.rs calls",
    ),
    (
        "analysis/quantile.rs",
        "Bounds",
        "returned by `order_statistic_difference`, which the oracle (tests/measuring/oracle.rs) checks",
    ),
    (
        "format/hlog_scan/mod.rs",
        "TornTail",
        "returned by `hlog_scan::scan`, which tests/measuring/session.rs calls",
    ),
    (
        "format/hlog_scan/torn.rs",
        "TornTail",
        "returned by `hlog_scan::scan`, which tests/measuring/session.rs calls",
    ),
    (
        "recorder/scale.rs",
        "ScaleResult",
        "returned by `recorder::scale::run`, which bench/recorder_scale.rs calls",
    ),
    (
        "report/export/verdict.rs",
        "CpuCase",
        "returned by `verdict::cases`, which tests/measuring/lava.rs calls",
    ),
    (
        "results/dir/mod.rs",
        "Claim",
        "returned by `ResultDir::create`, which tests/measuring/segments.rs calls",
    ),
    (
        "sys/process.rs",
        "Reaped",
        "returned by `sys::process::wait_for`, which tests/measuring (result_files, actions, monitor) call",
    ),
    (
        "trace/page.rs",
        "PageError",
        "returned by `trace::page::read_page`, which tests/measuring/trace.rs calls",
    ),
    (
        "trace/reader.rs",
        "TraceBatch",
        "named outside by nothing since `reader::spawn` became pub(crate) (issue 41, session 54): pub(crate) with its fields and tracefs.rs's reader functions next, not compiled in time",
    ),
];

/// One `pub` item of the library: its file (relative to `src/`), line and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Item {
    rel: String,
    line: usize,
    name: String,
    /// The identifiers of its declaration: a function's signature, a type's whole body (an
    /// enum's variants), a field's or constant's line.
    declares: Vec<String>,
}

/// The files that use the library from outside: `src/main.rs`, and every `.rs` file under
/// `tests/` and `bench/`, of the checkout at `root`.
fn outside_files(root: &Path) -> Vec<PathBuf> {
    fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                collect(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root.join("src/main.rs")];
    collect(&root.join("tests"), &mut files);
    collect(&root.join("bench"), &mut files);
    files
}

/// Every identifier in the code of `files` (comments and literals' contents out).
fn outside_names(files: &[PathBuf]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in bare_lines(&text) {
            names.extend(identifiers(&line));
        }
    }
    names
}

/// The identifiers in `code`, in order (keywords included).
fn identifiers(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in code.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if !word.is_empty() {
            if !word.starts_with(|d: char| d.is_ascii_digit()) {
                out.push(word.clone());
            }
            word.clear();
        }
    }
    out
}

/// The names a `pub` item declared at the start of `code` (a line, or for `pub use`, the
/// statement to its `;`) makes public; empty for anything else.
fn declared(code: &str) -> Vec<String> {
    let Some(rest) = code.trim_start().strip_prefix("pub ") else {
        return Vec::new();
    };
    let rest = rest.trim_start();
    if let Some(tree) = rest.strip_prefix("use ") {
        return reexported(tree);
    }
    let words = identifiers(rest);
    let mut k = 0;
    while k < words.len() {
        match words[k].as_str() {
            "unsafe" | "async" | "extern" => k += 1,
            "const" if matches!(words.get(k + 1).map(String::as_str), Some("fn" | "unsafe")) => {
                k += 1
            }
            "fn" | "struct" | "enum" | "trait" | "type" | "static" | "mod" | "union" | "const" => {
                let name = words[k + 1..].iter().find(|w| *w != "mut");
                return name.into_iter().cloned().collect();
            }
            // A named field: `pub name: Type`.
            first if k == 0 && rest[first.len()..].trim_start().starts_with(':') => {
                return vec![first.to_string()];
            }
            _ => return Vec::new(),
        }
    }
    Vec::new()
}

/// The names a use tree (`a::b::{C, d::E as F, self}`, to its `;`) brings in: the last segment
/// of each leaf, its `as` name when renamed, the module's for `self`; a glob names nothing.
fn reexported(tree: &str) -> Vec<String> {
    let tree = tree.split(';').next().unwrap_or("");
    let mut names = Vec::new();
    let mut prefix_last = Vec::new(); // the last segment before each open brace
    let mut leaf = String::new();
    for c in tree.chars().chain(std::iter::once(',')) {
        match c {
            '{' => {
                let segment = leaf.trim().trim_end_matches("::").rsplit("::").next();
                prefix_last.push(segment.unwrap_or("").trim().to_string());
                leaf.clear();
            }
            ',' | '}' => {
                let l = leaf.trim();
                if !l.is_empty() && !l.ends_with('*') {
                    let name = match l.split_once(" as ") {
                        Some((_, alias)) => alias.trim(),
                        None => l.rsplit("::").next().unwrap().trim(),
                    };
                    let name = if name == "self" {
                        prefix_last.last().map(String::as_str).unwrap_or("self")
                    } else {
                        name
                    };
                    names.push(name.to_string());
                }
                leaf.clear();
                if c == '}' {
                    prefix_last.pop();
                }
            }
            _ => leaf.push(c),
        }
    }
    names
}

/// The identifiers of the declaration that starts at `lines[0]`: to its first `;` or, for a
/// body, to the brace that closes it (a function: to the brace that opens its body).
fn declaration(lines: &[&crate::scan::Line]) -> Vec<String> {
    let first = lines[0].code.as_str();
    let is_fn = identifiers(first).iter().any(|w| w == "fn");
    let mut text = String::new();
    let mut depth = 0i64;
    for line in lines.iter().take(400) {
        for c in line.code.chars() {
            if is_fn && c == '{' {
                return identifiers(&text);
            }
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            text.push(c);
            if (c == ';' || c == ',' || c == '}') && depth == 0 {
                return identifiers(&text);
            }
        }
        text.push(' ');
    }
    identifiers(&text)
}

/// Every `pub` item of the library's production code under `root` (a `src/` tree; `main.rs`
/// is the binary, not the library).
fn pub_items(sources: &[Source]) -> Vec<Item> {
    let mut items = Vec::new();
    for source in sources.iter().filter(|s| s.rel != "main.rs") {
        let lines: Vec<_> = source.production().collect();
        for (k, line) in lines.iter().enumerate() {
            let mut code = line.code.clone();
            if code.trim_start().starts_with("pub use ") {
                // The statement to its `;`, over lines.
                for next in &lines[k + 1..] {
                    if code.contains(';') {
                        break;
                    }
                    code.push(' ');
                    code.push_str(&next.code);
                }
            }
            let declares = declaration(&lines[k..]);
            for name in declared(&code) {
                items.push(Item {
                    rel: source.rel.clone(),
                    line: line.n,
                    name,
                    declares: declares.clone(),
                });
            }
        }
    }
    items
}

/// The `pub` items of the tree at `root` (a checkout: `src/`, `tests/`, `bench/`) whose names
/// nothing outside the library uses, and the allowances among `allowed` that name none of them.
fn unused(root: &Path, allowed: &[(&str, &str, &str)]) -> (Vec<Item>, Vec<String>) {
    let mut used = outside_names(&outside_files(root));
    let items = pub_items(&sources(&root.join("src")));
    // What a used item's declaration names is reached through it (a type a test gets from a
    // function or a field, without naming it): used too, to a fixed point.
    loop {
        let before = used.len();
        let reached: Vec<String> = items
            .iter()
            .filter(|i| used.contains(&i.name))
            .flat_map(|i| i.declares.iter().cloned())
            .collect();
        used.extend(reached);
        if used.len() == before {
            break;
        }
    }
    let unused: Vec<Item> = items
        .into_iter()
        .filter(|item| !used.contains(&item.name))
        .collect();
    let stale = allowed
        .iter()
        .filter(|(rel, name, _)| !unused.iter().any(|i| i.rel == *rel && i.name == *name))
        .map(|(rel, name, why)| format!("src/{rel}: {name} ({why})"))
        .collect();
    let unexplained = unused
        .into_iter()
        .filter(|i| {
            !allowed
                .iter()
                .any(|(rel, name, _)| i.rel == *rel && i.name == *name)
        })
        .collect();
    (unexplained, stale)
}

#[test]
fn every_pub_item_is_used_outside_the_library() {
    let root = src().parent().unwrap().to_path_buf();
    let (unexplained, stale) = unused(&root, ALLOWED);
    let listing: Vec<String> = unexplained
        .iter()
        .map(|i| format!("  src/{}:{}: {}", i.rel, i.line, i.name))
        .collect();
    assert!(
        unexplained.is_empty(),
        "{} `pub` items that neither src/main.rs nor tests/ nor bench/ name: make them \
         pub(crate) (and remove what the compiler then finds dead), or allow them in \
         tests/offline/public_surface.rs with the reason:\n{}",
        unexplained.len(),
        listing.join("\n")
    );
    assert!(
        stale.is_empty(),
        "allowances that name no unused `pub` item (remove them from ALLOWED):\n  {}",
        stale.join("\n  ")
    );
}

/// The compiler's half stays on: lib.rs denies `unreachable_pub` for the whole crate.
#[test]
fn the_compiler_checks_the_crate_private_modules() {
    let lib = sources(&src())
        .into_iter()
        .find(|s| s.rel == "lib.rs")
        .unwrap();
    assert!(
        lib.production()
            .any(|l| l.code.trim() == "#![deny(unreachable_pub)]"),
        "src/lib.rs must keep #![deny(unreachable_pub)]"
    );
}

#[test]
fn the_scan_finds_a_planted_unused_item_and_reads_only_code() {
    use crate::scan::plant;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    plant(
        root,
        "src/lib.rs",
        "pub mod a;\npub(crate) fn hidden() {}\n#[cfg(test)]\nmod tests { pub fn helper() {} }\n",
    );
    plant(
        root,
        "src/a.rs",
        "pub struct Used {\n    pub field_used: u8,\n    pub field_unused: u8,\n}\n\
         pub const fn made() -> Reached { Reached }\n\
         pub struct Reached;\n\
         pub fn in_a_string() {}\n\
         pub fn in_a_comment() {}\n\
         pub use inner::{Kept, Dropped as Renamed};\n",
    );
    plant(root, "src/main.rs", "fn main() { jitterlab::a::made(); }\n");
    plant(
        root,
        "tests/t.rs",
        "use jitterlab::a::{Used, Kept};\n\
         // in_a_comment()\n\
         fn t(u: Used) -> u8 { let _ = \"in_a_string()\"; let _ = r#\"Renamed\"#; u.field_used }\n",
    );
    plant(root, "bench/b.rs", "fn main() { jitterlab::a(); }\n");
    let (unexplained, stale) = unused(
        root,
        &[
            ("a.rs", "in_a_comment", "allowed in the planted tree"),
            ("a.rs", "made", "used after all"),
        ],
    );
    let names: Vec<&str> = unexplained.iter().map(|i| i.name.as_str()).collect();
    // Reached (made's result) and the fields of Used (its body) are reached through what a
    // test names, and so is Renamed, re-exported in the one `pub use` with Kept (a limit of
    // the scan: a statement's names reach each other); in_a_comment is allowed.
    assert_eq!(names, ["in_a_string"]);
    assert_eq!(stale, ["src/a.rs: made (used after all)"]);
    assert_eq!(
        reexported("a::{b::{C, self}, D as E, f::*};"),
        ["C", "b", "E"]
    );
}
