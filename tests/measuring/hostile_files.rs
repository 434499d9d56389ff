//! Issue 24, round 2 of the hostile tests: every file jitterlab writes is made new through a
//! directory's descriptor or written whole beside its target and renamed into place, never
//! through a link another user planted, never truncating a file under another name; every file
//! it reads is opened without blocking and refused when it is not what it should be.
//!
//! The attacker is a second, unprivileged user: its steps (planting links, renaming a result
//! directory, preparing `jitterlab-results`) run as `nobody` through
//! `setpriv --reuid=nobody --regid=nogroup --clear-groups`, against this test's jitterlab run
//! as root. Without root (or setpriv) those tests say so and pass without checking.
//!
//! D01's race (the result directory renamed and replaced between its making and a load log's)
//! is won every time by a hook of test builds: `JITTERLAB_TEST_WAIT_BEFORE_LOAD_LOG=FILE` makes
//! the run wait for FILE before it makes a load's log (src/load/supervisor/spawn.rs).
//!
//! `JITTERLAB_HOSTILE_BIN=PATH` runs these tests against another build (an older one, to see
//! them fail; D01 then races without the hook, and the attacker usually still wins).

use crate::common;

use common::attacker::{as_nobody, attacker_available};
use common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The jitterlab under test: this build, or `JITTERLAB_HOSTILE_BIN`.
fn jl() -> String {
    std::env::var("JITTERLAB_HOSTILE_BIN").unwrap_or_else(|_| bin().to_string())
}

fn jitterlab(args: &[&str]) -> Output {
    Command::new(jl()).args(args).output().unwrap()
}

/// A directory in /tmp with `mode` (0o777: any user makes and renames entries; 0o1777: as /tmp,
/// sticky).
fn shared_dir(mode: u32) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(mode)).unwrap();
    d
}

/// A root-owned file only root can reach, holding "precious": what the attacker aims at.
fn victim() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let v = d.path().join("victim");
    std::fs::write(&v, "precious\n").unwrap();
    (d, v)
}

fn intact(victim: &Path) {
    let now = std::fs::read_to_string(victim).unwrap();
    let start: String = now.chars().take(60).collect();
    assert_eq!(
        now, "precious\n",
        "the victim was written: now {start:?}..."
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A synthetic run (2 s on CPU 0) at `dir`.
fn known_run(dir: &Path) {
    write_known_run(dir, &[0], 2, 200, uniform_10_50, 7, 0);
}

/// Runs jitterlab with `args`, killed after `limit`: None when it had to be killed.
fn within(limit: Duration, args: &[&str], cwd: Option<&Path>) -> Option<Output> {
    let mut cmd = Command::new(jl());
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().unwrap();
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// D01: `nobody`, who can write the parent of --out, renames the new result directory and puts
/// one of their own in its place whose `loads/0-cpu.log` links to a root-owned file. The load
/// log is made through the descriptor of the directory root made (now renamed), so the victim
/// is untouched and the log is with the run's other files.
#[test]
fn d01_a_result_directory_replaced_under_the_run_gets_no_load_log_through_a_link() {
    let _g = exclusive();
    let test = "d01_a_result_directory_replaced_under_the_run_gets_no_load_log_through_a_link";
    if !attacker_available(test) || !realtime_available(test) {
        return;
    }
    let base = shared_dir(0o777);
    let (_v, victim) = victim();
    let out = base.path().join("run");
    let go = base.path().join("go");
    let mut child = Command::new(jl())
        .args([
            "run",
            "-D",
            "1s",
            "--cpus",
            &online_cpus()[0].to_string(),
            "--load",
            "cpu",
            "--quiet",
            "--out",
            s(&out),
        ])
        .env("JITTERLAB_TEST_WAIT_BEFORE_LOAD_LOG", &go)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while !out.exists() && Instant::now() < until && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(out.exists(), "the run made no result directory");
    as_nobody(&format!(
        "cd {b}; mv run moved; mkdir -p run/loads; ln -s {v} run/loads/0-cpu.log",
        b = s(base.path()),
        v = s(&victim)
    ));
    std::fs::write(&go, "").unwrap();
    let o = child.wait_with_output().unwrap();
    intact(&victim);
    let moved = base.path().join("moved");
    assert!(
        moved.join("loads/0-cpu.log").is_file(),
        "the log is in the directory the run made: {}",
        text(&o)
    );
    assert!(moved.join("run.json").is_file(), "{}", text(&o));
}

/// D06: a link another user planted at the -o name, in a sticky world-writable directory as
/// /tmp (fs.protected_symlinks=0 here lets the kernel follow it), is replaced, not written
/// through; so is a link inside an existing --plots directory; a --plots path that is a link
/// is refused (exit 2) before anything is written.
#[test]
fn d06_report_export_and_plots_never_write_through_a_planted_link() {
    if !attacker_available("d06_report_export_and_plots_never_write_through_a_planted_link") {
        return;
    }
    let base = shared_dir(0o1777);
    let (_v, victim) = victim();
    let run = tempfile::tempdir().unwrap();
    let run = run.path().join("run");
    known_run(&run);
    let (html, json) = (base.path().join("r.html"), base.path().join("e.json"));
    as_nobody(&format!(
        "ln -s {v} {h}; ln -s {v} {j}",
        v = s(&victim),
        h = s(&html),
        j = s(&json)
    ));
    for args in [
        vec!["report", s(&run), "-o", s(&html)],
        vec!["export", s(&run), "--format", "json", "-o", s(&json)],
    ] {
        let o = jitterlab(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        intact(&victim);
    }
    for out in [&html, &json] {
        let meta = std::fs::symlink_metadata(out).unwrap();
        assert!(
            meta.is_file() && meta.uid() == 0,
            "{} replaced",
            out.display()
        );
    }

    // The figures' names, from a report into a directory of root's own.
    let mine = tempfile::tempdir().unwrap();
    let o = jitterlab(&[
        "report",
        s(&run),
        "-o",
        s(&mine.path().join("r.html")),
        "--plots",
        s(&mine.path().join("plots")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let names: Vec<String> = std::fs::read_dir(mine.path().join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.is_empty());
    // nobody's existing directory with a link at every plot's name.
    let plots = base.path().join("plots");
    let links: Vec<String> = names
        .iter()
        .map(|n| format!("ln -s {} {}/{n}", s(&victim), s(&plots)))
        .collect();
    as_nobody(&format!("mkdir {}; {}", s(&plots), links.join("; ")));
    let html2 = mine.path().join("r2.html");
    let o = jitterlab(&["report", s(&run), "-o", s(&html2), "--plots", s(&plots)]);
    intact(&victim);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A --plots path that is a link.
    let linked = base.path().join("linked-plots");
    let target = tempfile::tempdir().unwrap();
    std::fs::set_permissions(target.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    as_nobody(&format!("ln -s {} {}", s(target.path()), s(&linked)));
    let html3 = mine.path().join("r3.html");
    let o = jitterlab(&["report", s(&run), "-o", s(&html3), "--plots", s(&linked)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("symbolic link"), "{}", text(&o));
    assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0);
    assert!(!html3.exists(), "nothing written");
}

/// D07: a hard link to a run's own file under another name is refused (by device and inode,
/// not by name), and a file hard-linked to the output name elsewhere keeps its contents: the
/// output is a new file renamed into place, never the old inode truncated.
#[test]
fn d07_a_hard_link_to_a_runs_file_is_refused_and_no_output_truncates_an_inode() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    known_run(&run);
    let before: Vec<Vec<u8>> = ["run.json", "latency.hlog", "events.jsonl"]
        .iter()
        .map(|f| std::fs::read(run.join(f)).unwrap())
        .collect();
    for (k, own) in ["run.json", "latency.hlog", "events.jsonl"]
        .iter()
        .enumerate()
    {
        let saved = base.path().join(format!("saved-{k}"));
        std::fs::hard_link(run.join(own), &saved).unwrap();
        for args in [
            vec!["report", s(&run), "-o", s(&saved)],
            vec!["export", s(&run), "--format", "json", "-o", s(&saved)],
        ] {
            let o = jitterlab(&args);
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
            assert!(t.contains("hard link"), "{args:?}: {t}");
        }
    }
    for (f, b) in ["run.json", "latency.hlog", "events.jsonl"]
        .iter()
        .zip(&before)
    {
        assert_eq!(&std::fs::read(run.join(f)).unwrap(), b, "{f} changed");
    }
    // Another file under the output's name: it keeps its contents.
    let other = base.path().join("notes.txt");
    std::fs::write(&other, "keep me\n").unwrap();
    let out = base.path().join("out.json");
    std::fs::hard_link(&other, &out).unwrap();
    let o = jitterlab(&["export", s(&run), "--format", "json", "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep me\n");
    assert!(std::fs::read_to_string(&out).unwrap().starts_with('{'));
}

/// D17: two `export -o` into one file at once leave one of the two exports whole, never a mix
/// (each streams about 6 MB; they used to truncate and write the same file together).
#[test]
fn d17_two_exports_into_one_file_leave_one_whole() {
    use jitterlab::format::samplelog::{SampleLogHeader, SampleLogWriter, SampleRecord};
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    known_run(&run);
    let mut w = SampleLogWriter::create(&run.join("samples.bin"), Default::default()).unwrap();
    let start = 5_000_000_000u64;
    w.begin(SampleLogHeader {
        clock_id: 1,
        start_ns: start,
    })
    .unwrap();
    for seq in 0..150_000u64 {
        w.write(&SampleRecord {
            cpu: 0,
            missed: 0,
            seq,
            expected_ns: start + seq * 1_000_000,
            latency_ns: 10_000 + (seq * 7919 % 40_000) as i64,
            irq_latency_ns: None,
        })
        .unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let whole = |format: &str| {
        let o = jitterlab(&["export", s(&run), "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        o.stdout
    };
    let (csv, columns) = (whole("csv"), whole("columns"));
    let out = base.path().join("out.txt");
    for round in 0..5 {
        let export = |format: &str| {
            Command::new(jl())
                .args(["export", s(&run), "--format", format, "-o", s(&out)])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (export("csv"), export("columns"));
        for c in [a, b] {
            let o = c.wait_with_output().unwrap();
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        }
        let got = std::fs::read(&out).unwrap();
        assert!(
            got == csv || got == columns,
            "round {round}: a mix of both ({} bytes; csv {}, columns {})",
            got.len(),
            csv.len(),
            columns.len()
        );
    }
    let left: Vec<_> = std::fs::read_dir(base.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
}

/// D08: a `jitterlab-results` another user prepared in a shared directory (theirs, or a link
/// to a place of their choice) is refused (exit 2, naming it and the fix), by the run and by
/// its dry run alike; nothing is written into it.
#[test]
fn d08_a_results_directory_prepared_by_another_user_is_refused() {
    let _g = exclusive();
    let test = "d08_a_results_directory_prepared_by_another_user_is_refused";
    if !attacker_available(test) || !realtime_available(test) {
        return;
    }
    let cpu = online_cpus()[0].to_string();
    for prepare in [
        "mkdir -m 0777 jitterlab-results",
        "mkdir -m 0755 jitterlab-results",
        "mkdir elsewhere; chmod 0777 elsewhere; ln -s elsewhere jitterlab-results",
    ] {
        let base = shared_dir(0o1777);
        as_nobody(&format!("cd {}; {prepare}", s(base.path())));
        for dry in [true, false] {
            let mut args = vec!["run", "-D", "1s", "--cpus", &cpu, "--quiet"];
            if dry {
                args.push("--dry-run");
            }
            let o = within(Duration::from_secs(60), &args, Some(base.path())).unwrap();
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{prepare} {args:?}: {t}");
            assert!(t.contains("jitterlab-results"), "{prepare}: {t}");
            assert!(t.contains("another user could replace"), "{prepare}: {t}");
            let inside = std::fs::read_dir(base.path().join("jitterlab-results"))
                .unwrap()
                .count();
            assert_eq!(inside, 0, "{prepare}: written into it");
        }
    }
    // Root's own jitterlab-results in the same kind of place is used.
    let base = shared_dir(0o1777);
    let o = within(
        Duration::from_secs(60),
        &["run", "-D", "1s", "--cpus", &cpu, "--quiet", "--dry-run"],
        Some(base.path()),
    )
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// D09: `--dry-run` refuses every --out the real run refuses, with the real run's exit code
/// (2: the path cannot hold results), for run and sweep.
#[test]
fn d09_dry_run_refuses_every_out_the_run_refuses() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    known_run(&run);
    let long = base.path().join("n".repeat(300));
    let outs = [
        PathBuf::from("/proc/jl"),
        PathBuf::from("/sys/jl"),
        PathBuf::from("/dev/null/x"),
        long,
        run.join("run.json/x"),
    ];
    for out in &outs {
        for cmd in [
            vec!["run", "--dry-run", "--cpus", "0", "-D", "1s"],
            vec![
                "sweep",
                "--dry-run",
                "--cpus",
                "0",
                "-D",
                "1s",
                "--load",
                "cpu:workers={}",
                "--levels",
                "1",
            ],
            vec!["run", "--cpus", "0", "-D", "1s"],
        ] {
            let mut args = cmd.clone();
            args.extend(["--out", s(out)]);
            let o = jitterlab(&args);
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
            assert!(!t.contains("every check passed"), "{args:?}: {t}");
            let shown: String = s(out).chars().take(40).collect();
            assert!(t.contains(&shown), "{args:?}: {t}");
        }
    }
}

/// D14: a FIFO where a regular file must be (a result directory's samples.bin, --scenario) is refused at once (exit 2) instead of blocking forever, and an
/// import of a FIFO no one writes ends.
#[test]
fn d14_a_fifo_is_refused_instead_of_blocking() {
    let mkfifo = crate::common::mkfifo;
    let base = tempfile::tempdir().unwrap();
    let limit = Duration::from_secs(20);
    // (A FIFO at latency.hlog or events.jsonl never blocked: report and export reach them
    // only after checking that they are files.)
    let run = base.path().join("run");
    known_run(&run);
    mkfifo(&run.join("samples.bin"));
    let args = ["export", s(&run), "--format", "csv"];
    let o = within(limit, &args, None).expect("export of a FIFO samples.bin blocked");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("FIFO"), "{t}");
    let fifo = base.path().join("scenario.toml");
    mkfifo(&fifo);
    let args = ["run", "--dry-run", "--cpus", "0", "--scenario", s(&fifo)];
    let o = within(limit, &args, None).expect("--scenario FIFO blocked");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("FIFO") && t.contains("regular file"), "{t}");
    // An import source may be a pipe (`import <(...)`); a FIFO no one writes reads as empty.
    let imported = base.path().join("imported");
    let args = ["import", s(&fifo), "--out", s(&imported)];
    let o = within(limit, &args, None).expect("import of a FIFO blocked");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
