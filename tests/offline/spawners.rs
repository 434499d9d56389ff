//! One owner for every process jitterlab starts (issue 39): the user's programs (`exec:`
//! actions) are started by `src/session/children.rs`, which bounds, kills, reaps and records
//! them; the loads by their supervisor and its containment. This test fails when code anywhere
//! else under `src/` starts a process: `Command::new`, a `CommandExt`/`process::Command`
//! import, `fork`, `vfork`, `posix_spawn`, `exec*`, `clone(`, or `fork_child(` (the sys
//! wrapper). Test code (`scan.rs`: what `#[cfg(test)]` puts under it, and the files of modules
//! so declared) is not scanned: a test may start what it likes and must clean it up itself.
//!
//! To start a process for the user, go through `session::children::Children`. Add a file to
//! [`ALLOWED`] only with the reason it cannot.

use crate::scan::sources;
use std::path::Path;

/// The files that may start processes, relative to `src/`, each with its reason.
const ALLOWED: &[(&str, &str)] = &[
    (
        "session/children.rs",
        "the owner of the processes started for the user (exec: actions)",
    ),
    (
        "load/supervisor/spawn.rs",
        "the load supervisor: each load's worker process, in its own group and cgroup",
    ),
    (
        "load/contain.rs",
        "the load supervisor's reaper process, which kills what is left of the loads",
    ),
    (
        "load/worker_kit.rs",
        "inside a load worker: the processes of the fork and hackbench loads, in the load's containment",
    ),
    (
        "load/generators/exec.rs",
        "inside a load worker: the exec load's program and its guardian, in the load's containment",
    ),
    (
        "load/generators/hackbench.rs",
        "inside a load worker: hackbench's senders and receivers (worker_kit::fork_child)",
    ),
    (
        "load/generators/fork.rs",
        "inside a load worker: the fork load's children (worker_kit::fork_child)",
    ),
    (
        "measure/wake/ipc/sender.rs",
        "the --ipc sender process of a measuring thread: part of the measurement, owned by its thread, with a parent-death signal",
    ),
    ("sys/process.rs", "the fork(2) wrapper itself"),
];

/// What starts a process. `fork_child(` covers the sys wrapper's callers.
const SPAWNS: &[&str] = &[
    "Command::new",
    "process::Command",
    "CommandExt",
    "fork_child(",
    "fork(",
    "vfork",
    "posix_spawn",
    "execv",
    "execl",
    "libc::clone",
];

/// Every `file:line: text` under `root` (a `src/` tree), outside [`ALLOWED`] and outside test
/// code, that starts a process.
fn spawns_outside_owners(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources(root) {
        let name = source.rel.as_str();
        if ALLOWED.iter().any(|(a, _)| *a == name) {
            continue;
        }
        for line in source.production() {
            if SPAWNS.iter().any(|s| line.code.contains(s)) {
                found.push(format!("src/{name}:{}: {}", line.n, line.code.trim()));
            }
        }
    }
    found
}

#[test]
fn processes_are_started_only_by_their_owners() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = spawns_outside_owners(&src);
    assert!(
        found.is_empty(),
        "a process is started outside its owners ({} lines); start the user's programs through session::children::Children (bounded, killed at the end, recorded), loads through the load supervisor:\n{}",
        found.len(),
        found.join("\n")
    );
    // Every allowed file exists: an entry left behind by a move would allow a stranger.
    for (file, _) in ALLOWED {
        assert!(
            src.join(file).is_file(),
            "ALLOWED names src/{file}, which is not there"
        );
    }
}

#[test]
fn the_scan_finds_a_planted_spawn_and_passes_owners_and_tests() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("session")).unwrap();
    std::fs::create_dir_all(root.join("report/deep")).unwrap();
    std::fs::write(
        root.join("session/children.rs"),
        "let c = Command::new(p).spawn();\n",
    )
    .unwrap();
    std::fs::write(
        root.join("report/fine.rs"),
        "// Command::new in a comment is not a start\nfn f() {}\n#[cfg(test)]\nmod tests {\n    fn t() {\n        std::process::Command::new(\"true\").status();\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("report/deep/bad.rs"),
        "use std::process::Command;\nfn f() {\n    let _ = Command::new(\"sh\").output();\n}\n#[cfg(test)]\nuse x;\nfn g() { unsafe { libc::fork() }; }\n",
    )
    .unwrap();
    std::fs::write(root.join("report/deep/tests.rs"), "Command::new(\"x\");\n").unwrap();
    // A test module's file, declared so (an undeclared `tests.rs` is production code).
    std::fs::write(
        root.join("report/deep/mod.rs"),
        "#[cfg(test)]\nmod tests;\n",
    )
    .unwrap();
    assert_eq!(
        spawns_outside_owners(root),
        [
            "src/report/deep/bad.rs:1: use std::process::Command;",
            "src/report/deep/bad.rs:3: let _ = Command::new(\"sh\").output();",
            "src/report/deep/bad.rs:7: fn g() { unsafe { libc::fork() }; }",
        ]
    );
}
