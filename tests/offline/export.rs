//! `jitterlab export` on a constructed result directory with known samples.

use crate::common;

use common::*;
use jitterlab::format::samplelog::{SampleLogHeader, SampleLogWriter, SampleRecord};

fn constructed_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.json"), "{}").unwrap();
    let mut w =
        SampleLogWriter::create(&dir.path().join("samples.bin"), Default::default()).unwrap();
    w.begin(SampleLogHeader {
        clock_id: 1,
        start_ns: 5_000_000_000,
    })
    .unwrap();
    let start = 5_000_000_000u64;
    for (cpu, seq, due_offset, latency, irq) in [
        (0u32, 0u64, 0u64, 23_600i64, None),
        (1, 0, 0, 13_679, None),
        (0, 1, 10_000_000, 1_500_000, Some(2_400i64)),
    ] {
        w.write(&SampleRecord {
            cpu,
            missed: u32::from(latency >= 1_000_000),
            seq,
            expected_ns: start + due_offset,
            latency_ns: latency,
            irq_latency_ns: irq,
        })
        .unwrap();
    }
    w.flush().unwrap();
    dir
}

#[test]
fn csv_has_units_in_the_header_and_every_sample() {
    let dir = constructed_run();
    let o = jitterlab(&["export", dir.path().to_str().unwrap(), "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "cpu,seq,expected_ns,time_s,latency_ns,irq_latency_ns,missed_periods,sleep_start_ns,wake_ns"
    );
    // run.json cannot be read: how the threads slept is not known, those cells are empty.
    assert_eq!(lines[1], "0,0,5000000000,0.000000000,23600,,0,,");
    assert_eq!(lines[2], "1,0,5000000000,0.000000000,13679,,0,,");
    assert_eq!(lines[3], "0,1,5010000000,0.010000000,1500000,2400,1,,");
    assert_eq!(lines.len(), 4);
}

#[test]
fn columns_are_the_sh7780_three_column_text() {
    let dir = constructed_run();
    let file = dir.path().join("latency.txt");
    let o = jitterlab(&[
        "export",
        dir.path().to_str().unwrap(),
        "--format",
        "columns",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "# time_s latency_us irq_latency_us cpu");
    assert_eq!(lines[1], "0.000000 23.600000 - 0");
    assert_eq!(lines[2], "0.000000 13.679000 - 1");
    assert_eq!(lines[3], "0.010000 1500.000000 2.400000 0");
}

#[test]
fn export_explains_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let o = jitterlab(&["export", dir.path().to_str().unwrap(), "--format", "csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("not a jitterlab result directory"),
        "{}",
        text(&o)
    );
    std::fs::write(dir.path().join("run.json"), "{}").unwrap();
    let o = jitterlab(&[
        "export",
        dir.path().to_str().unwrap(),
        "--format",
        "columns",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--samples"), "{}", text(&o));
}

/// A constructed two-CPU run (uniform 10-50 us, 5 s of 1000 samples/s) with a budget verdict.
fn histogram_run() -> (tempfile::TempDir, std::path::PathBuf) {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run-a");
    let mut record = write_known_run(&dir, &[0, 1], 5, 1000, uniform_10_50, 9, 0);
    let budget = jitterlab::analysis::budget::Budget::parse("max<45us").unwrap();
    record.budget = Some(budget.evaluate(&record));
    jitterlab::results::ResultDir::open(&dir)
        .unwrap()
        .write_run_record(&record)
        .unwrap();
    (base, dir)
}

#[test]
fn gnuplot_data_sums_to_the_samples_and_the_script_runs() {
    let (base, dir) = histogram_run();
    let name = base.path().join("plot");
    let o = jitterlab(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "gnuplot",
        "-o",
        name.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let data = std::fs::read_to_string(base.path().join("plot.dat")).unwrap();
    let script = std::fs::read_to_string(base.path().join("plot.gp")).unwrap();
    let header = data.lines().find(|l| l.starts_with("# bin_us")).unwrap();
    assert_eq!(header, "# bin_us cpu0 cpu1");
    let rows: Vec<Vec<f64>> = data
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect())
        .collect();
    let run = run_json(&dir);
    for cpu in 0..2 {
        let sum: f64 = rows.iter().map(|r| r[cpu + 1]).sum();
        assert_eq!(sum as u64, thread(&run, cpu)["samples"].as_u64().unwrap());
        // Uniform 10-50 us: nothing below 10 us, nothing at 51 us or above.
        let outside: f64 = rows
            .iter()
            .filter(|r| r[0] < 10.0 || r[0] >= 51.0)
            .map(|r| r[cpu + 1])
            .sum();
        assert_eq!(outside, 0.0);
    }
    assert_eq!(rows[1][0] - rows[0][0], 1.0, "1 us bins");
    assert!(
        script.contains("set logscale y") && script.contains("latency (us)"),
        "{script}"
    );
    assert!(script.contains("datafile = \"plot.dat\""), "{script}");

    let gnuplot = std::process::Command::new("gnuplot")
        .arg("plot.gp")
        .current_dir(base.path())
        .output();
    match gnuplot {
        Err(_) => {
            eprintln!("SKIPPED running the script: gnuplot is not installed (Debian: gnuplot-nox)")
        }
        Ok(g) => {
            assert!(g.status.success(), "{}", text(&g));
            let svg = std::fs::read_to_string(base.path().join("plot.svg")).unwrap();
            assert!(
                svg.contains("<svg") && svg.contains("CPU 1"),
                "an SVG with both series"
            );
        }
    }
}

/// Runs the gnuplot script `NAME.gp` in `dir` on gnuplot's dumb terminal (`cols` x `rows`
/// characters) and returns the text plot; None when gnuplot is not installed.
fn gnuplot_dumb(dir: &std::path::Path, name: &str, cols: u32, rows: u32) -> Option<String> {
    let out = dir.join(format!("{name}.txt"));
    let g = std::process::Command::new("gnuplot")
        .arg("-e")
        .arg(format!(
            "term='dumb {cols},{rows}'; outfile='{}'",
            out.display()
        ))
        .arg(format!("{name}.gp"))
        .current_dir(dir)
        .output();
    match g {
        Err(_) => {
            eprintln!("SKIPPED running the script: gnuplot is not installed (Debian: gnuplot-nox)");
            None
        }
        Ok(g) => {
            assert!(g.status.success(), "{}", text(&g));
            Some(std::fs::read_to_string(out).unwrap())
        }
    }
}

/// Issue 23 defect 9: `with steps` on the log count axis drew no isolated bin, and the x axis
/// ended at the largest bin (on the border). A run with a 10-50 us body on both CPUs and
/// three lone wakeups on CPU 1 at 1.5, 4.3 and 8.72 ms: the text plot shows all three at their
/// place, the largest inside the frame, and marks each CPU's maximum.
#[test]
fn gnuplot_histogram_draws_lone_tail_bins_and_the_maximum() {
    use jitterlab::results::synthetic::{SyntheticRun, write_run};
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run");
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: 1_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 5_000_000_000,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 3,
    };
    let tail = [
        (1_000_000_000, 1_500_000),
        (2_000_000_000, 4_300_000),
        (3_000_000_000, 8_720_000),
    ];
    write_run(&dir, &run, |cpu, t, rng| {
        match tail.iter().find(|(at, _)| cpu == 1 && *at == t) {
            Some(&(_, ns)) => ns,
            None => uniform_10_50(rng.uniform()).round() as i64,
        }
    })
    .unwrap();
    let name = base.path().join("plot");
    let o = jitterlab(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "gnuplot",
        "-o",
        name.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let script = std::fs::read_to_string(base.path().join("plot.gp")).unwrap();
    assert!(script.contains("CPU 1 max 8.72 ms"), "{script}");
    let range = script
        .lines()
        .find_map(|l| l.strip_prefix("set xrange ["))
        .unwrap();
    let (from, to) = range.trim_end_matches(']').split_once(':').unwrap();
    let (from, to): (f64, f64) = (from.parse().unwrap(), to.parse().unwrap());
    assert!(from < 10.0 && to > 8724.0, "{script}");
    let Some(plot) = gnuplot_dumb(base.path(), "plot", 160, 40) else {
        return;
    };
    // The frame's bottom line, its corners the ends of the x range; the line above it is the
    // bottom of the count axis, where a bin of one wakeup shows. CPU 1's mark is '#'.
    let lines: Vec<&str> = plot.lines().collect();
    let bottom = lines
        .iter()
        .rposition(|l| l.trim().starts_with('+') && l.trim().chars().all(|c| "+-".contains(c)))
        .expect(&plot);
    let left = lines[bottom].find('+').unwrap() as f64;
    let right = lines[bottom].rfind('+').unwrap() as f64;
    let column = |us: f64| (left + (us - from) / (to - from) * (right - left)).round() as usize;
    let marks: Vec<usize> = lines[bottom - 1]
        .char_indices()
        .filter(|&(_, c)| c == '#')
        .map(|(i, _)| i)
        .collect();
    for (_, ns) in tail {
        let at = column(ns as f64 / 1000.0);
        assert!(
            marks.iter().any(|&m| m.abs_diff(at) <= 1),
            "no mark for {ns} ns near column {at} (marks {marks:?}):\n{plot}"
        );
    }
}

/// `--latency-range FROM:` with FROM above every wakeup (hostile re-run 7, L7-a): the x range
/// runs up from FROM (it was reversed, to the data's end, and gnuplot drew nothing), gnuplot
/// runs the script, and the labels say what was cut.
#[test]
fn gnuplot_latency_range_above_every_wakeup_draws_an_empty_frame_that_says_why() {
    use jitterlab::results::synthetic::{SyntheticRun, write_run};
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run");
    let run = SyntheticRun {
        cpus: vec![0],
        interval_ns: 1_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 2_000_000_000,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 5,
    };
    write_run(&dir, &run, |_, _, rng| {
        uniform_10_50(rng.uniform()).round() as i64
    })
    .unwrap();
    let name = base.path().join("plot");
    let o = jitterlab(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "gnuplot",
        "--latency-range",
        "1h:",
        "-o",
        name.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let script = std::fs::read_to_string(base.path().join("plot.gp")).unwrap();
    let range = script
        .lines()
        .find_map(|l| l.strip_prefix("set xrange ["))
        .unwrap();
    let (from, to) = range.trim_end_matches(']').split_once(':').unwrap();
    let (from, to): (f64, f64) = (from.parse().unwrap(), to.parse().unwrap());
    assert!(from == 3_600_000_000.0 && to > from, "{script}");
    assert!(
        script.contains("\"CPU 0: 2 000 wakeups below 3600.00 s not shown\""),
        "{script}"
    );
    gnuplot_dumb(base.path(), "plot", 100, 30);
}

#[test]
fn gnuplot_default_names_follow_the_run_directory() {
    let (base, dir) = histogram_run();
    let cwd = base.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let o = std::process::Command::new(bin())
        .args(["export", dir.to_str().unwrap(), "--format", "gnuplot"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(cwd.join("run-a-histogram.dat").is_file() && cwd.join("run-a-histogram.gp").is_file());
}

#[test]
fn json_summary_is_one_line_with_threads_and_budget() {
    let (_base, dir) = histogram_run();
    let o = jitterlab(&["export", dir.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.lines().count(), 1, "compact: one line");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let run = run_json(&dir);
    assert_eq!(v["threads"], run["threads"]);
    assert_eq!(v["budget"]["expression"], "max<45us");
    assert_eq!(v["budget"]["passed"], false);
    assert_eq!(v["plan"]["interval_ns"], 1_000_000);
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("run.json"), "{}").unwrap();
    let o = jitterlab(&["export", empty.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(2), "an invalid run.json is bad input");
}

/// A scenario run of 30 s on CPUs 0 and 1 with phases of 20 s ("idle", 10 us) and 10 s
/// ("memory": a quarter of the wakeups at 1 ms, the rest at 20 us).
fn phased_run(dir: &std::path::Path) {
    use jitterlab::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};
    let phase = SyntheticPhase::seconds;
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: 1_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 30_000_000_000,
        phases: vec![phase("idle", 0, 20), phase("memory", 20, 30)],
        loads: vec![],
        warnings: vec![],
        seed: 8,
    };
    write_run(dir, &run, |_, t, _| {
        if t < 20_000_000_000 {
            10_000
        } else if (t / 1_000_000) % 4 == 0 {
            1_000_000
        } else {
            20_000
        }
    })
    .unwrap();
}

#[test]
fn gnuplot_per_phase_blocks_sum_to_one_per_phase_and_cpu() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run");
    phased_run(&dir);
    let name = base.path().join("phases");
    let o = jitterlab(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "gnuplot",
        "--per-phase",
        "-o",
        name.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let data = std::fs::read_to_string(base.path().join("phases.dat")).unwrap();
    let script = std::fs::read_to_string(base.path().join("phases.gp")).unwrap();
    let blocks: Vec<&str> = data.split("\n\n\n").collect();
    assert_eq!(blocks.len(), 2, "one block per phase");
    assert!(
        blocks[0]
            .contains("# phase 0: idle from 0.000 s to 20.000 s; samples: cpu0 20000, cpu1 20000")
    );
    assert!(
        blocks[1].contains(
            "# phase 1: memory from 20.000 s to 30.000 s; samples: cpu0 10000, cpu1 10000"
        )
    );
    for (k, block) in blocks.iter().enumerate() {
        let rows: Vec<Vec<f64>> = block
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect())
            .collect();
        for cpu in 0..2 {
            let sum: f64 = rows.iter().map(|r| r[cpu + 1]).sum();
            assert!((sum - 1.0).abs() < 1e-9, "phase {k} cpu{cpu}: {sum}");
            // The ground truth: idle all in the 10 us bin; memory 3/4 at 20 us, 1/4 at 1 ms
            // (the HDR bucket of 1 ms reaches 1000.4 us: the bin from 1000 us). Bins are
            // 1/10 decade: the share at `us` is in the last bin starting at or below it.
            let at = |us: f64| {
                rows.iter()
                    .rfind(|r| r[0] <= us)
                    .map_or(0.0, |r| r[cpu + 1])
            };
            if k == 0 {
                assert_eq!(at(10.0), 1.0);
            } else {
                assert_eq!((at(20.0), at(1000.0)), (0.75, 0.25));
            }
        }
    }
    assert!(script.contains("index 1 using 1:3"), "{script}");
    assert!(script.contains("title \"memory CPU 1\""), "{script}");
    // Issue 23 defect 9: a log latency axis reaching past the largest bin (not a linear one
    // of 1 us bins), every non-empty bin a point.
    assert!(script.contains("set logscale xy"), "{script}");
    let range = script
        .lines()
        .find_map(|l| l.strip_prefix("set xrange ["))
        .unwrap();
    let top: f64 = range
        .trim_end_matches(']')
        .split_once(':')
        .unwrap()
        .1
        .parse()
        .unwrap();
    assert!(top > 1000.4, "{script}");
    assert!(script.contains("with linespoints pt 7"), "{script}");
    if let Some(plot) = gnuplot_dumb(base.path(), "phases", 120, 30) {
        assert!(plot.contains("memory CPU 1"), "{plot}");
    }
    // Wrong uses say why and exit 2.
    let o = jitterlab(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "json",
        "--per-phase",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--per-phase is for --format gnuplot"));
}
