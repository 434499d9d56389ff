//! A small SVG writer: the plots are drawn as SVG text directly, so each element can carry the
//! ids, classes and tooltips (`<title>`) the HTML report and its tests rely on, and the same
//! SVG is rasterised to PNG (see [`super::png`]).

use std::fmt::Write;

/// Escapes text for SVG/HTML (and the JUnit export's XML) element content and attribute
/// values: the markup characters as entities, and the control characters XML 1.0 cannot hold
/// (all but tab, newline and carriage return; C1 controls too, which HTML refuses) replaced by
/// U+FFFD, so that text from run.json (a scenario label, a warning quoting a file) can never
/// make a page or a plot invalid. The one escaping of every markup jitterlab writes.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Coordinates with two decimals at most: enough for a screen, short in the file.
pub fn num(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r}")
    }
}

/// Horizontal anchoring of a text.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// The fonts asked for: DejaVu Sans is what the PNG renderer finds on Debian
/// (fonts-dejavu-core); browsers fall back to their sans-serif.
pub(crate) const FONT_FAMILY: &str = "DejaVu Sans, Verdana, Arial, sans-serif";

/// How wide `text` is drawn at `font_px`, at most (so that what is laid out after it does
/// not overlap it): per character a share of the font size a little above DejaVu Sans's own
/// advance (narrow letters and punctuation 0.34, `f t r - / ( )` 0.45, `m w M W % @` 1.0,
/// other capitals 0.8, other ASCII 0.64, anything else, `≥` among them, 1.0). The plots'
/// legends are laid out with it; `chart.rs`'s test measures them with the real font.
pub(crate) fn text_width_px(text: &str, font_px: f64) -> f64 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | 'I' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' => 0.34,
            'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '-' | '/' => 0.45,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 1.0,
            c if c.is_ascii_uppercase() => 0.8,
            c if c.is_ascii() => 0.64,
            _ => 1.0,
        })
        .sum();
    em * font_px
}

/// An SVG document being written.
pub(crate) struct Svg {
    out: String,
}

impl Svg {
    /// Starts a document of `width` x `height` pixels with `id` and an accessible title.
    pub(crate) fn new(id: &str, width: f64, height: f64, title: &str) -> Self {
        let mut out = String::with_capacity(16 * 1024);
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="plot" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-labelledby="{id}-title" font-family="{font}" font-size="13">"#,
            id = escape(id),
            w = num(width),
            h = num(height),
            font = FONT_FAMILY
        );
        let _ = write!(
            out,
            r#"<title id="{}-title">{}</title><rect width="100%" height="100%" fill="white"/>"#,
            escape(id),
            escape(title)
        );
        Svg { out }
    }

    pub(crate) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, style: &str) {
        let _ = write!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" {style}/>"#,
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0))
        );
    }

    /// A rectangle with a tooltip.
    pub(crate) fn rect_titled(&mut self, x: f64, y: f64, w: f64, h: f64, style: &str, tip: &str) {
        let _ = write!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" {style}><title>{}</title></rect>"#,
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            escape(tip)
        );
    }

    pub(crate) fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, style: &str) {
        let _ = write!(
            self.out,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" {style}/>"#,
            num(x1),
            num(y1),
            num(x2),
            num(y2)
        );
    }

    /// A polyline through `points`; nothing for fewer than two points.
    pub(crate) fn polyline(&mut self, points: &[(f64, f64)], style: &str) {
        if points.len() < 2 {
            return;
        }
        self.out.push_str("<polyline points=\"");
        for (i, (x, y)) in points.iter().enumerate() {
            if i > 0 {
                self.out.push(' ');
            }
            let _ = write!(self.out, "{},{}", num(*x), num(*y));
        }
        let _ = write!(self.out, "\" fill=\"none\" {style}/>");
    }

    pub(crate) fn circle(&mut self, x: f64, y: f64, r: f64, style: &str, tip: Option<&str>) {
        let _ = write!(
            self.out,
            r#"<circle cx="{}" cy="{}" r="{}" {style}>"#,
            num(x),
            num(y),
            num(r)
        );
        if let Some(tip) = tip {
            let _ = write!(self.out, "<title>{}</title>", escape(tip));
        }
        self.out.push_str("</circle>");
    }

    pub(crate) fn text(&mut self, x: f64, y: f64, anchor: Anchor, style: &str, content: &str) {
        let _ = write!(
            self.out,
            r#"<text x="{}" y="{}" text-anchor="{}" {style}>{}</text>"#,
            num(x),
            num(y),
            anchor.as_str(),
            escape(content)
        );
    }

    /// Text turned 90 degrees counter-clockwise around (x, y), for a y-axis label.
    pub(crate) fn vertical_text(&mut self, x: f64, y: f64, style: &str, content: &str) {
        let _ = write!(
            self.out,
            r#"<text x="{x}" y="{y}" text-anchor="middle" transform="rotate(-90 {x} {y})" {style}>{}</text>"#,
            escape(content),
            x = num(x),
            y = num(y)
        );
    }

    /// Opens a group; close it with [`Svg::end_group`].
    pub(crate) fn group(&mut self, attributes: &str) {
        let _ = write!(self.out, "<g {attributes}>");
    }

    pub(crate) fn end_group(&mut self) {
        self.out.push_str("</g>");
    }

    /// Declares a rectangular clip path named `id`.
    pub(crate) fn clip_rect(&mut self, id: &str, x: f64, y: f64, w: f64, h: f64) {
        let _ = write!(
            self.out,
            r#"<defs><clipPath id="{}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>"#,
            escape(id),
            num(x),
            num(y),
            num(w),
            num(h)
        );
    }

    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_rounds_coordinates() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.234_56), "1.23");
        assert_eq!(num(-0.5), "-0.5");
        let mut svg = Svg::new("p1", 100.0, 50.0, "T <1>");
        svg.polyline(&[(0.0, 1.0), (2.5, 3.0)], r#"stroke="red""#);
        svg.text(1.0, 2.0, Anchor::Middle, "", "x<y");
        let s = svg.finish();
        assert!(s.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" id="p1""#));
        assert!(s.contains("<title id=\"p1-title\">T &lt;1&gt;</title>"));
        assert!(s.contains(r#"points="0,1 2.5,3""#));
        assert!(s.contains(">x&lt;y</text>"));
        assert!(s.trim_end().ends_with("</svg>"));
    }
}
