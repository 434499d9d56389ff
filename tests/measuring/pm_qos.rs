//! PM QoS is the whole machine's (seventh hostile re-run, S1): a run that leaves it alone
//! beside another run (which holds /dev/cpu_dma_latency at 0 by default) measures with 0 in
//! force, and recorded "left alone" and nothing else. The ground truth: the other run, started
//! by the test on CPU 0, holds 0; the run on CPU 1 with `--pm-qos off` must record 0 in force,
//! name that run (its pid, and CPU 0, the CPU it measures) in run.json and in a warning. About
//! 4 s.

use crate::common;

use common::lifecycle::{start_quiet, wait_until};
use common::*;
use std::os::unix::fs::FileExt;
use std::time::Duration;

const DEVICE: &str = "/dev/cpu_dma_latency";

/// The value in force now (a read of the device: an open is a request at the kernel's
/// default, which changes nothing), or None when it cannot be read.
fn in_force() -> Option<i32> {
    let f = std::fs::File::open(DEVICE).ok()?;
    let mut v = [0u8; 4];
    f.read_exact_at(&mut v, 0).ok()?;
    Some(i32::from_ne_bytes(v))
}

#[test]
fn a_run_that_leaves_pm_qos_alone_names_the_run_that_held_it() {
    if !two_cpus_online("a_run_that_leaves_pm_qos_alone") {
        return;
    }
    let _x = exclusive();
    match in_force() {
        Some(2_000_000_000) => {}
        other => {
            eprintln!(
                "SKIP a_run_that_leaves_pm_qos_alone: {DEVICE} reads {other:?}, not the kernel's 2000000000 (no request): not root, no device, or another process holds a request"
            );
            return;
        }
    }
    let (_a, held) = temp_out();
    let (_b, out) = temp_out();
    let mut holder = start_quiet(&[
        "run",
        "-q",
        "-D",
        "4s",
        "--cpus",
        "0",
        "--out",
        held.to_str().unwrap(),
    ]);
    // Its request is made before run.json is first written.
    let started = wait_until(Duration::from_secs(10), || held.join("run.json").exists());
    assert!(started, "the holding run never started");
    let o = jitterlab(&[
        "run",
        "-q",
        "-D",
        "1s",
        "--cpus",
        "1",
        "--pm-qos",
        "off",
        "--out",
        out.to_str().unwrap(),
    ]);
    let holder_status = holder.wait().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(holder_status.success(), "{holder_status:?}");
    let run = run_json(&out);
    let pm = &run["environment"]["pm_qos"];
    assert_eq!(pm["held_us"], serde_json::Value::Null, "{pm:#}");
    assert_eq!(pm["in_force_us"], 0, "{pm:#}");
    let others = pm["held_by_others"].as_array().expect("held_by_others");
    let other = others
        .iter()
        .find(|h| h["pid"] == holder.id())
        .unwrap_or_else(|| panic!("the holding run (pid {}) not named: {pm:#}", holder.id()));
    assert_eq!(other["jitterlab"], true, "{other:#}");
    assert_eq!(other["cpus"], serde_json::json!([0]), "{other:#}");
    let warning = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.starts_with("PM QoS 0 us was in force during this run"))
        .unwrap_or_else(|| panic!("no PM QoS warning: {:#}", run["warnings"]));
    assert!(
        warning.contains("this run left it alone")
            && warning.contains(&format!(
                "another jitterlab measuring CPUs 0: pid {}",
                holder.id()
            )),
        "{warning}"
    );
    // The holder's own request is 0: nothing lower, nothing said.
    let holder_pm = &run_json(&held)["environment"]["pm_qos"];
    assert_eq!(holder_pm["held_us"], 0, "{holder_pm:#}");
    assert_eq!(holder_pm["in_force_us"], 0, "{holder_pm:#}");
    assert!(holder_pm.get("held_by_others").is_none(), "{holder_pm:#}");
}
