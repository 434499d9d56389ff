//! OS noise (`jitterlab noise`, docs/noise.md): each sample is a gap above the threshold in a
//! loop that never sleeps; their sum is the time lost to noise.

use super::{Kind, MetricFamily, SampleFamilies, Vocabulary};

pub(super) const KIND: Kind = Kind {
    words: Vocabulary {
        name: "noise",
        command: "jitterlab noise",
        taken_by: Some("a loop that never sleeps"),
        run: "a noise run (jitterlab noise: its figures are gap lengths in a loop that never sleeps)",
        run_tag: "noise run, ",
        sample: "gap",
        title: "Gap",
        value: "gap length",
        sample_value: "gap length",
        plural: "gaps",
        counted: "gaps",
        worst: "longest gaps",
        compared: Some("gap length"),
        explained: "gaps",
        exceeds: "longer",
        // A gap's `missed` field is its throttling mark (docs/noise.md).
        csv_header: "cpu,seq,start_ns,time_s,gap_ns,irq_latency_ns,throttled",
        // A gap has no IRQ latency: the third column is `-`.
        columns_header: "# time_s gap_us irq_latency_us",
    },
    periodic: false,
    time_lost: true,
    irq_split: false,
    missed_marks_throttling: true,
    // It checks for the end only every `PUBLISH_EVERY` iterations (by up to about 0.1 ms).
    reads_past_end: true,
    // The loop never sleeps.
    spins: true,
    // `jitterlab_budget_ok` and `jitterlab_dropped_records_total` keep their names (an alert on
    // either means the same), with a help that says gaps.
    metrics: SampleFamilies {
        histogram: MetricFamily {
            name: "jitterlab_noise_gap_seconds",
            kind: "histogram",
            help: "OS noise: length of each gap above the threshold in the never-sleeping loop of each CPU (jitterlab noise), in seconds.",
        },
        max: MetricFamily {
            name: "jitterlab_noise_gap_max_seconds",
            kind: "gauge",
            help: "Largest gap of each CPU's noise loop over the run, in seconds.",
        },
        quantile: MetricFamily {
            name: "jitterlab_noise_gap_quantile_seconds",
            kind: "untyped",
            help: "Gap length quantile of each CPU's noise loop over the run, from the HDR histogram (within 0.1%), in seconds.",
        },
        samples: MetricFamily {
            name: "jitterlab_noise_gaps_total",
            kind: "counter",
            help: "Gaps above the threshold in each CPU's noise loop (real-time throttling excluded).",
        },
        dropped: MetricFamily {
            name: "jitterlab_dropped_records_total",
            kind: "counter",
            help: "Gap records lost because the recorder fell behind the noise loop, per CPU (the noise totals still count them).",
        },
        budget: MetricFamily {
            name: "jitterlab_budget_ok",
            kind: "gauge",
            help: "1 when the noise budget clause holds on every CPU it judges, else 0.",
        },
    },
    // `jitterlab noise`, a command of its own: its threshold, its loop clock and its default
    // policy are options `run` does not have (plan/build/noise.rs).
    run: None,
};
