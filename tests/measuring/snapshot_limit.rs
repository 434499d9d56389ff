//! Issue 39's second hostile re-run, L-j: the snapshots of one run are bounded in volume, not
//! only in concurrency (`--deadline 15us --action-gap 1ms --on-threshold
//! snapshot:before=10s,after=0s` wrote 20 MB/s, 70 GB an hour). Past `--snapshot-limit` no
//! snapshot is written; the spikes after it are counted in run.json, in one events.jsonl
//! event and in the summary's warnings, never dropped unsaid.

use crate::common;

use common::*;
use jitterlab::format::actions::ActionEvent;
use jitterlab::format::events::Event;

#[test]
fn the_snapshots_stop_at_their_limit_and_the_rest_are_counted() {
    if !realtime_available("the_snapshots_stop_at_their_limit_and_the_rest_are_counted") {
        return;
    }
    let _lock = exclusive();
    let (_base, out) = temp_out();
    // A spike every 100 ms; each snapshot holds everything since the start (up to 10 s at
    // 1 ms, about 30 bytes a wakeup): 40 spikes would write about 2.4 MB.
    let o = jitterlab(&[
        "run",
        "--duration",
        "4s",
        "--cpus",
        "1",
        "--load",
        "spike:cpu=1,every=100ms,len=3ms,prio=99,offset=50.4ms",
        "--deadline",
        "1.5ms",
        "--action-gap",
        "1ms",
        "--on-threshold",
        "snapshot:before=10s,after=0s",
        "--snapshot-limit",
        "1MiB",
        "--out",
        out.to_str().unwrap(),
    ]);
    let said = text(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    let mut on_disk = 0;
    for f in std::fs::read_dir(out.join("snapshots")).unwrap() {
        on_disk += f.unwrap().metadata().unwrap().len();
    }
    assert!(
        on_disk <= 1 << 20,
        "{on_disk} bytes of snapshots, over 1 MiB"
    );
    let run = run_json(&out);
    let actions = &run["actions"];
    assert_eq!(actions["snapshot_limit_bytes"], 1 << 20, "{actions}");
    assert_eq!(actions["snapshot_bytes"], on_disk, "{actions}");
    let reached = actions["snapshot_limit_reached"]
        .as_str()
        .unwrap_or_default();
    assert!(reached.contains("--snapshot-limit 1 MiB"), "{actions}");
    let over = actions["on_threshold"][0]["over_limit"]
        .as_u64()
        .unwrap_or(0);
    assert!(over >= 1, "no spike counted past the limit: {actions}");

    let events: Vec<ActionEvent> = jitterlab::results::loaded::read_events(&out)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Event::Action(a) => Some(a),
            _ => None,
        })
        .collect();
    let written = events
        .iter()
        .filter(|e| e.outcome == "ok" && e.detail.starts_with("wrote snapshots/"))
        .count() as u64;
    assert_eq!(actions["snapshots_written"], written, "{actions}");
    assert!(
        events.iter().any(|e| e.outcome == "failed"
            && e.detail
                .starts_with("not written: the snapshots reached --snapshot-limit 1 MiB")),
        "the snapshot that did not fit is not in the events: {events:?}"
    );
    let told: Vec<&ActionEvent> = events
        .iter()
        .filter(|e| e.outcome == "over_limit")
        .collect();
    assert_eq!(told.len(), 1, "{events:?}");
    assert_eq!(told[0].over_limit, over);
    let warned = run["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .contains(&format!("{over} later spike(s) not snapshotted"))
    });
    assert!(warned, "{}", run["warnings"]);
    let summary = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        summary.contains("later spike(s) not snapshotted"),
        "the summary does not say it: {said}"
    );
}
