//! One writer of standard output (third hostile re-run, N11): `print!`/`println!` panic when
//! stdout cannot be written (`> /dev/full`: exit 101 and a backtrace from five commands), so
//! every command's output goes through `src/stdout.rs`, which turns the failure into exit 4
//! naming stdout. This test fails on a `print!` or `println!` anywhere else under `src/`
//! outside test code; and it runs the commands with stdout on /dev/full.

use crate::scan::{sources, src};
use std::path::Path;
use std::process::{Command, Stdio};

/// Every `src/<file>:<line>: <code>` under `root` outside `stdout.rs` and outside test code
/// that prints with `print!` or `println!`.
fn prints_outside_the_writer(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources(root) {
        if source.rel == "stdout.rs" {
            continue;
        }
        for line in source.production() {
            let code = &line.code;
            let printing = ["print!(", "println!("].iter().any(|m| {
                code.match_indices(m)
                    .any(|(at, _)| at == 0 || !code.as_bytes()[at - 1].is_ascii_alphanumeric())
            });
            if printing {
                found.push(format!("src/{}:{}: {}", source.rel, line.n, code.trim()));
            }
        }
    }
    found
}

#[test]
fn standard_output_is_written_only_by_its_writer() {
    let found = prints_outside_the_writer(&src());
    assert!(
        found.is_empty(),
        "stdout written outside src/stdout.rs (print! panics when stdout cannot be written); use crate::stdout::write or line:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_a_planted_print_and_passes_the_writer_tests_and_lookalikes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| crate::scan::plant(root, rel, text);
    write("stdout.rs", "print!(\"{s}\");\n");
    write(
        "report/mod.rs",
        "// println!(\"x\") in a comment\nfn f() { eprintln!(\"e\"); }\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod inline {\n    fn t() { println!(\"t\"); }\n}\nfn g() {\n    let u = \"http://x\"; println!(\"{u}\");\n}\n",
    );
    write("report/tests.rs", "println!(\"t\");\n");
    assert_eq!(
        prints_outside_the_writer(root),
        ["src/report/mod.rs:10: let u = \"http://x\"; println!(\"{u}\");"]
    );
}

/// A known run in a temporary directory (and its path), where /dev/full exists to stand for a
/// full disk; None, said, where it does not.
fn a_run_where_dev_full_is() -> Option<(tempfile::TempDir, String)> {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    crate::common::write_known_run(&run, &[0], 2, 10, crate::common::uniform_10_50, 1, 0);
    let dir = run.to_str().unwrap().to_string();
    Some((tmp, dir))
}

/// What a full disk does to each command's output: exit 4 naming stdout, never a panic (101).
#[test]
fn a_full_stdout_is_a_failure_with_its_reason_not_a_panic() {
    let Some((_tmp, dir)) = a_run_where_dev_full_is() else {
        return;
    };
    let cases: Vec<Vec<&str>> = vec![
        vec!["doctor"],
        vec!["compare", &dir, &dir],
        vec!["export", &dir, "--format", "json"],
        vec!["cyclictest", "--help"],
        vec!["--help"],
    ];
    for args in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
            .args(&args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        if args[0] != "--help" {
            assert_eq!(out.status.code(), Some(4), "{args:?}: {stderr}");
            assert!(
                stderr.contains("cannot write to standard output"),
                "{args:?}: {stderr}"
            );
        }
    }
}

/// Standard error too (fourth hostile re-run, N11's rest): std's `eprintln!` panics when
/// stderr cannot be written, so the crate's `eprint!`/`eprintln!` are defined in lib.rs before
/// every module (they shadow std's there) and write through src/stderr.rs, which ignores the
/// failure; main.rs writes through it; nothing names std's macros.
#[test]
fn standard_error_is_written_only_by_its_writer() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let first_mod = lib
        .lines()
        .position(|l| {
            l.trim_start().starts_with("pub mod ")
                || l.trim_start().starts_with("pub(crate) mod ")
                || l.trim_start().starts_with("mod ")
        })
        .expect("lib.rs declares modules");
    for name in ["eprint", "eprintln"] {
        let defined = lib
            .lines()
            .position(|l| l.trim() == format!("macro_rules! {name} {{"))
            .unwrap_or_else(|| panic!("lib.rs does not define {name}!"));
        assert!(
            defined < first_mod,
            "lib.rs defines {name}! after its first module, which then gets std's"
        );
    }
    let mut found = Vec::new();
    for source in sources(&src()) {
        for line in source.production() {
            let code = &line.code;
            let stds = code.contains("std::eprint");
            let in_main = source.rel == "main.rs" && code.contains("eprint");
            if stds || in_main {
                found.push(format!("src/{}:{}: {}", source.rel, line.n, code.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "stderr written past src/stderr.rs (std's eprintln! panics when stderr cannot be written):\n{}",
        found.join("\n")
    );
}

/// What a full disk under stderr does: the command keeps its exit code (2 for a usage error,
/// 4 for a failed write to stdout), never a panic (101).
#[test]
fn a_full_stderr_keeps_the_exit_code() {
    let Some((tmp, dir)) = a_run_where_dev_full_is() else {
        return;
    };
    let missing = tmp.path().join("missing").to_str().unwrap().to_string();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["export", &missing, "--format", "json"], 2),
        (vec!["report", &dir, "-o", "/nonexistent/r.html"], 2),
        // A fine export to a full stdout: exit 4, whose message cannot be said either.
        (vec!["export", &dir, "--format", "json"], 4),
    ];
    for (args, code) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
            .args(&args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .stderr(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
    }
}
