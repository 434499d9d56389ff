//! The context counters of the measured CPUs (interrupts, softirqs, steal, context switches,
//! idle states, frequency, temperature, throttling, SMIs), read by the drain side at every log
//! interval boundary and written to counters.log (`format::counters`), never by the measuring
//! threads.
//!
//! The reads follow the run's interval grid on CLOCK_MONOTONIC: [`CounterLog::due_in`] tells
//! the session how long until the next boundary, so its poll comes then, and
//! [`CounterLog::poll`] reads once a boundary has passed. Each line records when its two reads
//! were made (`from_ns`, `to_ns`), so how far a read came after its boundary is in the file and
//! the correlation (`analysis::counters`) leaves out lines that straddle intervals.
//!
//! Per read: one `pread` per source file into buffers kept from read to read, a parse that
//! allocates nothing, a lookup of each counter's slot by name; a name seen for the first time
//! (the first read, an IRQ line added by a driver) allocates its slot once.

pub(crate) mod parse;
pub(crate) mod sources;

use crate::format::counters::{Absent, CountersWriter, Kind, LineRef, MAX_NAMES_PER_CPU, kind_of};
pub(crate) use sources::Roots;
use sources::Sources;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::time::Duration;

/// One measured CPU's counters: names in first-seen order, their last and current readings.
struct CpuCounters {
    cpu: usize,
    names: Vec<String>,
    index: HashMap<String, usize>,
    kinds: Vec<Kind>,
    /// 32-bit counters (every /proc/interrupts and /proc/softirqs count is an `unsigned int` in
    /// the kernel): their change is taken modulo 2^32.
    narrow: Vec<bool>,
    prev: Vec<Option<u64>>,
    cur: Vec<Option<u64>>,
    /// The values of the last interval (changes, or readings for gauges).
    values: Vec<Option<i64>>,
    /// Since the first read: the sum of the changes, the last reading for gauges (`/metrics`).
    totals: Vec<i64>,
}

impl CpuCounters {
    fn new(cpu: usize) -> Self {
        CpuCounters {
            cpu,
            names: Vec::new(),
            index: HashMap::new(),
            kinds: Vec::new(),
            narrow: Vec::new(),
            prev: Vec::new(),
            cur: Vec::new(),
            values: Vec::new(),
            totals: Vec::new(),
        }
    }

    /// Stores a reading of `prefix` + `label` (one name joined only when it is new).
    fn set(&mut self, prefix: &str, label: &str, value: u64, scratch: &mut String) {
        scratch.clear();
        scratch.push_str(prefix);
        scratch.push_str(label);
        let slot = match self.index.get(scratch.as_str()) {
            Some(&i) => i,
            // Readers refuse a file declaring more for one CPU (format::counters): a system
            // with more counters than that has the first ones recorded.
            None if self.names.len() >= MAX_NAMES_PER_CPU => return,
            None => {
                let i = self.names.len();
                self.names.push(scratch.clone());
                self.index.insert(scratch.clone(), i);
                self.kinds.push(kind_of(scratch));
                self.narrow.push(prefix == "irq:" || prefix == "softirq:");
                self.prev.push(None);
                self.cur.push(None);
                self.values.push(None);
                self.totals.push(0);
                i
            }
        };
        self.cur[slot] = Some(value);
    }

    /// The interval's values from the last two readings, and the readings moved on.
    fn close(&mut self) {
        for i in 0..self.names.len() {
            self.values[i] = match (self.kinds[i], self.prev[i], self.cur[i]) {
                (Kind::Gauge, _, Some(now)) => Some(now as i64),
                (Kind::Delta, Some(before), Some(now)) if self.narrow[i] => {
                    Some((now.wrapping_sub(before) & 0xFFFF_FFFF) as i64)
                }
                (Kind::Delta, Some(before), Some(now)) if now >= before => {
                    Some((now - before) as i64)
                }
                // Went backwards, appeared or vanished: unknown in this interval.
                _ => None,
            };
            match (self.kinds[i], self.values[i]) {
                (Kind::Gauge, Some(v)) => self.totals[i] = v,
                (Kind::Delta, Some(v)) => self.totals[i] = self.totals[i].saturating_add(v),
                _ => {}
            }
            self.prev[i] = self.cur[i].take();
        }
    }
}

/// Reads the counters of the measured CPUs and hands out each interval's values.
pub(crate) struct CounterSampler {
    sources: Sources,
    cpus: Vec<CpuCounters>,
    /// The position in `cpus` of each CPU number (None: not measured).
    slot_of: Vec<Option<usize>>,
    scratch: String,
    /// What the system does not offer.
    pub(crate) absent: Vec<Absent>,
}

impl CounterSampler {
    pub(crate) fn open(roots: &Roots, cpus: &[usize]) -> CounterSampler {
        let (sources, absent) = Sources::open(roots, cpus);
        let mut slot_of = vec![None; cpus.iter().max().map_or(0, |m| m + 1)];
        for (k, &c) in cpus.iter().enumerate() {
            slot_of[c] = Some(k);
        }
        CounterSampler {
            sources,
            cpus: cpus.iter().map(|&c| CpuCounters::new(c)).collect(),
            slot_of,
            scratch: String::new(),
            absent,
        }
    }

    /// Reads every counter once; the values of the interval since the last read follow from
    /// [`CounterSampler::lines`].
    pub(crate) fn read(&mut self) {
        let (cpus, slot_of, scratch) = (&mut self.cpus, &self.slot_of, &mut self.scratch);
        self.sources.read(|cpu, prefix, label, value| {
            if let Some(Some(k)) = slot_of.get(cpu) {
                cpus[*k].set(prefix, label, value, scratch);
            }
        });
        for c in &mut self.cpus {
            c.close();
        }
    }

    /// The last interval's lines, one per measured CPU.
    pub(crate) fn lines(
        &self,
        interval: u64,
        from_ns: u64,
        to_ns: u64,
    ) -> impl Iterator<Item = LineRef<'_>> {
        self.cpus.iter().map(move |c| LineRef {
            interval,
            cpu: c.cpu,
            from_ns,
            to_ns,
            names: &c.names,
            values: &c.values,
        })
    }

    /// Per CPU and counter since the first read: the sum of the changes, the last reading of a
    /// gauge.
    pub(crate) fn totals(&self) -> impl Iterator<Item = (usize, &str, Kind, i64)> {
        self.cpus.iter().flat_map(|c| {
            c.names
                .iter()
                .zip(&c.kinds)
                .zip(&c.totals)
                .map(move |((n, k), t)| (c.cpu, n.as_str(), *k, *t))
        })
    }
}

/// How much the reads cost the drain side, for run.json (`counters.read_ns_*`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReadCost {
    pub reads: u64,
    pub(crate) total_ns: u64,
    pub max_ns: u64,
}

/// The counters of a run: read at each log interval boundary, written to counters.log.
pub(crate) struct CounterLog {
    sampler: CounterSampler,
    writer: Option<CountersWriter<File>>,
    /// The run's first due time (CLOCK_MONOTONIC) and the log interval.
    start_mono: u64,
    interval_ns: u64,
    /// The boundary to read at next: `start_mono + next × interval_ns` (0: the first read).
    next: u64,
    /// When the last read was made, from `start_mono`.
    last_read_ns: Option<u64>,
    /// The first write error: nothing more is written (a torn line stays the last one).
    pub(crate) error: Option<io::Error>,
    pub(crate) cost: ReadCost,
}

impl CounterLog {
    /// `file` is counters.log, new; its header is written now.
    pub(crate) fn begin(
        sampler: CounterSampler,
        file: Option<File>,
        start_mono: u64,
        interval_ns: u64,
    ) -> io::Result<CounterLog> {
        let writer = match file {
            Some(f) => Some(CountersWriter::begin(f, interval_ns, &sampler.absent)?),
            None => None,
        };
        Ok(CounterLog {
            sampler,
            writer,
            start_mono,
            interval_ns: interval_ns.max(1),
            next: 0,
            last_read_ns: None,
            error: None,
            cost: ReadCost::default(),
        })
    }

    /// How long from `now_mono` until the next boundary to read at.
    pub(crate) fn due_in(&self, now_mono: u64) -> Duration {
        let at = self
            .start_mono
            .saturating_add(self.next.saturating_mul(self.interval_ns));
        Duration::from_nanos(at.saturating_sub(now_mono))
    }

    /// Reads the counters if a boundary has passed by `now_mono`, and writes the interval that
    /// ended there. A poll that comes more than one interval late writes one line for the last
    /// interval, its reads' times showing the longer span.
    pub(crate) fn poll(&mut self, now_mono: u64) {
        let at = self
            .start_mono
            .saturating_add(self.next.saturating_mul(self.interval_ns));
        if now_mono < at || self.next == u64::MAX {
            return;
        }
        let crossed = (now_mono - self.start_mono) / self.interval_ns;
        self.read_and_write(crossed.saturating_sub(1));
        self.next = crossed + 1;
    }

    /// The last read, at the run's end: the (partial) interval since the last boundary read,
    /// if any read was made. Nothing is read after it.
    pub(crate) fn finish(&mut self) {
        if self.last_read_ns.is_none() || self.next == u64::MAX {
            return;
        }
        self.read_and_write(self.next - 1);
        self.next = u64::MAX;
    }

    fn read_and_write(&mut self, interval: u64) {
        let before = crate::measure::clock::monotonic_ns();
        self.sampler.read();
        let after = crate::measure::clock::monotonic_ns();
        let took = after - before;
        self.cost.reads += 1;
        self.cost.total_ns += took;
        self.cost.max_ns = self.cost.max_ns.max(took);
        // The time of the read: its middle.
        let at = (before + took / 2).saturating_sub(self.start_mono);
        if let Some(from) = self.last_read_ns.replace(at)
            && self.error.is_none()
            && let Some(w) = &mut self.writer
            && let Err(e) = w.write_interval(self.sampler.lines(interval, from, at))
        {
            self.error = Some(e);
        }
    }

    /// What the system does not offer.
    pub(crate) fn absent(&self) -> &[Absent] {
        &self.sampler.absent
    }

    /// The intervals counters.log's budget left out (`format::counters::WRITTEN_MAX_BYTES`).
    pub(crate) fn intervals_not_written(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.intervals_not_written)
    }

    /// Whether counters.log is written (not in a segmented run).
    pub(crate) fn writes_file(&self) -> bool {
        self.writer.is_some()
    }

    /// Per CPU and counter since the start (`/metrics`).
    pub(crate) fn totals(&self) -> impl Iterator<Item = (usize, &str, Kind, i64)> {
        self.sampler.totals()
    }
}

#[cfg(test)]
mod tests;
