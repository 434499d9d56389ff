//! Shared helpers of the integration tests: run the real binary, read its results, and decide
//! whether real-time tests can run here.

#![allow(dead_code)]

pub mod attacker;
pub mod invariants;
pub mod lifecycle;
pub mod openmetrics;
pub mod oracle;
pub mod signals;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

/// Runs that measure must not overlap: a second run's threads and loads would disturb the
/// first's CPUs. Every measuring test holds this lock: a mutex between the tests of one test
/// binary, and an advisory lock on a file in /tmp between test binaries and checkouts
/// (several `cargo test` at once on one machine).
static MEASURING: Mutex<()> = Mutex::new(());

pub struct Exclusive {
    _in_process: MutexGuard<'static, ()>,
    _across_processes: std::fs::File,
}

pub fn exclusive() -> Exclusive {
    let in_process = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/jitterlab-measuring-tests.lock")
        .expect("the test lock file in /tmp can be opened");
    // Blocks until no other process holds it; released when the file is closed.
    let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock on the test lock file");
    Exclusive {
        _in_process: in_process,
        _across_processes: file,
    }
}

/// Makes a FIFO at `path` (mkfifo(1): no libc in the tests' helpers where a tool does it).
pub fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_jitterlab")
}

/// Runs jitterlab with `args`. A `run`, `noise`, `sweep`, `monitor` or `import` that made its
/// `--out` directory has it checked against the result invariants (invariants.rs) before the
/// test sees it, so that every result the suite produces keeps them.
pub fn jitterlab(args: &[&str]) -> Output {
    let output = Command::new(bin())
        .args(args)
        .output()
        .expect("the jitterlab binary runs");
    if let Some(out) = produced_dir(args) {
        invariants::check_result_dir(&out);
    }
    output
}

/// The result directory named by `--out`/`-o` of a command that writes one.
fn produced_dir(args: &[&str]) -> Option<PathBuf> {
    if !matches!(
        args.first(),
        Some(&("run" | "noise" | "sweep" | "monitor" | "import"))
    ) {
        return None;
    }
    let at = args.iter().position(|a| *a == "--out" || *a == "-o")?;
    args.get(at + 1).map(PathBuf::from)
}

pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The wake methods of jitterlab's table that can run here at `interval_ns`, so that a new
/// method is tested without an edit; the others are skipped with a printed reason (a missing
/// device such as /dev/rtc, or an interval the method does not take).
pub fn wake_methods_here(
    test: &str,
    interval_ns: u64,
) -> Vec<&'static jitterlab::measure::WakeMethod> {
    jitterlab::measure::wake::WAKE_METHODS
        .iter()
        .filter(|m| {
            let refused = m
                .check_system()
                .err()
                .or_else(|| m.interval_rule.and_then(|rule| rule(interval_ns).err()));
            if let Some(why) = &refused {
                eprintln!("SKIPPED {test} --wake {}: {why}", m.name);
            }
            refused.is_none()
        })
        .collect()
}

/// The `--cpus` of a run with `wake`: one CPU for a method built on a per-process resource
/// (ITIMER_REAL, the one /dev/rtc), `many` otherwise.
pub fn wake_cpus(wake: &jitterlab::measure::WakeMethod, many: &'static str) -> &'static str {
    if wake.per_process.is_some() {
        "0"
    } else {
        many
    }
}

/// Whether this process may use SCHED_FIFO. When it may not, the test is skipped with a
/// printed reason, unless JITTERLAB_REQUIRE_RT=1 (set by .ci/run), where it fails.
pub fn realtime_available(test: &str) -> bool {
    use jitterlab::sys::sched::{SCHED_FIFO, set_scheduler};
    // Try on a short-lived thread, so that the test thread itself stays SCHED_OTHER. Through
    // the sys layer: musl's sched_param has extra fields, and its wrapper returns ENOSYS.
    let ok = std::thread::spawn(|| set_scheduler(0, SCHED_FIFO, 1).is_ok())
        .join()
        .unwrap();
    if !ok {
        if std::env::var("JITTERLAB_REQUIRE_RT").as_deref() == Ok("1") {
            panic!("{test}: SCHED_FIFO is refused here and JITTERLAB_REQUIRE_RT=1 demands it");
        }
        eprintln!(
            "SKIPPED {test}: SCHED_FIFO is refused (run as root or with CAP_SYS_NICE to run it)"
        );
    }
    ok
}

/// Whether this process can trace (tracefs mounted at the usual place, instances creatable)
/// and use SCHED_FIFO. Skips with a reason, unless JITTERLAB_REQUIRE_RT=1, where it fails.
/// Whether the BPF back end of `--trace` can work here: the kernel's BTF exists (the programs'
/// loading is the run's to check, and a refusal fails the test). Under
/// JITTERLAB_REQUIRE_RT=1 a missing BTF is a failure, not a skip.
pub fn bpf_available(test: &str) -> bool {
    if Path::new("/sys/kernel/btf/vmlinux").exists() {
        return true;
    }
    if std::env::var("JITTERLAB_REQUIRE_RT").as_deref() == Ok("1") {
        panic!(
            "{test}: no /sys/kernel/btf/vmlinux and JITTERLAB_REQUIRE_RT=1 demands the BPF back end"
        );
    }
    eprintln!("SKIPPED {test}: the kernel has no BTF (/sys/kernel/btf/vmlinux)");
    false
}

pub fn tracing_available(test: &str) -> bool {
    if !realtime_available(test) {
        return false;
    }
    // Tests of one binary run in parallel: each probe gets its own name, or one test's probe
    // would make another's fail to create and the test skip (or panic under
    // JITTERLAB_REQUIRE_RT).
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let instances = Path::new("/sys/kernel/tracing").join("instances");
    let probe = instances.join(format!("jltest-probe-{}-{n}", std::process::id()));
    let ok = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    if !ok {
        if std::env::var("JITTERLAB_REQUIRE_RT").as_deref() == Ok("1") {
            panic!(
                "{test}: cannot create a tracing instance in /sys/kernel/tracing and JITTERLAB_REQUIRE_RT=1 demands it (mount -t tracefs nodev /sys/kernel/tracing; run as root)"
            );
        }
        eprintln!(
            "SKIPPED {test}: no writable tracefs at /sys/kernel/tracing (mount -t tracefs nodev /sys/kernel/tracing; run as root)"
        );
    }
    ok
}

/// Whether two CPUs are online, as a test that measures one against the other needs; says it
/// skips `test` when not.
pub fn two_cpus_online(test: &str) -> bool {
    let two = online_cpus().len() >= 2;
    if !two {
        eprintln!("SKIPPED {test}: needs two online CPUs");
    }
    two
}

/// Real-time scheduling and two online CPUs (for the tests that measure one CPU against the
/// other); each missing one is reported as a skip.
pub fn realtime_on_two_cpus(test: &str) -> bool {
    realtime_available(test) && two_cpus_online(test)
}

/// CLOCK_MONOTONIC now, ns: run.json's `start_monotonic_ns` and events.jsonl are on it.
pub fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    assert_eq!(
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) },
        0
    );
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

pub fn online_cpus() -> Vec<usize> {
    jitterlab::cpulist::online_cpus().unwrap()
}

pub fn run_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("run.json")).expect("run.json exists");
    serde_json::from_str(&text).expect("run.json is JSON")
}

pub fn temp_out() -> (tempfile::TempDir, PathBuf) {
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("run");
    (base, out)
}

/// One injection of the spike load, as events.jsonl logged it (CLOCK_MONOTONIC ns): the known
/// delay every ground-truth test checks against.
#[derive(Debug, Clone, Copy)]
pub struct Injection {
    /// When it was scheduled to start.
    pub due_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The spike load's injections on `cpu` in the results directory `out`, in order.
pub fn spike_injections(out: &Path, cpu: usize) -> Vec<Injection> {
    use jitterlab::format::events::Event;
    // events.jsonl, or a monitor's event files.
    jitterlab::results::loaded::read_events(out)
        .expect("the events are readable")
        .into_iter()
        .filter_map(|e| match e {
            Event::SpikeInjection {
                cpu: c,
                due_ns,
                start_ns,
                end_ns,
                ..
            } if c == cpu => Some(Injection {
                due_ns,
                start_ns,
                end_ns,
            }),
            _ => None,
        })
        .collect()
}

/// The explanations (`spike_explained`) in the results directory `out`, in order.
pub fn spike_explanations(out: &Path) -> Vec<jitterlab::format::events::SpikeExplanation> {
    use jitterlab::format::events::Event;
    // events.jsonl, or a monitor's event files.
    jitterlab::results::loaded::read_events(out)
        .expect("the events are readable")
        .into_iter()
        .filter_map(|e| match e {
            Event::SpikeExplained(x) => Some(x),
            _ => None,
        })
        .collect()
}

/// Every sample of samples.bin in the results directory `out`, on the run's own clock.
pub fn sample_records(out: &Path) -> Vec<jitterlab::format::samplelog::SampleRecord> {
    jitterlab::format::samplelog::SampleLogReader::open(&out.join("samples.bin"))
        .expect("samples.bin opens")
        .map(|s| s.expect("a whole sample"))
        .collect()
}

/// The thread entry of run.json for `cpu`.
pub fn thread(run: &serde_json::Value, cpu: usize) -> &serde_json::Value {
    run["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["cpu"] == cpu)
        .expect("a thread for the CPU")
}

/// How many periods of `interval_ns` the hypervisor may have taken from `cpu` during the run:
/// run.json's `steal` (the vCPU's steal time over the run, from /proc/stat, counted in ticks of
/// `steal.tick_ns`, so one tick is added for its rounding), in periods, rounded up. A period the
/// host took from the vCPU can be neither a sample nor served on time (a run at 1 ms beside 130
/// ms of steal here missed 61-97 of its 1000 due times, one beside 10 ms 8-16), so a test's floor
/// on samples or late wakeups counts these apart. 0 when run.json has no steal record (not a VM).
pub fn stolen_periods(run: &serde_json::Value, cpu: usize, interval_ns: u64) -> u64 {
    let steal = &run["steal"];
    let Some(tick_ns) = steal["tick_ns"].as_u64() else {
        return 0;
    };
    let stolen_ns = steal["cpus"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["cpu"] == cpu)
        .and_then(|c| c["steal_ns"].as_u64())
        .unwrap_or(0);
    if stolen_ns == 0 {
        return 0;
    }
    (stolen_ns + tick_ns).div_ceil(interval_ns)
}

/// A load that keeps every vCPU out of its idle state: one SCHED_OTHER spinner per CPU, which
/// every real-time thread of a scene preempts at once. On this VM a halted vCPU runs again only
/// when the host schedules it: a 5 s idle run on CPUs 0-1 here had 27 wakeups over 1 ms late on
/// one CPU, the same run beside this load 2 (p99 593 us against 38 us). Scenes whose ground truth
/// needs both CPUs on time for a few milliseconds (a spike on one, the sender on the other) run
/// beside it, so that the host's idle exits do not spoil most injections.
pub const KEEP_CPUS_BUSY: &str = "cpu:policy=other";

/// Runs a ground-truth check, allowing one retry. This machine is a VM: the host can stall a
/// virtual CPU for milliseconds at any moment, and such a stall inside an injection spoils that
/// injection's ground truth; a real error in the measurement fails both attempts the same way.
pub fn with_one_retry(what: &str, mut attempt: impl FnMut() -> Result<(), String>) {
    let mut failures = Vec::new();
    for _ in 0..2 {
        match attempt() {
            Ok(()) => return,
            Err(e) => {
                // Shown with --nocapture: how often the machine's noise costs a retry.
                eprintln!("{what}: attempt failed, retrying once: {e}");
                failures.push(e);
            }
        }
    }
    panic!("{what} failed twice: {failures:#?}");
}

/// A latency distribution for synthetic runs: a sample from a uniform draw u in [0, 1), ns.
pub type Dist = fn(f64) -> f64;

/// Uniform on [10 us, 50 us).
pub fn uniform_10_50(u: f64) -> f64 {
    10_000.0 + 40_000.0 * u
}

/// The same, 1.5 times slower.
pub fn uniform_15_75(u: f64) -> f64 {
    1.5 * uniform_10_50(u)
}

/// The true q-quantile of uniform [lo, hi).
pub fn uniform_quantile(lo: f64, hi: f64, q: f64) -> f64 {
    lo + (hi - lo) * q
}

/// Writes a synthetic run (`jitterlab::results::synthetic`) at `dir`: `cpus` woken every 1 ms
/// for `seconds` s with latencies drawn from `dist`, `per_second` samples per CPU per
/// interval of 1 s (or, with `seconds` = 1 and more than 1000, one whole-run interval of that
/// many samples, as imports have), and `missed_periods` written into each thread's summary.
/// Returns the record written.
pub fn write_known_run(
    dir: &Path,
    cpus: &[usize],
    seconds: u64,
    per_second: u64,
    dist: Dist,
    seed: u64,
    missed_periods: u64,
) -> jitterlab::format::RunRecord {
    use jitterlab::results::synthetic::{SyntheticRun, write_run};
    const MS: u64 = 1_000_000;
    // per_second samples at 1 ms: a single interval as long as it takes.
    let log_interval_ns = if per_second > 1000 {
        per_second * MS
    } else {
        1000 * MS
    };
    let run = SyntheticRun {
        cpus: cpus.to_vec(),
        interval_ns: 1000 * MS / per_second.min(1000),
        log_interval_ns,
        duration_ns: seconds * log_interval_ns,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed,
    };
    let mut record =
        write_run(dir, &run, |_, _, rng| dist(rng.uniform()).round() as i64).expect("written");
    if missed_periods > 0 {
        record
            .threads
            .iter_mut()
            .for_each(|t| t.missed_periods = missed_periods);
        jitterlab::results::ResultDir::open(dir)
            .unwrap()
            .write_run_record(&record)
            .unwrap();
    }
    record
}

/// The headless Chromium to run (`chromium` or `chromium-browser`), or None when neither is
/// installed: then `test` is skipped with a printed reason, unless JITTERLAB_REQUIRE_RT=1
/// demands it (.ci/run installs it).
pub fn chromium(test: &str) -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        if std::env::var("JITTERLAB_REQUIRE_RT").as_deref() == Ok("1") {
            panic!(
                "chromium is not installed and JITTERLAB_REQUIRE_RT=1 demands {test} (.ci/run installs it)"
            );
        }
        eprintln!("SKIPPED {test}: chromium is not installed (apt-get install chromium)");
    }
    found
}

/// Runs jitterlab with `args`, its output to files in `dir`; returns its exit code, its peak
/// resident memory (KiB) and its stderr.
///
/// The peak is GNU time's (`/usr/bin/time -f %M`), which forks jitterlab from its own small
/// process. The test binary's own wait4 would not do: a child spawned from it (vfork, then
/// exec) starts with the test binary's high-water mark as its maxrss (the kernel takes the old
/// address space's at exec), and another test of the same binary that held 138 MB made every
/// later child "use" 138 MB.
pub fn peak_rss(dir: &Path, args: &[&str]) -> (i32, i64, String) {
    let err = dir.join("stderr");
    let rss = dir.join("peak-rss");
    let status = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss)
        .arg(bin())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .status()
        .expect("/usr/bin/time runs (Debian package `time`)");
    // GNU time writes "Command exited with non-zero status N" before the figure then.
    let text = std::fs::read_to_string(&rss).unwrap();
    let kib: i64 = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("{args:?}: no peak from /usr/bin/time: {text:?}"));
    let code = status
        .code()
        .unwrap_or_else(|| panic!("{args:?}: ended by a signal: {status:?}"));
    (code, kib, std::fs::read_to_string(&err).unwrap())
}
