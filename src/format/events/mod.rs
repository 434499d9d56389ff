//! events.jsonl: one JSON object per line, in the order things happened. Every event carries
//! `type` and `time_ns` (CLOCK_MONOTONIC). Lines are written through at once: the log must
//! survive a crash of jitterlab.
//!
//! Here the format's types and the writer; the bounded reader, which must agree with them
//! line for line, is [`read`].

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

mod read;
pub use read::read_events;
pub(crate) use read::{MAX_LINE_BYTES, Scanned, scan_events};

pub const FILE_NAME: &str = "events.jsonl";

/// Everything events.jsonl can hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// Measurement starts: the first wakeups are due at `time_ns`.
    RunStart { time_ns: u64 },
    /// The run ended (`completed`, `interrupted` or `failed`).
    RunEnd { time_ns: u64, ended: String },
    /// One injection of the spike load: it held `cpu` from `start_ns` to `end_ns`.
    SpikeInjection {
        time_ns: u64,
        cpu: usize,
        index: u64,
        due_ns: u64,
        start_ns: u64,
        end_ns: u64,
        /// The spike thread's id (what a trace names it by); absent in older files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tid: Option<i32>,
    },
    /// A measuring thread stopped with an error.
    ThreadFailed {
        time_ns: u64,
        cpu: usize,
        message: String,
    },
    /// Something the reader of the results must know.
    Warning { time_ns: u64, message: String },
    /// A scenario phase began: its loads were started at `time_ns`.
    PhaseStart {
        time_ns: u64,
        /// Position of the phase in the scenario, from 0.
        index: usize,
        label: String,
        /// The load specs of the phase, as written.
        loads: Vec<String>,
    },
    /// A scenario phase ended: its loads were stopped and reaped by `time_ns`.
    PhaseEnd {
        time_ns: u64,
        index: usize,
        label: String,
    },
    /// A load with `loops=N` finished its loops by itself (docs/loads.md, "Loads that stop
    /// after a number of loops"); its phase, if it has one, may end with it.
    LoadFinished {
        /// When its worker was reaped.
        time_ns: u64,
        /// Its index in run.json `loads[]`.
        index: usize,
        /// The load spec as given.
        load: String,
        /// Its scenario phase; None for a load of the whole run.
        phase: Option<usize>,
        /// The loops its workers did in all (`loops` per worker times its workers).
        loops: u64,
        /// `loops=` as given: each worker's loops.
        loops_per_worker: u64,
    },
    /// A budget clause was violated (written once per violated clause when the run ends).
    BudgetBreach {
        time_ns: u64,
        /// The clause as the user wrote it, e.g. `p99.9<50us`.
        clause: String,
        /// What was measured, with its unit, e.g. `cpu1 p99.9 = 63.2 us`.
        actual: String,
    },
    /// A late wakeup reconstructed from the kernel trace (`--trace`).
    SpikeExplained(SpikeExplanation),
    /// One log interval of a noise thread: its exact noise time and gap count (`jitterlab
    /// noise`, written as the interval closes).
    NoiseInterval(super::noise::NoiseInterval),
    /// The min, mean and max of a block of one thread's samples (`run --summary-every N`,
    /// written as the block closes; a thread's last block may be shorter).
    WakeupSummary(super::wakeup_summary::WakeupSummary),
    /// An `--on-threshold` or `--on-end` action fired (or failed to).
    Action(super::actions::ActionEvent),
}

impl Event {
    /// When it happened (CLOCK_MONOTONIC), ns: what places it in a segment of a segmented run.
    pub fn time_ns(&self) -> u64 {
        match self {
            Event::RunStart { time_ns }
            | Event::RunEnd { time_ns, .. }
            | Event::SpikeInjection { time_ns, .. }
            | Event::ThreadFailed { time_ns, .. }
            | Event::Warning { time_ns, .. }
            | Event::PhaseStart { time_ns, .. }
            | Event::PhaseEnd { time_ns, .. }
            | Event::LoadFinished { time_ns, .. }
            | Event::BudgetBreach { time_ns, .. } => *time_ns,
            Event::SpikeExplained(x) => x.time_ns,
            Event::NoiseInterval(i) => i.time_ns,
            Event::WakeupSummary(s) => s.time_ns,
            Event::Action(a) => a.time_ns,
        }
    }
}

/// What the CPU did between a sample's due time and its wakeup, from the kernel trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpikeExplanation {
    pub time_ns: u64,
    pub cpu: usize,
    /// When the wakeup was due (CLOCK_MONOTONIC), ns.
    pub due_ns: u64,
    /// The sample's whole latency, ns.
    pub latency_ns: i64,
    /// Timer expiry minus the timer's programmed expiry, ns, when the trace had it.
    pub irq_latency_ns: Option<i64>,
    /// From the timer's expiry to the thread running in user space, ns.
    pub thread_latency_ns: Option<i64>,
    /// One line a person reads, e.g. "thread latency 1480 us: CPU held by perturb (pid 1234,
    /// FIFO 99) for 1470 us".
    pub verdict: String,
    /// Everything that held the CPU in the window, longest first.
    pub contributors: Vec<Contributor>,
}

impl SpikeExplanation {
    /// The class of the late wakeup's cause: the kind of what held the CPU longest (`irq`,
    /// `softirq`, `task`, `idle_exit`), or `no_event` when the trace showed nothing holding it.
    pub(crate) fn cause(&self) -> &'static str {
        match self.contributors.first().map(|c| c.kind.as_str()) {
            Some("irq") => "irq",
            Some("softirq") => "softirq",
            Some("task") => "task",
            Some("idle_exit") => "idle_exit",
            _ => "no_event",
        }
    }

    /// The contributor whose kernel stack was captured (the task that gave the late thread
    /// its CPU), with its stack, if any.
    pub(crate) fn culprit_stack(&self) -> Option<(&Contributor, &KernelStack)> {
        self.contributors
            .iter()
            .find_map(|c| c.stack.as_ref().map(|s| (c, s)))
    }
}

/// One thing that held a CPU while a wakeup was late.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contributor {
    /// `irq`, `softirq`, `task` or `idle_exit`; in noise runs also `nmi`, and `no_event` (time
    /// without any trace event: hardware, firmware or hypervisor).
    pub kind: String,
    /// IRQ handler name, softirq name, or task comm.
    pub name: String,
    pub pid: Option<i32>,
    /// `FIFO`, `RR`, `DEADLINE`, `OTHER`... for tasks.
    pub policy: Option<String>,
    pub prio: Option<i32>,
    pub duration_ns: u64,
    /// The task's kernel stack as it gave the CPU to the late measuring thread (BPF back end;
    /// absent when none was captured, and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<KernelStack>,
}

/// A kernel stack, as stored: its frames named from /proc/kallsyms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelStack {
    /// Innermost first: `function+0xoff` (`function+0xoff [module]`), or the address in hex
    /// (`0xffffffff81234567`) where no symbol names it.
    pub frames: Vec<String>,
    /// Why the frames are addresses, when the symbols were unavailable (hidden by
    /// kptr_restrict, /proc/kallsyms unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The bytes of an event file past which its bulk events (`wakeup_summary`, `noise_interval`:
/// one per block or log interval per CPU, the file's bulk) are no longer written: a quarter of
/// what its readers read ([`crate::input::EVENTS_MAX_BYTES`], 4 GiB), so that the results'
/// events (spikes, injections, actions, phases, warnings), always written whole, have three
/// times as much room and a run never writes an events.jsonl its own `report` refuses (issue
/// 39, sixth hostile re-run, E1: `-i 20us --summary-every 1` wrote 130 MB in 5 s, 4 GiB in
/// under three minutes). A segmented run's budget is per event file, and retention bounds the
/// files. What is not written is counted ([`EventsNotWritten`], run.json `events_not_written`)
/// and said once, as a `warning` event and in run.json's warnings.
pub(crate) const BULK_EVENTS_BUDGET_BYTES: u64 = crate::input::EVENTS_MAX_BYTES / 4;

/// The bulk events an event file's budget left out ([`BULK_EVENTS_BUDGET_BYTES`]), in run.json.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EventsNotWritten {
    /// The budget, bytes: the size of an event file past which its bulk events are dropped.
    pub(crate) budget_bytes: u64,
    /// `wakeup_summary` lines not written.
    pub(crate) wakeup_summaries: u64,
    /// `noise_interval` lines not written.
    pub(crate) noise_intervals: u64,
    /// `spike_explained` lines not written: past twice the budget (half of what the readers
    /// read), a run that explains most wakeups (`--trace --explain-above` near the median)
    /// counts them instead (eighth hostile re-run, E2: 9.7 MB/s, the readers' 4 GiB in 7
    /// minutes, and `report` then refused the whole run). Absent in files before it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) spike_explanations: u64,
    /// When the first was dropped (CLOCK_MONOTONIC), ns: the summaries after it are missing.
    pub(crate) first_time_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The bytes of an event file past which its spike explanations are counted, not written:
/// twice the bulk events' budget, half of what the readers read, so that the events always
/// written whole (spikes, injections, actions, phases, warnings) keep the other half.
pub(crate) fn explanations_budget(budget_bytes: u64) -> u64 {
    budget_bytes.saturating_mul(2)
}

impl EventsNotWritten {
    /// Adds another file's counts (a segmented run's).
    pub(crate) fn add(&mut self, other: &EventsNotWritten) {
        if self.is_empty() {
            self.first_time_ns = other.first_time_ns;
        }
        self.budget_bytes = other.budget_bytes;
        self.wakeup_summaries += other.wakeup_summaries;
        self.noise_intervals += other.noise_intervals;
        self.spike_explanations += other.spike_explanations;
    }

    /// Whether exactly one line was left out (the first: its time is kept).
    fn is_empty_but_one(&self) -> bool {
        self.wakeup_summaries + self.noise_intervals + self.spike_explanations == 1
    }

    /// Whether nothing was left out.
    pub(crate) fn is_empty(&self) -> bool {
        self.wakeup_summaries + self.noise_intervals + self.spike_explanations == 0
    }

    /// What to say of it, in run.json's warnings and the summary.
    pub(crate) fn warning(&self) -> String {
        format!(
            "events.jsonl reached its budget of {} for wakeup summaries and noise intervals (a quarter of the {} its readers read){}: {} wakeup_summary, {} noise_interval and {} spike_explained line(s) from {} ns on were not written (run.json `events_not_written`); every spike, injection, action and warning was; for fewer summaries give a larger --summary-every, or a larger --log-interval; for fewer explanations a higher --explain-above",
            crate::input::format_bytes(self.budget_bytes),
            crate::input::format_bytes(crate::input::EVENTS_MAX_BYTES),
            match self.spike_explanations {
                0 => String::new(),
                _ => format!(
                    ", and of {} for spike explanations",
                    crate::input::format_bytes(explanations_budget(self.budget_bytes))
                ),
            },
            self.wakeup_summaries,
            self.noise_intervals,
            self.spike_explanations,
            self.first_time_ns
        )
    }
}

/// Appends events to events.jsonl, keeping its bulk events within a budget
/// (`BULK_EVENTS_BUDGET_BYTES`, 1 GiB).
pub struct EventLog {
    file: File,
    /// Bytes written to the file.
    written: u64,
    budget_bytes: u64,
    not_written: EventsNotWritten,
}

impl EventLog {
    /// Appends to `file`, opened for appending (a run makes it with `ResultDir::create_file`).
    pub fn new(file: File) -> Self {
        Self::with_budget(file, BULK_EVENTS_BUDGET_BYTES)
    }

    /// Appends to `file`, its bulk events dropped past `budget_bytes` (tests use a small one).
    pub(crate) fn with_budget(file: File, budget_bytes: u64) -> Self {
        EventLog {
            file,
            written: 0,
            budget_bytes,
            not_written: EventsNotWritten {
                budget_bytes,
                ..Default::default()
            },
        }
    }

    /// Appends to the file `path`, made if missing, never through a link (O_NOFOLLOW): for
    /// tests that add events to a run they wrote; a run's events.jsonl is made by its ResultDir.
    pub fn create(path: &Path) -> io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        Ok(Self::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .custom_flags(crate::sys::file::O_NOFOLLOW)
                .open(path)?,
        ))
    }

    /// Appends `event`, unless it is a bulk event and the file has reached its budget: then it
    /// is counted (`EventLog::not_written`).
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        if self.written >= self.budget_bytes {
            let past_explanations = self.written >= explanations_budget(self.budget_bytes);
            let counter = match event {
                Event::WakeupSummary(_) => Some(&mut self.not_written.wakeup_summaries),
                Event::NoiseInterval(_) => Some(&mut self.not_written.noise_intervals),
                Event::SpikeExplained(_) if past_explanations => {
                    Some(&mut self.not_written.spike_explanations)
                }
                _ => None,
            };
            if let Some(counter) = counter {
                *counter += 1;
                if self.not_written.is_empty_but_one() {
                    self.not_written.first_time_ns = event.time_ns();
                }
                return Ok(());
            }
        }
        let mut line = serde_json::to_vec(event).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.written += line.len() as u64;
        Ok(())
    }

    /// The bulk events left out so far.
    pub(crate) fn not_written(&self) -> &EventsNotWritten {
        &self.not_written
    }
}

impl Event {
    /// Its `type` in events.jsonl.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::RunStart { .. } => "run_start",
            Event::RunEnd { .. } => "run_end",
            Event::SpikeInjection { .. } => "spike_injection",
            Event::ThreadFailed { .. } => "thread_failed",
            Event::Warning { .. } => "warning",
            Event::PhaseStart { .. } => "phase_start",
            Event::PhaseEnd { .. } => "phase_end",
            Event::LoadFinished { .. } => "load_finished",
            Event::BudgetBreach { .. } => "budget_breach",
            Event::SpikeExplained(_) => "spike_explained",
            Event::NoiseInterval(_) => "noise_interval",
            Event::WakeupSummary(_) => "wakeup_summary",
            Event::Action(_) => "action",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new events.jsonl in `dir` written through a log of `budget` bytes.
    fn log_with_budget(dir: &std::path::Path, budget: u64) -> (std::path::PathBuf, EventLog) {
        let path = dir.join(FILE_NAME);
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .unwrap();
        (path, EventLog::with_budget(file, budget))
    }

    /// Past its budget an event file drops the bulk events (summaries, noise intervals), counted
    /// with the first one's time, and keeps writing every other event whole (E1).
    #[test]
    fn bulk_events_past_the_budget_are_counted_not_written_and_the_rest_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut log) = log_with_budget(dir.path(), 2000);
        let summary = |t: u64| {
            Event::WakeupSummary(crate::format::wakeup_summary::WakeupSummary {
                time_ns: t,
                cpu: 0,
                first_seq: t,
                last_seq: t,
                samples: 1,
                dropped_records: 0,
                first_due_ns: t,
                last_due_ns: t,
                min_ns: 10,
                sum_ns: 10,
                mean_ns: 10.0,
                max_ns: 10,
                missed_periods: 0,
            })
        };
        for t in 0..100 {
            log.write(&summary(t)).unwrap();
            if t % 10 == 0 {
                log.write(&Event::Warning {
                    time_ns: t,
                    message: "kept".into(),
                })
                .unwrap();
            }
        }
        let events = read_events(&path).unwrap();
        let summaries = events
            .iter()
            .filter(|e| matches!(e, Event::WakeupSummary(_)))
            .count() as u64;
        let warnings = events
            .iter()
            .filter(|e| matches!(e, Event::Warning { .. }))
            .count();
        assert_eq!(warnings, 10, "every other event is written");
        let n = log.not_written();
        assert!(summaries > 0 && summaries < 100);
        assert_eq!(
            summaries + n.wakeup_summaries,
            100,
            "each summary written or counted"
        );
        assert_eq!(
            n.first_time_ns, summaries,
            "the first dropped is the one after the last kept"
        );
        assert_eq!(n.budget_bytes, 2000);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size < 2000 + 300 + 9 * 60, "{size} bytes");
    }

    /// E2: spike explanations, written whole up to twice the budget, are counted past it, so
    /// that a run explaining most of its wakeups never writes a file its readers refuse; the
    /// other events are still written.
    #[test]
    fn explanations_past_twice_the_budget_are_counted_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut log) = log_with_budget(dir.path(), 2000);
        let explained = |t: u64| {
            serde_json::from_str::<Event>(&format!(
                r#"{{"type":"spike_explained","time_ns":{t},"cpu":0,"due_ns":1,"latency_ns":4,"irq_latency_ns":null,"thread_latency_ns":null,"verdict":"v","contributors":[]}}"#
            ))
            .unwrap()
        };
        for t in 0..200 {
            log.write(&explained(t)).unwrap();
        }
        log.write(&Event::Warning {
            time_ns: 200,
            message: "kept".into(),
        })
        .unwrap();
        let events = read_events(&path).unwrap();
        let written = events
            .iter()
            .filter(|e| matches!(e, Event::SpikeExplained(_)))
            .count() as u64;
        let n = log.not_written();
        assert!(written > 0 && written < 200, "{written}");
        assert_eq!(written + n.spike_explanations, 200);
        assert_eq!(n.first_time_ns, written);
        assert!(matches!(events.last(), Some(Event::Warning { .. })));
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size < 4000 + 400, "{size} bytes");
        assert!(n.warning().contains("spike_explained"), "{}", n.warning());
    }

    /// An explanation as events.jsonl held it before stacks: it still parses, without one,
    /// and is written back the same.
    #[test]
    fn explanations_without_a_stack_parse_and_write_none() {
        let old = r#"{"type":"spike_explained","time_ns":5,"cpu":0,"due_ns":1,"latency_ns":4,"irq_latency_ns":null,"thread_latency_ns":null,"verdict":"v","contributors":[{"kind":"task","name":"x","pid":9,"policy":"FIFO","prio":99,"duration_ns":3}]}"#;
        let e: Event = serde_json::from_str(old).unwrap();
        let Event::SpikeExplained(x) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(x.contributors[0].stack, None);
        assert_eq!(x.culprit_stack(), None);
        assert_eq!(serde_json::to_string(&e).unwrap(), old);
    }

    #[test]
    fn a_stack_round_trips_with_its_note_only_when_there_is_one() {
        let mut c = Contributor {
            kind: "task".into(),
            name: "x".into(),
            pid: Some(9),
            policy: None,
            prio: None,
            duration_ns: 3,
            stack: Some(KernelStack {
                frames: vec!["schedule+0x4".into()],
                note: None,
            }),
        };
        let text = serde_json::to_string(&c).unwrap();
        assert!(
            text.ends_with(r#""stack":{"frames":["schedule+0x4"]}}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Contributor>(&text).unwrap(), c);
        c.stack.as_mut().unwrap().note = Some("hidden".into());
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains(r#""note":"hidden""#), "{text}");
        assert_eq!(serde_json::from_str::<Contributor>(&text).unwrap(), c);
    }
}
