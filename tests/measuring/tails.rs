//! Tails wired into `run` (issue 16): a real run with the spike load every 700 ms, its
//! figures in run.json checked against the injections (events.jsonl) and against counts
//! recomputed from the run's own `--samples` file; and a run written without tail figures
//! (as imported and older runs are), whose spikes `report` and `compare` estimate from the
//! interval maxima.

use crate::common;

use common::*;
use jitterlab::format::samplelog::{SampleLogReader, SampleRecord};
use jitterlab::results::synthetic::{SyntheticRun, write_run};

/// Above the band where this VM's own stalls fall: idle, it holds a virtual CPU for 2-4 ms
/// about once a second (71 wakeups over 2 ms, 17 over 3 ms, none over 4 ms in 60 s here; 13
/// over 3 ms in 15 s on a CI machine), so a 3 ms deadline counted the machine, not the load.
const DEADLINE_NS: u64 = 8_000_000;
/// The spike load holds the CPU this long: well over the deadline, so each injection is late.
const SPIKE_LEN: &str = "len=12ms";
const EVERY_NS: f64 = 700e6;
/// Spikes the machine's own stalls may add to the injections' (see tests/ground_truth.rs: this
/// VM stalls a virtual CPU for milliseconds now and then).
const MAX_NOISY: usize = 2;

/// One run; every check that can fail returns Err so the caller may retry once.
fn spike_run() -> Result<(), String> {
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "15s",
        "--cpus",
        "0",
        "--deadline",
        "8ms",
        "--samples",
        "--quiet",
        // The tail statements are printed with --verbose (issue 30).
        "--verbose",
        "--under",
        "50us,250us",
        "--budget",
        "firm(3,10),under(250us)>=50%,spikes(2ms)<=25",
        "--load",
        &format!("spike:cpu=0,every=700ms,{SPIKE_LEN},prio=99"),
        "--out",
        out.to_str().unwrap(),
    ]);
    // The budget may fail on a noisy machine (exit 1); its verdict is checked below.
    if !matches!(o.status.code(), Some(0 | 1)) {
        return Err(format!("the run failed: {}", text(&o)));
    }
    let run = run_json(&out);
    let t = thread(&run, 0);
    let log = SampleLogReader::open(&out.join("samples.bin")).unwrap();
    let offset = log.header.start_ns as i64 - run["start_monotonic_ns"].as_u64().unwrap() as i64;
    let samples: Vec<SampleRecord> = log
        .map(|s| {
            let mut s = s.unwrap();
            s.expected_ns = (s.expected_ns as i64 - offset) as u64;
            s
        })
        .collect();
    assert_eq!(samples.len() as u64, t["samples"].as_u64().unwrap());

    // Shares within: exact counts, recomputed from the samples.
    let within = t["within"].as_array().unwrap();
    for threshold in [50_000u64, 250_000, DEADLINE_NS] {
        let w = within
            .iter()
            .find(|w| w["threshold_ns"] == threshold)
            .unwrap_or_else(|| panic!("within {threshold} ns in {within:?}"));
        let want = samples
            .iter()
            .filter(|s| s.latency_ns <= threshold as i64)
            .count() as u64;
        assert_eq!(w["within"].as_u64().unwrap(), want, "within {threshold} ns");
        assert_eq!(
            w["above"].as_u64().unwrap(),
            samples.len() as u64 - want,
            "above {threshold} ns"
        );
        assert_eq!(w["undecided"], 0);
    }

    // (m,k)-firm: the worst window of 10 periods, by brute force over every window; a wakeup
    // that reports n missed periods stands for n missed periods then its own.
    let mut periods: Vec<bool> = Vec::new();
    for s in &samples {
        periods.extend(std::iter::repeat_n(true, s.missed as usize));
        periods.push(s.latency_ns > DEADLINE_NS as i64);
    }
    let worst = periods
        .windows(10)
        .map(|w| w.iter().filter(|&&m| m).count() as u64)
        .max()
        .unwrap();
    let firm = &t["firm"][0];
    assert_eq!(firm["k"], 10);
    assert_eq!(firm["worst_misses"].as_u64().unwrap(), worst, "{firm}");
    let verdict = &run["budget"]["clauses"][0];
    assert_eq!(
        verdict["passed"].as_bool().unwrap(),
        worst <= 3,
        "{verdict}"
    );

    // Spikes over the deadline: runs of late wakeups, recomputed from the samples.
    let mut spike_starts: Vec<&SampleRecord> = Vec::new();
    let mut in_spike = false;
    for s in &samples {
        let late = s.latency_ns > DEADLINE_NS as i64;
        if late && !in_spike {
            spike_starts.push(s);
        }
        in_spike = late;
    }
    let spikes = t["spikes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["basis"] == "deadline")
        .expect("spikes over the deadline");
    assert_eq!(spikes["threshold_ns"], DEADLINE_NS);
    assert_eq!(
        spikes["count"].as_u64().unwrap(),
        spike_starts.len() as u64,
        "spike count against the samples"
    );

    // Spikes over the budget's 2 ms, streamed by the recorder: the same recount, and the
    // verdict of spikes(2ms)<=25 follows it.
    let mut over_2ms = 0;
    let mut in_spike = false;
    for s in &samples {
        let late = s.latency_ns > 2_000_000;
        over_2ms += u64::from(late && !in_spike);
        in_spike = late;
    }
    let budget_spikes = t["spikes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["basis"] == "budget" && s["threshold_ns"] == 2_000_000)
        .expect("spikes over the budget's 2 ms");
    assert_eq!(budget_spikes["count"].as_u64().unwrap(), over_2ms);
    let verdict = &run["budget"]["clauses"][2];
    assert_eq!(verdict["clause"], "spikes(2ms)<=25");
    assert_eq!(verdict["passed"].as_bool().unwrap(), over_2ms <= 25);

    // Against the injections: each held one wakeup run, and spikes are injections plus at most
    // MAX_NOISY stalls of the machine.
    let injections = spike_injections(&out, 0);
    if !(20..=22).contains(&injections.len()) {
        return Err(format!(
            "expected 21 injections in 15 s, logged {}",
            injections.len()
        ));
    }
    // The wakeup of `s` was due before the injection ended and came after it started.
    let held_by = |s: &SampleRecord, i: &Injection| {
        s.expected_ns < i.end_ns && s.expected_ns as i64 + s.latency_ns >= i.start_ns as i64
    };
    let matched = |s: &SampleRecord| injections.iter().any(|i| held_by(s, i));
    for (k, i) in injections.iter().enumerate() {
        let held = spike_starts.iter().filter(|s| held_by(s, i));
        if held.count() != 1 {
            return Err(format!(
                "injection {k}: not exactly one spike over the deadline"
            ));
        }
    }
    let noisy = spike_starts.iter().filter(|s| !matched(s)).count();
    if noisy > MAX_NOISY {
        return Err(format!(
            "{noisy} spikes over the deadline besides the {} injections: the machine is too noisy",
            injections.len()
        ));
    }

    // The period: 700 ms within 1 %.
    let period = spikes["period_ns"]
        .as_f64()
        .ok_or_else(|| format!("no period found: {spikes}"))?;
    if (period - EVERY_NS).abs() > 0.01 * EVERY_NS {
        return Err(format!("period {period} ns, injected every 700 ms"));
    }
    // The rate interval contains the true rate (one injection per 700 ms).
    let true_per_hour = 3600e9 / EVERY_NS;
    let (low, high) = (
        spikes["rate_per_hour_low"].as_f64().unwrap(),
        spikes["rate_per_hour_high"].as_f64().unwrap(),
    );
    if !(low <= true_per_hour && true_per_hour <= high) {
        return Err(format!(
            "rate interval {low:.0}-{high:.0}/h misses the true {true_per_hour:.0}/h"
        ));
    }
    // The terminal summary says the figures.
    // Lines over 100 columns are wrapped at spaces (issue 30): read it with them joined.
    let summary = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        summary.contains("spikes over 8.00 ms (deadline)"),
        "{summary}"
    );
    // The period as printed on the deadline's line ("every 699.99 ms"), within 1 % as above.
    // Only there: a lower threshold's line also counts the machine's own spikes, and this VM's
    // noise can have a period of its own ("43 spikes over 300.0 us ... every 5.00 ms").
    let deadline_line = summary
        .split("spikes over 8.00 ms (deadline)")
        .nth(1)
        .and_then(|rest| rest.split(" cpu").next())
        .unwrap_or("");
    let printed_ms = deadline_line
        .split("every ")
        .skip(1)
        .filter_map(leading_ms)
        .collect::<Vec<f64>>();
    assert!(
        !printed_ms.is_empty() && printed_ms.iter().all(|ms| (ms - 700.0).abs() <= 7.0),
        "{summary}"
    );
    Ok(())
}

#[test]
fn spike_load_every_700ms_gives_its_period_count_and_rate() {
    if !realtime_available("spike_load_every_700ms_gives_its_period_count_and_rate") {
        return;
    }
    let _lock = exclusive();
    with_one_retry("spike run every 700 ms", spike_run);
}

/// A run without tail figures in run.json (as imported runs and files written before them):
/// 2 minutes at 1 ms, 1 s log intervals, 12 us wakeups except 2.5 ms ones 0.3 s into every
/// 7th second (18 of them) and two in second 50. `report` and `compare` estimate the spikes over
/// the deadline (1 ms) from the interval maxima: at least 19 (the two in one interval count
/// once), a 7 s period, times known to 1 s.
#[test]
fn spikes_of_a_run_without_a_spike_record_come_from_interval_maxima() {
    const MS: u64 = 1_000_000;
    let (base, _) = temp_out();
    let dir = base.path().join("old");
    let run = SyntheticRun {
        cpus: vec![0],
        interval_ns: MS,
        log_interval_ns: 1000 * MS,
        duration_ns: 120_000 * MS,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 5,
    };
    let record = write_run(&dir, &run, |_, due, _| {
        let spike = due % (7000 * MS) == 300 * MS || due == 50_200 * MS || due == 50_600 * MS;
        if spike { 2_500_000 } else { 12_000 }
    })
    .unwrap();
    assert!(record.threads[0].tails.spikes.is_empty(), "no spike record");
    assert_eq!(record.threads[0].deadline_ns, MS);

    let html = base.path().join("report.html");
    let o = jitterlab(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    let line = page
        .split("<li>")
        .find(|l| l.contains("(deadline)"))
        .unwrap_or_else(|| panic!("no spike line over the deadline in the report"));
    assert!(
        line.contains("from 1.00 s interval maxima: at least 19 spikes over 1.00 ms (deadline)"),
        "{line}"
    );
    assert!(line.contains("every 7.00 s"), "{line}");
    assert!(line.contains("times known to 1.00 s"), "{line}");

    let o = jitterlab(&[
        "compare",
        dir.to_str().unwrap(),
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rates = &v["tails"]["spikes"][0]["rates"];
    for r in rates.as_array().unwrap() {
        assert_eq!(r["count"], 19, "{r}");
        assert_eq!(r["count_is_lower_bound"], true, "{r}");
        assert_eq!(r["resolution_ns"], 1000 * MS, "{r}");
        // 19 in 2 minutes: 570 per hour.
        assert!(
            (r["per_hour"].as_f64().unwrap() - 570.0).abs() < 1e-6,
            "{r}"
        );
    }
}

/// The milliseconds at the start of a summary fragment such as "699.99 ms (81 % on the grid".
fn leading_ms(fragment: &str) -> Option<f64> {
    let (number, rest) = fragment.split_once(' ')?;
    rest.starts_with("ms").then(|| number.parse().ok())?
}
