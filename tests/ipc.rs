//! The IPC wake methods (`--wake signal|sigwait|mq|...`): a sender thread per measuring thread
//! wakes it through the mechanism at each due time. Every method of the table whose schedule is
//! `Sender` is run here, so that a new one is tested without an edit. Their ground truth (an
//! injected FIFO-99 spin on the receiver's CPU measured at its size) is in
//! tests/ground_truth.rs, which runs them with `--sender-cpu other`.

mod common;

use common::*;
use jitterlab::measure::wake::{Schedule, WAKE_METHODS};

fn ipc_methods() -> Vec<&'static str> {
    WAKE_METHODS
        .iter()
        .filter(|m| m.schedule == Schedule::Sender)
        .map(|m| m.name)
        .collect()
}

/// One second at 1 ms on CPUs 0-1 with the senders on `sender_cpu`: every due time is served
/// (samples plus missed periods within 1 % of the 1000 due times), no latency is negative, and
/// run.json records the mechanism and the roles.
fn counts(wake: &str, sender_cpu: &str) -> Result<(), String> {
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        "0-1",
        "--wake",
        wake,
        "--sender-cpu",
        sender_cpu,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    if !o.status.success() {
        return Err(format!(
            "--wake {wake} --sender-cpu {sender_cpu}: {}",
            text(&o)
        ));
    }
    let run = run_json(&out);
    let ipc = &run["plan"]["ipc"];
    let expected_senders = match sender_cpu {
        "same" => [0, 1],
        _ => [1, 0],
    };
    if ipc["mechanism"] != wake
        || ipc["sender_cpu"] != sender_cpu
        || ipc["sender_cpus"] != serde_json::json!(expected_senders)
        || ipc["sender_priority"] != 95
        || ipc["between"] != "threads"
    {
        return Err(format!("--wake {wake}: run.json plan.ipc is {ipc}"));
    }
    for cpu in [0, 1] {
        let t = thread(&run, cpu);
        let samples = t["samples"].as_u64().unwrap();
        let missed = t["missed_periods"].as_u64().unwrap();
        let served = samples + missed;
        if !(990..=1010).contains(&served) || samples < 900 {
            return Err(format!(
                "--wake {wake} --sender-cpu {sender_cpu}: CPU {cpu} took {samples} samples and missed {missed} of 1000 due times"
            ));
        }
        let min = t["min_ns"].as_i64().unwrap();
        if min < 0 {
            return Err(format!(
                "--wake {wake}: CPU {cpu} woke {min} ns before the sender's stamp"
            ));
        }
        if t["end"] != "completed" {
            return Err(format!("--wake {wake}: CPU {cpu} ended {}", t["end"]));
        }
    }
    Ok(())
}

#[test]
fn every_ipc_method_serves_every_due_time_on_the_same_and_another_cpu() {
    if !realtime_available("ipc counts") {
        return;
    }
    if online_cpus().len() < 2 {
        eprintln!("SKIPPED ipc counts: needs two CPUs");
        return;
    }
    let methods = ipc_methods();
    assert!(
        methods.len() >= 10,
        "the IPC methods are in the table: {methods:?}"
    );
    let _g = exclusive();
    for wake in methods {
        for sender_cpu in ["same", "other"] {
            with_one_retry(
                &format!("ipc counts --wake {wake} --sender-cpu {sender_cpu}"),
                || counts(wake, sender_cpu),
            );
        }
    }
}

/// The sender options are refused with a timer method, and bad values are named (exit 2).
#[test]
fn sender_options_are_checked() {
    let (_base, out) = temp_out();
    let out = out.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--wake", "clock-nanosleep", "--sender-cpu", "0"],
            "no sender thread",
        ),
        (
            vec!["--wake", "mq", "--sender-cpu", "elsewhere"],
            "same, other or a CPU number",
        ),
        (
            vec!["--wake", "mq", "--sender-priority", "120"],
            "--sender-priority 120",
        ),
    ] {
        let mut all = vec!["run", "--duration", "1s", "--out", out];
        all.extend(args.iter());
        let o = jitterlab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
}
