//! The readiness checks that read /proc and /sys below a root path.
//!
//! Each check is a function `fn(&Ctx) -> Check`. [`all`] runs them in display order; the live
//! probes that cannot be answered from files are in [`super::probes`].

pub(crate) mod container;
pub(crate) mod cpu;
pub(crate) mod irq;
pub(crate) mod kernel;
pub(crate) mod memory;
pub(crate) mod sched;
pub(crate) mod tracing;
pub(crate) mod virt;

use std::cell::OnceCell;
use std::path::Path;

use super::kconfig::KernelConfig;
use super::root;
use super::verdict::Check;
use crate::cpulist::{format_cpu_list, parse_cpu_list};

/// What every check may look at: the root, the CPUs to be measured and the kernel config
/// (read once because several checks need it).
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub root: &'a Path,
    /// The CPUs the user intends to measure (all online CPUs unless told otherwise).
    pub cpus: Vec<usize>,
    /// The online CPUs; empty when /sys/devices/system/cpu/online is unreadable.
    pub online: Vec<usize>,
    pub config: Result<KernelConfig, String>,
    /// True when the root is the running system, so checks may also ask the kernel through
    /// system calls. False for fixture trees, so that tests never see the test machine.
    pub live: bool,
    /// Whether a live steal-time share is measured over [`virt::STEAL_WINDOW`] (doctor waits
    /// for it; a run does not: it measures steal over the run itself, see
    /// `session::steal`).
    pub(crate) steal_window: bool,
    /// Steal-time shares, measured once because the live measurement waits.
    steal: OnceCell<Result<(f64, Option<f64>), String>>,
}

impl<'a> Ctx<'a> {
    /// A context for `root`; an empty `measured` means every online CPU.
    pub(crate) fn new(root: &'a Path, measured: &[usize], live: bool) -> Self {
        let online = root::read(root, "sys/devices/system/cpu/online")
            .ok()
            .and_then(|t| parse_cpu_list(&t).ok())
            .unwrap_or_default();
        let cpus = if measured.is_empty() {
            online.clone()
        } else {
            measured.to_vec()
        };
        Ctx {
            root,
            cpus,
            online,
            config: KernelConfig::load(root),
            live,
            steal_window: live,
            steal: OnceCell::new(),
        }
    }

    /// Steal time since boot and (live) over a short window, in percent; see [`virt::steal_shares`].
    pub(crate) fn steal(&self) -> &Result<(f64, Option<f64>), String> {
        self.steal.get_or_init(|| virt::steal_shares(self))
    }

    /// The measured CPUs in kernel notation, for evidence.
    pub(crate) fn cpu_list(&self) -> String {
        format_cpu_list(&self.cpus)
    }

    /// True when every online CPU is measured, so nothing can be moved off the measured CPUs.
    pub(crate) fn measures_everything(&self) -> bool {
        !self.online.is_empty() && self.online.iter().all(|c| self.cpus.contains(c))
    }

    /// The value of a kernel command-line parameter: `Some("")` for a bare flag, `None` when
    /// absent or when /proc/cmdline is unreadable. Arguments after `--` belong to init.
    pub(crate) fn cmdline(&self, name: &str) -> Option<String> {
        let text = root::read(self.root, "proc/cmdline").ok()?;
        text.split_whitespace()
            .take_while(|t| *t != "--")
            .filter_map(|t| match t.split_once('=') {
                Some((k, v)) if k == name => Some(v.to_string()),
                None if t == name => Some(String::new()),
                _ => None,
            })
            .last()
    }
}

/// Runs every file-based check, in the order they are shown.
pub(crate) fn all(ctx: &Ctx) -> Vec<Check> {
    vec![
        kernel::preemption(ctx),
        kernel::hz(ctx),
        kernel::hrtimers(ctx),
        kernel::clocksource(ctx),
        kernel::isolation(ctx),
        kernel::timer_migration(ctx),
        kernel::watchdogs(ctx),
        kernel::debug_options(ctx),
        sched::rt_throttling(ctx),
        sched::rt_group(ctx),
        container::cgroup(ctx),
        sched::rlimit_rtprio(ctx),
        sched::cap_sys_nice(ctx),
        sched::rlimit_memlock(ctx),
        sched::cap_ipc_lock(ctx),
        cpu::governor(ctx),
        cpu::idle_states(ctx),
        cpu::smt(ctx),
        cpu::numa(ctx),
        irq::affinity(ctx),
        irq::irqbalance(ctx),
        memory::thp(ctx),
        memory::swap(ctx),
        memory::ksm(ctx),
        virt::hypervisor(ctx),
        virt::steal(ctx),
        container::container(ctx),
        tracing::tracefs(ctx),
        tracing::btf(ctx),
    ]
}

/// Parses a CPU list out of a kernel parameter value, dropping leading flag words such as
/// `isolcpus=domain,managed_irq,2-3`. Returns the flags and the CPUs.
pub(crate) fn param_cpus(value: &str) -> (Vec<String>, Vec<usize>) {
    let mut flags = Vec::new();
    let mut rest = Vec::new();
    for part in value.split(',') {
        if rest.is_empty() && part.chars().all(|c| c.is_ascii_alphabetic() || c == '_') {
            flags.push(part.to_string());
        } else {
            rest.push(part);
        }
    }
    (flags, parse_cpu_list(&rest.join(",")).unwrap_or_default())
}

#[cfg(test)]
pub(crate) mod fixtures;
