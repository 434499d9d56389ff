//! Groups of runs compared as one run each (`jitterlab tune`: the arms of one setting, made
//! in rounds interleaved with the other settings' arms so that the machine's drift falls on
//! every setting alike). A group's interval histograms follow each other in the order of its
//! runs, and the bootstrap resamples blocks of them as it resamples one run's; its figures are
//! those of all its samples together: percentiles from the merged histogram, the lowest min,
//! the highest max, the mean weighted by samples, the missed periods summed.

use super::{COMPARED, ComparisonOfGroups, ScopeData, compare_scope, label, scope_data};
use crate::analysis::metric::Metric;
use crate::analysis::quantile;
use crate::results::loaded::LoadedRun;

/// Compares each group (at least two; each at least one run) against the first, overall
/// and per CPU, as [`super::compare`] compares runs.
pub(crate) fn compare_groups(groups: &[&[LoadedRun]]) -> ComparisonOfGroups {
    let mut cpus: Vec<usize> = groups
        .iter()
        .flat_map(|g| g.iter())
        .flat_map(|r| r.record.threads.iter().map(|t| t.cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let scopes = std::iter::once(None)
        .chain(cpus.into_iter().map(Some))
        .enumerate()
        .map(|(k, cpu)| {
            let data: Vec<ScopeData> = groups
                .iter()
                .map(|g| pool(g.iter().map(|r| scope_data(r, cpu)).collect()))
                .collect();
            compare_scope(k, cpu, &data)
        })
        .collect();
    ComparisonOfGroups {
        labels: (0..groups.len()).map(label).collect(),
        runs: groups.iter().map(|g| g.len()).collect(),
        scopes,
    }
}

/// The runs' data of one scope as one run's.
fn pool(parts: Vec<ScopeData>) -> ScopeData {
    let samples: u64 = parts.iter().map(|p| p.samples).sum();
    let mut merged = quantile::Sparse::new();
    let mut slots = Vec::new();
    for p in &parts {
        quantile::merge_into(&mut merged, &p.merged);
        slots.extend(p.slots.iter().cloned());
    }
    let values = COMPARED
        .iter()
        .enumerate()
        .map(|(row, &m)| {
            let each = parts.iter().filter_map(|p| p.values[row]);
            match m {
                Metric::Min => each.reduce(f64::min),
                Metric::Max => each.reduce(f64::max),
                Metric::Missed => parts.iter().map(|p| p.values[row]).sum(),
                Metric::Mean => {
                    let (sum, n) =
                        parts
                            .iter()
                            .fold((0.0, 0u64), |(s, n), p| match p.values[row] {
                                Some(mean) => (s + mean * p.samples as f64, n + p.samples),
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
    // The CPU time per wakeup, over the runs that recorded it, weighted by their samples.
    let timed: Vec<(f64, u64)> = parts
        .iter()
        .filter_map(|p| p.cpu_time_per_cycle_ns.map(|t| (t, p.samples)))
        .collect();
    let cpu_time_per_cycle_ns = (timed.len() == parts.len() && samples > 0)
        .then(|| timed.iter().map(|(t, n)| t * *n as f64).sum::<f64>() / samples as f64);
    // A pooled percentile is a lower bound when any run's was (an import's overflows).
    let bounds = (0..COMPARED.len())
        .map(|row| parts.iter().any(|p| p.bounds[row]))
        .collect();
    ScopeData {
        samples,
        values,
        bounds,
        slots,
        merged,
        cpu_time_per_cycle_ns,
    }
}
