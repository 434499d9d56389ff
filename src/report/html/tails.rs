//! The run's tail figures in the HTML report (docs/tails.md): the same sentences as the
//! terminal summary, and a raster of the spike times per CPU and threshold, one tick per spike,
//! so that a period (a comb of even ticks) or a burst shows at a glance. Runs without the
//! recorder's spike record (imported, older files) get the estimate from their interval maxima.

use crate::analysis::tails::interval_spikes::{self, IntervalMax};
use crate::format::run_record::RunRecord;
use crate::format::tails::SpikeRecord;
use crate::report::digest::RunDigest;
use crate::report::svg::escape;
use crate::units::format_ns;
use std::fmt::Write;

const WIDTH: f64 = 800.0;
const ROW: f64 = 18.0;

/// The "Tails" part of a run's section; nothing when the run has no tail figures.
pub(super) fn section(h: &mut String, run: &RunDigest) {
    let r = &with_interval_spikes(run);
    let text = crate::report::tails::summary(r);
    if text.is_empty() {
        return;
    }
    h.push_str("<h3 id=\"tails\">Tails</h3><ul class=\"tails\">");
    for line in text.lines().skip(1) {
        let line = line.trim();
        let class = if line.contains("extrapolated, not measured") {
            " class=\"extrapolated\""
        } else {
            ""
        };
        let _ = write!(h, "<li{class}>{}</li>", escape(line));
    }
    h.push_str(
        "</ul><p class=\"note\">Extrapolated figures come from a model of the tail (peaks over a \
         threshold, generalized Pareto), not from the measurement: see docs/tails.md.</p>",
    );
    let span_ns = r.duration_ns.unwrap_or(0).max(
        r.threads
            .iter()
            .map(|t| t.latency.samples * t.interval_ns)
            .max()
            .unwrap_or(0),
    );
    let rows: Vec<(usize, &SpikeRecord)> = r
        .threads
        .iter()
        .flat_map(|t| t.tails.spikes.iter().map(move |s| (t.cpu, s)))
        .filter(|(_, s)| !s.times_ns.is_empty())
        .collect();
    if rows.is_empty() || span_ns == 0 {
        return;
    }
    let height = ROW * rows.len() as f64 + 20.0;
    let _ = write!(
        h,
        "<figure class=\"spike-raster\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" viewBox=\"0 0 {} {height}\">",
        WIDTH + 160.0,
        WIDTH + 160.0
    );
    for (i, (cpu, s)) in rows.iter().enumerate() {
        let y = ROW * i as f64 + 4.0;
        let _ = write!(
            h,
            "<text x=\"0\" y=\"{}\" font-size=\"11\">cpu{cpu} &gt; {}</text>",
            y + 11.0,
            escape(&format_ns(s.threshold_ns))
        );
        let mut path = String::new();
        for &t in &s.times_ns {
            let x = 160.0 + WIDTH * t as f64 / span_ns as f64;
            let _ = write!(path, "M{x:.1} {y:.1}v{:.1}", ROW - 4.0);
        }
        let _ = write!(
            h,
            "<path d=\"{path}\" stroke=\"#c0392b\" stroke-width=\"1\"><title>{} spikes over {}</title></path>",
            s.count,
            escape(&format_ns(s.threshold_ns))
        );
    }
    let _ = write!(
        h,
        "<text x=\"160\" y=\"{}\" font-size=\"11\">0</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text></svg>\
         <figcaption>Spike times: one tick per spike (a run of late wakeups), over the run.</figcaption></figure>",
        height - 2.0,
        WIDTH + 160.0,
        height - 2.0,
        escape(&format_ns(span_ns))
    );
}

/// The run's record, with spikes estimated from the interval maxima for every CPU the recorder
/// did not count them on.
fn with_interval_spikes(run: &RunDigest) -> RunRecord {
    let mut record = run.record.clone();
    interval_spikes::fill_missing_spikes(&mut record, |cpu| {
        run.wakeup_series()
            .find(|s| s.cpu == Some(cpu))
            .map(|s| {
                s.intervals
                    .iter()
                    .map(|p| IntervalMax {
                        start_ns: (p.start_s * 1e9).round() as u64,
                        length_ns: (p.length_s * 1e9).round() as u64,
                        max_ns: p.max_ns,
                    })
                    .collect()
            })
            .unwrap_or_default()
    });
    record
}
