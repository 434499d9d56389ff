//! `jitterlab report`: the HTML holds every plot and run.json's numbers, for a real run with an
//! injected spike and for constructed runs with known distributions (multi-run ratios, sweeps,
//! phases, budgets, traces, imports); headless Chromium opens it without console errors and
//! draws it; bad input exits 2.

use crate::common;

use common::*;
use jitterlab::format::events::{Contributor, Event, EventLog, SpikeExplanation};
use jitterlab::format::run_record::{
    BudgetVerdict, ClauseVerdict, ImportRecord, LoadRecord, RunRecord, Throughput, TraceRecord,
};
use jitterlab::results::ResultDir;
use jitterlab::results::sweep::{SweepRecord, SweepRow, SweepThread};
use jitterlab::results::synthetic::{
    START_MONOTONIC_NS, SyntheticPhase, SyntheticRun, write_counters, write_run,
};
use jitterlab::units::{format_ns, format_ns_signed};
use resvg::{tiny_skia, usvg};
use std::path::Path;
use std::process::Command;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// Runs `jitterlab report` and returns the HTML.
fn report(dirs: &[&Path], out: &Path, plots: Option<&Path>) -> String {
    let mut args: Vec<String> = vec!["report".into()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["-o".into(), out.display().to_string()]);
    if let Some(p) = plots {
        args.extend(["--plots".into(), p.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = jitterlab(&args);
    assert!(o.status.success(), "report failed: {}", text(&o));
    std::fs::read_to_string(out).expect("the report was written")
}

/// The inline `<svg>` with `id`, checked to be a well-formed SVG that resvg can parse.
fn svg_by_id<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!(r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}""#);
    let start = html
        .find(&open)
        .unwrap_or_else(|| panic!("no <svg id=\"{id}\"> in the report"));
    let end = start + html[start..].find("</svg>").expect("the svg is closed") + "</svg>".len();
    let svg = &html[start..end];
    usvg::Tree::from_str(svg, &usvg::Options::default())
        .unwrap_or_else(|e| panic!("plot {id} is not valid SVG: {e}"));
    assert!(
        svg.contains(&format!(r#"<title id="{id}-title">"#)),
        "plot {id} has a title"
    );
    svg
}

/// The cells of the per-CPU table's row for `cpu`, as text.
fn cpu_row(html: &str, cpu: usize) -> Vec<String> {
    let table_at = html
        .find(r#"<table class="numbers cpus">"#)
        .expect("a per-CPU table");
    let table = &html[table_at..table_at + html[table_at..].find("</table>").unwrap()];
    let row = table
        .split("<tr>")
        .find(|r| r.starts_with(&format!("<td>{cpu}</td>")))
        .unwrap_or_else(|| panic!("no row for CPU {cpu}"));
    row.split("<td>")
        .skip(1)
        .map(|c| c.split("</td>").next().unwrap().to_string())
        .collect()
}

/// Nothing in the page can make a browser fetch anything.
fn assert_self_contained(html: &str) {
    assert!(!html.contains("<script"), "no scripts");
    assert!(!html.contains("<link"), "no linked stylesheets");
    assert!(!html.contains("<img"), "no images by reference");
    assert!(!html.contains("url(http"), "no remote CSS resources");
    assert!(!html.contains("@import"), "no CSS imports");
    for attr in ["src=\"", "href=\""] {
        for (at, _) in html.match_indices(attr) {
            let value = &html[at + attr.len()..];
            assert!(
                value.starts_with('#'),
                "{attr} points outside the page: {}",
                &value[..value.len().min(60)]
            );
        }
    }
    // The only http text is the SVG namespace, which is a name, never fetched.
    let others = html
        .match_indices("http")
        .filter(|(at, _)| !html[*at..].starts_with("http://www.w3.org/2000/svg"))
        .count();
    assert_eq!(others, 0, "no URLs in the page");
}

fn phase(label: &str, from_s: u64, to_s: u64) -> SyntheticPhase {
    SyntheticPhase {
        label: label.into(),
        start_offset_ns: from_s * S,
        end_offset_ns: to_s * S,
        loads: vec![format!("stress:{label}")],
    }
}

fn two_cpus(duration_s: u64, phases: Vec<SyntheticPhase>, seed: u64) -> SyntheticRun {
    SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: MS,
        log_interval_ns: S,
        duration_ns: duration_s * S,
        phases,
        loads: vec![],
        warnings: vec![],
        seed,
    }
}

#[test]
fn report_of_a_real_run_has_every_plot_and_the_numbers_of_run_json() {
    let _g = common::exclusive();
    if !realtime_available("report_of_a_real_run") {
        return;
    }
    let (base, out) = temp_out();
    // 1.5 ms injections on CPU 0 every 250 ms: CPU 0's worst wakeup is at least ~1 ms late.
    let o = jitterlab(&[
        "run",
        "--duration",
        "2s",
        "--quiet",
        "--log-interval",
        "100ms",
        "--load",
        "spike:cpu=0,every=250ms,len=1.5ms,prio=99",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&out);
    let html_path = base.path().join("report.html");
    let plots = base.path().join("plots");
    let html = report(&[&out], &html_path, Some(&plots));
    assert_self_contained(&html);

    let cpus: Vec<usize> = run["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cpu"].as_u64().unwrap() as usize)
        .collect();
    let mut names = vec![
        "run1-histogram".to_string(),
        "run1-timeline".into(),
        "run1-exceedance".into(),
    ];
    names.extend(cpus.iter().map(|c| format!("run1-heatmap-cpu{c}")));
    for name in &names {
        let svg = svg_by_id(&html, name);
        assert!(
            svg.contains("<polyline") || svg.contains("<rect x="),
            "{name} draws data"
        );
        for ext in ["svg", "png"] {
            assert!(
                plots.join(format!("{name}.{ext}")).is_file(),
                "--plots wrote {name}.{ext}"
            );
        }
        let png = tiny_skia::Pixmap::load_png(plots.join(format!("{name}.png"))).unwrap();
        assert_eq!((png.width(), png.height()), (1800, 880));
    }
    // One line per CPU in the histogram and the exceedance plot.
    for name in ["run1-histogram", "run1-exceedance"] {
        let svg = svg_by_id(&html, name);
        for c in &cpus {
            assert!(
                svg.contains(&format!(r#"data-label="CPU {c}""#)),
                "{name} CPU {c}"
            );
        }
    }

    // run.json's figures, formatted with their units, in each CPU's row.
    for c in &cpus {
        let t = thread(&run, *c);
        let row = cpu_row(&html, *c);
        assert_eq!(row[1], t["samples"].to_string());
        assert_eq!(row[2], format_ns_signed(t["min_ns"].as_i64().unwrap()));
        assert_eq!(row[5], format_ns(t["p50_ns"].as_u64().unwrap()));
        assert_eq!(row[7], format_ns(t["p99_ns"].as_u64().unwrap()));
        assert_eq!(row[8], format_ns(t["p999_ns"].as_u64().unwrap()));
        assert_eq!(row[10], format_ns_signed(t["max_ns"].as_i64().unwrap()));
        assert_eq!(row[11], t["missed_periods"].to_string());
        // The exceedance statement ends with the exact max of run.json.
        assert!(
            html.contains(&format!(
                "CPU {c}: 99% of wakeups within {}",
                format_ns(t["p99_ns"].as_u64().unwrap())
            )),
            "CPU {c}'s p99 statement"
        );
        assert!(html.contains(&format!(
            "all {} within {}",
            t["samples"],
            format_ns_signed(t["max_ns"].as_i64().unwrap())
        )));
    }
    // Ground truth: the spikes show on CPU 0's worst interval in the timeline statements.
    let cpu0_max = thread(&run, 0)["max_ns"].as_i64().unwrap();
    assert!(cpu0_max >= 1_000_000, "the 1.5 ms spikes: {cpu0_max} ns");
    let statement = html
        .split("CPU 0: worst interval at ")
        .nth(1)
        .expect("the timeline names CPU 0's worst interval");
    let worst = statement
        .split(", max ")
        .nth(1)
        .unwrap()
        .split('<')
        .next()
        .unwrap();
    assert!(
        worst.ends_with(" ms"),
        "CPU 0's worst interval is a spike of about 1.5 ms, not {worst}"
    );
    // The plan, the system and the command line are there.
    assert!(html.contains("spike:cpu=0,every=250ms,len=1.5ms,prio=99"));
    assert!(html.contains(&format!(
        "<th>host</th><td>{}</td>",
        run["system"]["hostname"].as_str().unwrap()
    )));
}

/// A run with the contracts of the other features: phases, a budget verdict, a trace with
/// explained spikes, warnings.
fn featureful_run(dir: &Path) -> RunRecord {
    let mut run = two_cpus(
        30,
        vec![
            phase("idle", 0, 10),
            phase("cpu-hog", 10, 20),
            phase("idle-again", 20, 30),
        ],
        11,
    );
    run.warnings = vec!["RT throttling is on (950 ms per 1000 ms)".into()];
    run.loads = vec![LoadRecord {
        spec: "stress:cpu-hog".into(),
        kind: "stress".into(),
        throughput: vec![Throughput::new("rate", 1234.4, "bogo-ops/s")],
        ended: None,
        end_reason: None,
        log: None,
    }];
    let mut record = write_run(dir, &run, |cpu, t, rng| {
        let busy = (10 * S..20 * S).contains(&t);
        let base = if busy { 30_000 } else { 12_000 };
        if cpu == 1 && t == 15 * S {
            2_400_000
        } else {
            base + (rng.uniform() * 4_000.0) as i64
        }
    })
    .unwrap();
    record.budget = Some(BudgetVerdict {
        expression: "max<1ms,p99<50us".into(),
        passed: false,
        clauses: vec![
            ClauseVerdict {
                clause: "max<1ms".into(),
                passed: false,
                actual: "cpu1: 2.40 ms".into(),
            },
            ClauseVerdict {
                clause: "p99<50us".into(),
                passed: true,
                actual: "cpu1: 34.0 us".into(),
            },
        ],
    });
    record.trace = Some(TraceRecord {
        instance: "jitterlab-123".into(),
        explain_above_ns: 500_000,
        events_lost: 0,
        explained: 4,
        ..Default::default()
    });
    ResultDir::open(dir)
        .unwrap()
        .write_run_record(&record)
        .unwrap();
    let mut events = EventLog::create(&dir.join("events.jsonl")).unwrap();
    events
        .write(&Event::SpikeExplained(SpikeExplanation {
            time_ns: START_MONOTONIC_NS + 15 * S + 3 * MS,
            cpu: 1,
            due_ns: START_MONOTONIC_NS + 15 * S,
            latency_ns: 2_400_000,
            irq_latency_ns: Some(3_000),
            thread_latency_ns: Some(2_397_000),
            verdict: "thread latency 2397 us: CPU held by perturb (pid 4242, FIFO 99)".into(),
            contributors: vec![Contributor {
                kind: "task".into(),
                name: "perturb".into(),
                pid: Some(4242),
                policy: Some("FIFO".into()),
                prio: Some(99),
                duration_ns: 2_390_000,
                stack: None,
            }],
        }))
        .unwrap();
    // Three late timer interrupts with no trace event (a hypervisor's stalls) on CPU 0.
    for k in 0..3 {
        events
            .write(&Event::SpikeExplained(SpikeExplanation {
                time_ns: START_MONOTONIC_NS + (4 + 8 * k) * S + MS,
                cpu: 0,
                due_ns: START_MONOTONIC_NS + (4 + 8 * k) * S,
                latency_ns: 600_000 + k as i64 * 100_000,
                irq_latency_ns: Some(590_000 + k as i64 * 100_000),
                thread_latency_ns: Some(10_000),
                verdict: "timer IRQ latency: no trace event".into(),
                contributors: vec![],
            }))
            .unwrap();
    }
    add_irq_series(dir, 1, 3_000);
    record
}

/// Appends a timer IRQ latency series (`cpuN.irq`, one interval per second like the run's own)
/// of a constant `irq_ns` to the run's latency.hlog, as a traced run writes it.
fn add_irq_series(dir: &Path, cpu: usize, irq_ns: i64) {
    let scratch = tempfile::tempdir().unwrap();
    let mut run = two_cpus(30, vec![], 9);
    run.cpus = vec![cpu];
    write_run(&scratch.path().join("irq"), &run, |_, _, _| irq_ns).unwrap();
    let lines = std::fs::read_to_string(scratch.path().join("irq/latency.hlog")).unwrap();
    let tag = format!("Tag=cpu{cpu},");
    let irq: String = lines
        .lines()
        .filter(|l| l.starts_with(&tag))
        .map(|l| l.replacen(&tag, &format!("Tag=cpu{cpu}.irq,"), 1) + "\n")
        .collect();
    assert_eq!(irq.lines().count(), 30);
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("latency.hlog"))
        .unwrap();
    std::io::Write::write_all(&mut log, irq.as_bytes()).unwrap();
}

/// The number of points of each `<polyline>` whose attributes contain `attribute`.
fn polyline_points(svg: &str, attribute: &str) -> Vec<usize> {
    svg.split("<polyline points=\"")
        .skip(1)
        .map(|p| &p[..p.find("/>").unwrap()])
        .filter(|p| p.contains(attribute))
        .map(|p| p[..p.find('"').unwrap()].split(' ').count())
        .collect()
}

#[test]
fn phases_budget_trace_and_warnings_are_shown() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run");
    let record = featureful_run(&dir);
    let html = report(&[&dir], &base.path().join("r.html"), None);
    assert_self_contained(&html);
    let timeline = svg_by_id(&html, "run1-timeline");
    for label in ["idle", "cpu-hog", "idle-again"] {
        assert!(
            timeline.contains(&format!(
                r##"class="phase-label" font-size="12" fill="#333">{label}</text>"##
            )),
            "phase {label} labelled in the timeline"
        );
    }
    assert!(timeline.contains("CPU 1: thread latency 2397 us: CPU held by perturb"));
    // 30 one-second intervals: each CPU's max and p99 is one line of 30 points, the max solid
    // and the p99 dashed as the legend says; the traced CPU's timer IRQ max a dotted line.
    assert_eq!(
        polyline_points(timeline, r##"data-line="max" stroke="#0072B2""##),
        vec![30]
    );
    assert_eq!(
        polyline_points(
            timeline,
            r##"data-line="max" stroke="#D55E00" stroke-width="1.8""##
        ),
        vec![30]
    );
    assert_eq!(
        polyline_points(timeline, r#"data-line="p99""#),
        vec![30, 30]
    );
    assert!(
        polyline_points(timeline, r#"data-line="p99""#).len()
            == polyline_points(timeline, r#"stroke-dasharray="5 3""#).len()
    );
    assert_eq!(
        polyline_points(timeline, r#"stroke-dasharray="1.5 2.5""#),
        vec![30],
        "CPU 1's timer IRQ latency"
    );
    assert!(timeline.contains(">CPU 1 timer IRQ max</text>"));
    assert!(!timeline.contains(r#"r="1.5""#), "lines, not dots");
    // Full phase names on the heat map too, over its shading.
    for cpu in [0, 1] {
        let heat = svg_by_id(&html, &format!("run1-heatmap-cpu{cpu}"));
        assert_eq!(heat.matches(r#"class="phase-label""#).count(), 3);
        assert!(heat.contains(">idle-again</text>"));
        assert!(heat.contains("<title>phase cpu-hog: 10.0s to 20.0s</title>"));
    }
    // The distribution per phase: one line per phase, per CPU.
    for cpu in [0, 1] {
        let pdf = svg_by_id(&html, &format!("run1-phases-cpu{cpu}"));
        for label in ["idle", "cpu-hog", "idle-again"] {
            assert!(pdf.contains(&format!(r#"data-label="{label}""#)), "{label}");
        }
        assert_eq!(pdf.matches("<polyline").count(), 3);
    }
    // Causes first: 3 of 4 late wakeups had a late timer IRQ and no event, 1 was held by perturb.
    assert!(
        html.contains("Of 4 explained late wakeups: 75 % timer IRQ late with no trace event: hypervisor, SMI or interrupts off, worst 800.0 us; 25 % held by perturb (FIFO 99), worst 2.40 ms."),
        "cause summary"
    );
    assert!(html.contains(
        "<td>held by perturb (FIFO 99)</td><td>1</td><td>25.0 %</td><td>2.40 ms</td><td>2.40 ms</td>"
    ));
    assert!(html.contains("<td>3</td><td>75.0 %</td><td>2.10 ms</td><td>800.0 us</td>"));
    assert!(html.contains("Budget <code>max&lt;1ms,p99&lt;50us</code>: FAILED"));
    assert!(html.contains("<td>cpu1: 2.40 ms</td>"));
    assert!(html.contains("RT throttling is on (950 ms per 1000 ms)"));
    assert!(html.contains("task perturb (pid 4242) 2.39 ms"));
    assert!(html.contains("rate 1234 bogo-ops/s"));
    // The phase table holds run.json's per-phase figures.
    let hog = &record.phases[1];
    assert_eq!(hog.label, "cpu-hog");
    let cpu1 = hog.threads.iter().find(|t| t.cpu == 1).unwrap();
    assert_eq!(cpu1.latency.max_ns, Some(2_400_000));
    let phases_at = html.find(r#"<table class="numbers phases">"#).unwrap();
    let phases = &html[phases_at..phases_at + html[phases_at..].find("</table>").unwrap()];
    assert!(phases.contains(&format!(
        "<td>1</td><td>10000</td><td>{}</td><td>{}</td><td>{}</td><td>2.40 ms</td>",
        format_ns(cpu1.latency.p50_ns.unwrap()),
        format_ns(cpu1.latency.p99_ns.unwrap()),
        format_ns(cpu1.latency.p999_ns.unwrap()),
    )));
    // The busy phase's tail is in the heat map's rows above the idle body.
    svg_by_id(&html, "run1-heatmap-cpu0");
    svg_by_id(&html, "run1-heatmap-cpu1");
}

#[test]
fn several_runs_are_overlaid_with_ratios_to_the_first() {
    let base = tempfile::tempdir().unwrap();
    let a = base.path().join("standard");
    let b = base.path().join("rt");
    // Same body; the first run's worst wakeup is 4.2 ms, the second's 100 us: 0.024x.
    write_run(&a, &two_cpus(10, vec![], 1), |cpu, t, _| {
        if cpu == 0 && t == 5 * S {
            4_200_000
        } else {
            20_000
        }
    })
    .unwrap();
    write_run(&b, &two_cpus(10, vec![], 2), |cpu, t, _| {
        if cpu == 1 && t == 7 * S {
            100_000
        } else {
            10_000
        }
    })
    .unwrap();
    let html = report(&[&a, &b], &base.path().join("r.html"), None);
    assert_self_contained(&html);
    for name in ["overlay-histogram", "overlay-exceedance"] {
        let svg = svg_by_id(&html, name);
        assert!(svg.contains(r#"data-label="run 1: standard""#), "{name}");
        assert!(svg.contains(r#"data-label="run 2: rt""#), "{name}");
    }
    svg_by_id(&html, "run1-histogram");
    svg_by_id(&html, "run2-histogram");
    assert!(
        html.contains("(max 0.024x (98 % lower))"),
        "max 4.2 ms vs 100 us"
    );
    // min 20 us vs 10 us; means (19 999 x 20 us + 4.2 ms) / 20 000 = 20.21 us and
    // (19 999 x 10 us + 100 us) / 20 000 = 10.0045 us, exact from run.json.
    assert!(html.contains("(min 0.50x (50 % lower))"));
    assert!(html.contains("20.2 us"));
    assert!(html.contains("(mean 0.50x (50 % lower))"));
    // p50: 20 us vs 10 us, within the histogram's 0.1%.
    assert!(html.contains("(p50 0.50x (50 % lower))"));
    assert!(
        html.contains("(missed periods lower)"),
        "4 missed periods vs none"
    );
}

#[test]
fn report_budget_judges_each_run_and_exits_1_on_a_violation() {
    let base = tempfile::tempdir().unwrap();
    let a = base.path().join("a");
    // One 4.2 ms wakeup on CPU 0; everything else 20 us.
    write_run(&a, &two_cpus(5, vec![], 3), |cpu, t, _| {
        if cpu == 0 && t == 2 * S {
            4_200_000
        } else {
            20_000
        }
    })
    .unwrap();
    let html_path = base.path().join("r.html");
    let html_arg = html_path.to_str().unwrap();
    let failing = jitterlab(&[
        "report",
        a.to_str().unwrap(),
        "-o",
        html_arg,
        "--budget",
        "max<1ms,p50<100us",
    ]);
    assert_eq!(failing.status.code(), Some(1), "{}", text(&failing));
    let out = text(&failing);
    assert!(out.contains("FAIL  max<1ms"), "{out}");
    assert!(out.contains("4.20 ms"), "{out}");
    assert!(out.contains("pass  p50<100us"), "{out}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("Budget <code>max&lt;1ms,p50&lt;100us</code>: FAILED"));
    // The stored run is judged, not changed.
    let stored = std::fs::read_to_string(a.join("run.json")).unwrap();
    assert!(!stored.contains("max<1ms"));

    let passing = jitterlab(&[
        "report",
        a.to_str().unwrap(),
        "-o",
        html_arg,
        "--budget",
        "max<5ms",
    ]);
    assert_eq!(passing.status.code(), Some(0), "{}", text(&passing));
    let malformed = jitterlab(&[
        "report",
        a.to_str().unwrap(),
        "-o",
        html_arg,
        "--budget",
        "max<<5ms",
    ]);
    assert_eq!(malformed.status.code(), Some(2), "{}", text(&malformed));
    assert!(text(&malformed).contains("max<<5ms"));
}

#[test]
fn a_sweep_plots_throughput_and_latency_against_the_level() {
    let base = tempfile::tempdir().unwrap();
    let sweep_dir = base.path().join("sweep");
    let mut rows = Vec::new();
    for (k, level) in [1u32, 2, 4, 8].iter().enumerate() {
        let run_dir = format!("level-{level}");
        let record = write_run(
            &sweep_dir.join(&run_dir),
            &two_cpus(3, vec![], k as u64),
            |_, _, _| 10_000 * *level as i64,
        )
        .unwrap();
        rows.push(SweepRow {
            level: level.to_string(),
            run_dir,
            throughput: vec![Throughput::new("time", 0.5 * *level as f64, "s")],
            threads: record.threads.iter().map(SweepThread::from).collect(),
        });
    }
    let sweep = SweepRecord {
        format: 1,
        load_template: "hackbench:groups={}".into(),
        load_only: false,
        levels: rows.iter().map(|r| r.level.clone()).collect(),
        rows,
        warnings: Vec::new(),
        ended: None,
        end_reason: None,
    };
    std::fs::write(
        sweep_dir.join("sweep.json"),
        serde_json::to_string_pretty(&sweep).unwrap(),
    )
    .unwrap();
    let plots = base.path().join("plots");
    let html = report(&[&sweep_dir], &base.path().join("r.html"), Some(&plots));
    assert_self_contained(&html);
    let tp = svg_by_id(&html, "sweep1-throughput-time");
    assert_eq!(tp.matches("<circle").count(), 4, "one point per level");
    let lat = svg_by_id(&html, "sweep1-latency");
    for label in ["CPU 0 max", "CPU 0 p99", "CPU 1 max", "CPU 1 p99"] {
        assert!(lat.contains(&format!(r#"data-label="{label}""#)), "{label}");
    }
    assert!(
        lat.contains("CPU 1 max: level 8: 80000"),
        "level 8's max, 80 us"
    );
    // Statements use sweep.json's figures: p99 is an HDR value (80.0 us within 0.1%).
    let p99 = sweep.rows[3]
        .threads
        .iter()
        .filter_map(|t| t.p99_ns)
        .max()
        .unwrap();
    assert!(p99.abs_diff(80_000) <= 80);
    assert!(html.contains(&format!(
        "level 8: worst p99 {}, worst max 80.0 us",
        format_ns(p99)
    )));
    assert!(html.contains("level 4: time 2 s"));
    assert!(plots.join("sweep1-latency.png").is_file());
    assert!(plots.join("sweep1-throughput-time.svg").is_file());
}

#[test]
fn an_import_without_intervals_has_no_time_plots() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("imported");
    // One interval for the whole run: what an importer of a cyclictest histogram writes.
    let mut run = two_cpus(5, vec![], 5);
    run.log_interval_ns = 5 * S;
    let mut record = write_run(&dir, &run, |_, _, _| 15_000).unwrap();
    record.imported = Some(ImportRecord {
        source_format: "cyclictest-histogram".into(),
        source_file: "ct.txt".into(),
        absent: vec!["missed_periods".into()],
        per_interval: false,
        figures: Vec::new(),
        overflows: Vec::new(),
    });
    ResultDir::open(&dir)
        .unwrap()
        .write_run_record(&record)
        .unwrap();
    let html = report(&[&dir], &base.path().join("r.html"), None);
    assert!(html.contains(
        "<strong>Imported</strong> from cyclictest-histogram output <code>ct.txt</code>"
    ));
    svg_by_id(&html, "run1-histogram");
    svg_by_id(&html, "run1-exceedance");
    assert!(!html.contains(r#"id="run1-timeline""#));
    assert!(!html.contains(r#"id="run1-heatmap-cpu0""#));
}

#[test]
fn bad_input_exits_2_naming_the_path() {
    let base = tempfile::tempdir().unwrap();
    let empty = base.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = base.path().join("r.html");
    for bad in [empty.clone(), base.path().join("missing")] {
        let o = jitterlab(&["report", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(bad.to_str().unwrap()), "{}", text(&o));
        assert!(!out.exists(), "nothing written on bad input");
    }
    assert!(text(&jitterlab(&["report", empty.to_str().unwrap()])).contains("no run.json"));
    // A good run and a bad one: still refused before anything is written.
    let good = base.path().join("good");
    write_run(&good, &two_cpus(2, vec![], 9), |_, _, _| 9_000).unwrap();
    let o = jitterlab(&[
        "report",
        good.to_str().unwrap(),
        empty.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists());
    // --plots naming a file.
    let file = base.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let o = jitterlab(&[
        "report",
        good.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--plots",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--plots"), "{}", text(&o));
    // A corrupt run.json names the file.
    std::fs::write(good.join("run.json"), "{").unwrap();
    let o = jitterlab(&[
        "report",
        good.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("run.json"), "{}", text(&o));
}

/// Headless Chromium opens the report from disk without a console message or a network
/// request, and draws it: the screenshot is not blank and shows the plots' colours.
#[test]
fn chromium_opens_the_report_without_errors() {
    let Some(chromium) = common::chromium("chromium_opens_the_report_without_errors") else {
        return;
    };
    let base = tempfile::tempdir().unwrap();
    let a = base.path().join("a");
    let b = base.path().join("b");
    featureful_run(&a);
    // The second run has context counters: CPU 1's irq:LOC jumps in the 3 intervals where it
    // is 2.5 ms late, so the report draws its counters plot beneath latency over time.
    let spikes = [4u64, 9, 15];
    let synthetic = two_cpus(20, vec![], 3);
    let record = write_run(&b, &synthetic, |cpu, t, rng| {
        if cpu == 1 && spikes.contains(&(t / S)) && t % S == S / 2 {
            2_500_000
        } else {
            8_000 + (rng.uniform() * 2_000.0) as i64
        }
    })
    .unwrap();
    write_counters(
        &b,
        &synthetic,
        record,
        &["irq:LOC"],
        |cpu, k, _| {
            Some(if cpu == 1 && spikes.contains(&k) {
                1000
            } else {
                250 + (k % 2) as i64
            })
        },
        jitterlab::analysis::counters::correlate_dir,
    )
    .unwrap();
    let page = base.path().join("report.html");
    let html = report(&[&a, &b], &page, None);
    svg_by_id(&html, "run2-counters-cpu1");
    let at = |id: &str| html.find(&format!("id=\"fig-{id}\"")).unwrap_or(usize::MAX);
    assert!(at("run2-timeline") < at("run2-counters-cpu1"));
    assert!(at("run2-counters-cpu1") < at("run2-exceedance"));
    assert!(html.contains("CPU 0: not tested (0 intervals"));
    assert!(!html.contains("run1-counters"), "run 1 has no counters");
    let shot = base.path().join("shot.png");
    let profile = base.path().join("profile");
    let o = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            // Any fetch would fail and be logged: the page must not try.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1100,2400",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let log = text(&o);
    assert!(o.status.success(), "chromium failed: {log}");
    // For a person to look at: JITTERLAB_KEEP_REPORT=DIR keeps the page and the screenshot.
    if let Ok(keep) = std::env::var("JITTERLAB_KEEP_REPORT") {
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&page, Path::new(&keep).join("report.html")).unwrap();
        std::fs::copy(&shot, Path::new(&keep).join("shot.png")).unwrap();
    }
    for bad in [
        "CONSOLE",
        "Uncaught",
        "ERR_",
        "Failed to load",
        "Refused to",
    ] {
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(bad)).collect();
        assert!(lines.is_empty(), "chromium logged {bad}: {lines:#?}");
    }
    let png = tiny_skia::Pixmap::load_png(&shot).expect("a PNG screenshot");
    assert_eq!((png.width(), png.height()), (1100, 2400));
    let lum: Vec<f64> = png
        .pixels()
        .iter()
        .map(|p| 0.299 * p.red() as f64 + 0.587 * p.green() as f64 + 0.114 * p.blue() as f64)
        .collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let variance = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    assert!(
        variance > 100.0,
        "the screenshot is not blank: variance {variance:.1}"
    );
    // The plots are drawn: the first overlay is near the top, with the Okabe-Ito blue and
    // vermillion of the first two series.
    let near = |r: u8, g: u8, b: u8| {
        png.pixels()
            .iter()
            .filter(|p| {
                p.red().abs_diff(r) < 24 && p.green().abs_diff(g) < 24 && p.blue().abs_diff(b) < 24
            })
            .count()
    };
    assert!(near(0x00, 0x72, 0xB2) > 200, "blue plot lines drawn");
    assert!(near(0xD5, 0x5E, 0x00) > 200, "vermillion plot lines drawn");
}
