//! counters.log: what moved on each measured CPU in each log interval besides latency
//! (interrupts per line, softirqs, steal time, context switches, idle states, frequency,
//! temperature, throttling, SMIs), one text line per CPU per interval, specified in
//! docs/result-format.md ("counters.log") with each counter's source and unit in
//! docs/counters.md.
//!
//! Why a text file of its own and not columns beside latency.hlog: the counters a system
//! offers differ from machine to machine (one per IRQ line), so the columns are not known
//! before the run; HdrHistogram tools must still read latency.hlog; and most counters are zero
//! in most intervals, which a sparse `name=value` line leaves out. Each line is complete and
//! ends with a newline, written as the interval closes: a run killed or a full disk leaves
//! every completed interval, and a reader drops only a torn last line.
//!
//! The layout, after the first line `#jitterlab-counters 1`:
//!
//! ```text
//! #interval_ns 1000000000
//! #cpu 0 irq:LOC irq:RES softirq:TIMER steal_ns       (the counters read on CPU 0 from here on)
//! #absent ctxsw neither /proc/schedstat nor ...        (a counter this system does not offer)
//! 3 0 3000412345 4000398765 irq:LOC=250 softirq:TIMER=250
//! ```
//!
//! A data line is `interval cpu from_ns to_ns name=value...`: the change of each counter
//! between two reads made `from_ns` and `to_ns` after the run's first due time
//! (CLOCK_MONOTONIC), for log interval `interval` (the interval of latency.hlog that starts
//! `interval × interval_ns` after the first due time). A counter declared for the CPU and not
//! on the line did not change (0); `name=?` says its change is unknown in that interval (it
//! went backwards: a CPU taken offline and back, a reset). Gauges ([`Kind::Gauge`]) hold the
//! value read at `to_ns` instead of a change.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, Write};
use std::path::Path;

/// Name of the file in a result directory.
pub const FILE_NAME: &str = "counters.log";

/// The version on the file's first line; a reader refuses a higher one.
pub const COUNTERS_FORMAT: u32 = 1;

/// The first line's words before the version.
const MAGIC: &str = "#jitterlab-counters";

/// What a counter's value in an interval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The change of a count over the interval (events, or time in ns).
    Delta,
    /// A value read at the interval's end (a frequency, a temperature).
    Gauge,
}

/// A family of counters: its name or name prefix, kind, unit and where it comes from (the
/// table docs/counters.md shows, one row each).
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The counter's name, or its prefix up to and including the first `:`.
    pub name: &'static str,
    pub kind: Kind,
    pub unit: &'static str,
    pub source: &'static str,
}

/// Every counter family, in the order the exports and docs list them.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "irq:",
        kind: Kind::Delta,
        unit: "interrupts",
        source: "/proc/interrupts, the CPU's column of the line (a number, or LOC, RES, CAL, TLB...)",
    },
    Family {
        name: "softirq:",
        kind: Kind::Delta,
        unit: "softirqs raised",
        source: "/proc/softirqs, the CPU's column of the line",
    },
    Family {
        name: "steal_ns",
        kind: Kind::Delta,
        unit: "ns (counted by the kernel in USER_HZ ticks: a multiple of 1e9/USER_HZ ns)",
        source: "/proc/stat, the cpuN line's steal field",
    },
    Family {
        name: "ctxsw",
        kind: Kind::Delta,
        unit: "context switches",
        source: "/sys/kernel/debug/sched/debug, .nr_switches of cpu#N (only where debugfs is mounted; jitterlab does not mount it)",
    },
    Family {
        name: "idle:",
        kind: Kind::Delta,
        unit: "idle:stateK:time_ns: ns in the state (kernel counts us); idle:stateK:usage: entries",
        source: "/sys/devices/system/cpu/cpuN/cpuidle/stateK/{time,usage}",
    },
    Family {
        name: "freq_khz",
        kind: Kind::Gauge,
        unit: "kHz, read at the interval's end",
        source: "/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq",
    },
    Family {
        name: "aperf",
        kind: Kind::Delta,
        unit: "APERF cycles (aperf/mperf over an interval is the busy frequency over the base frequency)",
        source: "MSR 0xE8 through /dev/cpu/N/msr",
    },
    Family {
        name: "mperf",
        kind: Kind::Delta,
        unit: "MPERF cycles (at the base frequency while not idle)",
        source: "MSR 0xE7 through /dev/cpu/N/msr",
    },
    Family {
        name: "smi",
        kind: Kind::Delta,
        unit: "system management interrupts (of the whole machine, counted on every CPU's line)",
        source: "MSR_SMI_COUNT (0x34, Intel) through /dev/cpu/N/msr",
    },
    Family {
        name: "temp_mc",
        kind: Kind::Gauge,
        unit: "milli-degrees Celsius, read at the interval's end",
        source: "hwmon coretemp: the CPU's core (else its package); else the x86_pkg_temp thermal zone",
    },
    Family {
        name: "throttle:",
        kind: Kind::Delta,
        unit: "thermal throttling events (throttle:core, throttle:package)",
        source: "/sys/devices/system/cpu/cpuN/thermal_throttle/{core,package}_throttle_count",
    },
];

/// The family a counter name belongs to (None for a name no version of jitterlab writes).
pub fn family_of(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| {
        if f.name.ends_with(':') {
            name.starts_with(f.name)
        } else {
            name == f.name
        }
    })
}

/// Whether the counter's value is a change (summed over intervals) or a reading.
pub fn kind_of(name: &str) -> Kind {
    family_of(name).map_or(Kind::Delta, |f| f.kind)
}

/// One data line: the counters of one CPU in one log interval.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterInterval {
    /// The log interval (of latency.hlog) the line belongs to.
    pub interval: u64,
    pub cpu: usize,
    /// When the reads were made, from the run's first due time (CLOCK_MONOTONIC), ns.
    pub from_ns: u64,
    pub to_ns: u64,
    /// The counters that changed, by name; `None`: unknown in this interval.
    pub values: Vec<(String, Option<i64>)>,
}

/// A counter this system does not offer, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absent {
    pub counter: String,
    pub reason: String,
}

/// Writes counters.log line by line, each line whole (one `write` per interval's lines).
pub struct CountersWriter<W: Write> {
    out: W,
    /// The counters last declared per CPU, to declare again only when they change.
    declared: HashMap<usize, Vec<String>>,
    buf: String,
}

impl<W: Write> CountersWriter<W> {
    /// Writes the header: the version, the log interval, and what this system does not offer.
    pub fn begin(mut out: W, interval_ns: u64, absent: &[Absent]) -> io::Result<Self> {
        let mut head = format!("{MAGIC} {COUNTERS_FORMAT}\n#interval_ns {interval_ns}\n");
        for a in absent {
            let _ = writeln!(
                head,
                "#absent {} {}",
                a.counter,
                a.reason.replace('\n', " ")
            );
        }
        out.write_all(head.as_bytes())?;
        out.flush()?;
        Ok(CountersWriter {
            out,
            declared: HashMap::new(),
            buf: String::new(),
        })
    }

    /// Writes the lines of one interval (one per CPU). `counters(cpu)` names every counter read
    /// on that CPU, declared again when it changed since the last interval.
    pub fn write_interval<'a>(
        &mut self,
        lines: impl IntoIterator<Item = LineRef<'a>>,
    ) -> io::Result<()> {
        self.buf.clear();
        for line in lines {
            let names = line.names;
            if self.declared.get(&line.cpu).map(|d| d.as_slice()) != Some(names) {
                let _ = write!(self.buf, "#cpu {}", line.cpu);
                for n in names {
                    let _ = write!(self.buf, " {n}");
                }
                self.buf.push('\n');
                self.declared.insert(line.cpu, names.to_vec());
            }
            let _ = write!(
                self.buf,
                "{} {} {} {}",
                line.interval, line.cpu, line.from_ns, line.to_ns
            );
            for (i, v) in line.values.iter().enumerate() {
                match v {
                    Some(0) => {}
                    Some(v) => {
                        let _ = write!(self.buf, " {}={v}", names[i]);
                    }
                    None => {
                        let _ = write!(self.buf, " {}=?", names[i]);
                    }
                }
            }
            self.buf.push('\n');
        }
        self.out.write_all(self.buf.as_bytes())?;
        self.out.flush()
    }
}

/// One CPU's line as the recorder hands it to [`CountersWriter::write_interval`], borrowed:
/// `values[i]` is the value of `names[i]`.
#[derive(Debug, Clone, Copy)]
pub struct LineRef<'a> {
    pub interval: u64,
    pub cpu: usize,
    pub from_ns: u64,
    pub to_ns: u64,
    pub names: &'a [String],
    pub values: &'a [Option<i64>],
}

/// What a reader found in counters.log.
#[derive(Debug, Clone, Default)]
pub struct CountersFile {
    pub interval_ns: u64,
    /// The counters declared per CPU over the whole file (a counter declared for a CPU reads 0
    /// on a line that lacks it, from its declaration on).
    pub declared: Vec<(usize, Vec<String>)>,
    pub absent: Vec<Absent>,
    /// Data lines in file order.
    pub intervals: Vec<CounterInterval>,
    /// Lines left out: a torn last line, lines that do not parse (with their line numbers).
    pub damage: Vec<String>,
}

impl CountersFile {
    /// The counters declared for `cpu`, in first-declared order.
    pub fn names_of(&self, cpu: usize) -> &[String] {
        self.declared
            .iter()
            .find(|(c, _)| *c == cpu)
            .map_or(&[], |(_, n)| n.as_slice())
    }

    /// The CPUs with lines, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        let mut cpus: Vec<usize> = self.declared.iter().map(|(c, _)| *c).collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }
}

/// Reads counters.log at `path` (a result file: never a device, size-capped by
/// [`crate::input`]). Whole lines are kept; a torn last line and lines that do not parse are
/// left out and named in `damage`. Refused: a file that is not counters.log, or of a later
/// version.
pub fn read(path: &Path) -> Result<CountersFile, String> {
    let mut intervals = Vec::new();
    let file = scan(path, |i| intervals.push(i))?;
    Ok(CountersFile { intervals, ..file })
}

/// [`read`] in bounded memory: each data line goes to `each` as it is read and is not kept
/// (`intervals` of the result is empty), for readers that keep only what they draw (the
/// report).
pub fn scan(path: &Path, each: impl FnMut(CounterInterval)) -> Result<CountersFile, String> {
    let file = crate::input::open_result_file(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    scan_from(io::BufReader::new(file), each).map_err(|e| format!("{}: {e}", path.display()))
}

/// [`read`] on any reader (unit tests, fixtures).
pub fn read_from(input: impl BufRead) -> Result<CountersFile, String> {
    let mut intervals = Vec::new();
    let file = scan_from(input, |i| intervals.push(i))?;
    Ok(CountersFile { intervals, ..file })
}

/// [`scan`] on any reader.
fn scan_from(
    mut input: impl BufRead,
    mut each: impl FnMut(CounterInterval),
) -> Result<CountersFile, String> {
    let mut file = CountersFile::default();
    let mut line = String::new();
    let mut number = 0usize;
    // Declared counters per CPU as of the current line (for reading zeros back).
    let mut current: HashMap<usize, Vec<String>> = HashMap::new();
    loop {
        line.clear();
        let n = input
            .read_line(&mut line)
            .map_err(|e| format!("cannot read: {e}"))?;
        if n == 0 {
            break;
        }
        number += 1;
        if !line.ends_with('\n') {
            file.damage.push(format!(
                "its last line ({} bytes) is torn (the run was killed or the disk was full while writing it) and was left out",
                line.len()
            ));
            break;
        }
        let text = line.trim_end();
        if number == 1 {
            let version = text
                .strip_prefix(MAGIC)
                .and_then(|v| v.trim().parse::<u32>().ok())
                .ok_or("not a counters log: its first line is not `#jitterlab-counters N`")?;
            if version > COUNTERS_FORMAT {
                return Err(format!(
                    "counters log format {version} is newer than this jitterlab reads ({COUNTERS_FORMAT}); use a newer jitterlab"
                ));
            }
            continue;
        }
        if let Some(rest) = text.strip_prefix('#') {
            let mut words = rest.splitn(2, ' ');
            match (words.next(), words.next()) {
                (Some("interval_ns"), Some(v)) => {
                    file.interval_ns = v.trim().parse().map_err(|_| {
                        format!("line {number}: #interval_ns {v:?} is not a number")
                    })?;
                }
                (Some("absent"), Some(v)) => {
                    let (counter, reason) = v.split_once(' ').unwrap_or((v, ""));
                    file.absent.push(Absent {
                        counter: counter.into(),
                        reason: reason.into(),
                    });
                }
                (Some("cpu"), Some(v)) => {
                    let mut it = v.split(' ');
                    let Some(cpu) = it.next().and_then(|c| c.parse::<usize>().ok()) else {
                        file.damage
                            .push(format!("line {number}: a #cpu line without a CPU number"));
                        continue;
                    };
                    let names: Vec<String> =
                        it.filter(|n| !n.is_empty()).map(String::from).collect();
                    match file.declared.iter_mut().find(|(c, _)| *c == cpu) {
                        Some((_, all)) => {
                            for n in &names {
                                if !all.contains(n) {
                                    all.push(n.clone());
                                }
                            }
                        }
                        None => file.declared.push((cpu, names.clone())),
                    }
                    current.insert(cpu, names);
                }
                // Comments this version does not know are for later versions' readers.
                _ => {}
            }
            continue;
        }
        match parse_data(text, &current) {
            Some(i) => each(i),
            None => file.damage.push(format!(
                "line {number} is not a counters line and was left out"
            )),
        }
    }
    if number == 0 {
        return Err("empty: not a counters log".into());
    }
    Ok(file)
}

/// One data line; the CPU's declared counters missing from it read 0.
fn parse_data(text: &str, declared: &HashMap<usize, Vec<String>>) -> Option<CounterInterval> {
    let mut words = text.split(' ');
    let interval = words.next()?.parse().ok()?;
    let cpu: usize = words.next()?.parse().ok()?;
    let from_ns = words.next()?.parse().ok()?;
    let to_ns = words.next()?.parse().ok()?;
    let names = declared.get(&cpu)?;
    let mut values: Vec<(String, Option<i64>)> =
        names.iter().map(|n| (n.clone(), Some(0))).collect();
    for w in words {
        let (name, value) = w.split_once('=')?;
        let value = match value {
            "?" => None,
            v => Some(v.parse::<i64>().ok()?),
        };
        match values.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => return None,
        }
    }
    Some(CounterInterval {
        interval,
        cpu,
        from_ns,
        to_ns,
        values,
    })
}

/// run.json `counters`: where the counters are, what reading them cost, and what moved with
/// the late wakeups (docs/counters.md).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CountersRecord {
    /// The file in the result directory ([`FILE_NAME`]); None when none was written (a
    /// segmented run: `/metrics` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Reads made (one per interval boundary, plus the first and the last).
    pub reads: u64,
    /// Time the drain side spent per read (every source of every measured CPU), ns: mean and
    /// largest.
    pub read_mean_ns: u64,
    pub read_max_ns: u64,
    /// The counters this system does not offer, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<AbsentRecord>,
    /// Per measured CPU: the intervals with a late wakeup against the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub correlation: Vec<CpuCorrelation>,
    /// Why there is no correlation (no counters file, no interval log...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_refused: Option<String>,
}

/// A counter this system does not offer, in run.json.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AbsentRecord {
    pub counter: String,
    pub reason: String,
}

/// One CPU's late intervals against the others (analysis::counters).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuCorrelation {
    pub cpu: usize,
    /// A late interval holds a wakeup later than this (its maximum in latency.hlog is above
    /// it), ns.
    pub threshold_ns: u64,
    /// What the threshold is: `deadline` (the thread's `--deadline`, else its interval).
    pub threshold_basis: String,
    /// Intervals with and without a late wakeup, among those used.
    pub late_intervals: u64,
    pub other_intervals: u64,
    /// Intervals left out: their counters were read too far from the interval's boundaries,
    /// or the interval has no counters line or no histogram.
    pub left_out_intervals: u64,
    /// Counters tested (those that were not the same in every interval used).
    pub tested: u64,
    /// The significance level for the whole CPU; each counter is held to `alpha / tested`
    /// (Bonferroni).
    pub alpha: f64,
    /// The counters that differ significantly, the smallest p first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<CounterShift>,
    /// Why this CPU was not tested (no late interval, or no other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// How one counter differed between the late intervals and the others.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CounterShift {
    pub counter: String,
    pub late: GroupFigures,
    pub other: GroupFigures,
    /// Two-sided Mann-Whitney U test.
    pub u: f64,
    pub p: f64,
    /// `exact` or `normal approximation`.
    pub method: String,
}

/// A counter's values over a group of intervals (each value is one interval's change, or
/// reading for a gauge).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupFigures {
    pub intervals: u64,
    pub min: i64,
    pub median: f64,
    pub mean: f64,
    pub max: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn writes_and_reads_back_with_zeros_unknowns_and_redeclarations() {
        let mut out = Vec::new();
        let absent = [Absent {
            counter: "smi".into(),
            reason: "no /dev/cpu/0/msr".into(),
        }];
        let mut w = CountersWriter::begin(&mut out, 1_000_000_000, &absent).unwrap();
        let a = names(&["irq:LOC", "softirq:TIMER", "freq_khz"]);
        w.write_interval([LineRef {
            interval: 0,
            cpu: 1,
            from_ns: 10,
            to_ns: 1_000_000_020,
            names: &a,
            values: &[Some(250), Some(0), None],
        }])
        .unwrap();
        let b = names(&["irq:LOC", "softirq:TIMER", "freq_khz", "irq:44"]);
        w.write_interval([LineRef {
            interval: 1,
            cpu: 1,
            from_ns: 1_000_000_020,
            to_ns: 2_000_000_000,
            names: &b,
            values: &[Some(3), Some(4), Some(2_400_000), Some(7)],
        }])
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("#jitterlab-counters 1\n#interval_ns 1000000000\n#absent smi no /dev/cpu/0/msr\n#cpu 1 irq:LOC softirq:TIMER freq_khz\n0 1 10 1000000020 irq:LOC=250 freq_khz=?\n"), "{text}");
        let read = read_from(text.as_bytes()).unwrap();
        assert_eq!(read.interval_ns, 1_000_000_000);
        assert_eq!(read.absent, absent);
        assert_eq!(read.names_of(1), b.as_slice());
        assert_eq!(read.intervals.len(), 2);
        assert_eq!(
            read.intervals[0].values,
            vec![
                ("irq:LOC".into(), Some(250)),
                ("softirq:TIMER".into(), Some(0)),
                ("freq_khz".into(), None)
            ]
        );
        assert_eq!(read.intervals[1].values[3], ("irq:44".into(), Some(7)));
        assert!(read.damage.is_empty());
    }

    #[test]
    fn a_torn_last_line_and_a_garbled_line_are_left_out_and_named() {
        let text = "#jitterlab-counters 1\n#interval_ns 5\n#cpu 0 irq:LOC\n0 0 0 5 irq:LOC=1\nxx yy\n1 0 5 10 irq:LOC=2\n2 0 10 1";
        let read = read_from(text.as_bytes()).unwrap();
        assert_eq!(read.intervals.len(), 2);
        assert_eq!(read.damage.len(), 2, "{:?}", read.damage);
        assert!(read.damage[0].contains("line 5"));
        assert!(read.damage[1].contains("torn"));
    }

    #[test]
    fn refuses_other_files_and_later_versions() {
        assert!(read_from("#jitterlab-counters 2\n".as_bytes()).is_err());
        assert!(read_from("#[StartTime: 1]\n".as_bytes()).is_err());
        assert!(read_from("".as_bytes()).is_err());
    }

    #[test]
    fn every_family_has_a_kind_and_the_gauges_are_the_readings() {
        assert_eq!(kind_of("freq_khz"), Kind::Gauge);
        assert_eq!(kind_of("temp_mc"), Kind::Gauge);
        assert_eq!(kind_of("irq:LOC"), Kind::Delta);
        assert_eq!(kind_of("idle:state1:time_ns"), Kind::Delta);
        assert!(family_of("softirq:NET_RX").is_some());
        assert!(family_of("bogus").is_none());
    }
}
