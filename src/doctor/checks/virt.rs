//! Virtualization checks: is there a hypervisor, and does it take CPU time from us (steal)?

use std::time::Duration;

use super::Ctx;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

/// How long the live steal sample watches /proc/stat. Short, because the snapshot precedes
/// every run; long enough to see a few ticks of steal on a busy host.
pub(crate) const STEAL_WINDOW: Duration = Duration::from_millis(100);

/// Who the hypervisor is, if there is one: `Some("KVM")`, or `Some("unknown")` when only the
/// CPU's hypervisor flag says so. None on bare metal (or when nothing tells).
pub(crate) fn hypervisor_name(ctx: &Ctx) -> Option<String> {
    let flagged = root::read(ctx.root, "proc/cpuinfo").is_ok_and(|t| cpuinfo_flagged(&t));
    // Xen shows itself in /sys/hypervisor; others in the DMI vendor strings.
    let named = root::read_trim(ctx.root, "sys/hypervisor/type")
        .ok()
        .filter(|t| !t.is_empty())
        .or_else(|| {
            let dmi = |f: &str| {
                root::read_trim(ctx.root, &format!("sys/devices/virtual/dmi/id/{f}")).ok()
            };
            let vendor = dmi("sys_vendor").unwrap_or_default();
            let product = dmi("product_name").unwrap_or_default();
            let text = format!("{vendor} {product}");
            [
                "QEMU",
                "KVM",
                "VMware",
                "VirtualBox",
                "Xen",
                "Amazon EC2",
                "Google Compute Engine",
                "Microsoft Corporation Virtual Machine",
                "Parallels",
                "Bochs",
            ]
            .into_iter()
            .find(|n| text.contains(n))
            .map(String::from)
        });
    // A device-tree machine booted without firmware (qemu's arm64 `virt` with -kernel) has
    // neither DMI nor a CPU flag; its tree names the machine (lab check 8).
    let named = named.or_else(|| {
        root::read(ctx.root, "sys/firmware/devicetree/base/compatible")
            .ok()
            .filter(|c| c.split('\0').any(|m| m == "linux,dummy-virt"))
            .map(|_| "QEMU".to_string())
    });
    let named = named.or_else(|| {
        if ctx.live && flagged {
            cpuid_vendor()
        } else {
            None
        }
    });
    match (flagged, named) {
        (_, Some(n)) => Some(n),
        (true, None) => Some("unknown".into()),
        (false, None) => None,
    }
}

/// Whether the CPU flags in /proc/cpuinfo include `hypervisor` (x86: CPUID.1:ECX bit 31).
pub(crate) fn cpuinfo_flagged(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"))
}

/// The hypervisor's signature from CPUID leaf 0x40000000 ("KVMKVMKVM", "Microsoft Hv", ...).
#[cfg(target_arch = "x86_64")]
fn cpuid_vendor() -> Option<String> {
    // SAFETY: CPUID exists on every x86-64 CPU; leaf 0x40000000 is reserved for hypervisors
    // and returns zeros or garbage-free registers on bare metal.
    #[allow(unused_unsafe)]
    let r = unsafe { std::arch::x86_64::__cpuid(0x4000_0000) };
    let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let s: String = String::from_utf8_lossy(&bytes)
        .trim_matches(char::from(0))
        .trim()
        .to_string();
    let known = [
        ("KVMKVMKVM", "KVM"),
        ("Microsoft Hv", "Hyper-V"),
        ("VMwareVMware", "VMware"),
        ("XenVMMXenVMM", "Xen"),
        ("TCGTCGTCGTCG", "QEMU"),
        ("ACRNACRNACRN", "ACRN"),
        ("bhyve bhyve", "bhyve"),
    ];
    known
        .iter()
        .find(|(sig, _)| s.starts_with(sig))
        .map(|(_, n)| n.to_string())
        .or((!s.is_empty() && s.is_ascii()).then_some(s))
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_vendor() -> Option<String> {
    None
}

const HYPERVISOR: Spec = Spec {
    id: "virtualization.hypervisor",
    area: "virtualization",
    why: "In a virtual machine the host schedules the virtual CPUs and takes interrupts of its \
          own; the guest's latencies include all of that and say little about the hardware.",
};

pub(crate) fn hypervisor(ctx: &Ctx) -> Check {
    if root::read(ctx.root, "proc/cpuinfo").is_err() {
        return HYPERVISOR.unknown("cannot read /proc/cpuinfo", "check that /proc is mounted");
    }
    let flagged = root::read(ctx.root, "proc/cpuinfo").is_ok_and(|t| cpuinfo_flagged(&t));
    match hypervisor_name(ctx) {
        None => HYPERVISOR.ok("no hypervisor flag in /proc/cpuinfo, no hypervisor in sysfs"),
        Some(name) => HYPERVISOR.warn(
            format!(
                "running under a hypervisor ({name}){}",
                if flagged { "; 'hypervisor' flag in /proc/cpuinfo" } else { "; named by sysfs" }
            ),
            "measure on bare metal for results about the hardware; in a VM, pin the vCPUs to dedicated \
             host CPUs and give the host an RT setup too",
        ),
    }
}

/// The steal field's position in a `cpu` line of /proc/stat after the name: user nice system
/// idle iowait irq softirq steal.
const STEAL_FIELD: usize = 7;

/// Each CPU's steal ticks (1/USER_HZ) from the `cpuN` lines of /proc/stat, in their order;
/// CPUs whose line has no steal field (kernels before 2.6.11) are left out.
pub(crate) fn stat_steal_per_cpu(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
            let steal = fields.nth(STEAL_FIELD)?.parse().ok()?;
            Some((cpu, steal))
        })
        .collect()
}

/// Steal and total jiffies from the aggregate `cpu` line of /proc/stat.
fn stat_steal(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice]; guest time is already
    // counted in user, so only the first eight fields make up the total.
    let steal = *v.get(STEAL_FIELD)?;
    Some((steal, v.iter().take(STEAL_FIELD + 1).sum()))
}

/// Steal time: its share since boot, and on the live system (when the context asks for the
/// window) its share over [`STEAL_WINDOW`].
pub(crate) fn steal_shares(ctx: &Ctx) -> Result<(f64, Option<f64>), String> {
    let text = root::read(ctx.root, "proc/stat")?;
    let (steal, total) = stat_steal(&text).ok_or("no steal field in the cpu line of /proc/stat")?;
    let share = |s: u64, t: u64| {
        if t == 0 {
            0.0
        } else {
            s as f64 * 100.0 / t as f64
        }
    };
    let window = if ctx.live && ctx.steal_window {
        std::thread::sleep(STEAL_WINDOW);
        root::read(ctx.root, "proc/stat")
            .ok()
            .as_deref()
            .and_then(stat_steal)
            .map(|(s2, t2)| share(s2 - steal, t2.saturating_sub(total)))
    } else {
        None
    };
    Ok((share(steal, total), window))
}

const STEAL: Spec = Spec {
    id: "virtualization.steal",
    area: "virtualization",
    why: "Steal time is time the host ran something else while this guest's virtual CPU wanted \
          to run; each such gap is latency the guest cannot see or prevent.",
};

pub(crate) fn steal(ctx: &Ctx) -> Check {
    match ctx.steal() {
        &Ok((boot, window)) => {
            let evidence = format!(
                "steal {boot:.2}% of CPU time since boot{} (/proc/stat)",
                window
                    .map(|w| format!(", {w:.2}% over the last {} ms", STEAL_WINDOW.as_millis()))
                    .unwrap_or_default()
            );
            if boot > 0.0 || window.is_some_and(|w| w > 0.0) {
                STEAL.warn(evidence, "give the VM dedicated, pinned host CPUs (no overcommit), or measure on bare metal")
            } else {
                STEAL.ok(evidence)
            }
        }
        Err(e) => STEAL.unknown(e.clone(), "check that /proc is mounted"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::verdict::Verdict;

    #[test]
    fn per_cpu_steal_reads_the_eighth_field_of_each_cpu_line() {
        let text = "cpu  10 0 5 100 0 0 0 7 0 0\n\
                    cpu0 5 0 2 50 0 0 0 3 0 0\n\
                    cpu1 5 0 3 50 0 0 0 4\n\
                    cpu2 5 0 3 50 0 0 0\n\
                    intr 12345 0\n";
        assert_eq!(stat_steal_per_cpu(text), vec![(0, 3), (1, 4)]);
        assert_eq!(stat_steal(text), Some((7, 122)));
    }

    #[test]
    fn qemus_device_tree_machine_is_a_hypervisor() {
        // Debian's arm64 kernel in qemu-system-aarch64 -M virt (lab check 8): no DMI, no
        // hypervisor flag, the device tree's compatible "linux,dummy-virt".
        let t = tempfile::tempdir().unwrap();
        let dt = t.path().join("sys/firmware/devicetree/base");
        std::fs::create_dir_all(&dt).unwrap();
        std::fs::create_dir_all(t.path().join("proc")).unwrap();
        std::fs::write(
            t.path().join("proc/cpuinfo"),
            "processor\t: 0\nFeatures\t: fp asimd\n",
        )
        .unwrap();
        let ctx = Ctx::new(t.path(), &[], false);
        assert_eq!(hypervisor_name(&ctx), None);
        std::fs::write(dt.join("compatible"), "linux,dummy-virt\0").unwrap();
        assert_eq!(hypervisor_name(&ctx).as_deref(), Some("QEMU"));
        assert_eq!(hypervisor(&ctx).verdict, Verdict::Warn);
    }
}
