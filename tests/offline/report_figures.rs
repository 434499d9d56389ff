//! The report's zoom (`--latency-range`, `--time-range`) and its per-sample plot
//! (`runN-samples-cpuC`), on a constructed run whose every sample is known: what each plot says
//! it cut off is re-derived here from the samples, as the report tests re-derive the plots'
//! numbers from the tables. And `export --format gnuplot --latency-range`.

use crate::common::*;
use crate::sample_fixture::{documented, with_sample_log};
use jitterlab::format::samplelog::SampleRecord;
use jitterlab::results::synthetic::{START_MONOTONIC_NS, SyntheticRun, write_run};
use jitterlab::units::group_digits as g;
use std::path::Path;

const MS: u64 = 1_000_000;

/// The latency of the wakeup of `cpu` due `offset_ns` after the start: 20 us (CPU 1: 30 us),
/// with spikes of 5 ms on CPU 0 every 1.7 s and of 3 ms on CPU 1 every 2.3 s.
fn latency(cpu: usize, offset_ns: u64) -> i64 {
    let ms = offset_ns / MS;
    match cpu {
        0 if ms % 1700 == 500 => 5_000_000,
        1 if ms % 2300 == 900 => 3_000_000,
        0 => 20_000,
        _ => 30_000,
    }
}

/// A 20 s run at 1 ms on CPUs 0 and 1, 1 s log intervals, with samples.bin holding every
/// sample latency.hlog counts. Returns every sample (cpu, offset ns, latency ns).
fn run_with_samples(dir: &Path) -> Vec<(usize, u64, i64)> {
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: MS,
        log_interval_ns: 1_000 * MS,
        duration_ns: 20_000 * MS,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 42,
    };
    let mut all = Vec::new();
    let record = write_run(dir, &run, |cpu, offset, _| {
        let l = latency(cpu, offset);
        all.push((cpu, offset, l));
        l
    })
    .unwrap();
    let mut seq = [0u64; 2];
    let records: Vec<SampleRecord> = all
        .iter()
        .map(|&(cpu, offset, l)| {
            let r = SampleRecord {
                cpu: cpu as u32,
                missed: 0,
                seq: seq[cpu],
                expected_ns: START_MONOTONIC_NS + offset,
                latency_ns: l,
                irq_latency_ns: None,
            };
            seq[cpu] += 1;
            r
        })
        .collect();
    with_sample_log(dir, record, &records);
    all
}

/// The statements of plot `name` in the report `html`.
fn statements(html: &str, name: &str) -> Vec<String> {
    let at = html
        .find(&format!("id=\"{name}\""))
        .unwrap_or_else(|| panic!("no plot {name}"));
    let rest = &html[at..];
    let list = rest
        .split("<ul class=\"statements\">")
        .nth(1)
        .and_then(|r| r.split("</ul>").next())
        .unwrap_or_else(|| panic!("no statements under {name}"));
    list.split("<li>")
        .skip(1)
        .map(|l| l.split("</li>").next().unwrap().to_string())
        .collect()
}

/// SH7780 Figs. 6 and 7: every wakeup over time, and the same with the latency axis zoomed.
/// Each plot says what the zoom cut, counted here from the samples.
#[test]
fn zoom_says_what_it_cut_counted_from_the_samples() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("sh7780-fig6");
    let all = run_with_samples(&dir);
    let plots = base.path().join("fig7-plots");
    let html_path = base.path().join("fig7.html");
    documented(
        "reproducing.md",
        "jitterlab report sh7780-fig6 --latency-range :2ms --time-range 5s:15s -o fig7.html --plots fig7-plots",
    );
    let o = jitterlab(&[
        "report",
        dir.to_str().unwrap(),
        "--latency-range",
        ":2ms",
        "--time-range",
        "5s:15s",
        "-o",
        html_path.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&html_path).unwrap();
    for cpu in 0..2usize {
        let mine: Vec<&(usize, u64, i64)> = all.iter().filter(|a| a.0 == cpu).collect();
        // The histogram and exceedance curve: every wakeup above 2 ms (no time axis).
        let above = mine.iter().filter(|a| a.2 > 2_000_000).count() as u64;
        assert!(above > 0);
        let said = format!("CPU {cpu}: {} wakeups above 2.00 ms not shown", g(above));
        for plot in ["run1-histogram", "run1-exceedance"] {
            assert!(
                statements(&html, plot).contains(&said),
                "{plot}: {:?} lacks {said}",
                statements(&html, plot)
            );
            let svg = std::fs::read_to_string(plots.join(format!("{plot}.svg"))).unwrap();
            assert!(svg.contains(&said), "{plot}.svg lacks {said}");
        }
        // The per-sample plot: the wakeups due before 5 s and after 15 s, then those between
        // above 2 ms.
        let before = mine.iter().filter(|a| a.1 < 5_000 * MS).count() as u64;
        let after = mine.iter().filter(|a| a.1 > 15_000 * MS).count() as u64;
        let in_time: Vec<_> = mine
            .iter()
            .filter(|a| (5_000 * MS..=15_000 * MS).contains(&a.1))
            .collect();
        let above_in_time = in_time.iter().filter(|a| a.2 > 2_000_000).count() as u64;
        let name = format!("run1-samples-cpu{cpu}");
        let st = statements(&html, &name);
        let want = [
            format!(
                "CPU {cpu}: {} wakeups before 5.0 s not shown; {} wakeups after 15.0 s not shown",
                g(before),
                g(after)
            ),
            format!(
                "CPU {cpu}: {} wakeups above 2.00 ms not shown",
                g(above_in_time)
            ),
        ];
        for w in &want {
            assert!(st.contains(w), "{name}: {st:?} lacks {w}");
        }
        assert!(
            st[0].starts_with(&format!(
                "CPU {cpu}: {} wakeups drawn as ",
                g(in_time.len() as u64 - above_in_time)
            )),
            "{st:?}"
        );
        // The timeline: its 1 s intervals whose middle is outside 5-15 s, then those inside
        // with a max above 2 ms.
        let intervals_above = (0..20u64)
            .filter(|i| (5.0..=15.0).contains(&(*i as f64 + 0.5)))
            .filter(|i| {
                mine.iter()
                    .any(|a| a.1 / (1_000 * MS) == *i && a.2 > 2_000_000)
            })
            .count();
        let st = statements(&html, "run1-timeline");
        let w = format!("CPU {cpu}: {intervals_above} interval maxima above 2.00 ms not shown");
        assert!(st.contains(&w), "timeline: {st:?} lacks {w}");
    }
    let st = statements(&html, "run1-timeline");
    let w = "time axis: 5 intervals before 5.0 s not shown; 5 intervals after 15.0 s not shown";
    assert!(st.iter().any(|x| x == w), "{st:?} lacks {w}");
}

/// Without a zoom nothing is said cut, and the per-sample plot keeps every maximum: its
/// statement names each CPU's largest sample at its exact time.
#[test]
fn every_latency_over_time_keeps_each_maximum() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("sh7780-fig6");
    let all = run_with_samples(&dir);
    let html_path = base.path().join("fig6.html");
    documented(
        "reproducing.md",
        "jitterlab report sh7780-fig6 -o fig6.html --plots fig6-plots",
    );
    let o = jitterlab(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(!html.contains("not shown"));
    for cpu in 0..2usize {
        let mine: Vec<&(usize, u64, i64)> = all.iter().filter(|a| a.0 == cpu).collect();
        // The first of the largest.
        let max = mine.iter().map(|a| a.2).max().unwrap();
        let at = mine.iter().find(|a| a.2 == max).unwrap().1;
        let st = statements(&html, &format!("run1-samples-cpu{cpu}"));
        assert!(
            st[0].starts_with(&format!(
                "CPU {cpu}: {} wakeups drawn as ",
                g(mine.len() as u64)
            )),
            "{st:?}"
        );
        let w = format!(
            "CPU {cpu}: the largest is {}.00 ms at {:.6} s after the start",
            max / 1_000_000,
            at as f64 / 1e9
        );
        assert!(st.contains(&w), "{st:?} lacks {w}");
        // Every spike is a column's maximum: one circle each, at its exact value.
        let spikes = mine.iter().filter(|a| a.2 > 2_000_000).count();
        let svg = html
            .split(&format!("id=\"run1-samples-cpu{cpu}\""))
            .nth(1)
            .unwrap()
            .split("</svg>")
            .next()
            .unwrap();
        let tips = svg
            .matches(&format!("<title>CPU {cpu}: {}.00 ms at ", max / 1_000_000))
            .count();
        assert_eq!(tips, spikes, "CPU {cpu}");
    }
}

/// `export --format gnuplot --latency-range`: the script's x range and, per CPU, the wakeups
/// above it, counted from the samples.
#[test]
fn gnuplot_latency_range_labels_the_cut() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run");
    let all = run_with_samples(&dir);
    let name = base.path().join("zoomed");
    let o = jitterlab(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "gnuplot",
        "--latency-range",
        ":2ms",
        "-o",
        name.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let gp = std::fs::read_to_string(base.path().join("zoomed.gp")).unwrap();
    assert!(gp.contains("set xrange [-"), "{gp}");
    assert!(gp.contains(":2000]"), "{gp}");
    for cpu in 0..2usize {
        let above = all.iter().filter(|a| a.0 == cpu && a.2 > 2_000_000).count();
        let w = format!(
            "CPU {cpu}: {} wakeups above 2.00 ms not shown",
            g(above as u64)
        );
        assert!(
            gp.contains(&format!("set label {} \"{w}\"", 101 + cpu)),
            "{gp}"
        );
        // Its maximum is outside the range: not marked (the label says it).
        assert!(!gp.contains(&format!("\"CPU {cpu} max ")), "{gp}");
    }
    for args in [
        vec!["--format", "json", "--latency-range", ":2ms"],
        vec!["--format", "gnuplot", "--latency-range", "2ms"],
        vec!["--format", "gnuplot", "--latency-range", "2ms:1ms"],
    ] {
        let mut a = vec!["export", dir.to_str().unwrap()];
        a.extend(args);
        let o = jitterlab(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", text(&o));
        assert!(text(&o).contains("--latency-range"), "{a:?}: {}", text(&o));
    }
    let o = jitterlab(&["report", dir.to_str().unwrap(), "--time-range", "9s:3s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A scenario run on CPUs 0 and 1 at 1 ms, 1 s log intervals: `idle` for `idle_s` s at
/// `idle_ns`, then `io` for `io_s` s where one wakeup in `every` is 1 ms late and the rest at
/// `io_ns`.
fn phased(dir: &Path, idle_s: u64, io_s: u64, idle_ns: i64, io_ns: i64, every: u64) {
    use jitterlab::results::synthetic::SyntheticPhase;
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: MS,
        log_interval_ns: 1_000 * MS,
        duration_ns: (idle_s + io_s) * 1_000 * MS,
        phases: vec![
            SyntheticPhase::seconds("idle", 0, idle_s),
            SyntheticPhase::seconds("io", idle_s, idle_s + io_s),
        ],
        loads: vec![],
        warnings: vec![],
        seed: 7,
    };
    write_run(dir, &run, |_, t, _| {
        if t < idle_s * 1_000 * MS {
            idle_ns
        } else if (t / MS).is_multiple_of(every) {
            1_000_000
        } else {
            io_ns
        }
    })
    .unwrap();
}

/// OCERA Fig. 7 over Fig. 8 and the Cortex-A8 study's standard-against-RT graph: two runs of
/// different lengths overlaid. Their histograms as shares of each run's wakeups, their phase
/// `io` across runs, and their timelines from each run's start, the legend naming each run;
/// every share re-derived from the runs' known samples.
#[test]
fn runs_of_different_lengths_overlay_as_shares() {
    let base = tempfile::tempdir().unwrap();
    let (std_dir, rt_dir) = (base.path().join("ocera-std"), base.path().join("ocera-rt"));
    // Standard: 10 s idle at 20 us, 10 s io at 40 us with every 100th at 1 ms.
    phased(&std_dir, 10, 10, 20_000, 40_000, 100);
    // RT: 5 s idle at 20 us, 30 s io at 25 us with every 1000th at 1 ms.
    phased(&rt_dir, 5, 30, 20_000, 25_000, 1000);
    let html_path = base.path().join("ocera.html");
    documented(
        "reproducing.md",
        "jitterlab report ocera-std ocera-rt -o ocera.html --plots ocera-plots",
    );
    let o = jitterlab(&[
        "report",
        std_dir.to_str().unwrap(),
        rt_dir.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&html_path).unwrap();
    // The histograms as shares: the fullest bin of each run and its share of the run's
    // wakeups (2 CPUs x 1000 wakeups a second).
    let st = statements(&html, "overlay-histogram-share");
    let share = |n: f64, of: f64| format!("{:.1}% of them", 100.0 * n / of);
    // Standard: 20 000 wakeups at 20 us, 19 800 at 40 us, 200 at 1 ms: 20 us is fullest.
    assert!(
        st[0].starts_with("run 1: ocera-std: 40000 wakeups; the fullest bin is")
            && st[0].ends_with(&share(20_000.0, 40_000.0)),
        "{st:?}"
    );
    // RT: 59 940 at 25 us of 70 000.
    assert!(
        st[1].starts_with("run 2: ocera-rt: 70000 wakeups; the fullest bin is")
            && st[1].ends_with(&share(59_940.0, 70_000.0)),
        "{st:?}"
    );
    // Phase io across runs: its whole log intervals, all CPUs; the 1 ms share of each.
    let st = statements(&html, "overlay-phase-io");
    assert_eq!(st.len(), 2, "{st:?}");
    assert!(
        st[0].starts_with("run 1: ocera-std: 20000 wakeups in whole log intervals"),
        "{st:?}"
    );
    assert!(
        st[0].ends_with(&format!(
            "holds {:.1} % of them",
            100.0 * 19_800.0 / 20_000.0
        )),
        "{st:?}"
    );
    assert!(
        st[1].starts_with("run 2: ocera-rt: 60000 wakeups in whole log intervals"),
        "{st:?}"
    );
    assert!(html.contains("id=\"overlay-phase-idle\""));
    // The timelines from each run's start: the legend names each run, the worst interval is
    // the first with a 1 ms wakeup (the io phase's first second).
    let st = statements(&html, "overlay-timeline");
    assert!(
        st[0].contains("run 1: ocera-std: one point per interval"),
        "{st:?}"
    );
    assert!(
        st.iter()
            .any(|x| x == "run 1: ocera-std: worst interval at 10.0s after the start, max 1.00 ms"),
        "{st:?}"
    );
    assert!(
        st.iter()
            .any(|x| x == "run 2: ocera-rt: worst interval at 5.0s after the start, max 1.00 ms"),
        "{st:?}"
    );
    let svg = html
        .split("id=\"overlay-timeline\"")
        .nth(1)
        .unwrap()
        .split("</svg>")
        .next()
        .unwrap();
    assert!(svg.contains("run 1: ocera-std max") && svg.contains("run 2: ocera-rt p99"));
}

/// A run on CPUs 0 and 1 at 1 ms, 1 s log intervals, `seconds` long, without phases, whose
/// latencies are `latency(cpu, ms)`. Returns every latency.
fn plain(dir: &Path, seconds: u64, seed: u64, latency: impl Fn(usize, u64) -> i64) -> Vec<i64> {
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: MS,
        log_interval_ns: 1_000 * MS,
        duration_ns: seconds * 1_000 * MS,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed,
    };
    let mut all = Vec::new();
    write_run(dir, &run, |cpu, t, _| {
        let l = latency(cpu, t / MS);
        all.push(l);
        l
    })
    .unwrap();
    all
}

/// The Cortex-A8 study: a standard and an RT run of different lengths on one log graph, by the
/// command docs/reproducing.md gives. Each run's exceedance statements (its shares within a
/// latency, and its max) and its fullest histogram bin as a share of its own wakeups are
/// re-derived from the runs' known samples, and the comparison table's max ratio is the
/// study's 58 us against 2465 us.
#[test]
fn cortex_a8_standard_against_rt_on_one_graph() {
    let base = tempfile::tempdir().unwrap();
    let (std_dir, rt_dir) = (base.path().join("a8-std"), base.path().join("a8-rt"));
    // Standard, 20 s: 20 us; 300 us every 80th ms on both CPUs, 2465 us once a second on CPU 0
    // (39 480, 500 and 20 of 40 000: no percentile stated falls on a boundary between them).
    let std_all = plain(&std_dir, 20, 11, |cpu, ms| {
        match (cpu, ms % 1000, ms % 80) {
            (0, 550, _) => 2_465_000,
            (_, _, 50) => 300_000,
            _ => 20_000,
        }
    });
    // RT, 30 s: 15 us; 58 us every 400th ms on CPU 1 (59 925 and 75 of 60 000).
    let rt_all = plain(&rt_dir, 30, 12, |cpu, ms| {
        if cpu == 1 && ms % 400 == 250 {
            58_000
        } else {
            15_000
        }
    });
    documented(
        "reproducing.md",
        "jitterlab report a8-std a8-rt -o a8.html --plots a8-plots",
    );
    let html_path = base.path().join("a8.html");
    let plots = base.path().join("a8-plots");
    let o = jitterlab(&[
        "report",
        std_dir.to_str().unwrap(),
        rt_dir.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&html_path).unwrap();
    for name in ["overlay-exceedance", "overlay-histogram-share"] {
        assert!(plots.join(format!("{name}.svg")).is_file(), "{name}.svg");
    }
    let runs = [("run 1: a8-std", &std_all), ("run 2: a8-rt", &rt_all)];
    // Exceedance: "run 1: a8-std: 99% of wakeups within 20.0 us; ...; all 40000 within 2.47 ms".
    let st = statements(&html, "overlay-exceedance");
    assert_eq!(st.len(), 2, "{st:?}");
    for ((label, all), s) in runs.iter().zip(&st) {
        let mut sorted = (*all).clone();
        sorted.sort_unstable();
        let n = sorted.len();
        let rest = s
            .strip_prefix(&format!("{label}: "))
            .unwrap_or_else(|| panic!("{s}"));
        let parts: Vec<&str> = rest.split("; ").collect();
        assert_eq!(
            parts.last().copied(),
            Some(
                format!(
                    "all {n} within {}",
                    jitterlab::units::format_ns(sorted[n - 1] as u64)
                )
                .as_str()
            ),
            "{s}"
        );
        assert_eq!(parts.len(), 4, "p99, p99.9, p99.99 and the max: {s}");
        for part in &parts[..parts.len() - 1] {
            let (share, value) = part.split_once("% of wakeups within ").unwrap();
            let q: f64 = share.parse::<f64>().unwrap() / 100.0;
            // Nearest rank, the histogram's bucket (1/1024) and the printed rounding.
            let x = sorted[((q * n as f64).ceil() as usize).max(1) - 1] as f64;
            let (at, half) = crate::common::oracle::printed_ns(value).unwrap();
            assert!(
                at + half >= x && at - half <= x + x / 1024.0,
                "{part}: {x} ns"
            );
        }
    }
    // The histograms as shares of each run's own wakeups: the fullest bin is the body's value.
    let st = statements(&html, "overlay-histogram-share");
    for ((label, all), s) in runs.iter().zip(&st) {
        let least = *all.iter().min().unwrap();
        let body = all.iter().filter(|&&l| l == least).count();
        assert!(
            s.starts_with(&format!(
                "{label}: {} wakeups; the fullest bin is",
                all.len()
            )) && s.ends_with(&format!(
                "{:.1}% of them",
                100.0 * body as f64 / all.len() as f64
            )),
            "{s}"
        );
    }
    // The comparison table: max 58 us against 2465 us, 0.0235 of it.
    assert!(
        html.contains("(max 0.024x (98 % lower))"),
        "max 2465 us vs 58 us"
    );
}
