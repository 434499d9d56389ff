//! The reader boundary (issue 39, N12): every file a user names or a result directory holds is
//! opened by one reader, `src/input/` (`input::open`: never blocking, never a FIFO or a device,
//! a result directory's link never followed, size-capped). `import` of another user's FIFO held
//! open without writing waited until it was signalled, because import sources were let read a
//! FIFO blocking. This test reads every line of every file under `src/` and fails, naming file
//! and line, when code outside `src/input/` opens a path for reading and the path is neither a
//! kernel interface named literally (`"/proc/...`, `"/sys/...`) nor in the allow-list below of
//! paths no user names, each with its reason. What is code and what is test code (left out) is
//! `scan.rs`'s one rule.
//!
//! Above `input`, a result directory's files are read by one reader, `results::loaded` (issue
//! 41: `compare` and the counters' correlation read counters.log, `export` samples.bin and
//! run.json, the phases and the correlation latency.hlog, each its own way): the second test
//! fails on a call of the format's readers anywhere else.

use crate::scan::sources;
use std::collections::HashSet;
use std::path::Path;

/// The reader: the one module that may open user-named paths for reading.
const READER: &str = "input/";

/// What opens a path for reading: std's calls, OpenOptions' reading flag, and src/sys's
/// primitives (each a use of the reader's means from outside it).
const READING: &[&str] = &[
    "File::open(",
    "fs::read(",
    "fs::read_to_string(",
    ".read(true)",
    "open_read_nonblocking(",
    "open_read_at(",
    "open_read_only(",
];

/// A path given literally as the kernel's: procfs and sysfs, which no user names.
const KERNEL_LITERALS: &[&str] = &["\"/proc/", "\"/sys/"];

/// One allowed use: in `file` (under src/), a reading line that contains `needle`, and why no
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
        "pub(crate) fn open_read_",
        "the definitions of the open primitives",
    ),
    allow(
        "sys/file.rs",
        "pub(crate) fn open_read_only(",
        "the definition of the raw open",
    ),
    allow(
        "sys/counter.rs",
        "read_to_string(source_file)",
        "the kernel's current clocksource in sysfs",
    ),
    allow(
        "sys/process.rs",
        "\"/etc/passwd\"",
        "the user database, to name an owner",
    ),
    // The kernel's files below a root that tests point at a fixture tree (`/` when live).
    allow(
        "cpulist.rs",
        "fs::read_to_string(path)",
        "/sys/devices/system/cpu/online",
    ),
    allow(
        "doctor/root.rs",
        "fs::File::open(path(root, rel))",
        "/proc and /sys below doctor's root",
    ),
    allow(
        "doctor/kconfig.rs",
        "File::open(&gz)",
        "/proc/config.gz below doctor's root",
    ),
    allow(
        "doctor/checks/container.rs",
        "\"proc/1/environ\"",
        "pid 1's environment below doctor's root",
    ),
    // /run/jitterlab: jitterlab's own lock files and journals, opened through the trusted
    // directory's descriptor without following a link (journal.rs checks what it opened).
    allow(
        "journal.rs",
        "fs::open_read_at(dir.fd()",
        "a journal in its trusted directory",
    ),
    allow(
        "session/settings.rs",
        "fs::open_read_at(dir.fd(), &name",
        "the settings lock in the user's trusted journal directory (made there, never through a link; checked as opened)",
    ),
    allow(
        "measure/sched.rs",
        "fs::read_to_string(p)",
        "/sys/kernel/realtime and the isolated and nohz_full CPU lists in sysfs (where jitterlab's own threads go on PREEMPT_RT)",
    ),
    allow(
        "session/cpulock.rs",
        "fs::open_read_at(dir, &name",
        "a CPU lock file in /run/jitterlab",
    ),
    allow(
        "session/cpulock.rs",
        "fs::open_read_at(fd.as_fd(), &name",
        "a CPU lock file in /run/jitterlab or /run/jitterlab-root, read to see whether a run that says `running` still holds it",
    ),
    // procfs, sysfs and cgroupfs reached through a variable path.
    allow(
        "load/contain.rs",
        "\"cgroup.procs\"",
        "a load cgroup's member list",
    ),
    allow(
        "load/contain/cpuset.rs",
        "std::fs::read_to_string(p)",
        "/proc/self/mountinfo and /proc/self/cgroup, to find the cpuset hierarchy",
    ),
    allow(
        "load/contain/cpuset.rs",
        "std::fs::read_to_string(&file)",
        "the own cgroup's cgroup.subtree_control",
    ),
    allow(
        "load/contain/cpuset.rs",
        "dir.join(&effective)",
        "a load cpuset's cpuset.effective_* file",
    ),
    allow(
        "load/contain/cpuset.rs",
        "dir.join(file)",
        "a load cpuset's cpuset.* file",
    ),
    allow(
        "load/generators/proc.rs",
        "File::open(path)",
        "the proc load's reads of /proc",
    ),
    allow(
        "load/task_guard.rs",
        "std::fs::read_to_string(p)",
        "/proc and cgroup limits",
    ),
    allow(
        "load/task_guard.rs",
        "dir.join(f)",
        "the own cgroup's pids files",
    ),
    allow(
        "load/task_guard.rs",
        "entry.path().join(\"status\")",
        "/proc/PID/status of every process, to count the user's tasks against RLIMIT_NPROC",
    ),
    allow(
        "measure/sched.rs",
        "fs::read_to_string(&file)",
        "cpu.rt_runtime_us of the own cgroup",
    ),
    allow(
        "recorder/counters/sources.rs",
        "File::open(path)",
        "sysfs and debugfs counter files",
    ),
    allow(
        "recorder/counters/sources.rs",
        "\"cpu/{cpu}/msr\"",
        "the MSR device of a CPU",
    ),
    allow(
        "recorder/counters/sources.rs",
        "std::fs::read_to_string(p)",
        "hwmon and thermal files",
    ),
    allow(
        "session/children/groups.rs",
        "join(\"stat\")",
        "/proc/PID/stat of a started program",
    ),
    allow(
        "session/cpulock.rs",
        "join(\"fdinfo\")",
        "/proc/PID/fdinfo of a lock's holder",
    ),
    allow(
        "session/cpulock.rs",
        "join(\"status\")",
        "/proc/PID/status of a lock's holder",
    ),
    allow(
        "session/cpulock.rs",
        "join(\"comm\")",
        "/proc/PID/comm of a lock's holder",
    ),
    allow(
        "session/cpulock.rs",
        "join(\"cmdline\")",
        "/proc/PID/cmdline of a lock's holder",
    ),
    allow("session/cpulock.rs", "join(\"locks\")", "/proc/locks"),
    allow(
        "session/cpuset/v1.rs",
        "join(\"cpuset.effective_mems\")",
        "the cpuset file system",
    ),
    allow(
        "session/cpuset/v1.rs",
        "join(\"cpuset.mems\")",
        "the cpuset file system",
    ),
    allow(
        "session/cpuset/v1.rs",
        "join(\"tasks\")",
        "the cpuset file system",
    ),
    allow(
        "session/cpuset/v2.rs",
        "fs::read_to_string(path)",
        "cgroup2 control files",
    ),
    allow(
        "session/cpuset/v2.rs",
        "fs::read_to_string(p)",
        "cgroup2 control files",
    ),
    allow(
        "session/cpuset/v2.rs",
        "fs::read_to_string(&controllers)",
        "cgroup2 controllers",
    ),
    allow(
        "session/idle_states.rs",
        "cpuidle/current_driver",
        "sysfs cpuidle",
    ),
    allow(
        "session/settings.rs",
        "fs::read_to_string(&path)",
        "the kernel tunables of `tune`'s fixes (a value of one line)",
    ),
    allow(
        "session/idle_states.rs",
        "entry.path().join(file)",
        "sysfs cpuidle state files",
    ),
    allow(
        "session/layout.rs",
        "fs::read_to_string(path)",
        "sysfs CPU topology",
    ),
    allow("session/pmqos.rs", ".read(true)", "/dev/cpu_dma_latency"),
    allow(
        "measure/wake/rtc.rs",
        "open_read_only(&path)",
        "the RTC device of --wake rtc",
    ),
    allow(
        "load/generators/io.rs",
        ".read(true)",
        "the io load's own temporary file",
    ),
    // tracefs.
    allow(
        "trace/format.rs",
        "fs::File::open(path)",
        "tracefs event format files",
    ),
    allow(
        "trace/kallsyms.rs",
        "fs::File::open(PATH)",
        "/proc/kallsyms",
    ),
    allow(
        "trace/migration.rs",
        "std::fs::read_to_string(p)",
        "/proc/sys/kernel files",
    ),
    allow("trace/reader.rs", ".read(true)", "tracefs trace_pipe_raw"),
    allow(
        "trace/timerlat/mod.rs",
        ".read(true)",
        "tracefs trace_pipe_raw of timerlat",
    ),
    allow(
        "trace/timerlat/mod.rs",
        "std::fs::read_to_string(p)",
        "tracefs current_tracer",
    ),
    allow(
        "trace/timerlat/mod.rs",
        "join(\"comm\")",
        "/proc/PID/comm of timerlat's threads",
    ),
];

/// Every `src/<file>:<line>: <text>` under `root` outside the reader that reads a path and is
/// not allowed, and the allow-list entries that matched nothing.
fn reads_outside_the_reader(root: &Path, allowed: &[Allowed]) -> (Vec<String>, Vec<String>) {
    let mut hits = Vec::new();
    let mut used = HashSet::new();
    for source in sources(root) {
        let rel = source.rel.as_str();
        if rel.starts_with(READER) {
            continue;
        }
        for line in source.production() {
            let code = &line.code;
            if !READING.iter().any(|r| code.contains(r))
                || KERNEL_LITERALS.iter().any(|k| code.contains(k))
            {
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
    (hits, unused(allowed, &used))
}

#[test]
fn user_named_paths_are_read_only_by_the_reader() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (hits, stale) = reads_outside_the_reader(&src, ALLOWED);
    assert!(
        hits.is_empty(),
        "code outside src/{READER} opens a path for reading ({} lines); read a file a user names or a result directory holds through crate::input (open, read_text, read_user_file, read_result_file, open_result_file: never blocking on a FIFO, never a device, capped), or, for a path no user names, add it to ALLOWED in tests/offline/readers.rs with the reason:\n{}",
        hits.len(),
        hits.join("\n")
    );
    assert!(
        stale.is_empty(),
        "allow-list entries of tests/offline/readers.rs that match no line any more (remove them):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_scan_finds_a_planted_read_and_leaves_out_kernel_paths_and_tests() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| crate::scan::plant(root, rel, text);
    write("input/mod.rs", "let f = std::fs::File::open(p)?;\n");
    write(
        "commands/bad.rs",
        "// std::fs::read(p) in a comment\nfn f() {\n    let t = std::fs::read_to_string(&args.file)?;\n    let l = std::fs::read_to_string(\"/proc/loadavg\");\n}\n\
         #[cfg(test)]\nmod tests {\n    fn t() {\n        std::fs::read(a).unwrap();\n    }\n}\n\
         fn g() {\n    let f = OpenOptions::new()\n        .read(true)\n        .open(p);\n}\n",
    );
    write("results/mod.rs", "#[cfg(test)]\nmod tests;\n");
    write("results/tests.rs", "std::fs::read(a).unwrap();\n");
    write(
        "load/allowed.rs",
        "fs::read_to_string(dir.join(\"cgroup.procs\"))?;\n",
    );
    let allowed = [
        allow("load/allowed.rs", "\"cgroup.procs\"", "a cgroup file"),
        allow("load/gone.rs", "x", "stale"),
    ];
    let (hits, stale) = reads_outside_the_reader(root, &allowed);
    assert_eq!(
        hits,
        [
            "src/commands/bad.rs:3: let t = std::fs::read_to_string(&args.file)?;",
            "src/commands/bad.rs:14: .read(true)",
        ]
    );
    assert_eq!(stale, ["src/load/gone.rs: 'x' (stale)"]);
}

/// The one reader of a result directory's files for everything above `format`.
const RESULTS_READER: &str = "results/loaded.rs";

/// The format's readers of a result directory's files (and `input`'s openers of them).
const RESULT_READS: &[&str] = &[
    "counters::read(",
    "SampleLogReader::open(",
    "read_run_record(",
    "hlog_scan::scan(",
    "scan_parallel(",
    "hlog::read_intervals(",
    "events::read_events(",
    "events::scan_events(",
    "open_result_file(",
    "read_result_file(",
    "read_result_bytes(",
];

/// Where else they may be called, each with why.
const RESULT_READERS_ALLOWED: &[(&str, &str)] = &[
    (
        "format/",
        "the decoders themselves, called by results::loaded",
    ),
    (
        "results/cells.rs",
        "results::loaded's time cells (the parallel scan of the log)",
    ),
    (
        "results/dir/mod.rs",
        "ResultDir::read_run_record, run.json's one parser, called by results::loaded::open",
    ),
    (
        "results/dir/output_checks.rs",
        "the head of a run.json or sweep.json that marks a result directory (never written into)",
    ),
    ("results/sweep.rs", "sweep.json, a sweep directory's record"),
    (
        "report/tune.rs",
        "tune.json, a tune directory's record (written by tune/, a layer above the report)",
    ),
];

/// Every `src/<file>:<line>: <code>` under `root` that reads a result directory's file with
/// the format's readers outside [`RESULTS_READER`] and the allowed places.
fn result_reads_outside_loaded(root: &Path, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut hits = Vec::new();
    for source in sources(root) {
        let rel = source.rel.as_str();
        if rel == RESULTS_READER
            || rel.starts_with(READER)
            || allowed.iter().any(|(a, _)| rel.starts_with(a))
        {
            continue;
        }
        for line in source.production() {
            if RESULT_READS.iter().any(|r| line.code.contains(r)) {
                hits.push(format!("src/{rel}:{}: {}", line.n, line.code.trim()));
            }
        }
    }
    hits
}

#[test]
fn result_directories_are_read_through_results_loaded() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let hits = result_reads_outside_loaded(&src, RESULT_READERS_ALLOWED);
    assert!(
        hits.is_empty(),
        "a result directory's file is read outside src/{RESULTS_READER} ({} lines); read it through crate::results::loaded (open, load, scan_events, scan_intervals, counters, sample_log), or add the place to RESULT_READERS_ALLOWED in tests/offline/readers.rs with the reason:\n{}",
        hits.len(),
        hits.join("\n")
    );
    for (place, _) in RESULT_READERS_ALLOWED {
        assert!(
            src.join(place).exists(),
            "RESULT_READERS_ALLOWED names src/{place}, which is not there"
        );
    }
}

#[test]
fn the_scan_finds_a_planted_bypass_of_results_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| crate::scan::plant(root, rel, text);
    write(
        "results/loaded.rs",
        "let c = crate::format::counters::read(&p)?;\n",
    );
    write(
        "format/counters/mod.rs",
        "crate::input::open_result_file(p)\n",
    );
    write(
        "report/compare_view.rs",
        "// counters::read( in a comment\nlet c = crate::format::counters::read(&path).ok();\n#[cfg(test)]\nmod tests { fn t() { SampleLogReader::open(&p); } }\n",
    );
    write(
        "commands/monitor.rs",
        "let r = session.dir().read_run_record().ok();\n",
    );
    assert_eq!(
        result_reads_outside_loaded(root, &[("format/", "the decoders")]),
        [
            "src/commands/monitor.rs:1: let r = session.dir().read_run_record().ok();",
            "src/report/compare_view.rs:2: let c = crate::format::counters::read(&path).ok();",
        ]
    );
}

/// The code that reads a result directory's files: `ResultDir::open` and its files through
/// `input` (ninth hostile re-run, I1-dir: `export` checked the directory by path, then read
/// its sample log by path, and read root's private run through another user's link swapped in
/// between, 339 times in 800). The directory is opened once as a descriptor and every file of
/// it opened, listed or measured relative to that descriptor; these files make no lookup of a
/// path inside a result directory.
const RESULT_DIR_READERS: &[&str] = &[
    "input/mod.rs",
    "results/loaded.rs",
    "results/cells.rs",
    "results/dir/mod.rs",
];

/// Calls that look a path up again (a test of what is there, a listing, an open by path).
const BY_PATH: &[&str] = &[
    "fs::read_dir(",
    "fs::metadata(",
    "symlink_metadata(",
    "open_dir(",
    "File::open(",
    "open_read_nonblocking(path",
    ".exists()",
    ".is_file()",
    ".is_dir()",
    ".metadata()",
];

/// Lines of those files that match [`BY_PATH`] but look up no path inside a result directory.
const BY_PATH_ALLOWED: &[Allowed] = &[
    allow(
        "input/mod.rs",
        "file.metadata()",
        "fstat of the descriptor opened",
    ),
    allow(
        "input/mod.rs",
        "t.is_file()",
        "the type of the descriptor opened",
    ),
    allow(
        "input/mod.rs",
        "t.is_dir()",
        "the type of the descriptor opened",
    ),
    allow(
        "input/mod.rs",
        "meta.is_file()",
        "the type of the descriptor opened",
    ),
    allow(
        "input/mod.rs",
        "f.metadata()",
        "fstat of the descriptor opened",
    ),
    allow(
        "input/mod.rs",
        "std::fs::metadata(path)",
        "socket_at: the words of an error already met (ENXIO), nothing read",
    ),
    allow(
        "input/mod.rs",
        "std::fs::symlink_metadata(path)",
        "socket_at: the words of an error already met (ENXIO), nothing read",
    ),
    allow(
        "input/mod.rs",
        "read_dir(format!(\"/proc/self/fd/",
        "the listing of the directory's own descriptor",
    ),
    allow(
        "results/cells.rs",
        "file.metadata()",
        "fstat of the descriptor opened",
    ),
    allow(
        "results/dir/mod.rs",
        "fs::read_dir(path)",
        "retention's size of the run's own directory, which this process made and writes",
    ),
    allow(
        "results/dir/mod.rs",
        "entry.metadata()",
        "retention's size of the run's own directory",
    ),
    allow(
        "results/dir/mod.rs",
        "meta.is_file()",
        "retention's size of the run's own directory",
    ),
    allow(
        "results/dir/mod.rs",
        "meta.is_dir()",
        "retention's size of the run's own directory",
    ),
    allow(
        "results/dir/mod.rs",
        "f.metadata()",
        "fstat of a file opened through the directory's descriptor",
    ),
];

/// Every `src/<file>:<line>: <code>` of [`RESULT_DIR_READERS`] under `root` that looks a path
/// up again and is not allowed, and the allow-list entries that matched nothing.
fn by_path_in_result_dir_readers(root: &Path, allowed: &[Allowed]) -> (Vec<String>, Vec<String>) {
    let mut hits = Vec::new();
    let mut used = HashSet::new();
    for source in sources(root) {
        let rel = source.rel.as_str();
        if !RESULT_DIR_READERS.contains(&rel) {
            continue;
        }
        for line in source.production() {
            if !BY_PATH.iter().any(|p| line.code.contains(p)) {
                continue;
            }
            match allowed
                .iter()
                .position(|a| a.file == rel && line.code.contains(a.needle))
            {
                Some(k) => {
                    used.insert(k);
                }
                None => hits.push(format!("src/{rel}:{}: {}", line.n, line.code.trim())),
            }
        }
    }
    (hits, unused(allowed, &used))
}

#[test]
fn result_directories_are_read_through_their_descriptor() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (hits, stale) = by_path_in_result_dir_readers(&src, BY_PATH_ALLOWED);
    assert!(
        hits.is_empty(),
        "a result directory's reader looks a path up again ({} lines): between ResultDir::open and this lookup another user can swap a link in; open, list or measure the directory's files through input (open_result_file, read_result_file, result_entry_exists, result_file_len, list_result_dir: relative to the directory's descriptor), or add the line to BY_PATH_ALLOWED in tests/offline/readers.rs with the reason:\n{}",
        hits.len(),
        hits.join("\n")
    );
    assert!(
        stale.is_empty(),
        "BY_PATH_ALLOWED entries that match no line any more (remove them):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_scan_finds_a_planted_lookup_by_path_in_a_result_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |rel: &str, text: &str| crate::scan::plant(root, rel, text);
    // Before the fix: ResultDir::open checked run.json by path and opened the directory by
    // path; loaded.rs tested and listed its files by path.
    write(
        "results/dir/mod.rs",
        "fn open(path: &Path) {\n    if !path.join(RUN_JSON).is_file() {}\n    let fd = open_dir(path)?;\n}\n",
    );
    write(
        "results/loaded.rs",
        "fn f(path: &Path) {\n    if !file.exists() {}\n    let e = std::fs::read_dir(path)?;\n    let m = t.is_file();\n}\n",
    );
    write("report/other.rs", "let e = std::fs::read_dir(path)?;\n");
    let (hits, stale) = by_path_in_result_dir_readers(
        root,
        &[
            allow("results/loaded.rs", "t.is_file()", "a type"),
            allow("results/cells.rs", "x", "stale"),
        ],
    );
    assert_eq!(
        hits,
        [
            "src/results/dir/mod.rs:2: if !path.join(RUN_JSON).is_file() {}",
            "src/results/dir/mod.rs:3: let fd = open_dir(path)?;",
            "src/results/loaded.rs:2: if !file.exists() {}",
            "src/results/loaded.rs:3: let e = std::fs::read_dir(path)?;",
        ]
    );
    assert_eq!(stale, ["src/results/cells.rs: 'x' (stale)"]);
}

/// The entries of `allowed` no line used (by index in `used`), for the stale-entry failure.
fn unused(allowed: &[Allowed], used: &HashSet<usize>) -> Vec<String> {
    allowed
        .iter()
        .enumerate()
        .filter(|(k, _)| !used.contains(k))
        .map(|(_, a)| format!("src/{}: '{}' ({})", a.file, a.needle, a.why))
        .collect()
}
