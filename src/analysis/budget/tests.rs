//! The budget's grammar, its verdicts and their boundaries, on known records.

use super::*;
use crate::format::RunRecord;
use crate::format::run_record::ThreadSummary;
use crate::format::stats::LatencySummary;

pub(crate) fn thread(cpu: usize, max_us: i64, p999_us: u64, missed: u64) -> ThreadSummary {
    ThreadSummary {
        cpu,
        thread_index: cpu,
        tid: 1,
        interval_ns: 1_000_000,
        deadline_ns: 1_000_000,
        latency: LatencySummary {
            samples: 1000,
            min_ns: Some(5_000),
            mean_ns: Some(12_500.5),
            stddev_ns: Some(3_000.0),
            p50_ns: Some(10_000),
            p90_ns: Some(20_000),
            p99_ns: Some(30_000),
            p999_ns: Some(p999_us * 1000),
            p9999_ns: Some(p999_us * 1000),
            max_ns: Some(max_us * 1000),
        },
        missed_periods: missed,
        dropped_records: 0,
        deadline_misses: missed,
        early_wakeups: 0,
        end: "completed".into(),
        irq_latency: None,
        tails: Default::default(),
        noise: None,
    }
}

pub(crate) fn record(threads: Vec<ThreadSummary>) -> RunRecord {
    let mut r: RunRecord = serde_json::from_value(serde_json::json!({
        "format": 1, "jitterlab_version": "t", "command_line": [],
        "plan": {"cpus": [0, 1], "policy": "fifo", "priority": 95, "deadline_runtime_ns": null,
                 "wake": "clock-nanosleep", "clock": "monotonic", "interval_ns": 1000000,
                 "distance_ns": 0, "interval_step_ns": 0, "duration_ns": 1, "loops": null,
                 "deadline_ns": null, "log_interval_ns": 1000000000, "loads": [],
                 "samples": false, "ring_size": 1024, "mlock": true, "pm_qos_us": null},
        "system": null,
        "environment": {"memory_locked": true, "stack_prefaulted_bytes": 0,
                        "pm_qos": {"held_us": null, "previous_us": null, "error": null}},
        "started_utc": "", "ended_utc": null, "start_monotonic_ns": 0, "duration_ns": null,
        "ended": "completed", "end_reason": null, "threads": [], "loads": [], "warnings": []
    }))
    .unwrap();
    r.threads = threads;
    r
}

#[test]
fn parses_every_metric_operator_and_unit() {
    let b = Budget::parse("max<200us, p99.9<=50us,missed=0,cpu1:min>=1us,mean>1.5ms,p99.99<1s,dropped<3,deadline_misses<=2,stddev<20000ns,p50<1ms,p90<2ms,p99<3ms").unwrap();
    assert_eq!(b.clauses.len(), 12);
    assert_eq!(b.clauses[0].metric, Metric::Max);
    assert_eq!(b.clauses[0].op, Op::Lt);
    assert_eq!(b.clauses[0].limit, 200_000.0);
    assert_eq!(b.clauses[1].text, "p99.9<=50us");
    assert_eq!(b.clauses[1].op, Op::Le);
    assert_eq!(b.clauses[2].metric, Metric::Missed);
    assert_eq!(b.clauses[2].limit, 0.0);
    assert_eq!(b.clauses[3].cpu, Some(1));
    assert_eq!(b.clauses[3].op, Op::Ge);
    assert_eq!(b.clauses[4].limit, 1_500_000.0);
    assert_eq!(b.clauses[5].limit, 1e9);
    assert_eq!(b.named_cpus(), vec![1]);
}

#[test]
fn errors_point_at_the_clause() {
    let e = Budget::parse("max<200us,p99.9<<50us,missed=0").unwrap_err();
    assert_eq!(e.clause_number, 2);
    assert_eq!(e.clause, "p99.9<<50us");
    assert_eq!(e.offset, 10);
    let text = e.to_string();
    assert!(text.contains("unknown operator '<<'"), "{text}");
    assert!(
        text.contains("\n  max<200us,p99.9<<50us,missed=0\n            ^^^^^^^^^^^\n"),
        "{text}"
    );
    assert!(text.contains("accepted:"), "{text}");

    for (bad, why) in [
        ("max<200", "no unit"),
        ("maxx<1ms", "unknown metric 'maxx'"),
        ("p99.9", "no operator"),
        ("max<", "no value"),
        ("<1ms", "no metric"),
        ("missed=0us", "plain integer"),
        ("missed<-1", "plain integer"),
        ("max<1ms,", "is empty"),
        ("gpu0:max<1ms", "scope"),
        ("max!=1ms", "unknown operator"),
        ("max=>1ms", "unknown operator"),
    ] {
        let e = Budget::parse(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn verdicts_judge_every_cpu_and_name_the_worst() {
    let r = record(vec![thread(0, 150, 40, 0), thread(1, 421, 60, 2)]);
    let v = Budget::parse("max<200us,p99.9<50us,missed=0,max<1ms,cpu0:max<200us,cpu5:max<1s")
        .unwrap()
        .evaluate(&r);
    assert!(!v.passed);
    let got: Vec<(bool, &str)> = v
        .clauses
        .iter()
        .map(|c| (c.passed, c.actual.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (false, "cpu1: 421.0 us"),
            (false, "cpu1: 60.0 us"),
            (false, "cpu1: 2"),
            (true, "cpu1: 421.0 us"),
            (true, "cpu0: 150.0 us"),
            (false, "cpu5: not measured in this run"),
        ]
    );
    let lines = verdict_lines(&v);
    assert!(lines[0].starts_with("FAIL  max<200us"), "{lines:?}");
    assert!(lines[3].starts_with("pass  max<1ms"), "{lines:?}");
    assert_eq!(
        lines.last().unwrap(),
        "budget FAILED: 4 of 6 clauses violated"
    );
    assert_eq!(breaches(&v).len(), 4);

    let ok = Budget::parse("max<=421us,min>1us,mean<13us")
        .unwrap()
        .evaluate(&r);
    assert!(ok.passed, "{ok:?}");
    assert_eq!(ok.clauses[2].actual, "cpu1: 12.5 us"); // equal means: the last CPU shows
}

#[test]
fn boundaries_are_exact() {
    let r = record(vec![thread(0, 200, 50, 0)]);
    let v = |e: &str| Budget::parse(e).unwrap().evaluate(&r).passed;
    assert!(!v("max<200us"));
    assert!(v("max<=200us"));
    assert!(v("max=200us"));
    assert!(v("max>=200us"));
    assert!(!v("max>200us"));
    assert!(v("max<200001ns"));
}

#[test]
fn absent_figures_fail_the_clause() {
    let mut r = record(vec![thread(0, 100, 10, 0)]);
    r.imported = Some(crate::format::run_record::ImportRecord {
        source_format: "cyclictest-json".into(),
        source_file: "x".into(),
        per_interval: false,
        absent: vec!["missed_periods".into()],
        figures: Vec::new(),
        overflows: Vec::new(),
    });
    let v = Budget::parse("missed=0,max<1ms").unwrap().evaluate(&r);
    assert!(!v.clauses[0].passed);
    assert_eq!(
        v.clauses[0].actual,
        "cpu0: missed: not in the imported source"
    );
    assert!(v.clauses[1].passed);
    r.threads[0].latency = LatencySummary::default();
    let v = Budget::parse("max<1ms").unwrap().evaluate(&r);
    assert_eq!(v.clauses[0].actual, "cpu0: max: no samples");
}

/// `under(...)` judges the exact share within (undecided wakeups count as above), `firm(m,k)`
/// the worst window of k periods; a threshold or k the run did not count fails the clause.
#[test]
fn under_and_firm_judge_the_counted_figures() {
    use crate::format::tails::{FirmRecord, WithinRecord};
    let mut t = thread(0, 300, 50, 0);
    // 995 of 1000 within 250 us: 99.5 % exactly; 4 more undecided count as above.
    t.tails.within = vec![
        WithinRecord {
            threshold_ns: 250_000,
            within: 995,
            above: 5,
            undecided: 0,
        },
        WithinRecord {
            threshold_ns: 50_000,
            within: 900,
            above: 96,
            undecided: 4,
        },
    ];
    t.tails.firm = vec![FirmRecord {
        k: 10,
        worst_misses: 2,
        worst_first_period: 40,
        window_periods: 10,
    }];
    let r = record(vec![t]);
    let v = |e: &str| Budget::parse(e).unwrap().evaluate(&r);
    assert!(v("under(250us)>=99.5%").passed);
    assert!(!v("under(250us)>99.5%").passed);
    assert!(
        v("under(250us)>=99.5").passed,
        "the percent sign is optional"
    );
    assert_eq!(v("under(250us)>=99.6%").clauses[0].actual, "cpu0: 99.500 %");
    assert!(v("under(50us)>=90%").passed);
    assert!(
        !v("under(50us)>90%").passed,
        "undecided wakeups count as above"
    );
    assert!(v("firm(2,10)").passed);
    assert!(!v("firm(1,10)").passed);
    let both = v("firm(2,10),under(250us)>=99%,max<1ms");
    assert_eq!(
        both.clauses.len(),
        3,
        "the comma inside firm(...) does not split"
    );
    assert!(both.passed);
    let missing = v("firm(1,20)");
    assert!(!missing.passed);
    assert!(
        missing.clauses[0]
            .actual
            .contains("not counted in this run"),
        "{missing:?}"
    );
    assert!(!v("under(100us)>=50%").passed);
    for (bad, why) in [
        ("firm(3,2)", "m <= k"),
        ("firm(2)", "two numbers"),
        ("firm(a,10)", "plain integer"),
        ("under(250us)>=101%", "percent"),
        ("under(25)>=99%", "bad threshold"),
        ("under(250us>=99%", "without its ')'"),
    ] {
        let e = Budget::parse(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

/// `noise_pct` takes a percentage with or without `%`, judges each noise thread's share, and
/// fails on a latency run, which has no noise share.
#[test]
fn noise_pct_judges_noise_runs_only() {
    use crate::format::run_record::NoiseSummary;
    let b = Budget::parse("noise_pct<0.1,cpu1:noise_pct<=2%").unwrap();
    assert_eq!(b.clauses[0].metric, Metric::NoisePct);
    assert_eq!((b.clauses[0].limit, b.clauses[1].limit), (0.1, 2.0));
    assert!(Budget::parse("noise_pct<abc").is_err());
    assert!(Budget::parse("noise_pct<-1").is_err());
    let noisy = |cpu, noise_ns| ThreadSummary {
        noise: Some(NoiseSummary::new(1_000_000_000, 1, (1, noise_ns), (0, 0))),
        ..thread(cpu, 10, 10, 0)
    };
    // 0.05 % and 1.5 % of a second.
    let run = record(vec![noisy(0, 500_000), noisy(1, 15_000_000)]);
    let v = b.evaluate(&run);
    assert!(!v.passed);
    assert_eq!(
        v.clauses.iter().map(|c| c.passed).collect::<Vec<_>>(),
        vec![false, true]
    );
    let v = Budget::parse("noise_pct<0.1")
        .unwrap()
        .evaluate(&record(vec![thread(0, 10, 10, 0)]));
    assert!(!v.passed);
    assert!(
        v.clauses[0].actual.contains("only noise runs"),
        "{}",
        v.clauses[0].actual
    );
}

/// `spikes(T)<=N` judges the recorder's exact count over T, `spikes(T)/h<=R` its rate per hour;
/// an estimate from interval maxima (a lower bound) or a threshold not counted fails the clause.
#[test]
fn spikes_judge_the_counted_spikes() {
    use crate::analysis::tails::interval_spikes::spike_record;
    use crate::analysis::tails::spikes::SpikeTimes;
    let hour = 3_600_000_000_000;
    let times = |lower_bound| SpikeTimes {
        times_ns: vec![1, 2, 3],
        resolution_ns: 1_000_000,
        count_is_lower_bound: lower_bound,
    };
    let mut t = thread(0, 300, 50, 0);
    // 3 spikes over 100 us in half an hour: 6 per hour.
    t.tails.spikes = vec![spike_record("budget", 100_000, 3, times(false), hour / 2)];
    let mut estimated = thread(1, 300, 50, 0);
    estimated.tails.spikes = vec![spike_record("budget", 100_000, 3, times(true), hour / 2)];
    let r = record(vec![t.clone()]);
    let v = |e: &str| Budget::parse(e).unwrap().evaluate(&r);
    let b = Budget::parse("spikes(100us)<=3,cpu0:spikes(100us)/h<6.5").unwrap();
    assert_eq!(b.clauses[0].metric, Metric::Spikes(100_000));
    assert_eq!(b.clauses[1].metric, Metric::SpikeRate(100_000));
    assert!(b.evaluate(&r).passed);
    assert!(!v("spikes(100us)<3").passed);
    assert_eq!(v("spikes(100us)<3").clauses[0].actual, "cpu0: 3");
    assert!(v("spikes(100us)/h<=6").passed);
    let rate = v("spikes(100us)/h<5.9");
    assert!(!rate.passed);
    assert_eq!(rate.clauses[0].actual, "cpu0: 6.00/h");
    let missing = v("spikes(50us)<=100");
    assert!(!missing.passed);
    assert!(
        missing.clauses[0]
            .actual
            .contains("not counted in this run")
    );
    let with_estimate = Budget::parse("spikes(100us)<=3")
        .unwrap()
        .evaluate(&record(vec![t, estimated]));
    assert!(
        !with_estimate.passed,
        "a lower bound cannot show the budget holds"
    );
    assert!(with_estimate.clauses[0].actual.starts_with("cpu1:"));
    for (bad, why) in [
        ("spikes(100us)<=2.5", "count"),
        ("spikes(100us)/h<=fast", "rate per hour"),
        ("spikes(0us)<=1", "above 0"),
        ("spikes(10)<=1", "bad threshold"),
        ("spikes(10us<=1", "of the form"),
    ] {
        let e = Budget::parse(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

/// B1 (eighth hostile re-run): a percentile among an imported histogram's overflows is a lower
/// bound. It decides a clause only where any value above it gives the same answer; otherwise
/// the clause fails as not shown to hold. A percentile below the overflows, and the max and
/// mean (the source's own figures), are judged as before.
#[test]
fn a_percentile_among_an_imports_overflows_is_judged_as_a_bound() {
    use crate::format::run_record::{ImportRecord, SourceOverflow};
    // p99 and above are 30 us, where CPU 0's overflows are recorded; p50 (10 us) is exact.
    let mut r = record(vec![thread(0, 100_000, 30, 0)]);
    r.imported = Some(ImportRecord {
        source_format: "cyclictest-hist".into(),
        source_file: "x".into(),
        per_interval: false,
        absent: Vec::new(),
        figures: Vec::new(),
        overflows: vec![SourceOverflow {
            cpu: 0,
            column: "latency".into(),
            samples: 990,
            from_ns: 30_000,
        }],
    });
    let v = |e: &str| {
        let v = Budget::parse(e).unwrap().evaluate(&r);
        (v.passed, v.clauses[0].actual.clone())
    };
    let (passed, why) = v("p99<50us");
    assert!(!passed, "a bound under the limit shows nothing: {why}");
    assert!(why.contains("≥30.0 us: a lower bound"), "{why}");
    assert!(why.contains("cannot be shown to hold"), "{why}");
    assert!(!v("p99.9<1ms").0);
    assert!(!v("p99=30us").0);
    // Decided by the bound: already over a `<`, already meets a `>`.
    let (passed, why) = v("p99<20us");
    assert!(!passed);
    assert!(why.contains("≥30.0 us (a lower bound"), "{why}");
    let (passed, why) = v("p99>=20us");
    assert!(passed, "{why}");
    assert!(!v("p99>40us").0, "a bound below a `>` limit cannot show it");
    // Below the overflows and the source's own figures: exact, as before.
    assert!(v("p50<20us").0);
    assert!(!v("max<50us").0);
    // Another CPU's overflows do not make CPU 1's figures bounds.
    let mut other = r.clone();
    other.imported.as_mut().unwrap().overflows[0].cpu = 1;
    assert!(Budget::parse("p99<50us").unwrap().evaluate(&other).passed);
}

/// L9-a (ninth hostile re-run): a percentile among the overflows is judged by where they begin
/// (run.json's `imported.overflows[].from_ns`), not by the value the histogram stores for its
/// end (its bucket's representative, 30.015 us for a 30 us end): `p99>30us` cannot be shown
/// when p99 may be exactly 30 us. Before, the stored 30.015 us passed `p99>30us` and
/// `p99>=30.015us`.
#[test]
fn a_bound_is_judged_by_where_the_overflows_begin() {
    let r = overflowed_from_30us();
    let v = |e: &str| {
        let v = Budget::parse(e).unwrap().evaluate(&r);
        (v.passed, v.clauses[0].actual.clone())
    };
    for clause in ["p99>30us", "p99>=30.015us", "p99.9>30us"] {
        let (passed, why) = v(clause);
        assert!(!passed, "{clause}: {why}");
        assert!(why.contains("≥30.0 us: a lower bound"), "{clause}: {why}");
    }
    for clause in ["p99>=30us", "p99>29.9us"] {
        let (passed, why) = v(clause);
        assert!(passed, "{clause}: {why}");
    }
    // The per-CPU cases (JUnit, LAVA) judge the same: report/export/verdict.rs's tests.
}

/// One CPU of 1000 samples whose p99, p99.9 and p99.99 lie among 989 overflows that begin at
/// 30 us, stored as an import stores them (the end bucket's representative, 30.015 us).
pub(crate) fn overflowed_from_30us() -> RunRecord {
    use crate::format::run_record::{ImportRecord, SourceOverflow};
    let mut t = thread(0, 100_000, 30, 0);
    // As an import stores them: the end bucket's representative.
    for p in [
        &mut t.latency.p99_ns,
        &mut t.latency.p999_ns,
        &mut t.latency.p9999_ns,
    ] {
        *p = Some(30_015);
    }
    let mut r = record(vec![t]);
    r.imported = Some(ImportRecord {
        source_format: "cyclictest-hist".into(),
        source_file: "x".into(),
        per_interval: false,
        absent: Vec::new(),
        figures: Vec::new(),
        overflows: vec![SourceOverflow {
            cpu: 0,
            column: "latency".into(),
            samples: 989,
            from_ns: 30_000,
        }],
    });
    r
}
