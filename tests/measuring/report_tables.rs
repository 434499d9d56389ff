//! The report's tables are never clipped (issue 30, "the report screenshots (headless Chromium)
//! show every table whole"): a report of a synthetic 128-CPU run (traced, with phases, long
//! loads and warnings) beside three 2-CPU runs is laid out by headless Chromium, at the width
//! of the screenshots and as printed, and a checking script, injected into a copy of the page
//! (the report itself has no script), measures every table. Also: the runs that share their
//! warnings share one box, and the per-CPU tables above 16 CPUs are grouped.

use crate::common;

use common::*;
use jitterlab::format::run_record::{TraceRecord, TraceThreadRecord};
use jitterlab::format::stats::LatencySummary;
use jitterlab::results::ResultDir;
use jitterlab::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};
use std::path::Path;
use std::process::Command;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// Measures every table after the page has loaded (every `<details>` opened first, so that the
/// folded every-CPU tables are measured too) and writes one line per table into
/// `<pre id="layout-check">`: its width, the room it has (its scroll container's, or the
/// page's), whether a scroll container holds it, and how many of its cells overflow.
const CHECK: &str = r#"<script>
window.addEventListener('load', () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const page = document.querySelector('main');
  const ps = getComputedStyle(page);
  const pageRoom = page.clientWidth - parseFloat(ps.paddingLeft) - parseFloat(ps.paddingRight);
  const lines = [];
  document.querySelectorAll('table').forEach((t, i) => {
    let scroller = null;
    let hidden = '';
    for (let e = t.parentElement; e && e !== page; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if (o === 'hidden' || o === 'clip') { hidden = o; }
      if (o === 'auto' || o === 'scroll') { scroller = e; break; }
    }
    const width = t.getBoundingClientRect().width;
    const room = scroller ? scroller.clientWidth : pageRoom;
    let clipped = 0;
    t.querySelectorAll('td,th').forEach(c => { if (c.scrollWidth > c.clientWidth + 1) clipped++; });
    // A header word laid out on more than one line is broken inside the word.
    const broken = [];
    t.querySelectorAll('th').forEach(th => {
      const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        const re = /\S+/g;
        let m;
        while ((m = re.exec(n.data)) !== null) {
          const r = document.createRange();
          r.setStart(n, m.index);
          r.setEnd(n, m.index + m[0].length);
          const tops = new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top)));
          if (tops.size > 1) { broken.push(m[0]); }
        }
      }
    });
    lines.push('TABLE ' + i + ' class=' + (t.className || '-').replace(/ /g, '.') +
      ' rows=' + t.rows.length + ' width=' + Math.ceil(width) + ' room=' + Math.floor(room) +
      ' page=' + Math.floor(pageRoom) + ' scroller=' + (scroller !== null) +
      ' hidden=' + (hidden || '-') + ' clipped_cells=' + clipped +
      ' broken_header_words=' + broken.length + ' [' + broken.join('|') + ']');
  });
  lines.push('PAGE scroll_width=' + document.documentElement.scrollWidth +
    ' inner_width=' + window.innerWidth);
  const pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = lines.join('\n');
  document.body.appendChild(pre);
});
</script>"#;

/// One table as the checking script measured it.
#[derive(Debug)]
struct Measured {
    line: String,
    width: u64,
    room: u64,
    page: u64,
    scroller: bool,
    hidden: bool,
    clipped_cells: u64,
    /// Header words laid out over two lines (broken inside the word).
    broken_header_words: u64,
}

/// The tables of `page` laid out by Chromium in a window `width` pixels wide, and the page's
/// scroll width; with `print`, the page's print rules apply (its `@media print` made
/// unconditional in the copy), as on paper.
fn measure(chromium: &str, page: &Path, width: u32, print: bool) -> (Vec<Measured>, u64) {
    let html = std::fs::read_to_string(page).unwrap();
    assert!(
        html.contains("@media print"),
        "the style sheet has print rules"
    );
    let html = if print {
        html.replace("@media print", "@media all")
    } else {
        html
    };
    let dir = page.parent().unwrap();
    let copy = dir.join(format!("checked-{width}-{print}.html"));
    std::fs::write(&copy, html.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
    let o = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--run-all-compositor-stages-before-draw",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--window-size={width},2000"))
        .arg(format!(
            "--user-data-dir={}",
            dir.join(format!("profile-{width}-{print}")).display()
        ))
        .arg(format!("file://{}", copy.display()))
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "chromium failed: {}", text(&o));
    let dom = String::from_utf8_lossy(&o.stdout);
    let at = dom
        .find("<pre id=\"layout-check\">")
        .unwrap_or_else(|| panic!("the checking script ran: {}", text(&o)));
    let report = &dom[at..dom[at..].find("</pre>").map_or(dom.len(), |e| at + e)];
    let field = |line: &str, name: &str| -> String {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} in {line}"))
            .to_string()
    };
    let number = |line: &str, name: &str| -> u64 { field(line, name).parse().unwrap() };
    let tables = report
        .lines()
        .filter(|l| l.starts_with("TABLE "))
        .map(|l| Measured {
            line: l.to_string(),
            width: number(l, "width"),
            room: number(l, "room"),
            page: number(l, "page"),
            scroller: field(l, "scroller") == "true",
            hidden: field(l, "hidden") != "-",
            clipped_cells: number(l, "clipped_cells"),
            broken_header_words: number(l, "broken_header_words"),
        })
        .collect();
    let page_line = report.lines().find(|l| l.starts_with("PAGE ")).unwrap();
    let scroll_width = number(page_line, "scroll_width");
    assert_eq!(number(page_line, "inner_width"), u64::from(width));
    (tables, scroll_width)
}

/// A 2-CPU run of 4 s with `warnings`.
fn small_run(dir: &Path, warnings: &[&str], seed: u64) {
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: MS,
        log_interval_ns: S,
        duration_ns: 4 * S,
        phases: vec![],
        loads: vec![],
        warnings: warnings.iter().map(|w| w.to_string()).collect(),
        seed,
    };
    write_run(dir, &run, |_, _, rng| {
        9_000 + (rng.uniform() * 3_000.0) as i64
    })
    .unwrap();
}

/// A traced 128-CPU run of 4 s in two phases with long load specs, CPU 77 the worst; its
/// latency.hlog removed, so that the report is its tables (128 heat maps are not what this
/// test is about).
fn large_run(dir: &Path) {
    let load = "stress:cpu-hog,workers=128,affinity=0-127,duration=4s,label=a-very-long-load-specification-without-spaces";
    let phase = |label: &str, from: u64, to: u64| SyntheticPhase {
        label: label.into(),
        start_offset_ns: from * S,
        end_offset_ns: to * S,
        loads: vec![load.into(), "stress:io-hog,workers=64".into()],
    };
    let run = SyntheticRun {
        cpus: (0..128).collect(),
        interval_ns: MS,
        log_interval_ns: S,
        duration_ns: 4 * S,
        phases: vec![phase("idle", 0, 2), phase("cpu-hog-everywhere", 2, 4)],
        loads: vec![],
        warnings: vec![format!(
            "a warning naming a long path: /sys/devices/system/cpu/{}/cpufreq/scaling_governor",
            "cpu127".repeat(20)
        )],
        seed: 7,
    };
    let mut record = write_run(dir, &run, |cpu, t, rng| {
        let spike = if cpu == 77 && t == 3 * S {
            4 * MS as i64
        } else {
            0
        };
        10_000 + cpu as i64 * 100 + (rng.uniform() * 5_000.0) as i64 + spike
    })
    .unwrap();
    let irq = |cpu: usize| LatencySummary {
        samples: 4000,
        mean_ns: Some(2_000.0 + cpu as f64),
        p99_ns: Some(3_000 + cpu as u64),
        max_ns: Some(5_000 + cpu as i64),
        ..LatencySummary::default()
    };
    let mut threads = Vec::new();
    for t in &mut record.threads {
        t.irq_latency = Some(irq(t.cpu));
        threads.push(TraceThreadRecord {
            cpu: t.cpu,
            explain_above_ns: MS,
            samples_joined: 3990,
            samples_unmatched: 10,
            samples_trace_late: 0,
            thread_latency: LatencySummary {
                mean_ns: Some(9_000.0 + t.cpu as f64),
                ..t.latency.clone()
            },
            wake_to_switch: LatencySummary::default(),
            switch_to_user: LatencySummary::default(),
            noise_causes: vec![],
        });
    }
    record.trace = Some(TraceRecord {
        instance: "jitterlab-1".into(),
        explain_above_ns: MS,
        threads,
        ..Default::default()
    });
    ResultDir::open(dir)
        .unwrap()
        .write_run_record(&record)
        .unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("latency.hlog")
        {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
}

#[test]
fn chromium_shows_every_table_whole_on_screen_and_in_print() {
    let Some(chromium) =
        common::chromium("chromium_shows_every_table_whole_on_screen_and_in_print")
    else {
        return;
    };
    let base = tempfile::tempdir().unwrap();
    let big = base.path().join("big");
    large_run(&big);
    let throttling = "RT throttling is on (950 ms per 1000 ms)";
    let (a, b, c) = (
        base.path().join("a"),
        base.path().join("b"),
        base.path().join("c"),
    );
    small_run(&a, &[throttling], 1);
    small_run(&b, &[throttling], 2);
    small_run(&c, &[throttling, "steal time 4.0 % during the run"], 3);
    let page = base.path().join("report.html");
    let args: Vec<String> = ["report".to_string()]
        .into_iter()
        .chain([&big, &a, &b, &c].iter().map(|d| d.display().to_string()))
        .chain(["-o".into(), page.display().to_string()])
        .collect();
    let o = jitterlab(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "report failed: {}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "the report itself has no script");

    // One box per distinct set of warnings, naming its runs; none repeated in the runs'
    // sections, which link to their box.
    assert_eq!(html.matches("<div class=\"warnings\"").count(), 3, "{html}");
    assert!(
        html.contains("<p class=\"applies\">For run 2: a, run 3: b.</p>"),
        "{html}"
    );
    assert!(html.contains("<p class=\"applies\">For run 4: c.</p>"));
    assert_eq!(html.matches("class=\"note warnings-ref\"").count(), 4);
    assert_eq!(html.matches(throttling).count(), 2, "once per box it is in");

    // Above 16 CPUs the split and phases tables show the 8 worst and the rest; every CPU is in
    // the fold below.
    assert!(html.contains("<h4>Latency split</h4>"));
    // CPU 77's spike (at 3 s) makes it the worst of the second phase and of the split; else
    // the worst are the highest CPUs.
    assert!(html.contains("phase idle: +120: the other 120 CPUs (0-119): "));
    assert!(html.contains("phase cpu-hog-everywhere: +120: the other 120 CPUs (0-76,78-120): "));
    assert!(html.contains("<p class=\"note\">+120: the other 120 CPUs (0-76,78-120): "));
    assert_eq!(html.matches("<details class=\"every-cpu\">").count(), 2);

    // For a person to look at: JITTERLAB_KEEP_REPORT=DIR keeps the page and a screenshot.
    if let Ok(keep) = std::env::var("JITTERLAB_KEEP_REPORT") {
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&page, Path::new(&keep).join("report-tables.html")).unwrap();
    }

    // The screenshots' width (1100 pixels, as chromium_opens_the_report_without_errors takes
    // them), a narrow window, and print (A4 at Chromium's default margins: 718 pixels).
    for (width, print) in [(1100, false), (700, false), (718, true)] {
        let (tables, scroll_width) = measure(chromium, &page, width, print);
        // Tables of the comparison, 4 runs' plan, system and per-CPU tables, the phases, the
        // split, their folds, ...: all of them measured.
        assert!(tables.len() >= 15, "{tables:#?}");
        assert!(
            scroll_width <= u64::from(width),
            "the page scrolls sideways at {width} px (print {print}): {scroll_width} px; {tables:#?}"
        );
        for t in &tables {
            assert!(!t.hidden, "a table in an overflow:hidden box: {}", t.line);
            assert_eq!(t.clipped_cells, 0, "cells overflow: {}", t.line);
            // Issue 42: header words are whole at every width (wrapped between words only).
            assert_eq!(
                t.broken_header_words, 0,
                "{width} px, print {print}: a header word broken: {}",
                t.line
            );
            assert!(t.room <= t.page, "{}", t.line);
            let fits = t.width <= t.room + 1;
            if print || width == 1100 {
                // Printed, nothing scrolls: every table fits the page. At the screenshots'
                // width every table fits too, so a screenshot shows each whole.
                assert!(fits, "{width} px, print {print}: not whole: {}", t.line);
            } else {
                // A narrow window may scroll a wide table, inside its own container.
                assert!(fits || t.scroller, "{width} px: clipped: {}", t.line);
            }
        }
    }

    // And Chromium prints it.
    let pdf = base.path().join("report.pdf");
    let o = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!(
            "--user-data-dir={}",
            base.path().join("profile-pdf").display()
        ))
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "{}", text(&o));
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF"), "a PDF");
}
