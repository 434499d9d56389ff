//! Every file-based check against the fixture trees of tests/data/doctor (written by
//! make_fixtures.py there), with the verdict each must give on each machine.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Ctx, all, param_cpus};
use crate::doctor::snapshot::snapshot_at;
use crate::doctor::verdict::Verdict::{self, Fail, Ok, Unknown, Warn};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doctor")).join(name)
}

/// Runs all file-based checks on a fixture (never live) and compares every verdict.
fn expect(name: &str, measured: &[usize], expected: &[(&str, Verdict)]) {
    let root = fixture(name);
    let ctx = Ctx::new(&root, measured, false);
    let got: BTreeMap<String, (Verdict, String)> = all(&ctx)
        .into_iter()
        .map(|c| (c.id.clone(), (c.verdict, c.evidence)))
        .collect();
    let want: BTreeMap<String, Verdict> = expected
        .iter()
        .map(|(id, v)| (id.to_string(), *v))
        .collect();
    let mut wrong = Vec::new();
    for (id, (verdict, evidence)) in &got {
        match want.get(id) {
            Some(w) if w == verdict => {}
            Some(w) => wrong.push(format!(
                "{id}: expected {w:?}, got {verdict:?} ({evidence})"
            )),
            None => wrong.push(format!(
                "{id}: no expectation (got {verdict:?}: {evidence})"
            )),
        }
    }
    for id in want.keys().filter(|id| !got.contains_key(*id)) {
        wrong.push(format!("{id}: expected but not run"));
    }
    assert!(
        wrong.is_empty(),
        "fixture {name}:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn tuned_preempt_rt_machine_is_all_ok() {
    expect(
        "rt-tuned",
        &[2, 3],
        &[
            ("kernel.preemption", Ok),
            ("kernel.hz", Ok),
            ("kernel.hrtimers", Ok),
            ("kernel.clocksource", Ok),
            ("kernel.isolation", Ok),
            ("kernel.timer_migration", Ok),
            ("kernel.watchdogs", Ok),
            ("kernel.debug_options", Ok),
            ("scheduling.rt_throttling", Ok),
            ("scheduling.rt_group", Ok),
            ("scheduling.cgroup", Ok),
            ("scheduling.rlimit_rtprio", Ok),
            ("scheduling.cap_sys_nice", Ok),
            ("scheduling.rlimit_memlock", Ok),
            ("scheduling.cap_ipc_lock", Ok),
            ("cpu.governor", Ok),
            ("cpu.idle_states", Ok),
            ("cpu.smt", Ok),
            ("cpu.numa", Ok),
            ("irq.affinity", Ok),
            ("irq.irqbalance", Ok),
            ("memory.thp", Ok),
            ("memory.swap", Ok),
            ("memory.ksm", Ok),
            ("virtualization.hypervisor", Ok),
            ("virtualization.steal", Ok),
            ("virtualization.container", Ok),
            ("tracing.tracefs", Ok),
            ("tracing.btf", Ok),
        ],
    );
}

#[test]
fn stock_desktop_kernel_warns_and_fails_on_rtprio() {
    expect(
        "desktop",
        &[],
        &[
            ("kernel.preemption", Warn),
            ("kernel.hz", Ok),
            ("kernel.hrtimers", Ok),
            ("kernel.clocksource", Ok),
            ("kernel.isolation", Warn),
            ("kernel.timer_migration", Warn),
            ("kernel.watchdogs", Warn),
            ("kernel.debug_options", Ok),
            ("scheduling.rt_throttling", Warn),
            ("scheduling.rt_group", Ok),
            ("scheduling.cgroup", Ok),
            ("scheduling.rlimit_rtprio", Fail),
            ("scheduling.cap_sys_nice", Warn),
            ("scheduling.rlimit_memlock", Warn),
            ("scheduling.cap_ipc_lock", Warn),
            ("cpu.governor", Warn),
            ("cpu.idle_states", Warn),
            ("cpu.smt", Warn),
            ("cpu.numa", Ok),
            ("irq.affinity", Warn),
            ("irq.irqbalance", Warn),
            ("memory.thp", Ok),
            ("memory.swap", Warn),
            ("memory.ksm", Ok),
            ("virtualization.hypervisor", Ok),
            ("virtualization.steal", Ok),
            ("virtualization.container", Ok),
            ("tracing.tracefs", Ok),
            ("tracing.btf", Ok),
        ],
    );
}

#[test]
fn vm_with_debug_kernel() {
    expect(
        "vm",
        &[],
        &[
            ("kernel.preemption", Warn),
            ("kernel.hz", Ok),
            ("kernel.hrtimers", Ok),
            ("kernel.clocksource", Ok),
            ("kernel.isolation", Warn),
            ("kernel.timer_migration", Warn),
            ("kernel.watchdogs", Warn),
            ("kernel.debug_options", Warn),
            ("scheduling.rt_throttling", Warn),
            ("scheduling.rt_group", Ok),
            ("scheduling.cgroup", Ok),
            ("scheduling.rlimit_rtprio", Ok),
            ("scheduling.cap_sys_nice", Ok),
            ("scheduling.rlimit_memlock", Ok),
            ("scheduling.cap_ipc_lock", Ok),
            ("cpu.governor", Unknown),
            ("cpu.idle_states", Ok),
            ("cpu.smt", Ok),
            ("cpu.numa", Ok),
            ("irq.affinity", Warn),
            ("irq.irqbalance", Warn),
            ("memory.thp", Warn),
            ("memory.swap", Ok),
            ("memory.ksm", Ok),
            ("virtualization.hypervisor", Warn),
            ("virtualization.steal", Warn),
            ("virtualization.container", Ok),
            ("tracing.tracefs", Warn),
            ("tracing.btf", Warn),
        ],
    );
}

#[test]
fn container_without_rt_runtime_fails() {
    expect(
        "container",
        &[],
        &[
            ("kernel.preemption", Ok),
            ("kernel.hz", Unknown),
            ("kernel.hrtimers", Unknown),
            ("kernel.clocksource", Ok),
            ("kernel.isolation", Warn),
            ("kernel.timer_migration", Warn),
            ("kernel.watchdogs", Warn),
            ("kernel.debug_options", Unknown),
            ("scheduling.rt_throttling", Warn),
            ("scheduling.rt_group", Fail),
            ("scheduling.cgroup", Ok),
            ("scheduling.rlimit_rtprio", Fail),
            ("scheduling.cap_sys_nice", Warn),
            ("scheduling.rlimit_memlock", Warn),
            ("scheduling.cap_ipc_lock", Warn),
            ("cpu.governor", Warn),
            ("cpu.idle_states", Ok),
            ("cpu.smt", Ok),
            ("cpu.numa", Ok),
            ("irq.affinity", Warn),
            ("irq.irqbalance", Ok),
            ("memory.thp", Ok),
            ("memory.swap", Ok),
            ("memory.ksm", Ok),
            ("virtualization.hypervisor", Ok),
            ("virtualization.steal", Ok),
            ("virtualization.container", Warn),
            ("tracing.tracefs", Warn),
            ("tracing.btf", Ok),
        ],
    );
}

#[test]
fn an_empty_root_gives_unknowns_not_panics() {
    let empty = tempfile::tempdir().unwrap();
    let snap = snapshot_at(empty.path(), &[], false);
    assert!(snap.checks.iter().any(|c| c.verdict == Unknown));
    assert_eq!(snap.preemption_model, "unknown");
    assert!(
        snap.checks
            .iter()
            .all(|c| !c.evidence.is_empty() && !c.why.is_empty())
    );
}

#[test]
fn snapshot_facts_come_from_the_tree() {
    let rt = snapshot_at(&fixture("rt-tuned"), &[2, 3], false);
    assert_eq!(rt.preemption_model, "PREEMPT_RT");
    assert_eq!(rt.kernel_release, "6.12.0-rt5");
    assert!(rt.kernel_version.starts_with("#1 SMP PREEMPT_RT"));
    assert_eq!(
        (
            rt.cpu_count,
            rt.online_cpus.clone(),
            rt.measured_cpus.clone()
        ),
        (4, vec![0, 1, 2, 3], vec![2, 3])
    );
    assert_eq!(rt.hz, Some(1000));
    assert_eq!(rt.hypervisor, None);
    assert!(rt.representativeness_warnings(false).is_empty());
    assert!(!rt.any_fail());

    let vm = snapshot_at(&fixture("vm"), &[], false);
    assert_eq!(vm.preemption_model, "PREEMPT_DYNAMIC (voluntary)");
    assert_eq!(vm.hypervisor.as_deref(), Some("QEMU"));
    assert_eq!(vm.clocksource.as_deref(), Some("kvm-clock"));
    assert!(vm.steal_since_boot_percent.unwrap() > 1.0);
    let warnings = vm.representativeness_warnings(true);
    assert_eq!(warnings.len(), 4, "{warnings:#?}");
    assert!(warnings[0].contains("virtual machine") && warnings[0].contains("QEMU"));
    assert!(warnings[1].contains("RT throttling"));
    assert!(warnings[2].contains("not PREEMPT_RT"));
    assert!(warnings[3].contains("without real-time priority"));

    let desktop = snapshot_at(&fixture("desktop"), &[], false);
    assert_eq!(desktop.preemption_model, "PREEMPT_DYNAMIC (voluntary)");
    assert!(desktop.any_fail());
    // The fix for a failing check tells what to do.
    let rtprio = desktop.check("scheduling.rlimit_rtprio").unwrap();
    assert!(rtprio.fix.contains("CAP_SYS_NICE") && rtprio.evidence.contains("soft 0"));
    // ok checks carry no fix.
    assert!(
        desktop
            .checks
            .iter()
            .filter(|c| c.verdict == Ok)
            .all(|c| c.fix.is_empty())
    );
}

/// Issue 30: the switch to full preemption is a debugfs file; where debugfs is not mounted
/// (the desktop), the fix mounts it before writing to it; where it is (the VM), it does not.
#[test]
fn the_preemption_fix_mounts_debugfs_first_where_it_is_not_mounted() {
    let fix = |name: &str| {
        let root = fixture(name);
        let check = super::kernel::preemption(&Ctx::new(&root, &[], false));
        assert_eq!(check.verdict, Warn, "{name}: {}", check.evidence);
        check.fix
    };
    let desktop = fix("desktop");
    let (mount, echo) = (
        desktop.find("`mount -t debugfs none /sys/kernel/debug`"),
        desktop.find("`echo full > /sys/kernel/debug/sched/preempt`"),
    );
    assert!(
        matches!((mount, echo), (Some(m), Some(e)) if m < e),
        "{desktop}"
    );
    let vm = fix("vm");
    assert!(
        vm.contains("`echo full > /sys/kernel/debug/sched/preempt`"),
        "{vm}"
    );
    assert!(!vm.contains("mount -t debugfs"), "{vm}");
}

#[test]
fn container_rt_group_names_the_cgroup_file() {
    let root = fixture("container");
    let c = super::sched::rt_group(&Ctx::new(&root, &[], false));
    assert!(
        c.evidence
            .contains("/sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us = 0"),
        "{}",
        c.evidence
    );
    assert!(c.fix.contains("--cpu-rt-runtime"));
}

#[test]
fn isolation_against_a_subset_of_the_desktop() {
    let root = fixture("desktop");
    let c = super::kernel::isolation(&Ctx::new(&root, &[3], false));
    assert_eq!(c.verdict, Warn);
    assert!(
        c.fix.contains("nohz_full=3") && c.fix.contains("irqaffinity=0-2,4-7"),
        "{}",
        c.fix
    );
}

#[test]
fn kernel_parameters_drop_flag_words() {
    assert_eq!(
        param_cpus("domain,managed_irq,2-3"),
        (vec!["domain".into(), "managed_irq".into()], vec![2, 3])
    );
    assert_eq!(param_cpus("1,5"), (vec![], vec![1, 5]));
}

#[test]
fn json_round_trips() {
    let snap = snapshot_at(&fixture("vm"), &[], false);
    let text = serde_json::to_string(&snap).unwrap();
    let back: crate::doctor::SystemSnapshot = serde_json::from_str(&text).unwrap();
    assert_eq!(back.checks.len(), snap.checks.len());
    assert!(text.contains("\"verdict\":\"warn\""));
}

#[test]
fn containers_are_named_by_each_mark_in_turn() {
    use super::container::detect;
    let dir = tempfile::tempdir().unwrap();
    let put = |rel: &str, text: &[u8]| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let runtime = || detect(&Ctx::new(dir.path(), &[], false)).map(|c| c.runtime);
    put(
        "proc/self/cgroup",
        b"0::/user.slice/user-0.slice/session-1.scope\n",
    );
    assert_eq!(runtime(), None);
    put(
        "proc/self/cgroup",
        b"0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope\n",
    );
    assert_eq!(runtime().as_deref(), Some("kubernetes"));
    put(
        "proc/1/environ",
        b"PATH=/bin\0container=systemd-nspawn\0HOME=/\0",
    );
    assert_eq!(runtime().as_deref(), Some("systemd-nspawn"));
    put(
        "run/.containerenv",
        b"engine=\"podman-4.9.3\"\nname=\"rt\"\n",
    );
    assert_eq!(runtime().as_deref(), Some("podman"));
    put(".dockerenv", b"");
    let c = detect(&Ctx::new(dir.path(), &[], false)).unwrap();
    assert_eq!(
        (c.runtime.as_str(), c.evidence.as_str()),
        ("docker", "/.dockerenv exists")
    );
    let check = super::container::container(&Ctx::new(dir.path(), &[], false));
    assert_eq!(check.verdict, Warn);
    assert!(
        check.fix.contains("--cap-add SYS_NICE") && check.fix.contains("--ulimit rtprio=99"),
        "{}",
        check.fix
    );
}

#[test]
fn the_cgroup_layout_names_version_cpuset_and_group() {
    let check =
        |name: &str| super::container::cgroup(&Ctx::new(&fixture(name), &[], false)).evidence;
    let c = check("container");
    assert!(
        c.starts_with("cgroup v1;") && c.ends_with("this process in /docker/3f2a9c"),
        "{c}"
    );
    let d = check("desktop");
    assert!(d.starts_with("cgroup v2 at /sys/fs/cgroup;"), "{d}");
}
