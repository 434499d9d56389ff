//! `run --trace`: the IRQ vs thread split of every sample and the attribution of late
//! wakeups, from standard kernel tracepoints read through a tracefs instance of jitterlab's own.
//! docs/tracing.md describes what each part includes, the events, the filters, the cost and the
//! cleanup.
//!
//! - [`bpf`]: the BPF back end (the default where the kernel allows it): programs on the same
//!   tracepoints, filtered in the kernel, their records decoded into the same events;
//! - [`tracefs`]: the mount, the instance (`instances/jitterlab-<pid>`), stale-instance removal,
//!   and the tracefs back end's setup and start;
//! - [`format`](mod@format): the kernel's format files; [`page`]: the ring-buffer page parser;
//! - [`decode`]: the events used, decoded; [`reader`]: the thread that reads them;
//! - [`split`]: per-sample IRQ / thread latency; [`explain`]: what held the CPU;
//! - [`kallsyms`]: the kernel's symbol table, naming the frames of the culprits' stacks;
//! - [`chain`]: an IPC sample's chain from its sender's timer to the receiver running;
//! - [`join`]: the recorder's side, joining samples with the trace.
//!
//! [`prepare`] sets the instance up before any measuring thread starts (so that a system that
//! cannot trace is refused, exit 3, before measuring); [`TraceSetup::start`] adds the filters
//! that need the measuring threads' ids and starts tracing; the recorder joins samples with the
//! trace through [`Joiner`], which implements [`crate::recorder::TraceJoin`]. IPC senders start
//! with the run, after tracing: [`Tracer::follow_senders`] adds them once their ids are known.

pub mod bpf;
pub mod chain;
pub mod decode;
pub(crate) mod explain;
pub mod format;
pub mod join;
pub(crate) mod kallsyms;
pub(crate) mod migration;
pub mod page;
pub mod reader;
pub(crate) mod recent;
pub mod record;
pub mod split;
pub mod timerlat;
pub mod tracefs;

use crate::plan::TraceBackendChoice;
use decode::Decoder;
use explain::Names;
use format::Formats;
pub use join::SenderTrace;
pub(crate) use join::{Joiner, ThreadTrace};
use reader::{Reader, ReaderStats};
use std::path::Path;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;
use tracefs::{Instance, prepare_tracefs, start_tracefs, write_thread_filters};

/// Per-CPU ring buffer of the instance on each measured CPU, KiB. At the ~10 000 events/s of a
/// 1 ms loop on a busy CPU (about 400 KB/s) this holds several seconds, against a reader that
/// empties it every [`POLL_EVERY`].
pub(crate) const BUFFER_KB: u64 = 2048;
/// The buffer of CPUs that are not traced (tracing_cpumask leaves them empty): the minimum.
const IDLE_BUFFER_KB: u64 = 4;
/// How often the reader empties the buffers.
pub(crate) const POLL_EVERY: Duration = Duration::from_millis(50);

/// The back end, configured but not yet tracing.
pub(crate) struct TraceSetup {
    collector: Collector,
    backend: BackendChoice,
    cpus: Vec<usize>,
}

/// A hex CPU mask as tracing_cpumask takes it: 32-bit groups separated by commas.
pub(crate) fn cpumask_hex(cpus: &[usize]) -> String {
    let max = cpus.iter().copied().max().unwrap_or(0);
    let mut words = vec![0u32; max / 32 + 1];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    let mut groups: Vec<String> = words.iter().rev().map(|w| format!("{w:08x}")).collect();
    groups[0] = format!("{:x}", words[words.len() - 1]);
    groups.join(",")
}

/// Which wakeups the BPF back end may reduce in the kernel to one record each (docs/tracing.md,
/// "In-kernel reduction"): those of a wake method whose thread arms its own timer each cycle,
/// so that the kernel knows each wakeup's due time and when its sample has been taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reduction {
    /// The thread's due time may lie before its timer's expiry (relative sleeps: the kernel
    /// arms the timer from its own clock read, a little after the thread's).
    pub(crate) near_due: bool,
}

/// The back end a run uses and why (run.json `trace.backend`, `trace.backend_reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendChoice {
    /// `bpf` or `tracefs`.
    pub backend: &'static str,
    pub reason: String,
}

impl BackendChoice {
    /// `auto` took tracefs because the BPF back end was refused (the reason says why).
    pub(crate) fn fell_back(&self) -> bool {
        self.backend == "tracefs" && self.reason.starts_with(AUTO_FALLBACK_PREFIX)
    }
}

/// How `auto`'s fallback reason begins ([`auto_fallback`]), which [`BackendChoice::fell_back`]
/// recognises.
const AUTO_FALLBACK_PREFIX: &str = "auto: BPF unavailable";

/// The BPF back end's state before tracing, or the tracefs instance's. One lives per run:
/// the size difference of the variants does not matter.
#[allow(clippy::large_enum_variant)]
enum Collector {
    Bpf(bpf::Loaded),
    Tracefs {
        instance: Instance,
        formats: Formats,
        decoder: Decoder,
    },
}

/// Checks that this system can trace with the back end `choice` asks for and sets it up for
/// `cpus`: for BPF the programs loaded and verified; for tracefs the instance with the mono
/// trace clock, buffer sizes and CPU mask. `auto` takes BPF where it loads and falls back to
/// tracefs, with the reason. Errors are for exit 3 and name the fix.
pub(crate) fn prepare(cpus: &[usize], choice: TraceBackendChoice) -> Result<TraceSetup, String> {
    refuse_another_pid_namespace()?;
    let (collector, backend) = match choice {
        TraceBackendChoice::Tracefs => (
            prepare_tracefs(cpus)?,
            BackendChoice {
                backend: "tracefs",
                reason: "--trace-backend tracefs".into(),
            },
        ),
        TraceBackendChoice::Bpf => (
            Collector::Bpf(bpf::load(cpus).map_err(|e| format!("--trace-backend bpf: {e}"))?),
            BackendChoice {
                backend: "bpf",
                reason: "--trace-backend bpf".into(),
            },
        ),
        TraceBackendChoice::Auto => match bpf::load(cpus) {
            Ok(loaded) => (
                Collector::Bpf(loaded),
                BackendChoice {
                    backend: "bpf",
                    reason: AUTO_BPF_REASON.into(),
                },
            ),
            Err(e) => (
                prepare_tracefs(cpus).map_err(|t| {
                    format!("{t} (and the BPF back end is unavailable: {})", e.reason)
                })?,
                auto_fallback(&e),
            ),
        },
    };
    Ok(TraceSetup {
        collector,
        backend,
        cpus: cpus.to_vec(),
    })
}

/// What [`prepare`] would choose for `choice` and why, checked without setting anything up
/// (`run --dry-run`): BPF's object loaded and verified, then released; tracefs found and
/// writable. Errors as [`prepare`]'s.
pub fn check(choice: TraceBackendChoice) -> Result<BackendChoice, String> {
    refuse_another_pid_namespace()?;
    match choice {
        TraceBackendChoice::Tracefs => tracefs::find().map(|_| BackendChoice {
            backend: "tracefs",
            reason: "--trace-backend tracefs".into(),
        }),
        TraceBackendChoice::Bpf => bpf::probe()
            .map(|()| BackendChoice {
                backend: "bpf",
                reason: "--trace-backend bpf".into(),
            })
            .map_err(|e| format!("--trace-backend bpf: {e}")),
        TraceBackendChoice::Auto => {
            let chosen = auto_backend();
            if chosen.backend == "tracefs" {
                tracefs::find()?;
            }
            Ok(chosen)
        }
    }
}

/// Tracing from a pid namespace other than the kernel's first is refused: the kernel's events
/// (tracefs and BPF alike) name tasks by their ids in that first namespace, which a process in
/// another one cannot learn for its own threads, so no wakeup could be joined with its events
/// (every split absent, every culprit's pid another number). A namespace that cannot be read
/// is not refused: /proc without `ns/` is older than pid namespaces.
fn refuse_another_pid_namespace() -> Result<(), String> {
    match crate::sys::process::in_initial_pid_namespace() {
        Some(false) => Err(PID_NAMESPACE_REFUSAL.into()),
        _ => Ok(()),
    }
}

/// Why tracing is refused in a pid namespace of its own, and the fix.
pub(crate) const PID_NAMESPACE_REFUSAL: &str = "--trace: jitterlab runs in a pid namespace of its own (a container without the host's pid namespace), and the kernel's trace names every task by its id in the host's namespace, which this process cannot learn for its own threads: no wakeup could be joined with its timer and interrupt events. Run it in the host's pid namespace (docker/podman run --pid=host, Kubernetes hostPID: true, systemd-nspawn without --private-pids), or measure without --trace";

/// The reason `auto` gives when it takes BPF.
pub(crate) const AUTO_BPF_REASON: &str =
    "auto: the kernel has BTF and allowed the BPF programs to load";

/// What `auto` would choose on this system now, and why (doctor): the BPF object is loaded
/// and verified for CPU 0, then released; nothing is attached.
pub(crate) fn auto_backend() -> BackendChoice {
    auto_backend_why().0
}

/// As [`auto_backend`], with why BPF was refused (its fix, for doctor) when it falls back.
pub(crate) fn auto_backend_why() -> (BackendChoice, Option<bpf::Refusal>) {
    match bpf::probe() {
        Ok(()) => (
            BackendChoice {
                backend: "bpf",
                reason: AUTO_BPF_REASON.into(),
            },
            None,
        ),
        Err(e) => (auto_fallback(&e), Some(e)),
    }
}

/// `auto`'s choice when BPF is refused: tracefs, with the refusal's one-line reason.
fn auto_fallback(refusal: &bpf::Refusal) -> BackendChoice {
    BackendChoice {
        backend: "tracefs",
        reason: format!(
            "{AUTO_FALLBACK_PREFIX} ({}); tracefs instead",
            refusal.reason
        ),
    }
}

/// What the back end was set to, for run.json and docs.
#[derive(Debug, Clone, Default)]
pub struct TraceConfig {
    /// `bpf` or `tracefs`.
    pub backend: &'static str,
    pub(crate) backend_reason: String,
    /// BPF: wakeups not later than the explanation threshold were reduced in the kernel.
    pub(crate) reduced: bool,
    /// The tracefs instance; empty for BPF.
    pub instance: String,
    pub events: Vec<String>,
    pub(crate) filters: Vec<String>,
    pub(crate) buffer_kb: u64,
}

/// The running back end: the tracefs instance, or the attached BPF programs.
enum Active {
    Bpf(bpf::Loaded),
    Tracefs(Instance),
}

/// Tracing in progress. Dropping it stops the reader and removes the instance, or detaches and
/// frees the BPF programs and maps.
pub struct Tracer {
    // Dropped before the instance: the kernel refuses to remove an instance with open files.
    reader: Option<Reader>,
    active: Active,
    cpus: Vec<usize>,
    pub config: TraceConfig,
    /// The measuring threads' ids, plan order.
    tids: Vec<i32>,
    /// Tells the joiner the IPC senders' ids ([`Tracer::follow_senders`]).
    senders_tx: Sender<Vec<i32>>,
}

impl TraceSetup {
    /// The back end chosen and why.
    pub(crate) fn backend(&self) -> &BackendChoice {
        &self.backend
    }

    /// Filters the events to the measuring threads where that is correct, enables them,
    /// starts the reader and turns tracing on. `timer_functions` are the callbacks of the
    /// measuring threads' timers (see [`record::timer_functions`]): timer expiries of other
    /// callbacks are filtered out when the kernel can filter on function names (tracefs: 6.2
    /// and later; BPF: their addresses in /proc/kallsyms); otherwise they are kept. The reader
    /// thread runs at `drain_priority` (SCHED_FIFO; None: normal), as the recorder does, so
    /// that a heavy load does not starve it into losing events. Returns the tracer and the
    /// [`Joiner`] for the recorder.
    ///
    /// `reduction`: the wake method allows the BPF back end's in-kernel reduction; it is used
    /// when the run also has one measuring thread per CPU and no IPC senders or noise gaps
    /// (whose explanations need every event).
    pub(crate) fn start(
        self,
        threads: Vec<ThreadTrace>,
        timer_functions: &[&str],
        reduction: Option<Reduction>,
        drain_priority: Option<i32>,
    ) -> Result<(Tracer, Joiner), String> {
        let tids: Vec<i32> = threads.iter().map(|t| t.tid).collect();
        // An IPC run's filters must also name the senders, which start with the run: until
        // then (the lead-in, before any sample is due) these events stay unfiltered.
        let ipc = threads.iter().any(|t| t.sender.is_some());
        let mut cpus_measured: Vec<usize> = threads.iter().map(|t| t.cpu).collect();
        cpus_measured.sort_unstable();
        cpus_measured.dedup();
        let reduction = reduction.filter(|_| {
            !ipc && !threads.iter().any(|t| t.gaps) && cpus_measured.len() == threads.len()
        });
        let explain_above_ns = threads
            .iter()
            .map(|t| t.explain_above_ns)
            .min()
            .unwrap_or(0);
        let mut config = TraceConfig {
            backend: self.backend.backend,
            backend_reason: self.backend.reason.clone(),
            ..Default::default()
        };
        let (tx, rx) = mpsc::channel();
        // The CPUs traced for the measuring threads' timers only (tracefs; see migration.rs).
        let mut timer_cpus = Vec::new();
        let (reader, active, names) = match self.collector {
            Collector::Bpf(mut loaded) => {
                config.buffer_kb = loaded.ring_kb;
                if !ipc {
                    config.filters.extend(
                        loaded
                            .follow(&tids)
                            .map_err(|e| format!("--trace: cannot filter the events: {e}"))?,
                    );
                }
                // An IPC run's threads are followed once its senders start
                // (Tracer::follow_senders); the threshold holds from now on.
                let reduced = loaded
                    .decide(explain_above_ns, reduction)
                    .map_err(|e| format!("--trace: cannot set the reduction: {e}"))?;
                config.reduced = reduced.is_some();
                config.filters.extend(reduced);
                // The programs take culprits' stacks for this run's late wakeups: read the
                // symbols that name them now, before measuring, so that reading
                // /proc/kallsyms (~0.1-0.2 s of kernel time) never runs beside it.
                if explain_above_ns > 0 {
                    kallsyms::Symbols::shared();
                }
                let ring = loaded
                    .take_ring()
                    .map_err(|e| format!("--trace: cannot map the BPF ring buffer: {e}"))?;
                let state = loaded
                    .take_cpu_state()
                    .map_err(|e| format!("--trace: cannot map the BPF per-CPU state: {e}"))?;
                let reader =
                    bpf::spawn_reader(ring, state, &self.cpus, tx, POLL_EVERY, drain_priority)?;
                config.filters.splice(
                    0..0,
                    loaded
                        .attach(timer_functions)
                        .map_err(|e| format!("--trace: {e}"))?,
                );
                config.events = loaded.events.clone();
                let names = Names {
                    vectors: bpf::record::VECTORS.iter().map(|v| v.to_string()).collect(),
                    softirqs: bpf::Loaded::softirq_names(),
                };
                (reader, Active::Bpf(loaded), names)
            }
            Collector::Tracefs {
                instance,
                formats,
                decoder,
            } => {
                let (reader, traced) = start_tracefs(
                    &instance,
                    &self.cpus,
                    &migration::timer_cpus(&self.cpus),
                    formats,
                    decoder.clone(),
                    &tids,
                    ipc,
                    timer_functions,
                    &mut config,
                    tx,
                    drain_priority,
                )?;
                let names = Names {
                    vectors: decoder.vector_names.clone(),
                    softirqs: decoder.softirq_names.clone(),
                };
                timer_cpus = traced;
                (reader, Active::Tracefs(instance), names)
            }
        };
        let (senders_tx, senders_rx) = mpsc::channel();
        // The timers of a measured nohz_full CPU may also move to a measured housekeeping CPU,
        // traced already: the joiner looks there too (migration.rs). Either back end: the BPF
        // programs send such a moved timer's expiry and its thread's wakeup unstaged, whatever
        // becomes of that CPU's own stage (bpf/trace.bpf.c).
        let mut join_cpus = timer_cpus.clone();
        join_cpus.extend(migration::measured_targets(&self.cpus));
        let joiner = Joiner::new(rx, senders_rx, threads, names).with_timer_cpus(join_cpus);
        let mut cpus = self.cpus;
        cpus.extend(timer_cpus);
        Ok((
            Tracer {
                reader: Some(reader),
                active,
                cpus,
                config,
                tids,
                senders_tx,
            },
            joiner,
        ))
    }
}

/// What tracing did, at the end.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TraceStats {
    pub reader: ReaderStats,
    /// Events the kernel lost (per-CPU `stats`: overrun + dropped events), or the reader's
    /// count from page headers when the stats cannot be read.
    pub events_lost: u64,
    /// BPF: of `events_lost`, those a CPU's stage wrapped over before its late wakeup was
    /// decided (None: tracefs, or the count could not be read).
    pub events_lost_in_stage: Option<u64>,
}

impl Tracer {
    /// Reads what is left (everything written until now), stops the reader and closes the
    /// trace files. Call when the measuring threads have ended, before the recorder's last
    /// drain.
    pub(crate) fn finish_reading(&mut self) -> Result<TraceStats, String> {
        let reader = match self.reader.take() {
            Some(mut r) => r.finish()?,
            None => ReaderStats::default(),
        };
        let mut events_lost_in_stage = None;
        let events_lost = match &mut self.active {
            Active::Bpf(loaded) => match loaded.lost() {
                Ok((total, in_stage)) => {
                    events_lost_in_stage = Some(in_stage);
                    total
                }
                Err(_) => reader.lost_events,
            },
            Active::Tracefs(instance) => {
                let mut lost = 0;
                let mut readable = true;
                for c in &self.cpus {
                    match instance.read(&format!("per_cpu/cpu{c}/stats")) {
                        Ok(text) => {
                            lost +=
                                stat_field(&text, "overrun") + stat_field(&text, "dropped events")
                        }
                        Err(_) => readable = false,
                    }
                }
                if readable { lost } else { reader.lost_events }
            }
        };
        Ok(TraceStats {
            reader,
            events_lost,
            events_lost_in_stage,
        })
    }

    /// IPC runs: follows the senders (`sender_tids`, per measuring thread in plan order, 0 for
    /// one that did not start) from now on: filters the timer starts and wakeups to them and
    /// the measuring threads, and tells the joiner. Call once the senders have started, before
    /// the first sample is due.
    pub(crate) fn follow_senders(&mut self, sender_tids: &[i32]) -> Result<(), String> {
        let mut tids = self.tids.clone();
        tids.extend(sender_tids.iter().filter(|&&t| t > 0));
        match &mut self.active {
            Active::Bpf(loaded) => self.config.filters.extend(
                loaded
                    .follow(&tids)
                    .map_err(|e| format!("--trace: cannot filter the events: {e}"))?,
            ),
            Active::Tracefs(instance) => write_thread_filters(instance, &tids, &mut self.config)?,
        }
        // The joiner is gone only when the recorder is: nothing to tell.
        let _ = self.senders_tx.send(sender_tids.to_vec());
        Ok(())
    }

    /// Removes the instance, or detaches and frees the BPF programs, now (also done when the
    /// tracer is dropped).
    pub fn remove(mut self) -> Result<(), String> {
        self.reader = None;
        match &mut self.active {
            Active::Tracefs(instance) => instance.remove(),
            // Closing the programs' links detaches them; closing the maps' and programs' fds
            // frees them (nothing is pinned).
            Active::Bpf(_) => Ok(()),
        }
    }
}

fn stat_field(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(key)?
                .trim()
                .strip_prefix(':')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Reads a captured set of pages with the formats of `root` (a tracefs, or a copy of its
/// `events/` files): every page's info and decoded events. For tests and tools.
pub fn read_capture(
    root: &Path,
    pages: &[u8],
) -> Result<(Vec<page::PageInfo>, Vec<decode::TraceEvent>), String> {
    let formats = Formats::load(root)?;
    let mut decoder = Decoder::load(root)?;
    let size = formats.header_page.page_size();
    let mut infos = Vec::new();
    let mut events = Vec::new();
    for chunk in pages.chunks(size) {
        infos.push(
            page::read_page(&formats, chunk, |ts, rec| {
                if let Some(e) = decoder.decode(ts, rec) {
                    events.push(e);
                }
            })
            .map_err(|e| e.to_string())?,
        );
    }
    Ok((infos, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_in_tracefs_notation() {
        assert_eq!(cpumask_hex(&[0]), "1");
        assert_eq!(cpumask_hex(&[0, 1]), "3");
        assert_eq!(cpumask_hex(&[1, 4]), "12");
        assert_eq!(cpumask_hex(&[0, 33]), "2,00000001");
    }

    #[test]
    fn reads_the_kernel_stats_fields() {
        let s = "entries: 89\noverrun: 10138\ncommit overrun: 0\ndropped events: 3\n";
        assert_eq!(stat_field(s, "overrun"), 10138);
        assert_eq!(stat_field(s, "dropped events"), 3);
        assert_eq!(stat_field(s, "read events"), 0);
    }
}
