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
//!
//! One concern (issue 41's near-limit files): counters.log's writer and its bounded reader,
//! which share the line format and the caps stated in the limits table; the counters' families
//! are `families.rs`, a record's fields `record.rs`. The reader (from [`read`] down, about 350
//! lines) is the part a later split would take out.

mod families;
mod record;

pub(crate) use families::kind_of;
pub use families::{Kind, family_of};
pub use record::GroupFigures;
pub use record::{AbsentRecord, CounterShift};
pub use record::{CountersRecord, CpuCorrelation};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, Read, Write};
use std::path::Path;
use std::sync::Arc;

/// Name of the file in a result directory.
pub const FILE_NAME: &str = "counters.log";

/// The version on the file's first line; a reader refuses a higher one.
pub(crate) const COUNTERS_FORMAT: u32 = 1;

/// The first line's words before the version.
const MAGIC: &str = "#jitterlab-counters";

/// One data line: the counters of one CPU in one log interval.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterInterval {
    /// The log interval (of latency.hlog) the line belongs to.
    pub interval: u64,
    pub cpu: usize,
    /// When the reads were made, from the run's first due time (CLOCK_MONOTONIC), ns.
    pub from_ns: u64,
    pub to_ns: u64,
    /// Every counter declared for the CPU, by name (shared with the declaration: a value
    /// kept costs 32 bytes, not a string of its own), 0 when the line leaves it out; `None`:
    /// unknown in this interval.
    pub values: Vec<(Arc<str>, Option<i64>)>,
}

/// A counter this system does not offer, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absent {
    pub counter: String,
    pub reason: String,
}

/// The most bytes the writer puts in counters.log: three quarters of what its readers read
/// ([`MAX_FILE_BYTES`]), so that a run never writes a counters.log its own `report` refuses
/// (issue 39, sixth hostile re-run, E1: about 10 KB/s on 2 CPUs at `--log-interval 10ms`,
/// 4 GiB in hours on 64 CPUs). The intervals that would take it past are not written, from
/// the first on (the file stays whole to there): counted in run.json
/// (`counters.intervals_not_written`) and said in its warnings.
pub(crate) const WRITTEN_MAX_BYTES: u64 = MAX_FILE_BYTES / 4 * 3;

/// Writes counters.log line by line, each line whole (one `write` per interval's lines),
/// within a budget ([`WRITTEN_MAX_BYTES`]).
pub(crate) struct CountersWriter<W: Write> {
    out: W,
    /// The counters last declared per CPU, to declare again only when they change.
    declared: HashMap<usize, Vec<String>>,
    buf: String,
    /// Bytes written, and the most to write.
    written: u64,
    budget_bytes: u64,
    /// Intervals not written for the budget: from the first on, every later one.
    pub(crate) intervals_not_written: u64,
}

impl<W: Write> CountersWriter<W> {
    /// Writes the header: the version, the log interval, and what this system does not offer.
    pub(crate) fn begin(out: W, interval_ns: u64, absent: &[Absent]) -> io::Result<Self> {
        Self::with_budget(out, interval_ns, absent, WRITTEN_MAX_BYTES)
    }

    /// [`CountersWriter::begin`] with a budget of `budget_bytes` (tests use a small one).
    pub(crate) fn with_budget(
        mut out: W,
        interval_ns: u64,
        absent: &[Absent],
        budget_bytes: u64,
    ) -> io::Result<Self> {
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
            written: head.len() as u64,
            budget_bytes,
            intervals_not_written: 0,
        })
    }

    /// Writes the lines of one interval (one per CPU). `counters(cpu)` names every counter read
    /// on that CPU, declared again when it changed since the last interval.
    pub(crate) fn write_interval<'a>(
        &mut self,
        lines: impl IntoIterator<Item = LineRef<'a>>,
    ) -> io::Result<()> {
        if self.intervals_not_written > 0 {
            self.intervals_not_written += 1;
            return Ok(());
        }
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
        let bytes = self.buf.len() as u64;
        if self.written.saturating_add(bytes) > self.budget_bytes {
            // The declarations it held are not in the file: nothing is written after it.
            self.intervals_not_written = 1;
            return Ok(());
        }
        self.out.write_all(self.buf.as_bytes())?;
        self.written += bytes;
        self.out.flush()
    }
}

/// One CPU's line as the recorder hands it to [`CountersWriter::write_interval`], borrowed:
/// `values[i]` is the value of `names[i]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineRef<'a> {
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
    pub(crate) fn names_of(&self, cpu: usize) -> &[String] {
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

/// The most of counters.log a reader reads: a larger file is refused. A run writes a line per
/// measured CPU per log interval, with the counters that changed: about 200 bytes, so a year of
/// 1 s intervals on 64 CPUs stays under it.
pub(crate) const MAX_FILE_BYTES: u64 = 4 << 30;
/// The most counters declared for one CPU (over the whole file). The recorder reads one per
/// IRQ line of /proc/interrupts, softirq and idle state: hundreds on large machines; it
/// declares no more than this ([`crate::recorder`]'s sampler stops there).
pub const MAX_NAMES_PER_CPU: usize = 16_384;
/// The most counters declared in all, each name of each CPU once: a declaration is kept whole while the
/// file is read (a few hundred bytes a name), so without this cap a file of declarations
/// alone, each CPU under [`MAX_NAMES_PER_CPU`], took 5.7 GB for 251 MB (issue 39, fourth
/// hostile re-run, N17). A run's counters.log declares a few hundred a CPU (its interrupt
/// lines, softirqs, frequency, temperature...): 4 096 on each of 256 CPUs fit.
pub(crate) const MAX_NAMES: usize = 1 << 20;
/// The longest counter name a reader takes: the recorder's names are a source and a kernel
/// label (`irq:LOC`, `idle:C1E:usage`, `softirq:NET_RX`), tens of bytes. Without it a name
/// could be as long as a line, and [`MAX_NAMES`] bounded no memory: 40 names of 100 KB a line
/// cost 5 times the file (400 MB read in 1.97 GB; issue 39, fifth hostile re-run, N23).
pub const MAX_NAME_BYTES: usize = 256;
/// The most bytes of names kept while a file is read, each name of each CPU once (each is
/// held about four times over: the CPU's declaration, its index, and the file's list with its
/// index): a run's 4 096 names of 20 bytes on each of 256 CPUs take 20 MiB.
pub const MAX_NAMES_BYTES: usize = 64 << 20;
/// The longest line a reader takes: a `#cpu` line or a data line of [`MAX_NAMES_PER_CPU`]
/// counters, with 20-digit values, is under 1 MiB. A longer line is left out (named in
/// `damage`) without being held in memory.
pub(crate) const MAX_LINE_BYTES: usize = 4 << 20;
/// The most values a scan hands out: a data line has one value for every counter declared
/// for its CPU (those it omits are 0), so ten-byte lines under a declaration of
/// [`MAX_NAMES_PER_CPU`] counters would otherwise cost 16 384 values each. A file with more
/// is refused, bounding the time of every reader.
pub const MAX_VALUES: u64 = 1 << 28;
/// The most values [`read`] keeps in memory (about 64 bytes each): more is refused, naming the
/// cap, after a first pass that counts them and keeps nothing; the report and
/// `export --format counters` read the file line by line instead.
pub const MAX_KEPT_VALUES: u64 = 1 << 25;

/// Why [`MAX_VALUES`] refuses a file.
const WHY_MAX_VALUES: &str =
    "the most jitterlab reads of a counters log: not a counters log of a run";
/// Why [`MAX_KEPT_VALUES`] refuses a file to [`read`].
const WHY_MAX_KEPT: &str = "the most read into memory at once (compare, the counters' correlation); the report and `export --format counters` read it in bounded memory";

/// Reads counters.log at `path` (a result file: never a device, at most [`MAX_FILE_BYTES`]).
/// Whole lines are kept; a torn last line and lines that do not parse are left out and named
/// in `damage`. Refused: a file that is not counters.log, or of a later version, or beyond the
/// caps above. The values are counted first, keeping nothing, so that a file over
/// [`MAX_KEPT_VALUES`] is refused at the line that passes it, in memory that does not grow with
/// it (issue 39 L-b: 2.4 GB and 35 s before a refusal); the memory kept is bounded by the cap.
pub fn read(path: &Path) -> Result<CountersFile, String> {
    count(path, MAX_KEPT_VALUES)?;
    keep_all(|each| scan(path, each), MAX_KEPT_VALUES)
        .map_err(|e| e.unwrap_or_else(|kept| format!("{}: {kept}", path.display())))
}

/// [`read`] in bounded memory: each data line goes to `each` as it is read and is not kept
/// (`intervals` of the result is empty), for readers that keep only what they draw (the
/// report).
pub fn scan(path: &Path, each: impl FnMut(CounterInterval)) -> Result<CountersFile, String> {
    let mut each = each;
    scan_path(path, Some(&mut each), MAX_VALUES).map(|(file, _)| file)
}

/// Checks counters.log at `path` as [`scan`] does, keeping nothing and making no value (time
/// linear in the file, memory in its declarations): its header and damage, and the values a
/// scan would hand out, at most `most` ([`MAX_VALUES`], or [`MAX_KEPT_VALUES`] for a reader
/// that keeps them): a file with more is refused at the line that passes it. For readers that
/// refuse before they write or keep anything (`export --format counters`, [`read`]).
pub fn count(path: &Path, most: u64) -> Result<(CountersFile, u64), String> {
    scan_path(path, None, most)
}

/// [`scan`] (`each` given) or [`count`] (none) of the file at `path`.
fn scan_path(
    path: &Path,
    each: Option<&mut dyn FnMut(CounterInterval)>,
    most: u64,
) -> Result<(CountersFile, u64), String> {
    let file = crate::input::open_result_file(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let size = file.metadata().map_or(0, |m| m.len());
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{}: {size} bytes, larger than {}, the most jitterlab reads of a counters log (a run writes about 200 bytes per CPU per log interval)",
            path.display(),
            crate::input::format_bytes(MAX_FILE_BYTES)
        ));
    }
    scan_from(io::BufReader::new(file), each, most).map_err(|e| format!("{}: {e}", path.display()))
}

/// [`read`] on any reader (unit tests, fixtures).
#[cfg(test)]
pub(crate) fn read_from(input: impl BufRead) -> Result<CountersFile, String> {
    keep_all(
        |each| scan_from(input, Some(each), MAX_VALUES).map(|(file, _)| file),
        MAX_KEPT_VALUES,
    )
    .map_err(|e| e.unwrap_or_else(|kept| kept))
}

/// Runs a scan keeping every data line, at most `most` values ([`MAX_KEPT_VALUES`]). The
/// error is the scan's (`Ok`), or that the cap was passed (`Err`, for the caller to name the
/// file).
fn keep_all(
    scan: impl FnOnce(&mut dyn FnMut(CounterInterval)) -> Result<CountersFile, String>,
    most: u64,
) -> Result<CountersFile, Result<String, String>> {
    let mut intervals = Vec::new();
    let mut kept = 0u64;
    let file = scan(&mut |i: CounterInterval| {
        kept += i.values.len() as u64;
        if kept <= most {
            intervals.push(i);
        }
    })
    .map_err(Ok)?;
    if kept > most {
        return Err(Err(format!(
            "it holds {kept} values (a value per data line and counter declared for its CPU), more than the {most} read into memory at once; the report and `export --format counters` read it in bounded memory"
        )));
    }
    Ok(CountersFile { intervals, ..file })
}

/// One CPU's counters as declared by its last `#cpu` line: the names in order, and the
/// position of each (so a data line is parsed in time linear in its length).
#[derive(Default)]
struct Declaration {
    names: Vec<Arc<str>>,
    index: HashMap<String, usize>,
}

/// Every counter declared for one CPU over the file: its position in
/// [`CountersFile::declared`], and the names there.
struct AllDeclared {
    at: usize,
    seen: std::collections::HashSet<String>,
}

/// What reading the next line gave.
enum Line {
    End,
    /// A line (with its newline, unless it is a torn last line) in the buffer.
    Read,
    /// A line longer than [`MAX_LINE_BYTES`], skipped: its length.
    TooLong(u64),
}

/// Reads the next line into `buf`, at most [`MAX_LINE_BYTES`] of it: a longer line is skipped
/// to its end without being held.
fn next_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<Line> {
    buf.clear();
    let n = (&mut *input)
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if buf.len() <= MAX_LINE_BYTES || buf.ends_with(b"\n") {
        return Ok(Line::Read);
    }
    let mut skipped = buf.len() as u64;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            break;
        }
        let (used, end) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        input.consume(used);
        skipped += used as u64;
        if end {
            break;
        }
    }
    Ok(Line::TooLong(skipped))
}

/// [`scan`] on any reader, or [`count`] when `each` is None (no line is made: nothing is
/// allocated per value). Time and memory linear in the file's bytes and the values handed out
/// (at most `most_values`, [`MAX_VALUES`] or [`MAX_KEPT_VALUES`]): each name is looked up in a
/// map, never searched for in a list. Returns the file (without its data lines) and the values
/// handed out (or counted).
fn scan_from(
    mut input: impl BufRead,
    mut each: Option<&mut dyn FnMut(CounterInterval)>,
    most_values: u64,
) -> Result<(CountersFile, u64), String> {
    let why = if most_values < MAX_VALUES {
        WHY_MAX_KEPT
    } else {
        WHY_MAX_VALUES
    };
    let mut file = CountersFile::default();
    let mut buf = Vec::new();
    let mut number = 0usize;
    let mut values = 0u64;
    // The names of every CPU's declarations, each counted once (what is kept while reading).
    let mut declared_names = 0usize;
    // And their bytes ([`MAX_NAMES_BYTES`]).
    let mut declared_bytes = 0usize;
    // Declared counters per CPU as of the current line (for reading zeros back), and over the
    // whole file.
    let mut current: HashMap<usize, Declaration> = HashMap::new();
    let mut all: HashMap<usize, AllDeclared> = HashMap::new();
    loop {
        let got = next_line(&mut input, &mut buf).map_err(|e| format!("cannot read: {e}"))?;
        number += 1;
        let line = match got {
            Line::End => break,
            Line::TooLong(bytes) => {
                if number == 1 {
                    return Err(
                        "not a counters log: its first line is not `#jitterlab-counters N`".into(),
                    );
                }
                file.damage.push(format!(
                    "line {number} ({bytes} bytes) is longer than {}, the longest line jitterlab reads of a counters log, and was left out",
                    crate::input::format_bytes(MAX_LINE_BYTES as u64)
                ));
                continue;
            }
            Line::Read => match std::str::from_utf8(&buf) {
                Ok(line) => line,
                Err(_) if number == 1 => {
                    return Err("not a counters log: its first line is not text".into());
                }
                Err(e) => {
                    file.damage.push(format!(
                        "line {number} is not UTF-8 text (byte {} of it) and was left out",
                        e.valid_up_to()
                    ));
                    continue;
                }
            },
        };
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
                    let mut declaration = Declaration::default();
                    for n in it.filter(|n| !n.is_empty()) {
                        if n.len() > MAX_NAME_BYTES {
                            return Err(format!(
                                "line {number}: a counter name of {} bytes for CPU {cpu}, longer than {MAX_NAME_BYTES} bytes, the longest jitterlab reads of a counters log (a name is kept while the file is read): not a counters log of a run",
                                n.len()
                            ));
                        }
                        if !declaration.index.contains_key(n) {
                            declaration.index.insert(n.into(), declaration.names.len());
                            declaration.names.push(n.into());
                        }
                    }
                    let everything = all.entry(cpu).or_insert_with(|| {
                        file.declared.push((cpu, Vec::new()));
                        AllDeclared {
                            at: file.declared.len() - 1,
                            seen: Default::default(),
                        }
                    });
                    let listed = &mut file.declared[everything.at].1;
                    for n in &declaration.names {
                        if !everything.seen.contains(&**n) {
                            everything.seen.insert(n.to_string());
                            listed.push(n.to_string());
                            declared_names += 1;
                            declared_bytes += n.len();
                        }
                    }
                    if listed.len() > MAX_NAMES_PER_CPU {
                        return Err(format!(
                            "line {number}: more than {MAX_NAMES_PER_CPU} counters are declared for CPU {cpu}, the most jitterlab writes or reads for one CPU: not a counters log of a run"
                        ));
                    }
                    if declared_names > MAX_NAMES {
                        return Err(format!(
                            "line {number}: more than {} counters are declared in all, the most jitterlab reads of a counters log (a declaration is kept while it is read): not a counters log of a run",
                            crate::units::group_digits(MAX_NAMES as u64)
                        ));
                    }
                    if declared_bytes > MAX_NAMES_BYTES {
                        return Err(format!(
                            "line {number}: the counter names declared in all take more than {}, the most jitterlab reads of a counters log (the names are kept while it is read): not a counters log of a run",
                            crate::input::format_bytes(MAX_NAMES_BYTES as u64)
                        ));
                    }
                    current.insert(cpu, declaration);
                }
                // Comments this version does not know are for later versions' readers.
                _ => {}
            }
            continue;
        }
        // Counted before the line is made: a refusal keeps nothing of it.
        match parse_data(text, &current, each.is_some()) {
            Some((n, line)) => {
                values += n;
                if values > most_values {
                    return Err(format!(
                        "line {number}: more than {} values (a value per data line and counter declared for its CPU), {why}",
                        crate::units::group_digits(most_values)
                    ));
                }
                if let (Some(each), Some(line)) = (each.as_mut(), line) {
                    each(line);
                }
            }
            None => file.damage.push(format!(
                "line {number} is not a counters line and was left out"
            )),
        }
    }
    if number <= 1 {
        return Err("empty: not a counters log".into());
    }
    Ok((file, values))
}

/// One data line: the values it hands out (one per counter declared for its CPU: those
/// missing from it read 0), and, with `make`, the line (else it is only checked, allocating
/// nothing). None when it does not parse.
fn parse_data(
    text: &str,
    declared: &HashMap<usize, Declaration>,
    make: bool,
) -> Option<(u64, Option<CounterInterval>)> {
    let mut words = text.split(' ');
    let interval = words.next()?.parse().ok()?;
    let cpu: usize = words.next()?.parse().ok()?;
    let from_ns = words.next()?.parse().ok()?;
    let to_ns = words.next()?.parse().ok()?;
    let declaration = declared.get(&cpu)?;
    let mut values: Vec<(Arc<str>, Option<i64>)> = Vec::new();
    if make {
        values = declaration
            .names
            .iter()
            .map(|n| (Arc::clone(n), Some(0)))
            .collect();
    }
    for w in words {
        let (name, value) = w.split_once('=')?;
        let value = match value {
            "?" => None,
            v => Some(v.parse::<i64>().ok()?),
        };
        let at = *declaration.index.get(name)?;
        if make {
            values[at].1 = value;
        }
    }
    let n = declaration.names.len() as u64;
    Some((
        n,
        make.then_some(CounterInterval {
            interval,
            cpu,
            from_ns,
            to_ns,
            values,
        }),
    ))
}

#[cfg(test)]
mod tests;
