//! The BPF back end of `--trace`: the programs of bpf/trace.bpf.c (built by bpf/build.sh, the
//! object embedded here) loaded with aya, attached to the same tracepoints the tracefs back end
//! enables, filtered in the kernel to the traced CPUs and followed threads, and their records
//! read from one BPF ring buffer by a reader thread that hands the recorder the same per-CPU
//! [`TraceBatch`]es as the tracefs reader (so the split and the explanations are one code).
//!
//! Nothing is pinned: the programs, maps and links are file descriptors of this process, so
//! dropping [`Loaded`] (or the process ending in any way, SIGKILL included) detaches and frees
//! them all.

mod deadline;
mod raw;
pub mod record;
mod refusal;

use super::reader::{self, Reader, ReaderStats, TraceBatch};
use crate::measure::clock::monotonic_ns;
use aya::maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf, EbpfLoader};
use record::{HEADER_BYTES, RecordDecoder, VECTORS};
pub(crate) use refusal::Refusal;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

/// The object bpf/build.sh builds from bpf/trace.bpf.c, aligned for the ELF parser.
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);
static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../../../bpf/trace.bpf.o"));

/// Where the kernel publishes its own BTF; without it CO-RE cannot relocate the programs.
pub(crate) const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The tracepoints every BPF trace needs (program name = tracepoint name): the tracefs back
/// end's, as the split needs the same events from either.
const REQUIRED: &[(&str, &str)] = super::decode::REQUIRED_EVENTS;

/// Up to this many timer callbacks filter the expiries (`JL_MAX_FUNCTIONS` in the C source).
const MAX_FUNCTIONS: usize = 8;
/// `struct jl_config` as u64 words: filter_tids, reduce, explain_above_ns, near_due,
/// n_functions, functions[8] (the words every program reads first, in one cache line).
type Config = [u64; 5 + MAX_FUNCTIONS];
const FILTER_TIDS: usize = 0;
const REDUCE: usize = 1;
const EXPLAIN_ABOVE: usize = 2;
const NEAR_DUE: usize = 3;
const N_FUNCTIONS: usize = 4;
const FUNCTIONS: usize = 5;
/// `struct jl_cpu` as u64 words (its size is asserted in the C source); the ones read here.
const CPU_STATE_WORDS: usize = 38;
type CpuState = [u64; CPU_STATE_WORDS];
const PENDING_SINCE: usize = 2;
const SEEN: usize = 3;
/// Staged records per CPU (`JL_STAGE` in the C source).
const STAGE_SLOTS: u32 = 1024;
/// `struct jl_lost`: total, pending, in_stage.
type Lost = [u64; 3];
const LOST_TOTAL: usize = 0;
const LOST_IN_STAGE: usize = 2;

/// The softirq names by vector (the kernel's `softirq_to_name`, unchanged since 4.x), for a
/// system whose tracefs format of softirq_entry cannot be read.
const SOFTIRQ_NAMES: &[&str] = &[
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The ring buffer per traced CPU, KiB, as the tracefs back end's per-CPU buffer (the one ring
/// buffer holds all CPUs': its size is this times their number, rounded up to a power of two).
const RING_KB_PER_CPU: u64 = super::BUFFER_KB;

/// An error chain as one line: aya's errors keep the kernel's reason in their sources.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// The programs loaded (verified) but not attached, with their maps sized for the traced CPUs.
pub(crate) struct Loaded {
    ebpf: Ebpf,
    cpus: Vec<usize>,
    /// `system:event` of every program loaded, in attach order.
    pub(crate) events: Vec<String>,
    /// (program, tracepoint) loaded, in attach order.
    programs: Vec<(String, String)>,
    pub(crate) ring_kb: u64,
}

/// Loads the object for `cpus`: reads the kernel's BTF, relocates, sizes the maps and has the
/// verifier check every program. The refusal names the cause in one line (no BTF, no
/// permission, the verifier's rejection with its log in a file, a missing tracepoint, a load
/// over its time bound) and the fix that applies here.
///
/// The load is bounded ([`deadline::LOAD_LIMIT`]: 20 s of CPU time, 60 s in all): past it,
/// the verifier is interrupted, everything loaded so far is closed, and the refusal says how
/// long it took. Every load goes through here: `doctor`, `run --dry-run`, `auto` and `bpf`.
pub(crate) fn load(cpus: &[usize]) -> Result<Loaded, Refusal> {
    let cpus = cpus.to_vec();
    let limit = deadline::LOAD_LIMIT;
    let (loaded, exceeded) =
        deadline::bounded(limit, move || load_now(&cpus)).map_err(refusal::other)?;
    match (loaded, exceeded) {
        (Err(_), Some(over)) => Err(refusal::timed_out(&over.describe(limit))),
        // Done just as the bound passed: what it loaded is as good as any.
        (loaded, _) => loaded,
    }
}

/// [`load`] without its bound, on the calling thread.
fn load_now(cpus: &[usize]) -> Result<Loaded, Refusal> {
    if !std::path::Path::new(KERNEL_BTF).exists() {
        return Err(refusal::no_btf(KERNEL_BTF));
    }
    let btf = Btf::from_sys_fs()
        .map_err(|e| refusal::other(format!("cannot read {KERNEL_BTF}: {}", chain(&e))))?;
    let max_cpu = cpus.iter().copied().max().unwrap_or(0);
    let ring_bytes = (RING_KB_PER_CPU * 1024 * cpus.len().max(1) as u64).next_power_of_two();
    let ebpf = EbpfLoader::new()
        .btf(Some(&btf))
        .map_max_entries("traced_cpus", max_cpu as u32 + 1)
        // The measuring threads and their IPC senders: at most two per CPU, with room to spare.
        .map_max_entries("tids", (4 * cpus.len() as u32).max(64))
        // The followed threads' timers (reduced mode), by address: a few per thread, and the
        // sleeps' timers on their stacks, evicted when unused (LRU).
        .map_max_entries("timers", (16 * cpus.len() as u32).max(256))
        .map_max_entries("events", ring_bytes as u32)
        .map_max_entries("stage", (max_cpu as u32 + 1) * STAGE_SLOTS)
        .load(&OBJECT.0)
        .map_err(|e| refusal::object(&chain(&e)))?;
    let mut loaded = Loaded {
        ebpf,
        cpus: cpus.to_vec(),
        events: Vec::new(),
        programs: Vec::new(),
        ring_kb: ring_bytes / 1024,
    };
    for &(system, name) in REQUIRED {
        loaded.load_program(&btf, system, name, name)?;
        loaded.events.push(format!("{system}:{name}"));
    }
    // Optional, as for tracefs: the architecture's vectors and NMIs where the kernel has them.
    let mut optional: Vec<(String, String, String)> =
        vec![("nmi".into(), "nmi_handler".into(), "nmi_handler".into())];
    for v in VECTORS {
        for end in ["entry", "exit"] {
            optional.push((
                super::decode::VECTOR_SYSTEM.into(),
                format!("v_{v}_{end}"),
                format!("{v}_{end}"),
            ));
        }
    }
    for (system, program, tracepoint) in optional {
        if btf
            .id_by_type_name_kind(
                &format!("btf_trace_{tracepoint}"),
                aya_obj::btf::BtfKind::Typedef,
            )
            .is_err()
        {
            continue;
        }
        loaded.load_program(&btf, &system, &program, &tracepoint)?;
        loaded.events.push(format!("{system}:{tracepoint}"));
    }
    // The kernel's types, parsed (tens of MB, locked by the run's mlockall), are not needed
    // once every program is verified: dropped here rather than kept for the whole run.
    drop(btf);
    Ok(loaded)
}

impl Loaded {
    /// Loads (verifies) `program`, for the tracepoint `system:tracepoint`.
    fn load_program(
        &mut self,
        btf: &Btf,
        system: &str,
        program: &str,
        tracepoint: &str,
    ) -> Result<(), Refusal> {
        let event = format!("{system}:{tracepoint}");
        let p: &mut BtfTracePoint = self
            .ebpf
            .program_mut(program)
            .ok_or_else(|| refusal::other(format!("the BPF object has no program {program}")))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| refusal::program(&event, &e, &chain(&e)))?;
        p.load(tracepoint, btf)
            .map_err(|e| refusal::program(&event, &e, &chain(&e)))?;
        self.programs
            .push((program.to_string(), tracepoint.to_string()));
        Ok(())
    }

    /// The CPU mask and the timer callbacks filter, then every program attached.
    /// `timer_functions` are kernel symbol names; those found in /proc/kallsyms filter the
    /// expiries (none found: all expiries are kept, as tracefs does on kernels before 6.2).
    /// Returns the filters set, for run.json.
    pub(crate) fn attach(&mut self, timer_functions: &[&str]) -> Result<Vec<String>, String> {
        let mut filters = Vec::new();
        {
            let traced = self.cpus.clone();
            let mut cpus: Array<&mut MapData, u32> = self
                .map_mut("traced_cpus")?
                .try_into()
                .map_err(|e: aya::maps::MapError| chain(&e))?;
            for &c in &traced {
                cpus.set(c as u32, 1, 0).map_err(|e| chain(&e))?;
            }
        }
        filters.push(format!(
            "all: CPU in {}",
            crate::cpulist::format_cpu_list(&self.cpus)
        ));
        let addresses = kallsyms_addresses(timer_functions);
        // What follow() and decide() set stays.
        let mut config = self.config()?.get(&0, 0).map_err(|e| chain(&e))?;
        if !addresses.is_empty() && addresses.len() <= MAX_FUNCTIONS {
            config[N_FUNCTIONS] = addresses.len() as u64;
            config[FUNCTIONS..FUNCTIONS + addresses.len()].copy_from_slice(&addresses);
            filters.push(format!(
                "timer:hrtimer_expire_entry: function in {}",
                timer_functions.join(", ")
            ));
        }
        self.set_config(config)?;
        for (program, tracepoint) in &self.programs {
            let p: &mut BtfTracePoint = self
                .ebpf
                .program_mut(program)
                .ok_or_else(|| format!("the object has no program {program}"))?
                .try_into()
                .map_err(|e: aya::programs::ProgramError| chain(&e))?;
            p.attach()
                .map_err(|e| format!("cannot attach to {tracepoint}: {}", chain(&e)))?;
        }
        Ok(filters)
    }

    fn map_mut(&mut self, name: &str) -> Result<&mut aya::maps::Map, String> {
        self.ebpf
            .map_mut(name)
            .ok_or_else(|| format!("the BPF object has no map {name}"))
    }

    fn config(&mut self) -> Result<Array<&mut MapData, Config>, String> {
        self.map_mut("config")?
            .try_into()
            .map_err(|e: aya::maps::MapError| chain(&e))
    }

    fn set_config(&mut self, config: Config) -> Result<(), String> {
        self.config()?.set(0, config, 0).map_err(|e| chain(&e))
    }

    /// Keeps the timer starts of `tids` only, and the wakeups of `tids` and of real-time tasks
    /// (the tracefs back end's filters). Returns the filters, for run.json.
    pub(crate) fn follow(&mut self, tids: &[i32]) -> Result<Vec<String>, String> {
        {
            // The value is the due time of the thread's wakeup under way, which the programs
            // keep (0: none yet).
            let mut map: BpfHashMap<&mut MapData, i32, u64> = self
                .map_mut("tids")?
                .try_into()
                .map_err(|e: aya::maps::MapError| chain(&e))?;
            for &t in tids {
                map.insert(t, 0, 0)
                    .map_err(|e| format!("cannot follow thread {t}: {}", chain(&e)))?;
            }
        }
        let mut config = self.config()?.get(&0, 0).map_err(|e| chain(&e))?;
        config[FILTER_TIDS] = 1;
        self.set_config(config)?;
        let list = tids
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        Ok(vec![
            format!("timer:hrtimer_start: common_pid in {list}"),
            format!("sched:sched_waking: pid in {list} or prio < 100"),
        ])
    }

    /// Tells the programs which wakeups user space explains (`explain_above_ns`): the culprit's
    /// kernel stack is taken for those; with `reduction`, the others are reduced in the
    /// kernel to one record each. Both work on the threads given to [`Loaded::follow`], before
    /// or after this call (an IPC run's, once its senders start). Returns the filter in words,
    /// for run.json.
    pub(crate) fn decide(
        &mut self,
        explain_above_ns: u64,
        reduction: Option<super::Reduction>,
    ) -> Result<Option<String>, String> {
        let mut config = self.config()?.get(&0, 0).map_err(|e| chain(&e))?;
        config[EXPLAIN_ABOVE] = explain_above_ns;
        config[REDUCE] = reduction.is_some() as u64;
        config[NEAR_DUE] = reduction.is_some_and(|r| r.near_due) as u64;
        self.set_config(config)?;
        Ok(reduction.map(|_| {
            format!(
                "all: reduced in the kernel: a wakeup not later than {explain_above_ns} ns is one record of its timer's arming and expiry, its wakeup and its switch; a later one sends every event since its thread last slept"
            )
        }))
    }

    /// Takes the per-CPU state out for the reader thread (when each CPU's trace is complete).
    pub(crate) fn take_cpu_state(&mut self) -> Result<PerCpuArray<MapData, CpuState>, String> {
        let map = self
            .ebpf
            .take_map("cpu_state")
            .ok_or("the BPF object has no map 'cpu_state'")?;
        PerCpuArray::try_from(map).map_err(|e| chain(&e))
    }

    /// Takes the ring buffer out for the reader thread.
    pub(crate) fn take_ring(&mut self) -> Result<RingBuf<MapData>, String> {
        let map = self
            .ebpf
            .take_map("events")
            .ok_or("the BPF object has no ring buffer 'events'")?;
        RingBuf::try_from(map).map_err(|e| chain(&e))
    }

    /// Records lost, all CPUs: in all (the ring buffer was full, or a CPU's stage wrapped
    /// over records its late wakeup needed), and of them those a stage wrapped over.
    pub(crate) fn lost(&mut self) -> Result<(u64, u64), String> {
        let map: PerCpuArray<&mut MapData, Lost> = self
            .map_mut("lost")?
            .try_into()
            .map_err(|e: aya::maps::MapError| chain(&e))?;
        let values = map.get(&0, 0).map_err(|e| chain(&e))?;
        Ok((
            values.iter().map(|l| l[LOST_TOTAL]).sum(),
            values.iter().map(|l| l[LOST_IN_STAGE]).sum(),
        ))
    }

    /// The softirq names by vector, from tracefs when it can be read, else the kernel's
    /// fixed list.
    pub(crate) fn softirq_names() -> Vec<(i64, String)> {
        let from_tracefs = super::tracefs::find().ok().and_then(|root| {
            super::format::load_event(&root, "irq", "softirq_entry")
                .ok()
                .map(|f| f.symbols())
        });
        match from_tracefs {
            Some(names) if !names.is_empty() => names,
            _ => SOFTIRQ_NAMES
                .iter()
                .enumerate()
                .map(|(i, n)| (i as i64, n.to_string()))
                .collect(),
        }
    }
}

/// The addresses of kernel functions `names` in /proc/kallsyms (every symbol of each name: a
/// static function may have several); empty when any is missing or the addresses are hidden
/// (kptr_restrict), so that no expiry the run needs is filtered out. From the process's one
/// reading of the table, which the culprits' stacks share.
fn kallsyms_addresses(names: &[&str]) -> Vec<u64> {
    if names.is_empty() {
        return Vec::new();
    }
    super::kallsyms::Symbols::shared().addresses_of(names)
}

/// Starts the reader thread: every `poll`, empties the ring buffer, splits the records by CPU,
/// and sends each traced CPU a batch, complete up to the time taken before the buffer was
/// emptied (see [`super::reader`] for why that bounds what is still to come).
///
/// A CPU whose records are staged in the kernel (reduced) is complete only up to its oldest
/// record not handed over yet (`pending_since` of its state, read before the ring buffer is
/// emptied: what a decision hands over after that read is later than it).
pub(crate) fn spawn_reader(
    ring: RingBuf<MapData>,
    state: PerCpuArray<MapData, CpuState>,
    cpus: &[usize],
    tx: Sender<TraceBatch>,
    poll: Duration,
    drain_priority: Option<i32>,
) -> Result<Reader, String> {
    let cpus = cpus.to_vec();
    // The diagnostic's file is claimed now, before measuring: a path it cannot write is said
    // before the run, not after.
    let raw = raw::RawCapture::from_env()?;
    reader::spawn_thread(drain_priority, move |stop| {
        let mut raw = raw;
        let read = read_loop(ring, state, cpus, tx, poll, stop, raw.as_mut());
        match raw.map(raw::RawCapture::write) {
            Some(Err(e)) if read.is_ok() => Err(e),
            _ => read,
        }
    })
}

fn read_loop(
    mut ring: RingBuf<MapData>,
    state: PerCpuArray<MapData, CpuState>,
    cpus: Vec<usize>,
    tx: Sender<TraceBatch>,
    poll: Duration,
    stop: &AtomicBool,
    mut raw: Option<&mut raw::RawCapture>,
) -> Result<ReaderStats, String> {
    let mut stats = ReaderStats::default();
    let mut decoder = RecordDecoder::default();
    let mut known: HashMap<i32, i32> = HashMap::new();
    // Each CPU's events of this round, by CPU number (a record names its CPU).
    let mut per_cpu: Vec<Vec<super::decode::TraceEvent>> = Vec::new();
    loop {
        let last_round = stop.load(Ordering::SeqCst);
        let now_ns = monotonic_ns();
        let cpu_states = state
            .get(&0, 0)
            .map_err(|e| format!("cannot read the BPF per-CPU state: {}", chain(&e)))?;
        let mut bad = None;
        let mut records = Vec::new();
        while let Some(item) = ring.next() {
            if raw.is_some() {
                records.push(item.to_vec());
            }
            stats.bytes += (item.len() + 8) as u64;
            if item.len() < HEADER_BYTES {
                return Err(format!("a BPF trace record of {} bytes", item.len()));
            }
            let decoded = decoder.decode_into(&item, |cpu, event| {
                if let super::decode::Kind::Lost { count } = event.kind {
                    stats.lost_events += count.unwrap_or(0);
                }
                if per_cpu.len() <= cpu {
                    per_cpu.resize_with(cpu + 1, Vec::new);
                }
                per_cpu[cpu].push(event);
            });
            if let Err(e) = decoded {
                bad = Some(e.to_string());
                break;
            }
        }
        if let Some(e) = bad {
            return Err(e);
        }
        let complete: Vec<(u64, u64, u64)> = cpus
            .iter()
            .map(|&cpu| {
                let pending = cpu_states.get(cpu).map_or(0, |s| s[PENDING_SINCE]);
                let complete_until_ns = match pending {
                    0 => now_ns,
                    since => now_ns.min(since),
                };
                (cpu as u64, pending, complete_until_ns)
            })
            .collect();
        if let Some(r) = raw.as_deref_mut() {
            r.drain(now_ns, &complete);
            for item in &records {
                r.record(item);
            }
        }
        for (&cpu, &(_, _, complete_until_ns)) in cpus.iter().zip(&complete) {
            let mut events = per_cpu.get_mut(cpu).map(std::mem::take).unwrap_or_default();
            // A program interrupted (by an interrupt's program) between taking its time and
            // reserving its record writes after the interrupt's: order each CPU by time, as
            // the ftrace ring buffer is.
            // (Almost always in order already: checked first, as a stable sort allocates.)
            if !events.is_sorted_by_key(|e| e.ts) {
                events.sort_by_key(|e| e.ts);
            }
            stats.events += events.len() as u64;
            let policies = reader::new_policies(&events, &mut known);
            let batch = TraceBatch {
                cpu,
                events,
                complete_until_ns,
                policies,
                last: last_round,
            };
            if tx.send(batch).is_err() {
                stats.cpu_time_ns = crate::measure::clock::thread_cpu_time_ns();
                return Ok(stats);
            }
        }
        per_cpu.iter_mut().for_each(Vec::clear);
        if last_round {
            stats.kernel_events = Some(cpu_states.iter().map(|s| s[SEEN]).sum());
            stats.cpu_time_ns = crate::measure::clock::thread_cpu_time_ns();
            return Ok(stats);
        }
        std::thread::sleep(poll);
    }
}

/// Whether this system can use the BPF back end, without attaching anything: the object loaded
/// and verified for CPU 0, then released. Err: why it cannot, and the fix.
pub(crate) fn probe() -> Result<(), Refusal> {
    load(&[0]).map(drop)
}
