//! Memory checks: transparent hugepages, swap, KSM.

use super::Ctx;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

/// The selected word of a sysfs choice file: `always [madvise] never` gives `madvise`.
pub(crate) fn selected(choice: &str) -> Option<&str> {
    choice
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
}

const THP: Spec = Spec {
    id: "memory.thp",
    area: "memory",
    why: "With transparent hugepages always on, page faults may compact memory to build a huge \
          page, and khugepaged collapses pages in the background, both stalling tasks.",
};

pub(crate) fn thp(ctx: &Ctx) -> Check {
    let dir = "sys/kernel/mm/transparent_hugepage";
    let enabled = match root::read_trim(ctx.root, &format!("{dir}/enabled")) {
        Ok(t) => t,
        Err(_) => return THP.ok("no /sys/kernel/mm/transparent_hugepage: the kernel has no THP"),
    };
    let defrag = root::read_trim(ctx.root, &format!("{dir}/defrag")).ok();
    let evidence = format!(
        "enabled = {}, defrag = {}",
        selected(&enabled).unwrap_or(&enabled),
        defrag
            .as_deref()
            .map(|d| selected(d).unwrap_or(d))
            .unwrap_or("unreadable")
    );
    match selected(&enabled) {
        Some("always") => THP.warn(
            evidence,
            "`echo madvise > /sys/kernel/mm/transparent_hugepage/enabled` (or never), or boot with \
             transparent_hugepage=madvise",
        ),
        Some(_) => THP.ok(evidence),
        None => THP.unknown(evidence, "none"),
    }
}

const SWAP: Spec = Spec {
    id: "memory.swap",
    area: "memory",
    why: "jitterlab locks its own memory, but swapping elsewhere brings kswapd, disk I/O and \
          page-table work that can delay it, and unlocked loads stall on swap-ins.",
};

pub(crate) fn swap(ctx: &Ctx) -> Check {
    match root::read(ctx.root, "proc/swaps") {
        Ok(text) => {
            let devices: Vec<&str> = text
                .lines()
                .skip(1)
                .filter_map(|l| l.split_whitespace().next())
                .collect();
            if devices.is_empty() {
                SWAP.ok("no swap in /proc/swaps")
            } else {
                SWAP.warn(
                    format!("swap active: {}", devices.join(", ")),
                    "`swapoff -a` while measuring",
                )
            }
        }
        Err(_) if !root::exists(ctx.root, "proc/meminfo") => {
            SWAP.unknown("cannot read /proc/swaps", "check that /proc is mounted")
        }
        // A kernel without CONFIG_SWAP has no /proc/swaps.
        Err(_) => SWAP.ok("no /proc/swaps: the kernel has no swap support"),
    }
}

const KSM: Spec = Spec {
    id: "memory.ksm",
    area: "memory",
    why: "KSM's ksmd scans memory and merges pages; a write to a merged page takes a \
          copy-on-write fault.",
};

pub(crate) fn ksm(ctx: &Ctx) -> Check {
    match root::read_i64(ctx.root, "sys/kernel/mm/ksm/run") {
        Ok(0) => KSM.ok("/sys/kernel/mm/ksm/run = 0"),
        Ok(v) => KSM.warn(
            format!("/sys/kernel/mm/ksm/run = {v}: ksmd is merging pages"),
            "`echo 2 > /sys/kernel/mm/ksm/run` (stop and unmerge)",
        ),
        Err(_) => KSM.ok("no /sys/kernel/mm/ksm: the kernel has no KSM"),
    }
}
