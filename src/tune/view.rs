//! The tune's table on the terminal: a row per measured fix (its figures as ratios to the
//! baseline with their 95 % intervals, and its verdict), the together row, then the fixes not
//! measured and why. At most 100 columns.

use crate::format::tune::{Effect, Figure, MISSED_RATE, TuneEnded, TuneRecord};

/// A ratio with its interval: `0.62 [0.48-0.80]`; an open side `-`, an absent ratio `-`. A
/// side beyond 10^4 or within 10^-2 of zero (a round-level interval of 2 rounds, at 1 degree
/// of freedom, reaches 9e13: the twelfth hostile re-run's stalled null fix) in scientific
/// notation, so that the row keeps its columns and its truth.
fn ratio(f: Option<&Figure>) -> String {
    let Some(f) = f else { return "-".into() };
    let Some(r) = f.ratio else { return "-".into() };
    let side = |v: Option<f64>| {
        v.map_or("-".to_string(), |v| {
            if v != 0.0 && !(0.01..1e4).contains(&v) {
                format!("{v:.0e}")
            } else {
                format!("{v:.2}")
            }
        })
    };
    match (f.ratio_low, f.ratio_high) {
        // Too few samples beyond the percentile for any bound.
        (None, None) => format!("{r:.2} [unbounded]"),
        (low, high) => {
            let (low, high) = (side(low), side(high));
            // A side in scientific notation may hold a minus sign (`4e-14`): a dash between
            // the sides would then read as a range to a negative number (`[2e-23-3e24]`,
            // thirteenth hostile re-run, L13-g).
            let between = if low.contains('e') || high.contains('e') {
                ", "
            } else {
                "-"
            };
            format!("{r:.2} [{low}{between}{high}]")
        }
    }
}

fn row(name: &str, e: &Effect) -> String {
    format!(
        "{name:<15} {:<17} {:<17} {:<5} {:<18} {}",
        ratio(e.figure("p99")),
        ratio(e.figure("p99.9")),
        e.figure("max")
            .and_then(|f| f.ratio)
            .map_or("-".into(), |r| format!("{r:.2}")),
        ratio(e.figure(MISSED_RATE)),
        e.verdict.words()
    )
}

/// The whole table.
pub(crate) fn table(record: &TuneRecord) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "Fixes against the baseline, best first: ratio with/without, 95 % interval, {} rounds{}\n",
        record.rounds,
        record
            .arm_duration_ns
            .map(|d| format!(" of {} arms", crate::units::format_elapsed(d)))
            .unwrap_or_default()
    ));
    if record.rounds == 2 {
        // The spread between rounds rests on one degree of freedom (tune/effect.rs).
        out.push_str(
            "(2 rounds: the intervals hold the rounds' spread at 1 degree of freedom, t = 12.71:\n \
             only a change far beyond it shows; give --rounds 4 or more for smaller ones)\n",
        );
    }
    out.push_str(&format!(
        "{:<15} {:<17} {:<17} {:<5} {:<18} {}\n",
        "fix", "p99", "p99.9", "max", "missed deadlines/h", "verdict"
    ));
    for f in &record.fixes {
        out.push_str(&row(&f.name, &f.effect));
        out.push('\n');
    }
    if let Some(together) = &record.together {
        out.push_str(&row("all worthwhile", together));
        out.push('\n');
    }
    if record.fixes.is_empty() && !record.measured.is_empty() {
        out.push_str("(no figures yet: the tune ended before its rounds did)\n");
    }
    if let (Some(ended @ (TuneEnded::Interrupted | TuneEnded::Failed)), Some(why)) =
        (record.ended, &record.end_reason)
    {
        out.push_str(&format!("Tune {}: {why}\n", ended.as_str()));
    }
    let marked = record
        .arms
        .iter()
        .filter(|a| !a.warnings.is_empty())
        .count();
    if marked > 0 {
        out.push_str(&format!(
            "{marked} arm(s) measured with another process's PM QoS request in force: their figures are not their treatment's alone (tune.json arms[].warnings)\n"
        ));
    }
    if !record.not_measured.is_empty() {
        out.push_str("Not measured:\n");
        for u in &record.not_measured {
            let kind = if u.needs_reboot {
                "needs a reboot"
            } else {
                "not applicable"
            };
            out.push_str(&format!("  {:<16} {kind}: {}\n", u.name, u.why));
        }
    }
    if !record.deploy.is_empty() {
        out.push_str(&format!(
            "Deploy files for the worthwhile fixes (not applied): {}\n",
            record.deploy.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::tune::Verdict;

    fn fig(statistic: &'static str, r: f64, lo: Option<f64>, hi: Option<f64>) -> Figure {
        Figure {
            statistic: statistic.to_string(),
            unit: Some("ns".to_string()),
            baseline: Some(100.0),
            with_fix: Some(100.0 * r),
            ratio: Some(r),
            ratio_low: lo,
            ratio_high: hi,
            interval_method: Some("bootstrap".to_string()),
        }
    }

    #[test]
    fn a_row_fits_100_columns_and_shows_each_interval() {
        let e = Effect {
            figures: vec![
                fig("p99", 0.93, Some(0.81), Some(1.12)),
                fig("p99.9", 0.62, Some(0.48), Some(0.8)),
                fig("max", 0.41, None, None),
                fig("missed deadlines /h", 0.25, Some(0.0), Some(0.71)),
            ],
            verdict: Verdict::Worthwhile,
            samples: [1000, 1000],
        };
        let r = row("timer-migration", &e);
        assert!(
            r.chars().count() <= 100,
            "{} columns: {r}",
            r.chars().count()
        );
        assert!(r.contains("0.93 [0.81-1.12]"), "{r}");
        assert!(r.contains("0.62 [0.48-0.80]"), "{r}");
        assert!(r.contains(" 0.41 "), "{r}");
        assert!(r.contains("0.25 [0.00-0.71]"), "{r}");
        assert!(r.ends_with("worth applying"), "{r}");
        // A two-round interval at 1 degree of freedom: its far sides in scientific notation,
        // the row still within 100 columns.
        let wide = Effect {
            figures: vec![
                fig("p99", 1.73, Some(3.97e-14), Some(9.48e13)),
                fig("p99.9", 0.26, None, None),
                fig("max", 0.14, None, None),
                fig("missed deadlines /h", 0.30, Some(1.6e-23), Some(4.1e23)),
            ],
            verdict: Verdict::NoMeasurableEffect,
            samples: [1000, 1000],
        };
        let r = row("vmstat", &wide);
        assert!(r.contains("1.73 [4e-14, 9e13]"), "{r}");
        assert!(r.contains("0.30 [2e-23, 4e23]"), "{r}");
        assert!(
            r.chars().count() <= 100,
            "{} columns: {r}",
            r.chars().count()
        );
    }

    #[test]
    fn the_rate_is_headed_missed_deadlines_even_from_an_old_file() {
        // A tune.json of a tune before the rename (L12-c) names the rate `over deadline /h`.
        let fix = serde_json::json!({"rank": 1, "name": "timer-migration", "effect": {
            "verdict": "mixed", "samples": [1000, 1000], "figures": [
                {"statistic": "p99", "ratio": 0.93, "ratio_low": 0.81, "ratio_high": 1.12},
                {"statistic": "p99.9", "ratio": 0.62, "ratio_low": 0.48, "ratio_high": 0.8},
                {"statistic": "max", "ratio": 0.41},
                {"statistic": "over deadline /h", "ratio": 1.25, "ratio_low": 1.1,
                 "ratio_high": 1.42}]}});
        let record: TuneRecord = serde_json::from_value(serde_json::json!({
            "format": 1, "cpus": [1], "rounds": 4, "arm_duration_ns": 5_000_000_000u64,
            "measured": [], "not_measured": [], "arms": [], "fixes": [fix]}))
        .unwrap();
        let t = table(&record);
        let lines: Vec<&str> = t.lines().collect();
        let head = lines.iter().find(|l| l.starts_with("fix ")).expect(&t);
        let row = lines
            .iter()
            .find(|l| l.starts_with("timer-migration"))
            .expect(&t);
        // The rate's column, under its header.
        let at = head.find("missed deadlines/h").expect(&t);
        assert_eq!(&row[at..at + 16], "1.25 [1.10-1.42]", "{t}");
        assert_eq!(head.find("verdict"), row.find("mixed"), "{t}");
        assert!(!t.contains("over deadline"), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
        // Written back under the new name only.
        let json = record.json();
        assert!(
            json.contains("\"missed deadlines /h\"") && !json.contains("over deadline"),
            "{json}"
        );
    }
}
