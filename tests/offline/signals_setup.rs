//! SIGINT and SIGTERM set up in one place, with both blocked while the handlers go in (issue 39
//! R17: a signal during the installation was lost, and a `load` ran its full 5 s). The guard:
//! every subcommand is classified in `commands::changes_the_system` (no catch-all), the ones
//! that change the system install the handlers through `session::signals::install` in
//! `commands::dispatch`, and no other code registers a SIGINT/SIGTERM handler. The behaviour:
//! a SIGINT pending when `jitterlab load` starts (blocked by its parent: what a signal during
//! the blocked installation is) stops it at once. tests/measuring/signal_setup.rs does the same
//! for the measuring commands.

use crate::common::signals::with_sigint_pending;
use crate::common::text;
use crate::scan::sources;
use std::path::Path;
use std::time::Duration;

/// Files that may register a signal handler through signal-hook, each with the reason.
const ALLOWED: &[(&str, &str)] = &[
    (
        "session/signals.rs",
        "the one place SIGINT/SIGTERM are installed",
    ),
    (
        "load/worker.rs",
        "the load worker's own SIGTERM (a child process, never a command of the user)",
    ),
];

/// Every `file:line: text` under `root` (a `src/` tree) outside [`ALLOWED`] that registers a
/// handler through signal-hook.
fn handler_registrations(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources(root) {
        let rel = &source.rel;
        if ALLOWED.iter().any(|(f, _)| f == rel) {
            continue;
        }
        // Every line as written, comments and tests included.
        for (n, line) in source.text.lines().enumerate() {
            let registers = [
                "::register",
                "register_conditional",
                "signal_hook::iterator",
            ]
            .iter()
            .any(|w| line.contains(w));
            if registers && line.contains("signal_hook") {
                found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// The variants of `cli::Command`.
fn command_variants(root: &Path) -> Vec<String> {
    let cli = std::fs::read_to_string(root.join("cli/mod.rs")).unwrap();
    let body = &cli[cli.find("pub enum Command {").expect("cli::Command")..];
    let body = &body[..body.find("\n}").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|l| l[..l.find(['(', ',', ' ']).unwrap_or(l.len())].to_string())
        .collect()
}

#[test]
fn signal_handlers_are_installed_in_one_place_for_every_command_that_changes_the_system() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let others = handler_registrations(&root);
    assert!(
        others.is_empty(),
        "signal handlers registered outside session/signals.rs (use session::signals::catch or \
         stop_flag):\n{}",
        others.join("\n")
    );
    let commands = std::fs::read_to_string(root.join("commands/mod.rs")).unwrap();
    let dispatch = &commands[commands.find("pub fn dispatch").expect("dispatch")..];
    let dispatch = &dispatch[..dispatch.find("match command").unwrap()];
    assert!(
        dispatch.contains("if changes_the_system(&command)")
            && dispatch.contains("crate::session::signals::install()?"),
        "dispatch no longer installs the handlers first:\n{dispatch}"
    );
    let classify = &commands[commands
        .find("fn changes_the_system")
        .expect("commands::changes_the_system")..];
    let classify = &classify[..classify.find("\n}").unwrap()];
    assert!(
        !classify.contains("_ =>") && !classify.contains("_ |"),
        "changes_the_system must name every subcommand, without a catch-all"
    );
    let variants = command_variants(&root);
    assert!(variants.len() >= 15, "{variants:?}");
    for v in &variants {
        assert!(
            classify.contains(&format!("Command::{v}(")),
            "subcommand {v} is not classified in commands::changes_the_system"
        );
    }
    // The commands that change the system, named by the docs' promise (user-guide.md,
    // "Signals"), are among those that install them.
    let installing = &classify[..classify.find("=> true").unwrap()];
    for v in [
        "Run",
        "Noise",
        "Monitor",
        "Sweep",
        "Load",
        "Cyclictest",
        "Oslat",
        "Timerlat",
    ] {
        assert!(
            installing.contains(&format!("Command::{v}(")),
            "{v} must install the SIGINT/SIGTERM handlers"
        );
    }
}

/// R17 for `load`: it measures nothing, so the offline tier runs it (a sleeping program, not
/// a spinner). Before the fix the signal stayed blocked and `load` ran its whole --duration.
#[test]
fn a_sigint_pending_when_load_starts_stops_it_at_once() {
    let (took, o) = with_sigint_pending(
        &["load", "exec:sleep 60", "--duration", "30s"],
        Duration::from_secs(20),
    );
    eprintln!("load with SIGINT pending ended after {took:?}");
    assert!(
        took < Duration::from_secs(10),
        "load ran on for {took:?} with a SIGINT pending: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Eleventh hostile re-run, L11-b: a SIGINT during `run --dry-run` was caught by the handler
/// (which only sets a flag), no session took it up, and the plan was printed with exit 0 as
/// if every check had passed. A stop request that no run takes up ends the command as
/// interrupted: 130, said on stderr, no plan on stdout. A dry run measures nothing: offline.
#[test]
fn a_sigint_during_a_dry_run_ends_it_as_interrupted() {
    let (took, o) = with_sigint_pending(
        &[
            "run",
            "--dry-run",
            "-D",
            "1s",
            "--cpus",
            "0",
            "--allow-shared-cpus",
        ],
        Duration::from_secs(20),
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "after {took:?}: {}", text(&o));
    assert!(
        !stdout.contains("every check passed"),
        "the plan was printed as checked: {}",
        text(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("interrupted by SIGINT"),
        "{}",
        text(&o)
    );
}

/// Tenth hostile re-run, L10-e: an interrupted sweep said so on stderr only; sweep.json had no
/// `ended`, and its cut-short level's row read like any other. A load-only sweep measures
/// nothing (a sleeping program per level): offline. With SIGINT pending at its start, its
/// first level stops at once and sweep.json says `interrupted`, by which signal, at which
/// level, and which levels did not run.
#[test]
fn an_interrupted_sweep_says_so_in_sweep_json() {
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("sweep");
    let (took, o) = with_sigint_pending(
        &[
            "sweep",
            "--no-measure",
            "--load",
            "exec:sleep {}",
            "--levels",
            "30,40",
            "--duration",
            "20s",
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert!(
        took < Duration::from_secs(15),
        "took {took:?}: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(sweep["ended"], "interrupted", "{sweep:#}");
    let reason = sweep["end_reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("stopped by SIGINT at level 30 (1 of 2)")
            && reason.contains("level(s) 40 not run"),
        "{sweep:#}"
    );
    assert_eq!(sweep["rows"].as_array().map(Vec::len), Some(1), "{sweep:#}");
}
