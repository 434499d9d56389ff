//! `jitterlab doctor` on the live machine, checked against facts this test finds itself.

use std::process::Command;

use serde_json::Value;

fn doctor(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .arg("doctor")
        .args(args)
        .output()
        .expect("run jitterlab");
    (
        out.status.code().expect("exited normally"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn doctor_json(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = doctor(&all);
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("doctor --json is not JSON ({e}):\n{stdout}\n{stderr}"));
    (code, json)
}

fn uname(flag: &str) -> String {
    let out = Command::new("uname").arg(flag).output().expect("run uname");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn cpuinfo() -> String {
    std::fs::read_to_string("/proc/cpuinfo").expect("read /proc/cpuinfo")
}

fn checks(doc: &Value) -> &Vec<Value> {
    doc["checks"].as_array().expect("checks is an array")
}

fn verdict<'a>(doc: &'a Value, id: &str) -> &'a str {
    checks(doc)
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))["verdict"]
        .as_str()
        .unwrap()
}

#[test]
fn facts_match_what_the_test_finds() {
    let (code, doc) = doctor_json(&[]);
    assert_eq!(doc["format"], 1);

    // CPUs: /proc/cpuinfo lists the online CPUs.
    let processors = cpuinfo()
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    assert_eq!(doc["online_cpus"].as_array().unwrap().len(), processors);
    assert_eq!(doc["measured_cpus"], doc["online_cpus"]);
    assert!(doc["cpu_count"].as_u64().unwrap() as usize >= processors);

    // The kernel, as uname reports it.
    assert_eq!(doc["kernel_release"], uname("-r"));
    let version = uname("-v");
    assert_eq!(doc["kernel_version"], version);
    let model = doc["preemption_model"].as_str().unwrap();
    if version.split_whitespace().any(|w| w == "PREEMPT_RT") {
        assert_eq!(model, "PREEMPT_RT");
        assert_eq!(verdict(&doc, "kernel.preemption"), "ok");
    } else if version.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC") {
        assert!(model.starts_with("PREEMPT_DYNAMIC ("), "{model}");
        assert_eq!(verdict(&doc, "kernel.preemption"), "warn");
    }

    // A hypervisor flag in /proc/cpuinfo means doctor names a hypervisor and warns.
    let flagged = cpuinfo()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"));
    if flagged {
        assert!(
            doc["hypervisor"].is_string(),
            "hypervisor flag set but hypervisor is {}",
            doc["hypervisor"]
        );
        assert_eq!(verdict(&doc, "virtualization.hypervisor"), "warn");
    } else if cfg!(target_arch = "x86_64") {
        assert!(doc["hypervisor"].is_null());
        assert_eq!(verdict(&doc, "virtualization.hypervisor"), "ok");
    }

    // The exit code and the summary agree with the verdicts.
    let count = |v: &str| checks(&doc).iter().filter(|c| c["verdict"] == v).count() as u64;
    for v in ["ok", "warn", "fail", "unknown"] {
        assert_eq!(
            doc["summary"][v].as_u64().unwrap(),
            count(v),
            "summary of {v}"
        );
    }
    assert_eq!(code, if count("fail") > 0 { 1 } else { 0 });
    assert_eq!(doc["ready"], count("fail") == 0);

    // Every check is complete, and only non-ok checks carry a fix.
    for c in checks(&doc) {
        for field in ["id", "area", "evidence", "why"] {
            assert!(!c[field].as_str().unwrap().is_empty(), "{field} of {c}");
        }
        assert_eq!(
            c["verdict"] == "ok",
            c["fix"].as_str().unwrap().is_empty(),
            "fix of {c}"
        );
    }
}

#[test]
fn root_can_use_real_time_features() {
    // As root (CapEff has every capability) the POSIX probes must all succeed; as another
    // user they may fail, so only root is checked.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    if !status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    {
        eprintln!("skipped: not running as root");
        return;
    }
    let (_, doc) = doctor_json(&[]);
    for id in [
        "posix.sched_fifo",
        "posix.sched_rr",
        "posix.mlockall",
        "posix.timers",
        "posix.rt_signals",
        "posix.pi_futex",
    ] {
        assert_eq!(verdict(&doc, id), "ok", "{id}");
    }
}

#[test]
fn measured_cpus_follow_the_option() {
    let (_, doc) = doctor_json(&["--cpus", "0"]);
    assert_eq!(doc["measured_cpus"], serde_json::json!([0]));
}

#[test]
fn bad_cpu_lists_are_usage_errors() {
    let (code, _, stderr) = doctor(&["--cpus", "4096"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not online"), "{stderr}");
    let (code, _, stderr) = doctor(&["--cpus", "zero"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn table_groups_checks_by_area() {
    let (code, stdout, _) = doctor(&[]);
    let (json_code, doc) = doctor_json(&[]);
    assert_eq!(code, json_code);
    for area in [
        "kernel",
        "scheduling",
        "cpu",
        "irq",
        "memory",
        "virtualization",
        "posix",
        "tracing",
    ] {
        assert!(
            stdout.lines().any(|l| l == area),
            "no '{area}' heading in:\n{stdout}"
        );
    }
    for c in checks(&doc) {
        assert!(stdout.contains(c["id"].as_str().unwrap()));
    }
    assert!(stdout.contains(" ok, "), "summary line missing:\n{stdout}");
}
