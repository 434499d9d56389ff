//! What moved when a wakeup was late: per CPU, the log intervals whose largest latency is over
//! the thread's deadline (a deadline miss; docs/tails.md counts them as spikes over the
//! deadline) against the other intervals, counter by counter, with a two-sided Mann-Whitney U test
//! (`mann_whitney`). A CPU's counters are tested together: each is held to `ALPHA / tested`
//! (Bonferroni), so that the chance of any false finding on a CPU stays under [`ALPHA`].
//!
//! Computed from the stored files alone (latency.hlog or its segments for the interval maxima,
//! counters.log for the counters, run.json for the thresholds), so anyone can re-derive it. An
//! interval is used only when its counters were read within a tenth of an interval of its
//! boundaries (a drain side that came late read across two intervals); the others are counted
//! as left out.

pub(crate) mod mann_whitney;

use crate::format::counters::{CounterShift, CountersFile, CpuCorrelation, GroupFigures};
use crate::format::run_record::RunRecord;
use std::collections::HashMap;
use std::path::Path;

/// The family-wise significance level per CPU.
pub(crate) const ALPHA: f64 = 0.01;

/// The most intervals per CPU tested (the first ones): about 28 h at 1 s. Past that, the
/// memory of the values (8 bytes per counter per interval) would grow with the run.
pub(crate) const MAX_INTERVALS: usize = 100_000;

/// Each CPU's late threshold and its basis: its deadline (`--deadline`, else its interval),
/// the threshold of `deadline_misses` and of the tails' spikes over the deadline.
pub(crate) type Thresholds = HashMap<usize, (u64, String)>;

/// The thresholds of the threads of `record`.
pub(crate) fn thresholds(record: &RunRecord) -> Thresholds {
    record
        .threads
        .iter()
        .map(|t| (t.cpu, (t.deadline_ns, "deadline".to_string())))
        .collect()
}

/// The largest latency of each interval of each CPU in the interval log of the result
/// directory `dir`: (cpu, interval index) → max ns (None: empty interval).
pub(crate) fn interval_maxima(
    dir: &Path,
    interval_ns: u64,
) -> Result<HashMap<(usize, u64), Option<u64>>, String> {
    let mut maxima = HashMap::new();
    crate::results::loaded::scan_intervals(dir, |i| {
        let (cpu, irq) = crate::format::hlog::parse_tag(i.tag);
        let Some(cpu) = cpu else { return };
        if irq {
            return;
        }
        let index = (i.start_s * 1e9 / interval_ns as f64).round() as u64;
        maxima.insert((cpu, index), i.max());
    })?;
    Ok(maxima)
}

/// The correlation of every CPU of `counters`, with the maxima of the interval log.
pub(crate) fn correlate(
    thresholds: &Thresholds,
    counters: &CountersFile,
    maxima: &HashMap<(usize, u64), Option<u64>>,
) -> Vec<CpuCorrelation> {
    let len = counters.interval_ns.max(1);
    let slack = len / 10;
    let mut out = Vec::new();
    for cpu in counters.cpus() {
        let Some((threshold_ns, basis)) = thresholds.get(&cpu).cloned() else {
            continue;
        };
        let names = counters.names_of(cpu);
        // Per counter: its values in late and other intervals.
        let mut late: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        let mut other: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        let (mut n_late, mut n_other, mut left_out) = (0u64, 0u64, 0u64);
        for line in counters.intervals.iter().filter(|l| l.cpu == cpu) {
            if (n_late + n_other) as usize >= MAX_INTERVALS {
                break;
            }
            let start = line.interval * len;
            let aligned = line.from_ns.abs_diff(start) <= slack
                && line.to_ns <= start + len + slack
                && line.to_ns >= start + len / 2;
            let max = maxima.get(&(cpu, line.interval)).copied().flatten();
            let (true, Some(max)) = (aligned, max) else {
                left_out += 1;
                continue;
            };
            let is_late = max > threshold_ns;
            if is_late {
                n_late += 1;
            } else {
                n_other += 1;
            }
            for (name, value) in &line.values {
                let Some(k) = names.iter().position(|n| n.as_str() == &**name) else {
                    continue;
                };
                // An unknown value (a counter that went backwards) leaves only that counter's
                // value out.
                if let Some(v) = value {
                    if is_late {
                        late[k].push(*v as f64);
                    } else {
                        other[k].push(*v as f64);
                    }
                }
            }
        }
        let mut found = CpuCorrelation {
            cpu,
            threshold_ns,
            threshold_basis: basis,
            late_intervals: n_late,
            other_intervals: n_other,
            left_out_intervals: left_out,
            tested: 0,
            alpha: ALPHA,
            moved: Vec::new(),
            refused: None,
        };
        if n_late == 0 || n_other == 0 {
            found.refused = Some(format!(
                "{} intervals with a wakeup over {} ns and {} without: nothing to compare",
                n_late, threshold_ns, n_other
            ));
            out.push(found);
            continue;
        }
        let mut tests = Vec::new();
        for (k, name) in names.iter().enumerate() {
            let (a, b) = (&late[k], &other[k]);
            let first = a.first().or(b.first());
            let constant = first.is_none_or(|f| a.iter().chain(b.iter()).all(|v| v == f));
            if constant || a.is_empty() || b.is_empty() {
                continue;
            }
            if let Some(t) = mann_whitney::test(a, b) {
                tests.push((name, t, k));
            }
        }
        found.tested = tests.len() as u64;
        let limit = ALPHA / found.tested.max(1) as f64;
        for (name, t, k) in tests {
            if t.p < limit {
                found.moved.push(CounterShift {
                    counter: name.clone(),
                    late: figures(&late[k]),
                    other: figures(&other[k]),
                    u: t.u,
                    p: t.p,
                    method: t.method.name().into(),
                });
            }
        }
        found.moved.sort_by(|a, b| a.p.total_cmp(&b.p));
        out.push(found);
    }
    out
}

/// The group's figures (not empty).
fn figures(values: &[f64]) -> GroupFigures {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    GroupFigures {
        intervals: n as u64,
        min: sorted[0] as i64,
        median,
        mean: sorted.iter().sum::<f64>() / n as f64,
        max: sorted[n - 1] as i64,
    }
}

/// The correlation of the run in `dir` from its files, or why there is none.
pub fn correlate_dir(dir: &Path, record: &RunRecord) -> Result<Vec<CpuCorrelation>, String> {
    let Some(counters) = crate::results::loaded::counters(dir)? else {
        return Err(format!(
            "{} has no {}: the run was made with --no-counters, as a segmented (monitor) run, or imported",
            dir.display(),
            crate::format::counters::FILE_NAME
        ));
    };
    if crate::results::loaded::hlog_files(dir)?.is_empty() {
        return Err(format!("{} has no interval log", dir.display()));
    }
    let maxima = interval_maxima(dir, counters.interval_ns.max(1))?;
    Ok(correlate(&thresholds(record), &counters, &maxima))
}

/// One counter of one CPU whose per-interval values differ between two runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct CounterDiff {
    pub cpu: usize,
    pub counter: String,
    /// The first run's intervals, and the other's.
    pub first: GroupFigures,
    pub other: GroupFigures,
    /// Two-sided Mann-Whitney U test of the two runs' intervals.
    pub p: f64,
    pub method: String,
}

/// `compare`'s counters: each run after the first against the first, per CPU and counter
/// present in both (a counter's values: its changes per interval; a gauge's readings), with the
/// Mann-Whitney test held to [`ALPHA`] over all the counters tested between the two runs
/// (Bonferroni). Returns per later run: the counters tested and those that differ, the smallest
/// p first.
pub(crate) fn compare_runs(first: &CountersFile, other: &CountersFile) -> (u64, Vec<CounterDiff>) {
    let series = |f: &CountersFile| {
        let mut m: HashMap<(usize, String), Vec<f64>> = HashMap::new();
        for line in f
            .intervals
            .iter()
            .take(MAX_INTERVALS * f.cpus().len().max(1))
        {
            for (name, v) in &line.values {
                if let Some(v) = v {
                    m.entry((line.cpu, name.to_string()))
                        .or_default()
                        .push(*v as f64);
                }
            }
        }
        m
    };
    let (a, b) = (series(first), series(other));
    let mut keys: Vec<&(usize, String)> = a.keys().filter(|k| b.contains_key(*k)).collect();
    keys.sort();
    let mut tests = Vec::new();
    for k in keys {
        let (x, y) = (&a[k], &b[k]);
        let f = x[0];
        if x.iter().chain(y).all(|v| *v == f) {
            continue;
        }
        if let Some(t) = mann_whitney::test(x, y) {
            tests.push((k, t));
        }
    }
    let tested = tests.len() as u64;
    let limit = ALPHA / tested.max(1) as f64;
    let mut diffs: Vec<CounterDiff> = tests
        .into_iter()
        .filter(|(_, t)| t.p < limit)
        .map(|(k, t)| CounterDiff {
            cpu: k.0,
            counter: k.1.clone(),
            first: figures(&a[k]),
            other: figures(&b[k]),
            p: t.p,
            method: t.method.name().into(),
        })
        .collect();
    diffs.sort_by(|x, y| x.p.total_cmp(&y.p));
    (tested, diffs)
}

#[cfg(test)]
mod tests;
