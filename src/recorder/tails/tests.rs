use super::*;
use crate::analysis::tails::spikes;
use crate::format::stats::new_histogram;
use crate::random::SplitMix64;

/// A seeded run of `n` wakeups at 1 ms: a uniform body of 10-20 us, bursts of 1-3 late
/// wakeups (200 us - 5 ms) now and then, and now and then a wakeup that skipped periods.
fn run(n: u64, seed: u64) -> Vec<Sample> {
    let mut rng = SplitMix64::new(seed);
    let mut burst = 0;
    (0..n)
        .map(|seq| {
            if burst == 0 && rng.uniform() < 0.002 {
                burst = 1 + (rng.uniform() * 3.0) as u32;
            }
            let latency = if burst > 0 {
                burst -= 1;
                200_000 + (rng.uniform() * 4_800_000.0) as i64
            } else {
                10_000 + (rng.uniform() * 10_000.0) as i64
            };
            Sample {
                seq,
                expected_ns: 7_000 + seq * 1_000_000,
                latency_ns: latency,
                missed: (latency / 1_000_000) as u32,
            }
        })
        .collect()
}

/// Every count against a recount of the samples themselves: shares within, spikes over the
/// deadline (streamed) and over 10x the median (from the kept peaks), the worst firm window.
#[test]
fn counts_match_a_recount_of_the_samples() {
    let samples = run(200_000, 7);
    let plan = TailPlan {
        interval_ns: 1_000_000,
        noise: false,
        within_ns: vec![15_000, 250_000, 1_000_000],
        firm_k: vec![10, 100],
        // One budget threshold of its own, one that is the deadline (counted once).
        spike_ns: vec![400_000, 1_000_000],
        phases: Vec::new(),
        run_length_ns: Some(250_000),
    };
    let mut state = TailState::new(plan, 1_000_000, 7_000);
    let mut h = new_histogram();
    for s in &samples {
        state.record(s);
        h.record(s.latency_ns as u64).unwrap();
    }
    let r = state.result(&h, None);
    let latencies: Vec<u64> = samples.iter().map(|s| s.latency_ns as u64).collect();
    for w in &r.within {
        let e = Exceedance::from_samples(&latencies, w.threshold_ns);
        assert_eq!(
            (w.within, w.above, w.undecided),
            (e.within, e.above, 0),
            "{w:?}"
        );
    }
    let tenfold = ten_times_median(&h).unwrap();
    assert!(r.within.iter().any(|w| w.threshold_ns == tenfold));
    let pairs = || {
        samples
            .iter()
            .map(|s| (s.expected_ns - 7_000, s.latency_ns as u64))
    };
    let bases: Vec<(&str, u64)> = r
        .spikes
        .iter()
        .map(|s| (s.basis.as_str(), s.threshold_ns))
        .collect();
    assert_eq!(
        bases,
        [
            ("10x median", tenfold),
            ("budget", 400_000),
            ("deadline", 1_000_000)
        ]
    );
    for s in &r.spikes {
        assert!(s.not_counted.is_none(), "{s:?}");
        let want = spikes::spikes_from_samples(pairs(), s.threshold_ns);
        assert_eq!(s.count, want.len() as u64, "{}", s.basis);
        let times: Vec<u64> = want.iter().map(|x| x.time_ns).collect();
        assert_eq!(s.times_ns, times, "{}", s.basis);
    }
    let mut periods = Vec::new();
    for s in &samples {
        periods.extend(std::iter::repeat_n(true, s.missed as usize));
        periods.push(s.latency_ns > 1_000_000);
    }
    for f in &r.firm {
        let worst = periods
            .windows(f.k as usize)
            .map(|w| w.iter().filter(|&&m| m).count() as u64)
            .max()
            .unwrap();
        assert_eq!(f.worst_misses, worst, "k={}", f.k);
    }
}

/// The peak keeper holds at most twice PEAKS_KEPT, and every wakeup above its level.
#[test]
fn peaks_are_bounded_and_complete_above_their_level() {
    let samples = run(300_000, 11);
    let mut keeper = PeakKeeper::default();
    let mut rng = SplitMix64::new(3);
    let latencies: Vec<u64> = samples
        .iter()
        .map(|_| (rng.uniform() * 1e6) as u64)
        .collect();
    for (s, &l) in samples.iter().zip(&latencies) {
        keeper.push(s.seq, s.expected_ns, l);
        assert!(keeper.peaks.len() < 2 * PEAKS_KEPT);
    }
    let above = latencies.iter().filter(|&&l| l > keeper.level_ns).count();
    assert_eq!(keeper.peaks.len(), above);
    assert!(keeper.peaks.len() >= PEAKS_KEPT.min(above));
    assert!(
        keeper.peaks.windows(2).all(|w| w[0].0 < w[1].0),
        "in wakeup order"
    );
}

/// Issue 23: a synthetic noise run of 4 s with 500 known gaps, one every 8 ms (2 us; every
/// 50th 20 us, two of those 200 us). Each gap is its own event (consecutive gaps are not one
/// spike), the exposure is the 4 s measured (not 500 x the 1 us threshold, which gave
/// 5.9e8/h and an MTBF of 0 s), and the ladder counts the gaps over 10 us, 100 us, 1 ms
/// and 10 ms exactly.
#[test]
fn a_noise_thread_counts_every_gap_over_the_time_measured() {
    use crate::format::noise::GapsOver;
    let gaps: Vec<Sample> = (0..500u64)
        .map(|k| Sample {
            seq: k,
            expected_ns: 7_000 + k * 8_000_000,
            latency_ns: match k {
                100 | 300 => 200_000,
                _ if k % 50 == 0 => 20_000,
                _ => 2_000,
            },
            missed: 0,
        })
        .collect();
    let plan = TailPlan {
        interval_ns: 1_000,
        noise: true,
        within_ns: vec![1_000],
        ..TailPlan::default()
    };
    let mut state = TailState::new(plan, 1_000, 7_000);
    let mut h = new_histogram();
    for g in &gaps {
        state.record(g);
        h.record(g.latency_ns as u64).unwrap();
    }
    let measured_ns = 4_000_000_000;
    let r = state.result(&h, Some(measured_ns));
    let over = |t: u64| gaps.iter().filter(|g| g.latency_ns as u64 > t).count() as u64;
    let counted: Vec<(&str, u64, u64)> = r
        .spikes
        .iter()
        .map(|s| (s.basis.as_str(), s.threshold_ns, s.count))
        .filter(|s| s.0 != "10x median")
        .collect();
    assert_eq!(
        counted,
        [
            ("threshold", 1_000, 500),
            ("ladder", 10_000, 10),
            ("ladder", 100_000, 2),
            ("ladder", 1_000_000, 0),
            ("ladder", 10_000_000, 0),
        ]
    );
    for s in &r.spikes {
        assert_eq!(s.count, over(s.threshold_ns), "{}", s.basis);
        assert_eq!(s.exposure_ns, measured_ns, "{}", s.basis);
    }
    let all = &r.spikes.iter().find(|s| s.basis == "threshold").unwrap();
    assert!((all.rate_per_hour - 450_000.0).abs() < 1e-6, "{all:?}");
    assert_eq!(all.mtbf_ns, Some(8_000_000));
    let per_s: Vec<(u64, u64, f64)> = GapsOver::from_spikes(&r.spikes)
        .iter()
        .filter(|g| g.threshold_ns != ten_times_median(&h).unwrap())
        .map(|g| (g.threshold_ns, g.gaps, g.gaps_per_s))
        .collect();
    assert_eq!(
        per_s,
        [
            (1_000, 500, 125.0),
            (10_000, 10, 2.5),
            (100_000, 2, 0.5),
            (1_000_000, 0, 0.0),
            (10_000_000, 0, 0.0),
        ]
    );
    for g in GapsOver::from_spikes(&r.spikes) {
        assert!(g.gaps_per_s_low <= g.gaps_per_s && g.gaps_per_s <= g.gaps_per_s_high);
    }
}

/// Issue 23: a noise thread's tail is never extrapolated per wakeup (its samples are gaps;
/// "once in" was computed from the threshold as if it were a period). Before, these gaps
/// went to the fit (and were refused by a check, or extrapolated per "wakeup").
#[test]
fn a_noise_thread_refuses_the_per_wakeup_extrapolation() {
    // 200 000 gaps of 2-12 us, every 200th an exponential excess over 20 us.
    let mut rng = crate::random::SplitMix64::new(3);
    let gaps: Vec<Sample> = (0..200_000u64)
        .map(|k| Sample {
            seq: k,
            expected_ns: 7_000 + k * 20_000,
            latency_ns: if k % 200 == 0 {
                20_000 + (-5_000.0 * (1.0 - rng.uniform()).ln()) as i64
            } else {
                2_000 + (rng.uniform() * 10_000.0) as i64
            },
            missed: 0,
        })
        .collect();
    let tail = |noise: bool| {
        let plan = TailPlan {
            interval_ns: 1_000,
            noise,
            ..TailPlan::default()
        };
        let mut state = TailState::new(plan, 1_000, 7_000);
        let mut h = new_histogram();
        for g in &gaps {
            state.record(g);
            h.record(g.latency_ns as u64).unwrap();
        }
        state.result(&h, Some(4_000_000_000)).tail
    };
    // The wakeup thread's tail is judged by the fit's checks (which may refuse it), never
    // by the noise rule.
    assert!(
        !matches!(tail(false), Some(TailRecord::Refused { ref refused, .. }) if refused == "NoiseRun"),
        "{:?}",
        tail(false)
    );
    assert_eq!(
        tail(true),
        Some(TailRecord::Refused {
            refused: "NoiseRun".into(),
            reason: "not extrapolated: a noise run has no wakeups; gaps are counted per second"
                .into(),
        })
    );
}

/// Issue 39 L-f: a CPU held off for 3.2 s by a load (one wakeup, 3 200 periods missed) was
/// summed up as "1 > 1.00 ms, once in 1.00 ms": the exposure was wakeups x interval. It is
/// the time observed, up to the end of the latest wakeup; a thread that runs normally keeps
/// about wakeups x interval.
#[test]
fn the_exposure_is_the_time_observed_not_wakeups_times_the_interval() {
    let plan = TailPlan {
        interval_ns: 1_000_000,
        ..TailPlan::default()
    };
    let start = 7_000;
    let held = Sample {
        seq: 0,
        expected_ns: start,
        latency_ns: 3_200_000_000,
        missed: 3_200,
    };
    let mut state = TailState::new(plan.clone(), 1_000_000, start);
    let mut h = new_histogram();
    state.record(&held);
    h.record(held.latency_ns as u64).unwrap();
    let r = state.result(&h, None);
    let deadline = r.spikes.iter().find(|s| s.basis == "deadline").unwrap();
    assert_eq!(deadline.count, 1);
    assert_eq!(deadline.exposure_ns, 3_200_000_000, "{deadline:?}");
    assert_eq!(deadline.mtbf_ns, Some(3_200_000_000));

    // 1 000 wakeups 1 ms apart, 20 us late: observed to the end of the last one.
    let mut state = TailState::new(plan, 1_000_000, start);
    let mut h = new_histogram();
    for seq in 0..1_000u64 {
        let s = Sample {
            seq,
            expected_ns: start + seq * 1_000_000,
            latency_ns: 20_000,
            missed: 0,
        };
        state.record(&s);
        h.record(20_000).unwrap();
    }
    let r = state.result(&h, None);
    for s in &r.spikes {
        assert_eq!(s.exposure_ns, 999_000_000 + 20_000, "{s:?}");
    }
}
