//! The report of an imported run honours `imported.absent`: figures the source did not have
//! show as `-`, figures its command line states are filled from it, and the source's sysinfo
//! fills the System table. Ground truth: the real cyclictest capture of tests/data/import
//! (`cyclictest -m -q -p95 -i1000 -D5 ...`, sysinfo release 6.18.44-fc-v669, realtime 0) and
//! the histogram text of the same run, which has no command line.

use crate::common;

use common::*;
use std::path::Path;

/// The HTML report of `name` imported, as `<th>label</th><td>value</td>` pairs and the
/// per-CPU cells.
fn report_of(name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name);
    let run = dir.path().join("run");
    let html = dir.path().join("report.html");
    let o = jitterlab(&[
        "import",
        source.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = jitterlab(&[
        "report",
        run.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::read_to_string(html).unwrap()
}

fn row(html: &str, label: &str) -> String {
    let start = format!("<tr><th>{label}</th><td>");
    let at = html
        .find(&start)
        .unwrap_or_else(|| panic!("no row {label}"))
        + start.len();
    html[at..at + html[at..].find("</td>").unwrap()].to_string()
}

#[test]
fn the_report_fills_what_the_source_states_and_shows_the_rest_as_unknown() {
    let html = report_of("cyclictest.json");
    for (label, value) in [
        ("policy", "FIFO 95"),
        ("interval", "1.00 ms"),
        ("memory locked", "yes"),
        ("wake method", "-"),
        ("PM QoS", "-"),
        ("host", "vm"),
        ("kernel", "6.18.44-fc-v669 (x86_64)"),
        ("realtime kernel", "no"),
    ] {
        assert_eq!(row(&html, label), value, "{label}");
    }
    // No missed-period, dropped or deadline counts in cyclictest: '-' in their columns, not 0.
    let cpu_row = |cpu: &str| {
        let at = html.find(&format!("<td>{cpu}</td><td>5000</td>")).unwrap();
        html[at..at + html[at..].find("</tr>").unwrap()].to_string()
    };
    for cpu in ["0", "1"] {
        let cells = cpu_row(cpu);
        assert!(
            cells.ends_with("<td>-</td><td>-</td><td>-</td><td>-</td>"),
            "{cells}"
        );
        assert!(!cells[cpu.len() + 9..].contains("<td>0</td>"), "{cells}");
    }

    let html = report_of("cyclictest-hist.txt");
    for (label, value) in [
        ("policy", "-"),
        ("interval", "-"),
        ("memory locked", "-"),
        ("started (UTC)", "-"),
        ("command line", "-"),
    ] {
        assert_eq!(row(&html, label), value, "{label}");
    }
}

/// A latency run and a noise run in one report are each reported, but never compared or
/// overlaid: a gap is not a wakeup latency (hostile re-run 7, R1; `compare` refuses the pair).
/// In either order, and the noise run's statements count gaps, not wakeups (L7-e).
#[test]
fn a_latency_run_and_a_noise_run_are_reported_apart_never_compared() {
    let dir = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import");
    let import = |name: &str, out: &str| {
        let run = dir.path().join(out);
        let o = jitterlab(&[
            "import",
            data.join(name).to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        run
    };
    let latency = import("cyclictest.json", "lat");
    let noise = import("oslat.json", "nz");
    for (k, pair) in [[&latency, &noise], [&noise, &latency]].iter().enumerate() {
        let html = dir.path().join(format!("report-{k}.html"));
        let o = jitterlab(&[
            "report",
            pair[0].to_str().unwrap(),
            pair[1].to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let html = std::fs::read_to_string(html).unwrap();
        assert!(
            html.contains("The runs are not compared or overlaid"),
            "no word of why they are not compared"
        );
        assert!(html.contains("they measure different things"));
        for overlay in [
            "overlay-histogram",
            "overlay-exceedance",
            "overlay-timeline",
        ] {
            assert!(!html.contains(overlay), "{overlay} drawn for a mixed pair");
        }
        assert!(!html.contains("ratios are to the first run"));
        assert!(
            html.contains(" gaps; the fullest bin is "),
            "the noise run's histogram counts gaps"
        );
        assert!(
            html.contains("% of gaps within"),
            "the noise run's exceedance says gaps"
        );
        assert!(
            html.contains("% of wakeups within"),
            "the latency run's says wakeups"
        );
    }
}

/// `--time-range` on an imported histogram (one interval of the whole run, no time series):
/// nothing to zoom, and the report says so on stderr, naming that run only, and still exits 0
/// (another run of the same report may be zoomed). Seventh hostile re-run, L7-f: nothing was
/// said.
#[test]
fn a_time_range_says_it_does_not_apply_to_an_imported_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import/cyclictest-hist.txt");
    let imported = dir.path().join("imported");
    let o = jitterlab(&[
        "import",
        source.to_str().unwrap(),
        "--out",
        imported.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let measured = dir.path().join("measured");
    let run = jitterlab::results::synthetic::SyntheticRun {
        cpus: vec![0],
        interval_ns: 1_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 5_000_000_000,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 7,
    };
    jitterlab::results::synthetic::write_run(&measured, &run, |_, _, _| 20_000).unwrap();
    let html = dir.path().join("report.html");
    let o = jitterlab(&[
        "report",
        imported.to_str().unwrap(),
        measured.to_str().unwrap(),
        "--time-range",
        "1s:2s",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stderr);
    let notes: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("--time-range does not apply to"))
        .collect();
    assert_eq!(notes.len(), 1, "{said}");
    assert!(
        notes[0].contains(imported.to_str().unwrap())
            && notes[0].contains("no intervals over time"),
        "{said}"
    );
}
