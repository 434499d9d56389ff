//! Wakeup latency (`jitterlab run`, `monitor`): each sample is how late a wakeup came after
//! its due time, on a period, against a deadline.

use super::{Kind, MetricFamily, SampleFamilies, Vocabulary, RunMeasured, RunSettings};

pub(super) const KIND: Kind = Kind {
    words: Vocabulary {
        name: "latency",
        command: "jitterlab run",
        taken_by: None,
        run: "a latency run (its figures are wakeup latencies)",
        run_tag: "",
        sample: "latency",
        title: "Latency",
        value: "latency",
        sample_value: "wakeup latency",
        plural: "wakeups",
        counted: "samples",
        worst: "latest wakeups",
        compared: None,
        explained: "spikes",
        exceeds: "later",
        csv_header: "cpu,seq,expected_ns,time_s,latency_ns,irq_latency_ns,missed_periods",
        columns_header: "# time_s latency_us irq_latency_us",
    },
    periodic: true,
    time_lost: false,
    irq_split: true,
    missed_marks_throttling: false,
    reads_past_end: false,
    // It sleeps until each wakeup.
    spins: false,
    metrics: SampleFamilies {
        histogram: MetricFamily {
            name: "jitterlab_wakeup_latency_seconds",
            kind: "histogram",
            help: "Wakeup latency of the measuring thread of each CPU: how long after its due time it ran, in seconds.",
        },
        max: MetricFamily {
            name: "jitterlab_wakeup_latency_max_seconds",
            kind: "gauge",
            help: "Largest wakeup latency of each CPU over the window (export: the whole run), in seconds.",
        },
        // Untyped, not the gauge the monitor issue names: Prometheus reserves the `quantile` label
        // for summaries (`promtool check metrics` refuses it on a gauge), and as a summary without
        // `_sum` and `_count` node_exporter's textfile collector would add both as 0, numbers
        // nobody measured. Prometheus stores and queries an untyped series exactly like a gauge.
        quantile: MetricFamily {
            name: "jitterlab_wakeup_latency_quantile_seconds",
            kind: "untyped",
            help: "Wakeup latency quantile of each CPU over the window (export: the whole run), from the HDR histogram (within 0.1%), in seconds.",
        },
        samples: MetricFamily {
            name: "jitterlab_samples_total",
            kind: "counter",
            help: "Wakeups measured on each CPU.",
        },
        dropped: MetricFamily {
            name: "jitterlab_dropped_records_total",
            kind: "counter",
            help: "Wakeup records lost because the recorder fell behind the measuring thread, per CPU (jitterlab_samples_total and the latency figures do not count them).",
        },
        budget: MetricFamily {
            name: "jitterlab_budget_ok",
            kind: "gauge",
            help: "1 when the latency budget clause holds on every CPU it judges (monitor: over the window), else 0.",
        },
    },
    run: Some(RunMeasured {
        help: "how late each wakeup of the wake method comes (the default)",
        settings: RunSettings::LatencyGroup,
    }),
};
