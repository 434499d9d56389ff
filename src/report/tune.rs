//! A tune directory in the report (`jitterlab report TUNE_DIR`, docs/tune.md): the ranking of
//! the fixes measured, as tune.json records it, drawn with its 95 % intervals (one row per fix,
//! best first, each figure a ratio to the baseline on a log axis, the line at 1 "no change"),
//! its table, and the fixes not measured and why.
//!
//! tune.json is written by `tune` (tune/record.rs), a layer above this one, and read here; both
//! take its record from the format (`format::tune`, docs/result-format.md). The offline test
//! `tests/offline/tune.rs` reads what the writer writes.

use crate::error::{Failure, OrFailure, Result};
use crate::format::tune::{Effect, Figure as EffectFigure, MISSED_RATE, TuneRecord, Verdict};
use crate::report::plot::{Figure, PALETTE};
use crate::report::svg::{Anchor, Svg, escape};
use crate::report::table::{Align, Cell, Html, Markup, Table};
use std::fmt::Write;
use std::path::Path;

/// Whether `dir` is a tune directory.
pub(crate) fn is_tune_dir(dir: &Path) -> bool {
    dir.join(crate::results::TUNE_FILE_NAME).is_file()
}

/// Reads `dir`/tune.json; its fixes in the ranking's order.
pub(crate) fn read(dir: &Path) -> Result<TuneRecord> {
    let file = dir.join(crate::results::TUNE_FILE_NAME);
    let text = crate::input::read_result_file(&file, crate::input::RESULT_RECORD_MAX_BYTES)
        .or_usage(|| file.display().to_string())?;
    crate::input::check_counts(&text)
        .map_err(|why| Failure::usage(format!("{}: {why}", file.display())))?;
    let mut tune: TuneRecord = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "{} is not a valid tune.json: {e}; pass the directory jitterlab tune wrote",
            file.display()
        ))
    })?;
    // A stable sort: the first tunes' files (rank 0 throughout) keep their order.
    tune.fixes.sort_by_key(|f| f.rank);
    Ok(tune)
}

/// The statistics drawn, each in its colour: the percentiles and the rate of missed deadlines
/// (the maximum has no interval, so it is in the table only).
const DRAWN: &[(&str, &str)] = &[
    ("p99", "p99"),
    ("p99.9", "p99.9"),
    (MISSED_RATE, "missed deadlines per hour"),
];

/// One row of the ranking plot: a fix (or the worthwhile ones together) and its intervals.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RankRow {
    pub(crate) label: String,
    pub(crate) verdict: String,
    /// Per drawn statistic: the ratio and its interval (None on a side the data cannot bound).
    pub(crate) marks: Vec<Option<Mark>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mark {
    pub(crate) ratio: f64,
    pub(crate) low: Option<f64>,
    pub(crate) high: Option<f64>,
}

/// The plot's rows, best first, then the together row.
pub(crate) fn rank_rows(tune: &TuneRecord) -> Vec<RankRow> {
    let row = |label: String, e: &Effect| RankRow {
        label,
        verdict: e.verdict.words().to_string(),
        marks: DRAWN
            .iter()
            .map(|(s, _)| {
                let f = e.figure(s)?;
                Some(Mark {
                    ratio: f.ratio?,
                    low: f.ratio_low,
                    high: f.ratio_high,
                })
            })
            .collect(),
    };
    let mut rows: Vec<RankRow> = tune
        .fixes
        .iter()
        .enumerate()
        .map(|(k, f)| row(format!("{}. {}", k + 1, f.name), &f.effect))
        .collect();
    if let Some(t) = &tune.together {
        rows.push(row("all worthwhile together".into(), t));
    }
    rows
}

/// The x axis: a log scale of ratios covering every ratio and bound (at most 1/100 to 100),
/// always with 1 in it, from and to powers of 2.
fn axis(rows: &[RankRow]) -> (f64, f64) {
    let values = rows
        .iter()
        .flat_map(|r| r.marks.iter().flatten())
        .flat_map(|m| [Some(m.ratio), m.low, m.high])
        .flatten()
        .filter(|v| *v > 0.0 && v.is_finite());
    let (lo, hi) = values.fold((1.0f64, 1.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = (lo.max(0.01), hi.min(100.0));
    (lo.log2().floor().min(-1.0), hi.log2().ceil().max(1.0))
}

/// The ranking plot.
pub(crate) fn draw(name: &str, tune: &TuneRecord) -> Figure {
    let rows = rank_rows(tune);
    let (l2, h2) = axis(&rows);
    let (left, right, top) = (230.0, 30.0, 40.0);
    let (width, band) = (900.0, 18.0 * DRAWN.len() as f64 + 12.0);
    let plot_w = width - left - right;
    let height = top + band * rows.len().max(1) as f64 + 70.0;
    let x =
        |v: f64| left + (v.clamp(2f64.powf(l2), 2f64.powf(h2)).log2() - l2) / (h2 - l2) * plot_w;
    let title = "Each fix against the baseline: ratio with / without, 95 % intervals, best first";
    let mut svg = Svg::new(name, width, height, title);
    svg.text(left, 22.0, Anchor::Start, "font-weight=\"bold\"", title);
    let bottom = top + band * rows.len().max(1) as f64;
    // Grid at each power of 2, labelled as a ratio.
    for p in (l2 as i32)..=(h2 as i32) {
        let v = 2f64.powi(p);
        let gx = x(v);
        let style = if p == 0 {
            "stroke=\"#444\" stroke-width=\"1.5\""
        } else {
            "stroke=\"#ddd\""
        };
        svg.line(gx, top, gx, bottom, style);
        let label = if v >= 1.0 {
            format!("{v}")
        } else {
            format!("1/{}", 1.0 / v)
        };
        svg.text(gx, bottom + 16.0, Anchor::Middle, "", &label);
    }
    svg.text(
        left + plot_w / 2.0,
        bottom + 34.0,
        Anchor::Middle,
        "",
        "ratio to the baseline (log scale; left of 1: lower with the fix)",
    );
    for (i, r) in rows.iter().enumerate() {
        let y0 = top + band * i as f64;
        if i % 2 == 1 {
            svg.rect(0.0, y0, width, band, "fill=\"#000\" fill-opacity=\"0.04\"");
        }
        svg.text(8.0, y0 + band / 2.0, Anchor::Start, "", &r.label);
        svg.text(
            8.0,
            y0 + band / 2.0 + 15.0,
            Anchor::Start,
            "font-size=\"11\" fill=\"#555\"",
            &r.verdict,
        );
        for (k, (m, (_, words))) in r.marks.iter().zip(DRAWN).enumerate() {
            let Some(m) = m else { continue };
            let y = y0 + 12.0 + 18.0 * k as f64;
            let colour = PALETTE[k];
            let stroke = format!("stroke=\"{colour}\" stroke-width=\"2\"");
            // An unbounded side runs to the plot's edge, dashed; so does a low side of 0,
            // which no log axis holds.
            let (lx, lo_dash) = match m.low {
                Some(l) if l > 0.0 => (x(l), false),
                _ => (left, true),
            };
            let (hx, hi_dash) = match m.high {
                Some(h) => (x(h), false),
                None => (left + plot_w, true),
            };
            let dashed = format!("{stroke} stroke-dasharray=\"4 3\"");
            let cx = x(m.ratio);
            svg.line(lx, y, cx, y, if lo_dash { &dashed } else { &stroke });
            svg.line(cx, y, hx, y, if hi_dash { &dashed } else { &stroke });
            for (ex, open) in [(lx, lo_dash), (hx, hi_dash)] {
                if !open {
                    svg.line(ex, y - 4.0, ex, y + 4.0, &stroke);
                }
            }
            let side = |v: Option<f64>| v.map_or("unbounded".to_string(), |v| format!("{v:.2}"));
            let tip = format!(
                "{}: {words} ratio {:.2} [{}, {}]",
                r.label,
                m.ratio,
                side(m.low),
                side(m.high)
            );
            svg.circle(cx, y, 4.0, &format!("fill=\"{colour}\""), Some(&tip));
        }
    }
    // Legend.
    let mut lx = left;
    for (k, (_, words)) in DRAWN.iter().enumerate() {
        let ly = height - 12.0;
        svg.circle(lx, ly - 4.0, 4.0, &format!("fill=\"{}\"", PALETTE[k]), None);
        svg.text(lx + 8.0, ly, Anchor::Start, "", words);
        lx += 60.0 + 7.0 * words.len() as f64;
    }
    let statements = statements(tune);
    Figure {
        name: name.to_string(),
        title: "Ranking of the fixes, with 95 % intervals".into(),
        statements,
        svg: svg.finish(),
    }
}

/// A ratio with its interval, as the terminal table writes it.
fn ratio_text(f: Option<&EffectFigure>) -> String {
    let Some(f) = f else { return "-".into() };
    let Some(r) = f.ratio else { return "-".into() };
    let side = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    match (f.ratio_low, f.ratio_high) {
        (None, None) if f.statistic == "max" => format!("{r:.2}"),
        (None, None) => format!("{r:.2} [unbounded]"),
        (low, high) => format!("{r:.2} [{}-{}]", side(low), side(high)),
    }
}

/// The sentences under the plot: what ranks first and why, or that nothing was worth it.
fn statements(tune: &TuneRecord) -> Vec<String> {
    let Some(first) = tune.fixes.first() else {
        return vec![
            "No fix was measured to the end: the tune ended before its rounds did.".into(),
        ];
    };
    let e = &first.effect;
    let mut out = vec![format!(
        "Ranked first: {} ({}), p99.9 {} and missed deadlines {} of the baseline's.",
        first.name,
        e.verdict.words(),
        ratio_text(e.figure("p99.9")),
        ratio_text(e.figure(MISSED_RATE))
    )];
    let worth = tune
        .fixes
        .iter()
        .filter(|f| f.effect.verdict == Verdict::Worthwhile)
        .count();
    out.push(match worth {
        0 => "No fix lowered p99.9 or the rate of missed deadlines beyond chance at this length: more rounds or longer arms narrow the intervals.".into(),
        n => format!("{n} of {} fix(es) measured are worth applying.", tune.fixes.len()),
    });
    out
}

/// The section's HTML before the plots: what was measured, the table, what was not.
pub(crate) fn section_head(h: &mut String, number: usize, path: &Path, tune: &TuneRecord) {
    let _ = write!(
        h,
        "<section id=\"tune{number}\" class=\"tune\"><h2>Tune {number}: what each fix buys</h2><p class=\"path\">{}</p>",
        escape(&path.display().to_string())
    );
    let cpus = crate::cpulist::format_cpu_list(&tune.cpus);
    let _ = write!(
        h,
        "<p>CPUs {} measured; {} round(s) of the baseline and each fix{}, {} arm(s) run; every interval {:.0} %. A ratio is the value with the fix over the baseline's; an interval that holds 1 is no measurable effect (docs/tune.md).</p>",
        escape(&cpus),
        tune.rounds,
        tune.arm_duration_ns
            .map(|d| format!(" of {:.1} s each", d as f64 / 1e9))
            .unwrap_or_default(),
        tune.arms.len(),
        tune.confidence * 100.0
    );
    let mut t = Table::new(
        [
            "rank",
            "fix",
            "p99",
            "p99.9",
            "max",
            "missed deadlines /h",
            "verdict",
            "wakeups (baseline, fix)",
        ],
        Align::Right,
    );
    let mut push = |rank: String, name: &str, e: &Effect| {
        t.push_row(vec![
            Cell::from(rank),
            Cell::label(name),
            Cell::from(ratio_text(e.figure("p99"))),
            Cell::from(ratio_text(e.figure("p99.9"))),
            Cell::from(ratio_text(e.figure("max"))),
            Cell::from(ratio_text(e.figure(MISSED_RATE))),
            Cell::from(e.verdict.words()),
            Cell::from(format!("{}, {}", e.samples[0], e.samples[1])),
        ]);
    };
    for (k, f) in tune.fixes.iter().enumerate() {
        push((k + 1).to_string(), &f.name, &f.effect);
    }
    if let Some(e) = &tune.together {
        push("-".into(), "all worthwhile together", e);
    }
    if tune.fixes.is_empty() {
        h.push_str("<p>No figures: the tune ended before its rounds did.</p>");
    } else {
        h.push_str(&Html { class: "numbers" }.render(&t));
    }
    if !tune.not_measured.is_empty() {
        h.push_str("<h3>Not measured</h3><ul>");
        for u in &tune.not_measured {
            let kind = if u.needs_reboot {
                "needs a reboot"
            } else {
                "not applicable"
            };
            let _ = write!(
                h,
                "<li><strong>{}</strong>: {kind}: {}</li>",
                escape(&u.name),
                escape(&u.why)
            );
        }
        h.push_str("</ul>");
    }
}

/// The section's figures: the ranking when a fix has figures.
pub(crate) fn figures(prefix: &str, tune: &TuneRecord) -> Vec<Figure> {
    match tune.fixes.is_empty() {
        true => Vec::new(),
        false => vec![draw(&format!("{prefix}-ranking"), tune)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(statistic: &str, r: f64, lo: Option<f64>, hi: Option<f64>) -> serde_json::Value {
        serde_json::json!({"statistic": statistic, "unit": "ns", "baseline": 100.0,
            "with_fix": 100.0 * r, "ratio": r, "ratio_low": lo, "ratio_high": hi,
            "interval_method": "bootstrap"})
    }

    fn tune() -> TuneRecord {
        let fix = |rank: usize, name: &str, verdict: &str, p999: serde_json::Value| {
            serde_json::json!({"rank": rank, "name": name, "effect": {"verdict": verdict,
                "samples": [1000, 1000], "figures": [figure("p99", 0.9, Some(0.8), Some(1.1)),
                p999, figure("max", 0.5, None, None),
                // The rate under its name in the files of tunes before stop 58 (L12-c): read as
                // `missed deadlines /h`.
                figure("over deadline /h", 0.2, Some(0.0), None)]}})
        };
        serde_json::from_value(serde_json::json!({
            "format": 1, "cpus": [1], "rounds": 2, "arm_duration_ns": 2_000_000_000u64,
            "measured": [], "not_measured": [{"name": "pm-qos", "why": "no cpuidle driver",
                "needs_reboot": false}],
            "arms": [],
            // Written out of order: the reader sorts by rank.
            "fixes": [fix(2, "vmstat", "no-measurable-effect",
                          figure("p99.9", 1.0, Some(0.7), Some(1.4))),
                      fix(1, "rt-throttling", "worthwhile",
                          figure("p99.9", 0.05, Some(0.03), Some(0.08)))],
        }))
        .unwrap()
    }

    #[test]
    fn the_ranking_is_drawn_best_first_with_each_interval() {
        let mut t = tune();
        t.fixes.sort_by_key(|f| f.rank);
        let rows = rank_rows(&t);
        assert_eq!(rows[0].label, "1. rt-throttling");
        assert_eq!(rows[1].label, "2. vmstat");
        let p999 = rows[0].marks[1].unwrap();
        assert_eq!(
            (p999.ratio, p999.low, p999.high),
            (0.05, Some(0.03), Some(0.08))
        );
        // The axis holds every bound drawn and 1: 0.03 is above 1/64.
        assert_eq!(axis(&rows), (-6.0, 1.0));
        let f = draw("tune1-ranking", &t);
        let first = f.svg.find("1. rt-throttling").unwrap();
        assert!(f.svg.find("2. vmstat").unwrap() > first);
        assert!(f.svg.contains("p99.9 ratio 0.05 [0.03, 0.08]"), "{}", f.svg);
        // The rate's open upper side is drawn dashed to the edge and said unbounded; the rate
        // read under its old name is drawn and named as the missed deadlines.
        assert!(f.svg.contains("[0.00, unbounded]"));
        assert!(rows[0].marks[2].is_some_and(|m| m.ratio == 0.2));
        assert!(f.svg.contains("missed deadlines per hour"), "{}", f.svg);
        assert!(!f.svg.contains("over deadline"), "{}", f.svg);
        assert!(f.statements[0].starts_with("Ranked first: rt-throttling (worth applying)"));
        let mut h = String::new();
        section_head(&mut h, 1, Path::new("/t"), &t);
        assert!(h.contains("0.05 [0.03-0.08]") && h.contains("not applicable: no cpuidle"));
        assert!(
            h.contains("missed deadlines /h") && !h.contains("over deadline"),
            "{h}"
        );
    }
}
