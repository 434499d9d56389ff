//! The correlation on synthetic runs whose cause is known: a counter set high in exactly the
//! intervals made late, others left to chance.

use super::*;
use crate::format::counters::{CounterInterval, CountersFile};
use crate::random::SplitMix64 as Rng;

const LEN: u64 = 1_000_000_000;

/// 60 intervals of CPU 3; intervals in `late` have a 900 us maximum, the others 20 us; irq:LOC
/// is 1000 + noise in the late ones and 250 + noise in the others; softirq:NET_RX is noise
/// everywhere. Interval 10's counters were read 300 ms late.
fn synthetic(late: &[u64]) -> (CountersFile, HashMap<(usize, u64), Option<u64>>) {
    let mut rng = Rng::new(7);
    let names = vec!["irq:LOC".to_string(), "softirq:NET_RX".to_string()];
    let mut file = CountersFile {
        interval_ns: LEN,
        declared: vec![(3, names)],
        ..Default::default()
    };
    let mut maxima = HashMap::new();
    for k in 0..60u64 {
        let is_late = late.contains(&k);
        let loc = if is_late { 1000 } else { 250 } + (rng.next_u64() % 5) as i64;
        let rx = (rng.next_u64() % 20) as i64;
        let from = k * LEN + if k == 10 { 300_000_000 } else { 1_000 };
        file.intervals.push(CounterInterval {
            interval: k,
            cpu: 3,
            from_ns: from,
            to_ns: (k + 1) * LEN + 2_000,
            values: vec![
                ("irq:LOC".into(), Some(loc)),
                ("softirq:NET_RX".into(), Some(rx)),
            ],
        });
        maxima.insert((3, k), Some(if is_late { 900_000 } else { 20_000 }));
    }
    (file, maxima)
}

fn thresholds() -> Thresholds {
    [(3usize, (100_000u64, "10x median".to_string()))]
        .into_iter()
        .collect()
}

#[test]
fn finds_the_counter_that_moved_in_the_late_intervals_and_only_it() {
    let late = [5, 17, 33, 48];
    let (file, maxima) = synthetic(&late);
    let got = correlate(&thresholds(), &file, &maxima);
    assert_eq!(got.len(), 1);
    let c = &got[0];
    assert_eq!(
        (c.late_intervals, c.other_intervals, c.left_out_intervals),
        (4, 55, 1)
    );
    assert_eq!(c.tested, 2);
    assert_eq!(c.moved.len(), 1, "{:?}", c.moved);
    let m = &c.moved[0];
    assert_eq!(m.counter, "irq:LOC");
    // Complete separation of 4 of 59: only the observed choice (the 4 largest) is as far from
    // the mean rank sum; the opposite extreme is nearer, because the smallest values are tied
    // (mid-ranks of about 6, a doubled sum 96 below the mean against 110 above). So the exact
    // two-sided p is 1 / C(59, 4).
    let c59_4 = 59.0 * 58.0 * 57.0 * 56.0 / 24.0;
    assert!((m.p - 1.0 / c59_4).abs() < 1e-15, "p {}", m.p);
    assert_eq!(m.method, "exact");
    assert!(m.late.min >= 1000 && m.other.max < 1000);
    assert_eq!(m.late.intervals, 4);
}

#[test]
fn nothing_moves_when_the_late_intervals_are_chance() {
    // The late intervals chosen without regard to the counters: irq:LOC is the same there.
    let (mut file, maxima) = synthetic(&[]);
    let mut maxima = maxima;
    for k in [2u64, 9, 30, 41, 52] {
        maxima.insert((3, k), Some(500_000));
    }
    for line in &mut file.intervals {
        line.values[0].1 = Some(250 + (line.interval % 3) as i64);
    }
    let got = correlate(&thresholds(), &file, &maxima);
    assert!(got[0].moved.is_empty(), "{:?}", got[0].moved);
    assert_eq!(got[0].late_intervals, 5);
}

#[test]
fn a_cpu_without_late_intervals_is_refused_with_the_reason() {
    let (file, maxima) = synthetic(&[]);
    let got = correlate(&thresholds(), &file, &maxima);
    assert!(
        got[0]
            .refused
            .as_ref()
            .unwrap()
            .contains("0 intervals with a wakeup over")
    );
}

#[test]
fn compare_finds_the_counter_that_differs_between_two_runs() {
    let (a, _) = synthetic(&[]);
    let (mut b, _) = synthetic(&[]);
    // Run B: NET_RX 100 higher in every interval, irq:LOC as in A.
    for line in &mut b.intervals {
        if let Some(v) = &mut line.values[1].1 {
            *v += 100;
        }
    }
    let (tested, diffs) = compare_runs(&a, &b);
    assert_eq!(tested, 2);
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert_eq!(diffs[0].counter, "softirq:NET_RX");
    assert!(diffs[0].other.min >= 100 && diffs[0].first.max < 20);
    let (_, none) = compare_runs(&a, &a);
    assert!(none.is_empty());
}
