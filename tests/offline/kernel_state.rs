//! The journal boundary (issue 39): kernel state a run changes that outlives the process (a
//! cpuset, cpuidle states, a tracing instance, a load cgroup) is journaled first (`src/journal.rs`) and undone at the next
//! start from the journal alone, never found by a name; and nothing but the CPU locks is read
//! from the shared, world-writable `/run/jitterlab`. This test fails when new code writes the
//! kernel's state without journaling it, or names `/run/jitterlab` outside the two files that
//! own it.

use crate::scan::sources;
use std::path::Path;

/// Files that may name `"/run/jitterlab...` in code: the CPU locks (the shared directory) and
/// the journals (root's own directory, other users' under the shared one).
const RUN_DIR_OWNERS: &[&str] = &["session/cpulock.rs", "journal.rs"];

/// Files that name the kernel's state and write something without journaling, each with why.
const NOT_JOURNALED: &[(&str, &str)] = &[
    (
        "commands/rt_json.rs",
        "reads /sys/kernel/realtime; what it writes is the user's file",
    ),
    (
        "commands/cyclictest/mod.rs",
        "reads the CPUs' sysfs; what it writes is the user's histogram file",
    ),
    (
        "doctor/checks/fixtures.rs",
        "writes fixture trees for the doctor's tests",
    ),
    ("journal.rs", "the mechanism itself (reads the boot id)"),
    (
        "load/contain/cpuset.rs",
        "journaled through contain.rs `make_journaled` (a load-cgroup journal naming `cpuset DIR`, undone by contain::undo); the rest it writes is below that cpuset or in the loads' journaled cgroup v2",
    ),
    (
        "trace/bpf/refusal.rs",
        "reads /proc/sys settings for the refusal's advice; what it writes is the verifier's log, a new file in the temporary directory",
    ),
];

/// Where the kernel keeps state that survives the process.
const STATE: &[&str] = &[
    "\"/sys/",
    "\"/proc/sys/",
    "CPU_ROOT",
    "CPUSET_V1",
    // A cgroup's control files, wherever the hierarchy is mounted (the loads' cgroups).
    "\"cgroup.",
];
/// What changes it.
const WRITES: &[&str] = &[
    "fs::write(",
    ".write(true)",
    "create_dir(",
    "remove_dir(",
    "make_dir",
];

/// The breaches under `root` (a `src/` tree), one line each.
fn breaches(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources(root) {
        let rel = source.rel.as_str();
        if rel.starts_with("sys/") {
            continue;
        }
        // Its production code (`scan.rs`): comments and test code left out.
        let code = source.production_text();
        if code.contains("\"/run/jitterlab") && !RUN_DIR_OWNERS.contains(&rel) {
            found.push(format!(
                "src/{rel}: names /run/jitterlab: use cpulock::LOCK_DIR for the locks, journal::TrustedDir for anything read back later"
            ));
        }
        let changes_state =
            STATE.iter().any(|s| code.contains(s)) && WRITES.iter().any(|w| code.contains(w));
        if changes_state
            && !code.contains("Journal::create(")
            && !NOT_JOURNALED.iter().any(|(f, _)| *f == rel)
        {
            found.push(format!(
                "src/{rel}: writes where the kernel keeps state that outlives the process, with no journal: take a session::journal::Journal before the change and add its kind to KINDS in session/stale.rs"
            ));
        }
    }
    found
}

#[test]
fn kernel_state_is_journaled_and_run_jitterlab_named_by_its_owners() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = breaches(&src);
    assert!(
        found.is_empty(),
        "the journal boundary is bypassed ({}):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_planted_breaches_and_passes_journaled_code() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("session")).unwrap();
    std::fs::write(
        root.join("session/good.rs"),
        "// writes \"/run/jitterlab/x\" in a comment\nlet j = Journal::create(&d, KIND, &l)?;\nfs::write(CPUSET_V1, \"1\")?;\n#[cfg(test)]\nmod t { const X: &str = \"/run/jitterlab\"; }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("session/reads.rs"),
        "let v = fs::read_to_string(\"/sys/kernel/x\")?;\n",
    )
    .unwrap();
    std::fs::write(
        root.join("session/bad.rs"),
        "fs::write(\"/sys/devices/system/cpu/cpu1/cpuidle/state2/disable\", \"1\")?;\nlet d = \"/run/jitterlab/mine\";\n",
    )
    .unwrap();
    let found = breaches(root);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found.iter().all(|f| f.starts_with("src/session/bad.rs: ")),
        "{found:#?}"
    );
}

/// Why `commands/mod.rs` (the text of `src/commands/mod.rs`) breaks "every command that can
/// journal undoes the killed runs' journals at its start", or None. The commands that change
/// the system (`changes_the_system`, which names every subcommand: signals_setup.rs) are
/// those that can journal; `dispatch` must call `session::stale::undo_at_start` for them,
/// before the command runs; `Journal::create` must refuse (in every debug build, so in every
/// test of a command) to journal in a process that did not; and a session must take what the
/// start undid for its run.json, not undo on its own.
fn start_undo_breach(commands: &str, journal: &str, start: &str) -> Option<String> {
    let dispatch = &commands[commands.find("pub fn dispatch").expect("dispatch")..];
    let dispatch = &dispatch[..dispatch.find("match command").expect("dispatch's match")];
    let block = dispatch
        .find("if changes_the_system(&command) {")
        .map(|i| &dispatch[i..])
        .map(|b| &b[..b.find("\n    }").unwrap_or(b.len())]);
    if !block.is_some_and(|b| b.contains("crate::session::stale::undo_at_start();")) {
        return Some("commands::dispatch does not call crate::session::stale::undo_at_start() in `if changes_the_system(&command) {` before the command runs".into());
    }
    let create = &journal[journal
        .find("pub(crate) fn create(")
        .expect("Journal::create")..];
    let create = &create[..create.find("\n    }\n").unwrap()];
    if !create.contains("START_UNDONE.load(") || !create.contains("debug_assert!(") {
        return Some("Journal::create no longer asserts that the process undid the killed runs' journals first".into());
    }
    if !start.contains("stale::take_start_warnings()") || start.contains("undo_killed_runs") {
        return Some("a session must record what the command's start undid (stale::take_start_warnings), not undo on its own".into());
    }
    None
}

#[test]
fn every_command_that_can_journal_undoes_killed_runs_at_its_start() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let read = |f: &str| std::fs::read_to_string(src.join(f)).unwrap();
    let (commands, journal, start) = (
        read("commands/mod.rs"),
        read("journal.rs"),
        read("session/start.rs"),
    );
    if let Some(breach) = start_undo_breach(&commands, &journal, &start) {
        panic!("{breach}");
    }
    // The check finds a dispatch without the call, or with it outside the block.
    let without = commands.replace("crate::session::stale::undo_at_start();", "");
    assert!(start_undo_breach(&without, &journal, &start).is_some());
    let outside = commands.replace(
        "        crate::session::stale::undo_at_start();\n    }",
        "    }\n    crate::session::stale::undo_at_start();",
    );
    assert_ne!(outside, commands, "the planted breach did not apply");
    assert!(start_undo_breach(&outside, &journal, &start).is_some());
    let unguarded = journal.replace("START_UNDONE.load(", "START_UNDONE.swap(");
    assert!(start_undo_breach(&commands, &unguarded, &start).is_some());
}
