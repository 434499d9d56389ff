//! jitterlab's metrics: the families (names, help, units, label names, bucket bounds) and
//! their rendering from plain per-CPU figures in either text syntax ([`Syntax`]): the
//! Prometheus text exposition format 0.0.4, and OpenMetrics text 1.0.0. The names are the
//! interface fixed by the monitor issue (docs/monitor.md, and docs/user-guide.md's export
//! section): `export --format prometheus|openmetrics` renders a finished run with this
//! module, and `jitterlab monitor` renders its live `/metrics` with the same [`render`]
//! (src/monitor/, in 0.0.4), so both feed the same dashboards and alerts. The families only
//! the monitor fills (the IRQ latency histogram, late wakeups by cause) are left out of an
//! export.
//!
//! Both syntaxes, because their consumers each read only one: node_exporter's textfile
//! collector (the consumer of a file export) and `promtool check metrics` read only 0.0.4;
//! an OpenMetrics parser rejects 0.0.4 (no `# EOF`, counters named with `_total` in `# TYPE`,
//! `untyped`). The samples are the same in both: OpenMetrics names a counter's family without
//! the `_total` its sample keeps, says `unknown` for `untyped`, adds `# UNIT` for the families
//! named after their unit (seconds, ratio), and ends with `# EOF`. Written by hand rather than
//! with the `prometheus-client` crate, which encodes only OpenMetrics and is built around live
//! registered metric objects, where here a snapshot of plain numbers is rendered once.

use crate::format::run_record::RunKind;
use hdrhistogram::Histogram;
use std::fmt::Write;

/// Upper bounds of `jitterlab_wakeup_latency_seconds`'s (and `jitterlab_noise_gap_seconds`') buckets, ns: a 1-2-5 series from 1 us
/// to 100 ms (`+Inf` follows).
pub(crate) const LATENCY_BUCKET_BOUNDS_NS: [u64; 16] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// The quantiles of `jitterlab_wakeup_latency_quantile_seconds` (and the noise gaps'), as its
/// `quantile` label.
pub(crate) const QUANTILES: [&str; 3] = ["0.99", "0.999", "0.9999"];

use crate::format::kind::MetricFamily as Family;

const NOISE_TIME: Family = Family {
    name: "jitterlab_noise_seconds_total",
    kind: "counter",
    help: "OS noise: the sum of the gaps above the threshold in each CPU's noise loop, in seconds.",
};
const NOISE_RATIO: Family = Family {
    name: "jitterlab_noise_ratio",
    kind: "gauge",
    help: "OS noise as a share of the time each CPU's noise loop measured (0 to 1).",
};
const THROTTLED: Family = Family {
    name: "jitterlab_noise_throttled_seconds_total",
    kind: "counter",
    help: "Time each CPU's real-time noise loop was stopped by RT throttling, counted apart from noise, in seconds.",
};
const MISSED: Family = Family {
    name: "jitterlab_missed_periods_total",
    kind: "counter",
    help: "Periods that passed unserved because a wakeup came a period or more late, per CPU.",
};
const DEADLINE: Family = Family {
    name: "jitterlab_deadline_misses_total",
    kind: "counter",
    help: "Wakeups later than the deadline (by default the interval), per CPU.",
};
const IRQ_LATENCY: Family = Family {
    name: "jitterlab_irq_latency_seconds",
    kind: "histogram",
    help: "Timer IRQ latency of each CPU (--trace): timer expiry minus its programmed expiry, in seconds.",
};
const LATE_WAKEUPS: Family = Family {
    name: "jitterlab_late_wakeups_total",
    kind: "counter",
    help: "Late wakeups explained from the kernel trace (--trace), per CPU and by the class of what held the CPU longest.",
};
const CONTEXT_TOTAL: Family = Family {
    name: "jitterlab_cpu_context_total",
    kind: "counter",
    help: "Context counters of each measured CPU since the start, by counter (names and units in docs/counters.md: irq:LOC, softirq:NET_RX, steal_ns...).",
};
const CONTEXT_GAUGE: Family = Family {
    name: "jitterlab_cpu_context_reading",
    kind: "gauge",
    help: "Context readings of each measured CPU at the last interval boundary, by counter (freq_khz, temp_mc; docs/counters.md).",
};
const INFO: Family = Family {
    name: "jitterlab_info",
    kind: "gauge",
    help: "Always 1; the labels name the jitterlab version, kernel release, preemption model and host.",
};

/// The latency histogram of one CPU in the family's buckets (default: no samples).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LatencyBuckets {
    /// Samples at or below each bound of [`LATENCY_BUCKET_BOUNDS_NS`] (cumulative).
    pub(crate) at_or_below: [u64; LATENCY_BUCKET_BOUNDS_NS.len()],
    /// Every sample (the `+Inf` bucket and `_count`).
    pub count: u64,
    /// The sum of the latencies, ns (`_sum`).
    pub sum_ns: f64,
}

impl LatencyBuckets {
    /// The buckets of an HDR histogram. A sample counts at its HDR bucket's highest value (the
    /// value percentiles report), so a sample within 0.1% above a bound may count below it.
    /// `sum_ns` is the exact sum where it is known (mean times samples), since the histogram's
    /// own is rounded.
    pub(crate) fn from_histogram(h: &Histogram<u64>, sum_ns: f64) -> Self {
        let mut buckets = LatencyBuckets::default();
        for v in h.iter_recorded() {
            buckets.add(v.value_iterated_to(), v.count_at_value());
        }
        buckets.sum_ns = sum_ns;
        buckets
    }

    /// [`LatencyBuckets::from_histogram`] of an import whose samples at or above
    /// `overflow_from` ns are the source's overflows: recorded at the histogram's end, their
    /// values are only known to lie between it and the source's maximum `max_ns`. Each is
    /// counted in the buckets at or above that maximum (where it certainly is), or only in
    /// `+Inf` when the maximum is not known; never in a bucket below, which would tell a
    /// dashboard that they were at most that bound (tenth hostile re-run, L10-i: 990
    /// overflows at or above 30 us, mean 50 ms, were counted under `le="0.00005"`). The
    /// buckets between are then lower bounds, as the quantiles among overflows are.
    pub(crate) fn from_histogram_with_overflows(
        h: &Histogram<u64>,
        sum_ns: f64,
        overflow_from: Option<u64>,
        max_ns: Option<i64>,
    ) -> Self {
        let Some(from) = overflow_from else {
            return Self::from_histogram(h, sum_ns);
        };
        let max = max_ns
            .and_then(|m| u64::try_from(m).ok())
            .filter(|&m| m >= from);
        let mut buckets = LatencyBuckets::default();
        for v in h.iter_recorded() {
            let (value, count) = (v.value_iterated_to(), v.count_at_value());
            // The HDR bucket holding `from` is counted as overflows: an in-range sample
            // sharing it is then counted higher, never lower, than it was.
            match (value >= from, max) {
                (false, _) => buckets.add(value, count),
                (true, Some(max)) => buckets.add(max, count),
                (true, None) => buckets.count += count,
            }
        }
        buckets.sum_ns = sum_ns;
        buckets
    }

    /// Counts `count` samples of `value_ns` (an HDR bucket's highest value, as from
    /// [`LatencyBuckets::from_histogram`]) into the buckets and the count; the sum is the
    /// caller's.
    pub(crate) fn add(&mut self, value_ns: u64, count: u64) {
        let first = LATENCY_BUCKET_BOUNDS_NS.partition_point(|&bound| bound < value_ns);
        for slot in &mut self.at_or_below[first..] {
            *slot += count;
        }
        self.count += count;
    }
}

/// What is known of one CPU. None: not known (e.g. a count an imported source lacked), and the
/// sample is left out rather than shown as 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CpuFigures {
    pub cpu: usize,
    pub latency: Option<LatencyBuckets>,
    pub max_ns: Option<i64>,
    /// Values of [`QUANTILES`], in that order, ns.
    pub(crate) quantiles_ns: [Option<u64>; QUANTILES.len()],
    pub samples: Option<u64>,
    pub missed_periods: Option<u64>,
    pub dropped_records: Option<u64>,
    pub(crate) deadline_misses: Option<u64>,
    /// The timer IRQ latency (`--trace`), in the same buckets.
    pub irq_latency: Option<LatencyBuckets>,
    /// (cause, count) of explained late wakeups (`--trace`); causes: irq, softirq, task, idle_exit, no_event.
    pub(crate) late_wakeups: Vec<(&'static str, u64)>,
    /// A noise run's totals.
    pub noise: Option<NoiseFigures>,
    /// The context counters since the start (docs/counters.md): (name, is a gauge, value): a
    /// change's sum, or a gauge's last reading.
    pub(crate) context: Vec<(String, bool, i64)>,
}

/// One CPU's noise totals (run.json `threads[].noise`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct NoiseFigures {
    pub noise_ns: u64,
    /// Noise over the time measured, 0 to 1.
    pub(crate) noise_ratio: f64,
    pub(crate) throttled_ns: u64,
}

/// The labels of `jitterlab_info`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Identity {
    pub version: String,
    pub(crate) kernel: String,
    pub(crate) preemption: String,
    pub host: String,
}

/// Everything one exposition holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Exposition {
    /// What the run measured: it names the sample families (wakeup latency or noise gaps).
    pub kind: RunKind,
    pub(crate) identity: Identity,
    pub cpus: Vec<CpuFigures>,
    /// (clause as written, holds) per budget clause; empty without a budget.
    pub budget: Vec<(String, bool)>,
}

/// A label value escaped for the text format: backslash, double quote and newline as the
/// format says; other control characters (which the format would pass raw, to a terminal too)
/// become U+FFFD.
pub(crate) fn escape_label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A number of seconds from ns, in the shortest form that reads back exactly.
fn seconds(ns: f64) -> String {
    format!("{}", ns / 1e9)
}

/// The text syntax of an exposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// The Prometheus text exposition format 0.0.4 (node_exporter's textfile collector,
    /// promtool, the monitor's `/metrics`).
    Prometheus,
    /// OpenMetrics text 1.0.0.
    OpenMetrics,
}

/// A family's `# HELP`, `# TYPE` and (OpenMetrics) `# UNIT` lines.
fn header(out: &mut String, f: &Family, syntax: Syntax) {
    let (name, kind) = match syntax {
        Syntax::Prometheus => (f.name, f.kind),
        // A counter's family is named without the `_total` of its sample; `untyped` is
        // `unknown`.
        Syntax::OpenMetrics => (
            match f.kind {
                "counter" => f.name.strip_suffix("_total").unwrap_or(f.name),
                _ => f.name,
            },
            match f.kind {
                "untyped" => "unknown",
                kind => kind,
            },
        ),
    };
    let _ = writeln!(out, "# HELP {name} {}", f.help);
    let _ = writeln!(out, "# TYPE {name} {kind}");
    // A unit is declared only where the family's name ends with it, as the format requires.
    if syntax == Syntax::OpenMetrics
        && let Some(unit) = ["seconds", "ratio"]
            .into_iter()
            .find(|u| name.ends_with(&format!("_{u}")))
    {
        let _ = writeln!(out, "# UNIT {name} {unit}");
    }
}

/// One family whose samples are one value per CPU; nothing (not even the header) when no CPU
/// has the value.
fn per_cpu(
    out: &mut String,
    syntax: Syntax,
    f: &Family,
    cpus: &[CpuFigures],
    value: impl Fn(&CpuFigures) -> Option<String>,
) {
    let values: Vec<(usize, String)> = cpus
        .iter()
        .filter_map(|c| value(c).map(|v| (c.cpu, v)))
        .collect();
    if values.is_empty() {
        return;
    }
    header(out, f, syntax);
    for (cpu, v) in values {
        let _ = writeln!(out, "{}{{cpu=\"{cpu}\"}} {v}", f.name);
    }
}

/// One histogram family in [`LATENCY_BUCKET_BOUNDS_NS`]'s buckets, per CPU that has it;
/// nothing when none has.
fn histogram(
    out: &mut String,
    syntax: Syntax,
    f: &Family,
    cpus: &[CpuFigures],
    buckets: impl Fn(&CpuFigures) -> Option<&LatencyBuckets>,
) {
    if !cpus.iter().any(|c| buckets(c).is_some()) {
        return;
    }
    header(out, f, syntax);
    for c in cpus {
        let Some(l) = buckets(c) else { continue };
        for (bound, count) in LATENCY_BUCKET_BOUNDS_NS.iter().zip(l.at_or_below) {
            let _ = writeln!(
                out,
                "{}_bucket{{cpu=\"{}\",le=\"{}\"}} {count}",
                f.name,
                c.cpu,
                seconds(*bound as f64)
            );
        }
        let _ = writeln!(
            out,
            "{}_bucket{{cpu=\"{}\",le=\"+Inf\"}} {}",
            f.name, c.cpu, l.count
        );
        let _ = writeln!(
            out,
            "{}_sum{{cpu=\"{}\"}} {}",
            f.name,
            c.cpu,
            seconds(l.sum_ns)
        );
        let _ = writeln!(out, "{}_count{{cpu=\"{}\"}} {}", f.name, c.cpu, l.count);
    }
}

/// The exposition in `syntax`, families in a fixed order, CPUs in the order given.
pub(crate) fn render(e: &Exposition, syntax: Syntax) -> String {
    let mut out = String::new();
    let cpus = &e.cpus;
    let f = &e.kind.spec().metrics;
    histogram(&mut out, syntax, &f.histogram, cpus, |c| c.latency.as_ref());
    per_cpu(&mut out, syntax, &f.max, cpus, |c| {
        c.max_ns.map(|v| seconds(v as f64))
    });
    if cpus
        .iter()
        .any(|c| c.quantiles_ns.iter().any(Option::is_some))
    {
        header(&mut out, &f.quantile, syntax);
        for c in cpus {
            for (q, v) in QUANTILES.iter().zip(c.quantiles_ns) {
                if let Some(v) = v {
                    let _ = writeln!(
                        out,
                        "{}{{cpu=\"{}\",quantile=\"{q}\"}} {}",
                        f.quantile.name,
                        c.cpu,
                        seconds(v as f64)
                    );
                }
            }
        }
    }
    let count = |v: Option<u64>| v.map(|n| n.to_string());
    per_cpu(&mut out, syntax, &f.samples, cpus, |c| count(c.samples));
    per_cpu(&mut out, syntax, &MISSED, cpus, |c| count(c.missed_periods));
    per_cpu(&mut out, syntax, &f.dropped, cpus, |c| {
        count(c.dropped_records)
    });
    per_cpu(&mut out, syntax, &DEADLINE, cpus, |c| {
        count(c.deadline_misses)
    });
    per_cpu(&mut out, syntax, &NOISE_TIME, cpus, |c| {
        c.noise.map(|n| seconds(n.noise_ns as f64))
    });
    per_cpu(&mut out, syntax, &NOISE_RATIO, cpus, |c| {
        c.noise.map(|n| n.noise_ratio.to_string())
    });
    per_cpu(&mut out, syntax, &THROTTLED, cpus, |c| {
        c.noise.map(|n| seconds(n.throttled_ns as f64))
    });
    histogram(&mut out, syntax, &IRQ_LATENCY, cpus, |c| {
        c.irq_latency.as_ref()
    });
    if cpus.iter().any(|c| !c.late_wakeups.is_empty()) {
        header(&mut out, &LATE_WAKEUPS, syntax);
        for c in cpus {
            for (cause, n) in &c.late_wakeups {
                let _ = writeln!(
                    out,
                    "{}{{cpu=\"{}\",cause=\"{cause}\"}} {n}",
                    LATE_WAKEUPS.name, c.cpu
                );
            }
        }
    }
    for (family, gauge) in [(&CONTEXT_TOTAL, false), (&CONTEXT_GAUGE, true)] {
        if !cpus.iter().any(|c| c.context.iter().any(|x| x.1 == gauge)) {
            continue;
        }
        header(&mut out, family, syntax);
        for c in cpus {
            for (name, _, v) in c.context.iter().filter(|x| x.1 == gauge) {
                let _ = writeln!(
                    out,
                    "{}{{cpu=\"{}\",counter=\"{}\"}} {v}",
                    family.name,
                    c.cpu,
                    escape_label_value(name)
                );
            }
        }
    }
    if !e.budget.is_empty() {
        header(&mut out, &f.budget, syntax);
        for (clause, ok) in &e.budget {
            let _ = writeln!(
                out,
                "{}{{clause=\"{}\"}} {}",
                f.budget.name,
                escape_label_value(clause),
                u8::from(*ok)
            );
        }
    }
    header(&mut out, &INFO, syntax);
    let i = &e.identity;
    let _ = writeln!(
        out,
        "{}{{version=\"{}\",kernel=\"{}\",preemption=\"{}\",host=\"{}\"}} 1",
        INFO.name,
        escape_label_value(&i.version),
        escape_label_value(&i.kernel),
        escape_label_value(&i.preemption),
        escape_label_value(&i.host)
    );
    if syntax == Syntax::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
#[path = "openmetrics_tests.rs"]
mod tests;
