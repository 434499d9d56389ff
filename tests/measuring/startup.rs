//! run.json's `startup` (issue 44): the start-up timeline of a plain 100 ms run, each step's
//! share of the start-up (from `main` to the first due time) asserted, never an absolute time,
//! so that the test holds on a fast or a slow, busy machine alike while a step that grows out
//! of proportion (the BPF object loaded by the snapshot's probes cost a plain run five times
//! the lead-in) fails it. The bounds and the figures they come from: bench/README.md,
//! `ci/startup.sh`.

use crate::common;

use common::*;
use serde_json::Value;

/// The steps of a plain run's start-up, in the order they must end (a subsequence of what
/// run.json lists: the snapshot's probes ([`PROBES`]), and the steps only some runs have,
/// such as `load generators started`, may lie between them).
const ORDER: &[&str] = &[
    "main entered",
    "command line parsed",
    "journals of killed runs undone",
    "session begun (plan made)",
    "result directory claimed",
    "wake method and journals checked",
    "snapshot: file checks",
    "snapshot: the rest",
    "own threads placed, permissions checked",
    "measuring threads set up",
    "CPU locks taken",
    "spike loads and PM QoS",
    "result files created",
    "counters opened",
    "start fixed: the lead-in begins",
    "result headers and the first run.json written",
    "recorder and live view made",
    "start gate opened",
];

/// The live probes a plain run's snapshot marks: they run on their own thread while the
/// snapshot's file checks run (issue 44), so they end in any order with them, but after the
/// wake method's check and before `snapshot: the rest`.
const PROBES: &[&str] = &[
    "probe sched_fifo",
    "probe sched_rr",
    "probe sched_deadline",
    "probe mlockall",
    "probe posix_timers",
    "probe rt_signals",
    "probe message_queues",
    "probe pi_futex",
    "probe shared_memory",
    "probe bpf",
];

/// The shares of the start-up (from `main` to the first due time) asserted. The lead-in (start
/// fixed to first due time) is 20 ms and the measuring threads' set-up. The figures they come from (bench/README.md,
/// "ci/startup.sh": a debug build, 6 runs on the development VM at a load average of 17): main
/// to first due time 253-333 ms, of it the lead-in 15-20 %, the largest step 19-46 % (the
/// snapshot's file checks, the measuring threads' set-up or the permissions' check: whichever
/// the machine's load hit), the live probes together 7-21 %, the work inside the lead-in
/// (start fixed to gate open) about 1.3 ms. The bounds catch a step grown
/// out of proportion (when the probes loaded the BPF object, a debug build's start-up was
/// 1137-1299 ms, the probes most of it) with room for a machine twice as busy; one retry.
///
/// At most this share is any one step of work.
const MAX_STEP_SHARE: f64 = 0.60;
/// At most this share are the live probes together.
const MAX_PROBES_SHARE: f64 = 0.35;
/// At least this share is the lead-in: the work before it at most 32 times its length.
const MIN_LEAD_IN_SHARE: f64 = 0.03;
/// At most this share of the lead-in is the work it covers (from fixing the start to opening
/// the gate: result headers, the first run.json, the recorder): the lead-in's margin.
const MAX_COVERED_SHARE_OF_LEAD_IN: f64 = 0.25;
/// The lead-in's least (session/start.rs `LEAD_IN_BASE_NS`): it is this plus the measuring
/// threads' set-up.
const LEAD_IN_BASE_NS: u64 = 20_000_000;
/// How much shorter than its formula the lead-in seen from the marks may be: the mark of the
/// fixed start is taken just after the start is fixed.
const LEAD_IN_SLACK_NS: u64 = 2_000_000;

/// Each step's (name, own time in ns) from `main entered` on, the wait from the gate to the
/// first due time last, the start-up's length and the process CPU at the gate; structural faults (a missing or misordered step) are panics, not
/// retried.
fn steps(run: &Value) -> (Vec<(String, u64)>, u64, u64) {
    let startup = &run["startup"];
    let list = startup["steps"]
        .as_array()
        .expect("run.json has startup.steps");
    let named: Vec<(String, u64)> = list
        .iter()
        .map(|s| {
            (
                s["step"].as_str().expect("a step's name").to_string(),
                s["end_monotonic_ns"].as_u64().expect("a step's end"),
            )
        })
        .collect();
    let mut at = 0;
    for want in ORDER {
        let found = named[at..].iter().position(|(n, _)| n == want);
        let Some(i) = found else {
            panic!("step {want:?} missing or out of order in {named:#?}");
        };
        at += i + 1;
    }
    let at = |want: &str| named.iter().position(|(n, _)| n == want);
    let (after, before) = (
        at("wake method and journals checked").unwrap(),
        at("snapshot: the rest").unwrap(),
    );
    for probe in PROBES {
        assert!(
            at(probe).is_some_and(|i| after < i && i < before),
            "probe {probe:?} missing, or not between the wake method's check and the snapshot's rest, in {named:#?}"
        );
    }
    assert!(
        named.windows(2).all(|w| w[0].1 <= w[1].1),
        "the steps' ends go back in time: {named:#?}"
    );
    let first_due = startup["first_due_monotonic_ns"].as_u64().unwrap();
    assert_eq!(
        Some(first_due),
        run["start_monotonic_ns"].as_u64(),
        "the lead-in ends at the run's start"
    );
    // A gate opened after the first due time (a stall of the machine during the lead-in: run.json
    // warns) leaves no wait; the covered share then fails the attempt, which is retried.
    let gate = named.last().unwrap().1;
    let begin = named[0].1;
    let mut own: Vec<(String, u64)> = named
        .iter()
        .skip(1)
        .scan(begin, |prev, (n, end)| {
            let d = end - *prev;
            *prev = *end;
            Some((n.clone(), d))
        })
        .collect();
    own.push((
        "lead-in: gate open to first due time".into(),
        first_due.saturating_sub(gate),
    ));
    let cpu = startup["process_cpu_ns"].as_u64().unwrap();
    (own, first_due - begin, cpu)
}

#[test]
fn a_plain_runs_start_up_steps_keep_their_shares() {
    let test = "a_plain_runs_start_up_steps_keep_their_shares";
    if !realtime_available(test) {
        return;
    }
    let _lock = exclusive();
    let cpu = online_cpus().last().unwrap().to_string();
    with_one_retry(test, || {
        let (_base, out) = temp_out();
        let output = jitterlab(&[
            "run",
            "--duration",
            "100ms",
            "--interval",
            "1ms",
            "--cpus",
            &cpu,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{}", text(&output));
        let run = run_json(&out);
        let (own, startup, cpu_ns) = steps(&run);
        // The CPU at the gate is part of the whole run's.
        let total = &run["cpu_time"];
        let whole = total["process_user_ns"].as_u64().unwrap()
            + total["process_system_ns"].as_u64().unwrap();
        assert!(
            cpu_ns > 0 && cpu_ns <= whole,
            "CPU at the gate {cpu_ns} ns, whole run {whole} ns"
        );
        let share = |ns: u64| ns as f64 / startup as f64;
        let table = || {
            own.iter()
                .map(|(n, d)| format!("{n}: {:.2} ms, {:.1} %", *d as f64 / 1e6, 100.0 * share(*d)))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (rest, work) = own.split_last().unwrap();
        let after_fix: u64 = work
            .iter()
            .skip_while(|(n, _)| n != "start fixed: the lead-in begins")
            .skip(1)
            .map(|(_, d)| d)
            .sum();
        // The whole lead-in: from fixing the start to the first due time.
        let lead_in = after_fix + rest.1;
        // It grows with the measuring threads' set-up (the step's own time).
        let setup = work
            .iter()
            .find(|(n, _)| n == "measuring threads set up")
            .map(|(_, d)| *d)
            .unwrap();
        if lead_in + LEAD_IN_SLACK_NS < LEAD_IN_BASE_NS + setup {
            return Err(format!(
                "the lead-in is {:.2} ms, less than {:.0} ms and the threads' set-up, {:.2} ms:\n{}",
                lead_in as f64 / 1e6,
                LEAD_IN_BASE_NS as f64 / 1e6,
                setup as f64 / 1e6,
                table()
            ));
        }
        if share(lead_in) < MIN_LEAD_IN_SHARE {
            return Err(format!(
                "the lead-in is {:.1} % of the start-up (at least {:.0} % asked):\n{}",
                100.0 * share(lead_in),
                100.0 * MIN_LEAD_IN_SHARE,
                table()
            ));
        }
        if let Some((n, d)) = work.iter().find(|(_, d)| share(*d) > MAX_STEP_SHARE) {
            return Err(format!(
                "step {n:?} is {:.1} % of the start-up (at most {:.0} %):\n{}",
                100.0 * share(*d),
                100.0 * MAX_STEP_SHARE,
                table()
            ));
        }
        let probes: u64 = work
            .iter()
            .filter(|(n, _)| n.starts_with("probe "))
            .map(|(_, d)| d)
            .sum();
        if share(probes) > MAX_PROBES_SHARE {
            return Err(format!(
                "the live probes are {:.1} % of the start-up (at most {:.0} %):\n{}",
                100.0 * share(probes),
                100.0 * MAX_PROBES_SHARE,
                table()
            ));
        }
        if after_fix as f64 > MAX_COVERED_SHARE_OF_LEAD_IN * lead_in as f64 {
            return Err(format!(
                "the work from fixing the start to opening the gate took {:.2} ms of the {:.2} ms lead-in (at most {:.0} %):\n{}",
                after_fix as f64 / 1e6,
                lead_in as f64 / 1e6,
                100.0 * MAX_COVERED_SHARE_OF_LEAD_IN,
                table()
            ));
        }
        eprintln!(
            "{test}: start-up {:.2} ms:\n{}",
            startup as f64 / 1e6,
            table()
        );
        Ok(())
    });
}
