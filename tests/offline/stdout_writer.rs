//! One writer of standard output (third hostile re-run, N11): `print!`/`println!` panic when
//! stdout cannot be written (`> /dev/full`: exit 101 and a backtrace from five commands), so
//! every command's output goes through `src/stdout.rs`, which turns the failure into exit 4
//! naming stdout. This test fails on a `print!` or `println!` anywhere else under `src/`
//! outside test code; and it runs the commands with stdout on /dev/full.

use crate::common::{collect_rust_files, without_test_modules};
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn standard_output_is_written_only_by_its_writer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect_rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        if rel.ends_with("tests.rs") || rel == Path::new("stdout.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in without_test_modules(&text) {
            let code = line.split("//").next().unwrap_or("");
            let printing = ["print!(", "println!("].iter().any(|m| {
                code.match_indices(m)
                    .any(|(at, _)| at == 0 || !code.as_bytes()[at - 1].is_ascii_alphanumeric())
            });
            if printing {
                found.push(format!("src/{}:{n}: {}", rel.display(), line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "stdout written outside src/stdout.rs (print! panics when stdout cannot be written); use crate::stdout::write or line:\n{}",
        found.join("\n")
    );
}

/// What a full disk does to each command's output: exit 4 naming stdout, never a panic (101).
#[test]
fn a_full_stdout_is_a_failure_with_its_reason_not_a_panic() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    crate::common::write_known_run(&run, &[0], 2, 10, crate::common::uniform_10_50, 1, 0);
    let dir = run.to_str().unwrap().to_string();
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
