//! The context counters in the views: the terminal's line per CPU where counters moved with
//! the late wakeups (run.json `counters.correlation`, docs/counters.md), and the report's
//! figures of them beneath latency over time, with the note for the CPUs where none moved.

use crate::format::counters::{self, CounterShift, CpuCorrelation};
use crate::format::run_record::RunRecord;
use crate::report::digest::{RunDigest, SeriesDigest};
use crate::report::plot::counters_timeline::{self, Gather};
use crate::report::plot::{Figure, timeline};
use crate::units::format_ns;

/// How many moved counters a CPU's line names (the smallest p first; run.json has them all).
const SHOWN: usize = 3;

/// `irq:LOC median 1000 (1000-1004) vs 250 (250-254), p 2.2e-06`
pub(crate) fn shift_text(s: &CounterShift) -> String {
    format!("{} {}", s.counter, counters_timeline::comparison(s, "", ""))
}

/// One CPU's line, when some counter differed significantly.
pub(crate) fn cpu_line(c: &CpuCorrelation) -> Option<String> {
    if c.moved.is_empty() {
        return None;
    }
    let shown: Vec<String> = c.moved.iter().take(SHOWN).map(shift_text).collect();
    let more = c.moved.len().saturating_sub(SHOWN);
    Some(format!(
        "cpu{}: in the {} intervals with a wakeup over {} ({}) against the other {}: {}{}",
        c.cpu,
        c.late_intervals,
        format_ns(c.threshold_ns),
        c.threshold_basis,
        c.other_intervals,
        shown.join("; "),
        if more > 0 {
            format!("; {more} more in run.json")
        } else {
            String::new()
        }
    ))
}

/// The terminal's section: a heading and one line per CPU where counters moved; empty when
/// none did.
pub(crate) fn summary(record: &RunRecord) -> String {
    let Some(counters) = &record.counters else {
        return String::new();
    };
    let lines: Vec<String> = counters.correlation.iter().filter_map(cpu_line).collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "Counters that moved with the late wakeups (per interval, late vs other; Mann-Whitney, p < {} / counters tested; docs/counters.md):\n",
        crate::analysis::counters::ALPHA
    );
    for l in lines {
        out.push_str("  ");
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// The report's figures beneath latency over time: one per CPU where counters moved
/// ([`counters_timeline`]), named `<prefix>-counters-cpuN`. None for a run without counters
/// (imported, `--no-counters`, segmented) or where none moved. A counters.log that cannot be
/// read leaves them out with a warning on stderr; [`html_note`] then says so on the page.
/// Each on the time axis of `time` (`report --time-range`), saying what it cut.
pub(crate) fn figures(
    prefix: &str,
    run: &RunDigest,
    time: &crate::report::plot::zoom::Range,
) -> Vec<Figure> {
    let Some(record) = &run.record.counters else {
        return Vec::new();
    };
    let series: Vec<&SeriesDigest> = run.series.iter().collect();
    let extent_s = run.extent_s();
    // The latency-over-time chart's own points (the same call with the same series).
    let timeline = timeline::prepare(&series, extent_s, Vec::new(), Vec::new());
    let interval_ns = run.record.plan.log_interval_ns;
    let mut gather = Gather::new(&timeline, &series, &record.correlation, interval_ns);
    if gather.is_empty() {
        return Vec::new();
    }
    let column_s = gather.column_s();
    let path = run.path.join(counters::FILE_NAME);
    let damage = match counters::scan(&path, |line| gather.add(&line)) {
        Ok(file) if file.interval_ns == interval_ns => file.damage,
        Ok(file) => {
            eprintln!(
                "warning: {}: its intervals ({} ns) are not the run's log intervals ({interval_ns} ns): the counters charts are left out",
                path.display(),
                file.interval_ns
            );
            return Vec::new();
        }
        Err(e) => {
            eprintln!("warning: the counters charts are left out: {e}");
            return Vec::new();
        }
    };
    gather
        .finish()
        .iter()
        .map(|c| {
            let cpu = c.correlation.cpu;
            let mut f = counters_timeline::draw_zoomed(
                &format!("{prefix}-counters-cpu{cpu}"),
                &format!("CPU {cpu}: the counters that moved with the late wakeups, over time"),
                c,
                extent_s,
                column_s,
                time,
            );
            f.statements
                .extend(damage.iter().map(|d| format!("counters.log: {d}")));
            f
        })
        .collect()
}

/// The line under latency over time for the CPUs without a counters figure: none moved (with
/// the counts, so the reader knows they were looked at), not tested (why), or not drawn. None
/// when the run has no counters or every CPU has its figure.
pub(crate) fn html_note(record: &RunRecord, figures: &[Figure]) -> Option<String> {
    let c = record.counters.as_ref()?;
    if c.correlation.is_empty() {
        let why = c.correlation_refused.as_ref()?;
        return Some(format!(
            "Context counters (docs/counters.md): no correlation: {why}"
        ));
    }
    let drawn = |cpu: usize| {
        let name = format!("-counters-cpu{cpu}");
        figures.iter().any(|f| f.name.ends_with(&name))
    };
    let parts: Vec<String> = c
        .correlation
        .iter()
        .filter(|k| !drawn(k.cpu))
        .map(|k| match (&k.refused, k.moved.is_empty()) {
            (Some(why), _) => format!("CPU {}: not tested ({why})", k.cpu),
            (None, true) => format!(
                "CPU {}: no counter moved with the late wakeups ({} intervals with a wakeup over {} against the other {}; {} counters tested)",
                k.cpu,
                k.late_intervals,
                format_ns(k.threshold_ns),
                k.other_intervals,
                k.tested
            ),
            (None, false) => format!(
                "CPU {}: {} counters moved (run.json counters.correlation) but counters.log could not be drawn (the report's warning says why)",
                k.cpu,
                k.moved.len()
            ),
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "Context counters (docs/counters.md): {}.",
        parts.join("; ")
    ))
}
