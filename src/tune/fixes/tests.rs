//! On fixture trees shaped as this project's VM and as an RT box.

use super::*;
use std::fs as stdfs;

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (file, text) in files {
        let path = root.path().join(file);
        stdfs::create_dir_all(path.parent().unwrap()).unwrap();
        stdfs::write(path, format!("{text}\n")).unwrap();
    }
    root
}

fn ctx(root: &Path, measured: &[usize], online: usize) -> Ctx {
    Ctx {
        root: root.to_path_buf(),
        measured: measured.to_vec(),
        online: (0..online).collect(),
        pm_qos_elsewhere: None,
    }
}

fn probe(name: &str, c: &Ctx) -> Probe {
    (find(name).unwrap().probe)(c)
}

/// This VM's state: throttling at 950000, migration on, watchdogs half on, THP defrag
/// madvise, KSM off, no cpuidle driver, IRQs 36 on CPU 1 and 41 on CPU 0.
fn this_vm() -> tempfile::TempDir {
    tree(&[
        ("proc/sys/kernel/sched_rt_runtime_us", "950000"),
        ("proc/sys/kernel/timer_migration", "1"),
        ("proc/sys/kernel/nmi_watchdog", "0"),
        ("proc/sys/kernel/soft_watchdog", "1"),
        ("proc/sys/vm/stat_interval", "1"),
        (
            "sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise [madvise] never",
        ),
        ("sys/kernel/mm/ksm/run", "0"),
        ("sys/devices/virtual/workqueue/cpumask", "3"),
        ("sys/devices/virtual/workqueue/writeback/cpumask", "3"),
        ("proc/irq/36/smp_affinity_list", "1"),
        ("proc/irq/36/effective_affinity_list", "1"),
        ("proc/irq/41/smp_affinity_list", "0-1"),
        ("proc/irq/41/effective_affinity_list", "0"),
        ("proc/cmdline", "console=ttyS0 root=/dev/vda"),
    ])
}

#[test]
fn each_fix_applies_or_says_why_not_on_this_vm() {
    let root = this_vm();
    let c = ctx(root.path(), &[1], 2);
    let settings_of = |name: &str| match probe(name, &c) {
        Probe::Applies {
            change: Change::Settings(s),
            ..
        } => s.into_iter().map(|s| (s.file, s.value)).collect::<Vec<_>>(),
        other => panic!("{name}: {other:?}"),
    };
    let pair = |f: &str, v: &str| (f.to_string(), v.to_string());
    assert_eq!(
        settings_of("irq-affinity"),
        [pair("proc/irq/36/smp_affinity_list", "0")],
        "only the interrupt delivered to CPU 1, moved to CPU 0"
    );
    assert_eq!(
        settings_of("rt-throttling"),
        [pair("proc/sys/kernel/sched_rt_runtime_us", "-1")]
    );
    assert_eq!(
        settings_of("timer-migration"),
        [pair("proc/sys/kernel/timer_migration", "0")]
    );
    assert_eq!(
        settings_of("workqueues"),
        [
            pair("sys/devices/virtual/workqueue/cpumask", "1"),
            pair("sys/devices/virtual/workqueue/writeback/cpumask", "1")
        ]
    );
    assert_eq!(
        settings_of("soft-watchdog"),
        [pair("proc/sys/kernel/soft_watchdog", "0")]
    );
    assert_eq!(
        settings_of("thp"),
        [pair("sys/kernel/mm/transparent_hugepage/defrag", "never")]
    );
    assert_eq!(
        settings_of("vmstat"),
        [pair("proc/sys/vm/stat_interval", "10")]
    );
    for (name, why) in [
        ("pm-qos", "no cpuidle driver"),
        ("nmi-watchdog", "the NMI watchdog is already off"),
        ("ksm", "KSM is not running"),
        ("cpuset", "no cgroup v2 cpuset controller"),
    ] {
        match probe(name, &c) {
            Probe::NotApplicable(w) => assert!(w.contains(why), "{name}: {w}"),
            other => panic!("{name}: {other:?}"),
        }
    }
    for name in ["isolation", "preempt-rt"] {
        match probe(name, &c) {
            Probe::NeedsReboot(how) => assert!(how.contains("compare"), "{name}: {how}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// Every CPU measured: nowhere to move interrupts or work; an interrupt on no measured CPU is
/// not moved.
#[test]
fn nothing_moves_where_there_is_no_housekeeping_cpu() {
    let root = this_vm();
    let all = ctx(root.path(), &[0, 1], 2);
    for name in ["irq-affinity", "workqueues"] {
        assert!(
            matches!(probe(name, &all), Probe::NotApplicable(_)),
            "{name}"
        );
    }
    let cpu0 = ctx(root.path(), &[0], 2);
    match probe("irq-affinity", &cpu0) {
        Probe::Applies {
            change: Change::Settings(s),
            now,
        } => {
            assert_eq!(s.len(), 1, "{s:?}");
            assert_eq!(s[0].file, "proc/irq/41/smp_affinity_list");
            assert!(s[0].may_refuse);
            assert_eq!(s[0].value, "1");
            assert!(now.contains("41 on 0"), "{now}");
        }
        other => panic!("{other:?}"),
    }
}

/// An interrupt just pinned to a measured CPU shows its old CPU as effective until it next
/// fires (x86 moves it then): it is moved all the same, and said so. One allowed on every CPU
/// but delivered elsewhere stays.
#[test]
fn an_interrupt_pinned_to_a_measured_cpu_moves_before_it_has_fired_there() {
    let root = tree(&[
        ("proc/irq/34/smp_affinity_list", "1"),
        ("proc/irq/34/effective_affinity_list", "0"),
        ("proc/irq/41/smp_affinity_list", "0-1"),
        ("proc/irq/41/effective_affinity_list", "0"),
    ]);
    match probe("irq-affinity", &ctx(root.path(), &[1], 2)) {
        Probe::Applies {
            change: Change::Settings(s),
            now,
        } => {
            let files: Vec<_> = s
                .iter()
                .map(|s| (s.file.as_str(), s.value.as_str()))
                .collect();
            assert_eq!(files, [("proc/irq/34/smp_affinity_list", "0")]);
            assert!(now.contains("34 on 1 (pinned, not yet moved)"), "{now}");
        }
        other => panic!("{other:?}"),
    }
}

/// A tuned RT box: every fix already made or not there.
#[test]
fn a_tuned_box_has_nothing_to_measure() {
    let root = tree(&[
        ("proc/sys/kernel/sched_rt_runtime_us", "-1"),
        ("proc/sys/kernel/timer_migration", "0"),
        ("proc/sys/kernel/nmi_watchdog", "0"),
        ("proc/sys/kernel/soft_watchdog", "0"),
        ("proc/sys/vm/stat_interval", "10"),
        (
            "sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise madvise [never]",
        ),
        ("sys/devices/virtual/workqueue/cpumask", "1"),
        ("proc/irq/36/smp_affinity_list", "0"),
        ("sys/kernel/realtime", "1"),
        (
            "proc/cmdline",
            "isolcpus=domain,managed_irq,1 nohz_full=1 rcu_nocbs=1",
        ),
    ]);
    let c = ctx(root.path(), &[1], 2);
    for fix in FIXES {
        assert!(
            matches!((fix.probe)(&c), Probe::NotApplicable(_)),
            "{}: {:?}",
            fix.name,
            (fix.probe)(&c)
        );
    }
}

#[test]
fn cpu_masks_read_and_write_as_the_kernel_prints_them() {
    assert_eq!(hex_mask(&[0]), "1");
    assert_eq!(hex_mask(&[0, 1]), "3");
    assert_eq!(hex_mask(&[1, 35]), "8,00000002");
    assert_eq!(parse_hex_mask("8,00000002").unwrap(), [1, 35]);
    assert_eq!(parse_hex_mask("ff").unwrap(), (0..8).collect::<Vec<_>>());
    assert!(parse_hex_mask("zz").is_none());
}

/// Every fix has a name fit for the command line, a reason, and a doctor check that exists.
#[test]
fn the_table_is_whole() {
    let root = this_vm();
    let doctor = crate::doctor::checks::Ctx::new(root.path(), &[1], false);
    let ids: Vec<String> = crate::doctor::checks::all(&doctor)
        .into_iter()
        .map(|c| c.id)
        .collect();
    let mut names: Vec<&str> = FIXES.iter().map(|f| f.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), FIXES.len(), "names are unique");
    for f in FIXES {
        assert!(
            f.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "{}",
            f.name
        );
        assert!(f.what.len() > 40, "{}", f.name);
        assert!(
            f.doctor_check.is_empty() || ids.iter().any(|i| i == f.doctor_check),
            "{}: no doctor check {}",
            f.name,
            f.doctor_check
        );
    }
}

/// S1: PM QoS is the whole machine's. While another process holds a request (another run,
/// tuned's force_latency), every arm runs with it in force, the baseline's too: the pm-qos fix
/// is not measured, and says who holds it.
#[test]
fn pm_qos_held_by_another_process_is_not_measured() {
    let root = tree(&[(
        "sys/devices/system/cpu/cpuidle/current_driver",
        "intel_idle",
    )]);
    let mut c = ctx(root.path(), &[1], 2);
    assert!(matches!(probe("pm-qos", &c), Probe::Applies { .. }));
    c.pm_qos_elsewhere =
        Some("PM QoS 0 us is in force, held by a process that is not jitterlab: pid 9".into());
    match probe("pm-qos", &c) {
        Probe::NotApplicable(why) => assert!(
            why.starts_with("PM QoS 0 us is in force, held by a process that is not jitterlab: pid 9: every arm, the baseline's too")
                && why.contains("/dev/cpu_dma_latency"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}
