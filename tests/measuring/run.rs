//! `jitterlab run` end to end, as root: counts, statistics against the sample log, every wake
//! method, and signals.

use crate::common;

use common::*;
use jitterlab::format::samplelog::SampleLogReader;
use std::process::Command;
use std::time::Duration;

#[test]
fn a_three_second_run_gives_duration_over_interval_samples_per_thread() {
    if !realtime_available("three_second_run") {
        return;
    }
    let _g = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "3s",
        "--samples",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&out);
    assert_eq!(run["ended"], "completed");
    let cpus = online_cpus();
    assert_eq!(run["threads"].as_array().unwrap().len(), cpus.len());
    for &cpu in &cpus {
        let t = thread(&run, cpu);
        let samples = t["samples"].as_u64().unwrap();
        let missed = t["missed_periods"].as_u64().unwrap();
        // Every period of the 3 s is either a sample or a counted missed period.
        assert!(
            (2970..=3030).contains(&(samples + missed)),
            "CPU {cpu}: {samples} samples + {missed} missed"
        );
        // Samples alone within 3 %: this VM stalls a vCPU for milliseconds now and then, and
        // the periods it takes are the missed ones above; those the hypervisor took from the
        // vCPU (its steal time) are counted apart.
        let stolen = stolen_periods(&run, cpu, 1_000_000);
        assert!(
            samples <= 3030 && samples + stolen >= 2910,
            "CPU {cpu}: {samples} samples (the hypervisor took up to {stolen} periods)"
        );
        assert_eq!(t["dropped_records"], 0);
    }
    // The summary table went to stdout with units.
    let summary = String::from_utf8_lossy(&o.stdout);
    assert!(
        summary.contains(" us") && summary.contains("p99.9"),
        "{summary}"
    );

    // run.json agrees with statistics recomputed from every sample.
    let reader = SampleLogReader::open(&out.join("samples.bin")).unwrap();
    let header_start = reader.header.start_ns;
    let records: Vec<_> = reader.map(Result::unwrap).collect();
    // The header's start is the due time of every thread's first wakeup.
    assert_eq!(
        header_start,
        records.iter().map(|r| r.expected_ns).min().unwrap()
    );
    for &cpu in &cpus {
        let t = thread(&run, cpu);
        let mut lat: Vec<i64> = records
            .iter()
            .filter(|r| r.cpu as usize == cpu)
            .map(|r| r.latency_ns)
            .collect();
        assert_eq!(lat.len() as u64, t["samples"].as_u64().unwrap());
        lat.sort_unstable();
        assert_eq!(t["min_ns"].as_i64().unwrap(), lat[0]);
        assert_eq!(t["max_ns"].as_i64().unwrap(), *lat.last().unwrap());
        let mean = lat.iter().map(|&v| v as f64).sum::<f64>() / lat.len() as f64;
        assert!((t["mean_ns"].as_f64().unwrap() - mean).abs() < 1.0);
        for (key, q) in [
            ("p50_ns", 0.5),
            ("p90_ns", 0.9),
            ("p99_ns", 0.99),
            ("p999_ns", 0.999),
            ("p9999_ns", 0.9999),
        ] {
            let rank = ((q * lat.len() as f64).ceil() as usize).clamp(1, lat.len());
            let want = lat[rank - 1] as f64;
            let got = t[key].as_u64().unwrap() as f64;
            // HDR histograms with 3 significant digits: within 0.1% of the exact order statistic.
            assert!(
                (got - want).abs() <= want * 0.001 + 1.0,
                "CPU {cpu} {key}: run.json {got} vs samples {want}"
            );
        }
    }
}

#[test]
fn every_wake_method_available_here_completes_a_short_run() {
    if !realtime_available("every_wake_method") {
        return;
    }
    let _g = exclusive();
    for wake in wake_methods_here("every_wake_method", 1_000_000) {
        let method = wake.name;
        let (_base, out) = temp_out();
        let mut args = vec![
            "run",
            "--wake",
            method,
            "--loops",
            "300",
            "--quiet",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ];
        if wake.per_process.is_some() {
            args.extend(["--cpus", "0"]);
        }
        let o = jitterlab(&args);
        assert!(o.status.success(), "{method}: {}", text(&o));
        let run: serde_json::Value =
            serde_json::from_slice(&o.stdout).expect("--json prints run.json");
        assert_eq!(run["plan"]["wake"], method);
        for t in run["threads"].as_array().unwrap() {
            assert_eq!(t["samples"], 300, "{method}: every loop is a sample");
            // Plausible: half the wakeups within a millisecond, none before its due time.
            assert!(
                t["p50_ns"].as_u64().unwrap() < 1_000_000,
                "{method}: median {}",
                t["p50_ns"]
            );
            assert!(
                t["min_ns"].as_i64().unwrap() >= 0,
                "{method}: woke before the due time"
            );
        }
        // It really slept: 300 periods of 1 ms take at least 300 ms.
        let d = run["duration_ns"].as_u64().unwrap();
        assert!(
            d >= 299_000_000,
            "{method}: 300 loops of 1 ms took only {d} ns"
        );
    }
}

#[test]
fn every_policy_completes_a_short_run() {
    if !realtime_available("every_policy") {
        return;
    }
    let _g = exclusive();
    for (policy, priority) in [
        ("fifo", 95),
        ("rr", 95),
        ("other", 0),
        ("batch", 0),
        ("idle", 0),
        ("deadline", 0),
    ] {
        let (_base, out) = temp_out();
        let o = jitterlab(&[
            "run",
            "--policy",
            policy,
            "--loops",
            "200",
            "--quiet",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{policy}: {}", text(&o));
        let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(run["plan"]["policy"], policy);
        assert_eq!(run["plan"]["priority"], priority);
        for t in run["threads"].as_array().unwrap() {
            assert_eq!(t["samples"], 200, "{policy}");
            assert_eq!(t["end"], "completed", "{policy}");
        }
        let warnings = run["warnings"].to_string();
        if priority == 0 && policy != "deadline" {
            assert!(
                warnings.contains("SCHED_OTHER") || warnings.contains("real-time priority"),
                "{policy}: {warnings}"
            );
        }
        if policy == "deadline" {
            assert_eq!(run["plan"]["deadline_runtime_ns"], 100_000);
            assert!(warnings.contains("not pinned"), "{warnings}");
        }
    }
}

#[test]
fn rtc_is_refused_with_exit_3_where_there_is_no_rtc() {
    if std::path::Path::new("/dev/rtc").exists() {
        eprintln!("SKIPPED rtc refusal: this machine has /dev/rtc");
        return;
    }
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--wake",
        "rtc",
        "--cpus",
        "0",
        "--interval",
        "500ms",
        "--duration",
        "1s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("no /dev/rtc on this system"),
        "{}",
        text(&o)
    );
    assert!(!out.exists());
}

#[test]
fn sigint_stops_cleanly_with_complete_results() {
    if !realtime_available("sigint") {
        return;
    }
    let _g = exclusive();
    let (_base, out) = temp_out();
    let child = Command::new(bin())
        .args([
            "run",
            "--duration",
            "60s",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2_000));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    invariants::check_result_dir(&out);
    let run = run_json(&out);
    assert_eq!(run["ended"], "interrupted");
    for t in run["threads"].as_array().unwrap() {
        let n = t["samples"].as_u64().unwrap();
        assert!(
            (1_000..=2_100).contains(&n),
            "about 2 s of 1 ms samples, got {n}"
        );
        assert_eq!(t["end"], "stopped");
        assert!(t["p99_ns"].as_u64().is_some() && t["max_ns"].as_i64().is_some());
    }
    // Every sample is in the interval log too.
    let intervals = jitterlab::format::hlog::read_intervals(&out.join("latency.hlog")).unwrap();
    let total: u64 = intervals.iter().map(|i| i.histogram.len()).sum();
    let samples: u64 = run["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(total, samples);
}

/// `--interval-step S` (FirmTimers -i, "increase delay by increment at each loop"): the sleep
/// before wakeup n (n from 0) lasts interval + n·S, on a grid and relative alike.
#[test]
fn interval_step_lengthens_the_sleep_before_wakeup_n_by_n_steps() {
    if !realtime_available("interval step") {
        return;
    }
    let _g = exclusive();
    for wake in ["clock-nanosleep", "nanosleep"] {
        let (_base, out) = temp_out();
        let o = jitterlab(&[
            "run",
            "--wake",
            wake,
            "--cpus",
            "0",
            "--interval",
            "1ms",
            "--interval-step",
            "100us",
            "--loops",
            "20",
            "--samples",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{wake}: {}", text(&o));
        let samples: Vec<_> = SampleLogReader::open(&out.join("samples.bin"))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(samples.len(), 20, "{wake}");
        for w in samples.windows(2) {
            let (prev, this) = (&w[0], &w[1]);
            if prev.missed > 0 {
                continue; // a grid point skipped after a stall: the gap holds skipped periods
            }
            // On the grid the sleep starts at the previous due time; a relative sleep starts
            // at the previous wake read.
            let sleep_start = match wake {
                "nanosleep" => (prev.expected_ns as i64 + prev.latency_ns) as u64,
                _ => prev.expected_ns,
            };
            let n = this.seq;
            assert_eq!(
                this.expected_ns - sleep_start,
                1_000_000 + n * 100_000,
                "{wake}: the sleep before wakeup {n}"
            );
        }
    }
}

/// A stop reaches a thread asleep for a long interval at once, with every wake method: a
/// 30 s interval is interrupted one second in, and the run ends long before the next wakeup.
#[test]
fn sigint_ends_a_long_sleep_with_every_wake_method() {
    if !realtime_available("sigint long sleep") {
        return;
    }
    let _g = exclusive();
    for wake in wake_methods_here("sigint long sleep", 30_000_000_000) {
        let (method, cpus) = (wake.name, wake_cpus(wake, "0-1"));
        let (_base, out) = temp_out();
        let mut child = Command::new(bin())
            .args([
                "run",
                "--wake",
                method,
                "--interval",
                "30s",
                "--duration",
                "5m",
            ])
            .args(["--cpus", cpus, "--quiet", "--out", out.to_str().unwrap()])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1_000));
        let sent = std::time::Instant::now();
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        // Not a speed check: the bound only has to lie well below the 30 s the sleep had left.
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if sent.elapsed() > Duration::from_secs(10) {
                child.kill().unwrap();
                panic!("--wake {method}: SIGINT did not end a 30 s sleep within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "--wake {method}");
        let run = run_json(&out);
        assert_eq!(run["ended"], "interrupted", "--wake {method}");
        for t in run["threads"].as_array().unwrap() {
            assert_eq!(t["end"], "stopped", "--wake {method}");
            // At most the first wakeup (due at the start on a grid; 30 s after the gate opened
            // on relative methods) was recorded: the next was 30 s away.
            assert!(t["samples"].as_u64().unwrap() <= 1, "--wake {method}");
        }
    }
}

#[test]
fn sigkill_leaves_every_flushed_interval_in_the_log() {
    if !realtime_available("sigkill") {
        return;
    }
    let _g = exclusive();
    let (_base, out) = temp_out();
    let mut child = Command::new(bin())
        .args([
            "run",
            "--duration",
            "60s",
            "--quiet",
            "--log-interval",
            "100ms",
            "--out",
            out.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2_500));
    child.kill().unwrap();
    child.wait().unwrap();
    let run = run_json(&out);
    assert_eq!(
        run["ended"], "running",
        "a killed run's run.json says it never ended"
    );
    // Its process and its CPU locks are gone: export says it was killed (issue 42), without
    // touching run.json.
    let o = jitterlab(&["export", out.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("killed: run.json says `ended: running`"),
        "{}",
        text(&o)
    );
    assert_eq!(run_json(&out)["ended"], "running");
    let intervals = jitterlab::format::hlog::read_intervals(&out.join("latency.hlog")).unwrap();
    for cpu in online_cpus() {
        let tag = format!("cpu{cpu}");
        let mine: Vec<_> = intervals.iter().filter(|i| i.tag == tag).collect();
        // ~2.45 s of 100 ms intervals had ended before the kill; allow the start-up and one
        // drain period.
        assert!(
            mine.len() >= 20,
            "{tag}: only {} intervals survived",
            mine.len()
        );
        for (k, i) in mine.iter().enumerate() {
            assert!(
                (i.start_s - k as f64 * 0.1).abs() < 1e-6,
                "intervals in order without holes"
            );
            let n = i.histogram.len();
            // A late wakeup (a VM stall) skips the grid points that passed, and those may lie in
            // the next interval: a short interval follows a late wakeup in it or just before.
            let late = |j: usize| mine[j].histogram.max() > 1_000_000;
            assert!(
                (90..=100).contains(&n) || late(k) || (k > 0 && late(k - 1)),
                "{tag} interval {k}: {n} samples"
            );
        }
    }
}

/// Fourth hostile re-run, N18: `--dry-run` counts `--interval-step` in the length it
/// announces: a 3 s run at 1 ms stepped by 20 ms makes 17 wakeups (1 ms x 17 + 20 ms x
/// 136 = 2.737 s; an 18th would end at 3.078 s), not 3000; 60 loops last 35.5 s, not 0.1 s.
#[test]
fn dry_run_counts_the_interval_step() {
    let preview = |length: [&str; 2]| {
        let mut args = vec!["run", "--dry-run", "-i", "1ms", "--interval-step", "20ms"];
        args.extend(length);
        let o = jitterlab(&args);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        t
    };
    let t = preview(["-D", "3s"]);
    assert!(t.contains("about 17 wakeups per thread"), "{t}");
    let t = preview(["-l", "60"]);
    assert!(
        t.contains("60 wakeups per thread, about 35.5s at the interval growing by --interval-step"),
        "{t}"
    );
}

/// Issue 42: a stepped run's (`--interval-step`) deadline cell and spike-rate bounds are
/// over the stepped intervals' real span, not loops x interval. 20 loops at 1 ms growing by
/// 2 ms span 19 x 1 ms + 2 ms x 190 = 399 ms from the first due time to the last (19 ms
/// without the step). The deadline (20 ms) is far above this VM's usual noise; a spike over it
/// changes the cell's words, not its check, which is re-derived from run.json. About 0.6 s.
#[test]
fn a_stepped_runs_deadline_cell_and_spike_rate_are_over_its_real_span() {
    if !realtime_available("a_stepped_runs_deadline_cell") {
        return;
    }
    let _g = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--cpus",
        "0",
        "--interval",
        "1ms",
        "--interval-step",
        "2ms",
        "--loops",
        "20",
        "--deadline",
        "20ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&out);
    // run.json's per-thread tail records are flattened into the thread (`spikes`).
    let spikes = thread(&run, 0)["spikes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["basis"] == "deadline")
        .unwrap_or_else(|| panic!("no deadline spikes: {run:#}"))
        .clone();
    let exposure = spikes["exposure_ns"].as_u64().unwrap();
    let count = spikes["count"].as_u64().unwrap();
    // From the first due time to the end of the last wakeup: the last due time (399 ms), plus
    // that wakeup's latency (and any stall that delayed it).
    const SPAN_NS: u64 = 399_000_000;
    assert!(
        (SPAN_NS..SPAN_NS + 1_000_000_000).contains(&exposure),
        "exposure {exposure} ns is not the stepped span ({SPAN_NS} ns): {spikes:#}"
    );
    // The rate's bounds are the exact Poisson interval over that exposure.
    let rate = jitterlab::analysis::tails::spikes::spike_rate(count, exposure, 0.95);
    for (key, want) in [
        ("rate_per_hour", rate.per_hour),
        ("rate_per_hour_low", rate.per_hour_low),
        ("rate_per_hour_high", rate.per_hour_high),
    ] {
        let got = spikes[key].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "{key} {got}, re-derived {want}: {spikes:#}"
        );
    }
    // The terminal's deadline cell says that span (below a second: as milliseconds).
    let ms = |ns: u64| format!("{:.2} ms", ns as f64 / 1e6);
    let cell = match count {
        0 => format!("none > 20.00 ms in {}", ms(exposure)),
        n => format!("{n} > 20.00 ms, once in {}", ms(exposure / n)),
    };
    if exposure / count.max(1) < 1_000_000_000 {
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains(&cell), "no '{cell}' in:\n{stdout}");
    }
}

/// Issue 42 (a newcomer's first hour): `--no-mlock` warns on the terminal, for root as for an
/// unprivileged user (bad_input.rs tries that one as `nobody`, where `setpriv` is): the real
/// run's summary and run.json, and `--dry-run`, say that page faults can show as latency; a run
/// without it says nothing of the kind. Two 0.3 s runs.
#[test]
fn no_mlock_warns_on_the_terminal() {
    if !realtime_available("no_mlock_warns_on_the_terminal") {
        return;
    }
    let _g = exclusive();
    const SAID: &str = "--no-mlock: jitterlab's memory is not locked";
    for (extra, warned) in [(&["--no-mlock"][..], true), (&[][..], false)] {
        let (_base, out) = temp_out();
        let mut args = vec![
            "run",
            "-D",
            "300ms",
            "--cpus",
            "0",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = jitterlab(&args);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(text(&o).contains(SAID), warned, "{extra:?}: {}", text(&o));
        let stored = run_json(&out)["warnings"].to_string();
        assert_eq!(stored.contains(SAID), warned, "{extra:?}: {stored}");
    }
    let o = jitterlab(&[
        "run",
        "--dry-run",
        "-D",
        "1s",
        "--cpus",
        "0",
        "--no-mlock",
        "--allow-shared-cpus",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("warning: {SAID}")),
        "{}",
        text(&o)
    );
}
