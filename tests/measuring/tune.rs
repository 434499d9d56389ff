//! `jitterlab tune` (issue 43): a fix's kernel setting is in force during its arm only, set
//! back when the arm ends, and set back by the next start after a SIGKILL in the middle of
//! the arm (the knob read before, during and after).

use crate::common;

use common::lifecycle::{self, sigkill, start_quiet as start};
use common::*;
use std::time::Duration;

const KNOB: &str = "/proc/sys/vm/stat_interval";

fn knob() -> String {
    std::fs::read_to_string(KNOB).unwrap().trim().to_string()
}

#[test]
fn a_killed_tunes_setting_is_set_back_by_the_next_start() {
    if !two_cpus_online("a_killed_tunes_setting") {
        return;
    }
    let before = knob();
    if before.parse::<u64>().unwrap() >= 10 {
        eprintln!(
            "SKIP a_killed_tunes_setting: vm.stat_interval is already {before}: the vmstat fix does not apply here"
        );
        return;
    }
    let _x = exclusive();
    let (_base, out) = temp_out();
    // Rounds of 20 s arms: the kill comes during the first vmstat arm.
    let mut tune = start(&[
        "tune",
        "--fixes",
        "vmstat",
        "--rounds",
        "2",
        "-D",
        "20s",
        "--cpus",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let during = lifecycle::wait_until(Duration::from_secs(40), || knob() == "10");
    sigkill(tune.id());
    tune.wait().unwrap();
    assert!(during, "the vmstat arm never set {KNOB} to 10");
    assert_eq!(knob(), "10", "a SIGKILL cannot set it back itself");
    // The next start of any command that changes the system sets it back from the journal.
    let o = jitterlab(&["tune", "--fixes", "vmstat", "--cpus", "1", "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(knob(), before, "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("set back 1 kernel setting(s)") && said.contains("stat_interval"),
        "{said}"
    );
}

/// An arm that ends sets its setting back; tune.json records each arm's change and that it was
/// set back; the table has the fix's row.
#[test]
fn each_arm_sets_its_fix_back_and_tune_json_says_so() {
    if !two_cpus_online("each_arm_sets_its_fix_back") {
        return;
    }
    let before = knob();
    if before.parse::<u64>().unwrap() >= 10 {
        eprintln!("SKIP each_arm_sets_its_fix_back: vm.stat_interval is already {before}");
        return;
    }
    let _x = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "tune",
        "--fixes",
        "vmstat",
        "--rounds",
        "2",
        "-D",
        "1s",
        "--cpus",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(knob(), before);
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tune.json")).unwrap()).unwrap();
    let arms = record["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 4, "{record:#}");
    for arm in arms {
        let settings = arm["settings"].as_array().unwrap();
        match arm["treatment"].as_str().unwrap() {
            "baseline" => assert!(settings.is_empty(), "{arm:#}"),
            "vmstat" => {
                assert_eq!(settings.len(), 1, "{arm:#}");
                assert_eq!(settings[0]["file"], KNOB);
                assert_eq!(settings[0]["before"], before.as_str());
                assert_eq!(settings[0]["during"], "10");
                assert_eq!(settings[0]["restored"], true);
            }
            other => panic!("arm {other}"),
        }
        assert!(
            out.join(arm["dir"].as_str().unwrap())
                .join("run.json")
                .is_file()
        );
    }
    assert_eq!(record["fixes"][0]["name"], "vmstat");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("vmstat ")), "{stdout}");
    assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
}
