//! deploy/ checked with the real tools where they exist here: `promtool check config`,
//! `promtool check rules` and `promtool test rules` (a unit test of every alert),
//! `systemd-analyze verify` for the unit and its --trace drop-in, the Kubernetes manifests
//! parsed as YAML (python3's yaml module, a real YAML parser) and checked for what the
//! deployment needs, the Grafana dashboard parsed, and every metric name in deploy/ checked to
//! be one the code exports (the families of src/report/openmetrics.rs).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(path)
}

/// Whether `tool` runs here; when not, the test is skipped with the reason, or fails under
/// JITTERLAB_REQUIRE_RT=1 (CI installs every tool).
fn tool_available(tool: &str, test: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("JITTERLAB_REQUIRE_RT").as_deref() == Ok("1") {
            panic!("{test}: {tool} is missing and JITTERLAB_REQUIRE_RT=1 demands every check");
        }
        eprintln!(
            "SKIPPED {test}: {tool} is not installed (Debian: prometheus, systemd, python3-yaml)"
        );
    }
    ok
}

fn run(cmd: &mut Command) -> (bool, String) {
    let o = cmd.output().expect("the tool runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

#[test]
fn prometheus_config_rules_and_alert_unit_tests_pass_promtool() {
    if !tool_available(
        "promtool",
        "prometheus_config_rules_and_alert_unit_tests_pass_promtool",
    ) {
        return;
    }
    let dir = deploy("prometheus");
    for args in [
        ["check", "config", "prometheus.yml"],
        ["check", "rules", "jitterlab-alerts.yml"],
        ["test", "rules", "jitterlab-alerts.test.yml"],
    ] {
        let (ok, text) = run(Command::new("promtool").args(args).current_dir(&dir));
        assert!(ok, "promtool {args:?}:\n{text}");
    }
    // Debian's promtool is built without Kubernetes service discovery and rejects the field
    // itself; any other complaint is an error in the file.
    let (ok, text) = run(Command::new("promtool")
        .args(["check", "config", "prometheus-kubernetes.yml"])
        .current_dir(&dir));
    if !ok {
        assert!(
            text.contains("field kubernetes_sd_configs not found"),
            "prometheus-kubernetes.yml:\n{text}"
        );
        eprintln!(
            "NOTE: this promtool has no Kubernetes discovery; prometheus-kubernetes.yml checked as YAML only"
        );
        let parsed = yaml_documents(&dir.join("prometheus-kubernetes.yml"));
        assert_eq!(
            parsed[0]["scrape_configs"][0]["kubernetes_sd_configs"][0]["role"],
            "pod"
        );
    }
    // Every alert the issue asks for is there, and has a unit test.
    let tests = std::fs::read_to_string(dir.join("jitterlab-alerts.test.yml")).unwrap();
    for alert in [
        "JitterlabBudgetViolated",
        "JitterlabMissedPeriods",
        "JitterlabP999High",
        "JitterlabMonitorDown",
    ] {
        assert!(
            tests.contains(&format!("alertname: {alert}")),
            "{alert} has no test"
        );
    }
}

/// The unit as installed, but starting the binary just built (systemd-analyze checks that
/// ExecStart's program exists), in `dir`.
fn unit_in(dir: &Path, with_trace: bool) -> PathBuf {
    let bin = env!("CARGO_BIN_EXE_jitterlab");
    let read = |name: &str| {
        std::fs::read_to_string(deploy("systemd").join(name))
            .unwrap()
            .replace("/usr/local/bin/jitterlab", bin)
    };
    let unit = dir.join("jitterlab-monitor.service");
    std::fs::write(&unit, read("jitterlab-monitor.service")).unwrap();
    if with_trace {
        let d = dir.join("jitterlab-monitor.service.d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("trace.conf"), read("trace.conf")).unwrap();
    }
    unit
}

#[test]
fn the_systemd_unit_verifies_and_keeps_only_the_capabilities_it_needs() {
    let test = "the_systemd_unit_verifies_and_keeps_only_the_capabilities_it_needs";
    if !tool_available("systemd-analyze", test) {
        return;
    }
    for with_trace in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let unit = unit_in(dir.path(), with_trace);
        let (ok, text) = run(Command::new("systemd-analyze").arg("verify").arg(&unit));
        // Unknown keys and bad values are only warnings to systemd: none is allowed here.
        assert!(ok && text.trim().is_empty(), "trace: {with_trace}\n{text}");
    }
    let unit = std::fs::read_to_string(deploy("systemd/jitterlab-monitor.service")).unwrap();
    let values = |key: &str| -> Vec<String> {
        unit.lines()
            .filter_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        values("CapabilityBoundingSet"),
        ["CAP_SYS_NICE CAP_IPC_LOCK"]
    );
    assert_eq!(values("AmbientCapabilities"), ["CAP_SYS_NICE CAP_IPC_LOCK"]);
    assert_eq!(values("ProtectSystem"), ["strict"]);
    assert_eq!(values("NoNewPrivileges"), ["yes"]);
    // RestrictRealtime=yes would refuse SCHED_FIFO: the unit would measure nothing.
    assert_eq!(values("RestrictRealtime"), ["no"]);
    let exec = &values("ExecStart")[0];
    assert!(
        exec.contains(" monitor ") && exec.contains("--listen 127.0.0.1:9467"),
        "{exec}"
    );
    let trace = std::fs::read_to_string(deploy("systemd/trace.conf")).unwrap();
    assert!(trace.contains("ReadWritePaths=/sys/kernel/tracing"));
    assert!(
        trace
            .lines()
            .any(|l| l.starts_with("ExecStart=") && l.contains("--trace"))
    );
    assert!(
        !trace.contains("CapabilityBoundingSet"),
        "the drop-in adds no capability"
    );
}

/// The YAML documents of a file, as JSON values, parsed by python3's yaml (PyYAML).
fn yaml_documents(path: &Path) -> Vec<Value> {
    let o = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "{} is not valid YAML: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn python_yaml_available(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("JITTERLAB_REQUIRE_RT").as_deref() == Ok("1") {
            panic!(
                "{test}: python3 with yaml is missing and JITTERLAB_REQUIRE_RT=1 demands every check"
            );
        }
        eprintln!(
            "SKIPPED {test}: python3 with its yaml module is not installed (Debian: python3-yaml)"
        );
    }
    ok
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn the_kubernetes_manifests_have_what_the_deployment_needs() {
    let test = "the_kubernetes_manifests_have_what_the_deployment_needs";
    if !python_yaml_available(test) {
        return;
    }
    let docs = yaml_documents(&deploy("kubernetes/daemonset.yaml"));
    let of_kind = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
    };
    for d in &docs {
        assert!(
            d["apiVersion"].is_string() && d["metadata"]["name"].is_string(),
            "{d}"
        );
    }
    let ds = of_kind("DaemonSet");
    assert_eq!(ds["apiVersion"], "apps/v1");
    let pod_labels = &ds["spec"]["template"]["metadata"]["labels"];
    assert_eq!(
        &ds["spec"]["selector"]["matchLabels"], pod_labels,
        "the selector picks the pods"
    );
    let pod = &ds["spec"]["template"]["spec"];
    assert!(
        pod["nodeSelector"]
            .as_object()
            .is_some_and(|m| !m.is_empty())
    );
    assert!(pod["tolerations"].as_array().is_some_and(|t| !t.is_empty()));
    let c = &pod["containers"][0];
    assert!(c["image"].is_string());
    let caps = &c["securityContext"]["capabilities"];
    assert_eq!(strings(&caps["drop"]), ["ALL"]);
    let mut added = strings(&caps["add"]);
    added.sort();
    assert_eq!(
        added,
        ["IPC_LOCK", "SYS_NICE"],
        "exactly the two capabilities"
    );
    assert_ne!(c["securityContext"]["privileged"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    // The tracefs mount for --trace.
    let tracefs = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["hostPath"]["path"] == "/sys/kernel/tracing")
        .expect("a tracefs hostPath volume");
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| { m["name"] == tracefs["name"] && m["mountPath"] == "/sys/kernel/tracing" }),
        "tracefs mounted where jitterlab looks for it"
    );
    // Listening on the pod IP needs --listen-public; the port is the one declared and scraped.
    let args = strings(&c["args"]);
    assert_eq!(args[0], "monitor");
    let listen = args[args.iter().position(|a| *a == "--listen").unwrap() + 1];
    assert!(
        args.contains(&"--listen-public"),
        "{listen} is not loopback"
    );
    let port = listen.rsplit(':').next().unwrap();
    let container_port = &c["ports"][0];
    assert_eq!(container_port["containerPort"].to_string(), port);
    let annotations = &ds["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], port);

    let svc = of_kind("Service");
    assert_eq!(&svc["spec"]["selector"], pod_labels);
    assert_eq!(
        svc["spec"]["ports"][0]["targetPort"],
        container_port["name"]
    );

    let pm = &yaml_documents(&deploy("kubernetes/podmonitor.yaml"))[0];
    assert_eq!(pm["kind"], "PodMonitor");
    assert_eq!(pm["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(&pm["spec"]["selector"]["matchLabels"], pod_labels);
    assert_eq!(
        pm["spec"]["podMetricsEndpoints"][0]["port"],
        container_port["name"]
    );
    assert_eq!(pm["metadata"]["namespace"], ds["metadata"]["namespace"]);
}

/// The metric families the code exports: the `name: "..."` of src/report/openmetrics.rs.
fn exported_families() -> Vec<String> {
    // The families of every run, and each kind's own (`format/kind/<kind>.rs`, issue 41).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut src = std::fs::read_to_string(root.join("report/openmetrics.rs")).unwrap();
    for entry in std::fs::read_dir(root.join("format/kind")).unwrap() {
        src += &std::fs::read_to_string(entry.unwrap().path()).unwrap();
    }
    src.lines()
        .filter_map(|l| l.trim().strip_prefix("name: \""))
        .filter_map(|l| l.split('"').next())
        .map(str::to_string)
        .collect()
}

/// Every `jitterlab_...` word in `text`.
fn metric_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("jitterlab_") {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            out.push(tail[..len].to_string());
        }
        rest = &tail[len..];
    }
    out
}

#[test]
fn every_metric_in_deploy_is_exported_and_the_dashboard_parses() {
    let families = exported_families();
    assert!(families.contains(&"jitterlab_wakeup_latency_seconds".to_string()));
    let family_of = |word: &str| -> Option<String> {
        let known = |n: &str| families.iter().any(|f| f == n);
        if known(word) {
            return Some(word.to_string());
        }
        // A histogram's series: _bucket, _sum, _count.
        ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|s| word.strip_suffix(s))
            .find(|base| known(base))
            .map(str::to_string)
    };
    let dashboard_path = deploy("grafana/jitterlab-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&dashboard_path).unwrap())
        .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut used = Vec::new();
    for p in panels {
        let title = p["title"].as_str().expect("a title");
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}");
        for t in targets {
            let expr = t["expr"].as_str().expect("a PromQL expr");
            let words = metric_words(expr);
            assert!(
                !words.is_empty(),
                "{title}: {expr} names no jitterlab metric"
            );
            used.extend(words);
        }
    }
    // What the issue asks the dashboard to show.
    for needed in [
        "jitterlab_wakeup_latency_quantile_seconds",
        "jitterlab_wakeup_latency_max_seconds",
        "jitterlab_missed_periods_total",
        "jitterlab_late_wakeups_total",
    ] {
        assert!(
            used.iter().any(|u| u == needed),
            "the dashboard shows no {needed}"
        );
    }
    let mut files = vec![dashboard_path];
    for f in [
        "prometheus/jitterlab-alerts.yml",
        "prometheus/jitterlab-alerts.test.yml",
        "kubernetes/daemonset.yaml",
        "kubernetes/podmonitor.yaml",
        "systemd/jitterlab-monitor.service",
    ] {
        files.push(deploy(f));
    }
    let mut checked = 0;
    for f in &files {
        for word in metric_words(&std::fs::read_to_string(f).unwrap()) {
            assert!(
                family_of(&word).is_some(),
                "{}: {word} is not a metric jitterlab exports ({families:?})",
                f.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked} metric names found in deploy/");
}
