//! On fixture trees: the real files are the kernel's, and a unit test changes none of them.

use super::super::journal::{names_in, test_dir as open};
use super::*;
use std::fs as stdfs;

/// The journals in `dir`: its entries but the settings lock.
fn journals(dir: &Path) -> Vec<String> {
    names_in(dir)
        .into_iter()
        .filter(|n| n != LOCK_NAME)
        .collect()
}

/// The lock, taken for one change (the tests run one change at a time per directory).
fn lock(dir: &TrustedDir) -> SettingsLock {
    SettingsLock::take_with_cpus(dir, &[]).unwrap()
}

/// A root with the files the tests set: timer migration 1, the THP choice file, an IRQ.
fn tree() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (file, text) in [
        ("proc/sys/kernel/timer_migration", "1\n"),
        ("proc/sys/kernel/sched_rt_runtime_us", "950000\n"),
        (
            "sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise [madvise] never\n",
        ),
        ("proc/irq/36/smp_affinity_list", "1\n"),
    ] {
        let path = root.path().join(file);
        stdfs::create_dir_all(path.parent().unwrap()).unwrap();
        stdfs::write(path, text).unwrap();
    }
    root
}

fn value(root: &Path, file: &str) -> String {
    stdfs::read_to_string(root.join(file))
        .unwrap()
        .trim()
        .to_string()
}

/// Every file is journalled with its value before it is written; the end writes each back
/// (a choice file's selected word) and removes the journal; a file already at its value is
/// not touched or journalled.
#[test]
fn settings_are_journalled_written_and_written_back() {
    let root = tree();
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    let settings = [
        Setting::new("proc/sys/kernel/timer_migration", "0"),
        Setting::new("proc/sys/kernel/sched_rt_runtime_us", "-1"),
        Setting::new("sys/kernel/mm/transparent_hugepage/defrag", "madvise"),
    ];
    let mut changed = ChangedSettings::apply(&lock(&dir), root.path(), &dir, &settings).unwrap();
    assert_eq!(value(root.path(), "proc/sys/kernel/timer_migration"), "0");
    assert_eq!(
        value(root.path(), "proc/sys/kernel/sched_rt_runtime_us"),
        "-1"
    );
    let journal = format!("{KIND}-{}", std::process::id());
    assert_eq!(journals(dir.path()), std::slice::from_ref(&journal));
    let text = stdfs::read_to_string(dir.path().join(&journal)).unwrap();
    let lines: Vec<String> = text.lines().skip(3).map(str::to_string).collect();
    assert_eq!(
        parse_journal(&lines).unwrap(),
        [
            ("proc/sys/kernel/timer_migration".into(), "1".into()),
            (
                "proc/sys/kernel/sched_rt_runtime_us".into(),
                "950000".into()
            )
        ],
        "the unchanged THP choice is not journalled"
    );
    assert_eq!(changed.record.len(), 2);
    assert!(changed.restore().is_empty());
    assert_eq!(value(root.path(), "proc/sys/kernel/timer_migration"), "1");
    assert_eq!(
        value(root.path(), "proc/sys/kernel/sched_rt_runtime_us"),
        "950000"
    );
    assert!(changed.record.iter().all(|r| r.restored));
    assert!(journals(dir.path()).is_empty());
}

/// Dropping the change (an error later, a panic) writes back as well; a choice file is
/// written back with its selected word.
#[test]
fn drop_writes_back() {
    let root = tree();
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    let thp = "sys/kernel/mm/transparent_hugepage/defrag";
    drop(
        ChangedSettings::apply(
            &lock(&dir),
            root.path(),
            &dir,
            &[Setting::new(thp, "never")],
        )
        .unwrap(),
    );
    assert_eq!(value(root.path(), thp), "madvise");
    assert!(journals(dir.path()).is_empty());
}

/// A file outside the kernel's tunables, a path with `..`, an absolute one, or a value of two
/// lines is refused before anything is written or journalled.
#[test]
fn only_the_kernels_tunables_are_named() {
    let root = tree();
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    for (file, text) in [
        ("etc/passwd", "x"),
        ("proc/sys/kernel/../../../etc/passwd", "x"),
        ("/proc/sys/kernel/timer_migration", "0"),
        ("proc/sys/kernel/timer_migration", "0\n1"),
    ] {
        let e = ChangedSettings::apply(
            &lock(&dir),
            root.path(),
            &dir,
            &[
                Setting::new("proc/sys/kernel/sched_rt_runtime_us", "-1"),
                Setting::new(file, text),
            ],
        )
        .unwrap_err();
        assert!(
            e.contains("not a kernel setting") || e.contains("not one line"),
            "{e}"
        );
        assert_eq!(
            value(root.path(), "proc/sys/kernel/sched_rt_runtime_us"),
            "950000"
        );
        assert!(journals(dir.path()).is_empty());
    }
}

/// A write the kernel refuses undoes what was written (no half state), unless the setting may
/// be refused (an interrupt whose affinity is fixed): then it is recorded as refused.
#[test]
fn a_refused_write_leaves_no_half_state_unless_it_may_be_refused() {
    let root = tree();
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    // A file that reads but takes no write, as a fixed interrupt's affinity.
    stdfs::create_dir_all(root.path().join("proc/irq/37")).unwrap();
    std::os::unix::fs::symlink(
        "/proc/version",
        root.path().join("proc/irq/37/smp_affinity_list"),
    )
    .unwrap();
    let irq = |n: u32, refuse: bool| Setting {
        may_refuse: refuse,
        ..Setting::new(format!("proc/irq/{n}/smp_affinity_list"), "0")
    };
    let e = ChangedSettings::apply(
        &lock(&dir),
        root.path(),
        &dir,
        &[
            Setting::new("proc/sys/kernel/timer_migration", "0"),
            irq(37, false),
        ],
    )
    .unwrap_err();
    assert!(e.contains("proc/irq/37"), "{e}");
    assert_eq!(value(root.path(), "proc/sys/kernel/timer_migration"), "1");
    assert!(journals(dir.path()).is_empty());

    let changed = ChangedSettings::apply(
        &lock(&dir),
        root.path(),
        &dir,
        &[irq(37, true), irq(36, false)],
    )
    .unwrap();
    assert_eq!(value(root.path(), "proc/irq/36/smp_affinity_list"), "0");
    let refused = &changed.record[0];
    assert!(
        refused.during.is_none() && refused.refused.is_some(),
        "{refused:?}"
    );
    drop(changed);
    assert_eq!(value(root.path(), "proc/irq/36/smp_affinity_list"), "1");
    assert!(journals(dir.path()).is_empty());
}

/// A killed run's journal (its writer gone) is undone: its files written back; one whose write
/// fails is kept for the next start; one naming a file outside the tunables is left alone.
#[test]
fn a_killed_runs_journal_is_undone() {
    let root = tree();
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    stdfs::write(root.path().join("proc/sys/kernel/timer_migration"), "0\n").unwrap();
    drop(Journal::create(&dir, KIND, &["proc/sys/kernel/timer_migration\t1".into()]).unwrap());
    super::super::journal::wait_until_unlocked(&dir);
    let found = super::super::journal::scan(&dir, KIND);
    let (said, done) = undo(&found.stale[0], root.path());
    assert!(done, "{said}");
    assert!(said.starts_with("set back 1 kernel setting(s)"), "{said}");
    assert!(
        said.contains("/proc/sys/kernel/timer_migration = 1"),
        "{said}"
    );
    assert_eq!(value(root.path(), "proc/sys/kernel/timer_migration"), "1");
    let (said, done) = undo(
        &super::super::journal::Stale::fake(vec!["proc/sys/kernel/absent\t1".into()]),
        root.path(),
    );
    assert!(!done && said.contains("proc/sys/kernel/absent"), "{said}");
    for line in ["etc/shadow\tx", "proc/sys/../../etc/shadow\tx", "no tab"] {
        let (said, done) = undo(
            &super::super::journal::Stale::fake(vec![line.into()]),
            root.path(),
        );
        assert!(!done && said.contains("left alone"), "{line}: {said}");
    }
}

/// One changer at a time: a second lock is refused while the first is held (two tunes at once
/// set each other's changes back wrongly), and taken once it is given back.
#[test]
fn a_second_changer_is_refused_while_the_first_holds_the_lock() {
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    let first = SettingsLock::take_with_cpus(&dir, &[]).unwrap();
    let e = SettingsLock::take_with_cpus(&dir, &[]).unwrap_err();
    assert!(
        e.contains("another jitterlab is changing kernel settings"),
        "{e}"
    );
    assert!(e.contains(LOCK_NAME), "{e}");
    drop(first);
    SettingsLock::take_with_cpus(&dir, &[]).unwrap();
}

/// S1: the settings are the machine's, so the lock holds every CPU's lock: a CPU another
/// process measures (holds its lock) refuses it, naming the holder and why; the settings lock
/// is given back with the refusal.
#[test]
fn the_settings_lock_is_refused_while_a_cpu_is_measured() {
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    // A CPU no run measures, its lock held by this test as a run's would be.
    let cpu = 4094;
    let shared = Path::new(crate::session::cpulock::LOCK_DIR);
    if std::fs::create_dir_all(shared).is_err() {
        eprintln!("skipped: cannot make {}", shared.display());
        return;
    }
    let path = shared.join(format!("cpu{cpu}.lock"));
    let Ok(held) = std::fs::File::create(&path) else {
        eprintln!("skipped: cannot make {}", path.display());
        return;
    };
    // From another process, so that this process's own locks do not count it as its own.
    let mut holder = std::process::Command::new("flock")
        .arg(&path)
        .args(["sleep", "20"])
        .spawn()
        .unwrap();
    drop(held);
    let taken = (0..50).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::fs::File::open(&path).is_ok_and(|f| f.try_lock().is_err())
    });
    let e = SettingsLock::take_with_cpus(&dir, &[cpu]).map(drop);
    let _ = holder.kill();
    let _ = holder.wait();
    let _ = std::fs::remove_file(&path);
    assert!(taken, "the holder took the lock");
    let e = e.unwrap_err();
    assert!(e.contains("kernel settings are the whole machine's"), "{e}");
    assert!(e.contains(&format!("CPU {cpu}")), "{e}");
    // M1: a tune can only wait: it measures no chosen CPUs and cannot share.
    assert!(e.contains("wait for it to end"), "{e}");
    assert!(
        !e.contains("measure other CPUs") && !e.contains("pass --allow-shared-cpus"),
        "{e}"
    );
    // Refused whole: the settings lock itself is free again.
    SettingsLock::take_with_cpus(&dir, &[]).unwrap();
}

/// An arm that changes nothing (the baseline) writes no journal, so a SIGKILL during it
/// leaves nothing for the next start to "set back".
#[test]
fn a_change_of_nothing_writes_no_journal() {
    let root = tree();
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    let changed = ChangedSettings::apply(
        &lock(&dir),
        root.path(),
        &dir,
        &[Setting::new("proc/sys/kernel/timer_migration", "1")],
    )
    .unwrap();
    assert!(changed.record.is_empty());
    assert!(journals(dir.path()).is_empty());
}

/// A killed run's journal naming a file that takes no write but already reads as it did (a
/// managed interrupt's affinity that refused the arm's write) is done with: before, its
/// failing write kept the journal, and every later start said "cannot set back".
#[test]
fn a_journalled_file_that_reads_as_before_is_set_back_without_a_write() {
    let root = tree();
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    stdfs::create_dir_all(root.path().join("proc/irq/37")).unwrap();
    let fixed = "proc/irq/37/smp_affinity_list";
    std::os::unix::fs::symlink("/proc/version", root.path().join(fixed)).unwrap();
    let before = read_value(root.path(), fixed).unwrap();
    assert!(
        write_value(root.path(), fixed, &before).is_err(),
        "the fixture takes no write"
    );
    let lines = [
        format!("{fixed}\t{before}"),
        "proc/sys/kernel/timer_migration\t1".into(),
    ];
    stdfs::write(root.path().join("proc/sys/kernel/timer_migration"), "0\n").unwrap();
    drop(Journal::create(&dir, KIND, &lines).unwrap());
    super::super::journal::wait_until_unlocked(&dir);
    let found = super::super::journal::scan(&dir, KIND);
    let (said, done) = undo(&found.stale[0], root.path());
    assert!(done, "{said}");
    assert_eq!(value(root.path(), "proc/sys/kernel/timer_migration"), "1");
}

/// L7-b: a symbolic link planted as the settings lock is refused as the other planted kinds
/// are ("not a lock file of this user"), never followed; its target is untouched.
#[test]
fn a_link_planted_as_the_settings_lock_is_said_so() {
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    let victim = run.path().join("victim");
    stdfs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join(LOCK_NAME)).unwrap();
    let e = SettingsLock::take_with_cpus(&dir, &[]).unwrap_err();
    assert!(
        e.contains("is not a lock file of this user (a symbolic link): remove it"),
        "{e}"
    );
    assert_eq!(stdfs::read_to_string(&victim).unwrap(), "precious");
}
