//! Zoom: `report --latency-range` and `--time-range` (and `export --format gnuplot
//! --latency-range`), one pair of ranges for every plot. The latency range sets the latency
//! axis of each plot that has one (the histogram's and the exceedance curve's x, the timeline's
//! and the heat map's y...), the time range the time axis of each time plot; a plot whose
//! data reach past an end says on the plot what was cut off, counted from its own data ("CPU 0:
//! 12 wakeups above 2.00 ms not shown"), and its statements say it again.

use super::axis::{Scale, ScaleKind};
use super::chart::Frame;
use crate::report::svg::Anchor;
use crate::units::{format_ns, group_digits, parse_duration_ns};

/// One axis' range: each end given or left to the data (`:2ms`, `10us:`), in the axis' unit
/// (ns of latency, or s since the run's start).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Range {
    pub from: Option<f64>,
    pub to: Option<f64>,
}

/// The ranges of `jitterlab report`: every plot's latency axis and time axis.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Zoom {
    /// Latency, ns.
    pub latency: Range,
    /// Time since the run's start, s.
    pub time: Range,
}

impl Zoom {
    /// The ranges as given: `--latency-range FROM:TO` and `--time-range FROM:TO`, durations
    /// with units, either end left out.
    pub fn parse(latency: Option<&str>, time: Option<&str>) -> Result<Zoom, String> {
        Ok(Zoom {
            latency: Range::parse(latency, "--latency-range", 1.0)?,
            time: Range::parse(time, "--time-range", 1e9)?,
        })
    }
}

impl Range {
    /// Parses `FROM:TO` of durations (`10us:2ms`, `:2ms`, `30s:`), each in ns divided by
    /// `ns_per_unit` (1 for ns, 1e9 for s). None: the whole range.
    pub(crate) fn parse(
        text: Option<&str>,
        option: &str,
        ns_per_unit: f64,
    ) -> Result<Range, String> {
        let Some(text) = text else {
            return Ok(Range::default());
        };
        let form =
            "FROM:TO, durations with units, either end left out (e.g. 10us:2ms, :2ms, 30s:90s)";
        let (from, to) = text
            .split_once(':')
            .ok_or_else(|| format!("{option} {text}: expected {form}"))?;
        let end = |t: &str| -> Result<Option<f64>, String> {
            match t.trim() {
                "" => return Ok(None),
                "0" => return Ok(Some(0.0)),
                _ => {}
            }
            parse_duration_ns(t)
                .map(|ns| Some(ns as f64 / ns_per_unit))
                .map_err(|e| format!("{option} {text}: {e}"))
        };
        let range = Range {
            from: end(from)?,
            to: end(to)?,
        };
        if let (Some(f), Some(t)) = (range.from, range.to)
            && f >= t
        {
            return Err(format!(
                "{option} {text}: the range is empty (FROM must be below TO); expected {form}"
            ));
        }
        // Latencies and times since the start are never below 0, so a TO of 0 or below with
        // FROM left out is as empty as `0:0` (a plot of no width: its positions are NaN).
        if range.from.is_none() && range.to.is_some_and(|t| t <= 0.0) {
            return Err(format!(
                "{option} {text}: the range is empty (nothing is below 0; TO must be above 0); \
                 expected {form}"
            ));
        }
        if range == Range::default() {
            return Err(format!(
                "{option} {text}: neither end is given; expected {form}"
            ));
        }
        Ok(range)
    }

    pub(crate) fn is_set(&self) -> bool {
        self.from.is_some() || self.to.is_some()
    }

    /// `scale` with the given ends in place of the data's (a log axis cannot start at 0 or
    /// below: such a FROM leaves the data's).
    pub(crate) fn apply(&self, scale: Scale) -> Scale {
        let from = self
            .from
            .filter(|&f| scale.kind == ScaleKind::Linear || f > 0.0);
        if !self.is_set() {
            return scale;
        }
        let (min, max) = (from.unwrap_or(scale.min), self.to.unwrap_or(scale.max));
        // An end given on one side only may cross the data's other end.
        let (min, max) = if min < max {
            (min, max)
        } else if from.is_some() {
            (
                min,
                min * if scale.kind == ScaleKind::Log {
                    10.0
                } else {
                    2.0
                } + 1.0,
            )
        } else {
            (
                max / if scale.kind == ScaleKind::Log {
                    10.0
                } else {
                    2.0
                },
                max,
            )
        };
        Scale { min, max, ..scale }
    }

    /// Whether `v` is below the range (Less), in it (Equal) or above it (Greater).
    pub(crate) fn place(&self, v: f64) -> std::cmp::Ordering {
        if self.from.is_some_and(|f| v < f) {
            std::cmp::Ordering::Less
        } else if self.to.is_some_and(|t| v > t) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }
}

/// Counts below and above a range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cut {
    pub(crate) below: u64,
    pub(crate) above: u64,
}

impl Cut {
    /// Adds `count` values of `v` to the side of `range` they fall on.
    pub(crate) fn add(&mut self, range: &Range, v: f64, count: u64) {
        match range.place(v) {
            std::cmp::Ordering::Less => self.below += count,
            std::cmp::Ordering::Greater => self.above += count,
            std::cmp::Ordering::Equal => {}
        }
    }

    /// `CPU 0: 12 wakeups above 2.00 ms not shown`, and below; None when nothing was cut.
    /// `what` names the things counted, `unit` writes an end (latency in ns, time in s).
    pub(crate) fn sentence(
        &self,
        label: &str,
        what: &str,
        range: &Range,
        unit: fn(f64) -> String,
    ) -> Option<String> {
        self.said(label, what, range, unit, ["below", "above"])
    }

    /// [`Cut::sentence`] for a time range: `before 10.0 s`, `after 20.0 s`.
    pub(crate) fn time_sentence(&self, label: &str, what: &str, range: &Range) -> Option<String> {
        self.said(label, what, range, time_end, ["before", "after"])
    }

    fn said(
        &self,
        label: &str,
        what: &str,
        range: &Range,
        unit: fn(f64) -> String,
        [below, above]: [&str; 2],
    ) -> Option<String> {
        let mut parts = Vec::new();
        if let (Some(f), true) = (range.from, self.below > 0) {
            parts.push(format!(
                "{} {what} {below} {} not shown",
                group_digits(self.below),
                unit(f)
            ));
        }
        if let (Some(t), true) = (range.to, self.above > 0) {
            parts.push(format!(
                "{} {what} {above} {} not shown",
                group_digits(self.above),
                unit(t)
            ));
        }
        (!parts.is_empty()).then(|| format!("{label}: {}", parts.join("; ")))
    }
}

/// An end of a latency range, as the notes write it.
pub(crate) fn latency_end(ns: f64) -> String {
    format_ns(ns.max(0.0) as u64)
}

/// An end of a time range, as the notes write it.
pub(crate) fn time_end(s: f64) -> String {
    crate::units::format_span((s.max(0.0) * 1e9) as u64)
}

/// Draws `notes` (what a zoom cut off) on the plot, at the top right of the plot area, each on
/// a line of its own, and returns them for the statements.
pub(crate) fn draw_notes(frame: &mut Frame, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    frame.svg.group(
        r##"class="zoom-cut" font-size="12" fill="#7a1f00" stroke="#fbfbfb" stroke-width="3" paint-order="stroke""##,
    );
    for (i, n) in notes.iter().enumerate() {
        frame.svg.text(
            frame.area.2 - 8.0,
            frame.area.1 + 16.0 + 15.0 * i as f64,
            Anchor::End,
            "",
            n,
        );
    }
    frame.svg.end_group();
}

/// What `range` cuts off `histogram`: its wakeups below and above, each bucket counted at its
/// highest value, where the histogram and exceedance plots draw it (within 0.1%).
pub(crate) fn cut_of(histogram: &hdrhistogram::Histogram<u64>, range: &Range) -> Cut {
    let mut cut = Cut::default();
    if range.is_set() {
        for v in histogram.iter_recorded() {
            cut.add(range, v.value_iterated_to() as f64, v.count_at_value());
        }
    }
    cut
}

/// The notes of a latency zoom on distributions: one per distribution it cut.
pub(crate) fn distribution_notes(
    distributions: &[super::Distribution],
    range: &Range,
    plural: &str,
) -> Vec<String> {
    distributions
        .iter()
        .filter_map(|d| cut_of(d.histogram, range).sentence(&d.label, plural, range, latency_end))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_with_units_and_open_ends() {
        let z = Zoom::parse(Some("10us:2ms"), Some("30s:")).unwrap();
        assert_eq!(
            z.latency,
            Range {
                from: Some(10_000.0),
                to: Some(2_000_000.0)
            }
        );
        assert_eq!(z.time.from, Some(30.0));
        assert_eq!(z.time.to, None);
        assert_eq!(
            Zoom::parse(Some(":300us"), None).unwrap().latency.to,
            Some(300_000.0)
        );
        assert_eq!(
            Zoom::parse(None, Some("0:10s")).unwrap().time.from,
            Some(0.0)
        );
        for bad in ["2ms", "2ms:1ms", ":", "1:2", "x:2ms", ":0", ":0ns", ":0s"] {
            assert!(Zoom::parse(Some(bad), None).is_err(), "{bad}");
            assert!(Zoom::parse(None, Some(bad)).is_err(), "{bad}");
        }
        // Z1: nothing is below 0, so `:0` is empty, said as such.
        let empty = Zoom::parse(Some(":0"), None).unwrap_err();
        assert!(empty.contains("the range is empty"), "{empty}");
        let none = Zoom::parse(None, None).unwrap();
        assert!(!none.latency.is_set() && !none.time.is_set());
    }

    #[test]
    fn cuts_are_counted_and_said() {
        let r = Range {
            from: Some(10_000.0),
            to: Some(2_000_000.0),
        };
        let mut c = Cut::default();
        c.add(&r, 3_000_000.0, 12);
        c.add(&r, 5_000.0, 1);
        c.add(&r, 2_000_000.0, 7);
        assert_eq!(
            c,
            Cut {
                below: 1,
                above: 12
            }
        );
        assert_eq!(
            c.sentence("CPU 0", "wakeups", &r, latency_end).unwrap(),
            "CPU 0: 1 wakeups below 10.0 us not shown; 12 wakeups above 2.00 ms not shown"
        );
        assert_eq!(
            Cut::default().sentence("CPU 0", "wakeups", &r, latency_end),
            None
        );
    }

    #[test]
    fn a_range_replaces_the_data_ends() {
        let s = Scale::new(ScaleKind::Log, 1_000.0, 10_000_000.0);
        let z = Range {
            from: None,
            to: Some(2_000_000.0),
        }
        .apply(s.clone());
        assert_eq!((z.min, z.max), (1_000.0, 2_000_000.0));
        // A log axis cannot start at 0: the data's end stays.
        let z = Range {
            from: Some(0.0),
            to: Some(300_000.0),
        }
        .apply(s);
        assert_eq!((z.min, z.max), (1_000.0, 300_000.0));
    }
}
