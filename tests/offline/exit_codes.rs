//! One map of exit codes (issue 41): `src/error.rs` holds the codes of docs/architecture.md
//! (`ExitCode`: 1 a check failed, 2 usage, 3 system, 4 run) and the 130 of a second signal
//! (`STOPPED_AT_ONCE`); everything else names them. Two were literals elsewhere (the load
//! worker's `code: 4` and `code: 3`, read back as `*code == 3`; `main`'s `exit(2)`), and a
//! literal drifts from the table unseen. This test fails, naming file and line, on an exit code
//! written as a number in production code outside `src/error.rs`:
//!
//! - `exit(N)`, whatever exits (`process::exit`, `_exit`, `exit_now`, signal-hook's `exit`);
//! - `code` or a name ending in `_code` given, compared with or set to a number
//!   (`code: 4`, `*code == 3`, `exit_code(s) != 1`);
//! - `Ok(N)` in `src/commands/` and `main.rs`, whose `Result<i32>` is the exit code.
//!
//! 0 (fine) is no code of the table and stays a number.

use crate::scan::{sources, src};
use std::path::Path;

/// The file that maps failures to exit codes.
const MAP: &str = "error.rs";

/// The nonzero integer literal at the start of `text`, if any.
fn literal(text: &str) -> Option<u64> {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let after = text[digits.len()..].chars().next();
    // `4`, `4)`, `4;`, `4,`, `4 ` — not `4.5`, `4_000` or `4u8`'s neighbours.
    let whole = !matches!(after, Some(c) if c.is_alphanumeric() || c == '.' || c == '_');
    digits.parse().ok().filter(|&n| n != 0 && whole)
}

/// Whether the code of one line writes an exit code as a number; `commands` for the files
/// whose `Ok` is an exit code.
fn writes_a_code(code: &str, commands: bool) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let after = |at: usize, word: &str| code[at + word.len()..].trim_start();
    // `exit(`, `_exit(`, `exit_now(`.
    let exits = code.match_indices("exit").any(|(at, w)| {
        let start = code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !ident(c) || c == '_');
        let rest = &code[at + w.len()..];
        let args = rest
            .strip_prefix("_now(")
            .or_else(|| rest.strip_prefix('('));
        start && args.map(str::trim_start).and_then(literal).is_some()
    });
    let given = code.match_indices("code").any(|(at, w)| {
        let end = at + w.len();
        let word_ends = code[end..].chars().next().is_none_or(|c| !ident(c));
        let word_starts = code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !ident(c) || c == '_');
        // Through a call's result too: `exit_code(s) != 1`.
        let rest = code[end..].trim_start();
        let rest = match rest.strip_prefix('(') {
            Some(args) => args.find(')').map_or("", |c| args[c + 1..].trim_start()),
            None => rest,
        };
        let value = ["==", "!=", ":", "="]
            .iter()
            .find_map(|op| rest.strip_prefix(op))
            .map(str::trim_start);
        word_ends && word_starts && value.and_then(literal).is_some()
    });
    let returned = commands
        && code
            .match_indices("Ok(")
            .any(|(at, w)| literal(after(at, w)).is_some());
    exits || given || returned
}

/// Every `src/<file>:<line>: <code>` under `root` outside [`MAP`] that writes an exit code as a
/// number.
fn literal_exit_codes(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources(root) {
        if source.rel == MAP {
            continue;
        }
        let commands = source.rel.starts_with("commands/") || source.rel == "main.rs";
        for line in source.production() {
            if writes_a_code(&line.code, commands) {
                found.push(format!(
                    "src/{}:{}: {}",
                    source.rel,
                    line.n,
                    line.code.trim()
                ));
            }
        }
    }
    found
}

#[test]
fn exit_codes_are_named_not_numbered_outside_error_rs() {
    let found = literal_exit_codes(&src());
    assert!(
        found.is_empty(),
        "exit codes written as numbers outside src/{MAP} ({} lines); name them (crate::error::ExitCode::Usage.status(), Failure::run, STOPPED_AT_ONCE), so that the one table of docs/architecture.md is the code's:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_planted_codes_and_passes_zero_names_and_lookalikes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| crate::scan::plant(root, rel, text);
    write("error.rs", "pub const X: i32 = 130;\nfn f() { exit(2) }\n");
    write(
        "load/worker.rs",
        "Failure { message, code: 4 }\n\
         let c = if *code == 3 { a } else { b };\n\
         process::exit_now(0);\n\
         std::process::exit(2);\n\
         signal_hook::low_level::exit(130)\n\
         Failure { message, code: ExitCode::Run }\n\
         // std::process::exit(3) in a comment\n\
         let keycode = 4; let code_points: 3;\n\
         if sys::process::exit_code(s) != 1 {}\n\
         if exit_code(s) == 0 {}\n\
         Ok(1)\n\
         let t = ok_exit(4.5);\n\
         libc::_exit(3);\n\
         #[cfg(test)]\n\
         mod tests { fn t() { std::process::exit(3) } }\n",
    );
    write("commands/run.rs", "return Ok(1);\nOk(0)\nOk(code)\n");
    write("main.rs", "std::process::exit(code);\n");
    assert_eq!(
        literal_exit_codes(root),
        [
            "src/commands/run.rs:1: return Ok(1);",
            "src/load/worker.rs:1: Failure { message, code: 4 }",
            "src/load/worker.rs:2: let c = if *code == 3 { a } else { b };",
            "src/load/worker.rs:4: std::process::exit(2);",
            "src/load/worker.rs:5: signal_hook::low_level::exit(130)",
            "src/load/worker.rs:9: if sys::process::exit_code(s) != 1 {}",
            "src/load/worker.rs:13: libc::_exit(3);",
        ]
    );
}
