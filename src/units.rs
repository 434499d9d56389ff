//! Durations with units in, nanoseconds inside, a unit on every number out.

/// Nanoseconds per unit, longest suffix first so that `ms` is not read as `m` + `s`.
const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

/// Whether `text` is a duration with a minus sign (`-1ms`): out of every option's range, said
/// so rather than "not a duration" (issue 39, L6-a).
pub(crate) fn is_negative_duration(text: &str) -> bool {
    text.trim()
        .strip_prefix('-')
        .is_some_and(|rest| !rest.starts_with('-') && parse_duration_ns(rest).is_ok())
}

/// Parses a duration such as `500us`, `1ms`, `1.5ms`, `30s`, `10m`, `24h` into nanoseconds.
///
/// A unit is required: a bare number is ambiguous (cyclictest takes microseconds, sleep takes
/// seconds), and a wrong guess silently changes a measurement by a factor of a thousand.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let accepted = "a number with a unit: ns, us, ms, s, m, h or d (e.g. 500us, 1ms, 30s, 24h)";
    if is_negative_duration(t) {
        return Err(format!(
            "'{text}' is negative: out of range; a duration is 0 or more, e.g. 1ms"
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("'{text}' has no unit; expected {accepted}"))?;
    let (number, unit) = t.split_at(split);
    if number.is_empty() {
        return Err(format!("'{text}' is not a duration; expected {accepted}"));
    }
    let scale = UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|&(_, scale)| scale)
        .ok_or_else(|| format!("'{text}' has an unknown unit '{unit}'; expected {accepted}"))?;
    let ns = match number.split_once('.') {
        None => number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(|| format!("'{text}' is too large"))?,
        Some((whole, frac)) => {
            if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
                return Err(format!("'{text}' is not a duration; expected {accepted}"));
            }
            let whole: u64 = if whole.is_empty() {
                0
            } else {
                whole
                    .parse()
                    .map_err(|_| format!("'{text}' is too large"))?
            };
            // Exact decimal arithmetic: 1.5ms must be 1_500_000 ns, not 1_499_999.
            let digits = frac.len().min(18) as u32;
            let frac_value: u64 = frac[..digits as usize].parse().unwrap_or(0);
            let frac_ns = (frac_value as u128 * scale as u128 / 10u128.pow(digits)) as u64;
            whole
                .checked_mul(scale)
                .and_then(|w| w.checked_add(frac_ns))
                .ok_or_else(|| format!("'{text}' is too large"))?
        }
    };
    Ok(ns)
}

/// Bytes per size unit: binary (KiB, MiB, GiB, TiB) and decimal (kB, MB, GB, TB), and B.
const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
];

/// Parses a size such as `500MiB`, `1GiB` or `2GB` into bytes. A unit is required, for the
/// same reason as for durations: a bare number could be bytes or megabytes.
pub(crate) fn parse_size_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let accepted =
        "a whole number with a unit: B, KiB, MiB, GiB, TiB, kB, MB, GB or TB (e.g. 500MiB, 1GiB)";
    let split = t
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("'{text}' has no unit; expected {accepted}"))?;
    let (number, unit) = t.split_at(split);
    if number.is_empty() {
        return Err(format!("'{text}' is not a size; expected {accepted}"));
    }
    let scale = SIZE_UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|&(_, scale)| scale)
        .ok_or_else(|| format!("'{text}' has an unknown unit '{unit}'; expected {accepted}"))?;
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// Formats nanoseconds with a unit chosen for readability: `850 ns`, `42.1 us`, `1.50 ms`, `2.00 s`.
pub fn format_ns(ns: u64) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} us", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.2} s", ns as f64 / 1e9)
    }
}

/// [`format_ns`] for a value that can be negative (a minimum latency of an early wakeup).
pub fn format_ns_signed(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", format_ns(ns.unsigned_abs()))
    } else {
        format_ns(ns as u64)
    }
}

/// An integer with its digits in groups of three, as the tail sentences write counts:
/// `1 990 241`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// Formats a duration for humans, as in progress lines: `1h02m03s`, `4m05s`, `12.3s`.
pub(crate) fn format_elapsed(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s % 3600 / 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", ns as f64 / 1e9)
    }
}

/// A long span for people, as "once in" and MTBF statements say it: `850 ns`, `3.0 s`,
/// `7.5 min`, `5.2 h`, `11.4 days`, `3.2 years` (365.25 days), three figures at most; below a
/// second as [`format_ns`].
pub(crate) fn format_span(ns: u64) -> String {
    const MIN: f64 = 60e9;
    const HOUR: f64 = 3600e9;
    const DAY: f64 = 86_400e9;
    const YEAR: f64 = 365.25 * DAY;
    let x = ns as f64;
    let (value, unit) = if x < 1e9 {
        return format_ns(ns);
    } else if x < MIN {
        (x / 1e9, "s")
    } else if x < HOUR {
        (x / MIN, "min")
    } else if x < DAY {
        (x / HOUR, "h")
    } else if x < YEAR {
        (x / DAY, "days")
    } else {
        (x / YEAR, "years")
    };
    if value < 100.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_spans_in_human_units() {
        assert_eq!(format_span(500), "500 ns");
        assert_eq!(format_span(3_000_000_000), "3.0 s");
        assert_eq!(format_span(450_000_000_000), "7.5 min");
        // 1e18 ns, which `format_elapsed` writes 277777h46m40s.
        assert_eq!(format_span(1_000_000_000_000_000_000), "31.7 years");
        assert_eq!(format_span(985_000_000_000_000), "11.4 days");
        assert_eq!(format_span(18_720_000_000_000), "5.2 h");
        assert_eq!(format_span(u64::MAX), "585 years");
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("500us"), Ok(500_000));
        assert_eq!(parse_duration_ns("1ms"), Ok(1_000_000));
        assert_eq!(parse_duration_ns("30s"), Ok(30_000_000_000));
        assert_eq!(parse_duration_ns("10m"), Ok(600_000_000_000));
        assert_eq!(parse_duration_ns("24h"), Ok(86_400_000_000_000));
        assert_eq!(parse_duration_ns("2d"), Ok(172_800_000_000_000));
    }

    #[test]
    fn parses_fractions_exactly() {
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("0.1s"), Ok(100_000_000));
        assert_eq!(parse_duration_ns(".5us"), Ok(500));
    }

    #[test]
    fn rejects_bad_durations_with_the_value_named() {
        for bad in [
            "",
            "10",
            "ms",
            "-1ms",
            "1.2.3s",
            "5 parsecs",
            "1x",
            "99999999999999999999h",
        ] {
            let err = parse_duration_ns(bad).unwrap_err();
            assert!(err.contains(&format!("'{bad}'")), "{bad}: {err}");
        }
    }

    #[test]
    fn formats_with_units() {
        assert_eq!(format_ns(850), "850 ns");
        assert_eq!(format_ns(42_100), "42.1 us");
        assert_eq!(format_ns(1_500_000), "1.50 ms");
        assert_eq!(format_ns(2_000_000_000), "2.00 s");
        assert_eq!(format_elapsed(3_723_000_000_000), "1h02m03s");
    }

    #[test]
    fn sizes_need_a_unit_and_fit() {
        assert_eq!(parse_size_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size_bytes("500MiB"), Ok(500 << 20));
        assert_eq!(parse_size_bytes("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size_bytes("4096B"), Ok(4096));
        assert!(parse_size_bytes("100").unwrap_err().contains("no unit"));
        assert!(
            parse_size_bytes("1.5GiB")
                .unwrap_err()
                .contains("unknown unit '.5GiB'")
        );
        assert!(
            parse_size_bytes("1gib")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_size_bytes("MiB").unwrap_err().contains("not a size"));
        assert!(
            parse_size_bytes("99999999999TiB")
                .unwrap_err()
                .contains("too large")
        );
    }
}
