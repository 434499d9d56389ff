//! Axes: a scale from data to pixels, and ticks with labels that carry units.

/// What an axis measures: decides tick placement and how labels are written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Quantity {
    /// Latency in ns; labels in ns/us/ms/s.
    LatencyNs,
    /// A count of wakeups.
    Count,
    /// A fraction in (0, 1]; labels in percent.
    Fraction,
    /// Time since the run's start in s; labels in s, min or h.
    TimeS,
    /// Any other number, with its unit for the axis title.
    Plain(String),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ScaleKind {
    Linear,
    Log,
}

/// Maps data values in [min, max] to pixels in [from_px, to_px] (to_px may be smaller, as on
/// a y axis).
#[derive(Debug, Clone)]
pub(crate) struct Scale {
    pub kind: ScaleKind,
    pub min: f64,
    pub max: f64,
    pub(crate) from_px: f64,
    pub(crate) to_px: f64,
}

impl Scale {
    pub(crate) fn new(kind: ScaleKind, min: f64, max: f64) -> Self {
        let (mut min, mut max) = (min, max);
        if kind == ScaleKind::Log {
            min = min.max(f64::MIN_POSITIVE);
            max = max.max(min * 10.0);
        }
        if max.partial_cmp(&min) != Some(std::cmp::Ordering::Greater) {
            max = min + 1.0;
        }
        Scale {
            kind,
            min,
            max,
            from_px: 0.0,
            to_px: 1.0,
        }
    }

    /// The scale with its ends widened to whole decades (log) or to nice steps (linear).
    pub(crate) fn rounded_out(self) -> Self {
        match self.kind {
            ScaleKind::Log => Scale {
                min: 10f64.powf(self.min.log10().floor()),
                max: 10f64.powf(self.max.log10().ceil()),
                ..self
            },
            ScaleKind::Linear => {
                let step = nice_step((self.max - self.min) / 6.0);
                Scale {
                    min: (self.min / step).floor() * step,
                    max: (self.max / step).ceil() * step,
                    ..self
                }
            }
        }
    }

    pub(crate) fn with_pixels(self, from_px: f64, to_px: f64) -> Self {
        Scale {
            from_px,
            to_px,
            ..self
        }
    }

    /// The pixel of `v`; values outside the range map outside the pixel range.
    pub(crate) fn px(&self, v: f64) -> f64 {
        let t = match self.kind {
            ScaleKind::Linear => (v - self.min) / (self.max - self.min),
            ScaleKind::Log => {
                let v = v.max(self.min * 1e-3);
                (v.log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
            }
        };
        self.from_px + t * (self.to_px - self.from_px)
    }
}

/// A tick mark: major ticks carry a label and a grid line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tick {
    pub value: f64,
    pub label: Option<String>,
}

/// 1, 2, 2.5 or 5 times a power of ten, at least `raw`.
pub(crate) fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let f = raw / magnitude;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// The ticks of an axis showing `quantity` on `scale`.
pub(crate) fn ticks(scale: &Scale, quantity: &Quantity) -> Vec<Tick> {
    match scale.kind {
        ScaleKind::Log => log_ticks(scale, quantity),
        ScaleKind::Linear => linear_ticks(scale, quantity),
    }
}

fn log_ticks(scale: &Scale, quantity: &Quantity) -> Vec<Tick> {
    let lo = scale.min.log10().floor() as i32;
    let hi = scale.max.log10().ceil() as i32;
    let decades = (hi - lo).max(1);
    // Label every decade, or every other one when there are many.
    let label_every = if decades > 9 { 2 } else { 1 };
    let mut out = Vec::new();
    for e in lo..=hi {
        let base = 10f64.powi(e);
        if base >= scale.min * 0.999 && base <= scale.max * 1.001 {
            out.push(Tick {
                value: base,
                label: ((e - lo) % label_every == 0).then(|| format_value(base, quantity, base)),
            });
        }
        if decades <= 6 {
            for m in 2..10 {
                let v = base * m as f64;
                if v > scale.min && v < scale.max {
                    out.push(Tick {
                        value: v,
                        label: None,
                    });
                }
            }
        }
    }
    out
}

fn linear_ticks(scale: &Scale, quantity: &Quantity) -> Vec<Tick> {
    let (min, max) = (scale.min, scale.max);
    let step = match quantity {
        Quantity::TimeS => time_step(max - min),
        Quantity::LatencyNs => {
            let unit = latency_unit(max.abs().max(min.abs())).1;
            nice_step((max - min) / unit / 6.0) * unit
        }
        Quantity::Count => nice_step((max - min) / 6.0).max(1.0),
        _ => nice_step((max - min) / 6.0),
    };
    let mut out = Vec::new();
    let mut v = (min / step).ceil() * step;
    while v <= max + step * 1e-9 {
        out.push(Tick {
            value: v,
            label: Some(format_value(v, quantity, max.abs().max(min.abs()))),
        });
        v += step;
    }
    out
}

/// Steps of time axes: divisions of the clock (3 or 4 hours, 15 or 30 minutes, not 2.5).
fn time_step(range_s: f64) -> f64 {
    let (unit, _) = time_unit(range_s);
    let raw = range_s / unit / 7.0;
    let steps: &[f64] = match unit {
        3600.0 => &[1.0, 2.0, 3.0, 4.0, 6.0, 12.0, 24.0, 48.0, 168.0],
        60.0 => &[1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0],
        _ => &[],
    };
    steps
        .iter()
        .copied()
        .find(|&s| s >= raw)
        .unwrap_or_else(|| nice_step(raw))
        * unit
}

/// The time unit (seconds per unit, name) an axis spanning `range_s` is labelled in.
pub(crate) fn time_unit(range_s: f64) -> (f64, &'static str) {
    if range_s >= 3.0 * 3600.0 {
        (3600.0, "h")
    } else if range_s >= 180.0 {
        (60.0, "min")
    } else {
        (1.0, "s")
    }
}

/// (name, ns per unit) for latencies around `ns`.
pub(crate) fn latency_unit(ns: f64) -> (&'static str, f64) {
    if ns >= 1e9 {
        ("s", 1e9)
    } else if ns >= 1e6 {
        ("ms", 1e6)
    } else if ns >= 1e3 {
        ("us", 1e3)
    } else {
        ("ns", 1.0)
    }
}

/// A number without trailing zeros: 1, 2.5, 0.01 (up to 9 decimals).
fn short(v: f64) -> String {
    let s = format!("{v:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// A tick label. `scale_of` is a typical magnitude of the axis, which fixes the unit of
/// linear latency axes so that every label of one axis has the same unit.
pub(crate) fn format_value(v: f64, quantity: &Quantity, scale_of: f64) -> String {
    match quantity {
        Quantity::LatencyNs => {
            // Log axes (labels at powers of ten) name each label's own unit.
            let (unit, per) = latency_unit(scale_of);
            format!("{} {unit}", short(v / per))
        }
        Quantity::Count => {
            let a = v.abs();
            if a >= 1e9 {
                format!("{}G", short(v / 1e9))
            } else if a >= 1e6 {
                format!("{}M", short(v / 1e6))
            } else if a >= 1e3 {
                format!("{}k", short(v / 1e3))
            } else {
                short(v)
            }
        }
        Quantity::Fraction => format!("{}%", short(v * 100.0)),
        Quantity::TimeS => {
            let (per, name) = time_unit(scale_of);
            format!("{} {name}", short(v / per))
        }
        Quantity::Plain(_) => short(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_latency_ticks_are_decades_with_units() {
        let s = Scale::new(ScaleKind::Log, 8_000.0, 3_000_000.0).rounded_out();
        assert_eq!((s.min, s.max), (1_000.0, 10_000_000.0));
        let labels: Vec<String> = ticks(&s, &Quantity::LatencyNs)
            .into_iter()
            .filter_map(|t| t.label)
            .collect();
        assert_eq!(labels, ["1 us", "10 us", "100 us", "1 ms", "10 ms"]);
    }

    #[test]
    fn linear_latency_ticks_share_one_unit() {
        let s = Scale::new(ScaleKind::Linear, 0.0, 45_000.0);
        let labels: Vec<String> = ticks(&s, &Quantity::LatencyNs)
            .into_iter()
            .filter_map(|t| t.label)
            .collect();
        assert_eq!(
            labels,
            ["0 us", "10 us", "20 us", "30 us", "40 us"],
            "{labels:?}"
        );
    }

    #[test]
    fn fractions_counts_and_times() {
        assert_eq!(format_value(0.001, &Quantity::Fraction, 1.0), "0.1%");
        assert_eq!(format_value(1e-6, &Quantity::Fraction, 1.0), "0.0001%");
        assert_eq!(format_value(10_000.0, &Quantity::Count, 1.0), "10k");
        assert_eq!(format_value(7200.0, &Quantity::TimeS, 86_400.0), "2 h");
        let s = Scale::new(ScaleKind::Linear, 0.0, 86_400.0);
        let labels: Vec<String> = ticks(&s, &Quantity::TimeS)
            .into_iter()
            .filter_map(|t| t.label)
            .collect();
        assert_eq!(labels.first().unwrap(), "0 h");
        assert_eq!(labels.last().unwrap(), "24 h");
    }

    #[test]
    fn pixels() {
        let s = Scale::new(ScaleKind::Log, 1.0, 100.0).with_pixels(0.0, 200.0);
        assert!((s.px(10.0) - 100.0).abs() < 1e-9);
        let y = Scale::new(ScaleKind::Linear, 0.0, 10.0).with_pixels(100.0, 0.0);
        assert!((y.px(2.5) - 75.0).abs() < 1e-9);
    }
}
