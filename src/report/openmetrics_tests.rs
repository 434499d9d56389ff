//! Tests of `report::openmetrics` (in a file of their own to keep that one readable).
use super::*;
use crate::format::stats::new_histogram;

#[test]
fn buckets_are_cumulative_and_exact_away_from_bounds() {
    let mut h = new_histogram();
    h.record_n(1_500, 10).unwrap(); // 1.5 us: above 1 us, at or below 2 us
    h.record_n(30_000, 5).unwrap(); // 30 us
    h.record(3_000_000).unwrap(); // 3 ms
    let b = LatencyBuckets::from_histogram(&h, 1.0);
    assert_eq!(b.count, 16);
    assert_eq!(b.at_or_below[0], 0, "le 1 us");
    assert_eq!(b.at_or_below[1], 10, "le 2 us");
    assert_eq!(b.at_or_below[5], 15, "le 50 us");
    assert_eq!(b.at_or_below[10], 15, "le 2 ms");
    assert_eq!(b.at_or_below[11], 16, "le 5 ms");
    assert_eq!(b.at_or_below[15], 16, "le 100 ms");
}

/// A noise run's gaps are exposed under the noise families, with its noise totals; none of
/// the wakeup latency names or words, and no missed periods or deadline misses.
#[test]
fn a_noise_run_is_exposed_as_gaps() {
    let mut h = new_histogram();
    h.record_n(1_500, 4).unwrap();
    let e = Exposition {
        kind: RunKind::Noise,
        cpus: vec![CpuFigures {
            cpu: 1,
            latency: Some(LatencyBuckets::from_histogram(&h, 6_000.0)),
            max_ns: Some(1_500),
            quantiles_ns: [Some(1_500), None, None],
            samples: Some(4),
            dropped_records: Some(0),
            noise: Some(NoiseFigures {
                noise_ns: 6_000,
                noise_ratio: 0.000_6,
                throttled_ns: 50_000_000,
            }),
            ..CpuFigures::default()
        }],
        budget: vec![("max<20us".into(), true)],
        ..Exposition::default()
    };
    let text = render(&e, Syntax::Prometheus);
    for line in [
        "jitterlab_noise_gap_seconds_bucket{cpu=\"1\",le=\"0.000002\"} 4\n",
        "jitterlab_noise_gap_seconds_sum{cpu=\"1\"} 0.000006\n",
        "jitterlab_noise_gap_max_seconds{cpu=\"1\"} 0.0000015\n",
        "jitterlab_noise_gap_quantile_seconds{cpu=\"1\",quantile=\"0.99\"} 0.0000015\n",
        "jitterlab_noise_gaps_total{cpu=\"1\"} 4\n",
        "jitterlab_noise_seconds_total{cpu=\"1\"} 0.000006\n",
        "jitterlab_noise_ratio{cpu=\"1\"} 0.0006\n",
        "jitterlab_noise_throttled_seconds_total{cpu=\"1\"} 0.05\n",
        "# HELP jitterlab_budget_ok 1 when the noise budget clause holds",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    for word in [
        "latency",
        "wakeup",
        "Wakeup",
        "samples_total",
        "missed",
        "deadline",
    ] {
        assert!(!text.contains(word), "{word}: {text}");
    }
}

#[test]
fn label_values_are_escaped() {
    assert_eq!(
        escape_label_value("a\\b\"c\nd\u{1b}e"),
        "a\\\\b\\\"c\\nd\u{FFFD}e"
    );
}

#[test]
fn absent_figures_are_left_out_not_zero() {
    let e = Exposition {
        cpus: vec![CpuFigures {
            cpu: 3,
            samples: Some(7),
            ..CpuFigures::default()
        }],
        ..Exposition::default()
    };
    let text = render(&e, Syntax::Prometheus);
    assert!(
        text.contains("jitterlab_samples_total{cpu=\"3\"} 7\n"),
        "{text}"
    );
    assert!(!text.contains("jitterlab_missed_periods_total"), "{text}");
    assert!(
        !text.contains("jitterlab_wakeup_latency_seconds_bucket"),
        "{text}"
    );
}

#[test]
fn context_counters_are_counters_and_gauges_by_their_names() {
    let e = Exposition {
        cpus: vec![CpuFigures {
            cpu: 2,
            context: vec![
                ("irq:LOC".into(), false, 2500),
                ("softirq:NET_RX".into(), false, 7),
                ("freq_khz".into(), true, 2_400_000),
            ],
            ..CpuFigures::default()
        }],
        ..Exposition::default()
    };
    let text = render(&e, Syntax::Prometheus);
    for line in [
        "# TYPE jitterlab_cpu_context_total counter\n",
        "jitterlab_cpu_context_total{cpu=\"2\",counter=\"irq:LOC\"} 2500\n",
        "jitterlab_cpu_context_total{cpu=\"2\",counter=\"softirq:NET_RX\"} 7\n",
        "# TYPE jitterlab_cpu_context_reading gauge\n",
        "jitterlab_cpu_context_reading{cpu=\"2\",counter=\"freq_khz\"} 2400000\n",
    ] {
        assert!(text.contains(line), "{line} not in {text}");
    }
    let none = render(&Exposition::default(), Syntax::Prometheus);
    assert!(!none.contains("jitterlab_cpu_context_reading"), "{none}");
}

/// R18: every family passes the lint of `promtool check metrics` (client_golang's promlint),
/// checked here where promtool is not installed: no type word as a part of a name
/// (`jitterlab_cpu_counter_total` was warned: "metric name should not include type
/// 'counter'"), every counter named `_total`, no histogram or summary family ending in a
/// suffix its series add.
#[test]
fn family_names_pass_the_prometheus_lint() {
    let mut all: Vec<&Family> = vec![
        &NOISE_TIME,
        &NOISE_RATIO,
        &THROTTLED,
        &MISSED,
        &DEADLINE,
        &IRQ_LATENCY,
        &LATE_WAKEUPS,
        &CONTEXT_TOTAL,
        &CONTEXT_GAUGE,
        &INFO,
    ];
    for s in RunKind::ALL.iter().map(|k| &k.spec().metrics) {
        all.extend([
            &s.histogram,
            &s.max,
            &s.quantile,
            &s.samples,
            &s.dropped,
            &s.budget,
        ]);
    }
    for f in all {
        let n = f.name;
        for t in ["counter", "gauge", "histogram", "summary"] {
            assert!(
                !n.contains(&format!("_{t}_")) && !n.ends_with(&format!("_{t}")),
                "{n}: promtool: metric name should not include type '{t}'"
            );
        }
        if f.kind == "counter" {
            assert!(
                n.ends_with("_total"),
                "{n}: a counter's name ends in _total"
            );
        }
        if matches!(f.kind, "histogram" | "summary") {
            for suffix in ["_count", "_sum", "_bucket", "_total"] {
                assert!(!n.ends_with(suffix), "{n}: its series add {suffix}");
            }
        }
        assert!(
            n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "{n}: snake case"
        );
    }
}

/// The hostile re-run's L3-b: the HELP of `jitterlab_dropped_records_total` read "Vocabulary
/// lost because ..." (a rename's slip for "Samples"). Each kind's dropped family says what
/// was lost in that kind's words (format::kind: a wakeup's or a gap's record), as its samples
/// family does.
#[test]
fn the_dropped_records_help_names_the_kinds_records() {
    for &kind in RunKind::ALL {
        let families = &kind.spec().metrics;
        let one = kind.words().plural.trim_end_matches('s');
        let help = families.dropped.help.to_lowercase();
        assert!(
            help.starts_with(&format!(
                "{one} records lost because the recorder fell behind"
            )),
            "{kind:?}: {}",
            families.dropped.help
        );
        assert!(
            families.samples.help.to_lowercase().contains(one),
            "{kind:?}: {}",
            families.samples.help
        );
    }
}

/// Tenth hostile re-run, L10-i: an import's overflows (recorded at the histogram's end, 30 us,
/// their real values up to the source's max) were counted in every bucket from 30 us, so
/// `histogram_quantile(0.99, ...)` read 30-50 us for a run whose overflows averaged 50 ms. They
/// count only in the buckets at or above the max, or in `+Inf` alone when it is not known.
#[test]
fn an_imports_overflows_count_in_no_bucket_below_its_max() {
    let mut h = new_histogram();
    h.record_n(15_000, 10).unwrap(); // in range: 15 us
    h.record_n(30_000, 990).unwrap(); // the overflows, at the histogram's end (-h30)
    let at = |b: &LatencyBuckets, le_ns: u64| {
        let i = LATENCY_BUCKET_BOUNDS_NS
            .iter()
            .position(|&x| x == le_ns)
            .unwrap();
        b.at_or_below[i]
    };
    let max = Some(99_999_000i64); // the source's max, 99.999 ms
    let b = LatencyBuckets::from_histogram_with_overflows(&h, 1.0, Some(30_000), max);
    assert_eq!(b.count, 1000);
    for le in [20_000, 50_000, 1_000_000, 50_000_000] {
        assert_eq!(at(&b, le), 10, "le {le} ns");
    }
    assert_eq!(at(&b, 100_000_000), 1000, "le 100 ms, at or above the max");
    // The max not known: the overflows are in `+Inf` (the count) only.
    let b = LatencyBuckets::from_histogram_with_overflows(&h, 1.0, Some(30_000), None);
    assert_eq!(b.count, 1000);
    assert!(b.at_or_below[4..].iter().all(|&n| n == 10), "{b:?}");
    // A max below the overflows' start is no bound for them: `+Inf` only.
    let b = LatencyBuckets::from_histogram_with_overflows(&h, 1.0, Some(30_000), Some(20_000));
    assert!(b.at_or_below[4..].iter().all(|&n| n == 10), "{b:?}");
    // Without overflows, the plain buckets.
    let plain = LatencyBuckets::from_histogram(&h, 1.0);
    assert_eq!(
        LatencyBuckets::from_histogram_with_overflows(&h, 1.0, None, max),
        plain
    );
    assert_eq!(at(&plain, 50_000), 1000);
}
