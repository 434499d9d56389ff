//! `jitterlab compare`: the figures of several runs side by side, per CPU and overall, each
//! against the first run (A) as a ratio and, for percentiles, a 95% confidence interval of the
//! difference. The method (block bootstrap over the interval histograms, or exact
//! order-statistic intervals when a run has too few intervals or too thin a tail) is documented
//! in docs/compare.md; every interval says which method made it.
//!
//! One concern (issue 41's near-limit files): the comparison of runs, its result types and how
//! each scope's figures and intervals are made; pooling groups of runs (`tune`) is `pooled.rs`,
//! the quantile methods are `analysis::quantile`.

use super::metric::Metric;
use super::quantile::{self, Blocks, Bounds, Sparse};
use crate::format::run_record::ThreadSummary;
use crate::format::stats::clamp_percentile;
use crate::results::loaded::LoadedRun;
use serde::Serialize;
use std::collections::BTreeMap;

/// The statistics compared, in the order shown.
pub(crate) const COMPARED: &[Metric] = &[
    Metric::Min,
    Metric::Mean,
    Metric::P50,
    Metric::P99,
    Metric::P999,
    Metric::P9999,
    Metric::Max,
    Metric::Missed,
];
/// Confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// Bootstrap resamples per pair of runs and scope.
pub const REPLICATES: usize = 1000;
/// Long runs are resampled in at most this many blocks of consecutive intervals.
pub const MAX_BLOCKS: usize = 400;
/// The bootstrap is used only when both runs have at least this many non-empty intervals...
pub(crate) const MIN_INTERVALS: usize = 30;
/// ...and at least this many samples lie beyond the quantile in the smaller run (n·(1−q)):
/// below that, resampling cannot see past the few largest samples and its interval is too
/// narrow, so the order-statistic interval (wider, honest) is used.
pub(crate) const MIN_TAIL_SAMPLES: f64 = 10.0;
/// The bootstrap's fixed seed: the same data always give the same interval.
pub(crate) const SEED: u64 = 0x6a69_7474_6572_6c61;

/// One run as the comparison names it.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// `A`, `B`, `C`...
    pub label: String,
    pub path: String,
    pub ended: String,
    pub cpus: Vec<usize>,
    pub duration_ns: Option<u64>,
    pub samples: u64,
    /// Interval histograms in latency.hlog (per CPU): 1 for imported whole-run histograms.
    pub(crate) intervals_per_cpu: usize,
    /// The source format when the run was imported.
    pub(crate) imported_from: Option<String>,
    /// What the run measured: wakeup latencies, or a noise run's gaps (`samples` counts them).
    pub kind: crate::format::kind::RunKind,
    /// What reading the run's files met that its figures depend on (a missing or short
    /// interval log): shown under the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A confidence interval of a difference (B − A), ns. A None side is unbounded: the data
/// cannot bound it (too few samples beyond the quantile).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Interval {
    pub(crate) low_ns: Option<f64>,
    pub(crate) high_ns: Option<f64>,
    /// `bootstrap` or `order-statistic`.
    pub method: &'static str,
}

impl Interval {
    /// Whether the whole interval lies above zero: B is larger than A beyond chance.
    pub(crate) fn above_zero(&self) -> bool {
        self.low_ns.is_some_and(|l| l > 0.0)
    }
    pub(crate) fn below_zero(&self) -> bool {
        self.high_ns.is_some_and(|h| h < 0.0)
    }
}

/// A run's statistic against the first run's.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Versus {
    /// This run's value / the first run's; None when the first run's is 0 or either is absent.
    pub ratio: Option<f64>,
    /// This run's value − the first run's (ns or periods, as the row's unit).
    pub difference: Option<f64>,
    /// For percentiles: the 95% interval of the difference.
    pub interval: Option<Interval>,
    /// Either value is a lower bound ([`StatRow::lower_bound`]): no ratio, difference or
    /// interval is given, since a bound's true value is unknown above it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bound: bool,
}

/// One statistic of one scope across all runs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StatRow {
    /// `min`, `mean`, `p50`, `p99`, `p99.9`, `p99.99`, `max`, `missed`.
    pub(crate) statistic: &'static str,
    /// `ns` for latencies, `periods` for missed periods.
    pub unit: &'static str,
    /// One per run, in run order; None when absent (no samples, or not in an imported source).
    pub values: Vec<Option<f64>>,
    /// One per run: the value is a lower bound, the percentile lying among the samples an
    /// imported histogram held only as overflows (run.json `imported.overflows`), recorded at
    /// the least they can be. Left out when no value is one.
    #[serde(skip_serializing_if = "no_bound")]
    pub(crate) lower_bound: Vec<bool>,
    /// One per run after the first, in run order.
    pub(crate) versus_first: Vec<Versus>,
}

fn no_bound(bounds: &[bool]) -> bool {
    !bounds.contains(&true)
}

impl StatRow {
    pub(crate) fn metric(&self) -> Metric {
        Metric::parse(self.statistic).expect("rows carry grammar names")
    }
}

/// All statistics of one scope: `overall` (every CPU's samples together) or one CPU.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ScopeComparison {
    /// `overall` or `cpuN`.
    pub scope: String,
    pub cpu: Option<usize>,
    /// Samples per run in this scope.
    pub samples: Vec<u64>,
    pub rows: Vec<StatRow>,
    /// Per run: the CPU time of the scope's measuring threads per wakeup (run.json `cpu_time`
    /// over `samples + dropped_records`), ns; None when the run did not record it (imported
    /// runs, older files).
    pub(crate) cpu_time_per_cycle_ns: Vec<Option<f64>>,
}

/// The method settings, recorded with the results so that they can be reproduced.
#[derive(Debug, Clone, Serialize)]
pub struct MethodInfo {
    pub(crate) confidence: f64,
    pub(crate) bootstrap_replicates: usize,
    pub(crate) bootstrap_max_blocks: usize,
    pub(crate) bootstrap_min_intervals: usize,
    pub(crate) bootstrap_min_tail_samples: f64,
    pub seed: u64,
}

/// Groups of runs, each compared as one run ([`compare_groups`]).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ComparisonOfGroups {
    /// `A`, `B`, ... one per group.
    pub labels: Vec<String>,
    /// The runs in each group.
    pub runs: Vec<usize>,
    pub(crate) scopes: Vec<ScopeComparison>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub runs: Vec<RunInfo>,
    pub method: MethodInfo,
    pub(crate) scopes: Vec<ScopeComparison>,
}

/// One run's data for one scope.
struct ScopeData {
    samples: u64,
    /// Per statistic of COMPARED.
    values: Vec<Option<f64>>,
    /// Per statistic of COMPARED: the value is a lower bound (see [`StatRow::lower_bound`]).
    bounds: Vec<bool>,
    /// Interval histograms in time order (for the bootstrap).
    slots: Vec<Sparse>,
    /// The whole scope's histogram (for order statistics).
    merged: Sparse,
    cpu_time_per_cycle_ns: Option<f64>,
}

/// Compares `runs` (at least two) against the first.
pub fn compare(runs: &[LoadedRun]) -> Comparison {
    let infos: Vec<RunInfo> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| run_info(i, r))
        .collect();
    let mut cpus: Vec<usize> = runs
        .iter()
        .flat_map(|r| r.record.threads.iter().map(|t| t.cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let scopes: Vec<Option<usize>> = std::iter::once(None)
        .chain(cpus.into_iter().map(Some))
        .collect();
    let scopes = compare_scopes(runs, &scopes);
    Comparison {
        runs: infos,
        method: MethodInfo {
            confidence: CONFIDENCE,
            bootstrap_replicates: REPLICATES,
            bootstrap_max_blocks: MAX_BLOCKS,
            bootstrap_min_intervals: MIN_INTERVALS,
            bootstrap_min_tail_samples: MIN_TAIL_SAMPLES,
            seed: SEED,
        },
        scopes,
    }
}

/// Compares each scope (overall, then each CPU) on as many threads as there are CPUs: the
/// scopes are independent (each resampled with its own seed, so the result does not depend on
/// the threads), and their bootstraps are most of `compare`'s time on a long run.
fn compare_scopes(runs: &[LoadedRun], scopes: &[Option<usize>]) -> Vec<ScopeComparison> {
    in_parallel(scopes, |k, &cpu| {
        let data: Vec<ScopeData> = runs.iter().map(|r| scope_data(r, cpu)).collect();
        compare_scope(k, cpu, &data)
    })
}

/// `work(k, &items[k])` for every item, on as many threads as there are CPUs (at most one per
/// item), each thread taking the next item when it is done; the results in the items' order.
/// For the comparison's independent pieces of work: its scopes, and reading its runs.
pub(crate) fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(k) else { break };
                        mine.push((k, work(k, item)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a comparing thread panicked"))
            .collect()
    });
    done.sort_by_key(|(k, _)| *k);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The label of run `i`: A, B, ... Z, then R27, R28...
pub fn label(i: usize) -> String {
    if i < 26 {
        ((b'A' + i as u8) as char).to_string()
    } else {
        format!("R{}", i + 1)
    }
}

fn run_info(i: usize, r: &LoadedRun) -> RunInfo {
    let tags = r.tags();
    let log_interval_ns = r.record.plan.log_interval_ns;
    let read = tags
        .iter()
        .filter(|t| crate::format::hlog::is_cpu_tag(t))
        .map(|t| r.intervals_of(t).count())
        .max()
        .unwrap_or(0);
    // The intervals read, counted; a long log is read with its intervals merged, and its
    // intervals are then counted from the plan (a run cut to one phase is never that long
    // in practice, and is counted as read otherwise: the intervals its figures cover).
    let merged = log_interval_ns > 0
        && r.intervals
            .iter()
            .any(|i| i.length_s * 1e9 > 1.5 * log_interval_ns as f64);
    let logged = match r.record.duration_ns {
        Some(d) if log_interval_ns > 0 => Some(d.div_ceil(log_interval_ns) as usize),
        _ => None,
    };
    let per_cpu = match logged {
        Some(n) if merged || read == 0 => n,
        _ => read,
    };
    RunInfo {
        label: label(i),
        path: r.path.display().to_string(),
        ended: r.record.ended.as_str().to_string(),
        cpus: r.record.threads.iter().map(|t| t.cpu).collect(),
        duration_ns: r.record.duration_ns,
        samples: r.record.threads.iter().map(|t| t.latency.samples).sum(),
        intervals_per_cpu: per_cpu,
        imported_from: r.record.imported.as_ref().map(|i| i.source_format.clone()),
        kind: r.record.kind,
        warnings: r.read_warnings.clone(),
    }
}

fn scope_data(r: &LoadedRun, cpu: Option<usize>) -> ScopeData {
    let absent: &[String] = r
        .record
        .imported
        .as_ref()
        .map_or(&[], |i| i.absent.as_slice());
    let threads: Vec<_> = r
        .record
        .threads
        .iter()
        .filter(|t| cpu.is_none_or(|c| t.cpu == c))
        .collect();
    // Time slots: per CPU its intervals in order; overall, the intervals of all CPUs that
    // start at the same time merged, which keeps what happened to all CPUs at once together.
    let mut by_start: BTreeMap<u64, Sparse> = BTreeMap::new();
    let mut slots: Vec<Sparse> = Vec::new();
    let (min_ns, max_ns) = exact_range(&threads);
    for i in &r.intervals {
        let keep = match cpu {
            Some(c) => i.tag == format!("cpu{c}"),
            None => crate::format::hlog::is_cpu_tag(&i.tag),
        };
        if !keep {
            continue;
        }
        let s = &clamped(&i.counts, min_ns, max_ns);
        match cpu {
            Some(_) => slots.push(s.clone()),
            None => quantile::merge_into(
                by_start
                    .entry((i.start_s * 1000.0).round() as u64)
                    .or_default(),
                s,
            ),
        }
    }
    if cpu.is_none() {
        slots = by_start.into_values().collect();
    }
    let mut merged = Sparse::new();
    slots
        .iter()
        .for_each(|s| quantile::merge_into(&mut merged, s));

    let samples = threads.iter().map(|t| t.latency.samples).sum();
    let per_thread =
        |m: Metric| -> Vec<Option<f64>> { threads.iter().map(|t| m.value(t, absent)).collect() };
    let values = COMPARED
        .iter()
        .map(|&m| {
            if threads.is_empty() {
                return None;
            }
            let vals = per_thread(m);
            let present: Vec<f64> = vals.iter().flatten().copied().collect();
            match m {
                // Percentiles from the scope's interval histograms, the samples their
                // intervals are resampled from, so that each estimate and its interval come
                // from the same data (run.json's figures when there is no log).
                _ if m.quantile().is_some() && !merged.is_empty() => m
                    .quantile()
                    .and_then(|q| quantile::quantile(&merged, q))
                    .map(|v| v as f64),
                _ if threads.len() == 1 => vals[0],
                Metric::Min => present.iter().copied().reduce(f64::min),
                Metric::Max => present.iter().copied().reduce(f64::max),
                Metric::Missed => vals.iter().copied().sum::<Option<f64>>(),
                Metric::Mean => {
                    let (sum, n) =
                        threads
                            .iter()
                            .fold((0.0, 0u64), |(s, n), t| match t.latency.mean_ns {
                                Some(mean) => {
                                    (s + mean * t.latency.samples as f64, n + t.latency.samples)
                                }
                                None => (s, n),
                            });
                    (n > 0).then(|| sum / n as f64)
                }
                _ => m
                    .quantile()
                    .and_then(|q| quantile::quantile(&merged, q))
                    .map(|v| v as f64),
            }
        })
        .collect();
    // A percentile at or above the least value of an overflow in the scope may lie among the
    // overflows, whose true values are unknown above where they are recorded: a lower bound.
    // Below it, every sample at or under the value is an exact one of the source's buckets.
    let overflow_from = r
        .record
        .imported
        .iter()
        .flat_map(|i| {
            threads
                .iter()
                .filter_map(|t| i.latency_overflow_from(t.cpu))
        })
        .min()
        .map(|from| from as f64);
    let bounds = COMPARED
        .iter()
        .zip(&values)
        .map(|(m, v): (&Metric, &Option<f64>)| {
            m.quantile().is_some() && overflow_from.zip(*v).is_some_and(|(from, v)| v >= from)
        })
        .collect();
    ScopeData {
        samples,
        values,
        bounds,
        slots,
        merged,
        cpu_time_per_cycle_ns: cpu_time_per_cycle_ns(r, &threads),
    }
}

/// The exact [min, max] of the scope's samples, from run.json (for a run cut to one phase, the
/// phase's figures): the lowest min and the highest max of `threads`; a side that some thread
/// lacks (an imported source that did not print it) is open.
fn exact_range(threads: &[&ThreadSummary]) -> (i64, i64) {
    let side = |f: fn(&ThreadSummary) -> Option<i64>| -> Option<Vec<i64>> {
        threads.iter().map(|t| f(t)).collect()
    };
    let min = side(|t| t.latency.min_ns).and_then(|v| v.into_iter().min());
    let max = side(|t| t.latency.max_ns).and_then(|v| v.into_iter().max());
    (min.unwrap_or(i64::MIN), max.unwrap_or(i64::MAX))
}

/// An interval histogram with its values (bucket tops, which can lie above the exact max)
/// clamped into the exact range (issue 23 defect 5), so that every estimate, every bootstrap
/// replicate and every order statistic lies within [min, max]: an interval never reaches
/// beyond the exact max. Values clamped onto the same one are counted together.
fn clamped(s: &[(u64, u64)], min_ns: i64, max_ns: i64) -> Sparse {
    let mut out: Sparse = Vec::with_capacity(s.len());
    for &(v, c) in s {
        let v = clamp_percentile(v, min_ns, max_ns);
        match out.last_mut() {
            Some((last, count)) if *last == v => *count += c,
            _ => out.push((v, c)),
        }
    }
    out
}

/// The measuring threads' CPU time per wakeup, ns: all of `threads` or None.
fn cpu_time_per_cycle_ns(r: &LoadedRun, threads: &[&ThreadSummary]) -> Option<f64> {
    let cpu_time = r.record.cpu_time.as_ref()?;
    let (mut ns, mut cycles) = (0u64, 0u64);
    for t in threads {
        ns += cpu_time.of_cpu(t.cpu)?;
        cycles += t.latency.samples + t.dropped_records;
    }
    (cycles > 0).then(|| ns as f64 / cycles as f64)
}

fn compare_scope(scope_index: usize, cpu: Option<usize>, data: &[ScopeData]) -> ScopeComparison {
    let a = &data[0];
    // Intervals for every later run against A, one batch of quantiles per pair.
    let intervals: Vec<Vec<Option<Interval>>> = data[1..]
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let seed = SEED ^ ((scope_index as u64) << 20) ^ (k as u64 + 1);
            percentile_intervals(a, b, seed)
        })
        .collect();
    let rows = COMPARED
        .iter()
        .enumerate()
        .map(|(row, &m)| {
            let values: Vec<Option<f64>> = data.iter().map(|d| d.values[row]).collect();
            let lower_bound: Vec<bool> = data.iter().map(|d| d.bounds[row]).collect();
            let versus_first = values[1..]
                .iter()
                .enumerate()
                .map(|(k, &b)| {
                    let a = values[0];
                    match lower_bound[0] || lower_bound[k + 1] {
                        true => Versus {
                            ratio: None,
                            difference: None,
                            interval: None,
                            bound: true,
                        },
                        false => Versus {
                            ratio: match (a, b) {
                                (Some(a), Some(b)) if a != 0.0 => Some(b / a),
                                _ => None,
                            },
                            difference: a.zip(b).map(|(a, b)| b - a),
                            interval: intervals[k][row].clone(),
                            bound: false,
                        },
                    }
                })
                .collect();
            StatRow {
                statistic: m.name(),
                unit: if m.is_latency() { "ns" } else { "periods" },
                values,
                lower_bound,
                versus_first,
            }
        })
        .collect();
    ScopeComparison {
        scope: cpu.map_or("overall".into(), |c| format!("cpu{c}")),
        cpu,
        samples: data.iter().map(|d| d.samples).collect(),
        rows,
        cpu_time_per_cycle_ns: data.iter().map(|d| d.cpu_time_per_cycle_ns).collect(),
    }
}

/// The interval of each COMPARED statistic (None for those that are not percentiles, or when
/// either run has no histogram data in the scope).
fn percentile_intervals(a: &ScopeData, b: &ScopeData, seed: u64) -> Vec<Option<Interval>> {
    let mut out: Vec<Option<Interval>> = vec![None; COMPARED.len()];
    if a.merged.is_empty() || b.merged.is_empty() {
        return out;
    }
    let (na, nb) = (quantile::total(&a.merged), quantile::total(&b.merged));
    let enough_intervals = a.slots.iter().filter(|s| !s.is_empty()).count() >= MIN_INTERVALS
        && b.slots.iter().filter(|s| !s.is_empty()).count() >= MIN_INTERVALS;
    let mut bootstrap_rows = Vec::new();
    for (row, m) in COMPARED.iter().enumerate() {
        let Some(q) = m.quantile() else { continue };
        let tail = na.min(nb) as f64 * (1.0 - q);
        if enough_intervals && tail >= MIN_TAIL_SAMPLES {
            bootstrap_rows.push((row, q));
        } else {
            out[row] = Some(order_statistic(a, b, q));
        }
    }
    if !bootstrap_rows.is_empty() {
        let blocks_a = Blocks::new(&a.slots, MAX_BLOCKS);
        let blocks_b = Blocks::new(&b.slots, MAX_BLOCKS);
        let qs: Vec<f64> = bootstrap_rows.iter().map(|&(_, q)| q).collect();
        let bounds =
            quantile::bootstrap_difference(&blocks_a, &blocks_b, &qs, REPLICATES, CONFIDENCE, seed);
        for ((row, q), bounds) in bootstrap_rows.into_iter().zip(bounds) {
            // A percentile-bootstrap interval can miss the estimate itself when the resampled
            // quantiles are lumpy or skewed (a few blocks hold the tail): the resampling then
            // does not describe the estimate's uncertainty, and the order-statistic interval,
            // which always contains it, is used instead.
            let estimate = difference(a, b, q);
            out[row] = Some(if contains(&bounds, estimate) {
                interval(bounds, "bootstrap")
            } else {
                order_statistic(a, b, q)
            });
        }
    }
    out
}

fn order_statistic(a: &ScopeData, b: &ScopeData, q: f64) -> Interval {
    let bounds = quantile::order_statistic_difference(&a.merged, &b.merged, q, CONFIDENCE);
    interval(bounds, "order-statistic")
}

/// The estimate of `quantile_b − quantile_a`, as the table shows it (both histograms are
/// non-empty where it is asked for).
fn difference(a: &ScopeData, b: &ScopeData, q: f64) -> f64 {
    let at = |d: &ScopeData| quantile::quantile(&d.merged, q).unwrap_or(0) as f64;
    at(b) - at(a)
}

/// Whether `x` lies inside the bounds (an absent side is unbounded).
fn contains(b: &Bounds, x: f64) -> bool {
    b.low.is_none_or(|l| l <= x) && b.high.is_none_or(|h| x <= h)
}

fn interval(b: Bounds, method: &'static str) -> Interval {
    Interval {
        low_ns: b.low,
        high_ns: b.high,
        method,
    }
}

mod pooled;
pub(crate) use pooled::compare_groups;

#[cfg(test)]
mod tests;
