//! The counter families of counters.log: each name or name prefix, its kind, unit and source
//! (the table docs/counters.md shows, one row each).

/// What a counter's value in an interval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The change of a count over the interval (events, or time in ns).
    Delta,
    /// A value read at the interval's end (a frequency, a temperature).
    Gauge,
}

/// A family of counters: its name or name prefix, kind, unit and where it comes from (the
/// table docs/counters.md shows, one row each).
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The counter's name, or its prefix up to and including the first `:`.
    pub name: &'static str,
    pub kind: Kind,
    pub unit: &'static str,
    pub source: &'static str,
}

/// Every counter family, in the order the exports and docs list them.
pub(crate) const FAMILIES: &[Family] = &[
    Family {
        name: "irq:",
        kind: Kind::Delta,
        unit: "interrupts",
        source: "/proc/interrupts, the CPU's column of the line (a number, or LOC, RES, CAL, TLB...)",
    },
    Family {
        name: "softirq:",
        kind: Kind::Delta,
        unit: "softirqs raised",
        source: "/proc/softirqs, the CPU's column of the line",
    },
    Family {
        name: "steal_ns",
        kind: Kind::Delta,
        unit: "ns (counted by the kernel in USER_HZ ticks: a multiple of 1e9/USER_HZ ns)",
        source: "/proc/stat, the cpuN line's steal field",
    },
    Family {
        name: "ctxsw",
        kind: Kind::Delta,
        unit: "context switches",
        source: "/sys/kernel/debug/sched/debug, .nr_switches of cpu#N (only where debugfs is mounted; jitterlab does not mount it)",
    },
    Family {
        name: "idle:",
        kind: Kind::Delta,
        unit: "idle:stateK:time_ns: ns in the state (kernel counts us); idle:stateK:usage: entries",
        source: "/sys/devices/system/cpu/cpuN/cpuidle/stateK/{time,usage}",
    },
    Family {
        name: "freq_khz",
        kind: Kind::Gauge,
        unit: "kHz, read at the interval's end",
        source: "/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq",
    },
    Family {
        name: "aperf",
        kind: Kind::Delta,
        unit: "APERF cycles (aperf/mperf over an interval is the busy frequency over the base frequency)",
        source: "MSR 0xE8 through /dev/cpu/N/msr",
    },
    Family {
        name: "mperf",
        kind: Kind::Delta,
        unit: "MPERF cycles (at the base frequency while not idle)",
        source: "MSR 0xE7 through /dev/cpu/N/msr",
    },
    Family {
        name: "smi",
        kind: Kind::Delta,
        unit: "system management interrupts (of the whole machine, counted on every CPU's line)",
        source: "MSR_SMI_COUNT (0x34, Intel) through /dev/cpu/N/msr",
    },
    Family {
        name: "temp_mc",
        kind: Kind::Gauge,
        unit: "milli-degrees Celsius, read at the interval's end",
        source: "hwmon coretemp: the CPU's core (else its package); else the x86_pkg_temp thermal zone",
    },
    Family {
        name: "throttle:",
        kind: Kind::Delta,
        unit: "thermal throttling events (throttle:core, throttle:package)",
        source: "/sys/devices/system/cpu/cpuN/thermal_throttle/{core,package}_throttle_count",
    },
];

/// The family a counter name belongs to (None for a name no version of jitterlab writes).
pub fn family_of(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| {
        if f.name.ends_with(':') {
            name.starts_with(f.name)
        } else {
            name == f.name
        }
    })
}

/// Whether the counter's value is a change (summed over intervals) or a reading.
pub(crate) fn kind_of(name: &str) -> Kind {
    family_of(name).map_or(Kind::Delta, |f| f.kind)
}
