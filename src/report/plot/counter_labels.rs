//! How a counter is named beside its strip and in the terminal: its unit, the correlation's
//! figures, and whether its values are written as time or as counts. Used by the counters
//! chart ([`super::counters_timeline`]) and the terminal's correlation lines.

use super::axis::Quantity;
use crate::format::counters::{CounterShift, Kind, family_of, kind_of};

/// The unit of a counter, short, as its strip is labelled (docs/counters.md has the long form).
pub(crate) fn unit_of(counter: &str) -> String {
    let unit = if counter.ends_with(":time_ns") {
        "ns in the state"
    } else if counter.ends_with(":usage") {
        "entries"
    } else {
        let long = family_of(counter).map_or("", |f| f.unit);
        long.split([',', '(']).next().unwrap_or("").trim()
    };
    match kind_of(counter) {
        Kind::Delta => format!("{unit} per interval"),
        Kind::Gauge => format!("{unit} at the interval's end"),
    }
}

/// A median as the terminal line shows it: whole numbers without decimals.
fn number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The correlation's figures of a counter, as the strip's label and the terminal's line both
/// say them: `{late}median 1000 (1000-1004) vs {other}250 (250-254), p 2.2e-06`.
pub(crate) fn comparison(s: &CounterShift, late: &str, other: &str) -> String {
    format!(
        "{late}median {} ({}-{}) vs {other}{} ({}-{}), p {:.1e}",
        number(s.late.median),
        s.late.min,
        s.late.max,
        number(s.other.median),
        s.other.min,
        s.other.max,
        s.p
    )
}

/// The label over a strip: name, unit and the correlation's figures.
pub(crate) fn strip_label(s: &CounterShift) -> String {
    format!(
        "{}, {}: {}",
        s.counter,
        unit_of(&s.counter),
        comparison(s, "late ", "other ")
    )
}

/// How a strip's values are written: as time for counters of ns, else as counts.
pub(super) fn quantity_of(counter: &str) -> Quantity {
    if counter.ends_with("_ns") {
        Quantity::LatencyNs
    } else {
        Quantity::Count
    }
}
