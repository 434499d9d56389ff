//! A load's throughput figures (run.json `loads[].throughput`, sweep.json's rows): a value with
//! its name and unit, and the one place that words them, as a sentence (`exchange rate 9.63
//! exchanges/s`) or as a label (`exchange rate (exchanges/s)`), never saying a unit twice
//! (`exchanges`, not `exchanges (exchanges)`).

use serde::{Deserialize, Serialize};

/// A rate with its unit, e.g. 5.0 "injections/s".
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Throughput {
    pub name: String,
    /// None (`null`) when the run gave no value, never a 0 in its place: hackbench's mean
    /// exchange time when no exchange finished. `no_value` says why.
    pub value: Option<f64>,
    pub unit: String,
    /// Why `value` is None, in words: `no exchange finished in 1.00 s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) no_value: Option<String>,
}

impl Throughput {
    pub fn new(name: &str, value: f64, unit: &str) -> Self {
        Throughput {
            name: name.into(),
            value: Some(value),
            unit: unit.into(),
            no_value: None,
        }
    }

    /// A figure the run has no value for, and why.
    pub fn none(name: &str, unit: &str, why: String) -> Self {
        Throughput {
            name: name.into(),
            value: None,
            unit: unit.into(),
            no_value: Some(why),
        }
    }
}

/// How people read a figure: `exchange rate 9.63 exchanges/s`, `385150 messages/s` (the name is
/// left out when the unit already says it), `messages sent 2360000 messages`. Whole numbers
/// print as integers, large rates without decimals, small ones with three significant digits.
impl std::fmt::Display for Throughput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(v) = self.value else {
            // `mean exchange time: none (no exchange finished in 1.00 s)`.
            return write!(
                f,
                "{}: none ({})",
                self.name,
                self.no_value.as_deref().unwrap_or("not reported")
            );
        };
        let value = if v.fract() == 0.0 || v.abs() >= 100.0 {
            format!("{v:.0}")
        } else if v.abs() >= 10.0 {
            format!("{v:.1}")
        } else if v.abs() >= 1.0 {
            format!("{v:.2}")
        } else {
            format!("{v:.3}")
        };
        f.write_str(&throughput_phrase(&self.name, &value, &self.unit))
    }
}

/// Whether a throughput figure's unit already says its name: `exchanges` counted in
/// `exchanges`, `messages` in `messages/s`. Then every label and sentence leaves the name out
/// (never "exchanges (exchanges)"): [`throughput_label`], [`throughput_phrase`].
fn unit_says_name(name: &str, unit: &str) -> bool {
    unit == name || unit.starts_with(&format!("{name}/"))
}

/// A throughput figure's name with its unit, as a column header or an axis title: `exchange
/// rate (exchanges/s)`, or the unit alone when it says the name (`exchanges`, `messages/s`).
pub(crate) fn throughput_label(name: &str, unit: &str) -> String {
    if unit_says_name(name, unit) {
        unit.to_string()
    } else {
        format!("{name} ({unit})")
    }
}

/// A throughput value in words, already formatted: `exchange rate 9.63 exchanges/s`, or
/// `59 exchanges` when the unit says the name.
pub(crate) fn throughput_phrase(name: &str, value: &str, unit: &str) -> String {
    if unit_says_name(name, unit) {
        format!("{value} {unit}")
    } else {
        format!("{name} {value} {unit}")
    }
}

/// Figures of one load on one line, comma-separated.
pub(crate) fn format_throughput(figures: &[Throughput]) -> String {
    figures
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, value: f64, unit: &str) -> Throughput {
        Throughput::new(name, value, unit)
    }

    #[test]
    fn a_unit_that_says_the_name_is_not_repeated() {
        assert_eq!(throughput_label("exchanges", "exchanges"), "exchanges");
        assert_eq!(throughput_label("messages", "messages/s"), "messages/s");
        assert_eq!(
            throughput_label("exchange rate", "exchanges/s"),
            "exchange rate (exchanges/s)"
        );
        assert_eq!(
            throughput_phrase("exchanges", "59", "exchanges"),
            "59 exchanges"
        );
        assert_eq!(
            throughput_phrase("rate", "1234", "bogo-ops/s"),
            "rate 1234 bogo-ops/s"
        );
    }

    #[test]
    fn throughput_reads_with_its_unit_and_sensible_digits() {
        assert_eq!(
            t("exchanges", 59.0, "exchanges").to_string(),
            "59 exchanges"
        );
        assert_eq!(
            t("messages", 385150.2, "messages/s").to_string(),
            "385150 messages/s"
        );
        assert_eq!(
            t("exchange rate", 9.634, "exchanges/s").to_string(),
            "exchange rate 9.63 exchanges/s"
        );
        assert_eq!(t("rate", 12.34, "Mbit/s").to_string(), "rate 12.3 Mbit/s");
        assert_eq!(t("cpu time", 0.0123, "s").to_string(), "cpu time 0.012 s");
        assert_eq!(
            format_throughput(&[
                t("total", 29.0, "injections"),
                t("rate", 0.97, "injections/s")
            ]),
            "total 29 injections, rate 0.970 injections/s"
        );
    }
}
