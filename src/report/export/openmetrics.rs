//! `--format prometheus` and `--format openmetrics`: the run's summary as metrics, in the
//! Prometheus text format 0.0.4 (a file for node_exporter's textfile collector: a CI box or a
//! board without `jitterlab monitor` can still feed Prometheus) or in OpenMetrics text 1.0.0
//! (for what reads OpenMetrics). The families and their rendering are `report::openmetrics`'s,
//! shared with the monitor; here the run's figures are put into them. "Over the window" is the
//! whole run.

use super::exporter::RunExporter;
use super::output::write_text;
use super::system_facts::SystemFacts;
use crate::error::Result;
use crate::report::openmetrics::{
    CpuFigures, Exposition, Identity, LatencyBuckets, NoiseFigures, Syntax, render,
};
use crate::results::loaded::LoadedRun;
use std::path::Path;

/// The exporter of one syntax.
pub(crate) struct Metrics(pub Syntax);

/// The exposition of a stored run: per CPU, run.json's figures and latency.hlog's histogram.
pub(crate) fn exposition(run: &LoadedRun) -> Exposition {
    let r = &run.record;
    let absent: &[String] = r.imported.as_ref().map_or(&[], |i| i.absent.as_slice());
    let known = |field: &str, v: u64| (!absent.iter().any(|a| a == field)).then_some(v);
    // A quantile among an import's overflows (at or above where they begin) is only a lower
    // bound: left out, as a gauge has no way to say "at least" and a dashboard alerting on
    // p99 > 50 us would never fire on it (ninth hostile re-run, L9-b); the max is the source's
    // own, exact.
    let exact = |cpu: usize, q: Option<u64>| {
        let from = r
            .imported
            .as_ref()
            .and_then(|i| i.latency_overflow_from(cpu));
        q.filter(|&q| from.is_none_or(|from| q < from))
    };
    let cpus = r
        .threads
        .iter()
        .map(|t| {
            let l = &t.latency;
            let overflow_from = r
                .imported
                .as_ref()
                .and_then(|i| i.latency_overflow_from(t.cpu));
            let latency = run.merged_histogram(&format!("cpu{}", t.cpu)).map(|h| {
                // run.json's mean is exact; the histogram's is rounded to its buckets.
                let sum_ns = l
                    .mean_ns
                    .map_or(h.mean() * h.len() as f64, |m| m * l.samples as f64);
                // An import's overflows in no bucket below the source's max (L10-i).
                LatencyBuckets::from_histogram_with_overflows(&h, sum_ns, overflow_from, l.max_ns)
            });
            // A noise loop misses no period and has no deadline (run.json's figures for them
            // are placeholders, docs/noise.md): left out.
            let latency_only =
                |field: &str, v: u64| r.kind.spec().periodic.then_some(v).and(known(field, v));
            CpuFigures {
                cpu: t.cpu,
                latency,
                max_ns: l.max_ns,
                quantiles_ns: [l.p99_ns, l.p999_ns, l.p9999_ns].map(|q| exact(t.cpu, q)),
                samples: Some(l.samples),
                missed_periods: latency_only("missed_periods", t.missed_periods),
                dropped_records: known("dropped_records", t.dropped_records),
                deadline_misses: latency_only("deadline_misses", t.deadline_misses),
                noise: t.noise.as_ref().map(|n| NoiseFigures {
                    noise_ns: n.noise_ns,
                    noise_ratio: n.noise_pct / 100.0,
                    throttled_ns: n.throttled_ns,
                }),
                ..CpuFigures::default()
            }
        })
        .collect();
    let facts = SystemFacts::of(r);
    Exposition {
        kind: r.kind,
        identity: Identity {
            version: r.jitterlab_version.clone(),
            kernel: facts.kernel_release,
            preemption: facts.preemption,
            host: facts.host,
        },
        cpus,
        budget: r.budget.as_ref().map_or_else(Vec::new, |v| {
            v.clauses
                .iter()
                .map(|c| (c.clause.clone(), c.passed))
                .collect()
        }),
    }
}

impl RunExporter for Metrics {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        write_text(output, &render(&exposition(run), self.0))
    }
}
