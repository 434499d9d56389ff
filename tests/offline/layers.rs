//! The module layers (issue 25): the crate's top-level modules form one stack, each importing
//! only from the layers below it, so that the graph of `crate::` imports has no cycle and a
//! module can be read with only what is under it in mind. docs/architecture.md draws the
//! picture; this test keeps the code to it and fails naming each import that goes up or
//! sideways.
//!
//! What counts is code: a `crate::module` path or a `use crate::{module, ..}` outside comments
//! (`scan.rs` decides what is code), in every line of every file, unit tests included: a test
//! that imports from above its module ties the module to what is above it as much as its
//! code does. The crate root's files and the tests of the whole crate are in no layer
//! ([`OUTSIDE`]).

use crate::scan::{Source, sources};
use std::path::Path;

/// The layers, bottom first. A module may import the modules of every layer below its own and
/// nothing of its own layer but itself.
pub(crate) const LAYERS: &[(&str, &[&str])] = &[
    // The libc boundary, which needs nothing of the crate (its tests' eprintln! aside).
    ("libc boundary", &["sys"]),
    // The one writer of standard error, which every module's eprintln! reaches (lib.rs's
    // macros): std and sys's stop-aware write (N20: a stalled stderr held a stop).
    ("standard error", &["stderr"]),
    // Leaves: errors (which classify the system's errno values), units, CPU lists, the
    // seeded generator.
    ("base", &["error", "units", "cpulist", "random"]),
    // How a result file is opened for reading (sys only), the one writer of stdout, the
    // measuring loop (sys only), and the journals of kernel state (sys only: below load/
    // and trace/, which journal theirs).
    (
        "io and measuring",
        &["input", "stdout", "measure", "journal"],
    ),
    // The result-directory format: types, constants, encoders, decoders.
    ("format", &["format"]),
    // The result directory on disk: making it, reading a run back, importing other tools.
    ("results", &["results"]),
    // Statistics and judgements over results: tails, compare, budgets, phases.
    ("analysis", &["analysis"]),
    // Load generators and their supervisor.
    ("load", &["load"]),
    // The resolved options of a run.
    ("plan", &["plan"]),
    // The recorder: drains the measuring threads and writes the format.
    ("recorder", &["recorder"]),
    // Kernel tracing and the explanation of spikes.
    ("trace", &["trace"]),
    // The system snapshot and readiness checks (doctor, run's warnings).
    ("doctor", &["doctor"]),
    // A measurement session.
    ("session", &["session"]),
    // The views of results (terminal, HTML, exports): above the session, whose CPU locks say
    // whether a run that says `running` still has its process (session/stale.rs).
    ("views", &["report"]),
    // The long-running monitor (sessions and views).
    ("monitor", &["monitor"]),
    // `jitterlab tune`: arms of sessions with and without each fix, compared.
    ("tune", &["tune"]),
    // Command-line definitions, then the commands that tie everything together.
    ("cli", &["cli"]),
    ("commands", &["commands"]),
];

/// Files outside every layer, each with why.
const OUTSIDE: &[(&str, &str)] = &[
    ("lib.rs", "the crate root: declares every module"),
    (
        "main.rs",
        "the binary: parses, dispatches to commands, exits",
    ),
    (
        "spec_quotes_the_code.rs",
        "a unit test of the whole crate: the documents (result-format.md, the user guide's Input limits) state the constants of every layer as the code has them",
    ),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// One import that breaks the layering: where, and what it names.
#[derive(Debug, PartialEq)]
struct Breach {
    at: String,
    from: String,
    to: String,
}

/// The top-level modules named by `crate::` paths in the code of `source` (test code
/// included), with their 1-based line numbers.
fn imports(source: &Source) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_group = false;
    for line in source.code() {
        let (n, code) = (line.n, line.code.trim_start());
        // `use crate::{a, b::c, ..};` may span lines: every first segment inside the braces.
        let mut rest = code;
        if let Some(at) = rest.find("use crate::{") {
            in_group = true;
            rest = &rest[at + "use crate::{".len()..];
        }
        if in_group {
            let end = rest.find("};");
            let inside = &rest[..end.unwrap_or(rest.len())];
            out.extend(group_heads(inside).into_iter().map(|m| (n, m)));
            if end.is_some() {
                in_group = false;
            }
            continue;
        }
        for (at, _) in code.match_indices("crate::") {
            let before_ok = at == 0 || !is_ident(code.as_bytes()[at - 1]);
            let name: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if before_ok && !name.is_empty() {
                out.push((n, name));
            }
        }
    }
    out
}

/// The first path segment of each item of a `use crate::{...}` group (nested groups skipped).
fn group_heads(inside: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    let mut word = String::new();
    for c in inside.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if depth == 0 && item_start && (c.is_ascii_alphanumeric() || c == '_') => {
                word.push(c)
            }
            _ => {
                if !word.is_empty() {
                    heads.push(std::mem::take(&mut word));
                    item_start = false;
                }
            }
        }
    }
    if !word.is_empty() {
        heads.push(word);
    }
    heads
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Every breach of the layers in the `src/` tree at `root`.
fn breaches(root: &Path) -> Vec<Breach> {
    let mut out = Vec::new();
    for source in sources(root) {
        let rel_text = source.rel.clone();
        if OUTSIDE.iter().any(|(f, _)| *f == rel_text) {
            continue;
        }
        let top = top_module(Path::new(&rel_text));
        let Some(own) = layer_of(&top) else {
            out.push(Breach {
                at: format!("src/{rel_text}"),
                from: top.clone(),
                to: "(a module in no layer: add it to LAYERS)".into(),
            });
            continue;
        };
        for (line, to) in imports(&source) {
            if to == top {
                continue;
            }
            // A name that is not a top-level module (a macro, `crate::Result`) is no layer's.
            let Some(theirs) = layer_of(&to) else {
                if root.join(&to).exists() || root.join(format!("{to}.rs")).exists() {
                    out.push(Breach {
                        at: format!("src/{rel_text}:{line}"),
                        from: top.clone(),
                        to: format!("{to} (a module in no layer: add it to LAYERS)"),
                    });
                }
                continue;
            };
            if theirs >= own {
                out.push(Breach {
                    at: format!("src/{rel_text}:{line}"),
                    from: format!("{top} (layer {})", LAYERS[own].0),
                    to: format!("{to} (layer {})", LAYERS[theirs].0),
                });
            }
        }
    }
    out
}

fn top_module(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_str()
        .unwrap();
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

#[test]
fn every_import_goes_down_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = breaches(&root);
    assert!(
        found.is_empty(),
        "imports against the layers (tests/offline/layers.rs, docs/architecture.md):\n{}",
        found
            .iter()
            .map(|b| format!("  {}: {} imports {}", b.at, b.from, b.to))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The checker itself, on a tree made here: an import upward, one sideways, a grouped import,
/// imports in unit tests (inline and a file), and comments, which are not imports.
#[test]
fn the_checker_names_imports_up_and_sideways_in_code_and_tests_but_not_comments() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "format/mod.rs",
        "//! see crate::commands\nuse crate::input::open;\nuse crate::{\n    sys::x,\n    recorder::Recorder,\n};\n",
    );
    write("analysis/mod.rs", "fn f() { crate::load::go(); }\n");
    write(
        "recorder/mod.rs",
        "use crate::format::hlog;\n#[cfg(test)]\nmod tests { use crate::commands::x; }\n",
    );
    write("recorder/tests.rs", "use crate::commands::run;\n");
    for m in ["input.rs", "sys/mod.rs", "load/mod.rs", "commands/mod.rs"] {
        write(m, "\n");
    }
    let mut found = breaches(src);
    found.sort_by(|a, b| a.at.cmp(&b.at));
    let at: Vec<(&str, &str)> = found
        .iter()
        .map(|b| (b.at.as_str(), b.to.as_str()))
        .collect();
    assert_eq!(
        at,
        vec![
            ("src/analysis/mod.rs:1", "load (layer load)"),
            ("src/format/mod.rs:5", "recorder (layer recorder)"),
            ("src/recorder/mod.rs:3", "commands (layer commands)"),
            ("src/recorder/tests.rs:1", "commands (layer commands)"),
        ],
        "{found:#?}"
    );
}
