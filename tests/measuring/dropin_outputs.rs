//! The files the drop-ins' options name (`cyclictest --json=FILE --histfile=FILE`, `oslat
//! --json=FILE`) are written by jitterlab's one writer (issue 39): another user's link planted at
//! the name in a sticky world-writable directory is replaced, never written through (R01); and a
//! path that cannot be written is refused with exit 2 before anything is measured or any result
//! directory made (R13); a FIFO whose reader does not read holds a drop-in no longer than a SIGINT
//! (N7).

use crate::common::{exclusive, jitterlab, text};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// The user the planted links belong to (nobody).
const OTHER_UID: u32 = 65534;

/// A sticky world-writable directory (as /tmp) under `base`.
fn sticky_dir(base: &Path) -> std::path::PathBuf {
    let shared = base.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    shared
}

/// Plants, at `at`, a link to a new file `victim` holding "precious", the link owned by
/// [`OTHER_UID`]; false when this process may not give it away (not root).
fn plant(at: &Path, victim: &Path) -> bool {
    std::fs::write(victim, "precious").unwrap();
    std::os::unix::fs::symlink(victim, at).unwrap();
    std::os::unix::fs::lchown(at, Some(OTHER_UID), Some(OTHER_UID)).is_ok()
}

/// The victim is untouched and `at` is a regular file of this user's holding `expected`.
fn replaced(at: &Path, victim: &Path, expected: &str) {
    assert_eq!(std::fs::read_to_string(victim).unwrap(), "precious");
    let meta = std::fs::symlink_metadata(at).unwrap();
    assert!(meta.is_file(), "{} is a file of its own", at.display());
    assert_eq!(meta.uid(), unsafe { libc::geteuid() });
    let written = std::fs::read_to_string(at).unwrap();
    assert!(written.contains(expected), "{}: {written}", at.display());
}

#[test]
fn drop_ins_replace_another_users_link_never_write_through_it() {
    let tmp = tempfile::tempdir().unwrap();
    let shared = sticky_dir(tmp.path());
    let p = |name: &str| tmp.path().join(name);
    let s = |name: &str| shared.join(name);
    if !plant(&s("ct.json"), &p("victim-json"))
        || !plant(&s("hist.txt"), &p("victim-hist"))
        || !plant(&s("oslat.json"), &p("victim-oslat"))
    {
        eprintln!(
            "skipped drop_ins_replace_another_users_link_never_write_through_it: planting another user's link needs root"
        );
        return;
    }
    let _g = exclusive();
    let arg = |opt: &str, path: &Path| format!("{opt}={}", path.display());
    let out = jitterlab(&[
        "cyclictest",
        "-q",
        "-l",
        "200",
        "-i",
        "1000",
        "-h",
        "20",
        &arg("--histfile", &s("hist.txt")),
        &arg("--json", &s("ct.json")),
        "--jitterlab-out",
        p("ct-run").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    replaced(&s("ct.json"), &p("victim-json"), "\"num_threads\"");
    replaced(&s("hist.txt"), &p("victim-hist"), "# Total:");
    let out = jitterlab(&[
        "oslat",
        "-q",
        "-D",
        "1",
        "-c",
        "0",
        &arg("--json", &s("oslat.json")),
        "--jitterlab-out",
        p("oslat-run").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    replaced(&s("oslat.json"), &p("victim-oslat"), "\"num_threads\"");
}

#[test]
fn a_drop_in_output_that_cannot_be_written_is_refused_before_measuring() {
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let missing = tmp.path().join("missing/out.json");
    let cases: [(Vec<String>, &str); 3] = [
        (
            vec!["cyclictest".into(), format!("--json={}", missing.display())],
            "--json",
        ),
        (
            vec![
                "cyclictest".into(),
                "-h".into(),
                "10".into(),
                "--histfile=/proc/jitterlab-hist.txt".into(),
            ],
            "on proc",
        ),
        (
            vec!["oslat".into(), format!("--json={}", missing.display())],
            "--json",
        ),
    ];
    for (mut args, said) in cases {
        args.extend(["-D", "10", "--jitterlab-out", run.to_str().unwrap()].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = Instant::now();
        let out = jitterlab(&args);
        let took = started.elapsed();
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
        assert!(all.contains(said), "{args:?}: {all}");
        // Refused before the 10 s measurement, and before its result directory was made.
        assert!(took < Duration::from_secs(5), "{args:?} took {took:?}");
        assert!(!run.exists(), "{args:?} made {}", run.display());
    }
}

#[test]
fn a_drop_in_writing_into_a_fifo_no_one_reads_stops_at_sigint() {
    // Issue 39 N7: `cyclictest --histfile=FIFO` whose reader holds it open and never reads
    // blocked in the pipe write for ever, past SIGINT and SIGTERM.
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("hist.fifo");
    crate::common::mkfifo(&fifo);
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let run = tmp.path().join("run");
    let _g = exclusive();
    let child = std::process::Command::new(crate::common::bin())
        .args(["cyclictest", "-q", "-D", "1", "-t", "-h", "20000"])
        .arg(format!("--histfile={}", fifo.display()))
        .arg(format!("--jitterlab-out={}", run.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    stops_while_its_reader_does_not_read(child, reader.as_fd(), libc::SIGINT);
}

#[test]
fn a_drop_in_writing_to_a_stdout_no_one_reads_stops_at_sigterm() {
    // Fourth hostile re-run, N16: cyclictest's histogram on standard output (rt-tests'
    // default) into a pipe held open and not read (a stalled `| ssh`) ignored the first
    // SIGINT and every SIGTERM.
    let tmp = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    let run = tmp.path().join("run");
    let _g = exclusive();
    let child = std::process::Command::new(crate::common::bin())
        .args(["cyclictest", "-q", "-D", "1", "-t", "-h", "20000"])
        .arg(format!("--jitterlab-out={}", run.display()))
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    stops_while_its_reader_does_not_read(child, reader.as_fd(), libc::SIGTERM);
}

/// Waits until `child` has filled the pipe read by `reader` (the measurement is over), sees
/// it wait for room, sends `signal`: the child ends within 1.5 s, exit 4, saying why.
fn stops_while_its_reader_does_not_read(
    mut child: std::process::Child,
    reader: std::os::fd::BorrowedFd,
    signal: libc::c_int,
) {
    let pending = || {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD into an int of ours, on a descriptor the caller keeps open.
        let rc = unsafe { libc::ioctl(reader.as_raw_fd(), libc::FIONREAD, &mut n) };
        assert_eq!(rc, 0);
        n
    };
    // SAFETY: F_GETPIPE_SZ on a descriptor the caller keeps open.
    let capacity = unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_GETPIPE_SZ) };
    assert!(capacity > 0);
    // Until the pipe is full (more than half its bytes, as the writes' pages may be part
    // full, and no more coming): the child then waits for room (a header written before the
    // measurement, or a signal before the write began, would test something else).
    let full = || {
        let n = pending();
        n > capacity / 2 && {
            std::thread::sleep(Duration::from_millis(300));
            pending() == n
        }
    };
    let started = Instant::now();
    while !full() {
        if child.try_wait().unwrap().is_some() || started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the pipe was not filled: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the pipe is full: it waits"
    );
    // SAFETY: a plain syscall on our own child, not reaped yet.
    unsafe { libc::kill(child.id() as i32, signal) };
    let signalled = Instant::now();
    while child.try_wait().unwrap().is_none() && signalled.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = signalled.elapsed();
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        took < Duration::from_millis(1500),
        "ended {took:?} after signal {signal}"
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(said.contains("stopped by a SIGINT or SIGTERM"), "{said}");
}

/// `--json=-` gives standard output to the JSON: the drop-ins' text (oslat's version line,
/// settings and summary; cyclictest's status lines) goes to standard error, and standard output
/// parses as JSON alone (issue 39, L6-g: oslat printed its text, then the JSON).
#[test]
fn json_to_standard_output_is_the_json_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let _g = exclusive();
    let runs = [
        (
            "oslat",
            vec!["oslat", "-D", "1", "-c", "0", "--json=-", "--jitterlab-out"],
        ),
        (
            "cyclictest",
            vec![
                "cyclictest",
                "-l",
                "200",
                "-i",
                "1000",
                "-t",
                "1",
                "--json=-",
                "--jitterlab-out",
            ],
        ),
    ];
    for (tool, mut argv) in runs {
        let dir = tmp.path().join(tool);
        argv.push(dir.to_str().unwrap());
        let out = jitterlab(&argv);
        assert_eq!(out.status.code(), Some(0), "{tool}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(&stdout);
        assert!(parsed.is_ok(), "{tool}: stdout is not JSON alone: {stdout}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = if tool == "oslat" { "Maximum:" } else { "T: 0" };
        assert!(
            stderr.contains(said),
            "{tool}: the text goes to stderr: {stderr}"
        );
    }
}

/// Issue 42: a drop-in asked for no result directory makes none in the working directory (a CI
/// checkout stays clean); it keeps it in the state directory (`$XDG_STATE_HOME/jitterlab/results`,
/// docs/cyclictest.md "Result directory") and names it on stderr, a result directory
/// `jitterlab report` reads.
#[test]
fn a_drop_in_without_jitterlab_out_leaves_the_working_directory_as_it_was() {
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let (cwd, state) = (tmp.path().join("checkout"), tmp.path().join("state"));
    std::fs::create_dir(&cwd).unwrap();
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["cyclictest", "-q", "-l", "200", "-i", "1000", "-t", "1"],
        vec!["oslat", "-q", "-D", "1", "-c", "0"],
        vec![
            "timerlat",
            "hist",
            "-c",
            "0",
            "-d",
            "1",
            "--jitterlab-engine",
            "own",
        ],
    ];
    // The kernel's engine where the kernel has the timerlat tracer (this VM's has not).
    let tracers = std::fs::read_to_string("/sys/kernel/tracing/available_tracers");
    if tracers.is_ok_and(|t| t.split_whitespace().any(|t| t == "timerlat")) {
        cases.push(vec![
            "timerlat",
            "hist",
            "-c",
            "0",
            "-d",
            "1",
            "--jitterlab-engine",
            "kernel",
        ]);
    } else {
        eprintln!("timerlat's kernel engine not tried: the kernel lists no timerlat tracer");
    }
    for args in cases {
        let out = std::process::Command::new(crate::common::bin())
            .args(&args)
            .current_dir(&cwd)
            .env("XDG_STATE_HOME", &state)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        let left: Vec<_> = std::fs::read_dir(&cwd)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(
            left.is_empty(),
            "{args:?} left {left:?} in the working directory"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let named = stderr
            .lines()
            .find_map(|l| l.strip_prefix("jitterlab: result directory "))
            .and_then(|l| l.split(" (").next())
            .unwrap_or_else(|| panic!("{args:?} names no result directory: {stderr}"));
        let dir = Path::new(named);
        assert!(
            dir.starts_with(state.join("jitterlab/results")),
            "{args:?}: {named} is not in the state directory"
        );
        assert!(
            dir.join("run.json").is_file(),
            "{args:?}: {named} has no run.json"
        );
        // Into the test's directory: `report`'s default is ./report.html, the checkout.
        let html = tmp.path().join("report.html");
        let report = jitterlab(&["report", named, "-o", html.to_str().unwrap()]);
        assert_eq!(
            report.status.code(),
            Some(0),
            "{args:?}: report: {}",
            text(&report)
        );
    }
}

/// Eighth hostile re-run, D1: a drop-in's default result directory went into a directory
/// another user prepared (`/tmp/jitterlab-<uid>/results` of mode 0777), who then replaced the
/// results. The default is a name the user did not choose: made with the default-name checks
/// (no directory above it another user's, or writable by others without a sticky bit), so a
/// state directory writable by anyone is refused before anything is measured (exit 2), naming
/// it and `--jitterlab-out`. Refused at once (well under a second).
#[test]
fn a_drop_ins_default_directory_is_refused_in_a_directory_others_can_write() {
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    std::fs::create_dir_all(state.join("jitterlab/results")).unwrap();
    for dir in [
        &state,
        &state.join("jitterlab"),
        &state.join("jitterlab/results"),
    ] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let out = std::process::Command::new(crate::common::bin())
        .args(["cyclictest", "-q", "-D", "1", "-t", "1"])
        .current_dir(tmp.path())
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("writable by other users") && said.contains("--jitterlab-out"),
        "{said}"
    );
    let made: Vec<_> = std::fs::read_dir(state.join("jitterlab/results"))
        .unwrap()
        .collect();
    assert!(made.is_empty(), "a result directory was made: {made:?}");
}

/// Eighth hostile re-run, L8-b: a user's `cyclictest -p 90` printed `# /dev/cpu_dma_latency set
/// to 0us` on stdout and was then refused (the device is root's): the line said what did not
/// happen. Now it is printed only where the device can be written. Refused at once.
#[test]
fn a_user_refused_pm_qos_is_not_told_it_was_set() {
    if !crate::common::attacker::attacker_available("a_user_refused_pm_qos") {
        return;
    }
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(crate::common::bin())
        .args(["cyclictest", "-q", "-D", "1", "-p", "90", "--jitterlab-out"])
        .arg(tmp.path().join("run"))
        .current_dir(tmp.path())
        .env("XDG_STATE_HOME", tmp.path().join("state"))
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("/dev/cpu_dma_latency set to"),
        "{said}"
    );
}
