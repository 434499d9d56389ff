use super::*;
use crate::analysis::phase;
use crate::results::loaded;
use crate::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};

/// 60 s of 1 ms wakeups at 10 us, and one in `every` at `spike_ns` from 30 s on (phase
/// "spiky"). The spikes' HDR bucket tops lie above them: 2 500 001 ns reads 2 500 607.
fn spiky(dir: &std::path::Path, every: u64, spike_ns: i64) -> LoadedRun {
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: 1_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 60_000_000_000,
        phases: vec![
            SyntheticPhase::seconds("quiet", 0, 30),
            SyntheticPhase::seconds("spiky", 30, 60),
        ],
        loads: vec![],
        warnings: vec![],
        seed: 7,
    };
    write_run(dir, &run, |_, t, _| {
        let k = t / 1_000_000;
        if t >= 30_000_000_000 && k % every == 0 {
            spike_ns
        } else {
            10_000
        }
    })
    .unwrap();
    loaded::load(dir).unwrap()
}

/// Every percentile between the scope's exact min and max, and every interval of B − A
/// within [min B − max A, max B − min A].
fn within_exact_range(c: &Comparison) -> Vec<String> {
    let mut bad = Vec::new();
    for s in &c.scopes {
        let row = |name: &str| s.rows.iter().find(|r| r.statistic == name).unwrap();
        let (min, max) = (row("min"), row("max"));
        for r in s.rows.iter().filter(|r| r.metric().quantile().is_some()) {
            for (k, v) in r.values.iter().enumerate() {
                let (lo, hi) = (min.values[k].unwrap(), max.values[k].unwrap());
                if !v.is_some_and(|v| lo <= v && v <= hi) {
                    bad.push(format!(
                        "{} {} run {k}: {v:?} outside [{lo}, {hi}]",
                        s.scope, r.statistic
                    ));
                }
            }
            for (k, vs) in r.versus_first.iter().enumerate() {
                let i = vs.interval.as_ref().unwrap();
                let (min_a, max_a) = (min.values[0].unwrap(), max.values[0].unwrap());
                let (min_b, max_b) = (min.values[k + 1].unwrap(), max.values[k + 1].unwrap());
                if i.low_ns.is_some_and(|l| l < min_b - max_a)
                    || i.high_ns.is_some_and(|h| h > max_b - min_a)
                {
                    bad.push(format!(
                        "{} {} interval {i:?} beyond the exact range",
                        s.scope, r.statistic
                    ));
                }
            }
        }
    }
    bad
}

/// Issue 23 defect 5: compare's percentiles come from the interval histograms, whose values
/// are bucket tops; p99.9 and p99.99 read 2 500 607 ns for a run whose exact max is
/// 2 500 001, and their intervals reached past it. Whole runs and runs cut to a phase (with
/// and without the phase's window in run.json) stay within the exact range.
#[test]
fn estimates_and_intervals_stay_within_the_exact_range() {
    let dir = tempfile::tempdir().unwrap();
    let a = spiky(&dir.path().join("a"), 100, 2_500_001);
    let b = spiky(&dir.path().join("b"), 50, 2_000_001);
    let whole = compare(&[a.clone(), b.clone()]);
    let p9999 = |c: &Comparison| {
        c.scopes[1]
            .rows
            .iter()
            .find(|r| r.statistic == "p99.99")
            .unwrap()
            .values[0]
    };
    assert_eq!(p9999(&whole), Some(2_500_001.0));
    let mut bad = within_exact_range(&whole);
    let cut = |r: &LoadedRun, keep_window: bool| {
        let mut r = r.clone();
        if !keep_window {
            for p in &mut r.record.phases {
                (p.window_start_ns, p.window_end_ns) = (None, None);
            }
        }
        phase::restrict(r, "spiky").unwrap()
    };
    for keep_window in [true, false] {
        let (pa, pb) = (cut(&a, keep_window), cut(&b, keep_window));
        assert_eq!(pa.record.threads[0].latency.max_ns, Some(2_500_001));
        bad.extend(within_exact_range(&compare(&[pa, pb])));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
