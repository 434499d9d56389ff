//! Kernel checks: preemption model, tick rate, timers, clocksource, CPU isolation, timer
//! migration, lockup watchdogs and debugging options.

use super::{Ctx, param_cpus};
use crate::cpulist::format_cpu_list;
use crate::system::root;
use crate::system::verdict::{Check, Spec, Verdict};

/// The preemption models of Linux, most to least preemptible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    Rt,
    Lazy,
    Full,
    Voluntary,
    None,
    /// A non-dynamic kernel whose version string carries no PREEMPT marker and whose config is
    /// unavailable.
    NoneOrVoluntary,
}

impl Model {
    fn from_word(word: &str) -> Option<Model> {
        match word {
            "none" => Some(Model::None),
            "voluntary" => Some(Model::Voluntary),
            "full" => Some(Model::Full),
            "lazy" => Some(Model::Lazy),
            _ => None,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Model::Rt => "PREEMPT_RT",
            Model::Lazy => "lazy",
            Model::Full => "full",
            Model::Voluntary => "voluntary",
            Model::None => "none",
            Model::NoneOrVoluntary => "none or voluntary",
        }
    }
}

/// What the kernel says about its preemption, with the sources it was read from.
#[derive(Debug, Clone)]
pub struct Preemption {
    pub model: Option<Model>,
    pub dynamic: bool,
    /// Whether a PREEMPT_DYNAMIC kernel's mode was read from debugfs (current) rather than
    /// inferred from the boot configuration.
    pub mode_is_current: bool,
    pub evidence: Vec<String>,
}

impl Preemption {
    /// A short label for the snapshot: `PREEMPT_RT`, `PREEMPT_DYNAMIC (full)`, `voluntary`.
    pub fn label(&self) -> String {
        match (self.model, self.dynamic) {
            (None, _) => "unknown".into(),
            (Some(Model::Rt), _) => "PREEMPT_RT".into(),
            (Some(m), true) => format!("PREEMPT_DYNAMIC ({})", m.name()),
            (Some(m), false) => m.name().into(),
        }
    }
}

/// Finds the preemption model from every source there is: /sys/kernel/realtime, the version
/// string, the kernel config, the `preempt=` parameter and debugfs's sched/preempt.
pub fn read_preemption(ctx: &Ctx) -> Preemption {
    let mut ev = Vec::new();
    let mut rt = false;
    let mut dynamic = false;
    let mut from_version = None;

    if let Ok(v) = root::read_trim(ctx.root, "sys/kernel/realtime") {
        ev.push(format!("/sys/kernel/realtime = {v}"));
        rt |= v == "1";
    }
    if let Ok(version) = root::read(ctx.root, "proc/version") {
        let words: Vec<&str> = version.split_whitespace().collect();
        let marker = ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"]
            .into_iter()
            .find(|m| words.contains(m));
        match marker {
            Some("PREEMPT_RT") => rt = true,
            Some("PREEMPT_DYNAMIC") => dynamic = true,
            Some("PREEMPT_LAZY") => from_version = Some(Model::Lazy),
            Some(_) => from_version = Some(Model::Full),
            None => from_version = Some(Model::NoneOrVoluntary),
        }
        ev.push(format!(
            "/proc/version: {}",
            marker.unwrap_or("no PREEMPT marker")
        ));
    }
    // The config's choice is the compiled (or, with PREEMPT_DYNAMIC, the boot-default) model.
    let mut from_config = None;
    if let Ok(c) = &ctx.config {
        rt |= c.enabled("PREEMPT_RT");
        dynamic |= c.enabled("PREEMPT_DYNAMIC");
        from_config = [
            ("PREEMPT_NONE", Model::None),
            ("PREEMPT_VOLUNTARY", Model::Voluntary),
            ("PREEMPT_LAZY", Model::Lazy),
            ("PREEMPT", Model::Full),
        ]
        .into_iter()
        .find(|(name, _)| c.enabled(name))
        .map(|(_, m)| m);
        let opts: Vec<String> = [
            "PREEMPT_RT",
            "PREEMPT_DYNAMIC",
            "PREEMPT_NONE",
            "PREEMPT_VOLUNTARY",
            "PREEMPT",
            "PREEMPT_LAZY",
        ]
        .into_iter()
        .filter(|o| c.enabled(o))
        .map(|o| format!("CONFIG_{o}"))
        .collect();
        ev.push(format!(
            "{}: {}",
            c.source,
            if opts.is_empty() {
                "no preemption options".into()
            } else {
                opts.join(" ")
            }
        ));
    }

    let mut mode_is_current = false;
    let model = if rt {
        Some(Model::Rt)
    } else if dynamic {
        // debugfs shows the current mode in parentheses: "none voluntary (full) lazy".
        let current = root::read(ctx.root, "sys/kernel/debug/sched/preempt")
            .ok()
            .and_then(|t| {
                let word = t.split_whitespace().find(|w| w.starts_with('('))?;
                Model::from_word(word.trim_matches(|c| c == '(' || c == ')'))
            });
        let cmdline = ctx.cmdline("preempt").and_then(|v| Model::from_word(&v));
        if let Some(m) = current {
            mode_is_current = true;
            ev.push(format!(
                "/sys/kernel/debug/sched/preempt: current mode {}",
                m.name()
            ));
            Some(m)
        } else {
            ev.push("current mode unreadable (/sys/kernel/debug/sched/preempt needs debugfs and root); using the boot mode".into());
            if let Some(m) = cmdline {
                ev.push(format!("preempt={} on the command line", m.name()));
                Some(m)
            } else {
                from_config
            }
        }
    } else {
        // A non-dynamic kernel: the config knows none from voluntary, the version string doesn't.
        from_config.or(from_version)
    };
    Preemption {
        model,
        dynamic,
        mode_is_current,
        evidence: ev,
    }
}

const PREEMPTION: Spec = Spec {
    id: "kernel.preemption",
    area: "kernel",
    why: "Only a PREEMPT_RT kernel bounds how long the kernel can keep a waiting real-time task \
          off the CPU; other models leave non-preemptible sections of milliseconds.",
};

pub fn preemption(ctx: &Ctx) -> Check {
    let p = read_preemption(ctx);
    let evidence = format!("{}; {}", p.label(), p.evidence.join("; "));
    let to_rt = "boot a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; distributions ship one, e.g. \
                 linux-image-rt-*, kernel-rt)";
    match p.model {
        Some(Model::Rt) => PREEMPTION.ok(evidence),
        Some(Model::Full) | Some(Model::Lazy) => PREEMPTION.warn(evidence, to_rt),
        Some(_) if p.dynamic => PREEMPTION.warn(
            evidence,
            format!(
                "{to_rt}; short of that, switch this PREEMPT_DYNAMIC kernel to full preemption: \
                     boot with preempt=full, or `echo full > /sys/kernel/debug/sched/preempt`"
            ),
        ),
        Some(_) => PREEMPTION.warn(evidence, to_rt),
        None => PREEMPTION.unknown(
            format!("no source readable: {}", p.evidence.join("; ")),
            "check that /proc is mounted; `uname -v` shows PREEMPT_RT on a real-time kernel",
        ),
    }
}

const HZ: Spec = Spec {
    id: "kernel.hz",
    area: "kernel",
    why: "The tick rate sets how often the scheduler tick interrupts each CPU and the granularity \
          of jiffies-based timeouts; with high-resolution timers it does not limit timer wakeups.",
};

/// The tick rate: CONFIG_HZ, or on the live system the resolution of CLOCK_MONOTONIC_COARSE,
/// which the kernel reports as one tick.
pub fn tick_hz(ctx: &Ctx) -> Option<(u32, String)> {
    if let Some(hz) = ctx
        .config
        .as_ref()
        .ok()
        .and_then(|c| Some((c.get("HZ")?.parse().ok()?, c.source.clone())))
    {
        return Some((hz.0, format!("CONFIG_HZ={} in {}", hz.0, hz.1)));
    }
    if ctx.live {
        let res = clock_res_ns(libc::CLOCK_MONOTONIC_COARSE)?;
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

pub fn hz(ctx: &Ctx) -> Check {
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
pub fn clock_res_ns(clock: libc::clockid_t) -> Option<i64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec into the pointer we pass.
    (unsafe { libc::clock_getres(clock, &mut ts) } == 0)
        .then(|| ts.tv_sec * 1_000_000_000 + ts.tv_nsec)
}

const HRTIMERS: Spec = Spec {
    id: "kernel.hrtimers",
    area: "kernel",
    why: "Without high-resolution timers every timed wakeup is rounded up to the next tick, \
          adding up to a whole tick period of latency.",
};

pub fn hrtimers(ctx: &Ctx) -> Check {
    // The live system answers through clock_getres; a fixture carries /proc/timer_list.
    let (res, source) = if ctx.live {
        (
            clock_res_ns(libc::CLOCK_MONOTONIC),
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

pub fn clocksource(ctx: &Ctx) -> Check {
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

const ISOLATION: Spec = Spec {
    id: "kernel.isolation",
    area: "kernel",
    why: "Measured CPUs that also run housekeeping (other tasks, RCU callbacks, the tick, device \
          interrupts) show that work as latency; isolcpus/nohz_full, rcu_nocbs and irqaffinity \
          move it elsewhere.",
};

pub fn isolation(ctx: &Ctx) -> Check {
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

const TIMER_MIGRATION: Spec = Spec {
    id: "kernel.timer_migration",
    area: "kernel",
    why: "With timer migration on, timers armed on idle CPUs are moved to busy ones, which can \
          include the measured CPUs.",
};

pub fn timer_migration(ctx: &Ctx) -> Check {
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

const WATCHDOGS: Spec = Spec {
    id: "kernel.watchdogs",
    area: "kernel",
    why: "The soft-lockup watchdog runs a timer and a stopper thread on every CPU it watches, and \
          the hard-lockup (NMI) watchdog takes periodic NMIs, which no priority can hold off.",
};

pub fn watchdogs(ctx: &Ctx) -> Check {
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

pub fn debug_options(ctx: &Ctx) -> Check {
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
