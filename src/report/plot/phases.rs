//! Scenario phases on a time plot (latency over time, heat map): a shaded band per phase, a
//! dashed line where it starts, and its full name. Names that do not fit in their band go to
//! the next free label row, so no name is cut or drawn over another one.

use super::chart::Frame;
use crate::report::svg::Anchor;
use crate::units::format_elapsed;

/// Phase bands alternate these fills.
const PHASE_FILLS: &[&str] = &["#e8eef7", "#f6eedf"];
/// Label rows below the top of the plot area; names beyond them share the least-full row.
const MAX_ROWS: usize = 4;
const ROW_PX: f64 = 15.0;
/// Width of one character of the 12 px sans-serif label, generously (DejaVu Sans averages
/// about 0.6 em), so that the estimate never undercuts the drawn text.
const CHAR_PX: f64 = 7.2;

/// Where each phase's name goes: (x of its left end, label row), given each phase's band
/// [x0, x1) in pixels and the plot's right edge. A name starts just inside its band (moved left
/// when it would pass the right edge) and takes the first row where it overlaps no earlier name.
pub(crate) fn label_places(bands: &[(f64, f64, &str)], right: f64) -> Vec<(f64, usize)> {
    let mut row_ends = [f64::NEG_INFINITY; MAX_ROWS];
    bands
        .iter()
        .map(|&(x0, _, label)| {
            let width = label_width(label);
            let x = (x0 + 4.0)
                .min(right - width - 2.0)
                .max(x0.min(right) - width);
            let row = row_ends
                .iter()
                .position(|&end| end + 6.0 <= x)
                .unwrap_or_else(|| {
                    (0..MAX_ROWS)
                        .min_by(|&a, &b| row_ends[a].total_cmp(&row_ends[b]))
                        .unwrap_or(0)
                });
            row_ends[row] = x + width;
            (x, row)
        })
        .collect()
}

/// The estimated drawn width of a phase name, px.
pub(crate) fn label_width(label: &str) -> f64 {
    label.chars().count() as f64 * CHAR_PX
}

/// Draws the shaded bands, under the marks that follow.
pub(crate) fn draw_bands(frame: &mut Frame, phases: &[(String, f64, f64)]) {
    let (left, top, right, bottom) = frame.area;
    let bands: Vec<(f64, f64, &str)> = phases
        .iter()
        .map(|(label, from, to)| {
            let x0 = frame.x.scale.px(*from).clamp(left, right);
            let x1 = frame.x.scale.px(*to).clamp(left, right);
            (x0, x1, label.as_str())
        })
        .collect();
    frame.svg.group(r#"class="phases""#);
    for (k, ((x0, x1, label), (_, from, to))) in bands.iter().zip(phases).enumerate() {
        frame.svg.rect_titled(
            *x0,
            top,
            (x1 - x0).max(0.0),
            bottom - top,
            &format!(r#"fill="{}""#, PHASE_FILLS[k % PHASE_FILLS.len()]),
            &format!(
                "phase {label}: {} to {}",
                format_elapsed((from * 1e9) as u64),
                format_elapsed((to * 1e9) as u64)
            ),
        );
    }
    frame.svg.end_group();
}

/// Draws the line where each phase starts and its name, after the marks so that nothing
/// covers them (a white halo keeps the names legible over lines and cells).
pub(crate) fn draw_labels(frame: &mut Frame, phases: &[(String, f64, f64)]) {
    let (left, top, right, bottom) = frame.area;
    let bands: Vec<(f64, f64, &str)> = phases
        .iter()
        .map(|(label, from, to)| {
            (
                frame.x.scale.px(*from).clamp(left, right),
                frame.x.scale.px(*to).clamp(left, right),
                label.as_str(),
            )
        })
        .collect();
    frame.svg.group(r#"class="phase-labels""#);
    for (x0, _, _) in &bands {
        frame.svg.line(
            *x0,
            top,
            *x0,
            bottom,
            r##"stroke="#8a8a8a" stroke-dasharray="3 3""##,
        );
    }
    for ((_, _, label), (x, row)) in bands.iter().zip(label_places(&bands, right)) {
        frame.svg.text(
            x,
            top + 14.0 + row as f64 * ROW_PX,
            Anchor::Start,
            r##"paint-order="stroke" stroke="#ffffff" stroke-width="3" class="phase-label" font-size="12" fill="#333""##,
            label,
        );
    }
    frame.svg.end_group();
}

/// "Phases: idle 0 s to 10 s; memory 10 s to 20 s": the full names and spans in words.
pub fn statement(phases: &[(String, f64, f64)]) -> Option<String> {
    if phases.is_empty() {
        return None;
    }
    let spans: Vec<String> = phases
        .iter()
        .map(|(label, from, to)| {
            format!(
                "{label} {} to {}",
                format_elapsed((from * 1e9) as u64),
                format_elapsed((to * 1e9) as u64)
            )
        })
        .collect();
    Some(format!("Phases: {}.", spans.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_do_not_fit_take_another_row() {
        // Five phases of 40 px each: "memory" (43 px) overruns its band, so the next name
        // goes one row down; a short name fits after it on row 0 again.
        let bands = [
            (100.0, 140.0, "memory"),
            (140.0, 180.0, "io-stress"),
            (180.0, 220.0, "x"),
            (220.0, 260.0, "proc-read"),
            (260.0, 300.0, "chvt-console-switch"),
        ];
        let places = label_places(&bands, 876.0);
        let rows: Vec<usize> = places.iter().map(|p| p.1).collect();
        assert_eq!(rows, vec![0, 1, 0, 0, 1]);
        // No two names on one row overlap.
        for (i, a) in places.iter().enumerate() {
            for (j, b) in places.iter().enumerate().skip(i + 1) {
                if a.1 == b.1 {
                    let (wa, wb) = (label_width(bands[i].2), label_width(bands[j].2));
                    assert!(a.0 + wa <= b.0 || b.0 + wb <= a.0, "{i} and {j} overlap");
                }
            }
        }
    }

    #[test]
    fn a_name_at_the_right_edge_is_moved_inside() {
        let places = label_places(&[(860.0, 876.0, "the-last-phase")], 876.0);
        assert!(places[0].0 + label_width("the-last-phase") <= 876.0);
    }
}
