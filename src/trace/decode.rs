//! The tracepoints `--trace` uses and their records decoded into small plain values. Which
//! field sits where comes from each event's format file ([`super::format`]).

use super::format::{EventFormat, Field, load_event};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Events that must exist (system, event); without them the split cannot be made.
pub(crate) const REQUIRED_EVENTS: &[(&str, &str)] = &[
    ("timer", "hrtimer_start"),
    ("timer", "hrtimer_expire_entry"),
    ("sched", "sched_waking"),
    ("sched", "sched_switch"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
];

/// The system of the architecture's interrupt-vector events (x86: local timer, IPIs...);
/// every `<name>_entry` with a matching `<name>_exit` in it is used when it exists.
pub(crate) const VECTOR_SYSTEM: &str = "irq_vectors";

/// A task name as the kernel stores it: up to 16 bytes, NUL-padded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    fn from_bytes(b: &[u8]) -> Self {
        let mut c = [0u8; 16];
        let n = b.len().min(16);
        c[..n].copy_from_slice(&b[..n]);
        Comm(c)
    }

    pub(crate) fn as_string(&self) -> String {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..end]).into_owned()
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_string())
    }
}

/// A task as sched_switch shows it. `prio` is the kernel's: below 0 deadline, 0-99 real-time
/// (99 − rt_priority), 100-139 normal (120 + nice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRef {
    pub pid: i32,
    pub prio: i32,
    pub comm: Comm,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A hrtimer was (re)armed; `common_pid` is the task that armed it.
    HrtimerStart {
        hrtimer: u64,
        expires: i64,
        softexpires: i64,
    },
    /// A hrtimer fired; `now` is its clock base's time at the interrupt.
    HrtimerExpire {
        hrtimer: u64,
        now: i64,
    },
    /// A task is being woken up, with its priority and name at that moment (a task switched
    /// in from idle may have no sched_switch in the trace: see docs/tracing.md).
    Waking {
        task: TaskRef,
        /// The CPU it will run on.
        target_cpu: i32,
    },
    Switch {
        prev: TaskRef,
        next: TaskRef,
    },
    IrqEntry {
        irq: i32,
        name: Arc<str>,
    },
    IrqExit {
        irq: i32,
    },
    SoftirqEntry {
        vec: u32,
    },
    SoftirqExit {
        vec: u32,
    },
    /// An architecture interrupt vector (index into [`Decoder::vector_names`]).
    VectorEntry {
        vector: u16,
    },
    VectorExit {
        vector: u16,
    },
    /// An NMI handler ran for `delta_ns`, ending at the event's time (x86's `nmi:nmi_handler`;
    /// NMIs have no entry event, the kernel reports their length when they end).
    Nmi {
        delta_ns: u64,
    },
    /// The kernel lost events here (a page flagged with missed events); count when known.
    Lost {
        count: Option<u64>,
    },
    /// The kernel stack of `common_pid`, innermost frame first, as it gave the CPU to a
    /// measuring thread whose wakeup was already later than the explanation threshold (the BPF
    /// back end only; the event's time is that sched_switch's). It may arrive out of time order
    /// with the CPU's other events: it is kept beside the history, not in it.
    KernelStack {
        ips: Arc<[u64]>,
    },
}

/// A task as the decoder gives it, for tests.
#[cfg(test)]
pub fn task(pid: i32, prio: i32, comm: &str) -> TaskRef {
    TaskRef {
        pid,
        prio,
        comm: Comm::from_bytes(comm.as_bytes()),
    }
}

#[cfg(test)]
impl Kind {
    /// A wakeup of a normal task `pid` onto CPU 0, for tests that only follow pids.
    pub(crate) fn waking(pid: i32) -> Kind {
        Kind::Waking {
            task: TaskRef {
                pid,
                prio: 120,
                comm: Comm::default(),
            },
            target_cpu: 0,
        }
    }
}

/// One decoded event on one CPU. `ts` is the trace clock (CLOCK_MONOTONIC with
/// trace_clock=mono), ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    pub ts: u64,
    pub common_pid: i32,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
struct SwitchFields {
    prev_comm: Field,
    prev_pid: Field,
    prev_prio: Field,
    next_comm: Field,
    next_pid: Field,
    next_prio: Field,
}

#[derive(Debug, Clone)]
enum Decode {
    HrtimerStart {
        hrtimer: Field,
        expires: Field,
        softexpires: Field,
    },
    HrtimerExpire {
        hrtimer: Field,
        now: Field,
    },
    Waking {
        pid: Field,
        prio: Field,
        comm: Field,
        target_cpu: Field,
    },
    Switch(Box<SwitchFields>),
    IrqEntry {
        irq: Field,
        name: Field,
    },
    IrqExit {
        irq: Field,
    },
    Softirq {
        vec: Field,
        entry: bool,
    },
    Vector {
        index: u16,
        entry: bool,
    },
    Nmi {
        delta_ns: Field,
    },
}

/// Turns raw records into [`TraceEvent`]s, knowing each event id's fields.
#[derive(Debug, Clone)]
pub(crate) struct Decoder {
    by_id: HashMap<u16, Decode>,
    common_type: Field,
    common_pid: Field,
    /// Names of the vector events, e.g. `local_timer`, `reschedule`.
    pub(crate) vector_names: Vec<String>,
    /// Softirq vector names from softirq_entry's print format (`TIMER`, `NET_RX`...).
    pub(crate) softirq_names: Vec<(i64, String)>,
    /// (system, event) of every event to enable.
    pub events: Vec<(String, String)>,
    /// The last name seen per IRQ number, so that the same few names are not re-allocated
    /// for every interrupt.
    irq_names: HashMap<i32, Arc<str>>,
}

/// The events a [`Decoder`] knows while it is loaded: how to decode each id, and the
/// (system, event) pairs to enable, in the order added.
#[derive(Default)]
struct KnownEvents {
    by_id: HashMap<u16, Decode>,
    events: Vec<(String, String)>,
}

impl KnownEvents {
    fn add(&mut self, f: &EventFormat, d: Decode) {
        self.by_id.insert(f.id, d);
        self.events.push((f.system.clone(), f.name.clone()));
    }

    /// The timer and scheduler events every trace needs; returns the common fields (type and
    /// pid), which every event's records share, as read from the first format.
    fn add_timer_and_sched(&mut self, root: &Path) -> Result<(Field, Field), String> {
        let f = load_event(root, "timer", "hrtimer_start")?;
        self.add(
            &f,
            Decode::HrtimerStart {
                hrtimer: f.require("hrtimer")?,
                expires: f.require("expires")?,
                softexpires: f.require("softexpires")?,
            },
        );
        let common = (f.require("common_type")?, f.require("common_pid")?);
        let f = load_event(root, "timer", "hrtimer_expire_entry")?;
        self.add(
            &f,
            Decode::HrtimerExpire {
                hrtimer: f.require("hrtimer")?,
                now: f.require("now")?,
            },
        );
        let f = load_event(root, "sched", "sched_waking")?;
        self.add(
            &f,
            Decode::Waking {
                pid: f.require("pid")?,
                prio: f.require("prio")?,
                comm: f.require("comm")?,
                target_cpu: f.require("target_cpu")?,
            },
        );
        let f = load_event(root, "sched", "sched_switch")?;
        self.add(
            &f,
            Decode::Switch(Box::new(SwitchFields {
                prev_comm: f.require("prev_comm")?,
                prev_pid: f.require("prev_pid")?,
                prev_prio: f.require("prev_prio")?,
                next_comm: f.require("next_comm")?,
                next_pid: f.require("next_pid")?,
                next_prio: f.require("next_prio")?,
            })),
        );
        Ok(common)
    }

    /// The IRQ handler and softirq events every trace needs; returns the softirq vector
    /// names from softirq_entry's print format.
    fn add_interrupts(&mut self, root: &Path) -> Result<Vec<(i64, String)>, String> {
        let f = load_event(root, "irq", "irq_handler_entry")?;
        self.add(
            &f,
            Decode::IrqEntry {
                irq: f.require("irq")?,
                name: f.require("name")?,
            },
        );
        let f = load_event(root, "irq", "irq_handler_exit")?;
        self.add(
            &f,
            Decode::IrqExit {
                irq: f.require("irq")?,
            },
        );
        let softirq_entry = load_event(root, "irq", "softirq_entry")?;
        let softirq_names = softirq_entry.symbols();
        self.add(
            &softirq_entry,
            Decode::Softirq {
                vec: softirq_entry.require("vec")?,
                entry: true,
            },
        );
        let f = load_event(root, "irq", "softirq_exit")?;
        self.add(
            &f,
            Decode::Softirq {
                vec: f.require("vec")?,
                entry: false,
            },
        );
        Ok(softirq_names)
    }

    /// Optional: the architecture's vector events, as entry/exit pairs (sorted by name, so the
    /// indices do not depend on the directory's order); returns their names by index.
    fn add_vectors(&mut self, root: &Path) -> Vec<String> {
        let mut vector_names = Vec::new();
        let dir = root.join("events").join(VECTOR_SYSTEM);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        for n in names {
            let Some(base) = n.strip_suffix("_entry") else {
                continue;
            };
            let (Ok(entry), Ok(exit)) = (
                load_event(root, VECTOR_SYSTEM, &n),
                load_event(root, VECTOR_SYSTEM, &format!("{base}_exit")),
            ) else {
                continue;
            };
            let index = vector_names.len() as u16;
            vector_names.push(base.to_string());
            self.add(&entry, Decode::Vector { index, entry: true });
            self.add(
                &exit,
                Decode::Vector {
                    index,
                    entry: false,
                },
            );
        }
        vector_names
    }
}

impl Decoder {
    /// Loads the format of every event used from the tracefs (or captured copy) at `root`.
    pub(crate) fn load(root: &Path) -> Result<Self, String> {
        let mut known = KnownEvents::default();
        let (common_type, common_pid) = known.add_timer_and_sched(root)?;
        let softirq_names = known.add_interrupts(root)?;
        let vector_names = known.add_vectors(root);
        // Optional: NMIs (x86), for the attribution of noise gaps.
        if let Ok(f) = load_event(root, "nmi", "nmi_handler")
            && let Ok(delta_ns) = f.require("delta_ns")
        {
            known.add(&f, Decode::Nmi { delta_ns });
        }
        Ok(Decoder {
            by_id: known.by_id,
            common_type,
            common_pid,
            vector_names,
            softirq_names,
            events: known.events,
            irq_names: HashMap::new(),
        })
    }

    /// Decodes one record; None for events this decoder does not know or short records.
    pub(crate) fn decode(&mut self, ts: u64, record: &[u8]) -> Option<TraceEvent> {
        let id = self.common_type.int(record)? as u16;
        let common_pid = self.common_pid.int(record)? as i32;
        let kind = match self.by_id.get(&id)? {
            Decode::HrtimerStart {
                hrtimer,
                expires,
                softexpires,
            } => Kind::HrtimerStart {
                hrtimer: hrtimer.uint(record)?,
                expires: expires.int(record)?,
                softexpires: softexpires.int(record)?,
            },
            Decode::HrtimerExpire { hrtimer, now } => Kind::HrtimerExpire {
                hrtimer: hrtimer.uint(record)?,
                now: now.int(record)?,
            },
            Decode::Waking {
                pid,
                prio,
                comm,
                target_cpu,
            } => Kind::Waking {
                task: TaskRef {
                    pid: pid.int(record)? as i32,
                    prio: prio.int(record)? as i32,
                    comm: Comm::from_bytes(comm.str(record)?),
                },
                target_cpu: target_cpu.int(record)? as i32,
            },
            Decode::Switch(f) => Kind::Switch {
                prev: TaskRef {
                    pid: f.prev_pid.int(record)? as i32,
                    prio: f.prev_prio.int(record)? as i32,
                    comm: Comm::from_bytes(f.prev_comm.str(record)?),
                },
                next: TaskRef {
                    pid: f.next_pid.int(record)? as i32,
                    prio: f.next_prio.int(record)? as i32,
                    comm: Comm::from_bytes(f.next_comm.str(record)?),
                },
            },
            Decode::IrqEntry { irq, name } => {
                let irq = irq.int(record)? as i32;
                let bytes = name.str(record)?;
                let name = match self.irq_names.get(&irq) {
                    Some(n) if n.as_bytes() == bytes => n.clone(),
                    _ => {
                        let n: Arc<str> = Arc::from(String::from_utf8_lossy(bytes).as_ref());
                        self.irq_names.insert(irq, n.clone());
                        n
                    }
                };
                Kind::IrqEntry { irq, name }
            }
            Decode::IrqExit { irq } => Kind::IrqExit {
                irq: irq.int(record)? as i32,
            },
            Decode::Softirq { vec, entry } => {
                let vec = vec.int(record)? as u32;
                if *entry {
                    Kind::SoftirqEntry { vec }
                } else {
                    Kind::SoftirqExit { vec }
                }
            }
            Decode::Vector { index, entry } => {
                if *entry {
                    Kind::VectorEntry { vector: *index }
                } else {
                    Kind::VectorExit { vector: *index }
                }
            }
            Decode::Nmi { delta_ns } => Kind::Nmi {
                delta_ns: delta_ns.int(record)?.max(0) as u64,
            },
        };
        Some(TraceEvent {
            ts,
            common_pid,
            kind,
        })
    }
}
