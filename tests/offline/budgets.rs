//! Issue 39's writer-side budgets and the lows of its sixth re-run, checked before anything
//! measures: what a run is refused for (exit 2), said with the figure and the fix.

use crate::common::*;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `run --dry-run -D DURATION -i 20us --cpus 0 --summary-every EVERY`.
fn summaries_dry_run(duration: &str, every: &str) -> std::process::Output {
    jitterlab(&[
        "run",
        "--dry-run",
        "-D",
        duration,
        "-i",
        "20us",
        "--cpus",
        "0",
        "--summary-every",
        every,
    ])
}

/// E1: `--summary-every` too small for the run's length and CPUs is refused before the run,
/// naming the size and the smallest block that fits; one that fits is not.
#[test]
fn summaries_past_the_events_budget_are_refused_before_the_run() {
    // 60 s at 20 us on one CPU: 3 000 000 blocks of one sample, about 768 MB: fits.
    let fits = summaries_dry_run("60s", "1");
    assert_eq!(fits.status.code(), Some(0), "{}", stderr(&fits));
    // 10 min: about 7.7 GB, past the 1 GiB events.jsonl keeps for them.
    let over = summaries_dry_run("10m", "1");
    let e = stderr(&over);
    assert_eq!(over.status.code(), Some(2), "{e}");
    assert!(e.contains("--summary-every 1"), "{e}");
    assert!(e.contains("7 680 000 000 bytes"), "{e}");
    assert!(e.contains("1 GiB"), "{e}");
    // 30 000 000 wakeups x 256 bytes / 1 GiB: blocks of 8 samples fit, 7 do not.
    assert!(e.contains("give --summary-every 8 or more"), "{e}");
    let eight = summaries_dry_run("10m", "8");
    assert_eq!(eight.status.code(), Some(0), "{}", stderr(&eight));
}

/// L5: two outputs of one command naming one file are refused before the run (exit 2),
/// naming both options; nothing is measured or made.
#[test]
fn two_outputs_naming_one_file_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("same");
    let run = tmp.path().join("run");
    let out = jitterlab(&[
        "cyclictest",
        "-q",
        "-l",
        "100",
        "-h",
        "20",
        &format!("--json={}", file.display()),
        &format!("--histfile={}", file.display()),
        "--jitterlab-out",
        run.to_str().unwrap(),
    ]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("--histfile") && e.contains("--json"), "{e}");
    assert!(e.contains("names the same file"), "{e}");
    assert!(!file.exists() && !run.exists());
}

/// L6-a: a negative duration reaches the option's own check: out of range, exit 2, for every
/// duration-valued option (not an mlock hint, not clap's "unexpected argument").
#[test]
fn a_negative_duration_is_out_of_range() {
    for (argv, said) in [
        (
            &[
                "run",
                "--on-threshold",
                "continue",
                "--action-gap",
                "-1ms",
                "--dry-run",
            ][..],
            "--action-gap -1ms: out of range: give 1ms to 24h",
        ),
        (
            &[
                "run",
                "--on-end",
                "continue",
                "--action-wait",
                "-1s",
                "--dry-run",
            ][..],
            "--action-wait -1s: out of range: give 0s",
        ),
        (
            &["run", "--log-interval", "-1s", "--dry-run"][..],
            "out of range",
        ),
        (&["run", "--under", "-5us", "--dry-run"][..], "out of range"),
    ] {
        let out = jitterlab(argv);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {e}");
        assert!(e.contains(said), "{argv:?}: {e}");
        assert!(
            !e.contains("memory is locked") && !e.contains("unexpected argument"),
            "{e}"
        );
    }
}

/// L6-d: an unprivileged `--dry-run` lists every permission the plan needs and lacks in one
/// refusal (exit 3): memory locking, the policy, and the options' own (the trace, the cpuset
/// hierarchy), not only the first two.
#[test]
fn every_missing_permission_of_the_options_is_listed_at_once() {
    use std::os::unix::fs::PermissionsExt;
    if !crate::common::attacker::attacker_available("every_missing_permission") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", bin()])
        .args([
            "run",
            "--trace",
            "--cpuset-partition",
            "--dry-run",
            "-D",
            "1s",
            "-o",
        ])
        .arg(tmp.path().join("run"))
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{e}");
    assert!(e.contains("permissions are missing"), "{e}");
    assert!(e.contains("--trace: the kernel's trace needs root"), "{e}");
    if std::path::Path::new("/sys/fs/cgroup/cpuset/cpuset.cpus").is_file() {
        assert!(
            e.contains("--cpuset-partition: cannot make a cpuset"),
            "{e}"
        );
    }
}

/// L6-c: an input path through another user's symbolic link (a directory part, or the run
/// itself) is refused (exit 2), naming the link and its owner, by report, export and compare
/// alike; the same path through root's own link is read.
#[test]
fn inputs_follow_no_other_users_link() {
    use jitterlab::results::synthetic::{SyntheticRun, write_run};
    if !crate::common::attacker::attacker_available("inputs_follow_no_other_users_link") {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let secret = base.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    let run = SyntheticRun {
        cpus: vec![0],
        interval_ns: 1_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 2_000_000_000,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 5,
    };
    write_run(&secret.join("run"), &run, |_, _, _| 20_000).unwrap();
    // nobody's link to root's directory, in a directory part and as the run itself.
    let planted = base.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::os::unix::fs::symlink(&secret, planted.join("dir")).unwrap();
    std::os::unix::fs::symlink(secret.join("run"), planted.join("run")).unwrap();
    for link in ["dir", "run"] {
        std::os::unix::fs::lchown(planted.join(link), Some(65534), Some(65534)).unwrap();
    }
    let report = base.path().join("r.html");
    for input in [planted.join("dir/run"), planted.join("run")] {
        let input = input.to_str().unwrap();
        for argv in [
            vec!["report", input, "-o", report.to_str().unwrap()],
            vec!["export", input, "--format", "json"],
            vec!["compare", input, input],
        ] {
            let out = jitterlab(&argv);
            let e = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{argv:?}: {e}");
            assert!(e.contains("is a symbolic link of"), "{argv:?}: {e}");
            assert!(e.contains("nobody"), "{argv:?}: {e}");
        }
    }
    assert!(!report.exists());
    // Root's own link is followed.
    std::os::unix::fs::symlink(&secret, base.path().join("mine")).unwrap();
    let mine = base.path().join("mine/run");
    let out = jitterlab(&["export", mine.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// L7-c: a standard output closed at the start (`>&-`) is said once on stderr (what the command
/// prints goes nowhere); `> /dev/null` is not taken for it.
#[test]
fn a_closed_standard_output_is_said() {
    use std::os::unix::process::CommandExt;
    let run = |close: bool| {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(["run", "--dry-run", "-D", "1s"]);
        cmd.stdout(std::process::Stdio::null());
        if close {
            // SAFETY: close(2) between fork and exec, on the child's own descriptor.
            unsafe {
                cmd.pre_exec(|| {
                    libc::close(1);
                    Ok(())
                });
            }
        }
        cmd.output().unwrap()
    };
    let closed = run(true);
    let e = stderr(&closed);
    assert!(
        e.contains("standard output was closed when jitterlab started"),
        "{e}"
    );
    let null = run(false);
    assert!(
        !stderr(&null).contains("standard output was closed"),
        "{}",
        stderr(&null)
    );
}
