//! The BPF programs' records (bpf/trace.bpf.c, "the records") decoded into the same
//! [`TraceEvent`]s the tracefs reader decodes from the ftrace ring buffer, so that the split
//! and the explanations are one code for both back ends. Keep the layouts here and in the C
//! source in step: the unit tests below build records byte by byte as the C structs lay them
//! out, and the measuring test `trace_backends_agree` runs both back ends over the same
//! injected spikes.

use crate::trace::decode::{Comm, Kind, TaskRef, TraceEvent};
use std::collections::HashMap;
use std::sync::Arc;

/// `enum jl_kind` of the C source.
const HRTIMER_START: u16 = 1;
const HRTIMER_EXPIRE: u16 = 2;
const WAKING: u16 = 3;
const SWITCH: u16 = 4;
const IRQ_ENTRY: u16 = 5;
const IRQ_EXIT: u16 = 6;
const SOFTIRQ_ENTRY: u16 = 7;
const SOFTIRQ_EXIT: u16 = 8;
const VECTOR_ENTRY: u16 = 9;
const VECTOR_EXIT: u16 = 10;
const NMI: u16 = 11;
const LOST: u16 = 12;
const CYCLE: u16 = 13;
const STACK: u16 = 14;

/// `struct jl_cycle`'s flags: the arming is in the record; the wakeup is.
const CYCLE_ARMED: u64 = 1;
const CYCLE_WAKING: u64 = 2;

/// `struct jl_header`: u64 ts, i32 pid, u16 cpu, u16 kind.
pub(crate) const HEADER_BYTES: usize = 16;
/// `struct jl_task`: i32 pid, i32 prio, char comm[16].
const TASK_BYTES: usize = 24;

/// The architecture interrupt vectors the C source has programs for, by the index its records
/// carry (`VECTOR(index, name)` there): the tracepoints are `<name>_entry` and `<name>_exit`.
pub(crate) const VECTORS: &[&str] = &[
    "call_function",
    "call_function_single",
    "deferred_error_apic",
    "error_apic",
    "irq_work",
    "local_timer",
    "reschedule",
    "spurious_apic",
    "thermal_apic",
    "threshold_apic",
    "x86_platform_ipi",
];

/// Why a record could not be decoded: a mismatch between the object and this decoder, never
/// expected from a matching build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRecord(pub String);

impl std::fmt::Display for BadRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a BPF trace record could not be decoded: {}", self.0)
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn i32_at(b: &[u8], at: usize) -> Option<i32> {
    u32_at(b, at).map(|v| v as i32)
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
fn i64_at(b: &[u8], at: usize) -> Option<i64> {
    u64_at(b, at).map(|v| v as i64)
}

fn task_at(b: &[u8], at: usize) -> Option<TaskRef> {
    let comm: [u8; 16] = b.get(at + 8..at + TASK_BYTES)?.try_into().ok()?;
    Some(TaskRef {
        pid: i32_at(b, at)?,
        prio: i32_at(b, at + 4)?,
        comm: Comm(comm),
    })
}

/// Decodes the records of one ring buffer, keeping the IRQ names it has seen (as the tracefs
/// decoder does) so that the same few names are not allocated for every interrupt.
#[derive(Debug, Default)]
pub(crate) struct RecordDecoder {
    irq_names: HashMap<i32, Arc<str>>,
}

impl RecordDecoder {
    /// One record: the CPU it was written on and its events, handed to `out` in time order
    /// (one, or for a wakeup reduced in the kernel the four it stands for).
    pub(crate) fn decode_into(
        &mut self,
        b: &[u8],
        mut out: impl FnMut(usize, TraceEvent),
    ) -> Result<(), BadRecord> {
        let bad = || {
            BadRecord(format!(
                "{} bytes, kind {:?}",
                b.len(),
                u16_at(b, 14).unwrap_or(0)
            ))
        };
        if u16_at(b, 14) == Some(CYCLE) {
            let cpu = u16_at(b, 12).ok_or_else(bad)? as usize;
            for e in cycle_events(b).ok_or_else(bad)?.into_iter().flatten() {
                out(cpu, e);
            }
            return Ok(());
        }
        let (cpu, e) = self.try_decode(b).ok_or_else(bad)?;
        out(cpu, e);
        Ok(())
    }

    /// One record of a single event.
    #[cfg(test)]
    pub(crate) fn decode(&mut self, b: &[u8]) -> Result<(usize, TraceEvent), BadRecord> {
        let mut got = Vec::new();
        self.decode_into(b, |cpu, e| got.push((cpu, e)))?;
        match got.len() {
            1 => Ok(got.remove(0)),
            n => Err(BadRecord(format!("{n} events in one record"))),
        }
    }

    fn try_decode(&mut self, b: &[u8]) -> Option<(usize, TraceEvent)> {
        let ts = u64_at(b, 0)?;
        let common_pid = i32_at(b, 8)?;
        let cpu = u16_at(b, 12)? as usize;
        let p = HEADER_BYTES;
        let kind = match u16_at(b, 14)? {
            HRTIMER_START => Kind::HrtimerStart {
                hrtimer: u64_at(b, p)?,
                expires: i64_at(b, p + 8)?,
                softexpires: i64_at(b, p + 16)?,
            },
            HRTIMER_EXPIRE => Kind::HrtimerExpire {
                hrtimer: u64_at(b, p)?,
                now: i64_at(b, p + 8)?,
            },
            WAKING => Kind::Waking {
                task: task_at(b, p)?,
                target_cpu: i32_at(b, p + TASK_BYTES)?,
            },
            SWITCH => Kind::Switch {
                prev: task_at(b, p)?,
                next: task_at(b, p + TASK_BYTES)?,
            },
            IRQ_ENTRY => {
                let irq = i32_at(b, p)?;
                let raw = b.get(p + 4..p + 36)?;
                let bytes = &raw[..raw.iter().position(|&c| c == 0).unwrap_or(raw.len())];
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
            IRQ_EXIT => Kind::IrqExit { irq: i32_at(b, p)? },
            SOFTIRQ_ENTRY => Kind::SoftirqEntry { vec: u32_at(b, p)? },
            SOFTIRQ_EXIT => Kind::SoftirqExit { vec: u32_at(b, p)? },
            VECTOR_ENTRY => Kind::VectorEntry {
                vector: u32_at(b, p)? as u16,
            },
            VECTOR_EXIT => Kind::VectorExit {
                vector: u32_at(b, p)? as u16,
            },
            NMI => Kind::Nmi {
                delta_ns: u64_at(b, p)?,
            },
            LOST => Kind::Lost {
                count: Some(u64_at(b, p)?),
            },
            STACK => {
                let frames = u32_at(b, p)? as usize;
                let ips: Option<Vec<u64>> = (0..frames).map(|i| u64_at(b, p + 8 + 8 * i)).collect();
                Kind::KernelStack {
                    ips: Arc::from(ips?),
                }
            }
            _ => return None,
        };
        // A loss belongs to no task (the tracefs reader marks it so too).
        let common_pid = match kind {
            Kind::Lost { .. } => -1,
            _ => common_pid,
        };
        Some((
            cpu,
            TraceEvent {
                ts,
                common_pid,
                kind,
            },
        ))
    }
}

/// `struct jl_cycle`: a wakeup the kernel decided was not late, as the events it stands for:
/// its timer's arming (unless that went out before), the expiry, the wakeup (when traced) and
/// the switch to the thread, each with its own time and task as the tracepoint gave them.
/// Returned in place, not in a Vec: the reader decodes one per wakeup.
fn cycle_events(b: &[u8]) -> Option<[Option<TraceEvent>; 4]> {
    let p = HEADER_BYTES;
    let flags = u64_at(b, p)?;
    let hrtimer = u64_at(b, p + 8)?;
    let armed = match flags & CYCLE_ARMED {
        0 => None,
        _ => Some(TraceEvent {
            ts: u64_at(b, p + 32)?,
            common_pid: i32_at(b, p + 40)?,
            kind: Kind::HrtimerStart {
                hrtimer,
                expires: i64_at(b, p + 16)?,
                softexpires: i64_at(b, p + 24)?,
            },
        }),
    };
    let expiry = TraceEvent {
        ts: u64_at(b, p + 48)?,
        common_pid: i32_at(b, p + 44)?,
        kind: Kind::HrtimerExpire {
            hrtimer,
            now: i64_at(b, p + 56)?,
        },
    };
    let waking = match flags & CYCLE_WAKING {
        0 => None,
        _ => Some(TraceEvent {
            ts: u64_at(b, p + 64)?,
            common_pid: i32_at(b, p + 72)?,
            kind: Kind::Waking {
                task: task_at(b, p + 80)?,
                target_cpu: i32_at(b, p + 76)?,
            },
        }),
    };
    let prev = task_at(b, p + 80 + TASK_BYTES)?;
    let switch = TraceEvent {
        ts: u64_at(b, 0)?,
        common_pid: prev.pid,
        kind: Kind::Switch {
            prev,
            next: task_at(b, p + 80 + 2 * TASK_BYTES)?,
        },
    };
    Some([armed, Some(expiry), waking, Some(switch)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Sample;
    use crate::recorder::{SampleTrace, TraceJoin};
    use crate::trace::decode::task;
    use crate::trace::explain::Names;
    use crate::trace::join::{Joiner, ThreadTrace};
    use crate::trace::reader::TraceBatch;
    use std::collections::BTreeMap;
    use std::sync::mpsc;

    /// A record as the C structs lay it out: the header, then the payload's bytes.
    fn record(ts: u64, pid: i32, cpu: u16, kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(ts.to_ne_bytes());
        b.extend(pid.to_ne_bytes());
        b.extend(cpu.to_ne_bytes());
        b.extend(kind.to_ne_bytes());
        b.extend(payload);
        b
    }

    fn task_bytes(pid: i32, prio: i32, comm: &str) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(pid.to_ne_bytes());
        b.extend(prio.to_ne_bytes());
        let mut c = [0u8; 16];
        c[..comm.len()].copy_from_slice(comm.as_bytes());
        b.extend(c);
        b
    }

    #[test]
    fn decodes_every_kind_as_the_tracefs_decoder_does() {
        let mut d = RecordDecoder::default();
        let mut p = Vec::new();
        p.extend(0xffff_8880_1234_5678u64.to_ne_bytes());
        p.extend(1_000_i64.to_ne_bytes());
        p.extend(900_i64.to_ne_bytes());
        let (cpu, e) = d.decode(&record(5, 42, 1, HRTIMER_START, &p)).unwrap();
        assert_eq!(cpu, 1);
        assert_eq!(
            e,
            TraceEvent {
                ts: 5,
                common_pid: 42,
                kind: Kind::HrtimerStart {
                    hrtimer: 0xffff_8880_1234_5678,
                    expires: 1000,
                    softexpires: 900
                }
            }
        );

        let mut p = task_bytes(7, 4, "rt-thing");
        p.extend(3i32.to_ne_bytes());
        p.extend(0u32.to_ne_bytes());
        let (_, e) = d.decode(&record(6, 0, 0, WAKING, &p)).unwrap();
        assert_eq!(
            e.kind,
            Kind::Waking {
                task: crate::trace::decode::task(7, 4, "rt-thing"),
                target_cpu: 3
            }
        );

        let mut p = task_bytes(1, 120, "a");
        p.extend(task_bytes(2, 0, "exactly16bytes!!"));
        let (_, e) = d.decode(&record(7, 1, 0, SWITCH, &p)).unwrap();
        let Kind::Switch { prev, next } = e.kind else {
            panic!("{e:?}")
        };
        assert_eq!(
            (prev.pid, prev.prio, prev.comm.as_string()),
            (1, 120, "a".into())
        );
        assert_eq!(next.comm.as_string(), "exactly16bytes!!");

        let mut p = 11i32.to_ne_bytes().to_vec();
        let mut name = [0u8; 32];
        name[..9].copy_from_slice(b"virtio0-i");
        p.extend(name);
        p.extend(0u32.to_ne_bytes());
        let (_, e) = d.decode(&record(8, 0, 0, IRQ_ENTRY, &p)).unwrap();
        assert_eq!(
            e.kind,
            Kind::IrqEntry {
                irq: 11,
                name: Arc::from("virtio0-i")
            }
        );

        let small = |v: u32| [v.to_ne_bytes(), 0u32.to_ne_bytes()].concat();
        for (kind, want) in [
            (IRQ_EXIT, Kind::IrqExit { irq: 11 }),
            (SOFTIRQ_ENTRY, Kind::SoftirqEntry { vec: 11 }),
            (SOFTIRQ_EXIT, Kind::SoftirqExit { vec: 11 }),
            (VECTOR_ENTRY, Kind::VectorEntry { vector: 11 }),
            (VECTOR_EXIT, Kind::VectorExit { vector: 11 }),
        ] {
            assert_eq!(
                d.decode(&record(9, 0, 0, kind, &small(11))).unwrap().1.kind,
                want
            );
        }
        let (_, e) = d
            .decode(&record(9, 0, 0, NMI, &4000u64.to_ne_bytes()))
            .unwrap();
        assert_eq!(e.kind, Kind::Nmi { delta_ns: 4000 });
        let (_, e) = d
            .decode(&record(9, 0, 0, LOST, &3u64.to_ne_bytes()))
            .unwrap();
        assert_eq!(e.kind, Kind::Lost { count: Some(3) });
        // `struct jl_stack`: the frames written, padding, then room for 32 frames.
        let mut stack = Vec::new();
        stack.extend(2u32.to_ne_bytes());
        stack.extend(0u32.to_ne_bytes());
        for ip in [0xffff_ffff_8100_0010u64, 0xffff_ffff_8100_0020] {
            stack.extend(ip.to_ne_bytes());
        }
        stack.extend([0u8; 8 * 30]);
        let (_, e) = d.decode(&record(9, 77, 1, STACK, &stack)).unwrap();
        assert_eq!(e.common_pid, 77);
        assert_eq!(
            e.kind,
            Kind::KernelStack {
                ips: Arc::from(vec![0xffff_ffff_8100_0010u64, 0xffff_ffff_8100_0020])
            }
        );
    }

    /// `struct jl_cycle` as the C source lays it out.
    fn cycle_record(flags: u64) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(flags.to_ne_bytes());
        p.extend(0xabcdu64.to_ne_bytes()); // hrtimer
        p.extend(5_000i64.to_ne_bytes()); // expires
        p.extend(4_999i64.to_ne_bytes()); // softexpires
        p.extend(1_000u64.to_ne_bytes()); // armed_ts
        p.extend(42i32.to_ne_bytes()); // armed_pid
        p.extend(0i32.to_ne_bytes()); // expiry_pid (idle)
        p.extend(5_010u64.to_ne_bytes()); // expiry_ts
        p.extend(5_008i64.to_ne_bytes()); // now
        p.extend(5_012u64.to_ne_bytes()); // waking_ts
        p.extend(0i32.to_ne_bytes()); // waking_pid
        p.extend(1i32.to_ne_bytes()); // target_cpu
        p.extend(task_bytes(42, 9, "jl-measure"));
        p.extend(task_bytes(0, 120, "swapper/1"));
        p.extend(task_bytes(42, 9, "jl-measure"));
        // The header's time is the switch's.
        record(5_020, 42, 1, CYCLE, &p)
    }

    #[test]
    fn a_reduced_wakeup_stands_for_its_four_events_in_time_order() {
        let mut d = RecordDecoder::default();
        let mut got = Vec::new();
        d.decode_into(&cycle_record(CYCLE_ARMED | CYCLE_WAKING), |cpu, e| {
            got.push((cpu, e))
        })
        .unwrap();
        let measuring = task(42, 9, "jl-measure");
        let idle = task(0, 120, "swapper/1");
        let want = [
            TraceEvent {
                ts: 1_000,
                common_pid: 42,
                kind: Kind::HrtimerStart {
                    hrtimer: 0xabcd,
                    expires: 5_000,
                    softexpires: 4_999,
                },
            },
            TraceEvent {
                ts: 5_010,
                common_pid: 0,
                kind: Kind::HrtimerExpire {
                    hrtimer: 0xabcd,
                    now: 5_008,
                },
            },
            TraceEvent {
                ts: 5_012,
                common_pid: 0,
                kind: Kind::Waking {
                    task: measuring,
                    target_cpu: 1,
                },
            },
            TraceEvent {
                ts: 5_020,
                common_pid: 0,
                kind: Kind::Switch {
                    prev: idle,
                    next: measuring,
                },
            },
        ];
        assert_eq!(
            got,
            want.iter().cloned().map(|e| (1, e)).collect::<Vec<_>>()
        );
        // Without the flags: no arming (it went out before), no wakeup (not traced).
        let mut got = Vec::new();
        d.decode_into(&cycle_record(0), |_, e| got.push(e)).unwrap();
        assert_eq!(
            got,
            want[1..2]
                .iter()
                .chain(&want[3..])
                .cloned()
                .collect::<Vec<_>>()
        );
        // A cycle cut short is refused, not half read.
        assert!(d.decode_into(&cycle_record(3)[..100], |_, _| {}).is_err());
    }

    /// Where CPU 1's arming of its moved timer reaches user space in [`moved_timer_joined`].
    #[derive(Clone, Copy)]
    enum Arming {
        /// In CPU 1's stage, flushed at its thread's switch out (its wakeup before was late).
        Flushed,
        /// CPU 1's wakeup before was on time: the stage holding the arming was dropped for a
        /// `jl_cycle` record, and the arming is sent unstaged at the thread's next arming
        /// (`hrtimer_start`, bpf/trace.bpf.c), in the reader's next round.
        SentLater,
        /// As that, by the programs of stop 56: the arming went with the dropped stage.
        Dropped,
    }

    /// Lab check 1b's scene (the RT guest: CPUs 0 and 1 measured, CPU 1 `nohz_full`, timer
    /// migration on), as the reduced BPF back end hands it over. Thread 11's timer, armed on
    /// CPU 1, expires on CPU 0 and wakes it from there. Thread 10 on CPU 0 was on time, so
    /// CPU 0's stage is dropped for one `jl_cycle` record: the moved expiry and wakeup reach
    /// user space only because the programs send them unstaged (`timers` map, bpf/trace.bpf.c),
    /// ahead of CPU 0's older records of a later, flushed stage. Returns CPU 1's sample as
    /// joined, and CPU 0's history's times.
    fn moved_timer_joined(
        moved_sent: bool,
        arming: Arming,
        timer_cpus: Vec<usize>,
    ) -> (SampleTrace, Vec<u64>) {
        let start = |ts: u64, pid: i32, hrtimer: u64, expires: i64| {
            let mut p = hrtimer.to_ne_bytes().to_vec();
            p.extend(expires.to_ne_bytes());
            p.extend(expires.to_ne_bytes());
            record(ts, pid, 1, HRTIMER_START, &p)
        };
        let expire = |ts: u64, cpu: u16, hrtimer: u64| {
            let mut p = hrtimer.to_ne_bytes().to_vec();
            p.extend((ts as i64).to_ne_bytes());
            record(ts, 0, cpu, HRTIMER_EXPIRE, &p)
        };
        let waking = |ts: u64, cpu: u16, pid: i32, comm: &str, target: i32| {
            let mut p = task_bytes(pid, 4, comm);
            p.extend(target.to_ne_bytes());
            p.extend(0u32.to_ne_bytes());
            record(ts, 0, cpu, WAKING, &p)
        };
        let switch = |ts: u64, cpu: u16, prev: (i32, i32, &str), next: (i32, i32, &str)| {
            let mut p = task_bytes(prev.0, prev.1, prev.2);
            p.extend(task_bytes(next.0, next.1, next.2));
            record(ts, prev.0, cpu, SWITCH, &p)
        };
        let irq = |ts: u64, kind: u16| {
            let mut p = 11i32.to_ne_bytes().to_vec();
            p.extend([0u8; 32]);
            p.extend(0u32.to_ne_bytes());
            match kind {
                IRQ_ENTRY => record(ts, 0, 0, IRQ_ENTRY, &p),
                _ => record(ts, 0, 0, IRQ_EXIT, &[11u32.to_ne_bytes(), [0; 4]].concat()),
            }
        };
        // An on-time wakeup of `thread` on its own CPU, due at `due` (armed at `armed`,
        // expired there 100 ns late with `now` 90 ns late, woken 150 ns late from the idle
        // task, switched in 300 ns late): its one jl_cycle record.
        let cycle = |cpu: u16, thread: (i32, i32, &str), hrtimer: u64, due: i64, armed: u64| {
            let at = |late: i64| (due + late) as u64;
            let idle = format!("swapper/{cpu}");
            let mut c = Vec::new();
            c.extend((CYCLE_ARMED | CYCLE_WAKING).to_ne_bytes());
            c.extend(hrtimer.to_ne_bytes());
            c.extend(due.to_ne_bytes());
            c.extend(due.to_ne_bytes());
            c.extend(armed.to_ne_bytes());
            c.extend(thread.0.to_ne_bytes());
            c.extend(0i32.to_ne_bytes());
            c.extend(at(100).to_ne_bytes());
            c.extend((due + 90).to_ne_bytes());
            c.extend(at(150).to_ne_bytes());
            c.extend(0i32.to_ne_bytes());
            c.extend(i32::from(cpu).to_ne_bytes());
            c.extend(task_bytes(thread.0, thread.1, thread.2));
            c.extend(task_bytes(0, 120, &idle));
            c.extend(task_bytes(thread.0, thread.1, thread.2));
            record(at(300), thread.0, cpu, CYCLE, &c)
        };
        let m0 = (10, 4, "jl-measure-0");
        let m1 = (11, 4, "jl-measure-1");
        let idle1 = (0, 120, "swapper/1");
        // The arming of thread 11's timer 0xa due at 1 ms, after its wakeup due at 600 ns.
        let armed = start(1_000, 11, 0xa, 1_000_000);
        // The reader's first round: CPU 1's last stage (its arming, when flushed; else its
        // on-time wakeup's jl_cycle), CPU 0's on-time wakeup due at 1 ms (one jl_cycle), and
        // the moved expiry and wakeup.
        let mut first = vec![cycle(0, m0, 0xb, 1_000_000, 500)];
        match arming {
            Arming::Flushed => first.push(armed.clone()),
            Arming::SentLater | Arming::Dropped => first.push(cycle(1, m1, 0xa, 600, 100)),
        }
        if moved_sent {
            first.push(expire(1_003_000, 0, 0xa));
            first.push(waking(1_003_500, 0, 11, "jl-measure-1", 1));
        }
        // The second round: CPU 1's stage (no expiry there: sent whole at the switch out, with
        // its thread's next arming), and CPU 0's next stage, flushed for a late wakeup: an
        // interrupt older than the moved expiry, sent after it.
        let mut second = vec![
            switch(1_005_000, 1, idle1, m1),
            start(1_006_000, 11, 0xa, 2_000_000),
            switch(1_006_500, 1, m1, idle1),
            irq(1_002_000, IRQ_ENTRY),
            irq(1_002_400, IRQ_EXIT),
        ];
        if let Arming::SentLater = arming {
            // Sent by that next arming, ahead of the stage.
            second.insert(0, armed);
        }
        let (tx, rx) = mpsc::channel();
        let (_senders_tx, senders_rx) = mpsc::channel();
        let names = Names {
            vectors: Vec::new(),
            softirqs: Vec::new(),
        };
        let thread = |cpu, tid| ThreadTrace {
            cpu,
            tid,
            tolerance_ns: 0,
            explain_above_ns: 1_000_000_000,
            gaps: false,
            sender: None,
        };
        let mut j = Joiner::new(rx, senders_rx, vec![thread(0, 10), thread(1, 11)], names)
            .with_timer_cpus(timer_cpus);
        let mut d = RecordDecoder::default();
        for round in [first, second] {
            // As the reader does: each record's events under the CPU it was written on, each
            // CPU's batch in time order.
            let mut per_cpu: BTreeMap<usize, Vec<TraceEvent>> = BTreeMap::new();
            for r in &round {
                d.decode_into(r, |cpu, e| per_cpu.entry(cpu).or_default().push(e))
                    .unwrap();
            }
            for (cpu, mut events) in per_cpu {
                events.sort_by_key(|e| e.ts);
                tx.send(TraceBatch {
                    cpu,
                    events,
                    complete_until_ns: u64::MAX,
                    policies: Vec::new(),
                    last: false,
                })
                .unwrap();
            }
            j.receive();
        }
        let sample = |expected_ns, latency_ns| Sample {
            seq: 0,
            expected_ns,
            latency_ns,
            missed: 0,
        };
        // CPU 0's own wakeup, from its jl_cycle.
        assert_eq!(j.join(0, &sample(1_000_000, 400)).irq_latency_ns, Some(90));
        let history = j.cpu_history(0);
        (j.join(1, &sample(1_000_000, 6_000)), history)
    }

    #[test]
    fn a_timer_moved_to_another_measured_cpu_is_joined_from_the_records_sent_unstaged() {
        let targets = crate::trace::migration::measured_targets_from(&[0, 1], Some(1), "1", "0-1");
        assert_eq!(targets, [0]);
        let (moved, history) = moved_timer_joined(true, Arming::Flushed, targets.clone());
        // Expired on CPU 0 3 us after its due time, woken there, switched in on CPU 1.
        assert_eq!(moved.irq_latency_ns, Some(3_000));
        assert_eq!(moved.thread_latency_ns, Some(3_000));
        assert_eq!(moved.wake_to_switch_ns, Some(1_500));
        assert_eq!(moved.switch_to_user_ns, Some(1_000));
        // CPU 0's history in time order, though its older interrupt came after the moved
        // records.
        assert!(history.is_sorted(), "{history:?}");
        assert!(history.contains(&1_002_000) && history.contains(&1_003_000));
        // The joiner of stop 55 (no measured target for BPF): unjoined.
        let unjoined = moved_timer_joined(true, Arming::Flushed, Vec::new()).0;
        assert_eq!(unjoined.irq_latency_ns, None);
        // The programs of stop 55 (the moved records staged on CPU 0, dropped with its
        // on-time stage): unjoined, 69-92 % of CPU 1's late wakeups in lab check 1b.
        let unjoined = moved_timer_joined(false, Arming::Flushed, targets).0;
        assert_eq!(unjoined.irq_latency_ns, None);
    }

    #[test]
    fn a_moved_timers_arming_in_a_dropped_stage_is_sent_at_the_next_arming_and_joined() {
        let targets = crate::trace::migration::measured_targets_from(&[0, 1], Some(1), "1", "0-1");
        // CPU 1's wakeup before was on time, its stage (the arming of the timer that then
        // moved) dropped; the arming reaches user space a round later, after the moved expiry,
        // sent by the thread's next arming: joined as when it was flushed.
        let (moved, _) = moved_timer_joined(true, Arming::SentLater, targets.clone());
        assert_eq!(moved.irq_latency_ns, Some(3_000));
        assert_eq!(moved.thread_latency_ns, Some(3_000));
        assert_eq!(moved.wake_to_switch_ns, Some(1_500));
        assert_eq!(moved.switch_to_user_ns, Some(1_000));
        // The programs of stop 56 (the arming gone with the dropped stage): unjoined, 22-31 %
        // of CPU 1's late wakeups in lab check 1b.
        let unjoined = moved_timer_joined(true, Arming::Dropped, targets).0;
        assert_eq!(unjoined.irq_latency_ns, None);
    }

    #[test]
    fn refuses_short_and_unknown_records() {
        let mut d = RecordDecoder::default();
        assert!(d.decode(&record(1, 0, 0, SWITCH, &[0; 10])).is_err());
        assert!(d.decode(&record(1, 0, 0, 99, &[0; 40])).is_err());
        assert!(d.decode(&[0; 8]).is_err());
    }
}
