//! Synthetic runs whose counters jump in known intervals that also hold spikes: the chart is
//! there for that CPU only, its strip's points are at the very pixels of the latency-over-time
//! chart's points of the same intervals, its label's figures are those of counters.log
//! re-derived here by hand, and a counter that did not move has no strip.

use super::*;
use crate::analysis::counters::correlate_dir;
use crate::report::counters::{figures, html_note};
use crate::report::digest::{RunDigest, read_run};
use crate::report::plot::timeline;
use crate::report::plot::zoom::Range;
use crate::results::synthetic::{SyntheticRun, write_counters, write_run};
use std::path::Path;

const S: u64 = 1_000_000_000;
const NAMES: [&str; 3] = ["irq:LOC", "irq:RES", "softirq:TIMER"];

/// A run on CPUs 0 and 1 of `intervals` log intervals of `log_ns` (wakeups every `log_ns / 1000`,
/// the deadline): CPU 1 is 3 deadlines late once in each of `spikes`. With `jumps`, counters.log
/// has CPU 1's irq:LOC at 1000 in those intervals (else 250 + k mod 3), irq:RES at k mod 5
/// everywhere and softirq:TIMER always 250; without, run.json has no counters.
fn run(
    dir: &Path,
    intervals: u64,
    log_ns: u64,
    spikes: &[u64],
    jumps: Option<&[u64]>,
) -> RunDigest {
    let period = log_ns / 1000;
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: period,
        log_interval_ns: log_ns,
        duration_ns: intervals * log_ns,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 9,
    };
    let spike_at: Vec<u64> = spikes.iter().map(|k| k * log_ns + log_ns / 2).collect();
    let record = write_run(dir, &run, |cpu, t, rng| {
        if cpu == 1 && spike_at.contains(&t) {
            3 * period as i64
        } else {
            period as i64 / 100 + (rng.uniform() * 1_000.0) as i64
        }
    })
    .unwrap();
    if let Some(jumps) = jumps {
        write_counters(
            dir,
            &run,
            record,
            &NAMES,
            |cpu, k, n| {
                Some(match NAMES[n] {
                    "irq:LOC" if cpu == 1 && jumps.contains(&k) => 1000,
                    "irq:LOC" => 250 + (k % 3) as i64,
                    "irq:RES" => (k % 5) as i64,
                    _ => 250,
                })
            },
            correlate_dir,
        )
        .unwrap();
    }
    read_run(dir, &|_, _| {}).unwrap()
}

/// The latency-over-time figure as the report draws it.
fn timeline_svg(d: &RunDigest) -> String {
    let series: Vec<_> = d.series.iter().collect();
    let t = timeline::prepare(&series, d.extent_s(), d.phase_spans(), vec![]);
    timeline::draw("t", "t", &t, *d.record.kind.words()).svg
}

/// The points (as written, x and y) of the first polyline with `data-line="max"` after `at`.
fn points_after(svg: &str, at: &str) -> Vec<(String, f64)> {
    let from = svg.find(at).unwrap_or_else(|| panic!("no {at}"));
    let rest = &svg[from..];
    let line = rest
        .split("<polyline points=\"")
        .skip(1)
        .find(|p| p[..p.find("/>").unwrap()].contains(r#"data-line="max""#))
        .unwrap();
    line[..line.find('"').unwrap()]
        .split(' ')
        .map(|xy| {
            let (x, y) = xy.split_once(',').unwrap();
            (x.to_string(), y.parse().unwrap())
        })
        .collect()
}

/// The x (as written) of the points drawn highest: the largest values.
fn highest(points: &[(String, f64)]) -> Vec<String> {
    let top = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    points
        .iter()
        .filter(|p| p.1 == top)
        .map(|p| p.0.clone())
        .collect()
}

/// The `median (min-max)` of a group, as the label writes it.
fn group(values: &mut [i64]) -> String {
    values.sort_unstable();
    let n = values.len();
    let median = (values[(n - 1) / 2] + values[n / 2]) as f64 / 2.0;
    let median = if median.fract() == 0.0 {
        format!("{median:.0}")
    } else {
        format!("{median:.1}")
    };
    format!("{median} ({}-{})", values[0], values[n - 1])
}

/// The two-sided exact p of the rank-sum test of 5 `late` values against `other`, by
/// enumerating every choice of 5 of the pooled values.
fn exact_p(late: &[i64], other: &[i64]) -> f64 {
    let pooled: Vec<i64> = late.iter().chain(other).copied().collect();
    let rank = |v: i64| {
        let below = pooled.iter().filter(|&&w| w < v).count() as f64;
        let equal = pooled.iter().filter(|&&w| w == v).count() as f64;
        below + (equal + 1.0) / 2.0
    };
    let ranks: Vec<f64> = pooled.iter().map(|&v| rank(v)).collect();
    let n = ranks.len();
    let mean = 5.0 * (n as f64 + 1.0) / 2.0;
    let observed = (ranks[..5].iter().sum::<f64>() - mean).abs();
    let (mut extreme, mut all) = (0u64, 0u64);
    for a in 0..n {
        for b in a + 1..n {
            for c in b + 1..n {
                for d in c + 1..n {
                    for e in d + 1..n {
                        let sum = ranks[a] + ranks[b] + ranks[c] + ranks[d] + ranks[e];
                        all += 1;
                        extreme += u64::from((sum - mean).abs() >= observed - 1e-9);
                    }
                }
            }
        }
    }
    extreme as f64 / all as f64
}

#[test]
fn the_moved_counter_is_drawn_at_the_pixels_of_its_late_intervals_with_the_files_figures() {
    let dir = tempfile::tempdir().unwrap();
    let spikes = [5, 12, 20, 27, 33];
    let d = run(&dir.path().join("run"), 40, S, &spikes, Some(&spikes));
    let figs = figures("run1", &d, &Range::default());
    let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["run1-counters-cpu1"], "a chart for CPU 1 only");
    let svg = &figs[0].svg;
    assert!(svg.contains(r#"data-counter="irq:LOC""#));
    for quiet in ["irq:RES", "softirq:TIMER"] {
        assert!(
            !svg.contains(&format!("data-counter=\"{quiet}\"")),
            "{quiet}"
        );
    }

    // The same x: the strip's highest points (irq:LOC 1000) are at the pixels where the
    // latency-over-time chart draws CPU 1's spikes, and so are the latency panel's.
    let timeline = timeline_svg(&d);
    let spikes_x = highest(&points_after(&timeline, r#"data-label="CPU 1""#));
    assert_eq!(spikes_x.len(), spikes.len());
    let strip = points_after(svg, r#"data-counter="irq:LOC""#);
    assert_eq!(strip.len(), 40, "one point per interval");
    assert_eq!(highest(&strip), spikes_x);
    assert_eq!(highest(&points_after(svg, r#"class="latency""#)), spikes_x);
    // Each late interval is shaded on both panels, around its point.
    let shades: Vec<(f64, f64)> = svg
        .split(r#"<rect x=""#)
        .skip(1)
        .filter(|r| r[..r.find("/>").unwrap()].contains(r#"class="late""#))
        .map(|r| {
            let x: f64 = r[..r.find('"').unwrap()].parse().unwrap();
            let w = &r[r.find("width=\"").unwrap() + 7..];
            (x, x + w[..w.find('"').unwrap()].parse::<f64>().unwrap())
        })
        .collect();
    assert_eq!(shades.len(), 2 * spikes.len());
    for x in &spikes_x {
        let x: f64 = x.parse().unwrap();
        assert_eq!(shades.iter().filter(|s| s.0 < x && x < s.1).count(), 2);
    }

    // The label's figures, from counters.log read here by hand, and the exact two-sided p by
    // brute force: the share of all C(40, 5) ways of calling 5 of the 40 intervals late whose
    // rank sum (mid-ranks for ties) is as far from its mean as the late intervals' is.
    let text = std::fs::read_to_string(dir.path().join("run/counters.log")).unwrap();
    let (mut late, mut other) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let words: Vec<&str> = line.split(' ').collect();
        let (k, cpu): (u64, usize) = (words[0].parse().unwrap(), words[1].parse().unwrap());
        let loc = words
            .iter()
            .find_map(|w| w.strip_prefix("irq:LOC="))
            .map_or(0, |v| v.parse::<i64>().unwrap());
        if cpu == 1 {
            if spikes.contains(&k) {
                &mut late
            } else {
                &mut other
            }
            .push(loc);
        }
    }
    assert_eq!((late.len(), other.len()), (5, 35));
    let p = exact_p(&late, &other);
    let label = format!(
        "irq:LOC, interrupts per interval: late median {} vs other {}, p {:.1e}",
        group(&mut late),
        group(&mut other),
        p
    );
    assert!(
        svg.contains(&escape(&label)),
        "{label} not in the chart: {:?}",
        figs[0].statements
    );
    assert!(figs[0].statements.iter().any(|s| s.starts_with(&label)));

    // CPU 0 had no late interval: the note says it was looked at.
    let note = html_note(&d.record, &figs).unwrap();
    assert!(note.contains("CPU 0: not tested (0 intervals"), "{note}");
    assert!(!note.contains("CPU 1"), "{note}");

    // Issue 42: `--time-range 10s:30s` keeps the intervals in it, with the spikes at 12, 20
    // and 27 s (each shaded on both panels), and says how many it cut before and after.
    let zoom = Range {
        from: Some(10.0),
        to: Some(30.0),
    };
    let zoomed = &figures("run1", &d, &zoom)[0];
    let kept = points_after(&zoomed.svg, r#"data-counter="irq:LOC""#);
    assert_eq!(highest(&kept).len(), 3, "the spikes at 12, 20 and 27 s");
    let note = &zoomed.statements[0];
    let count = |word: &str| -> usize {
        let at = note.find(word).unwrap_or_else(|| panic!("{word}: {note}"));
        note[..at]
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (before, after) = (
        count(" intervals before 10.0 s"),
        count(" intervals after 30.0 s"),
    );
    assert_eq!(before + kept.len() + after, 40, "{note}");
    assert!(
        (9..=10).contains(&before) && (9..=10).contains(&after),
        "{note}"
    );
    assert!(zoomed.svg.contains(&escape(note)), "{note}");
    assert_eq!(zoomed.svg.matches(r#"class="late""#).count(), 2 * 3);
}

#[test]
fn spikes_without_a_counter_moving_give_no_chart_and_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(
        &dir.path().join("run"),
        40,
        S,
        &[5, 12, 20, 27, 33],
        Some(&[2, 9]),
    );
    let cpu1 = &d.record.counters.as_ref().unwrap().correlation[1];
    assert_eq!((cpu1.late_intervals, cpu1.tested), (5, 2));
    assert!(cpu1.moved.is_empty(), "{cpu1:?}");
    assert!(figures("run1", &d, &Range::default()).is_empty());
    let note = html_note(&d.record, &[]).unwrap();
    assert!(
        note.contains(
            "CPU 1: no counter moved with the late wakeups (5 intervals with a wakeup over"
        ),
        "{note}"
    );
}

#[test]
fn runs_without_counters_have_no_chart_and_no_note() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(&dir.path().join("run"), 20, S, &[5, 12], None);
    assert!(d.record.counters.is_none());
    assert!(figures("run1", &d, &Range::default()).is_empty());
    assert_eq!(html_note(&d.record, &[]), None);
}

#[test]
fn a_long_run_is_drawn_per_timeline_column_at_the_timelines_pixels() {
    let dir = tempfile::tempdir().unwrap();
    // 1500 intervals of 100 ms: the timeline merges them into 800 columns.
    let spikes = [100, 700, 1300];
    let d = run(
        &dir.path().join("run"),
        1500,
        S / 10,
        &spikes,
        Some(&spikes),
    );
    let figs = figures("run1", &d, &Range::default());
    assert_eq!(figs.len(), 1);
    let svg = &figs[0].svg;
    let strip = points_after(svg, r#"data-counter="irq:LOC""#);
    assert!(strip.len() <= timeline::COLUMNS, "{}", strip.len());
    let timeline = timeline_svg(&d);
    let spikes_x = highest(&points_after(&timeline, r#"data-label="CPU 1""#));
    assert_eq!(spikes_x.len(), spikes.len());
    assert_eq!(highest(&strip), spikes_x);
    // Columns hold 2 intervals: the smallest value of each is drawn too.
    assert!(svg.contains(r#"data-line="min""#));
    assert!(figs[0].statements[1].starts_with("Each point covers"));
}
