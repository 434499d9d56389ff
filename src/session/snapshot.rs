//! `--on-threshold snapshot`: the files of one snapshot in `snapshots/` (docs/result-format.md,
//! "Snapshots"). `spike-NNNN.csv` holds every measured CPU's samples of the window, with
//! `--trace` also their split; with `--trace`, `spike-NNNN.trace` holds the trace events the
//! back end delivered for the window and says what of it is missing, and
//! `spike-NNNN.explanations.jsonl` the explanations of the window's late samples. The texts are
//! made here from what the recorder kept ([`SnapshotWindow`]); session/actions.rs decides when.

use crate::format::actions::{SNAPSHOT_CSV_VERSION, SNAPSHOT_TRACE_VERSION};
use crate::format::events::Event;
use crate::recorder::{SnapshotWindow, SpikeStart};
use crate::results::ResultDir;
use std::fmt::Write as _;
use std::io::Write as _;

/// One snapshot to write: its number, spike and window (the run's clock, ns).
pub(super) struct Snapshot<'a> {
    pub number: u64,
    pub spike: &'a SpikeStart,
    pub from_ns: u64,
    pub to_ns: u64,
    /// `bpf` or `tracefs` with `--trace`.
    pub backend: Option<&'a str>,
}

impl Snapshot<'_> {
    fn name(&self, ext: &str) -> String {
        format!("spike-{:04}.{ext}", self.number)
    }

    /// The sample table: `spike-NNNN.csv`.
    fn csv(&self, w: &SnapshotWindow) -> String {
        let s = self.spike;
        let mut out = format!(
            "# jitterlab snapshot {SNAPSHOT_CSV_VERSION}: spike on CPU {} at due time {} ns, latency {} ns; window {}..{} ns (the run's clock)\ncpu,seq,due_ns,latency_ns,missed",
            s.cpu, s.due_ns, s.latency_ns, self.from_ns, self.to_ns
        );
        if w.traced {
            out.push_str(",irq_latency_ns,thread_latency_ns,wake_to_switch_ns,switch_to_user_ns");
        }
        out.push('\n');
        let cell = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
        for (cpu, x, split) in &w.samples {
            let _ = write!(
                out,
                "{cpu},{},{},{},{}",
                x.seq, x.expected_ns, x.latency_ns, x.missed
            );
            if w.traced {
                let _ = write!(
                    out,
                    ",{},{},{},{}",
                    cell(split.irq_latency_ns),
                    cell(split.thread_latency_ns),
                    cell(split.wake_to_switch_ns),
                    cell(split.switch_to_user_ns)
                );
            }
            out.push('\n');
        }
        out
    }

    /// The trace events: `spike-NNNN.trace`, and whether every CPU's window is complete.
    fn trace(&self, w: &SnapshotWindow, backend: &str) -> (String, bool) {
        let s = self.spike;
        let cpus: Vec<String> = w.trace.iter().map(|c| c.cpu.to_string()).collect();
        let mut out = format!(
            "# jitterlab snapshot trace {SNAPSHOT_TRACE_VERSION}: back end {backend}; spike on CPU {} at due time {} ns, latency {} ns; window {}..{} ns (CLOCK_MONOTONIC, the run's clock); CPUs {}\n",
            s.cpu,
            s.due_ns,
            s.latency_ns,
            self.from_ns,
            self.to_ns,
            cpus.join(",")
        );
        out.push_str("# the events the trace back end delivered for the window, per CPU in time order: time_ns cpu common_pid comm event field=value...\n");
        let mut complete = true;
        for c in &w.trace {
            let mut missing = Vec::new();
            if let Some(t) = c.not_kept_through_ns {
                missing.push(format!(
                    "events at or before {t} ns not kept (the snapshot ring's bounds)"
                ));
            }
            if c.lost_marks > 0 {
                missing.push(format!(
                    "{} lost mark(s) in the window: {} events lost{}",
                    c.lost_marks,
                    c.lost_events,
                    match c.unknown_counts {
                        0 => String::new(),
                        n => format!(" and more in {n} mark(s) without a count"),
                    }
                ));
            }
            if c.complete_until_ns <= self.to_ns {
                missing.push(format!(
                    "the trace had arrived only until {} ns",
                    c.complete_until_ns
                ));
            }
            complete &= missing.is_empty();
            let state = match missing.is_empty() {
                true => "complete".to_string(),
                false => format!("incomplete: {}", missing.join("; ")),
            };
            let _ = writeln!(out, "# cpu {}: {} events; {state}", c.cpu, c.lines.len());
        }
        let _ = write!(
            out,
            "# explanations: {} in {}",
            w.explanations.len(),
            self.name("explanations.jsonl")
        );
        if let Some(t) = w.explanations_not_kept_through_ns {
            complete = false;
            let _ = write!(
                out,
                "; incomplete: those due at or before {t} ns not kept (events.jsonl has every one)"
            );
        }
        out.push('\n');
        for c in &w.trace {
            for l in &c.lines {
                out.push_str(l);
                out.push('\n');
            }
        }
        (out, complete)
    }

    /// The explanations: `spike-NNNN.explanations.jsonl`, lines as in events.jsonl.
    fn explanations(&self, w: &SnapshotWindow) -> String {
        let mut out = String::new();
        for x in &w.explanations {
            if let Ok(line) = serde_json::to_string(&Event::SpikeExplained(x.clone())) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }

    /// Writes the snapshot's files in `snapshots/` when together they take at most `room`
    /// bytes (what `--snapshot-limit` leaves); what was written, as the action event's detail,
    /// or the error (naming the file).
    pub(super) fn write(&self, dir: &ResultDir, w: &SnapshotWindow, room: u64) -> Written {
        // Every text is made before a byte is written: the limit is checked on the whole.
        let mut files = vec![(self.name("csv"), self.csv(w))];
        let mut details = vec![format!(" ({} samples)", w.samples.len())];
        if let (true, Some(backend)) = (w.traced, self.backend) {
            let (text, complete) = self.trace(w, backend);
            let events: usize = w.trace.iter().map(|c| c.lines.len()).sum();
            let state = if complete {
                ""
            } else {
                ", incomplete: see its header"
            };
            files.push((self.name("trace"), text));
            details.push(format!(" ({events} trace events{state})"));
            files.push((self.name("explanations.jsonl"), self.explanations(w)));
            details.push(format!(" ({} explanations)", w.explanations.len()));
        }
        let total: u64 = files.iter().map(|(_, t)| t.len() as u64).sum();
        if total > room {
            return Written::TooLarge { bytes: total };
        }
        let mut bytes = 0;
        let result = (|| {
            let dir = dir
                .subdir("snapshots")
                .map_err(|e| format!("cannot make snapshots/: {e}"))?;
            let mut said = Vec::new();
            for ((name, text), d) in files.iter().zip(&details) {
                (|| -> std::io::Result<()> {
                    let mut f = dir.create_file(name)?;
                    f.write_all(text.as_bytes())?;
                    f.sync_data()
                })()
                .map_err(|e| format!("cannot write snapshots/{name}: {e}"))?;
                bytes += text.len() as u64;
                said.push(format!("snapshots/{name}{d}"));
            }
            Ok(format!("wrote {}", said.join(", ")))
        })();
        Written::Done { result, bytes }
    }
}

/// What [`Snapshot::write`] did.
pub(super) enum Written {
    /// Its files (`bytes` of them written, also when a later one failed).
    Done {
        result: Result<String, String>,
        bytes: u64,
    },
    /// Nothing: its files would take `bytes`, more than the limit leaves.
    TooLarge { bytes: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::events::SpikeExplanation;
    use crate::measure::Sample;
    use crate::recorder::{CpuTraceWindow, SplitParts};

    fn spike() -> SpikeStart {
        SpikeStart {
            cpu: 1,
            due_ns: 5_000,
            latency_ns: 3_000,
            seq: 4,
        }
    }

    fn window(traced: bool) -> SnapshotWindow {
        let sample = |seq: u64, latency_ns| Sample {
            seq,
            expected_ns: 1_000 * (seq + 1),
            latency_ns,
            missed: 0,
        };
        let split = SplitParts {
            irq_latency_ns: Some(100),
            thread_latency_ns: Some(2_900),
            wake_to_switch_ns: None,
            switch_to_user_ns: Some(-5),
        };
        SnapshotWindow {
            samples: vec![
                (1, sample(3, 20), SplitParts::default()),
                (1, sample(4, 3_000), split),
            ],
            traced,
            explanations: vec![SpikeExplanation {
                time_ns: 9,
                cpu: 1,
                due_ns: 5_000,
                latency_ns: 3_000,
                irq_latency_ns: Some(100),
                thread_latency_ns: Some(2_900),
                verdict: "v".into(),
                contributors: vec![],
            }],
            explanations_not_kept_through_ns: None,
            trace: vec![
                CpuTraceWindow {
                    cpu: 0,
                    lines: vec!["4000 0 1 ? sched_waking x".into()],
                    complete_until_ns: u64::MAX,
                    ..CpuTraceWindow::default()
                },
                CpuTraceWindow {
                    cpu: 1,
                    lines: vec!["4500 1 2 ? lost count=3".into()],
                    not_kept_through_ns: Some(4_100),
                    lost_marks: 1,
                    lost_events: 3,
                    complete_until_ns: 5_500,
                    ..CpuTraceWindow::default()
                },
            ],
        }
    }

    fn snapshot(spike: &SpikeStart) -> Snapshot<'_> {
        Snapshot {
            number: 7,
            spike,
            from_ns: 4_000,
            to_ns: 6_000,
            backend: Some("bpf"),
        }
    }

    #[test]
    fn the_csv_has_the_split_columns_only_when_traced() {
        let s = spike();
        let plain = snapshot(&s).csv(&window(false));
        assert_eq!(
            plain,
            "# jitterlab snapshot 1: spike on CPU 1 at due time 5000 ns, latency 3000 ns; window 4000..6000 ns (the run's clock)\n\
             cpu,seq,due_ns,latency_ns,missed\n1,3,4000,20,0\n1,4,5000,3000,0\n"
        );
        let traced = snapshot(&s).csv(&window(true));
        let lines: Vec<&str> = traced.lines().collect();
        assert_eq!(
            lines[1],
            "cpu,seq,due_ns,latency_ns,missed,irq_latency_ns,thread_latency_ns,wake_to_switch_ns,switch_to_user_ns"
        );
        assert_eq!(lines[2], "1,3,4000,20,0,,,,");
        assert_eq!(lines[3], "1,4,5000,3000,0,100,2900,,-5");
    }

    #[test]
    fn the_trace_file_says_what_of_the_window_is_missing() {
        let s = spike();
        let (text, complete) = snapshot(&s).trace(&window(true), "bpf");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "# jitterlab snapshot trace 1: back end bpf; spike on CPU 1 at due time 5000 ns, latency 3000 ns; window 4000..6000 ns (CLOCK_MONOTONIC, the run's clock); CPUs 0,1"
        );
        assert_eq!(lines[2], "# cpu 0: 1 events; complete");
        assert_eq!(
            lines[3],
            "# cpu 1: 1 events; incomplete: events at or before 4100 ns not kept (the snapshot ring's bounds); 1 lost mark(s) in the window: 3 events lost; the trace had arrived only until 5500 ns"
        );
        assert_eq!(
            lines[4],
            "# explanations: 1 in spike-0007.explanations.jsonl"
        );
        assert_eq!(
            &lines[5..],
            ["4000 0 1 ? sched_waking x", "4500 1 2 ? lost count=3"]
        );
        assert!(!complete);
        let mut w = window(true);
        w.trace.truncate(1);
        assert!(snapshot(&s).trace(&w, "tracefs").1);
        w.explanations_not_kept_through_ns = Some(4_500);
        let (text, complete) = snapshot(&s).trace(&w, "tracefs");
        assert!(!complete);
        assert!(text.contains("; incomplete: those due at or before 4500 ns not kept"));
    }

    #[test]
    fn explanations_are_events_jsonl_lines() {
        let s = spike();
        let text = snapshot(&s).explanations(&window(true));
        let events: Vec<Event> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            events,
            [Event::SpikeExplained(window(true).explanations[0].clone())]
        );
    }
}
