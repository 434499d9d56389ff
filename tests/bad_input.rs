//! Bad input and refused permissions: the right exit code, a message that names the value and
//! what is accepted, and nothing created.

mod common;

use common::*;
use std::process::Command;

fn refused(args: &[&str], code: i32, needles: &[&str]) {
    let (base, out) = temp_out();
    let mut full = vec!["run", "--out", out.to_str().unwrap()];
    if !args.contains(&"--duration") {
        full.extend(["--duration", "1s"]);
    }
    full.extend_from_slice(args);
    let o = jitterlab(&full);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {t}");
    for n in needles {
        assert!(t.contains(n), "{args:?}: message lacks '{n}': {t}");
    }
    assert!(!out.exists(), "{args:?}: the result directory was created");
    assert_eq!(
        std::fs::read_dir(base.path()).unwrap().count(),
        0,
        "{args:?}: a file was created"
    );
}

#[test]
fn each_bad_input_exits_2_naming_the_value() {
    refused(
        &["--interval", "0ms"],
        2,
        &["--interval 0ms", "at least 1us"],
    );
    refused(&["--interval=-1ms"], 2, &["'-1ms'", "ns, us, ms"]);
    refused(&["--interval", "500ns"], 2, &["below 1us"]);
    refused(
        &["--cpus", "64"],
        2,
        &["CPU 64 is not online", "online CPUs are"],
    );
    refused(
        &["--policy", "fifo", "--priority", "100"],
        2,
        &["--priority 100", "1..=99"],
    );
    refused(
        &["--policy", "other", "--priority", "10"],
        2,
        &["--priority 10", "0..=0"],
    );
    refused(&["--duration", "0s"], 2, &["--duration 0s", "above zero"]);
    refused(&["--duration", "ten"], 2, &["'ten'", "with a unit"]);
    refused(
        &["--load", "earthquake:cpu=0"],
        2,
        &["unknown load 'earthquake'", "known loads: spike"],
    );
    refused(
        &["--load", "spike:cpu=0,size=3"],
        2,
        &["unknown parameter 'size'", "cpu, every, len, prio, offset"],
    );
    refused(
        &["--wake", "hibernate"],
        2,
        &["hibernate", "clock-nanosleep"],
    );
}

#[test]
fn an_unwritable_out_exits_2_before_anything_starts() {
    let o = jitterlab(&["run", "--duration", "1s", "--out", "/etc/hostname/run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--out /etc/hostname/run"), "{}", text(&o));
    // An existing directory is never written into.
    let base = tempfile::tempdir().unwrap();
    std::fs::write(base.path().join("run.json"), "{}").unwrap();
    let o = jitterlab(&[
        "run",
        "--duration",
        "1s",
        "--out",
        base.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("already exists"), "{}", text(&o));
}

/// Runs jitterlab as the unprivileged user `nobody` with RLIMIT_RTPRIO 0, through setpriv.
fn as_nobody(args: &[&str]) -> Option<std::process::Output> {
    // SAFETY: getuid has no failure mode.
    if unsafe { libc::getuid() } != 0 || Command::new("setpriv").arg("--version").output().is_err()
    {
        return None;
    }
    let bin = bin();
    let mut full = vec![
        "-c",
        "ulimit -r 0; ulimit -l 64; exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" \"$@\"",
        bin,
    ];
    full.extend_from_slice(args);
    Some(Command::new("sh").args(&full).output().unwrap())
}

#[test]
fn refused_realtime_or_mlock_exits_3_with_cause_and_fix() {
    let Some(o) = as_nobody(&[
        "run",
        "--duration",
        "1s",
        "--out",
        "/tmp/jitterlab-nobody-never-created",
    ]) else {
        eprintln!("SKIPPED permission test: needs root and setpriv to become an unprivileged user");
        return;
    };
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("mlockall") && t.contains("RLIMIT_MEMLOCK") && t.contains("--no-mlock"),
        "{t}"
    );

    let o = as_nobody(&[
        "run",
        "--duration",
        "1s",
        "--no-mlock",
        "--out",
        "/tmp/jitterlab-nobody-never-created",
    ])
    .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    for needle in [
        "cannot set SCHED_FIFO 95",
        "CAP_SYS_NICE",
        "RLIMIT_RTPRIO is 0",
        "--policy other",
    ] {
        assert!(t.contains(needle), "lacks '{needle}': {t}");
    }
    assert!(!std::path::Path::new("/tmp/jitterlab-nobody-never-created").exists());
}
