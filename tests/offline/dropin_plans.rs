//! The rt-tests drop-ins (`cyclictest`, `oslat`, `timerlat`) build their plans without clap:
//! each translates its tool's options into the plan's option groups (`plan::options`) and
//! calls `plan::build`, as `run` and `noise` do. None may write a `jitterlab run` or `noise`
//! command line and parse it again (the two parses drifted apart: issue 41), nor reach for
//! clap or `cli` at all. Production code only (`tests/offline/scan.rs`); their unit tests may
//! parse what they like.

use crate::scan::{plant, sources, src};
use std::path::Path;

/// The drop-ins' code, relative to `src/`.
const DROPINS: &[&str] = &[
    "commands/cyclictest/",
    "commands/oslat/",
    "commands/timerlat/",
    "commands/dropin.rs",
];

/// What marks a command line built or parsed: clap itself, the command-line module, a parse
/// of an argv, the words of a jitterlab command line.
const BYPASSES: &[&str] = &[
    "clap",
    "crate::cli",
    "parse_from",
    "\"jitterlab\"",
    "\"run\"",
    "\"noise\"",
];

/// Every `src/<file>:<line>: <code>` under `root` where a drop-in's production code holds a
/// [`BYPASSES`] mark.
fn argv_built_by_dropins(root: &Path) -> Vec<String> {
    let mut hits = Vec::new();
    for source in sources(root) {
        if !DROPINS.iter().any(|d| source.rel.starts_with(d)) {
            continue;
        }
        for line in source.production() {
            if BYPASSES.iter().any(|b| line.code.contains(b)) {
                hits.push(format!(
                    "src/{}:{}: {}",
                    source.rel,
                    line.n,
                    line.code.trim()
                ));
            }
        }
    }
    hits
}

#[test]
fn dropins_build_their_plans_from_option_groups_not_a_command_line() {
    let root = src();
    let hits = argv_built_by_dropins(&root);
    assert!(
        hits.is_empty(),
        "a drop-in builds or parses a command line ({} lines); set the plan's option groups (crate::plan::options) and call crate::plan::build instead:\n{}",
        hits.len(),
        hits.join("\n")
    );
    for d in DROPINS {
        assert!(
            root.join(d).exists(),
            "DROPINS names src/{d}, which is not there"
        );
    }
}

#[test]
fn the_scan_finds_a_planted_command_line_in_a_dropin() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // What the drop-ins did before issue 41: an argv for `run`, parsed by clap.
    plant(
        root,
        "commands/timerlat/mod.rs",
        "pub fn plan() {\n    let argv = [\"jitterlab\", \"run\", \"--quiet\"];\n    // clap in a comment is no bypass\n    let args = crate::cli::Cli::try_parse_from(&argv);\n}\n#[cfg(test)]\nmod tests {\n    fn t() { use clap::Parser; }\n}\n",
    );
    // The same words outside a drop-in are not its business.
    plant(
        root,
        "commands/run/mod.rs",
        "fn f() { let a = [\"jitterlab\", \"run\"]; }\n",
    );
    let hits = argv_built_by_dropins(root);
    assert_eq!(
        hits,
        [
            "src/commands/timerlat/mod.rs:2: let argv = [\"jitterlab\", \"run\", \"--quiet\"];",
            "src/commands/timerlat/mod.rs:4: let args = crate::cli::Cli::try_parse_from(&argv);",
        ]
    );
}
