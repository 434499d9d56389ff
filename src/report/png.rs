//! PNG copies of the plots for slides and papers: the SVG itself rasterised by resvg, so the
//! PNG shows exactly what the SVG does. Text needs a font: resvg takes the system's (on Debian,
//! DejaVu Sans from fonts-dejavu-core, which `.ci/run` installs).

use resvg::{tiny_skia, usvg};
use std::sync::Arc;

/// Renders SVGs to PNG; loads the system fonts once.
pub(crate) struct PngRenderer {
    /// The fonts and defaults the SVG is read with (also what the plots' layout tests
    /// measure text with).
    pub(super) options: usvg::Options<'static>,
    /// Whether any font was found (without one, PNGs have no text).
    pub(crate) has_fonts: bool,
}

/// Pixels per SVG unit: 2x for sharp text on slides.
pub(crate) const SCALE: f32 = 2.0;

impl PngRenderer {
    pub(crate) fn new() -> Self {
        let mut db = usvg::fontdb::Database::new();
        db.load_system_fonts();
        let has_fonts = !db.is_empty();
        db.set_sans_serif_family("DejaVu Sans");
        let options = usvg::Options {
            font_family: "DejaVu Sans".into(),
            fontdb: Arc::new(db),
            ..usvg::Options::default()
        };
        PngRenderer { options, has_fonts }
    }

    /// The PNG bytes of `svg`.
    pub(crate) fn render(&self, svg: &str) -> Result<Vec<u8>, String> {
        let tree = usvg::Tree::from_str(svg, &self.options)
            .map_err(|e| format!("cannot parse the plot's SVG: {e}"))?;
        let size = tree
            .size()
            .to_int_size()
            .scale_by(SCALE)
            .ok_or("empty plot")?;
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
            .ok_or("cannot allocate the image")?;
        resvg::render(
            &tree,
            tiny_skia::Transform::from_scale(SCALE, SCALE),
            &mut pixmap.as_mut(),
        );
        pixmap
            .encode_png()
            .map_err(|e| format!("cannot encode the PNG: {e}"))
    }
}

impl Default for PngRenderer {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_plot_with_text() {
        let mut svg = crate::report::svg::Svg::new("t", 200.0, 100.0, "t");
        svg.rect(10.0, 10.0, 50.0, 50.0, r##"fill="#0072B2""##);
        svg.text(
            100.0,
            50.0,
            crate::report::svg::Anchor::Start,
            "",
            "latency 42 us",
        );
        let r = PngRenderer::new();
        let png = r.render(&svg.finish()).unwrap();
        let img = tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert_eq!((img.width(), img.height()), (400, 200));
        // The blue square is there, at 2x.
        let p = img.pixel(60, 60).unwrap();
        assert_eq!((p.red(), p.green(), p.blue()), (0x00, 0x72, 0xB2));
        if r.has_fonts {
            // Some dark text pixels to the right of x = 200 (SVG x = 100).
            let dark = (200..400)
                .flat_map(|x| (60..140).map(move |y| (x, y)))
                .filter(|&(x, y)| img.pixel(x, y).unwrap().red() < 128)
                .count();
            assert!(dark > 50, "text drawn: {dark} dark pixels");
        }
    }
}
