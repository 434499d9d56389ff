//! What `rtla timerlat hist` prints (tools/tracing/rtla/src/timerlat_hist.c), line for line: the
//! header (`# RTLA timerlat histogram`, the time unit, `# Duration:` as days and hh:mm:ss, the
//! `Index` line naming `IRQ-NNN` and `Thr-NNN` per CPU), one row per bucket with a sample in it
//! (every bucket with `--with-zeros`): the bucket's lower bound left-aligned in 6, then each
//! column's count right-aligned in 9 and a space; `over:` (samples beyond the last bucket), and
//! the summary rows `count:`, `min:`, `avg:` (the sum over the count, truncated), `max:` (a
//! column without samples prints `-`), then the same of all CPUs together under `ALL:`. A CPU
//! with no sample in either column is left out; `--no-irq` / `--no-thread` leave out a column
//! everywhere, `--no-index` the index, `--no-header` the header, `--no-summary` the summaries.

use std::fmt::Write;

/// One column (IRQ or thread latency) of one CPU, in the output's unit (us, or ns with `-n`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Column {
    /// Per bucket; the last entry counts the samples beyond the last bucket (`over:`).
    pub buckets: Vec<u64>,
    pub count: u64,
    pub min: u64,
    pub sum: u128,
    pub max: u64,
}

impl Column {
    /// An empty column of `entries` buckets of `bucket_size`.
    pub fn new(entries: usize) -> Self {
        Column {
            buckets: vec![0; entries + 1],
            min: u64::MAX,
            ..Default::default()
        }
    }

    /// Adds one latency (in the output's unit) with buckets of `bucket_size`, as rtla does: its
    /// bucket is `value / bucket_size`, beyond the last counted as over.
    pub fn add(&mut self, value: u64, bucket_size: u64) {
        let entries = self.buckets.len() - 1;
        let bucket = (value / bucket_size.max(1)).min(entries as u64) as usize;
        self.buckets[bucket] += 1;
        self.count += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.sum += value as u128;
    }

    fn merge(&mut self, other: &Column) {
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }
}

/// One CPU's columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuHist {
    pub cpu: usize,
    pub irq: Column,
    pub thread: Column,
}

/// What rtla's options change in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    pub no_irq: bool,
    pub no_thread: bool,
    pub no_header: bool,
    pub no_summary: bool,
    pub no_index: bool,
    pub with_zeros: bool,
    /// `-n`: the unit is ns.
    pub nano: bool,
    pub bucket_size: u64,
    pub entries: usize,
}

/// rtla's duration: `  0 00:01:40` (days in 3, then hh:mm:ss).
pub(crate) fn duration_text(seconds: u64) -> String {
    format!(
        "{:3} {:02}:{:02}:{:02}",
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
        seconds % 60
    )
}

/// The whole output of a run of `duration_s` seconds.
pub fn render(cpus: &[CpuHist], l: &Layout, duration_s: u64) -> String {
    let shown: Vec<&CpuHist> = cpus
        .iter()
        .filter(|c| c.irq.count > 0 || c.thread.count > 0)
        .collect();
    let mut out = String::new();
    if !l.no_header {
        out += "# RTLA timerlat histogram\n";
        let (long, short) = if l.nano {
            ("nanoseconds", "ns")
        } else {
            ("microseconds", "us")
        };
        let _ = writeln!(out, "# Time unit is {long} ({short})");
        let _ = writeln!(out, "# Duration: {}", duration_text(duration_s));
        if !l.no_index {
            out += "Index";
        }
        for c in &shown {
            if !l.no_irq {
                let _ = write!(out, "   IRQ-{:03}", c.cpu);
            }
            if !l.no_thread {
                let _ = write!(out, "   Thr-{:03}", c.cpu);
            }
        }
        out.push('\n');
    }
    for bucket in 0..l.entries {
        let mut line = String::new();
        if !l.no_index {
            let _ = write!(line, "{:<6}", bucket as u64 * l.bucket_size);
        }
        let mut total = 0u64;
        for c in &shown {
            for col in columns_of(c, l) {
                total += col.buckets[bucket];
                let _ = write!(line, "{:9} ", col.buckets[bucket]);
            }
        }
        if total > 0 || l.with_zeros {
            out += &line;
            out.push('\n');
        }
    }
    if !l.no_index {
        out += "over: ";
    }
    for c in &shown {
        for col in columns_of(c, l) {
            let _ = write!(out, "{:9} ", col.buckets[l.entries]);
        }
    }
    out.push('\n');
    if l.no_summary {
        return out;
    }
    let per_cpu: Vec<&Column> = shown.iter().flat_map(|c| columns_of(c, l)).collect();
    summary_rows(&mut out, &per_cpu, l);
    let mut all = [Column::new(0), Column::new(0)];
    for c in &shown {
        all[0].merge(&c.irq);
        all[1].merge(&c.thread);
    }
    if !l.no_index {
        out += "ALL:  ";
    }
    if !l.no_irq {
        out += "      IRQ";
    }
    if !l.no_thread {
        out += "       Thr";
    }
    out.push('\n');
    let both = CpuHist {
        cpu: 0,
        irq: all[0].clone(),
        thread: all[1].clone(),
    };
    summary_rows(&mut out, &columns_of(&both, l), l);
    out
}

fn columns_of<'a>(c: &'a CpuHist, l: &Layout) -> Vec<&'a Column> {
    let mut v = Vec::new();
    if !l.no_irq {
        v.push(&c.irq);
    }
    if !l.no_thread {
        v.push(&c.thread);
    }
    v
}

/// One summary row's value of a column; None prints `-` (a column without samples).
type SummaryValue = fn(&Column) -> Option<u128>;

/// `count:`, `min:`, `avg:`, `max:` of these columns.
fn summary_rows(out: &mut String, columns: &[&Column], l: &Layout) {
    let rows: [(&str, SummaryValue); 4] = [
        ("count:", |c| Some(c.count as u128)),
        ("min:  ", |c| (c.count > 0).then_some(c.min as u128)),
        ("avg:  ", |c| (c.count > 0).then(|| c.sum / c.count as u128)),
        ("max:  ", |c| (c.count > 0).then_some(c.max as u128)),
    ];
    for (label, value) in rows {
        if !l.no_index {
            *out += label;
        }
        for c in columns {
            match value(c) {
                Some(v) => {
                    let _ = write!(out, "{v:9} ");
                }
                None => *out += "        - ",
            }
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtlas_buckets_and_an_empty_column() {
        let mut c = Column::new(4);
        for v in [0, 1, 5, 7, 9] {
            c.add(v, 2);
        }
        assert_eq!(c.buckets, vec![2, 0, 1, 1, 1]);
        assert_eq!((c.count, c.min, c.max, c.sum), (5, 0, 9, 22));
        let hist = CpuHist {
            cpu: 3,
            irq: Column::new(4),
            thread: c,
        };
        let l = Layout {
            bucket_size: 2,
            entries: 4,
            ..Default::default()
        };
        assert_eq!(
            render(&[hist], &l, 90_061),
            "# RTLA timerlat histogram\n\
             # Time unit is microseconds (us)\n\
             # Duration:   1 01:01:01\n\
             Index   IRQ-003   Thr-003\n\
             0             0         2 \n\
             4             0         1 \n\
             6             0         1 \n\
             over:         0         1 \n\
             count:        0         5 \n\
             min:          -         0 \n\
             avg:          -         4 \n\
             max:          -         9 \n\
             ALL:        IRQ       Thr\n\
             count:        0         5 \n\
             min:          -         0 \n\
             avg:          -         4 \n\
             max:          -         9 \n"
        );
    }
}
