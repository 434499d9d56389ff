//! A run's load logs are bounded (issue 39, F6: `run --load exec:yes` wrote 1.06 GB into
//! `loads/0-exec.log` in 2 s, ~1.9 TB an hour). Each log is `loads/<k>-<name>.log` and its
//! older part `.log.1`, at most 16 MiB each, as a monitor's are at its bound; a log begun anew
//! says where in the output it begins, and run.json `loads[].log` counts what was dropped.

use crate::common;

use common::*;

/// The bound of each of a run's two log files.
const BOUND: u64 = 16 * 1024 * 1024;

#[test]
fn a_runs_load_log_keeps_within_its_bound_and_says_what_it_dropped() {
    let _x = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "2s",
        "--load",
        "exec:yes",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let logs = out.join("loads");
    let latest = std::fs::read(logs.join("0-exec.log")).unwrap();
    let older = std::fs::read(logs.join("0-exec.log.1")).unwrap_or_else(|e| {
        panic!(
            "no rotation: {e}; 0-exec.log is {} bytes",
            std::fs::metadata(logs.join("0-exec.log")).unwrap().len()
        )
    });
    assert!(
        latest.len() as u64 <= BOUND && older.len() as u64 <= BOUND,
        "{} and {} bytes",
        older.len(),
        latest.len()
    );
    let run = run_json(&out);
    let log = &run["loads"][0]["log"];
    let (output, dropped) = (
        log["output_bytes"].as_u64().unwrap(),
        log["dropped_bytes"].as_u64().unwrap(),
    );
    assert_eq!(log["bound_bytes"], BOUND, "{log}");
    assert!(dropped > 0, "{log}");
    // Each file begins with where it continues the output; the older one where the kept part
    // begins, which is what was dropped before it. What the files keep is the rest.
    let header_of = |bytes: &[u8]| -> (u64, usize) {
        let end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        let line = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let from = line
            .strip_prefix("[jitterlab: this file continues the load's output from byte ")
            .unwrap_or_else(|| panic!("no header: {line}"));
        (from.split(' ').next().unwrap().parse().unwrap(), end)
    };
    let (older_from, older_header) = header_of(&older);
    let (latest_from, latest_header) = header_of(&latest);
    assert_eq!(older_from, dropped, "{log}");
    assert_eq!(
        latest_from,
        older_from + (older.len() - older_header) as u64
    );
    assert_eq!(
        output,
        latest_from + (latest.len() - latest_header) as u64,
        "{log}"
    );
    assert!(
        latest[latest_header..]
            .iter()
            .all(|&b| b == b'y' || b == b'\n')
    );
    let warned = run["warnings"].as_array().unwrap().iter().any(|w| {
        let w = w.as_str().unwrap();
        w.contains("load 0 'exec:yes'") && w.contains(&format!("{dropped} bytes were dropped"))
    });
    assert!(warned, "{}", run["warnings"]);
}

/// Issue 39 L-i: an exec load whose two programs exited 1 (chrt's EPERM) was summed up as
/// "ended by itself after 0.1 s (exit status 0)": the worker's status. The end now says the
/// programs' exits, how many failed and the last one's status, in run.json and the summary.
#[test]
fn an_exec_load_that_ended_by_itself_says_how_its_programs_exited() {
    let _x = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        "0",
        "--load",
        "exec[workers=2]:sh -c 'exit 3'",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_json(&out);
    let load = &run["loads"][0];
    assert_eq!(load["ended"], "exited", "{load}");
    let said = "('sh': 2 exits, 2 with a non-zero status; the last exit status 3)";
    let reason = load["end_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("ended by itself after ") && reason.ends_with(said),
        "{reason}"
    );
    // The summary wraps its lines: compared with the spaces and line breaks made one.
    let flat = text(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(said), "the summary says it: {}", text(&o));
    let failed = load["throughput"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "failed exits")
        .unwrap_or_else(|| panic!("{load}"));
    assert_eq!(failed["value"], 2.0, "{load}");
}
