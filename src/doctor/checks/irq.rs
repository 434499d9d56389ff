//! Interrupt checks: device interrupts that may be delivered to the measured CPUs, irqbalance.

use super::Ctx;
use crate::cpulist::parse_cpu_list;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

const AFFINITY: Spec = Spec {
    id: "irq.affinity",
    area: "irq",
    why: "A device interrupt handled on a measured CPU delays the measuring thread by the \
          handler's run time (and, without PREEMPT_RT, by its softirq work).",
};

/// Files in /proc/irq/N that are not the names of the interrupt's handlers.
const IRQ_FILES: &[&str] = &[
    "affinity_hint",
    "effective_affinity",
    "effective_affinity_list",
    "node",
    "smp_affinity",
    "smp_affinity_list",
    "spurious",
];

pub(crate) fn affinity(ctx: &Ctx) -> Check {
    let names = match root::list(ctx.root, "proc/irq") {
        Ok(n) => n,
        Err(e) => return AFFINITY.unknown(e, "check that /proc is mounted"),
    };
    let mut hits = Vec::new();
    for irq in root::numbered(&names, "") {
        let dir = format!("proc/irq/{irq}");
        // The effective affinity is where the interrupt actually goes; older kernels and
        // some interrupt controllers only have the allowed set.
        let Some(cpus) = ["effective_affinity_list", "smp_affinity_list"]
            .iter()
            .find_map(|f| {
                root::read_trim(ctx.root, &format!("{dir}/{f}"))
                    .ok()
                    .filter(|t| !t.is_empty())
            })
            .and_then(|t| parse_cpu_list(&t).ok())
        else {
            continue;
        };
        if cpus.iter().any(|c| ctx.cpus.contains(c)) {
            let handlers: Vec<String> = root::list(ctx.root, &dir)
                .unwrap_or_default()
                .into_iter()
                .filter(|n| !IRQ_FILES.contains(&n.as_str()))
                .collect();
            hits.push(if handlers.is_empty() {
                irq.to_string()
            } else {
                format!("{irq} ({})", handlers.join(","))
            });
        }
    }
    if hits.is_empty() {
        return AFFINITY.ok(format!(
            "no device interrupt in /proc/irq is delivered to CPUs {}",
            ctx.cpu_list()
        ));
    }
    const SHOWN: usize = 8;
    let more = if hits.len() > SHOWN {
        format!(" and {} more", hits.len() - SHOWN)
    } else {
        String::new()
    };
    let evidence = format!(
        "{} interrupt(s) delivered to measured CPUs {}: {}{more}",
        hits.len(),
        ctx.cpu_list(),
        hits[..hits.len().min(SHOWN)].join(", ")
    );
    let fix = if ctx.measures_everything() {
        "every online CPU is measured, so interrupts have nowhere else to go: measure a subset with \
         --cpus and move interrupts to the others (irqaffinity= on the command line, or write the \
         housekeeping CPUs to /proc/irq/N/smp_affinity_list)"
    } else {
        "move them to the housekeeping CPUs: write those CPUs to /proc/irq/N/smp_affinity_list, and \
         boot with irqaffinity=<housekeeping CPUs> so new interrupts start there"
    };
    AFFINITY.warn(evidence, fix)
}

const IRQBALANCE: Spec = Spec {
    id: "irq.irqbalance",
    area: "irq",
    why: "irqbalance rewrites interrupt affinities every few seconds and can move interrupts back \
          onto the measured CPUs.",
};

pub(crate) fn irqbalance(ctx: &Ctx) -> Check {
    let names = match root::list(ctx.root, "proc") {
        Ok(n) => n,
        Err(e) => return IRQBALANCE.unknown(e, "check that /proc is mounted"),
    };
    let pids: Vec<usize> = root::numbered(&names, "")
        .into_iter()
        .filter(|pid| {
            root::read_trim(ctx.root, &format!("proc/{pid}/comm")).is_ok_and(|c| c == "irqbalance")
        })
        .collect();
    match pids.first() {
        None => IRQBALANCE.ok("no irqbalance process in /proc/*/comm"),
        Some(pid) => IRQBALANCE.warn(
            format!("irqbalance is running (pid {pid})"),
            "stop it (`systemctl disable --now irqbalance`), or keep it off the measured CPUs with \
             IRQBALANCE_BANNED_CPULIST in /etc/sysconfig/irqbalance or /etc/default/irqbalance",
        ),
    }
}
