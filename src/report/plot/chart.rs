//! The frame every x/y plot shares: title, legend, plot area, grid, ticks and axis titles.
//! A plot kind prepares its data, builds a [`Frame`], draws its marks inside the plot area and
//! finishes the SVG.

use super::axis::{Quantity, Scale, Tick, ticks};
use crate::report::svg::{Anchor, Svg};

pub(crate) const WIDTH: f64 = 900.0;
pub(crate) const HEIGHT: f64 = 440.0;
pub(crate) const LEFT: f64 = 100.0;
pub(crate) const RIGHT: f64 = 24.0;
const TITLE_BAND: f64 = 34.0;
const LEGEND_ROW: f64 = 20.0;
const BOTTOM: f64 = 56.0;

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
        // About 7.2 px per character at 12 px, plus the swatch.
        let w = 34.0 + 7.2 * e.label.chars().count() as f64;
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
                22.0,
                12.0,
                &format!(r#"fill="{}""#, e.style.colour),
            );
        } else {
            svg.line(p.x, y, p.x + 22.0, y, &e.style.stroke());
        }
        svg.text(p.x + 28.0, y + 4.0, Anchor::Start, "", &e.label);
    }
    svg.end_group();
}
