//! events.jsonl: one JSON object per line, in the order things happened. Every event carries
//! `type` and `time_ns` (CLOCK_MONOTONIC). Lines are written through at once: the log must
//! survive a crash of jitterlab.
//!
//! One concern (issue 41's near-limit files): the events.jsonl format, its types with the
//! writer and the bounded reader that must agree on them line for line; about 125 lines are
//! tests.

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

/// The longest line of events.jsonl read as an event: a longer line is skipped and counted,
/// never held (its bytes are read past). The longest event jitterlab writes, a spike
/// explanation with its contributors and a kernel stack, takes a few KiB.
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

/// What one pass over event files met, line by line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// Lines handed over as events.
    pub events: u64,
    /// Lines of a type the reader did not ask for, counted by their `type` and not parsed.
    pub(crate) passed_over: u64,
    /// Lines that are no event this version reads (another version's type, a line without a
    /// `type`, or not JSON at all): skipped, as they always were.
    pub(crate) unreadable: u64,
    /// Lines of a type this version knows ([`KINDS`]) and the reader asked for that do not
    /// parse as that event (a field of the wrong type, a torn line): skipped, and counted
    /// apart from [`Scanned::unreadable`], for they are damage, not another version's event
    /// (twelfth hostile re-run of issue 39, M12-c: the report's shares silently covered the
    /// rest).
    pub(crate) damaged: u64,
    /// The first damaged line's type.
    pub(crate) damaged_kind: Option<&'static str>,
    /// The `spike_explained` events handed over, when the reader asked for them (None when it
    /// did not): checked against run.json's count by `results::loaded`.
    pub(crate) explanations: Option<u64>,
    /// Lines longer than [`MAX_LINE_BYTES`]: skipped without being held.
    pub(crate) too_long: u64,
    /// Lines that are not UTF-8 text (a flipped byte, a multi-byte character torn by a full
    /// disk): read with each such byte replaced by U+FFFD, so that a line whose JSON is
    /// whole still counts and one that is not is [`Scanned::damaged`] or unreadable like any
    /// other (thirteenth hostile re-run, L13-d: one such byte made `report` refuse the whole
    /// run, and a multi-run report every run, exit 2, while a damaged line of UTF-8 text is
    /// counted and left out).
    pub(crate) not_text: u64,
}

impl Scanned {
    /// Adds another file's counts.
    pub(crate) fn add(&mut self, other: Scanned) {
        self.events += other.events;
        self.passed_over += other.passed_over;
        self.unreadable += other.unreadable;
        self.damaged += other.damaged;
        self.damaged_kind = self.damaged_kind.or(other.damaged_kind);
        self.explanations = match (self.explanations, other.explanations) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.too_long += other.too_long;
        self.not_text += other.not_text;
    }
}

/// Every event type this version reads (`type` in events.jsonl), as [`Event::kind`] names
/// them: a line of one of these that does not parse is damaged ([`Scanned::damaged`]); a line
/// of another type is another version's, skipped without a word.
pub(crate) const KINDS: [&str; 13] = [
    "run_start",
    "run_end",
    "spike_injection",
    "thread_failed",
    "warning",
    "phase_start",
    "phase_end",
    "load_finished",
    "budget_breach",
    "spike_explained",
    "noise_interval",
    "wakeup_summary",
    "action",
];

/// The type of a line that did not parse as an event, when it is one of [`KINDS`].
fn known_kind(peeked: Option<&str>, text: &str) -> Option<&'static str> {
    let kind = match peeked {
        Some(kind) => kind.to_string(),
        // `type` not first (a file written by another tool): the line's JSON, if it is some.
        None => serde_json::from_str::<serde_json::Value>(text)
            .ok()?
            .get("type")?
            .as_str()?
            .to_string(),
    };
    KINDS.iter().copied().find(|k| *k == kind)
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

/// Reads the events of one file into a Vec: for tests and small files. The readers of a
/// result directory stream its events instead (`results::loaded::scan_events`), keeping only
/// what they show, in memory that does not grow with the file.
pub fn read_events(path: &Path) -> io::Result<Vec<Event>> {
    let mut out = Vec::new();
    scan_events(path, crate::input::EVENTS_MAX_BYTES, &|_| true, &mut |e| {
        out.push(e)
    })?;
    Ok(out)
}

/// Streams the events of the file at `path` (a result directory's file: regular, not a link)
/// to `visit`, in file order, `max_bytes` of it at most (a larger file is refused, as one
/// that grows past it while read). One line is held at a time, and at most
/// [`MAX_LINE_BYTES`] of it. A line whose `type` `wants` refuses is counted and not parsed
/// (jitterlab writes `type` first; a line that does not start so is parsed, then asked).
/// Lines of event types this version does not know are skipped. A leading byte-order mark is
/// ignored; a line that is not UTF-8 is read with its bad bytes replaced and counted
/// ([`Scanned::not_text`]), as a damaged line is, not a refusal of the whole file.
pub(crate) fn scan_events(
    path: &Path,
    max_bytes: u64,
    wants: &dyn Fn(&str) -> bool,
    visit: &mut dyn FnMut(Event),
) -> io::Result<Scanned> {
    use crate::input::ReadError;
    use std::io::{BufRead, Read};
    let file = crate::input::open_result_file(path)?;
    if file.metadata()?.len() > max_bytes {
        return Err(ReadError::TooLarge { max_bytes }.into());
    }
    let mut reader = io::BufReader::with_capacity(256 << 10, file.take(max_bytes + 1));
    let mut scanned = Scanned {
        explanations: wants("spike_explained").then_some(0),
        ..Scanned::default()
    };
    // The line being gathered (at most MAX_LINE_BYTES), and whether it outgrew that.
    let mut line: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut read: u64 = 0;
    let mut first = true;
    loop {
        let buf = reader.fill_buf()?;
        let done = buf.is_empty();
        let (chunk, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, done),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE_BYTES {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(ended && !done);
        reader.consume(used);
        read += used as u64;
        if read > max_bytes {
            return Err(ReadError::TooLarge { max_bytes }.into());
        }
        if !ended {
            continue;
        }
        if too_long {
            scanned.too_long += 1;
        } else if !(done && line.is_empty()) {
            let lossy;
            let mut text = match std::str::from_utf8(&line) {
                Ok(text) => text,
                Err(_) => {
                    scanned.not_text += 1;
                    lossy = String::from_utf8_lossy(&line);
                    &*lossy
                }
            };
            if first {
                text = text.strip_prefix('\u{feff}').unwrap_or(text);
            }
            take_line(
                text.strip_suffix('\r').unwrap_or(text),
                wants,
                visit,
                &mut scanned,
            );
        }
        if done {
            return Ok(scanned);
        }
        first = false;
        too_long = false;
        line.clear();
    }
}

/// A line as an event. The many-per-run types are read straight into their struct when the line
/// starts with their `type` (the struct ignores the `type` key): the same event, without serde
/// buffering the whole line first as it does to find an internally tagged enum's tag.
fn parse(peeked: Option<&str>, text: &str) -> serde_json::Result<Event> {
    match peeked {
        Some("spike_explained") => serde_json::from_str(text).map(Event::SpikeExplained),
        Some("noise_interval") => serde_json::from_str(text).map(Event::NoiseInterval),
        Some("wakeup_summary") => serde_json::from_str(text).map(Event::WakeupSummary),
        Some("action") => serde_json::from_str(text).map(Event::Action),
        _ => serde_json::from_str(text),
    }
}

/// One line of events.jsonl, counted in `scanned` and handed to `visit` when it is a wanted event.
fn take_line(
    text: &str,
    wants: &dyn Fn(&str) -> bool,
    visit: &mut dyn FnMut(Event),
    scanned: &mut Scanned,
) {
    let peeked = text
        .strip_prefix("{\"type\":\"")
        .and_then(|rest| rest.split_once('"'))
        .map(|(kind, _)| kind);
    if peeked.is_some_and(|kind| !wants(kind)) {
        scanned.passed_over += 1;
        return;
    }
    match parse(peeked, text) {
        Ok(e) if wants(e.kind()) => {
            scanned.events += 1;
            if let (Event::SpikeExplained(_), Some(n)) = (&e, &mut scanned.explanations) {
                *n += 1;
            }
            visit(e)
        }
        Ok(_) => scanned.passed_over += 1,
        Err(_) if text.trim().is_empty() => {}
        Err(_) => match known_kind(peeked, text) {
            Some(kind) if !wants(kind) => scanned.passed_over += 1,
            Some(kind) => {
                scanned.damaged += 1;
                scanned.damaged_kind.get_or_insert(kind);
            }
            None => scanned.unreadable += 1,
        },
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

    fn scan(bytes: &[u8], wants: &dyn Fn(&str) -> bool) -> io::Result<(Vec<Event>, Scanned)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, bytes).unwrap();
        let mut out = Vec::new();
        let scanned = scan_events(&path, 1 << 30, wants, &mut |e| out.push(e))?;
        Ok((out, scanned))
    }

    /// A byte that is not UTF-8 damages its line, not the file (thirteenth hostile re-run,
    /// L13-d: `report` refused the whole run, exit 2): the line is read with it replaced and
    /// counted; a whole JSON line still counts, a torn one is damaged as any other.
    #[test]
    fn a_line_that_is_not_utf8_is_counted_not_fatal() {
        let mut text = b"{\"type\":\"run_start\",\"time_ns\":1}\n".to_vec();
        text.extend_from_slice(b"{\"type\":\"warning\",\"time_ns\":2,\"message\":\"caf\xc3\"}\n");
        text.extend_from_slice(b"{\"type\":\"run_end\",\"time_ns\":3,\"ended\":\"completed\"}\n");
        text.extend_from_slice(b"{\"type\":\"warning\",\"time_ns\":4,\"message\":\"caf\xc3");
        let (events, scanned) = scan(&text, &|_| true).unwrap();
        let times: Vec<u64> = events.iter().map(Event::time_ns).collect();
        assert_eq!(times, [1, 2, 3]);
        match &events[1] {
            Event::Warning { message, .. } => assert_eq!(message, "caf\u{fffd}"),
            other => panic!("{other:?}"),
        }
        assert_eq!((scanned.not_text, scanned.damaged), (2, 1));
    }

    /// Line by line: a BOM, CRLF, a torn last line without a newline, a blank line, another
    /// version's type, a line over the cap (skipped and counted), types not wanted (counted,
    /// not parsed, even when damaged), a line not written `type` first (parsed, then asked).
    #[test]
    fn lines_are_read_one_at_a_time_and_counted() {
        let long = format!(
            "{{\"type\":\"warning\",\"time_ns\":9,\"message\":\"{}\"}}",
            "x".repeat(MAX_LINE_BYTES)
        );
        let text = format!(
            "\u{feff}{{\"type\":\"run_start\",\"time_ns\":1}}\r\n\n{{\"type\":\"future\",\"time_ns\":2}}\n{long}\n{{\"type\":\"action\",damaged\n{{\"time_ns\":3,\"type\":\"warning\",\"message\":\"m\"}}\n{{\"type\":\"run_end\",\"time_ns\":4,\"ended\":\"completed\"}}\n{{\"type\":\"run_e"
        );
        let (events, scanned) = scan(text.as_bytes(), &|_| true).unwrap();
        let times: Vec<u64> = events.iter().map(Event::time_ns).collect();
        assert_eq!(times, [1, 3, 4]);
        assert_eq!(
            scanned,
            Scanned {
                events: 3,
                passed_over: 0,
                // `future` (another version's type) and the torn last line (no type read).
                unreadable: 2,
                // The `action` that does not parse: a known type, damaged.
                damaged: 1,
                damaged_kind: Some("action"),
                explanations: Some(0),
                too_long: 1,
                not_text: 0,
            }
        );
        let (events, scanned) =
            scan(text.as_bytes(), &|k| k != "action" && k != "warning").unwrap();
        assert_eq!(
            events.iter().map(Event::time_ns).collect::<Vec<_>>(),
            [1, 4]
        );
        assert_eq!((scanned.passed_over, scanned.unreadable), (2, 2));
        // A line exactly at the cap is read.
        let warning = |n| {
            format!(
                "{{\"type\":\"warning\",\"time_ns\":9,\"message\":\"{}\"}}",
                "x".repeat(n)
            )
        };
        let at_cap = warning(MAX_LINE_BYTES - warning(0).len());
        assert_eq!(at_cap.len(), MAX_LINE_BYTES);
        let (events, scanned) = scan(format!("{at_cap}\n").as_bytes(), &|_| true).unwrap();
        assert_eq!((events.len(), scanned.too_long), (1, 0));
    }

    /// [`KINDS`] is every type [`Event`] reads: serde's own list of its variants, taken from
    /// the error it gives for an unknown type.
    #[test]
    fn kinds_are_the_events_types() {
        let e = serde_json::from_str::<Event>(r#"{"type":"no_such_type"}"#).unwrap_err();
        let text = e.to_string();
        let listed = text
            .split("expected one of ")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"));
        let mut serde: Vec<&str> = listed
            .split(", ")
            .map(|k| k.trim_matches(|c: char| c == '`' || !c.is_ascii() || c == ' '))
            .map(|k| k.split('`').next().unwrap())
            .collect();
        let mut kinds = KINDS.to_vec();
        serde.sort_unstable();
        kinds.sort_unstable();
        assert_eq!(serde, kinds, "{text}");
    }

    /// A line of a known type that does not parse is damage, counted apart from another
    /// version's types and lines without a type (the hostile re-run's `"duration_ns": "x"`),
    /// whether `type` comes first or not; one of a type not asked for is passed over unparsed;
    /// the explanations read are counted when asked for.
    #[test]
    fn damaged_lines_of_a_known_type_are_counted_apart() {
        let good = r#"{"type":"spike_explained","time_ns":5,"cpu":0,"due_ns":1,"latency_ns":4,"irq_latency_ns":null,"thread_latency_ns":null,"verdict":"v","contributors":[{"kind":"task","name":"a","pid":1,"policy":null,"prio":null,"duration_ns":3}]}"#;
        let bad = good.replace(r#""duration_ns":3"#, r#""duration_ns":"x""#);
        let bad_late_type = format!(
            "{{\"time_ns\":6,{}",
            bad.replace(r#""time_ns":5,"#, "").trim_start_matches('{')
        );
        assert!(!bad_late_type.starts_with("{\"type\""), "{bad_late_type}");
        let text = format!(
            "{good}\n{bad}\n{bad_late_type}\n{{\"type\":\"future\",\"x\":1}}\nnot json\n{{\"type\":\"warning\",\"time_ns\":\"x\"}}\n"
        );
        let (events, scanned) = scan(text.as_bytes(), &|_| true).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(
            (
                scanned.damaged,
                scanned.damaged_kind,
                scanned.unreadable,
                scanned.explanations
            ),
            (3, Some("spike_explained"), 2, Some(1))
        );
        let (_, scanned) = scan(text.as_bytes(), &|k| k == "warning").unwrap();
        assert_eq!(
            (
                scanned.damaged,
                scanned.damaged_kind,
                scanned.passed_over,
                scanned.explanations
            ),
            (1, Some("warning"), 4, None)
        );
    }

    #[test]
    fn a_file_too_large_is_refused_and_a_line_not_utf8_counted() {
        // A byte that is not UTF-8 damages its line, not the file (thirteenth hostile re-run,
        // L13-d: the file was refused whole): the line, no JSON, is unreadable and counted.
        let (events, scanned) = scan(
            b"{\"type\":\"run_start\",\"time_ns\":1}\nab\xffc\n",
            &|_| true,
        )
        .unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!((scanned.not_text, scanned.unreadable), (1, 1));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, "{}\n{}\n").unwrap();
        let e = scan_events(&path, 5, &|_| true, &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("larger than 5 bytes"), "{e}");
    }

    /// The many-per-run types read straight into their struct are the events the enum reads.
    #[test]
    fn the_direct_reading_gives_the_enums_event() {
        for line in [
            r#"{"type":"spike_explained","time_ns":5,"cpu":0,"due_ns":1,"latency_ns":4,"irq_latency_ns":null,"thread_latency_ns":null,"verdict":"v","contributors":[{"kind":"task","name":"x","pid":9,"policy":"FIFO","prio":99,"duration_ns":3}]}"#,
            r#"{"type":"noise_interval","time_ns":5,"cpu":1,"offset_ns":0,"length_ns":10,"gaps":1,"noise_ns":2}"#,
            r#"{"type":"action","time_ns":42,"trigger":"threshold","action":"exec:true","suppressed_before":0,"refused_before":0,"outcome":"ok","pid":21657,"program":"exited","exit_code":0,"detail":"pid 21657 exited with 0"}"#,
        ] {
            let kind = line[9..].split('"').next();
            let direct = parse(kind, line).unwrap();
            assert_eq!(direct, serde_json::from_str::<Event>(line).unwrap());
            assert_eq!(Some(direct.kind()), kind);
        }
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
