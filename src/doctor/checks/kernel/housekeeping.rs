//! Housekeeping checks: whether the measured CPUs are kept free of the kernel's own per-CPU
//! work (scheduler housekeeping, RCU callbacks, device interrupts, lockup watchdogs), and the
//! boot parameters that move it elsewhere.

use crate::cpulist::format_cpu_list;
use crate::doctor::checks::{Ctx, param_cpus};
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

const ISOLATION: Spec = Spec {
    id: "kernel.isolation",
    area: "kernel",
    why: "Measured CPUs that also run housekeeping (other tasks, RCU callbacks, the tick, device \
          interrupts) show that work as latency; isolcpus/nohz_full, rcu_nocbs and irqaffinity \
          move it elsewhere.",
};

pub(crate) fn isolation(ctx: &Ctx) -> Check {
    let cpus = &ctx.cpus;
    let covers = |list: &[usize]| cpus.iter().all(|c| list.contains(c));
    let param = |name: &str| ctx.cmdline(name).map(|v| param_cpus(&v));
    let show = |name: &str, v: &Option<(Vec<String>, Vec<usize>)>| match v {
        Some((_, list)) if !list.is_empty() => format!("{name}={}", format_cpu_list(list)),
        Some(_) => format!("{name} (no CPU list)"),
        None => format!("no {name}"),
    };
    let isolcpus = param("isolcpus");
    let nohz = param("nohz_full");
    let nocbs = param("rcu_nocbs");
    let irqaff = param("irqaffinity");
    let mut missing = Vec::new();
    let isolated_by =
        |p: &Option<(Vec<String>, Vec<usize>)>| p.as_ref().is_some_and(|(_, l)| covers(l));
    if !isolated_by(&isolcpus) && !isolated_by(&nohz) {
        missing.push("not isolated from the scheduler (isolcpus= or nohz_full=)");
    }
    // nohz_full implies offloading RCU callbacks from those CPUs.
    if !isolated_by(&nocbs) && !isolated_by(&nohz) {
        missing.push("RCU callbacks not offloaded (rcu_nocbs=)");
    }
    let managed = isolcpus
        .as_ref()
        .is_some_and(|(f, l)| f.iter().any(|f| f == "managed_irq") && covers(l));
    let irq_off = irqaff
        .as_ref()
        .is_some_and(|(_, l)| !l.is_empty() && cpus.iter().all(|c| !l.contains(c)));
    if !irq_off && !managed {
        missing.push("default IRQ affinity includes them (irqaffinity=)");
    }
    let evidence = format!(
        "measured CPUs {}: {}; {}; {}; {}{}",
        ctx.cpu_list(),
        show("isolcpus", &isolcpus),
        show("nohz_full", &nohz),
        show("rcu_nocbs", &nocbs),
        show("irqaffinity", &irqaff),
        if missing.is_empty() {
            String::new()
        } else {
            format!(" => {}", missing.join(", "))
        }
    );
    if missing.is_empty() {
        return ISOLATION.ok(evidence);
    }
    let boot = |measured: &[usize], house: &[usize]| {
        let list = format_cpu_list(measured);
        format!(
            "`isolcpus=domain,managed_irq,{list} nohz_full={list} rcu_nocbs={list} irqaffinity={}`",
            format_cpu_list(house)
        )
    };
    let fix = if ctx.measures_everything() {
        // Suggest keeping the first CPU for housekeeping, the usual choice.
        let (house, rest) = ctx.online.split_at(1.min(ctx.online.len()));
        format!(
            "every online CPU is measured, so nothing can be moved off them: keep a CPU for housekeeping \
             and measure the others with --cpus, booting with e.g. {}",
            boot(rest, house)
        )
    } else {
        let house: Vec<usize> = ctx
            .online
            .iter()
            .copied()
            .filter(|c| !ctx.cpus.contains(c))
            .collect();
        format!("boot with {}", boot(&ctx.cpus, &house))
    };
    ISOLATION.warn(evidence, fix)
}

const WATCHDOGS: Spec = Spec {
    id: "kernel.watchdogs",
    area: "kernel",
    why: "The soft-lockup watchdog runs a timer and a stopper thread on every CPU it watches, and \
          the hard-lockup (NMI) watchdog takes periodic NMIs, which no priority can hold off.",
};

pub(crate) fn watchdogs(ctx: &Ctx) -> Check {
    let soft = root::read_i64(ctx.root, "proc/sys/kernel/watchdog");
    let nmi = root::read_i64(ctx.root, "proc/sys/kernel/nmi_watchdog");
    let mask = root::read_trim(ctx.root, "proc/sys/kernel/watchdog_cpumask").ok();
    let mask_cpus = mask.as_deref().map(|m| param_cpus(m).1);
    let evidence = format!(
        "watchdog = {}, nmi_watchdog = {}, watchdog_cpumask = {}",
        soft.as_ref()
            .map_or("unreadable".to_string(), i64::to_string),
        nmi.as_ref()
            .map_or("unreadable".to_string(), i64::to_string),
        mask.as_deref().unwrap_or("unreadable"),
    );
    if soft.is_err() && nmi.is_err() {
        return WATCHDOGS.unknown(evidence, "check that /proc/sys is mounted");
    }
    let on = matches!(soft, Ok(v) if v != 0) || matches!(nmi, Ok(v) if v != 0);
    let spares_measured = mask_cpus.is_some_and(|m| ctx.cpus.iter().all(|c| !m.contains(c)));
    if !on || spares_measured {
        WATCHDOGS.ok(evidence)
    } else {
        WATCHDOGS.warn(
            evidence,
            "`sysctl kernel.watchdog=0 kernel.nmi_watchdog=0` (or boot with nowatchdog), or keep \
             them off the measured CPUs with kernel.watchdog_cpumask",
        )
    }
}
