//! The frame every x/y plot shares: title, legend, plot area, grid, ticks and axis titles.
//! A plot kind prepares its data, builds a [`Frame`], draws its marks inside the plot area and
//! finishes the SVG.

use super::axis::{Quantity, Scale, Tick, ticks};
use crate::report::svg::{Anchor, Svg, text_width_px};

pub(crate) const WIDTH: f64 = 900.0;
pub(crate) const HEIGHT: f64 = 440.0;
pub(crate) const LEFT: f64 = 100.0;
pub(crate) const RIGHT: f64 = 24.0;
const TITLE_BAND: f64 = 34.0;
const LEGEND_ROW: f64 = 20.0;
const BOTTOM: f64 = 56.0;
/// A legend entry's swatch width, the gap after it to its label, and the space after the
/// label before the next entry, px.
const SWATCH: f64 = 22.0;
const SWATCH_GAP: f64 = 6.0;
const ENTRY_GAP: f64 = 12.0;

/// How a series is drawn.
#[derive(Debug, Clone)]
pub(crate) struct Style {
    pub(crate) colour: &'static str,
    /// SVG stroke-dasharray, e.g. "6 3"; None for a solid line.
    pub(crate) dash: Option<&'static str>,
    pub width: f64,
}

impl Style {
    pub(crate) fn stroke(&self) -> String {
        let mut s = format!(
            r#"stroke="{}" stroke-width="{}" stroke-linejoin="round""#,
            self.colour, self.width
        );
        if let Some(d) = self.dash {
            s.push_str(&format!(r#" stroke-dasharray="{d}""#));
        }
        s
    }
}

/// One legend entry.
#[derive(Debug, Clone)]
pub(crate) struct LegendEntry {
    pub label: String,
    pub(crate) style: Style,
    /// Drawn as a filled square (areas, bands) instead of a line.
    pub(crate) filled: bool,
}

/// One axis: its scale, what it shows, and its title (with the unit).
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    pub scale: Scale,
    pub(crate) quantity: Quantity,
    pub title: String,
}

/// A chart being drawn. Marks go between [`Frame::begin`] and [`Frame::finish`], in pixel
/// coordinates from `x.scale.px` / `y.scale.px`, clipped to the plot area.
pub(crate) struct Frame {
    pub svg: Svg,
    pub x: Axis,
    pub y: Axis,
    /// The plot area: left, top, right, bottom, in pixels.
    pub area: (f64, f64, f64, f64),
}

impl Frame {
    /// Draws everything but the marks and opens the clipped plot area.
    pub(crate) fn begin(id: &str, title: &str, x: Axis, y: Axis, legend: &[LegendEntry]) -> Frame {
        let mut svg = Svg::new(id, WIDTH, HEIGHT, title);
        svg.text(
            WIDTH / 2.0,
            22.0,
            Anchor::Middle,
            r##"font-size="16" font-weight="bold" fill="#222""##,
            title,
        );
        let legend_rows = legend_layout(legend).last().map_or(0, |l| l.row + 1);
        let top = TITLE_BAND + LEGEND_ROW * legend_rows as f64 + 6.0;
        let area = (LEFT, top, WIDTH - RIGHT, HEIGHT - BOTTOM);
        draw_legend(&mut svg, legend);
        let x = Axis {
            scale: x.scale.with_pixels(area.0, area.2),
            ..x
        };
        let y = Axis {
            scale: y.scale.with_pixels(area.3, area.1),
            ..y
        };
        svg.rect(
            area.0,
            area.1,
            area.2 - area.0,
            area.3 - area.1,
            r##"fill="#fbfbfb" stroke="#999""##,
        );
        let x_ticks = ticks(&x.scale, &x.quantity);
        let y_ticks = ticks(&y.scale, &y.quantity);
        svg.group(r#"class="grid""#);
        for t in &x_ticks {
            let px = x.scale.px(t.value);
            grid_line(&mut svg, t, px, area.1, px, area.3);
        }
        for t in &y_ticks {
            let py = y.scale.px(t.value);
            grid_line(&mut svg, t, area.0, py, area.2, py);
        }
        svg.end_group();
        svg.group(r##"class="ticks" fill="#333" font-size="12""##);
        for t in x_ticks.iter().filter(|t| t.label.is_some()) {
            let px = x.scale.px(t.value);
            svg.line(px, area.3, px, area.3 + 5.0, r##"stroke="#666""##);
            svg.text(
                px,
                area.3 + 19.0,
                Anchor::Middle,
                "",
                t.label.as_deref().unwrap_or(""),
            );
        }
        for t in y_ticks.iter().filter(|t| t.label.is_some()) {
            let py = y.scale.px(t.value);
            svg.line(area.0 - 5.0, py, area.0, py, r##"stroke="#666""##);
            svg.text(
                area.0 - 8.0,
                py + 4.0,
                Anchor::End,
                "",
                t.label.as_deref().unwrap_or(""),
            );
        }
        svg.end_group();
        svg.text(
            (area.0 + area.2) / 2.0,
            HEIGHT - 12.0,
            Anchor::Middle,
            r##"class="axis-title" fill="#222""##,
            &x.title,
        );
        svg.vertical_text(
            18.0,
            (area.1 + area.3) / 2.0,
            r##"class="axis-title" fill="#222""##,
            &y.title,
        );
        let clip = format!("{id}-area");
        svg.clip_rect(&clip, area.0, area.1, area.2 - area.0, area.3 - area.1);
        svg.group(&format!(r#"clip-path="url(#{clip})" class="marks""#));
        Frame { svg, x, y, area }
    }

    /// Closes the plot area and the document.
    pub(crate) fn finish(mut self) -> String {
        self.svg.end_group();
        self.svg.finish()
    }
}

fn grid_line(svg: &mut Svg, t: &Tick, x1: f64, y1: f64, x2: f64, y2: f64) {
    let style = if t.label.is_some() {
        r##"stroke="#d4d4d4" stroke-width="1""##
    } else {
        r##"stroke="#ececec" stroke-width="1""##
    };
    svg.line(x1, y1, x2, y2, style);
}

struct Placed {
    row: usize,
    x: f64,
}

/// Legend entries left to right, wrapping to a new row when the width is used up.
fn legend_layout(legend: &[LegendEntry]) -> Vec<Placed> {
    let mut out = Vec::new();
    let (mut row, mut x) = (0usize, LEFT);
    for e in legend {
        // The swatch, the gap to the label, the label at 12 px (at most as wide as drawn),
        // and the space before the next swatch.
        let w = SWATCH + SWATCH_GAP + text_width_px(&e.label, 12.0) + ENTRY_GAP;
        if x + w > WIDTH - RIGHT && x > LEFT {
            row += 1;
            x = LEFT;
        }
        out.push(Placed { row, x });
        x += w;
    }
    out
}

fn draw_legend(svg: &mut Svg, legend: &[LegendEntry]) {
    svg.group(r##"class="legend" font-size="12" fill="#222""##);
    for (e, p) in legend.iter().zip(legend_layout(legend)) {
        let y = TITLE_BAND + LEGEND_ROW * p.row as f64 + 10.0;
        if e.filled {
            svg.rect(
                p.x,
                y - 6.0,
                SWATCH,
                12.0,
                &format!(r#"fill="{}""#, e.style.colour),
            );
        } else {
            svg.line(p.x, y, p.x + SWATCH, y, &e.style.stroke());
        }
        svg.text(
            p.x + SWATCH + SWATCH_GAP,
            y + 4.0,
            Anchor::Start,
            "",
            &e.label,
        );
    }
    svg.end_group();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::axis::Quantity;
    use resvg::usvg;

    /// Every node of the tree, depth first.
    fn nodes(g: &usvg::Group, out: &mut Vec<usvg::Node>) {
        for n in g.children() {
            out.push(n.clone());
            if let usvg::Node::Group(c) = n {
                nodes(c, out);
            }
        }
    }

    /// Issue 42: no legend label over a swatch. The legends of a heat map's count classes and
    /// of overlays named by long, wide run labels, drawn by [`Frame::begin`] and measured with
    /// the real font (DejaVu Sans, as the PNGs are drawn; .ci/run installs it): every label's
    /// drawn box clears every swatch by 2 px, and stays inside the plot's width.
    #[test]
    fn no_legend_label_overlaps_a_swatch() {
        let renderer = crate::report::png::PngRenderer::new();
        assert!(renderer.has_fonts, "no font: install fonts-dejavu-core");
        let colours = ["#0072B2", "#D55E00", "#009E73", "#CC79A7"];
        let entry = |k: usize, label: String, filled: bool| LegendEntry {
            label,
            style: Style {
                colour: colours[k % colours.len()],
                dash: None,
                width: 2.0,
            },
            filled,
        };
        let heat: Vec<LegendEntry> = ["1", "3", "10", "30", "100", "300", "1000", "3000", "10000"]
            .iter()
            .enumerate()
            .map(|(k, n)| {
                let words = if k == 0 { "wakeups per cell: " } else { "" };
                entry(k, format!("{words}≥{n}"), true)
            })
            .collect();
        let runs: Vec<LegendEntry> = [
            "A: WORKSTATION-MMW-RT max",
            "A: WORKSTATION-MMW-RT p99",
            "B: mmmwww-standard-kernel max",
            "B: mmmwww-standard-kernel p99",
            "C: %%% 100% load max",
        ]
        .iter()
        .enumerate()
        .map(|(k, l)| entry(k, l.to_string(), false))
        .collect();
        for legend in [heat, runs] {
            let axis = |title: &str| Axis {
                scale: Scale::new(super::super::axis::ScaleKind::Linear, 0.0, 10.0),
                quantity: Quantity::Count,
                title: title.into(),
            };
            let svg = Frame::begin("t", "Legend", axis("x"), axis("y"), &legend).finish();
            let tree = usvg::Tree::from_str(&svg, &renderer.options).unwrap();
            let mut all = Vec::new();
            nodes(tree.root(), &mut all);
            let rows = legend_layout(&legend).last().map_or(0, |l| l.row + 1);
            let area_top = TITLE_BAND + LEGEND_ROW * rows as f64 + 6.0;
            // (left, top, right, bottom), px.
            let edges = |b: usvg::Rect| {
                (
                    f64::from(b.left()),
                    f64::from(b.top()),
                    f64::from(b.right()),
                    f64::from(b.bottom()),
                )
            };
            let texts: Vec<(f64, f64, f64, f64)> = all
                .iter()
                .filter_map(|n| match n {
                    usvg::Node::Text(t) => Some(edges(t.abs_bounding_box())),
                    _ => None,
                })
                // The legend's band: below the title, above the plot area (a tick label of the
                // y axis reaches above the area's top).
                .filter(|b| b.1 > TITLE_BAND - 2.0 && b.3 <= area_top)
                .collect();
            let swatches: Vec<(f64, f64, f64, f64)> = all
                .iter()
                .filter_map(|n| match n {
                    usvg::Node::Path(p) => Some(edges(p.abs_bounding_box())),
                    _ => None,
                })
                .filter(|b| (b.2 - b.0 - SWATCH).abs() < 0.01 && b.3 - b.1 <= 12.01)
                .collect();
            assert_eq!(texts.len(), legend.len(), "{svg}");
            assert_eq!(swatches.len(), legend.len(), "{svg}");
            for t in &texts {
                assert!(t.2 <= WIDTH, "{t:?} past the plot's width");
                for s in &swatches {
                    let apart = t.2 + 2.0 <= s.0 || s.2 + 2.0 <= t.0 || t.3 <= s.1 || s.3 <= t.1;
                    assert!(apart, "label {t:?} over swatch {s:?}:\n{svg}");
                }
            }
        }
    }
}
