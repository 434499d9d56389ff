//! Ground truth for the context counters: a disturber thread of this test process, pinned to
//! the measured CPU at SCHED_FIFO 99, storms timer interrupts (20 us sleeps) and holds the CPU
//! 15 ms every 200 ms, in chosen seconds of the run only (log intervals of 500 ms: two per
//! second). counters.log must show the timer interrupts (`irq:LOC`) high in exactly those log
//! intervals, and the correlation in run.json must name `irq:LOC` among the counters that moved
//! with the late wakeups (the 15 ms holds are above the 10 ms deadline, which this VM's own
//! noise rarely reaches). The report then draws the CPU's counters beneath latency over time
//! with the irq:LOC strip.

use crate::common::{self, exclusive, monotonic_ns};
use std::path::Path;
use std::time::{Duration, Instant};

const CPU: usize = 1;
/// The seconds of the run the disturber works in.
const PHASES: [u64; 4] = [3, 7, 11, 15];
const DURATION_S: u64 = 18;

/// The log intervals (500 ms) of the phases.
fn in_phase(interval: u64) -> bool {
    PHASES.contains(&(interval / 2))
}

fn sleep_until(mono_ns: u64) {
    let now = monotonic_ns();
    if mono_ns > now {
        std::thread::sleep(Duration::from_nanos(mono_ns - now));
    }
}

/// Pinned to CPU at FIFO 99: from `start + k s + 100 ms` to `start + (k+1) s - 100 ms` for
/// each phase k, 20 us sleeps (a timer interrupt each) and a 15 ms busy hold every 200 ms.
fn disturb(start_mono: u64) {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(CPU, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
            0
        );
        let param = libc::sched_param { sched_priority: 99 };
        assert_eq!(libc::sched_setscheduler(0, libc::SCHED_FIFO, &param), 0);
    }
    for k in PHASES {
        let from = start_mono + k * 1_000_000_000 + 100_000_000;
        let to = start_mono + (k + 1) * 1_000_000_000 - 100_000_000;
        sleep_until(from);
        let mut next_hold = from;
        while monotonic_ns() < to {
            if monotonic_ns() >= next_hold {
                let spin_until = monotonic_ns() + 15_000_000;
                while monotonic_ns() < spin_until {}
                next_hold += 200_000_000;
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

/// The run.json of `out` once its first version is written, with the run's start.
fn start_of(out: &Path) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(out.join("run.json"))
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(s) = v["start_monotonic_ns"].as_u64()
        {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "no run.json in {}",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn attempt() -> Result<(), String> {
    let (_base, out) = common::temp_out();
    let out_s = out.to_str().unwrap().to_string();
    let child = std::process::Command::new(common::bin())
        .args([
            "run",
            "--cpus",
            &CPU.to_string(),
            "--duration",
            &format!("{DURATION_S}s"),
            "--deadline",
            "10ms",
            "--log-interval",
            "500ms",
            "--quiet",
            "--out",
            &out_s,
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("jitterlab runs");
    let start = start_of(&out);
    let disturber = std::thread::spawn(move || disturb(start));
    let output = child.wait_with_output().unwrap();
    disturber.join().unwrap();
    assert!(output.status.success(), "{}", common::text(&output));
    common::invariants::check_result_dir(&out);

    // The file: irq:LOC per interval of CPU 1.
    let file = jitterlab::format::counters::read(&out.join("counters.log")).unwrap();
    assert!(file.damage.is_empty(), "{:?}", file.damage);
    let loc: Vec<(u64, i64)> = file
        .intervals
        .iter()
        .filter(|l| l.cpu == CPU)
        .filter_map(|l| {
            let v = l.values.iter().find(|(n, _)| &**n == "irq:LOC")?.1?;
            Some((l.interval, v))
        })
        .collect();
    assert!(loc.len() as u64 >= 2 * DURATION_S - 2, "{loc:?}");
    let quiet_max = loc
        .iter()
        .filter(|(k, _)| !in_phase(*k))
        .map(|&(_, v)| v)
        .max()
        .unwrap();
    let storm_min = loc
        .iter()
        .filter(|(k, _)| in_phase(*k))
        .map(|&(_, v)| v)
        .min()
        .ok_or("no line for a phase interval")?;
    // 20 us sleeps for 800 ms give thousands of timer interrupts over the quiet intervals'
    // ~1000 (the measuring thread's own 1 ms timer).
    if storm_min < 2 * quiet_max {
        return Err(format!(
            "irq:LOC not high in exactly the phase intervals {PHASES:?}: {loc:?}"
        ));
    }

    // The correlation.
    let run = common::run_json(&out);
    let cpu = run["counters"]["correlation"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["cpu"] == CPU))
        .ok_or("no correlation for the CPU")?;
    let moved: Vec<&str> = cpu["moved"]
        .as_array()
        .map(|m| m.iter().filter_map(|x| x["counter"].as_str()).collect())
        .unwrap_or_default();
    if !moved.contains(&"irq:LOC") {
        return Err(format!("irq:LOC not found moved: {cpu}"));
    }
    let summary = common::text(&output);
    if !summary.contains("Counters that moved with the late wakeups")
        || !summary.contains("irq:LOC")
    {
        return Err(format!("the summary has no counters line: {summary}"));
    }
    // The report draws it beneath latency over time: CPU 1's plot with an irq:LOC strip.
    let page = out.with_extension("html");
    let o = common::jitterlab(&["report", &out_s, "-o", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    let plot = html
        .find(&format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"run1-counters-cpu{CPU}\""
        ))
        .map(|at| &html[at..at + html[at..].find("</svg>").unwrap()])
        .ok_or("no counters plot for the CPU in the report")?;
    // Strips for the 6 smallest p (the order of `moved`); the others are named under it.
    if moved.iter().position(|m| *m == "irq:LOC") < Some(6) {
        assert!(
            plot.contains(r#"data-counter="irq:LOC""#),
            "no irq:LOC strip"
        );
    } else {
        assert!(html.contains("Also moved, not drawn: ") && html.contains("irq:LOC"));
    }
    assert!(plot.contains(r#"class="late""#), "no late interval shaded");
    // Exported as the CSV the docs promise.
    let csv = common::jitterlab(&["export", &out_s, "--format", "counters"]);
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.starts_with("time_s,cpu,counter,value\n"), "{text}");
    let row = format!("{},{CPU},irq:LOC,", PHASES[0] as f64);
    assert!(
        text.contains(&row),
        "{row} not in {}",
        &text[..text.len().min(2000)]
    );
    Ok(())
}

#[test]
fn timer_interrupt_storms_in_chosen_seconds_show_in_those_intervals_and_in_the_correlation() {
    let _lock = exclusive();
    if !common::realtime_on_two_cpus("counters ground truth") {
        return;
    }
    common::with_one_retry("counters ground truth", attempt);
}
