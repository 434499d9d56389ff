//! Tracing checks: what `run --trace` needs (tracefs with the irq/sched/timer events, BTF).
//! The live bpf(2) probe is in `probes`.

use super::Ctx;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

const TRACEFS: Spec = Spec {
    id: "tracing.tracefs",
    area: "tracing",
    why: "`jitterlab run --trace` splits latency into IRQ and thread parts and attributes spikes \
          using the kernel's irq, sched and timer tracepoints in tracefs.",
};

/// The events `run --trace` enables.
pub(crate) const TRACE_EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_waking",
    "irq/irq_handler_entry",
    "timer/hrtimer_expire_entry",
];

/// Where tracefs is mounted, from /proc/mounts (tracefs directly, or under debugfs).
pub(crate) fn tracefs_mount(ctx: &Ctx) -> Option<String> {
    let mounts = root::read(ctx.root, "proc/mounts").ok()?;
    crate::trace::tracefs::mount_from_mounts(&mounts, |p| root::exists(ctx.root, p))
}

pub(crate) fn tracefs(ctx: &Ctx) -> Check {
    let supported = root::read(ctx.root, "proc/filesystems").ok().map(|t| {
        t.lines()
            .any(|l| l.split_whitespace().last() == Some("tracefs"))
    });
    match tracefs_mount(ctx) {
        Some(dir) => {
            let missing: Vec<&str> =
                TRACE_EVENTS.iter().copied().filter(|e| !root::exists(ctx.root, &format!("{dir}/events/{e}"))).collect();
            if missing.is_empty() {
                TRACEFS.ok(format!("tracefs mounted at {dir} with {}", TRACE_EVENTS.join(", ")))
            } else {
                TRACEFS.warn(
                    format!("tracefs mounted at {dir}, but missing events: {}", missing.join(", ")),
                    "use a kernel with CONFIG_FTRACE and the irq/sched/timer tracepoints, or read it as root",
                )
            }
        }
        None if supported == Some(true) => TRACEFS.warn(
            "tracefs is supported (/proc/filesystems) but not mounted: `run --trace` will not work",
            "`mount -t tracefs nodev /sys/kernel/tracing` (as root)",
        ),
        None if supported == Some(false) => TRACEFS.warn(
            "no tracefs in /proc/filesystems: the kernel has no tracing; `run --trace` will not work",
            "use a kernel with CONFIG_FTRACE=y",
        ),
        None => TRACEFS.unknown("cannot read /proc/filesystems or /proc/mounts", "check that /proc is mounted"),
    }
}

const BTF: Spec = Spec {
    id: "tracing.btf",
    area: "tracing",
    why: "eBPF programs that read kernel structures portably (CO-RE) need the kernel's BTF type \
          information at /sys/kernel/btf/vmlinux.",
};

pub(crate) fn btf(ctx: &Ctx) -> Check {
    if root::exists(ctx.root, "sys/kernel/btf/vmlinux") {
        BTF.ok("/sys/kernel/btf/vmlinux present")
    } else {
        BTF.warn(
            "no /sys/kernel/btf/vmlinux",
            "use a kernel built with CONFIG_DEBUG_INFO_BTF=y",
        )
    }
}
