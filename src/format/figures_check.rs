//! What the readers check of run.json's figures before anything uses them: a hand-edited or
//! damaged run.json whose minimum exceeds its maximum, whose percentiles go down, or whose
//! counts exceed its samples would otherwise be printed as if measured, or make an exporter
//! fail half-way (a histogram range from a larger minimum to a smaller maximum). Refused with
//! the field named (exit 2); what a writer of this version always produces passes.

use super::run_record::RunRecord;
use crate::format::stats::LatencySummary;

/// Checks every latency summary of the record (per thread, per phase, IRQ and trace figures)
/// and each thread's counts against its samples. The error names the field, e.g.
/// `threads[1] (CPU 1): min_ns 50000 is above max_ns 20000`.
pub(crate) fn check_figures(record: &RunRecord) -> Result<(), String> {
    // An imported source may leave figures out (listed in `imported.absent`), so only the
    // order of what is there is checked; a run this jitterlab measured has all or none.
    let complete = record.imported.is_none();
    for (k, t) in record.threads.iter().enumerate() {
        let at = format!("threads[{k}] (CPU {})", t.cpu);
        summary(&at, &t.latency, complete)?;
        if let Some(irq) = &t.irq_latency {
            summary(&format!("{at} irq_latency"), irq, false)?;
        }
        for (name, n) in [
            ("early_wakeups", t.early_wakeups),
            ("deadline_misses", t.deadline_misses),
        ] {
            if n > t.latency.samples && complete {
                return Err(format!(
                    "{at}: {name} {n} is more than its {} samples",
                    t.latency.samples
                ));
            }
        }
    }
    for p in &record.phases {
        for t in &p.threads {
            let at = format!("phases[{}] ({}) CPU {}", p.index, p.label, t.cpu);
            summary(&at, &t.latency, complete)?;
        }
        if p.end_ns < p.start_ns {
            return Err(format!(
                "phases[{}] ({}): end_ns {} is before start_ns {}",
                p.index, p.label, p.end_ns, p.start_ns
            ));
        }
    }
    if let Some(trace) = &record.trace {
        for t in &trace.threads {
            let at = format!("trace.threads CPU {}", t.cpu);
            for (name, s) in [
                ("thread_latency", &t.thread_latency),
                ("wake_to_switch", &t.wake_to_switch),
                ("switch_to_user", &t.switch_to_user),
            ] {
                summary(&format!("{at} {name}"), s, false)?;
            }
        }
    }
    Ok(())
}

/// One summary: min at most max, percentiles in order, mean and standard deviation finite,
/// the mean between min and max; with `complete`, every figure present exactly when there
/// are samples.
fn summary(at: &str, s: &LatencySummary, complete: bool) -> Result<(), String> {
    if let (Some(min), Some(max)) = (s.min_ns, s.max_ns)
        && min > max
    {
        return Err(format!("{at}: min_ns {min} is above max_ns {max}"));
    }
    let percentiles = [
        ("p50_ns", s.p50_ns),
        ("p90_ns", s.p90_ns),
        ("p99_ns", s.p99_ns),
        ("p999_ns", s.p999_ns),
        ("p9999_ns", s.p9999_ns),
    ];
    let mut below: Option<(&str, u64)> = None;
    for (name, v) in percentiles {
        let Some(v) = v else { continue };
        if let Some((lower, lv)) = below
            && v < lv
        {
            return Err(format!("{at}: {name} {v} is below {lower} {lv}"));
        }
        below = Some((name, v));
    }
    for (name, v) in [("mean_ns", s.mean_ns), ("stddev_ns", s.stddev_ns)] {
        if let Some(v) = v.filter(|v| !v.is_finite() || (name == "stddev_ns" && *v < 0.0)) {
            return Err(format!("{at}: {name} {v} is not a figure a run can have"));
        }
    }
    if let (Some(min), Some(mean), Some(max)) = (s.min_ns, s.mean_ns, s.max_ns)
        && complete
        && (mean < min as f64 || mean > max as f64)
    {
        return Err(format!(
            "{at}: mean_ns {mean} is outside min_ns {min} to max_ns {max}"
        ));
    }
    if complete {
        let figures = [
            ("min_ns", s.min_ns.is_some()),
            ("max_ns", s.max_ns.is_some()),
            ("mean_ns", s.mean_ns.is_some()),
            ("p50_ns", s.p50_ns.is_some()),
            ("p90_ns", s.p90_ns.is_some()),
            ("p99_ns", s.p99_ns.is_some()),
            ("p999_ns", s.p999_ns.is_some()),
            ("p9999_ns", s.p9999_ns.is_some()),
        ];
        let with = s.samples > 0;
        if let Some((name, _)) = figures.iter().find(|(_, present)| *present != with) {
            return Err(if with {
                format!(
                    "{at}: {name} is missing (null) though it has {} samples",
                    s.samples
                )
            } else {
                format!("{at}: {name} is given though it has no samples")
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> LatencySummary {
        LatencySummary {
            samples: 10,
            min_ns: Some(1000),
            mean_ns: Some(2000.0),
            stddev_ns: Some(10.0),
            p50_ns: Some(1900),
            p90_ns: Some(2500),
            p99_ns: Some(2900),
            p999_ns: Some(3000),
            p9999_ns: Some(3000),
            max_ns: Some(3000),
        }
    }

    #[test]
    fn each_inconsistent_figure_is_named() {
        assert_eq!(summary("t", &full(), true), Ok(()));
        assert_eq!(summary("t", &LatencySummary::default(), true), Ok(()));
        type Spoil = fn(&mut LatencySummary);
        let cases: [(Spoil, &str); 6] = [
            (
                |s| s.min_ns = Some(5000),
                "min_ns 5000 is above max_ns 3000",
            ),
            (
                |s| s.max_ns = None,
                "max_ns is missing (null) though it has 10 samples",
            ),
            (|s| s.p99_ns = Some(100), "p99_ns 100 is below p90_ns 2500"),
            (|s| s.mean_ns = Some(f64::NAN), "mean_ns NaN"),
            (|s| s.stddev_ns = Some(-1.0), "stddev_ns -1"),
            (|s| s.mean_ns = Some(9000.0), "mean_ns 9000 is outside"),
        ];
        for (spoil, want) in cases {
            let mut s = full();
            spoil(&mut s);
            let e = summary("t", &s, true).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
