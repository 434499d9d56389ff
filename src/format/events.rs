//! events.jsonl: one JSON object per line, in the order things happened. Every event carries
//! `type` and `time_ns` (CLOCK_MONOTONIC). Lines are written through at once: the log must
//! survive a crash of jitterlab.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

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
    pub fn cause(&self) -> &'static str {
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
    pub fn culprit_stack(&self) -> Option<(&Contributor, &KernelStack)> {
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

/// Appends events to events.jsonl.
pub struct EventLog {
    file: File,
}

impl EventLog {
    /// Appends to `file`, opened for appending (a run makes it with `ResultDir::create_file`).
    pub fn new(file: File) -> Self {
        EventLog { file }
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

    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        let mut line = serde_json::to_vec(event).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)
    }
}

/// Reads events.jsonl; lines of event types this version does not know are skipped. A result
/// directory's events (one file, or a segmented run's several) are read by
/// `results::loaded::read_events`.
pub fn read_events(path: &Path) -> io::Result<Vec<Event>> {
    read_events_capped(path, crate::input::EVENTS_MAX_BYTES)
}

/// [`read_events`] with a cap of its own: `max_bytes` of the file at most.
pub(crate) fn read_events_capped(path: &Path, max_bytes: u64) -> io::Result<Vec<Event>> {
    let text = crate::input::read_result_file(path, max_bytes)?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
