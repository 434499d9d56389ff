//! The measurement kind is one type (issue 41): what differs between kinds is answered by the
//! kind's file in `src/format/kind/` (its words, whether its samples are periodic wakeups or
//! time lost, whether they have an IRQ split, its metric families), and nothing else asks
//! "which kind is this?". This test lists the kinds (the rows of `kinds!` in
//! `format/kind/mod.rs`) and every place of production code that names one (`RunKind::X`,
//! `Measurement::X`, `kind.is_x()`, a plan's `measurement.x()` accessor), and fails, naming
//! file and line, on a place outside the kind files and the allowances below, each with its
//! reason (a measured kind's own plan file, `plan/build/<file>.rs` for its row `Kind => file`,
//! names the kind its settings measure). An allowance that no longer names a kind fails too, so that the list only shrinks.
//! `cargo test --test offline kinds -- --nocapture` prints the listing.

use crate::scan::{Source, sources, src};
use std::collections::BTreeMap;
use std::path::Path;

/// Where kinds may be named, besides `format/kind/` and each measured kind's own plan file, and
/// why. A path ending in `/` is a folder.
///
/// A measured kind's plan file is `plan/build/<file>.rs`, named as its row of `kinds!` names its
/// file in `format/kind/`: its settings implement `plan::MeasuredKind` (the kind run.json
/// stores, its thread's loop, its interval, deadline and clock) beside their resolution from
/// its options, and say which kind they measure there. The measuring threads
/// (`measure/thread.rs`), the plan's `Measurement` and `RunPlan` ask the trait, never the kind.
const ALLOWED: &[(&str, &str)] = &[
    (
        "session/run_json.rs",
        "the plan's specs as run.json stores them: the latency deadline, the noise threshold and loop clock (pending: plan accessors, issue 41 item 2)",
    ),
    // A producer of one kind names the kind it makes: the tool it imports measures that.
    (
        "results/import/rtla_timerlat.rs",
        "rtla timerlat measures latency",
    ),
    (
        "results/import/rtla_timerlat_top.rs",
        "rtla timerlat top measures latency",
    ),
    (
        "results/import/rtla_osnoise_hist.rs",
        "rtla osnoise measures noise",
    ),
    (
        "results/import/rtla_osnoise_top.rs",
        "rtla osnoise measures noise",
    ),
    ("results/import/oslat_json.rs", "oslat measures noise"),
    ("results/import/oslat_text.rs", "oslat measures noise"),
    (
        "results/import/imported.rs",
        "the latency tools' importers' record (cyclictest and the like)",
    ),
    (
        "monitor/mod.rs",
        "monitor measures latency (its /metrics are the latency kind's)",
    ),
];

/// The kinds: each row `Variant => file,` of `kinds!` in `format/kind/mod.rs`.
fn kinds(root: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root.join("format/kind/mod.rs")).unwrap();
    text.lines()
        .skip_while(|l| *l != "kinds! {")
        .take_while(|l| *l != "}")
        .filter_map(|l| {
            let (variant, file) = l.trim().strip_suffix(',')?.split_once(" => ")?;
            Some((variant.trim().to_string(), file.trim().to_string()))
        })
        .collect()
}

/// The ways a line of code names `variant`.
fn names(variant: &str) -> Vec<String> {
    let lower = variant.to_lowercase();
    let mut n: Vec<String> = ["RunKind", "Measurement"]
        .iter()
        .map(|t| format!("{t}::{variant}"))
        .collect();
    n.push(format!("kind.is_{lower}("));
    n.push(format!("kind().is_{lower}("));
    n.push(format!(".{lower}()"));
    n
}

/// Each kind's naming places outside the kind files, as `src/<file>:<line>: <code>`, and
/// whether each is allowed.
fn places(root: &Path) -> BTreeMap<String, Vec<(String, bool)>> {
    let all = sources(root);
    let kinds = kinds(root);
    let mut found = BTreeMap::new();
    for (variant, _) in &kinds {
        let names = names(variant);
        let mut at = Vec::new();
        for source in all.iter().filter(|s| !s.rel.starts_with("format/kind/")) {
            for line in source.production() {
                if names.iter().any(|n| named(&line.code, n)) {
                    at.push((
                        format!("src/{}:{}: {}", source.rel, line.n, line.code.trim()),
                        allowed(source, &kinds),
                    ));
                }
            }
        }
        found.insert(variant.clone(), at);
    }
    found
}

/// Whether `code` holds `name` as a whole name (`RunKind::Noise`, not `RunKind::NoiseX`).
fn named(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let after = code[at + name.len()..].chars().next();
        name.ends_with('(') || !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Whether `source` may name a kind: a measured kind's own plan file, or an allowance.
fn allowed(source: &Source, kinds: &[(String, String)]) -> bool {
    kinds
        .iter()
        .any(|(_, file)| source.rel == format!("plan/build/{file}.rs"))
        || ALLOWED.iter().any(|(p, _)| match p.strip_suffix('/') {
            Some(dir) => source.rel.starts_with(&format!("{dir}/")),
            None => source.rel == *p,
        })
}

#[test]
fn kinds_are_named_only_in_their_files() {
    let root = src();
    let kinds = kinds(&root);
    assert!(kinds.len() >= 2, "no kinds read from format/kind/mod.rs");
    for (_, file) in &kinds {
        assert!(
            root.join(format!("format/kind/{file}.rs")).is_file(),
            "format/kind/{file}.rs missing"
        );
    }
    let places = places(&root);
    let mut listing = String::new();
    let mut bad = Vec::new();
    for (kind, at) in &places {
        listing += &format!("{kind}: {} places outside format/kind/\n", at.len());
        let file = &kinds.iter().find(|(v, _)| v == kind).unwrap().1;
        let measured = root.join(format!("plan/build/{file}.rs")).is_file();
        listing += &format!(
            "  its words: src/format/kind/{file}.rs; measured: {}\n",
            if measured {
                format!("src/plan/build/{file}.rs")
            } else {
                "no (a kind of results only)".to_string()
            }
        );
        for (place, ok) in at {
            listing += &format!("  {}{place}\n", if *ok { "" } else { "NOT ALLOWED " });
            if !ok {
                bad.push(place.clone());
            }
        }
    }
    println!("{listing}");
    assert!(
        bad.is_empty(),
        "a kind named outside src/format/kind/ and the allowed places ({} lines): ask the kind a question instead (a field of format::kind::Kind with a name that says what differs, e.g. `kind.spec().time_lost`, `kind.words().plural`), so that a new kind is one file and one row:\n{}\nall places:\n{listing}",
        bad.len(),
        bad.join("\n")
    );
    // Every allowance still names a kind: when a branch goes, its allowance goes too.
    let all = sources(&root);
    for (path, why) in ALLOWED {
        let used = places.values().flatten().any(|(place, _)| {
            place
                .strip_prefix("src/")
                .is_some_and(|p| p.starts_with(path))
        });
        assert!(
            used || !all.iter().any(|s| s.rel.starts_with(path)),
            "src/{path} is allowed to name a kind ({why}) but names none: remove it from ALLOWED"
        );
    }
}

/// How each kind's file says `jitterlab run --kind` measures it (`run: Some(RunMeasured {`
/// ... `})` or `run: None`): None for a kind `run` does not measure; otherwise whether it is
/// measured by its period alone (`RunSettings::Period`, its plan made by the shared builder).
fn run_declarations(root: &Path, kinds: &[(String, String)]) -> Vec<(String, Option<bool>)> {
    kinds
        .iter()
        .map(|(_, file)| {
            let path = root.join(format!("format/kind/{file}.rs"));
            let text = std::fs::read_to_string(&path).unwrap();
            let code: String = text
                .lines()
                .take_while(|l| !l.starts_with("#[cfg(test)]"))
                .collect::<Vec<_>>()
                .join("\n");
            let declared = match (code.contains("run: Some(RunMeasured {"), code.contains("run: None,")) {
                (true, false) => Some(code.contains("RunSettings::Period {")),
                (false, true) => None,
                _ => panic!(
                    "{}: says neither `run: Some(RunMeasured {{` nor `run: None,` once: each kind's file says whether `run --kind` measures it",
                    path.display()
                ),
            };
            (file.clone(), declared)
        })
        .collect()
}

/// What breaks the one way of a measured kind in the tree at `root`, whose `run --help` is
/// `help`: a kind `run` measures that the help does not offer; a kind measured by its period
/// alone with a plan file of its own in `plan/build/` or a loop file in `measure/` (its loop is
/// in its file, its plan made by the shared builder, `plan/build/period.rs`); a kind with
/// settings of its own (`RunSettings::LatencyGroup`) without their resolution in its plan file,
/// `plan/build/<file>.rs`.
fn declaration_problems(root: &Path, help: &str) -> Vec<String> {
    let kinds = kinds(root);
    let mut problems = Vec::new();
    for (file, declared) in run_declarations(root, &kinds) {
        let Some(by_period) = declared else { continue };
        let plan_file = root.join(format!("plan/build/{file}.rs")).is_file();
        if by_period && plan_file {
            problems.push(format!("run --kind {file}: measured by its period (format/kind/{file}.rs), yet src/plan/build/{file}.rs exists: the shared builder makes its plan"));
        }
        if by_period && root.join(format!("measure/{file}.rs")).is_file() {
            problems.push(format!("run --kind {file}: measured by its period, its loop belongs in format/kind/{file}.rs, not src/measure/{file}.rs"));
        }
        if !by_period && !plan_file {
            problems.push(format!("run --kind {file}: its settings are not its period's, and no src/plan/build/{file}.rs resolves them"));
        }
        if !help.contains(&format!("{file}:")) {
            problems.push(format!("run --help does not offer --kind {file}"));
        }
    }
    problems
}

/// `jitterlab run --kind` offers the kinds whose file says `run` measures them (the table
/// `plan::build::MEASURED_KINDS` is made from `kinds!`), the default (latency) first, each in
/// the one way [`declaration_problems`] checks.
#[test]
fn every_kind_run_measures_is_declared_by_its_file() {
    let root = src();
    let kinds = kinds(&root);
    let offered: Vec<String> = run_declarations(&root, &kinds)
        .into_iter()
        .filter(|(_, d)| d.is_some())
        .map(|(file, _)| file)
        .collect();
    assert_eq!(
        offered.first().map(String::as_str),
        Some("latency"),
        "{offered:?}"
    );
    let help = crate::common::jitterlab(&["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let problems = declaration_problems(&root, &help);
    assert!(problems.is_empty(), "{}\n{help}", problems.join("\n"));
}

/// The guard reads what each kind's file declares, in a planted tree, and finds a kind
/// measured by its period alone with a plan file of its own (a second way) and a kind the help
/// does not offer.
#[test]
fn the_declarations_are_read_from_the_kind_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| crate::scan::plant(root, rel, text);
    write(
        "format/kind/mod.rs",
        "kinds! {\n    #[default]\n    Latency => latency,\n    Noise => noise,\n    Toy => toy,\n}\n",
    );
    write(
        "format/kind/latency.rs",
        "const KIND: Kind = Kind {\n    run: Some(RunMeasured {\n        settings: RunSettings::LatencyGroup,\n    }),\n};\n",
    );
    write(
        "format/kind/noise.rs",
        "const KIND: Kind = Kind {\n    run: None,\n};\n",
    );
    write(
        "format/kind/toy.rs",
        "const KIND: Kind = Kind {\n    run: Some(RunMeasured {\n        settings: RunSettings::Period {\n        },\n    }),\n};\n#[cfg(test)]\nmod tests { const K: Kind = Kind { run: None, }; }\n",
    );
    write("plan/build/latency.rs", "");
    let kinds = kinds(root);
    assert_eq!(
        run_declarations(root, &kinds),
        [
            ("latency".to_string(), Some(false)),
            ("noise".to_string(), None),
            ("toy".to_string(), Some(true)),
        ]
    );
    let help = "  latency: how late\n  toy: a toy\n";
    assert_eq!(declaration_problems(root, help), Vec::<String>::new());
    write("plan/build/toy.rs", "");
    assert_eq!(
        declaration_problems(root, "  latency: how late\n"),
        [
            "run --kind toy: measured by its period (format/kind/toy.rs), yet src/plan/build/toy.rs exists: the shared builder makes its plan",
            "run --help does not offer --kind toy",
        ]
    );
}

#[test]
fn the_scan_finds_a_planted_branch_and_passes_the_kind_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| crate::scan::plant(root, rel, text);
    write(
        "format/kind/mod.rs",
        "kinds! {\n    #[default]\n    Latency => latency,\n    Noise => noise,\n}\nfn f(k: RunKind) { if k == RunKind::Noise {} }\n",
    );
    write("format/kind/latency.rs", "");
    write("format/kind/noise.rs", "");
    write(
        "report/view.rs",
        "fn a(r: &R) { if r.kind.is_noise() {} }\n\
         fn b(r: &R) { if r.kind == RunKind::Latency {} }\n\
         fn c(r: &R) { if r.kind.spec().time_lost {} }\n\
         fn d() { RunKind::NoiseFree; } // RunKind::Noise in a comment\n\
         #[cfg(test)]\n\
         mod tests { fn t() { RunKind::Noise; } }\n",
    );
    write(
        "plan/build/noise.rs",
        "fn kind(&self) -> RunKind { RunKind::Noise }\n",
    );
    write("results/import/oslat_text.rs", "kind: RunKind::Noise,\n");
    let places = places(root);
    let show = |kind: &str| -> Vec<(String, bool)> { places[kind].clone() };
    assert_eq!(
        show("Latency"),
        [(
            "src/report/view.rs:2: fn b(r: &R) { if r.kind == RunKind::Latency {} }".to_string(),
            false
        )]
    );
    assert_eq!(
        show("Noise"),
        [
            (
                "src/plan/build/noise.rs:1: fn kind(&self) -> RunKind { RunKind::Noise }"
                    .to_string(),
                true
            ),
            (
                "src/report/view.rs:1: fn a(r: &R) { if r.kind.is_noise() {} }".to_string(),
                false
            ),
            (
                "src/results/import/oslat_text.rs:1: kind: RunKind::Noise,".to_string(),
                true
            ),
        ]
    );
}
