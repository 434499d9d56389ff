//! What `cyclictest -h N` prints (rt-tests): `# Histogram`, then one row per microsecond
//! `latency count_thread0 count_thread1 ...` (with -H a last column of all threads), then the
//! summary comment lines `# Total:` (samples inside the histogram), `# Min Latencies:`,
//! `# Avg Latencies:`, `# Max Latencies:` (us), `# Histogram Overflows:` (samples at or above
//! N us, not in the rows) and `# Histogram Overflow at cycle number:` with one `# Thread k:`
//! line each. cyclictest truncates latencies to whole us, so row k holds [k, k+1) us.
//!
//! rt-tests 2.7 and later ("cyclictest: Remove histogram totals") print no `# Total:` line
//! and leave out rows whose counts are all zero: the samples are then the rows plus the
//! overflows, and a missing row counts zero.
//!
//! Pasted output is read too: lines before the histogram (a shell prompt, `running cmd:`,
//! cyclictest's `policy:` and `T:` status lines) and after its summary (comments, analysis)
//! are skipped; a line in the middle of the rows that is not a row is refused.

use super::pasted::without_comment;
use super::{Imported, Parser, SourceFormat, SourceHistogram, SourceThread, add_counts};
use super::{Recognise, Recognised};

/// The numbers after `label`, e.g. `# Max Latencies: 00280 00421` → [280, 421].
fn numbers_after(line: &str, label: &str) -> Option<Result<Vec<u64>, String>> {
    let rest = line.strip_prefix(label)?;
    Some(
        rest.split_whitespace()
            .map(|n| {
                n.parse::<u64>()
                    .map_err(|_| format!("'{line}' has '{n}' where a number belongs"))
            })
            .collect(),
    )
}

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "cyclictest-hist",
    help: "what cyclictest -h N prints: a 1 us histogram per thread and its summary lines",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: None,
};

fn recognise(lines: &[&str]) -> Recognised {
    Recognised::from(
        lines.iter().any(|l| l.starts_with("# Max Latencies:")) || lines.contains(&"# Histogram"),
    )
}

/// What the output holds, as read line by line: the rows (latency, counts per thread) and the
/// summary lines' values.
#[derive(Default)]
struct HistogramText {
    rows: Vec<(u64, Vec<u64>)>,
    total: Option<Vec<u64>>,
    min: Option<Vec<u64>>,
    avg: Option<Vec<u64>>,
    max: Option<Vec<u64>>,
    overflows: Option<Vec<u64>>,
    thread_lines: usize,
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let h = read_lines(text)?;
    let Some(max) = &h.max else {
        return Err("it has no '# Max Latencies:' line: the output is cut short, or cyclictest ran without -h".into());
    };
    let threads = thread_count(&h, max);
    if threads == 0 {
        return Err("'# Max Latencies:' has no values".into());
    }
    check_thread_counts(&h, threads)?;
    check_all_threads_column(&h, threads)?;
    if h.rows.is_empty() {
        return Err("it has no histogram rows".into());
    }
    // With -H a row has one more column: all threads together.
    if let Some((at, r)) = h
        .rows
        .iter()
        .find(|(_, r)| r.len() < threads || r.len() > threads + 1)
    {
        return Err(format!(
            "the row of {at} us has {} counts for {threads} threads",
            r.len()
        ));
    }
    let out = (0..threads)
        .map(|t| thread_histogram(&h, t))
        .collect::<Result<Vec<_>, _>>()?;
    let mut warnings = vec![
        "cyclictest's histogram output does not name CPUs: thread k is reported as CPU k (true with -a -t, cyclictest's usual pinning)".to_string(),
        "cyclictest prints averages as whole microseconds; mean_ns is that rounded figure".to_string(),
    ];
    if h.total.is_none() && out.iter().any(|t| t.latency.overflow > 0) {
        warnings.push("no '# Total:' line (rt-tests 2.7+ leaves empty rows out): the histogram's end is taken as its last printed row + 1 us, so overflow samples are recorded there, which may be below cyclictest's -h limit".into());
    }
    if h.overflows.is_none() {
        warnings.push("no '# Histogram Overflows:' line: no overflow counted".into());
    }
    Ok(Imported {
        warnings,
        ..Imported::new(&FORMAT, out)
    })
}

/// Reads the rows and the summary lines, skipping what comes before the histogram and after
/// its summary; a line among the rows that is not a row is refused.
fn read_lines(text: &str) -> Result<HistogramText, String> {
    let mut h = HistogramText::default();
    // Where the output is: before the histogram, in it (rows and # lines), or after its
    // summary lines (# Max Latencies: and what follows).
    let (mut started, mut ended) = (false, false);
    for (n, raw) in text.lines().enumerate() {
        let line = without_comment(raw.trim());
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let rest = rest.trim_start();
            let line = format!("# {rest}");
            started |= rest.starts_with("Histogram");
            if let Some(v) = numbers_after(&line, "# Total:") {
                h.total = Some(v?);
            } else if let Some(v) = numbers_after(&line, "# Min Latencies:") {
                h.min = Some(v?);
            } else if let Some(v) = numbers_after(&line, "# Avg Latencies:") {
                h.avg = Some(v?);
            } else if let Some(v) = numbers_after(&line, "# Max Latencies:") {
                h.max = Some(v?);
                ended = true;
            } else if let Some(v) = numbers_after(&line, "# Histogram Overflows:") {
                h.overflows = Some(v?);
            } else if rest.starts_with("Thread ") && rest.contains(':') {
                h.thread_lines += 1;
            }
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let numbers: Option<Vec<u64>> = fields.iter().map(|f| f.parse().ok()).collect();
        match numbers {
            Some(v) if v.len() >= 2 && !ended => {
                started = true;
                h.rows.push((v[0], v[1..].to_vec()));
            }
            // A prompt or status lines before the output, text after it, and the status lines
            // of a run without -q (T: 0 ...) are not data.
            _ if !started || ended || line.starts_with("T:") || line.starts_with("policy") => {}
            _ => {
                return Err(format!(
                    "line {} ('{line}') is neither a histogram row nor a # line",
                    n + 1
                ));
            }
        }
    }
    Ok(h)
}

/// How many threads the output is of. '# Min Latencies:' and '# Avg Latencies:' have one value
/// per thread; '# Max Latencies:' (always there) has one more with -H and several threads (the
/// largest of all, as '# Total:' and '# Histogram Overflows:' end with their sum): rt-tests 2.4
/// prints `# Max Latencies: 14364 12403 14364` for two threads.
/// The -H shape is taken when both of those say one thread fewer than '# Max Latencies:'; a
/// file where only one of them does is left to [`check_thread_counts`] to refuse.
fn thread_count(h: &HistogramText, max: &[u64]) -> usize {
    let fewer = |v: &Option<Vec<u64>>| v.as_ref().is_some_and(|v| v.len() + 1 == max.len());
    if max.len() > 2 && fewer(&h.min) && fewer(&h.avg) {
        max.len() - 1
    } else {
        max.len()
    }
}

/// With -H, the all-threads values ending '# Max Latencies:' (the largest), '# Total:' and
/// '# Histogram Overflows:' (the sums) must agree with the threads' own, as cyclictest
/// computes them: a file where they do not was edited or damaged.
fn check_all_threads_column(h: &HistogramText, threads: usize) -> Result<(), String> {
    let lines = [
        ("'# Max Latencies:'", &h.max, true),
        ("'# Total:'", &h.total, false),
        ("'# Histogram Overflows:'", &h.overflows, false),
    ];
    for (what, values, is_max) in lines {
        let Some(v) = values.as_ref().filter(|v| v.len() == threads + 1) else {
            continue;
        };
        let (each, all) = v.split_at(threads);
        let expected = if is_max {
            each.iter().copied().max().unwrap_or(0)
        } else {
            each.iter().fold(0u64, |a, &b| a.saturating_add(b))
        };
        if all[0] != expected {
            return Err(format!(
                "{what} ends with {} for all threads, but its threads' values make {expected} (an edited or damaged file); nothing imported",
                all[0]
            ));
        }
    }
    Ok(())
}

/// Every per-thread line must name the same threads: a line with fewer values (an edited
/// file, a line lost in pasting) would otherwise import some threads and drop the rest in
/// silence.
fn check_thread_counts(h: &HistogramText, threads: usize) -> Result<(), String> {
    // With -H (and several threads) '# Total:', '# Max Latencies:' and '# Histogram
    // Overflows:' end with a value for all threads together, as the rows end with a column.
    let all = usize::from(threads > 1);
    let per_thread = [
        ("'# Total:'", h.total.as_ref().map(Vec::len), all),
        ("'# Min Latencies:'", h.min.as_ref().map(Vec::len), 0),
        ("'# Avg Latencies:'", h.avg.as_ref().map(Vec::len), 0),
        ("'# Max Latencies:'", h.max.as_ref().map(Vec::len), all),
        (
            "'# Histogram Overflows:'",
            h.overflows.as_ref().map(Vec::len),
            all,
        ),
        (
            "'# Thread k:' overflow lines",
            (h.thread_lines > 0).then_some(h.thread_lines),
            0,
        ),
    ];
    for (what, n, extra) in per_thread {
        if let Some(n) = n.filter(|&n| n < threads || n > threads + extra) {
            return Err(format!(
                "{what} has {n} values (or lines) for {threads} threads: the threads do not add up (an edited or damaged file); nothing imported"
            ));
        }
    }
    Ok(())
}

/// Thread `t`'s column of the rows and its summary values, checked against '# Total:' when
/// there is one.
fn thread_histogram(h: &HistogramText, t: usize) -> Result<SourceThread, String> {
    let histogram_size = h.rows.last().map(|(v, _)| v + 1).unwrap_or(0);
    let pick = |v: &Option<Vec<u64>>| v.as_ref().and_then(|v| v.get(t)).copied();
    let buckets: Vec<(u64, u64)> = h
        .rows
        .iter()
        .filter(|(_, r)| r[t] > 0)
        .map(|(v, r)| (*v, r[t]))
        .collect();
    let in_range =
        add_counts(buckets.iter().map(|&(_, c)| c)).map_err(|e| format!("thread {t}: {e}"))?;
    // Without '# Total:' (rt-tests 2.7+) the rows are all there is to check against.
    if let Some(total) = pick(&h.total)
        && in_range != total
    {
        return Err(format!(
            "thread {t}'s rows add up to {in_range} samples but '# Total:' says {total}"
        ));
    }
    let overflow = pick(&h.overflows).unwrap_or(0);
    Ok(SourceThread::new(
        t,
        SourceHistogram {
            unit_ns: 1000,
            buckets,
            overflow,
            overflow_from: histogram_size,
            count: Some(add_counts([in_range, overflow]).map_err(|e| format!("thread {t}: {e}"))?),
            min: pick(&h.min).map(|v| v as f64),
            mean: pick(&h.avg).map(|v| v as f64),
            max: pick(&h.max).map(|v| v as f64),
            quantiles: Vec::new(),
            stddev: None,
        },
    ))
}
