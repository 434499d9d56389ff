//! Result files: never overwritten, never written through a link, never shared. A result
//! directory is made new by the run that writes it, a second run into it or onto its CPUs is
//! refused before it starts, an unusable --out is found before anything starts, readers keep
//! what a full disk left, and report/export never write over a run's own files.

use crate::common;

use common::*;
use jitterlab::results::synthetic::{SyntheticRun, write_run};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn spawn(args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the jitterlab binary runs")
}

/// Waits (at most 20 s) until `path` exists or `child` has ended.
fn wait_for(path: &Path, child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(20);
    while !path.exists() && Instant::now() < until {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The CPUs two concurrent runs measure: the first and the last online CPU (the same one on
/// a single-CPU machine).
fn two_cpus() -> (String, String) {
    let cpus = online_cpus();
    (cpus[0].to_string(), cpus.last().expect("a CPU").to_string())
}

/// The entries of a directory, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// H1: an existing directory (here: empty, where another user could have put it and later a
/// link) is never adopted; the link's target is never written.
#[test]
fn a_link_planted_in_an_existing_out_is_never_written_through() {
    let _g = exclusive();
    if !realtime_available("a_link_planted_in_an_existing_out_is_never_written_through") {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let victim = base.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let out = base.path().join("prepared");
    std::fs::create_dir(&out).unwrap();
    let (cpu, _) = two_cpus();
    let mut child = spawn(&[
        "run",
        "--duration",
        "2s",
        "--cpus",
        &cpu,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    // Once run.json is there, the final rewrite through `.run.json.tmp` is still to come.
    wait_for(&out.join("run.json"), &mut child);
    std::os::unix::fs::symlink(&victim, out.join(".run.json.tmp")).unwrap();
    let o = child.wait_with_output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("already exists (a directory)"), "{t}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        entries(&out),
        vec![".run.json.tmp"],
        "nothing written in it"
    );
}

/// H2: of two runs started together into one --out, one measures and the other is refused
/// before it starts (exit 2); the directory holds the one run only. (Both used to pass the
/// check, made before the directory, and mixed their files.)
#[test]
fn a_second_run_into_the_same_out_is_refused_before_it_starts() {
    let _g = exclusive();
    if !realtime_available("a_second_run_into_the_same_out_is_refused_before_it_starts") {
        return;
    }
    let (_base, out) = temp_out();
    let out_s = out.to_str().unwrap();
    let (cpu_a, cpu_b) = two_cpus();
    let run = |cpu: &str| {
        spawn(&[
            "run",
            "--duration",
            "2s",
            "--cpus",
            cpu,
            "--quiet",
            "--out",
            out_s,
        ])
    };
    let (a, b) = (run(&cpu_a), run(&cpu_b));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let (winner, (loser, loser_text)) = match (a.status.code(), b.status.code()) {
        (Some(0), Some(2)) => (&cpu_a, (&b, text(&b))),
        (Some(2), Some(0)) => (&cpu_b, (&a, text(&a))),
        codes => panic!(
            "one run measures, the other is refused: {codes:?}\n{}\n{}",
            text(&a),
            text(&b)
        ),
    };
    assert!(
        loser_text.contains(&format!("--out {out_s}: already exists")),
        "{loser_text}"
    );
    assert!(
        loser.stdout.is_empty(),
        "the refused run never measured: {loser_text}"
    );
    let cpus: Vec<String> = run_json(&out)["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cpu"].to_string())
        .collect();
    assert_eq!(
        cpus,
        vec![winner.clone()],
        "the measuring run's threads only"
    );
    let hlog = std::fs::read_to_string(out.join("latency.hlog")).unwrap();
    assert_eq!(
        hlog.matches("#[StartTime").count(),
        1,
        "one run's log: {hlog}"
    );
}

/// M6: a second run on a CPU another run is measuring is refused (exit 3, naming the other
/// run's pid, leaving nothing behind); with --allow-shared-cpus it measures and says so.
#[test]
fn a_second_run_on_a_measured_cpu_is_refused_naming_the_pid() {
    let _g = exclusive();
    if !realtime_available("a_second_run_on_a_measured_cpu_is_refused_naming_the_pid") {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let at = |n: &str| base.path().join(n).to_str().unwrap().to_string();
    let (cpu, _) = two_cpus();
    let mut first = spawn(&[
        "run",
        "--duration",
        "3s",
        "--cpus",
        &cpu,
        "--quiet",
        "--out",
        &at("first"),
    ]);
    wait_for(&base.path().join("first/run.json"), &mut first);
    let pid = format!("pid {}", first.id());

    let refused = jitterlab(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        &cpu,
        "--quiet",
        "--out",
        &at("second"),
    ]);
    let t = text(&refused);
    assert_eq!(refused.status.code(), Some(3), "{t}");
    assert!(
        t.contains(&format!("CPU {cpu} is being measured")) && t.contains(&pid),
        "{t}"
    );
    assert!(t.contains("--allow-shared-cpus"), "{t}");
    assert!(
        !base.path().join("second").exists(),
        "exit 3 leaves nothing"
    );

    let shared = jitterlab(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        &cpu,
        "--quiet",
        "--allow-shared-cpus",
        "--out",
        &at("shared"),
    ]);
    assert_eq!(shared.status.code(), Some(0), "{}", text(&shared));
    let run = run_json(&base.path().join("shared"));
    let warned = |w: &str| w.contains(&format!("CPU {cpu} was being measured")) && w.contains(&pid);
    assert!(
        run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| warned(w.as_str().unwrap())),
        "{}",
        run["warnings"]
    );
    let events = std::fs::read_to_string(base.path().join("shared/events.jsonl")).unwrap();
    assert!(events.lines().any(warned), "{events}");
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));

    // The lock ends with the run: the CPU is free again.
    let after = jitterlab(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        &cpu,
        "--quiet",
        "--out",
        &at("after"),
    ]);
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));
}

/// Runs `args` with `--out` set to each unusable path and expects exit 2 naming it, with
/// nothing made anywhere.
fn each_unusable_out_is_refused(command: &[&str], option: &str) {
    let base = tempfile::tempdir().unwrap();
    let dangling = base.path().join("dangling");
    std::os::unix::fs::symlink(base.path().join("target"), &dangling).unwrap();
    let long = base.path().join("n".repeat(300));
    let outs: [PathBuf; 3] = [dangling, PathBuf::from("/proc/jitterlab-x"), long];
    for out in &outs {
        let mut args = command.to_vec();
        args.extend(["--out", out.to_str().unwrap()]);
        let o = jitterlab(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        let shown: String = out.to_str().unwrap().chars().take(60).collect();
        assert!(t.contains(&format!("{option} {shown}")), "{args:?}: {t}");
        assert_eq!(
            entries(base.path()),
            vec!["dangling"],
            "{args:?}: made something"
        );
    }
}

/// L1/L2: --out a dangling link, in /proc, or with too long a name: exit 2 before anything
/// starts (it was exit 4 after the threads and PM QoS had started), for run, sweep and import.
#[test]
fn an_unusable_out_is_refused_before_anything_starts() {
    let _g = exclusive();
    let (cpu, _) = two_cpus();
    each_unusable_out_is_refused(&["run", "--duration", "1s", "--cpus", &cpu], "--out");
    each_unusable_out_is_refused(
        &[
            "sweep",
            "--load",
            "cpu:workers={}",
            "--levels",
            "1,2",
            "--duration",
            "1s",
            "--cpus",
            &cpu,
        ],
        "--out",
    );
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import/cyclictest.json");
    each_unusable_out_is_refused(&["import", source.to_str().unwrap()], "import --out");
}

/// Ground truth of the kind behind an unusable --out: where this user is not allowed to make
/// a directory (EACCES) the exit is 3, as docs/architecture.md says of permissions (before the errors were
/// typed it was 2); where the path is wrong (ENOENT in /proc, EROFS on a read-only mount, as
/// docs/user-guide.md says) it stays 2. `import` makes the directory without measuring.
#[test]
fn an_out_this_user_may_not_make_is_exit_3_and_a_wrong_one_exit_2() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import/cyclictest.json");
    let import_into = |out: &Path, as_nobody: bool| {
        let mut command = match as_nobody {
            true => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin()]);
                c
            }
            false => Command::new(bin()),
        };
        let o = command
            .arg("import")
            .arg(&source)
            .arg("--out")
            .arg(out)
            .output()
            .expect("jitterlab runs");
        (o.status.code(), text(&o))
    };
    let base = tempfile::tempdir().unwrap();
    // Readable and searchable by every user, writable by its owner only.
    let locked = base.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: getuid has no failure mode.
    let root = unsafe { libc::getuid() } == 0;
    if !root {
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    // Root may write anywhere: the refused user is then `nobody`, through setpriv.
    let (code, t) = import_into(&locked.join("run"), root);
    assert_eq!(code, Some(3), "EACCES: {t}");
    assert!(t.contains("Permission denied"), "{t}");
    assert!(!locked.join("run").exists());

    let (code, t) = import_into(Path::new("/proc/jitterlab-x"), false);
    assert_eq!(code, Some(2), "ENOENT: {t}");

    if !root {
        eprintln!("SKIPPED the EROFS case: mounting a read-only tmpfs needs root");
        return;
    }
    let ro = base.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=64k", "jitterlab-test"])
        .arg(&ro)
        .status()
        .is_ok_and(|s| s.success());
    assert!(mounted, "root mounts a read-only tmpfs");
    let (code, t) = import_into(&ro.join("run"), false);
    let _ = Command::new("umount").arg(&ro).status();
    assert_eq!(code, Some(2), "EROFS: {t}");
    assert!(t.contains("Read-only file system"), "{t}");
}

/// A constructed two-CPU run of 5 s at `dir`.
fn constructed_run(dir: &Path) {
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: 1_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 5_000_000_000,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 7,
    };
    write_run(dir, &run, |_, _, _| 20_000).unwrap();
}

/// M3: a latency.hlog whose last line was cut by a full disk is read up to that line by
/// report, compare and export, with a warning, instead of refusing the run.
#[test]
fn a_torn_hlog_tail_is_read_with_a_warning() {
    let base = tempfile::tempdir().unwrap();
    let (a, torn) = (base.path().join("a"), base.path().join("torn"));
    constructed_run(&a);
    constructed_run(&torn);
    let hlog = torn.join("latency.hlog");
    let mut bytes = std::fs::read(&hlog).unwrap();
    // Half of the last interval's line, as a write cut by ENOSPC leaves it.
    let last = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    bytes.truncate(last + (bytes.len() - last) / 2);
    std::fs::write(&hlog, &bytes).unwrap();
    let warned = |o: &Output| {
        let t = text(o);
        assert_eq!(o.status.code(), Some(0), "{t}");
        assert!(t.contains("latency.hlog: the last line is torn"), "{t}");
    };

    let html = base.path().join("r.html");
    let o = jitterlab(&[
        "report",
        torn.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    warned(&o);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("the last line is torn"),
        "shown in the report"
    );

    warned(&jitterlab(&[
        "compare",
        a.to_str().unwrap(),
        torn.to_str().unwrap(),
    ]));
    let o = jitterlab(&["export", torn.to_str().unwrap(), "--format", "json"]);
    warned(&o);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(json["warnings"].to_string().contains("torn"), "{json}");
}

/// L5: report and export never write over a result directory's own files, and every output
/// path is checked before anything is written.
#[test]
fn outputs_never_overwrite_a_result_directory() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    constructed_run(&run);
    let run_s = run.to_str().unwrap();
    let before = std::fs::read(run.join("run.json")).unwrap();
    let link = base.path().join("link.html");
    std::os::unix::fs::symlink(run.join("run.json"), &link).unwrap();
    for target in [run.join("run.json"), run.join("latency.hlog"), link.clone()] {
        let target = target.to_str().unwrap();
        for args in [
            vec!["report", run_s, "-o", target],
            vec!["export", run_s, "--format", "json", "-o", target],
        ] {
            let o = jitterlab(&args);
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
            assert!(t.contains("would destroy the results"), "{args:?}: {t}");
        }
    }
    assert_eq!(std::fs::read(run.join("run.json")).unwrap(), before);

    // A --plots directory that cannot be made: refused before the report is written.
    let html = base.path().join("r.html");
    for plots in [
        run.join("run.json/plots"),
        PathBuf::from("/proc/jitterlab-x"),
    ] {
        let o = jitterlab(&[
            "report",
            run_s,
            "-o",
            html.to_str().unwrap(),
            "--plots",
            plots.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("--plots"), "{}", text(&o));
        assert!(
            !html.exists(),
            "{}: the report was written",
            plots.display()
        );
    }
}

/// M3: when the disk fills up during the run (a 512 KiB tmpfs), the run stops, prints its
/// summary, leaves run.json `failed` with the reason and no temporary file, and exits 4.
#[test]
fn a_full_disk_ends_with_the_summary_and_a_failed_run_json() {
    let _g = exclusive();
    if !realtime_available("a_full_disk_ends_with_the_summary_and_a_failed_run_json") {
        return;
    }
    // SAFETY: getuid has no failure mode.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("SKIPPED a_full_disk_ends_with_the_summary: mounting a tmpfs needs root");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let mount = base.path().join("small");
    std::fs::create_dir(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "jitterlab-test"])
        .arg(&mount)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("SKIPPED a_full_disk_ends_with_the_summary: cannot mount a tmpfs");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.clone());
    let out = mount.join("run");
    let (cpu, _) = two_cpus();
    // 10 000 samples/s of 32 bytes fill the disk within a second or two.
    let o = jitterlab(&[
        "run",
        "--duration",
        "20s",
        "--interval",
        "100us",
        "--samples",
        "--cpus",
        &cpu,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    assert!(t.contains("No space left on device"), "{t}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        // The per-CPU table's header names the wakeups (issue 30: "samples" before).
        stdout.contains("wakeups") && stdout.contains(&format!("Results: {}", out.display())),
        "the summary is printed: {t}"
    );
    let run = run_json(&out);
    assert_eq!(run["ended"], "failed", "{t}");
    assert!(
        run["end_reason"]
            .as_str()
            .unwrap()
            .contains("No space left on device")
    );
    assert!(run["threads"][0]["samples"].as_u64().unwrap() > 0);
    assert!(!out.join(".run.json.tmp").exists());
}

/// A run.json of a newer format than this jitterlab's is refused by every reader (exit 2), with
/// both formats named and the fix, whether or not the rest of the record still parses; an
/// older or equal format reads as before.
#[test]
fn a_newer_format_is_refused_with_both_formats_named() {
    let base = tempfile::tempdir().unwrap();
    let format = jitterlab::format::FORMAT;
    let newer = format + 1;
    let same_shape = base.path().join("same-shape");
    let new_shape = base.path().join("new-shape");
    constructed_run(&same_shape);
    constructed_run(&new_shape);
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(same_shape.join("run.json")).unwrap()).unwrap();
    record["format"] = newer.into();
    std::fs::write(same_shape.join("run.json"), record.to_string()).unwrap();
    std::fs::write(
        new_shape.join("run.json"),
        format!(r#"{{"format": {newer}, "runs": {{"renamed": true}}}}"#),
    )
    .unwrap();
    for dir in [&same_shape, &new_shape] {
        let d = dir.to_str().unwrap();
        let report = base.path().join("report.html");
        for args in [
            vec!["report", d, "-o", report.to_str().unwrap()],
            vec!["compare", d, d],
            vec!["export", d, "--format", "json"],
        ] {
            let o = jitterlab(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
            let said = text(&o);
            for part in [
                format!("is in result format {newer}, newer than format {format}"),
                format!("this jitterlab ({})", env!("CARGO_PKG_VERSION")),
                "use a newer jitterlab to read it".to_string(),
            ] {
                assert!(said.contains(&part), "{args:?} should say {part:?}: {said}");
            }
        }
    }
    // The current format reads as before.
    let current = base.path().join("current");
    constructed_run(&current);
    let o = jitterlab(&["export", current.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
