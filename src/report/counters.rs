//! The context counters in the views: the terminal's line per CPU where counters moved with
//! the late wakeups (run.json `counters.correlation`, docs/counters.md).

use crate::format::counters::{CounterShift, CpuCorrelation};
use crate::format::run_record::RunRecord;
use crate::units::format_ns;

/// How many moved counters a CPU's line names (the smallest p first; run.json has them all).
const SHOWN: usize = 3;

/// A median as the line shows it: whole numbers without decimals.
fn number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// `irq:LOC median 1000 (1000-1004) vs 250 (250-254), p 2.2e-06`
pub(crate) fn shift_text(s: &CounterShift) -> String {
    format!(
        "{} median {} ({}-{}) vs {} ({}-{}), p {:.1e}",
        s.counter,
        number(s.late.median),
        s.late.min,
        s.late.max,
        number(s.other.median),
        s.other.min,
        s.other.max,
        s.p
    )
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
