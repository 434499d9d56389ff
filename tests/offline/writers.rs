//! The writer boundary (issue 39): every path a user names is written by one writer,
//! `src/results/dir/` (result directories made new through a directory descriptor; output files
//! written new and renamed into place, never through another user's link, never truncating a
//! file: `results::dir::OutputFile`, `write_output`, `OutputDir`). This test reads every line of
//! every file under `src/` and fails, naming file and line, when code outside that module opens
//! a path for writing (or makes, renames or links one) and is not in the allow-list below of
//! paths no user names, each with its reason.
//!
//! Beside the guard, the writer's promises as a user meets them, through the binary: nothing is
//! written into a result directory (N10, L3-g), and what is not a file at an output's name (a
//! FIFO, `/dev/stdout`) is written in place only when it is the caller's (N7).
//!
//! What is code and what is test code (left out) is `scan.rs`'s one rule: comments are not
//! code; what `#[cfg(test)]` puts under it, and the files of modules so declared, are test
//! code. Everything else is read.

use crate::scan::sources;
use std::collections::HashSet;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The writer: the one module that may open user-named paths for writing.
const WRITER: &str = "results/dir/";

/// What opens, makes, renames or links a path for writing: std's calls, OpenOptions' writing
/// flags, and src/sys/fs.rs's descriptor-relative primitives (each a use of the writer's means
/// from outside it).
const WRITING: &[&str] = &[
    "File::create(",
    "File::create_new(",
    "File::options(",
    ".write(true)",
    ".append(true)",
    ".create(true)",
    ".create_new(true)",
    ".truncate(true)",
    "fs::write(",
    "fs::rename(",
    "fs::copy(",
    "fs::hard_link(",
    "fs::symlink(",
    "unix::fs::symlink(",
    "fs::create_dir(",
    "fs::create_dir_all(",
    "DirBuilder",
    "create_new_at(",
    "open_write_at(",
    "rename_at(",
    "make_dir_at(",
    "make_dir(",
    "anonymous_file_in(",
    "anonymous_file_at(",
    "link_anonymous_at(",
];

/// One allowed use: in `file` (under src/), a writing line that contains `needle`, and why no
/// user names that path.
struct Allowed {
    file: &'static str,
    needle: &'static str,
    why: &'static str,
}

const fn allow(file: &'static str, needle: &'static str, why: &'static str) -> Allowed {
    Allowed { file, needle, why }
}

/// Paths no user names. Each entry must still match a line (a stale entry fails the test too).
const ALLOWED: &[Allowed] = &[
    // The primitives themselves: thin syscall wrappers, checked where they are called.
    allow(
        "sys/fs.rs",
        "pub(crate) fn ",
        "the definitions of the descriptor-relative primitives",
    ),
    // A diagnostic no user names: the BPF verifier's full log of a refused program, a new
    // file (O_CREAT|O_EXCL, so never through a link, never over a file) in the temporary
    // directory, whose name the refusal prints.
    allow(
        "trace/bpf/refusal.rs",
        "match std::fs::File::options()",
        "the verifier's log, a new file in $TMPDIR",
    ),
    allow(
        "trace/bpf/refusal.rs",
        ".write(true)",
        "the verifier's log, a new file in $TMPDIR",
    ),
    allow(
        "trace/bpf/refusal.rs",
        ".create_new(true)",
        "the verifier's log, a new file in $TMPDIR",
    ),
    // Kernel control files: tracefs, sysfs, procfs, cgroupfs, /dev/cpu_dma_latency.
    allow(
        "trace/tracefs.rs",
        "fs::create_dir(&path)",
        "the tracefs instance jitterlab makes under instances/",
    ),
    allow(
        "trace/tracefs.rs",
        ".write(true)",
        "tracefs control files (opened, never made)",
    ),
    allow(
        "trace/timerlat/osnoise.rs",
        ".write(true)",
        "the kernel's osnoise/ option files in tracefs (opened, never made)",
    ),
    allow(
        "trace/timerlat/osnoise.rs",
        ".truncate(true)",
        "the same option files, written as `echo V > FILE` writes them",
    ),
    allow(
        "session/pmqos.rs",
        ".write(true)",
        "/dev/cpu_dma_latency, held open for the run",
    ),
    allow(
        "session/idle_states.rs",
        ".write(true)",
        "cpuidle `disable` files in sysfs",
    ),
    allow(
        "session/settings.rs",
        ".write(true)",
        "the kernel tunables of `tune`'s fixes in /proc/sys, /proc/irq and /sys (opened, never made)",
    ),
    allow(
        "session/settings.rs",
        ".truncate(true)",
        "the same tunables, written as `echo V > FILE` writes them",
    ),
    allow(
        "session/cpuset/v1.rs",
        "fs::create_dir(&dir)",
        "the run's cpuset in the cpuset file system",
    ),
    allow(
        "session/cpuset/v1.rs",
        "fs::write(",
        "cpuset control files and tasks",
    ),
    allow(
        "session/cpuset/v2.rs",
        "fs::create_dir(path)",
        "the run's cgroup in the cgroup2 file system",
    ),
    allow(
        "session/cpuset/v2.rs",
        "fs::write(path, value)",
        "cgroup2 control files and cgroup.threads",
    ),
    allow(
        "load/contain.rs",
        "fs::write(dir.join(\"cgroup.kill\")",
        "a load's cgroup, killed",
    ),
    allow(
        "load/contain.rs",
        ".write(true)",
        "a load cgroup's control files",
    ),
    allow(
        "load/contain.rs",
        "std::fs::create_dir(",
        "a load's cgroup under jitterlab's own cgroup",
    ),
    allow(
        "load/contain/cpuset.rs",
        "std::fs::create_dir(&dir)",
        "a load's cpuset under the loads' journaled cpuset",
    ),
    allow(
        "load/contain/cpuset.rs",
        "std::fs::write(&path, value)",
        "cpuset control files of the loads' cpusets",
    ),
    // /run/jitterlab: the CPU locks, the trusted directories and their journals (jitterlab's
    // own names).
    allow(
        "journal.rs",
        "let made = fs::make_dir(at, 0o755)",
        "/run/jitterlab itself",
    ),
    allow(
        "journal.rs",
        "fs::make_dir_at(parent_fd.as_fd(), &c_name, 0o700)",
        "a trusted journal directory (0700) under /run",
    ),
    allow(
        "journal.rs",
        "fs::anonymous_file_at(dir.fd())",
        "a journal, written nameless in its trusted directory",
    ),
    allow(
        "journal.rs",
        "fs::link_anonymous_at(file.as_fd(), dir.fd(), &c_name)",
        "a journal given its new name (never over an existing entry)",
    ),
    // Inside a result directory, through its descriptor (`ResultDir::duplicate_fd`).
    allow(
        "load/supervisor/log.rs",
        "rename_at(self.dir.as_fd()",
        "a capped load log rotated inside the result directory's loads/",
    ),
    allow(
        "load/supervisor/log.rs",
        "create_new_at(self.dir.as_fd()",
        "a capped load log made anew inside the result directory's loads/",
    ),
    // Load generators' scratch files.
    allow(
        "load/generators/io.rs",
        "anonymous_file_in(dir)",
        "the io load's nameless O_TMPFILE file",
    ),
    allow(
        "load/generators/io.rs",
        ".write(true)",
        "the io load's own temporary file (create_new, removed after)",
    ),
    allow(
        "load/generators/io.rs",
        ".create_new(true)",
        "the io load's own temporary file (create_new, removed after)",
    ),
    // The format's writers take a file a ResultDir made; their `create(path)` constructors
    // (O_EXCL: never through a link, never over a file) serve the benches and the tests.
    allow(
        "format/hlog.rs",
        "File::create_new(path)",
        "HlogWriter::create for the recorder-scale bench and tests",
    ),
    allow(
        "format/samplelog/mod.rs",
        "File::create_new(path)",
        "SampleLogWriter::create for tests",
    ),
    allow(
        "format/events/mod.rs",
        ".create(true)",
        "EventLog::create (O_NOFOLLOW) for tests adding events to a run they wrote",
    ),
    allow(
        "format/events/mod.rs",
        ".append(true)",
        "EventLog::create (O_NOFOLLOW) for tests adding events to a run they wrote",
    ),
];

/// Every `src/<file>:<line>: <text>` under `root` outside the writer that writes a path and is
/// not allowed, and the allow-list entries that matched nothing.
fn writes_outside_the_writer(root: &Path, allowed: &[Allowed]) -> (Vec<String>, Vec<String>) {
    let mut hits = Vec::new();
    let mut used = HashSet::new();
    for source in sources(root) {
        let rel = source.rel.as_str();
        if rel.starts_with(WRITER) {
            continue;
        }
        for line in source.production() {
            let code = &line.code;
            if !WRITING.iter().any(|w| code.contains(w)) {
                continue;
            }
            match allowed
                .iter()
                .position(|a| a.file == rel && code.contains(a.needle))
            {
                Some(k) => {
                    used.insert(k);
                }
                None => hits.push(format!("src/{rel}:{}: {}", line.n, code.trim())),
            }
        }
    }
    let stale = allowed
        .iter()
        .enumerate()
        .filter(|(k, _)| !used.contains(k))
        .map(|(_, a)| format!("src/{}: '{}' ({})", a.file, a.needle, a.why))
        .collect();
    (hits, stale)
}

#[test]
fn user_named_paths_are_written_only_by_the_writer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (hits, stale) = writes_outside_the_writer(&src, ALLOWED);
    assert!(
        hits.is_empty(),
        "code outside src/{WRITER} opens a path for writing ({} lines); write a path a user names through results::dir (OutputFile::claim before the work, then write; ResultDir::create_file inside a result directory), or, for a path no user names, add it to ALLOWED in tests/offline/writers.rs with the reason:\n{}",
        hits.len(),
        hits.join("\n")
    );
    assert!(
        stale.is_empty(),
        "allow-list entries of tests/offline/writers.rs that match no line any more (remove them):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_scan_finds_a_planted_write_and_leaves_out_only_test_modules() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| crate::scan::plant(root, rel, text);
    write("results/dir/ok.rs", "std::fs::write(p, b)?;\n");
    write(
        "commands/bad.rs",
        "// std::fs::write(p, b) in a comment\nfn f() {\n    std::fs::write(path, text)?;\n}\n\
         #[cfg(test)]\nmod tests {\n    fn t() {\n        std::fs::write(a, b).unwrap();\n    }\n}\n\
         fn g() {\n    let f = OpenOptions::new()\n        .append(true)\n        .open(p);\n}\n",
    );
    // A test file is left out only when declared under #[cfg(test)].
    write(
        "load/mod.rs",
        "#[cfg(test)]\nmod tests;\nmod helper;\n#[cfg(test)]\npub(crate) mod fixtures;\n",
    );
    write("load/tests.rs", "std::fs::write(a, b).unwrap();\n");
    write("load/fixtures/mod.rs", "std::fs::write(a, b).unwrap();\n");
    write("load/helper.rs", "let _ = File::create(p);\n");
    write("load/allowed.rs", "fs::write(\"/sys/x\", v)?;\n");
    let allowed = [
        allow("load/allowed.rs", "\"/sys/x\"", "a sysfs file"),
        allow("load/gone.rs", "x", "stale"),
    ];
    let (hits, stale) = writes_outside_the_writer(root, &allowed);
    assert_eq!(
        hits,
        [
            "src/commands/bad.rs:3: std::fs::write(path, text)?;",
            "src/commands/bad.rs:13: .append(true)",
            "src/load/helper.rs:1: let _ = File::create(p);",
        ]
    );
    assert_eq!(stale, ["src/load/gone.rs: 'x' (stale)"]);
}

/// `jitterlab import` of a cyclictest JSON into `out`: a result directory made offline.
fn imported(out: &Path) {
    let data = format!(
        "{}/tests/data/import/cyclictest.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let made = crate::common::jitterlab(&["import", &data, "--out", out.to_str().unwrap()]);
    assert_eq!(
        made.status.code(),
        Some(0),
        "{}",
        crate::common::text(&made)
    );
}

/// Runs jitterlab with `args`, ended if it has not ended within 20 s (a write that hangs):
/// its exit code and everything it said.
fn bounded(args: &[&str]) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(crate::common::bin())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} still ran after 20 s: {}",
                crate::common::text(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), crate::common::text(&out))
}

#[test]
fn nothing_is_written_into_a_result_directory_that_is_not_an_input() {
    // Issue 39 N10: `report A -o B/counters.log` and `export A -o B/snapshots/x.csv` replaced
    // files of B, whose names were not on the writer's list; L3-g: `--out RUN/sub` made a
    // result directory inside another.
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("A"), tmp.path().join("B"));
    imported(&a);
    imported(&b);
    std::fs::write(b.join("counters.log"), "#cpu 0 counters\n").unwrap();
    std::fs::create_dir(b.join("snapshots")).unwrap();
    std::fs::write(b.join("snapshots/spike-0001.csv"), "cpu,latency_ns\n").unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let cases: [Vec<String>; 5] = [
        vec![
            "report".into(),
            s(&a),
            "-o".into(),
            s(&b.join("counters.log")),
        ],
        vec![
            "export".into(),
            s(&a),
            "--format".into(),
            "json".into(),
            "-o".into(),
            s(&b.join("snapshots/spike-0001.csv")),
        ],
        // Nor into its own input: `report RUN -o RUN/report.html` is refused as well, since a
        // result directory holds what its run wrote (result-format.md).
        vec![
            "report".into(),
            s(&a),
            "-o".into(),
            s(&a.join("report.html")),
        ],
        vec![
            "report".into(),
            s(&a),
            "--plots".into(),
            s(&b.join("plots")),
        ],
        vec![
            "import".into(),
            format!(
                "{}/tests/data/import/cyclictest.json",
                env!("CARGO_MANIFEST_DIR")
            ),
            "--out".into(),
            s(&b.join("sub")),
        ],
    ];
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, said) = bounded(&args);
        assert_eq!(code, Some(2), "{args:?}: {said}");
        assert!(
            said.contains("is in the result directory"),
            "{args:?}: {said}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(b.join("counters.log")).unwrap(),
        "#cpu 0 counters\n"
    );
    assert_eq!(
        std::fs::read_to_string(b.join("snapshots/spike-0001.csv")).unwrap(),
        "cpu,latency_ns\n"
    );
    for made in [a.join("report.html"), b.join("plots"), b.join("sub")] {
        assert!(!made.exists(), "{} was made", made.display());
    }
    // Beside the runs, as before.
    let beside = tmp.path().join("A-report.html");
    let (code, said) = bounded(&["report", &s(&a), "-o", &s(&beside)]);
    assert_eq!(code, Some(0), "{said}");
    assert!(beside.is_file());
}

#[test]
fn fifos_and_descriptors_at_an_output_name() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("A");
    imported(&a);
    let s = |p: &Path| p.to_str().unwrap().to_string();
    // One's own FIFO with no reader: said so (it was "No such device or address").
    let mine = tmp.path().join("mine.fifo");
    let mkfifo = crate::common::mkfifo;
    mkfifo(&mine);
    for args in [
        vec!["report", a.to_str().unwrap(), "-o", mine.to_str().unwrap()],
        vec![
            "export",
            a.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            mine.to_str().unwrap(),
        ],
    ] {
        let (code, said) = bounded(&args);
        assert_ne!(code, Some(0), "{args:?}: {said}");
        assert!(said.contains("a FIFO no one reads"), "{args:?}: {said}");
    }
    // A path to this process's standard output (`-o /dev/stdout`, here by /proc/self/fd/1,
    // as /dev/stdout itself cannot be risked: the writer used to rename the report over the
    // link's name) is written through it.
    let (code, said) = bounded(&[
        "export",
        &s(&a),
        "--format",
        "json",
        "-o",
        "/proc/self/fd/1",
    ]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.trim_start().starts_with('{'), "{said}");
    // Another user's FIFO, planted in a sticky world-writable directory (issue 39 N7): refused
    // before the work, naming its owner, whether or not anyone reads it.
    let shared = tmp.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let theirs = shared.join("ff.html");
    mkfifo(&theirs);
    if std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).is_err() {
        eprintln!("skipped the rest of fifos_and_descriptors_at_an_output_name: needs root");
        return;
    }
    // Its owner holding it open without reading, as an attacker would.
    let _held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&theirs)
        .unwrap();
    for args in [
        vec![
            "report",
            a.to_str().unwrap(),
            "-o",
            theirs.to_str().unwrap(),
        ],
        vec![
            "export",
            a.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            theirs.to_str().unwrap(),
        ],
    ] {
        let (code, said) = bounded(&args);
        assert_eq!(code, Some(2), "{args:?}: {said}");
        assert!(
            said.contains("is a FIFO of") && said.contains("65534"),
            "{args:?}: {said}"
        );
    }
}
