//! The oracle: a deliberately naive reference for every figure jitterlab derives from its
//! samples (issue 23). It shares no code with `src/analysis` or `src/record`: samples.bin is
//! decoded here from the layout docs/result-format.md specifies, and every figure is computed
//! by sorting and counting. Tests hold jitterlab's figures against it within the precision the
//! documentation states:
//!
//! - `samples`, `min_ns`, `max_ns`, `missed_periods`, `deadline_misses`, `early_wakeups`,
//!   within-counts and spike counts: exact.
//! - `mean_ns`, `stddev_ns` (run.json's whole-run figures): exact up to floating-point rounding.
//! - Percentiles: nearest rank, rank = ceil(q·n) (at least 1), negative latencies counted as 0,
//!   reported as the highest value of the HDR bucket (3 significant digits: exact below 2048 ns,
//!   a bucket at most 1/1024 of its value wide above), clamped into the exact [min, max]. So a
//!   percentile p agrees with the exact sample x of its rank when x <= p <= x + x/1024.
//! - Figures read from histograms (per-phase min, max, mean, stddev): within 1/1024 of the
//!   value (the bucket width).

use std::collections::BTreeMap;
use std::path::Path;

/// One sample of samples.bin, as the file format names its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub cpu: u32,
    pub missed: u32,
    pub seq: u64,
    pub expected_ns: u64,
    pub latency_ns: i64,
    pub irq_latency_ns: Option<i64>,
}

/// samples.bin: the header's run start and every sample of its whole records or blocks (a torn
/// last record or block is left out, as the format's reader rules say).
pub struct SampleFile {
    /// Clock id of `expected_ns` (1 = CLOCK_MONOTONIC).
    pub clock: u32,
    /// The first due time, on that clock.
    pub start_ns: u64,
    pub samples: Vec<Sample>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Reads samples.bin, format 1 or 2, from the documented layout alone.
pub fn read_samples(path: &Path) -> SampleFile {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.len() >= 32, "{}: no 32-byte header", path.display());
    let (magic, clock, start_ns) = (&bytes[0..8], u32_at(&bytes, 12), u64_at(&bytes, 16));
    let samples = match magic {
        b"JLSAMPL1" => format_1(&bytes),
        b"JLSAMPL2" => format_2(&bytes),
        other => panic!("{}: unknown magic {other:?}", path.display()),
    };
    SampleFile {
        clock,
        start_ns,
        samples,
    }
}

/// Format 1: fixed records of the header's size, the first 40 bytes used.
fn format_1(bytes: &[u8]) -> Vec<Sample> {
    let size = u32_at(bytes, 8) as usize;
    assert!((40..=4096).contains(&size), "record size {size}");
    bytes[32..]
        .chunks_exact(size)
        .map(|r| {
            let irq = u64_at(r, 32) as i64;
            Sample {
                cpu: u32_at(r, 0),
                missed: u32_at(r, 4),
                seq: u64_at(r, 8),
                expected_ns: u64_at(r, 16),
                latency_ns: u64_at(r, 24) as i64,
                irq_latency_ns: (irq != i64::MIN).then_some(irq),
            }
        })
        .collect()
}

/// LEB128 at `*i`.
fn varint(p: &[u8], i: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = p[*i];
        *i += 1;
        v |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b < 0x80 {
            return v;
        }
    }
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Format 2: CRC-checked blocks of tagged records predicted from the previous record of the
/// same CPU in the block (docs/result-format.md, "Format 2"), transcribed from its Python
/// reader.
fn format_2(bytes: &[u8]) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut at = 32;
    while at + 12 <= bytes.len() {
        let (size, count, crc) = (
            u32_at(bytes, at) as usize,
            u32_at(bytes, at + 4),
            u32_at(bytes, at + 8),
        );
        if size > 1 << 20 || at + 12 + size > bytes.len() {
            break; // the torn last block
        }
        let p = &bytes[at + 12..at + 12 + size];
        let mut h = crc32fast::Hasher::new();
        h.update(&bytes[at..at + 8]);
        h.update(p);
        if h.finalize() != crc {
            break;
        }
        // Per CPU: (seq, expected, missed, period) of its previous record in the block.
        let mut prev: BTreeMap<u32, (u64, u64, u32, u64)> = BTreeMap::new();
        let (mut i, mut cpu) = (0usize, 0u32);
        for _ in 0..count {
            let tag = p[i];
            i += 1;
            assert_eq!(tag & !0x1f, 0, "unknown tag bits");
            if tag & 1 != 0 {
                cpu = varint(p, &mut i) as u32;
            }
            let s = prev.get(&cpu).copied();
            let mut seq = s.map_or(0, |s| s.0.wrapping_add(1));
            if tag & 2 != 0 {
                seq = seq.wrapping_add(unzigzag(varint(p, &mut i)) as u64);
            }
            let periods = s.map_or(0, |s| seq.wrapping_sub(s.0).wrapping_add(u64::from(s.2)));
            let mut expected = s.map_or(0, |s| s.1.wrapping_add(s.3.wrapping_mul(periods)));
            if tag & 4 != 0 {
                expected = expected.wrapping_add(unzigzag(varint(p, &mut i)) as u64);
            }
            let missed = if tag & 8 != 0 {
                varint(p, &mut i) as u32
            } else {
                0
            };
            let irq = (tag & 16 != 0).then(|| unzigzag(varint(p, &mut i)));
            let latency_ns = unzigzag(varint(p, &mut i));
            let period = match s {
                Some(s) if periods == 1 => expected.wrapping_sub(s.1),
                Some(s) => s.3,
                None => 0,
            };
            prev.insert(cpu, (seq, expected, missed, period));
            out.push(Sample {
                cpu,
                missed,
                seq,
                expected_ns: expected,
                latency_ns,
                irq_latency_ns: irq,
            });
        }
        assert_eq!(i, size, "a block decodes using all of its payload");
        at += 12 + size;
    }
    out
}

/// The samples of each CPU, in `seq` order.
pub fn per_cpu(samples: &[Sample]) -> BTreeMap<u32, Vec<Sample>> {
    let mut by: BTreeMap<u32, Vec<Sample>> = BTreeMap::new();
    for s in samples {
        by.entry(s.cpu).or_default().push(*s);
    }
    by.values_mut().for_each(|v| v.sort_by_key(|s| s.seq));
    by
}

/// The figures of one set of latencies, by sorting and counting.
#[derive(Debug, Clone)]
pub struct Figures {
    /// Ascending.
    pub sorted: Vec<i64>,
    pub mean: f64,
    /// Population standard deviation.
    pub stddev: f64,
}

/// The percentiles run.json reports, with their field names.
pub const PERCENTILES: &[(&str, u64, u64)] = &[
    ("p50_ns", 50, 100),
    ("p90_ns", 90, 100),
    ("p99_ns", 99, 100),
    ("p999_ns", 999, 1000),
    ("p9999_ns", 9999, 10000),
];

impl Figures {
    pub fn of(latencies: impl IntoIterator<Item = i64>) -> Figures {
        let mut sorted: Vec<i64> = latencies.into_iter().collect();
        sorted.sort_unstable();
        let n = sorted.len() as f64;
        let mean = sorted.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = sorted
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        Figures {
            sorted,
            mean,
            stddev: var.sqrt(),
        }
    }

    pub fn count(&self) -> u64 {
        self.sorted.len() as u64
    }
    pub fn min(&self) -> i64 {
        self.sorted[0]
    }
    pub fn max(&self) -> i64 {
        *self.sorted.last().unwrap()
    }

    /// The sample of nearest rank ceil(num/den · n) (at least 1), counted exactly in integers;
    /// negative latencies count as 0 (as the histograms record them).
    pub fn percentile(&self, num: u64, den: u64) -> i64 {
        let n = self.count();
        let rank = (n * num).div_ceil(den).max(1);
        self.sorted[(rank - 1) as usize].max(0)
    }

    /// Samples at or below `threshold_ns` ("within").
    pub fn within(&self, threshold_ns: i64) -> u64 {
        self.sorted.partition_point(|&v| v <= threshold_ns) as u64
    }

    /// Whether `reported` is the percentile num/den within the documented precision: at least
    /// the exact sample of its rank and at most the top of that sample's HDR bucket (and never
    /// beyond the exact maximum). The rank in floating point (ceil(q·n) with q = num/den as an
    /// f64, as the histogram computes it) may differ from the exact rank by one where q·n is
    /// an integer; either rank's sample is accepted.
    pub fn percentile_agrees(&self, num: u64, den: u64, reported: i64) -> Result<(), String> {
        let exact = self.percentile(num, den);
        let (lo, top) = self.percentile_range(num, den);
        if reported >= lo && reported <= top {
            Ok(())
        } else {
            Err(format!(
                "p{num}/{den}: reported {reported} ns, the oracle's sample of that rank is {exact} ns (accepted {lo}..={top} ns: the HDR bucket, clamped to max)"
            ))
        }
    }
}

impl Figures {
    /// The values [`Figures::percentile_agrees`] accepts for the percentile num/den.
    pub fn percentile_range(&self, num: u64, den: u64) -> (i64, i64) {
        let n = self.count();
        let float_rank = ((num as f64 / den as f64 * n as f64).ceil() as u64).clamp(1, n);
        let exact = self.percentile(num, den);
        let other = self.sorted[(float_rank - 1) as usize].max(0);
        let (lo, hi) = (exact.min(other), exact.max(other));
        (lo, (hi + hi / 1024).min(self.max().max(0)))
    }
}

/// The time one CPU's thread was observed (docs/result-format.md `exposure_ns`): from the
/// first due time `start_ns` to the end of its latest wakeup (due time plus latency, a
/// negative latency as 0); 0 without samples. The exposure of its spike rates ("once in").
pub fn observed_ns(samples: &[Sample], start_ns: u64) -> u64 {
    samples
        .iter()
        .map(|s| s.expected_ns.saturating_sub(start_ns) + s.latency_ns.max(0) as u64)
        .max()
        .unwrap_or(0)
}

/// A span as the summary prints it (`units::format_span`: "850 ns", "743.23 ms", "3.20 s",
/// "7.5 min", "11.4 days"): its value in ns and half its last printed digit.
pub fn printed_span_ns(cell: &str) -> Option<(f64, f64)> {
    let (number, unit) = cell.trim().split_once(' ')?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        "days" => 86_400e9,
        "years" => 365.25 * 86_400e9,
        _ => return None,
    };
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let half = 0.5 * 10f64.powi(-decimals) * scale;
    Some((number.parse::<f64>().ok()? * scale, half))
}

/// Spikes over `threshold_ns` in one CPU's samples (seq order): runs of consecutive late
/// wakeups count once (docs/tails.md). A dropped record (a gap in `seq`) does not end a run:
/// the wakeup's side is unknown, so the caller must not compare counts across drops.
pub fn spike_count(samples: &[Sample], threshold_ns: i64) -> u64 {
    let mut count = 0;
    let mut in_spike = false;
    for s in samples {
        let late = s.latency_ns > threshold_ns;
        if late && !in_spike {
            count += 1;
        }
        in_spike = late;
    }
    count
}

/// The figures of `samples` whose due time lies in `[from_ns, to_ns)` (offsets on the samples'
/// clock from `start_ns`).
pub fn figures_between(samples: &[Sample], start_ns: u64, from_ns: u64, to_ns: u64) -> Figures {
    Figures::of(
        samples
            .iter()
            .filter(|s| (from_ns..to_ns).contains(&s.expected_ns.wrapping_sub(start_ns)))
            .map(|s| s.latency_ns),
    )
}

/// Whether `got` is within `tolerance` of `want`, with a message naming `what`.
pub fn near(what: &str, got: f64, want: f64, tolerance: f64) -> Result<(), String> {
    if (got - want).abs() <= tolerance {
        Ok(())
    } else {
        Err(format!(
            "{what}: got {got}, the oracle says {want} (tolerance {tolerance})"
        ))
    }
}

/// Every latency figure of a run.json summary object (a thread, a phase's thread, a noise run's
/// gaps) against the oracle's figures: counts and extremes exact, mean and stddev to `rel`
/// relative (1e-9 for exact figures, 1/1024 for figures read from a histogram), percentiles as
/// [`Figures::percentile_agrees`]. With `from_histogram`, min and max are bucket ends clamped
/// into the exact range, so they are compared within a bucket too. Returns every mismatch.
pub fn summary_mismatches(
    what: &str,
    summary: &serde_json::Value,
    f: &Figures,
    from_histogram: bool,
) -> Vec<String> {
    let mut bad = Vec::new();
    let int = |k: &str| summary[k].as_i64();
    if summary["samples"].as_u64() != Some(f.count()) {
        bad.push(format!(
            "{what} samples: got {}, the oracle counts {}",
            summary["samples"],
            f.count()
        ));
        return bad;
    }
    let bucket = |v: i64| v.unsigned_abs() as f64 / 1024.0 + 1.0;
    for (k, want) in [("min_ns", f.min()), ("max_ns", f.max())] {
        let ok = match int(k) {
            Some(got) if !from_histogram => got == want,
            // A histogram records a negative latency as 0.
            Some(got) => (got - want.max(0)).abs() as f64 <= bucket(want),
            None => false,
        };
        if !ok {
            bad.push(format!(
                "{what} {k}: got {}, the oracle says {want}",
                summary[k]
            ));
        }
    }
    let rel = if from_histogram { 1.0 / 1024.0 } else { 1e-9 };
    let mean_tolerance = f.mean.abs() * rel + if from_histogram { 1.0 } else { 1e-6 };
    let sd_tolerance = if from_histogram {
        f.max().unsigned_abs() as f64 / 1024.0 + 1.0
    } else {
        f.stddev * 1e-6 + 1e-3
    };
    for (k, want, tol) in [
        ("mean_ns", f.mean, mean_tolerance),
        ("stddev_ns", f.stddev, sd_tolerance),
    ] {
        match summary[k].as_f64() {
            Some(got) => {
                if let Err(e) = near(&format!("{what} {k}"), got, want, tol) {
                    bad.push(e);
                }
            }
            None => bad.push(format!("{what} {k}: missing")),
        }
    }
    let reported_max = int("max_ns");
    for &(k, num, den) in PERCENTILES {
        match int(k) {
            // Figures of merged interval histograms (a phase's): no exact max of that set is
            // known to clamp into, so a percentile may reach the top of the bucket of the true
            // maximum (the documented 3 significant digits), never the figure's own max.
            Some(got) if from_histogram => {
                let (lo, hi) = f.percentile_range(num, den);
                let top_max = f.max().max(0);
                let top = (hi + hi / 1024).max(hi).min(top_max + top_max / 1024);
                if got < lo || got > top || reported_max.is_some_and(|m| got > m) {
                    bad.push(format!(
                        "{what} {k}: reported {got} ns, accepted {lo}..={top} ns (histogram precision) and at most the reported max {reported_max:?}"
                    ));
                }
            }
            Some(got) => {
                if let Err(e) = f.percentile_agrees(num, den, got) {
                    bad.push(format!("{what} {k}: {e}"));
                }
            }
            None => bad.push(format!("{what} {k}: missing")),
        }
    }
    bad
}

/// A latency as the terminal and HTML tables print it (`units::format_ns`: "812 ns",
/// "58.8 us", "2.18 ms", "1.20 s", a leading `-` when negative), in ns, with half of its last
/// printed digit: the printed rounding.
pub fn printed_ns(cell: &str) -> Option<(f64, f64)> {
    let (number, unit) = cell.trim().split_once(' ')?;
    let (scale, half) = match unit {
        "ns" => (1.0, 0.0),
        "us" => (1e3, 50.0),
        "ms" => (1e6, 5e3),
        "s" => (1e9, 5e6),
        _ => return None,
    };
    Some((number.parse::<f64>().ok()? * scale, half))
}

/// A table the terminal prints (`report::table::Terminal`: cells two or more spaces apart, a
/// rule of dashes under the header): the rows of the first table whose header starts with
/// `first`, each as (header, cell) pairs. The rows end at the first line with another number
/// of cells.
pub fn text_table(out: &str, first: &[&str]) -> Vec<Vec<(String, String)>> {
    let cells = |l: &str| -> Vec<String> {
        l.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let mut lines = out.lines();
    let header = loop {
        match lines.next() {
            Some(l)
                if cells(l).iter().zip(first).filter(|(c, f)| c == *f).count() == first.len() =>
            {
                break cells(l);
            }
            Some(_) => continue,
            None => return Vec::new(),
        }
    };
    lines
        .skip(1) // the rule
        .map(cells)
        .take_while(|row| row.len() == header.len())
        .map(|row| header.iter().cloned().zip(row).collect())
        .collect()
}

/// The rows of the first `<table class="{class}">` of an HTML page (`report::table::Html`: no
/// whitespace between tags, a header row of `<th>`), each as (header, cell text) pairs, the
/// text unescaped. Rows of another width than the header (a spanning note) are left out.
pub fn html_table(html: &str, class: &str) -> Vec<Vec<(String, String)>> {
    let open = format!("<table class=\"{class}\">");
    let Some(at) = html.find(&open) else {
        return Vec::new();
    };
    let body = &html[at + open.len()..];
    let body = &body[..body.find("</table>").unwrap_or(body.len())];
    // Each `<td ...>text</td>` or `<th ...>text</th>`: the text between the tag's `>` and the
    // next `</t` (the per-CPU cells hold no inner markup).
    let cells = |row: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = row;
        while let Some(open) = rest.find("<t") {
            let after = &rest[open..];
            let (Some(gt), Some(close)) = (after.find('>'), after.find("</t")) else {
                break;
            };
            out.push(
                after[gt + 1..close]
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&#39;", "'")
                    .replace("&amp;", "&"),
            );
            rest = &after[close + 3..];
        }
        out
    };
    let mut rows = body
        .split("<tr>")
        .filter(|r| !r.is_empty())
        .map(|r| cells(r.trim_end_matches("</tr>")));
    let Some(header) = rows.next() else {
        return Vec::new();
    };
    rows.filter(|r| r.len() == header.len())
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}
