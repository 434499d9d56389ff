//! The kernel-config check for debugging options that slow locking, memory and interrupt
//! paths everywhere. Apart from the other kernel checks because it reads only the kernel
//! config and its list of options grows on its own.

use crate::doctor::checks::Ctx;
use crate::doctor::verdict::{Check, Spec, Verdict};

const DEBUG_OPTIONS: Spec = Spec {
    id: "kernel.debug_options",
    area: "kernel",
    why: "Kernel debugging options add checks to every lock, allocation or interrupt toggle and \
          make latencies longer than on a production build.",
};

/// Options that slow locking, memory or interrupt paths everywhere, not just when in use.
const HURTFUL_OPTIONS: &[&str] = &[
    "LOCKDEP",
    "PROVE_LOCKING",
    "DEBUG_LOCK_ALLOC",
    "LOCK_STAT",
    "DEBUG_SPINLOCK",
    "DEBUG_MUTEXES",
    "DEBUG_RT_MUTEXES",
    "DEBUG_ATOMIC_SLEEP",
    "DEBUG_PREEMPT",
    "DEBUG_OBJECTS",
    "DEBUG_PAGEALLOC_ENABLE_DEFAULT",
    "SLUB_DEBUG_ON",
    "KASAN",
    "KCSAN",
    "KMSAN",
    "DEBUG_KMEMLEAK",
    "UBSAN",
    "IRQSOFF_TRACER",
    "PREEMPT_TRACER",
    "PROVE_RCU",
    "DEBUG_VM",
];

pub(crate) fn debug_options(ctx: &Ctx) -> Check {
    match &ctx.config {
        Ok(c) => {
            let found: Vec<String> = HURTFUL_OPTIONS
                .iter()
                .filter(|o| c.enabled(o))
                .map(|o| format!("CONFIG_{o}"))
                .collect();
            if found.is_empty() {
                DEBUG_OPTIONS.ok(format!(
                    "none of {} latency-hurting options set in {}",
                    HURTFUL_OPTIONS.len(),
                    c.source
                ))
            } else {
                DEBUG_OPTIONS.warn(
                    format!("{}: {}", c.source, found.join(" ")),
                    "measure on a production kernel built without these options",
                )
            }
        }
        Err(e) => DEBUG_OPTIONS.with(
            Verdict::Unknown,
            e.clone(),
            "load the configs module (`modprobe configs`) for /proc/config.gz, or install the \
             kernel's config as /boot/config-$(uname -r)",
        ),
    }
}
