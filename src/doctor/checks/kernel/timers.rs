//! Timer checks: tick rate, high-resolution timers, the clocksource every sample reads, and
//! timer migration. Together they decide how precisely and how cheaply a timed wakeup can
//! happen at all, before any other work gets in its way.

use crate::doctor::checks::Ctx;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

const HZ: Spec = Spec {
    id: "kernel.hz",
    area: "kernel",
    why: "The tick rate sets how often the scheduler tick interrupts each CPU and the granularity \
          of jiffies-based timeouts; with high-resolution timers it does not limit timer wakeups.",
};

/// The tick rate: CONFIG_HZ, or on the live system the resolution of CLOCK_MONOTONIC_COARSE,
/// which the kernel reports as one tick.
pub(crate) fn tick_hz(ctx: &Ctx) -> Option<(u32, String)> {
    if let Some(hz) = ctx
        .config
        .as_ref()
        .ok()
        .and_then(|c| Some((c.get("HZ")?.parse().ok()?, c.source.clone())))
    {
        return Some((hz.0, format!("CONFIG_HZ={} in {}", hz.0, hz.1)));
    }
    if ctx.live {
        let res = clock_res_ns(crate::sys::time::MONOTONIC_COARSE)?;
        if res > 0 {
            let hz = (1_000_000_000 / res) as u32;
            return Some((
                hz,
                format!("CLOCK_MONOTONIC_COARSE resolution {res} ns = {hz} Hz"),
            ));
        }
    }
    None
}

pub(crate) fn hz(ctx: &Ctx) -> Check {
    match tick_hz(ctx) {
        Some((hz, how)) => HZ.ok(format!(
            "{hz} Hz, a tick every {} us ({how})",
            1_000_000 / hz.max(1)
        )),
        None => HZ.unknown(
            "no kernel config (/proc/config.gz, /boot/config-RELEASE) to read CONFIG_HZ from",
            "load the configs module (`modprobe configs`) to get /proc/config.gz",
        ),
    }
}

/// clock_getres(2) in nanoseconds, or None when the clock is not supported.
pub(crate) use crate::sys::time::resolution_ns as clock_res_ns;

const HRTIMERS: Spec = Spec {
    id: "kernel.hrtimers",
    area: "kernel",
    why: "Without high-resolution timers every timed wakeup is rounded up to the next tick, \
          adding up to a whole tick period of latency.",
};

pub(crate) fn hrtimers(ctx: &Ctx) -> Check {
    // The live system answers through clock_getres; a fixture carries /proc/timer_list.
    let (res, source) = if ctx.live {
        (
            clock_res_ns(crate::sys::time::MONOTONIC),
            "clock_getres(CLOCK_MONOTONIC)",
        )
    } else {
        let res = root::read(ctx.root, "proc/timer_list").ok().and_then(|t| {
            let line = t
                .lines()
                .find(|l| l.trim_start().starts_with(".resolution:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        });
        (res, "/proc/timer_list")
    };
    match res {
        Some(ns) if ns <= 1_000 => HRTIMERS.ok(format!("{source}: resolution {ns} ns")),
        Some(ns) => HRTIMERS.fail(
            format!("{source}: resolution {ns} ns: timers are tick-based"),
            "use a kernel with CONFIG_HIGH_RES_TIMERS=y and do not boot with highres=off",
        ),
        None => HRTIMERS.unknown(
            format!("{source} unavailable"),
            "run doctor on the live system",
        ),
    }
}

const CLOCKSOURCE: Spec = Spec {
    id: "kernel.clocksource",
    area: "kernel",
    why: "Every latency sample reads the clock; a clocksource the vDSO cannot read (hpet, \
          acpi_pm) turns each read into a system call and a slow device access.",
};

/// Clocksources read through slow port or MMIO accesses and not through the vDSO.
const SLOW_CLOCKSOURCES: &[&str] = &["hpet", "acpi_pm", "pit", "jiffies", "refined-jiffies"];

pub(crate) fn clocksource(ctx: &Ctx) -> Check {
    let dir = "sys/devices/system/clocksource/clocksource0";
    match root::read_trim(ctx.root, &format!("{dir}/current_clocksource")) {
        Ok(cs) => {
            let available = root::read_trim(ctx.root, &format!("{dir}/available_clocksource"))
                .unwrap_or_default();
            let evidence = format!("current {cs}; available: {available}");
            if SLOW_CLOCKSOURCES.contains(&cs.as_str()) {
                CLOCKSOURCE.warn(
                    evidence,
                    "the kernel fell back from the TSC (or the architecture timer); check `dmesg | grep -i clocksource` \
                     for why (e.g. TSC marked unstable); if it is sound, boot with tsc=reliable or \
                     `echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource`",
                )
            } else {
                CLOCKSOURCE.ok(evidence)
            }
        }
        Err(e) => CLOCKSOURCE.unknown(e, "check that sysfs is mounted at /sys"),
    }
}

const TIMER_MIGRATION: Spec = Spec {
    id: "kernel.timer_migration",
    area: "kernel",
    why: "With timer migration on, timers armed on idle CPUs are moved to busy ones, which can \
          include the measured CPUs.",
};

pub(crate) fn timer_migration(ctx: &Ctx) -> Check {
    match root::read_i64(ctx.root, "proc/sys/kernel/timer_migration") {
        Ok(0) => TIMER_MIGRATION.ok("/proc/sys/kernel/timer_migration = 0"),
        Ok(v) => TIMER_MIGRATION.warn(
            format!("/proc/sys/kernel/timer_migration = {v}"),
            "`sysctl kernel.timer_migration=0`",
        ),
        Err(e) => TIMER_MIGRATION.unknown(
            e,
            "the kernel lacks CONFIG_NO_HZ_COMMON or /proc/sys is not mounted",
        ),
    }
}
