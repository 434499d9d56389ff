//! The CPU's free-running counter, read directly from user space: the TSC on x86_64 (`rdtsc`),
//! the virtual count register on aarch64 (`CNTVCT_EL0`). Reading it costs a few ns, less than a
//! vDSO `clock_gettime`, which reads the same counter and then converts it under a sequence
//! lock. Its ticks have no unit of their own: the noise loop calibrates them against
//! CLOCK_MONOTONIC (`measure::noise_clock`).
//!
//! The counter is only worth reading where the kernel trusts it as its own clocksource: then
//! it ticks at a constant rate, through idle states, and in step on every CPU.
//! [`kernel_trusts_counter`] says whether it does here, and why not.

/// The counter of this architecture, by the name run.json gives it; None where jitterlab reads
/// none (the noise loop then reads CLOCK_MONOTONIC).
pub(crate) const COUNTER_NAME: Option<&str> = if cfg!(target_arch = "x86_64") {
    Some("tsc")
} else if cfg!(target_arch = "aarch64") {
    Some("cntvct")
} else {
    None
};

/// The clocksource name the kernel gives this counter when it keeps time with it.
const KERNEL_CLOCKSOURCE: &str = if cfg!(target_arch = "x86_64") {
    "tsc"
} else {
    "arch_sys_counter"
};

/// Reads the counter. Ordered after the instructions before it (as the kernel's
/// `rdtsc_ordered`), so a read is not hoisted above the previous iteration's work.
/// Returns 0 on an architecture without one ([`COUNTER_NAME`] is None there).
#[inline(always)]
pub(crate) fn read_counter() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: lfence and rdtsc exist on every x86_64 CPU and touch no memory.
        unsafe {
            core::arch::x86_64::_mm_lfence();
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ticks: u64;
        // SAFETY: CNTVCT_EL0 is readable from EL0 on Linux (the vDSO reads it too); isb keeps
        // the read in program order.
        unsafe {
            core::arch::asm!("isb", "mrs {t}, cntvct_el0", t = out(reg) ticks, options(nomem, nostack));
        }
        ticks
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        0
    }
}

/// Whether the kernel keeps time with the counter here (Ok), or why the counter cannot be
/// trusted for measuring (the reason, naming what was found).
pub(crate) fn kernel_trusts_counter() -> Result<(), String> {
    let Some(name) = COUNTER_NAME else {
        return Err(format!(
            "jitterlab reads no CPU counter on {} (x86_64: tsc, aarch64: cntvct)",
            std::env::consts::ARCH
        ));
    };
    let source_file = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let source = std::fs::read_to_string(source_file)
        .map_err(|e| format!("cannot read {source_file}: {e}"))?;
    let source = source.trim();
    if source != KERNEL_CLOCKSOURCE {
        return Err(format!(
            "the kernel keeps time with clocksource '{}', not '{KERNEL_CLOCKSOURCE}' ({source_file}): it does not trust the {name} here",
            source.escape_debug()
        ));
    }
    if cfg!(target_arch = "x86_64") {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo")
            .map_err(|e| format!("cannot read /proc/cpuinfo: {e}"))?;
        missing_tsc_flags(&cpuinfo)?;
    }
    Ok(())
}

/// Err naming the flags a TSC needs to tick at a constant rate through idle and frequency
/// changes (`constant_tsc`, `nonstop_tsc`) that the first CPU's flags in `cpuinfo` lack.
fn missing_tsc_flags(cpuinfo: &str) -> Result<(), String> {
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, f)| f.split_whitespace().collect())
        .unwrap_or_default();
    let missing: Vec<&str> = ["constant_tsc", "nonstop_tsc"]
        .into_iter()
        .filter(|f| !flags.contains(f))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the CPU flags (/proc/cpuinfo) lack {}: the TSC may change rate or stop",
            missing.join(" and ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_flags_are_required() {
        assert!(missing_tsc_flags("flags\t: fpu tsc constant_tsc nonstop_tsc\n").is_ok());
        let e = missing_tsc_flags("flags\t: fpu tsc constant_tsc\n").unwrap_err();
        assert!(
            e.contains("nonstop_tsc") && !e.contains("constant_tsc and"),
            "{e}"
        );
        let e = missing_tsc_flags("processor: 0\n").unwrap_err();
        assert!(e.contains("constant_tsc and nonstop_tsc"), "{e}");
    }

    /// Where there is a counter it advances, and faster than 1 MHz (every known one does).
    #[test]
    fn the_counter_advances() {
        if COUNTER_NAME.is_none() {
            return;
        }
        let a = read_counter();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = read_counter();
        assert!(b > a && b - a > 2_000, "{a} -> {b}");
    }
}
